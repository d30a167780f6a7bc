"""Providers: the protocols (base.py, conversation.py) and the registry of versioned ids (registry.py,
registry.toml) at the top; the adapters by board in stt/, tts/, s2s/, a team's deployed agent in
agents/, the plumbing they share in session/, the local engines in local/, and emulators/ mirroring
them (docs/ARCHITECTURE.md "Inside providers")."""
