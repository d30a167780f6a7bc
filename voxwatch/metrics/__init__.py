"""Every voxwatch metric, defined once: pure functions over timelines and audio."""

METHOD_VERSION = "17"
"""Bumped whenever a definition, threshold, normalizer or VAD changes (see docs/METHOD.md)."""
