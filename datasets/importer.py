"""`voxwatch datasets import DIR --name NAME`: bring your own audio into the catalog.

DIR holds audio (WAV or FLAC, any rate, mono or not) and a manifest.jsonl whose lines have at
least {"id", "path", "text"}. Each file is converted to the catalog format (16 kHz mono 16-bit,
-20 dBFS RMS), given VAD anchors, and hashed. The dataset is written to a temporary folder and
moved into place only when every clip succeeded, so a bad file leaves nothing half-imported.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from voxwatch.metrics.vad import VAD_NAME, VAD_PARAMS, VAD_VERSION, speech_anchors

from .audio import CATALOG_RATE, AudioError, normalize_loudness, read_mono, resample, to_pcm16, write_wav
from voxwatch.integrity import file_sha256

from .manifest import Clip, DatasetInfo, ManifestError, iter_jsonl, write_info, write_records

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]")


class DatasetImportError(ValueError):
    pass


def import_dataset(source: Path, name: str, dest_root: Path, existing: list[str]) -> tuple[Path, list[Clip]]:
    if not _NAME.match(name):
        raise DatasetImportError(f"dataset name {name!r}: use lower-case letters, digits, '.', '_' or '-'")
    if name in existing:
        raise DatasetImportError(f"a dataset named {name!r} already exists; choose another --name")
    manifest = source / "manifest.jsonl"
    if not manifest.is_file():
        raise DatasetImportError(f"{manifest}: not found (DIR needs a manifest.jsonl with id, path and text per line)")
    entries = []
    for n, record in iter_jsonl(manifest):
        missing = [k for k in ("id", "path", "text") if not isinstance(record.get(k), str) or not record[k].strip()]
        if missing:
            raise ManifestError(f"{manifest}:{n}: missing or empty {', '.join(missing)}")
        entries.append(record)
    if not entries:
        raise ManifestError(f"{manifest}: no clips")
    ids = [e["id"] for e in entries]
    if len(set(ids)) != len(ids):
        raise ManifestError(f"{manifest}: duplicate ids")
    dest_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=dest_root))
    try:
        clips = []
        for e in entries:
            audio_path = (source / e["path"]).resolve()
            x, rate = read_mono(audio_path)
            x = normalize_loudness(resample(x, rate, CATALOG_RATE))
            anchors = speech_anchors(to_pcm16(x))
            if anchors is None:
                raise AudioError(f"{audio_path}: the VAD found no speech")
            safe = _SAFE_ID.sub("_", e["id"])
            path = work / "clips" / f"{safe}.wav"
            write_wav(path, x)
            clips.append(Clip(id=e["id"], utterance_id=e["id"], text=e["text"], path=f"clips/{safe}.wav",
                              sha256=file_sha256(path), duration_s=round(x.size / CATALOG_RATE, 4),
                              sample_rate=CATALOG_RATE, speech_start=anchors.speech_start,
                              speech_end=anchors.speech_end, voice=e.get("speaker")))
        write_records(work / "manifest.jsonl", clips)
        write_info(work, DatasetInfo(
            name=name, kind="audio", family=name, condition="imported", recipe="voxwatch datasets import",
            sample_rate=CATALOG_RATE, description=f"imported from {source.resolve()}",
            vad={"name": VAD_NAME, "version": VAD_VERSION, "params": VAD_PARAMS.as_record()}))
        final = dest_root / name
        work.rename(final)
        return final, clips
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
