"""Loopback emulators of vendor wire protocols, for tests and calibration only.

Each speaks its vendor's documented protocol (paths, auth headers, message shapes, audio
encodings, close semantics) on 127.0.0.1 with delays injected by a scenario, so an adapter and
the clocks behind it can be checked against known truth. Their numbers are never a vendor's.
"""
