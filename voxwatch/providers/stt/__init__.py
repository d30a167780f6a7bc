"""Cloud speech-to-text adapters: one file a vendor's protocol (OpenAI Realtime transcription is
s2s/openai_realtime.py's, the Realtime session it shares with speech to speech)."""
