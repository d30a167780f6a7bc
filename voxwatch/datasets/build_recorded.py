"""The recipe for the bundled recorded starter set: `python -m voxwatch.datasets.build_recorded --sources DIR`.

stt-recorded-clean is recorded human speech taken from registry packages (voxwatch.datasets.recorded_sources
names each clip's package, version, path, speaker and licence): the Asterisk project's English voice prompts
(Debian's asterisk-core-sounds-en-g722, G.722 decoded to 16 kHz), the PocketSphinx source distribution's
test recordings (LibriVox and CMU test speakers), whisper.cpp's JFK sample (pywhispercpp's source
distribution) and a LibriSpeech utterance (the Montreal Forced Aligner's source distribution). Each clip is
padded with seeded silences over a faint noise floor and loudness-normalised exactly as the synthesized
starter's clips are, stored as 16 kHz FLAC, and its degraded family is built by the starter's transforms
(build_starter.build_degraded, build_phone_line).

DIR holds the downloaded archives, fetched with the commands recorded_sources names; each archive's sha256 is
checked before a byte is read. Decoding G.722 needs the G722 package, only here: the `recorded-build` extra.
The build is deterministic: the same archives give byte-identical clips.
"""

from __future__ import annotations

import argparse
import io
import shutil
import tarfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from voxwatch.foundation.audio import CATALOG_RATE, normalize_loudness, resample, to_pcm16
from voxwatch.foundation.integrity import file_sha256
from voxwatch.metrics.vad import speech_anchors

from voxwatch.datasets import degrade
from voxwatch.datasets.build_starter import (FLOOR_DBFS, TRAIL_S, build_degraded, build_phone_line, vad_record,
                                             write_clip)
from voxwatch.datasets.catalog import bundled_root
from voxwatch.datasets.manifest import Clip, DatasetInfo, read_info, write_info, write_records
from voxwatch.datasets.recorded_sources import CHANGED, CLIPS, SOURCES, RecordedClip, Source, license_of

FAMILY = "stt-recorded"
RECIPE = "voxwatch.datasets.build_recorded v1"
NOTICE = "NOTICE.md"


class SourceError(ValueError):
    """A source archive that is missing, is not the pinned bytes, or lacks a member a clip names."""


def deb_data(deb: bytes) -> tarfile.TarFile:
    """The file tree of a Debian package (its data.tar.* member of the ar archive)."""
    if not deb.startswith(b"!<arch>\n"):
        raise SourceError("not a Debian package (no ar header)")
    at = 8
    while at + 60 <= len(deb):
        name, size = deb[at:at + 16].strip().decode(), int(deb[at + 48:at + 58])
        body = deb[at + 60:at + 60 + size]
        if name.rstrip("/").startswith("data.tar"):
            return tarfile.open(fileobj=io.BytesIO(body))
        at += 60 + size + (size & 1)
    raise SourceError("the Debian package has no data.tar member")


def open_source(folder: Path, source: Source) -> tarfile.TarFile:
    path = folder / source.file
    if not path.is_file():
        raise SourceError(f"{path}: missing; download it with `{source.fetch}`")
    if file_sha256(path) != source.sha256:
        raise SourceError(f"{path}: sha256 {file_sha256(path)} is not the pinned {source.sha256}")
    return deb_data(path.read_bytes()) if source.registry == "debian" else tarfile.open(path)


def _member(archive: tarfile.TarFile, clip: RecordedClip) -> bytes:
    try:
        handle = archive.extractfile(clip.member)
    except KeyError:
        handle = None
    if handle is None:
        raise SourceError(f"{clip.uid}: {clip.member} is not a file in {SOURCES[clip.source].file}")
    return handle.read()


def decode(clip: RecordedClip, data: bytes) -> np.ndarray:
    """The member's samples as floats at the catalog rate: G.722 (16 kHz), raw 16 kHz PCM, or WAV."""
    if clip.member.endswith(".g722"):
        from G722 import G722  # only the rebuild needs it (module docstring)
        pcm = np.asarray(G722(16000, 64000).decode(data), dtype=np.int16)
        return pcm.astype(np.float64) / 32768.0
    if clip.member.endswith(".raw"):  # PocketSphinx's raw test audio: 16 kHz, 16-bit little-endian
        return np.frombuffer(data, dtype="<i2").astype(np.float64) / 32768.0
    import soundfile as sf
    x, rate = sf.read(io.BytesIO(data), dtype="float64", always_2d=True)
    return resample(x.mean(axis=1), rate, CATALOG_RATE)


def prepared(uid: str, speech: np.ndarray) -> np.ndarray:
    """The recording as the starter's clips are laid out: seeded lead silence, the speech, a fixed trail,
    loudness-normalised, over a faint noise floor; rounded to what the file holds."""
    rng = np.random.default_rng(degrade.seed_for("clean", uid))
    lead = np.zeros(int(rng.uniform(0.3, 0.6) * CATALOG_RATE))
    x = normalize_loudness(np.concatenate([lead, speech - speech.mean(), np.zeros(int(TRAIL_S * CATALOG_RATE))]))
    x = x + rng.standard_normal(x.size) * 10 ** (FLOOR_DBFS / 20)
    return to_pcm16(x).astype(np.float64) / 32767.0


def source_record(clip: RecordedClip) -> str:
    s = SOURCES[clip.source]
    return f"{s.registry}:{s.package}@{s.version}:{clip.member.removeprefix('./')}"


def build_clean(root: Path, sources: Path) -> tuple[list[Clip], dict[str, np.ndarray]]:
    folder = root / f"{FAMILY}-clean"
    archives = {key: open_source(sources, s) for key, s in SOURCES.items()}
    clips, audio = [], {}
    for c in CLIPS:
        x = prepared(c.uid, decode(c, _member(archives[c.source], c)))
        anchors = speech_anchors(to_pcm16(x))
        if anchors is None:
            raise SourceError(f"{c.uid}: the VAD found no speech in {c.member}")
        clips.append(write_clip(folder, c.uid, c.text, x, anchors.speech_start, anchors.speech_end, suffix=".flac",
                           voice=c.speaker, accent=c.accent, source=source_record(c), license=license_of(c)))
        audio[c.uid] = x
    write_records(folder / "manifest.jsonl", clips)
    write_info(folder, DatasetInfo(
        name=folder.name, kind="audio", family=FAMILY, condition="clean", recipe=RECIPE, sample_rate=CATALOG_RATE,
        description=f"{len(clips)} recorded English utterances: phone-system prompts by a US voice artist, read "
                    "speech (LibriVox, LibriSpeech), spoken commands from CMU's test recordings, a 1961 address "
                    "in a Boston accent; 16 kHz mono FLAC, -20 dBFS RMS", vad=vad_record(),
        extra=_extra()))
    return clips, audio


def _extra() -> dict:
    return {"speech": "recorded", "license": ", ".join(sorted({license_of(c) for c in CLIPS})), "notice": NOTICE,
            "sources": [{"package": s.package, "version": s.version, "registry": s.registry, "file": s.file,
                         "sha256": s.sha256, "license": s.license} for s in SOURCES.values()]}


def notice_text() -> str:
    """The attribution every copy of the recordings carries (CC BY-SA 3.0 section 4(c), BSD clause 2)."""
    lines = ["# Recorded speech: sources and licences", "",
             "Every clip's manifest line names its source (`registry:package@version:path`) and licence.", ""]
    for s in SOURCES.values():
        n = sum(c.source == s.key for c in CLIPS)
        lines += [f"## {s.package} {s.version} ({s.registry}), {n} clip{'' if n == 1 else 's'}, {s.license}", "",
                  s.attribution, ""]
    lines += [CHANGED, ""]
    lines += ["The LibriVox readings (ps-librivox-*) are in the public domain. The clips derived from the CC BY-SA "
              "3.0 recordings (the ast-* clips of every stt-recorded set) are distributed under CC BY-SA 3.0 too; "
              "the rest of voxwatch is not affected (a collection, section 4(a) of that licence).", ""]
    return "\n".join(lines)


def build(out: Path, sources: Path) -> list[Path]:
    """Every stt-recorded set, written fresh under out: the clean recordings, each degraded condition, the
    phone line's mu-law, each with NOTICE.md."""
    for old in out.glob(f"{FAMILY}-*"):
        shutil.rmtree(old)
    clean, audio = build_clean(out, sources)
    folders = [out / f"{FAMILY}-clean"]
    for name in degrade.TRANSFORMS:
        folders.append(build_degraded(out, name, clean, audio, family=FAMILY, clean_name=f"{FAMILY}-clean",
                                      recipe=RECIPE))
    folders.append(build_phone_line(out, family=FAMILY, clean_name=f"{FAMILY}-clean", recipe=RECIPE))
    for folder in folders:
        info = read_info(folder)
        write_info(folder, replace(info, extra={**info.extra, **_extra()}))
        (folder / NOTICE).write_text(notice_text())
    return folders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", type=Path, required=True, help="the folder holding the downloaded archives")
    parser.add_argument("--out", type=Path, default=bundled_root())
    args = parser.parse_args()
    try:
        folders = build(args.out, args.sources)
    except SourceError as exc:
        raise SystemExit(f"build_recorded: {exc}") from None
    print(f"built {len(CLIPS)} recorded utterances x {len(folders)} conditions in {args.out} "
          f"({', '.join(f.name for f in folders)})")


if __name__ == "__main__":
    main()
