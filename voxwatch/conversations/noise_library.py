"""A team's own background-noise recordings for personas (`voxwatch scenarios noise import`), kept like
datasets: each under `<noises_dir>/<name>/` as `noise.wav` (mono 16-bit PCM at its own rate) and
`noise.json` (its sha256, its licence, where it came from), and named by a persona with the sha256
it was pinned at (`noise = "<name>"`, `noise_sha256 = "..."`): a recording that changed is refused,
never mixed in its place.

Mixed like a generated noise (voxwatch/conversations/persona_audio.py): a stretch as long as the turn,
from an offset drawn from the persona's seed, the scenario pin and the turn id (the recording
looped when shorter), scaled to the persona's SNR over the speech frames (voxwatch/metrics/snr.py).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from voxwatch.foundation.audio import resample
from voxwatch.foundation.integrity import file_sha256
from voxwatch.foundation.noises import NOISES
from voxwatch.foundation.persona import NAME, PersonaError

DEFAULT_LIBRARY = Path("var/noises")
AUDIO, ABOUT = "noise.wav", "noise.json"
MIN_SECONDS = 1.0  # shorter than this, the loop would be heard as one
SILENT_DBFS = -70.0


class NoiseError(ValueError):
    """A noise recording that cannot be imported or used; the message says which and why."""


@dataclass(frozen=True)
class ImportedNoise:
    name: str
    sha256: str
    license: str
    source: str
    sample_rate: int
    seconds: float


def _read_about(folder: Path) -> ImportedNoise:
    try:
        record = json.loads((folder / ABOUT).read_text(encoding="utf-8"))
        return ImportedNoise(**record)
    except (OSError, ValueError, TypeError) as exc:
        raise NoiseError(f"{folder / ABOUT}: not a noise record ({exc})") from None


def import_noise(path: Path, library: Path, license: str, name: str | None = None, source: str = "") -> tuple[ImportedNoise, bool]:
    """Copy a recording into the library (mono, 16-bit PCM), with its licence; (the noise, whether it
    was new). The same bytes again are nothing to do; a taken name with other audio is refused."""
    if not license.strip():
        raise NoiseError("--license: say the recording's licence (e.g. CC-BY-4.0, or 'own recording')")
    name = name or re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).strip("-.") or "noise"
    if not NAME.match(name) or name in NOISES:
        raise NoiseError(f"noise name {name!r}: expected lower-case letters, digits, '.', '_' or '-' (at most 64), "
                         f"not a generated noise ({', '.join(NOISES)})")
    try:
        data, rate = sf.read(str(path), dtype="float64", always_2d=True)
    except (OSError, RuntimeError, sf.LibsndfileError) as exc:
        raise NoiseError(f"{path}: cannot read as audio ({exc})") from None
    x = data.mean(axis=1)
    if x.size < MIN_SECONDS * rate:
        raise NoiseError(f"{path}: {x.size / rate:.2f} s of audio; a noise needs at least {MIN_SECONDS:g} s")
    if 20 * np.log10(max(float(np.sqrt(np.mean(x * x))), 1e-12)) < SILENT_DBFS:
        raise NoiseError(f"{path}: the recording is silent (below {SILENT_DBFS:g} dBFS)")
    folder = library / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = library / f".{name}.{uuid.uuid4().hex}.tmp"
    tmp.mkdir()
    try:
        sf.write(str(tmp / AUDIO), np.clip(x, -1, 32767 / 32768), rate, subtype="PCM_16", format="WAV")
        noise = ImportedNoise(name, file_sha256(tmp / AUDIO), license.strip(), source.strip() or path.name,
                              int(rate), round(x.size / rate, 3))
        if folder.exists():
            held = _read_about(folder)
            if held.sha256 != noise.sha256:
                raise NoiseError(f"noise {name!r} is already imported with other audio (sha256 {held.sha256[:12]}); "
                                 "choose another --name")
            return held, False
        (tmp / ABOUT).write_text(json.dumps(noise.__dict__, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, folder)
        return noise, True
    finally:
        if tmp.exists():
            for f in tmp.iterdir():
                f.unlink()
            tmp.rmdir()


def imported_noises(library: Path) -> list[ImportedNoise]:
    return [_read_about(f) for f in sorted(library.iterdir()) if f.is_dir() and not f.name.startswith(".")] \
        if library.is_dir() else []


def noise_stretch(library: Path, name: str, sha256: str, n: int, rate: int, seed: int) -> np.ndarray:
    """`n` samples at `rate` of the imported noise, unit RMS, from a seeded offset (looped when
    shorter); PersonaError when it is missing or its sha256 is not the persona's pin."""
    folder = library / name
    if not (folder / AUDIO).is_file():
        raise PersonaError(f"noise {name!r} is not imported in {library} (voxwatch scenarios noise import)")
    actual = file_sha256(folder / AUDIO)
    if actual != sha256:
        raise PersonaError(f"noise {name!r}: its audio's sha256 {actual[:12]} is not the persona's pin {sha256[:12]}; "
                           "refusing to mix another recording")
    data, source_rate = sf.read(str(folder / AUDIO), dtype="float64")
    x = resample(data, source_rate, rate) if source_rate != rate else data
    start = int(np.random.default_rng(seed).integers(0, x.size))
    y = np.resize(np.roll(x, -start), n)  # looped from the offset
    y = y - y.mean()
    rms = float(np.sqrt(np.mean(y * y)))
    return y / rms if rms > 0 else y
