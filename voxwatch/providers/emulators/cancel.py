"""A TTS reply's cancel as an emulator honours it (METHOD "TTS: streamed text and cancel"): the
chunks due within the scenario's `cancel_ms` of the cancel's arrival still go, none after; the
ledger holds the cancel's arrival and each chunk sent after it (the truth as sent: ledger.cancel_as_sent)."""

from __future__ import annotations

import time

from voxwatch.providers.emulators.ledger import CANCEL_ARRIVED, after_cancel_key, record


class Cancel:
    """One reply's cancel, set by the emulator's reader when the vendor's cancel message arrives."""

    def __init__(self, emulator, key: str, cancel_ms: float) -> None:
        self.emulator, self.key, self.cancel_ms = emulator, key, cancel_ms
        self.arrived: int | None = None  # perf_counter ns

    def arrive(self) -> None:
        self.arrived = time.perf_counter_ns()
        record(self.emulator, self.key, CANCEL_ARRIVED, at=self.arrived)

    @property
    def until_ns(self) -> int | None:
        """The end of the grace after the cancel: nothing due from then on is sent (None: no cancel yet)."""
        return None if self.arrived is None else self.arrived + int(self.cancel_ms * 1e6)

    def stops(self, due_ns: int) -> bool:
        """Is a chunk due at `due_ns` cut by the cancel?"""
        return self.arrived is not None and due_ns >= self.until_ns

    def sending(self, chunk: int) -> None:
        """Chunk `chunk` goes out now: noted in the ledger when it goes after the cancel arrived."""
        if self.arrived is not None:
            record(self.emulator, self.key, after_cancel_key(chunk))
