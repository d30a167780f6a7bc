"""The catalog: every dataset folder voxwatch knows, loaded with its integrity checked.

Bundled datasets live inside the package; imported ones under the configured datasets folder
(default ./var/datasets). Loading a dataset checks the sha256 of every file its manifest names
and aborts with the file's name on a mismatch, before anything is measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import numpy as np

from voxwatch.foundation.audio import CATALOG_RATE, AudioError, read_pcm16
from voxwatch.foundation.integrity import file_sha256
from voxwatch.foundation.text import did_you_mean

from voxwatch.datasets.manifest import Clip, DatasetInfo, ManifestError, Prompt, read_info, read_records
from voxwatch.datasets.mulaw import wav_codes
from voxwatch.datasets.wire import Wire, wire_from


class IntegrityError(ValueError):
    """A file whose bytes are not the ones its manifest recorded."""


class UnknownDataset(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Dataset:
    info: DatasetInfo
    folder: Path
    manifest_sha256: str
    clips: tuple[Clip, ...] = ()
    prompts: tuple[Prompt, ...] = ()

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def items(self) -> tuple[Clip, ...] | tuple[Prompt, ...]:
        return self.clips if self.info.kind == "audio" else self.prompts

    def audio(self, clip: Clip) -> np.ndarray:
        """The clip's int16 samples (their sha256 was checked when the dataset was loaded)."""
        path = self.folder / clip.path
        pcm, rate = read_pcm16(path)
        if rate != clip.sample_rate:
            raise AudioError(f"{path}: sample rate {rate}, manifest says {clip.sample_rate}")
        return pcm

    def wire_bytes(self, clip: Clip) -> bytes:
        """A wire-format clip's bytes as stored (the phone line's mu-law codes): what goes on the wire,
        never decoded and encoded again."""
        return wav_codes(self.folder / clip.path)

    @property
    def wire(self) -> Wire | None:
        """How the clips go over the wire (None: 16 kHz linear PCM)."""
        return wire_from(self.info.wire, str(self.folder / "dataset.json"))

    @property
    def duration_s(self) -> float:
        return sum(c.duration_s for c in self.clips)


def bundled_root() -> Path:
    return Path(str(files("voxwatch.datasets").joinpath("data")))


class Catalog:
    def __init__(self, roots: list[Path]) -> None:
        self.roots = [r for r in roots if r.is_dir()]

    def folders(self) -> dict[str, Path]:
        found: dict[str, Path] = {}
        for root in self.roots:
            for folder in sorted(p for p in root.iterdir() if (p / "dataset.json").is_file()):
                found.setdefault(folder.name, folder)
        return found

    def names(self) -> list[str]:
        return sorted(self.folders())

    def load(self, name: str, verify: bool = True) -> Dataset:
        folder = self.folders().get(name)
        if folder is None:
            raise UnknownDataset(f"unknown dataset {name!r}{did_you_mean(name, self.folders())} "
                                 "(`voxwatch datasets list` shows the catalog)")
        info = read_info(folder)
        if info.name != name:
            raise ManifestError(f"{folder / 'dataset.json'}: name {info.name!r} does not match folder {name!r}")
        manifest = folder / "manifest.jsonl"
        manifest_sha = file_sha256(manifest) if manifest.is_file() else ""
        if info.kind == "text":
            return Dataset(info, folder, manifest_sha, prompts=tuple(read_records(manifest, Prompt)))
        clips = tuple(read_records(manifest, Clip))
        wire = wire_from(info.wire, str(folder / "dataset.json"))
        rate = wire.sample_rate if wire is not None else CATALOG_RATE
        if verify:
            for clip in clips:
                path = folder / clip.path
                if not path.is_file():
                    raise IntegrityError(f"{path}: missing (listed in {manifest})")
                if file_sha256(path) != clip.sha256:
                    raise IntegrityError(f"{path}: sha256 does not match {manifest}; refusing to measure {name}")
                if clip.sample_rate != rate:
                    raise ManifestError(f"{manifest}: {clip.id} is {clip.sample_rate} Hz, the dataset's clips are {rate} Hz")
        return Dataset(info, folder, manifest_sha, clips=clips)
