"""Real local engines, so the embedded default measures something real with no API key."""
