"""Emulators of speech-to-speech vendors, each with its scripted multi-turn agent (`<vendor>_agent.py`),
and the Chat Completions endpoint the cascade's language model calls (chat.py). OpenAI's emulator also
serves its batch and Realtime transcription and its speech endpoint, on one port as the vendor does."""
