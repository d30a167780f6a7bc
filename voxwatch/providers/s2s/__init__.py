"""Speech-to-speech adapters, one file a vendor's protocol (with its multi-turn agent session beside
it, `<vendor>_agent.py`), and the cascade: any registered STT, a chat model (chat_completions) or the
scripted baseline's responder, and any registered TTS."""
