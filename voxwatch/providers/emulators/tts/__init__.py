"""Emulators of text-to-speech vendors (ElevenLabs' also serves its Scribe STT, on one port as the vendor does)."""
