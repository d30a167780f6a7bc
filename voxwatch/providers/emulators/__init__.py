"""Loopback emulators of vendor wire protocols, for tests and calibration only.

Each speaks its vendor's documented protocol (paths, auth headers, message shapes, audio
encodings, close semantics) on 127.0.0.1 with delays injected by a scenario, so an adapter and
the clocks behind it can be checked against known truth. Their numbers are never a vendor's.

The layout mirrors the adapters': one emulator a vendor in the folder of its main board (stt/,
tts/, s2s/; the reference agent in agents/), and here what they all share: server.py (one process
and port per vendor), scenario.py (the injected truth), faults.py, ledger.py (what was sent when),
speech.py and stamped_h11.py.
"""
