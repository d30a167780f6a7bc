"""Reading the validation speech (../shared/data/speech) as the benchmarks do: any WAV or FLAC as float64
mono with its rate, through the catalog's own header check. Only the benchmarks read files this way."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxwatch.foundation.audio import decode_mono, probe


def read_mono(path: Path, allow_truncated: bool = False) -> tuple[np.ndarray, int]:
    """Any WAV or FLAC as float64 mono in [-1, 1] with its sample rate, its header checked first (probe)."""
    header = probe(path)
    return decode_mono(path, header, allow_truncated)[0], header.rate
