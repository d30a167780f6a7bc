"""The reference agent: a deployed voice agent on loopback, over both transports of agents/, and its registry entries."""
