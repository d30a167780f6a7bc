"""The recipe for the bundled recorded starter set: `python -m voxwatch.datasets.build_recorded --sources DIR`.

stt-recorded-clean is recorded human speech under permissive licences or in the public domain
(voxwatch.datasets.recorded_sources names each clip's source, path, speaker, accent and licence): sentences read
by adult Mandarin-L1 speakers from the speechocean762 corpus (a git repository at a pinned commit), the
PocketSphinx source distribution's test recordings (LibriVox and CMU test speakers), whisper.cpp's JFK sample
(pywhispercpp's source distribution) and a LibriSpeech utterance (the Montreal Forced Aligner's source
distribution). Each clip is padded with seeded silences over a faint noise floor and loudness-normalised exactly
as the synthesized starter's clips are, stored as 16 kHz FLAC, and its degraded family is built by the starter's
transforms (build_starter.build_degraded, build_phone_line).

DIR holds the downloaded archives, fetched with the commands recorded_sources names, each checked against its
sha256 before a byte is read, and the repository as `speechocean762.git` (its git directory, e.g. a symlink to a
bare mirror, or an exported copy of its tree), each file of which is checked against its own sha256.
The build is deterministic: the same sources give byte-identical clips.
"""

from __future__ import annotations

import argparse
import hashlib
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
from voxwatch.datasets.git_tree import GitTree, TreeError
from voxwatch.datasets.manifest import Clip, DatasetInfo, read_info, write_info, write_records
from voxwatch.datasets.recorded_sources import CHANGED, CLIPS, SOURCES, RecordedClip, Source, license_of

FAMILY = "stt-recorded"
RECIPE = "voxwatch.datasets.build_recorded v1"
NOTICE = "NOTICE.md"


class SourceError(ValueError):
    """A source archive that is missing, is not the pinned bytes, or lacks a member a clip names."""


def open_source(folder: Path, source: Source) -> tarfile.TarFile | GitTree:
    """The archive (its sha256 checked) or the repository copy (a git directory or an exported tree)."""
    path = folder / source.file
    if not path.exists():
        raise SourceError(f"{path}: missing; download it with `{source.fetch}`")
    if source.registry == "github":
        return GitTree(path, source.version)
    if file_sha256(path) != source.sha256:
        raise SourceError(f"{path}: sha256 {file_sha256(path)} is not the pinned {source.sha256}")
    return tarfile.open(path)


def _member(archive: tarfile.TarFile | GitTree, clip: RecordedClip) -> bytes:
    """The clip's bytes; a repository file must match its own pin."""
    if isinstance(archive, GitTree):
        try:
            data = archive.read(clip.member)
        except TreeError as exc:
            raise SourceError(f"{clip.uid}: {exc}") from None
        if hashlib.sha256(data).hexdigest() != clip.sha256:
            raise SourceError(f"{clip.uid}: {clip.member} is not the pinned bytes (sha256 {clip.sha256})")
        return data
    try:
        handle = archive.extractfile(clip.member)
    except KeyError:
        handle = None
    if handle is None:
        raise SourceError(f"{clip.uid}: {clip.member} is not a file in {SOURCES[clip.source].file}")
    return handle.read()


def decode(clip: RecordedClip, data: bytes) -> np.ndarray:
    """The member's samples as floats at the catalog rate: raw 16 kHz PCM, or WAV / FLAC."""
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
    """Where the clip comes from: `registry:package@version:path` (a repository's: `github:owner/name@commit:path`)."""
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
        description=f"{len(clips)} recorded English utterances: sentences read by adult Mandarin-L1 speakers "
                    "(speechocean762), read speech (LibriVox, LibriSpeech), spoken commands from CMU's test "
                    "recordings, a 1961 address in a Boston accent; 16 kHz mono FLAC, -20 dBFS RMS", vad=vad_record(),
        extra=_extra()))
    return clips, audio


def _extra() -> dict:
    return {"speech": "recorded", "license": ", ".join(sorted({license_of(c) for c in CLIPS})), "notice": NOTICE,
            "sources": [{"package": s.package, "version": s.version, "registry": s.registry, "file": s.file,
                         "sha256": s.sha256, "license": s.license} for s in SOURCES.values()]}


def notice_text() -> str:
    """The attribution every copy of the recordings carries (CC BY 4.0 section 3(a), BSD clause 2, Apache-2.0
    section 4)."""
    lines = ["# Recorded speech: sources and licences", "",
             "Every clip's manifest line names its source (`registry:package@version:path`) and licence.", ""]
    for s in SOURCES.values():
        n = sum(c.source == s.key for c in CLIPS)
        lines += [f"## {s.package} {s.version} ({s.registry}), {n} clip{'' if n == 1 else 's'}, {s.license}", "",
                  s.attribution, ""]
    lines += [CHANGED, ""]
    lines += ["The LibriVox readings (ps-librivox-*) are in the public domain. Every licence here is permissive: "
              "none asks that voxwatch or these derived clips be shared under the same licence.", ""]
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
