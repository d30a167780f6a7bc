"""Multi-turn voice-agent conversations on the S2S board (../shared/CONVERSATIONS.md)."""
