"""Providers: the three stream protocols, the registry of versioned ids, and the adapters."""
