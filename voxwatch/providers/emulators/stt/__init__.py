"""Emulators of speech-to-text vendors (Deepgram's also serves its Aura TTS, on one port as the vendor does)."""
