"""A dataset's wire format: how its clips go over the wire when not as 16 kHz linear PCM.

The phone condition is sent as a phone call carries it, 8 kHz G.711 mu-law, to the providers
whose protocols take that (METHOD "Audio"); a dataset declares it in dataset.json as
`wire: {"encoding": "mulaw", "sample_rate": 8000}` and its clips are stored in that format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voxwatch.datasets import mulaw
from voxwatch.datasets.manifest import ManifestError

ENCODINGS = {"mulaw": mulaw.RATE}
"""Each wire encoding known, with the one sample rate it is sent at."""


class WireError(ManifestError):
    """A wire format voxwatch cannot send."""


@dataclass(frozen=True)
class Wire:
    encoding: str
    sample_rate: int

    bytes_per_sample = 1  # mu-law: one byte a sample

    def as_record(self) -> dict[str, Any]:
        return {"encoding": self.encoding, "sample_rate": self.sample_rate}

    @property
    def label(self) -> str:
        return f"{self.sample_rate // 1000} kHz {self.encoding}"


PHONE_MULAW = Wire("mulaw", mulaw.RATE)


def wire_from(record: dict[str, Any] | None, where: str) -> Wire | None:
    """The Wire a dataset.json declares (None: 16 kHz linear PCM, the catalog format)."""
    if record is None:
        return None
    encoding, rate = record.get("encoding"), record.get("sample_rate")
    if set(record) != {"encoding", "sample_rate"} or ENCODINGS.get(encoding) != rate:
        raise WireError(f"{where}: wire {record!r}; known: "
                        + ", ".join(f"{{encoding: {e}, sample_rate: {r}}}" for e, r in ENCODINGS.items()))
    return Wire(encoding, rate)
