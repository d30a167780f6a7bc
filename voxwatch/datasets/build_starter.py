"""The reproducible recipe for the bundled datasets: `python -m voxwatch.datasets.build_starter`.

stt-starter-clean is synthesized with eSpeak NG in four voice and rate settings, resampled to
16 kHz, padded with seeded silences over a faint noise floor, and loudness-normalised; each
degraded set is a named transform of it (voxwatch.datasets.degrade), and stt-starter-phone-mulaw is
it as a phone line carries it, stored as 8 kHz mu-law. tts-prompts is text only.
eSpeak NG's frication noise is random, so a rebuild gives equivalent, not byte-identical, audio:
the committed files and their sha256s are the reference; `--reanchor` refreshes anchors only,
`--retag` the entity tags (starter_texts.STT_ENTITIES) only.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Iterable

import numpy as np

from voxwatch.foundation.integrity import file_sha256
from voxwatch.metrics.vad import VAD_NAME, VAD_PARAMS, VAD_VERSION, speech_anchors
from voxwatch.metrics.text_stream import STREAMED_TEXT_CONDITION
from voxwatch.providers.local.espeak_engine import EspeakEngine

from voxwatch.datasets import degrade, mulaw
from voxwatch.foundation.audio import (CATALOG_RATE, normalize_loudness, read_pcm16, resample, to_pcm16,
                                      write_pcm16_file)
from voxwatch.datasets.catalog import bundled_root
from voxwatch.datasets.manifest import Clip, DatasetInfo, Prompt, file_stem, read_info, read_records, write_info, write_records
from voxwatch.datasets.starter_texts import STT_ENTITIES, STT_UTTERANCES, TTS_PROMPTS
from voxwatch.datasets.wire import PHONE_MULAW

FAMILY = "stt-starter"
RECIPE = "voxwatch.datasets.build_starter v1"
VOICES = (("en-us", 170), ("en-us+f3", 185), ("en-gb-x-rp", 155), ("en-us+m3", 200))
TRAIL_S = 0.5
FLOOR_DBFS = -72.0


def vad_record() -> dict:
    """The shared VAD's name, version and parameters, as every dataset.json records them."""
    return {"name": VAD_NAME, "version": VAD_VERSION, "params": VAD_PARAMS.as_record()}


def _synthesize(engine: EspeakEngine, uid: str, text: str, voice: str, rate: int) -> np.ndarray:
    speech = resample(engine.render(text, voice, rate).astype(np.float64) / 32768.0, engine.sample_rate, CATALOG_RATE)
    rng = np.random.default_rng(degrade.seed_for("clean", uid))
    lead = np.zeros(int(rng.uniform(0.3, 0.6) * CATALOG_RATE))
    x = np.concatenate([lead, speech, np.zeros(int(TRAIL_S * CATALOG_RATE))])
    x = normalize_loudness(x)
    return x + rng.standard_normal(x.size) * 10 ** (FLOOR_DBFS / 20)


def entities_of(uid: str) -> tuple[dict[str, str], ...] | None:
    """The starter utterance's tagged entities as a manifest holds them (None: none tagged)."""
    tagged = STT_ENTITIES.get(uid)
    return tuple({"type": t, "text": span} for t, span in tagged) if tagged else None


def write_clip(folder: Path, uid: str, text: str, x: np.ndarray, start: float, end: float, suffix: str = ".wav",
               **extra) -> Clip:
    """The clip's file under folder/clips (WAV, or FLAC for the recorded set) and its manifest record."""
    path = folder / "clips" / f"{file_stem(uid)}{suffix}"
    write_pcm16_file(path, x)
    return Clip(id=uid, utterance_id=uid, text=text, path=f"clips/{path.name}", sha256=file_sha256(path),
                duration_s=round(x.size / CATALOG_RATE, 4), sample_rate=CATALOG_RATE,
                speech_start=start, speech_end=end, **extra)


def synthesized_clip(engine: EspeakEngine, folder: Path, uid: str, text: str, voice: str, rate: int,
                     **extra) -> tuple[Clip, np.ndarray]:
    """One utterance spoken by eSpeak NG as the starter speaks it (padded, over a faint floor, at
    catalog loudness), written under folder/clips with its VAD anchors: its record and its samples."""
    x = _synthesize(engine, uid, text, voice, rate)
    x = to_pcm16(x).astype(np.float64) / 32767.0  # what the file holds
    anchors = speech_anchors(to_pcm16(x))
    if anchors is None:
        raise RuntimeError(f"{uid}: the VAD found no speech in the synthesized clip")
    return write_clip(folder, uid, text, x, anchors.speech_start, anchors.speech_end,
                      voice=f"espeak-ng/{voice}@{rate}wpm", **extra), x


def build_clean(root: Path) -> tuple[list[Clip], dict[str, np.ndarray]]:
    engine = EspeakEngine.get()
    folder = root / f"{FAMILY}-clean"
    clips, audio = [], {}
    for i, (uid, _category, text) in enumerate(STT_UTTERANCES):
        voice, rate = VOICES[i % len(VOICES)]
        clip, audio[uid] = synthesized_clip(engine, folder, uid, text, voice, rate, entities=entities_of(uid))
        clips.append(clip)
    write_records(folder / "manifest.jsonl", clips)
    write_info(folder, DatasetInfo(
        name=folder.name, kind="audio", family=FAMILY, condition="clean", recipe=RECIPE, sample_rate=CATALOG_RATE,
        description=f"{len(clips)} caller utterances to voice agents, eSpeak NG {engine.version}, "
                    f"{len(VOICES)} voice/rate settings, 16 kHz mono, -20 dBFS RMS", vad=vad_record(),
        extra={"voices": [f"{v}@{r}wpm" for v, r in VOICES]}))
    return clips, audio


def build_degraded(root: Path, name: str, clean: list[Clip], audio: dict[str, np.ndarray], family: str = FAMILY,
                   clean_name: str = f"{FAMILY}-clean", recipe: str = RECIPE, language: str = "en") -> Path:
    """`<family>-<name>`: every clean clip through the named transform, anchors carried, stored in its clean
    clip's container (also what `voxwatch datasets fetch` builds a fetched set's degraded conditions with)."""
    folder = root / f"{family}-{name}"
    _func, params = degrade.TRANSFORMS[name]
    record = {"name": name, "params": {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}}
    clips = []
    for c in clean:
        d = degrade.apply(name, audio[c.utterance_id], c.speech_start, c.speech_end, c.utterance_id)
        clips.append(write_clip(folder, c.utterance_id, c.text, d.audio, round(d.speech_start, 3),
                                round(d.speech_end, 3), suffix=Path(c.path).suffix, voice=c.voice, accent=c.accent,
                                source_clip=f"{clean_name}/{c.id}", transform=record, entities=c.entities,
                                source=c.source, license=c.license))
    write_records(folder / "manifest.jsonl", clips)
    write_info(folder, DatasetInfo(
        name=folder.name, kind="audio", family=family, condition=name, recipe=recipe, sample_rate=CATALOG_RATE,
        description=f"{clean_name} through the {name} transform {record['params']}; anchors carried from the clean clips",
        vad=vad_record(), transform=record, language=language))
    return folder


def build_degraded_family(root: Path, clean_name: str, clean: list[Clip], transforms: Iterable[str], family: str,
                          recipe: str, language: str = "en") -> list[Path]:
    """`<family>-<transform>` for each named transform of the clean clips stored in root/clean_name, read
    back as stored (what `voxwatch datasets fetch` and `voxwatch datasets import --degrade` build)."""
    transforms = list(transforms)
    if not transforms:
        return []
    audio = {c.utterance_id: read_pcm16(root / clean_name / c.path)[0].astype(np.float64) / 32767.0 for c in clean}
    return [build_degraded(root, t, clean, audio, family=family, clean_name=clean_name, recipe=recipe,
                           language=language) for t in transforms]


PHONE_LINE = "phone-mulaw"
"""The phone condition as callers' audio reaches a voice agent: on the wire, not decoded (METHOD "Audio")."""


def build_phone_line(root: Path, family: str = FAMILY, clean_name: str = f"{FAMILY}-clean",
                     recipe: str = RECIPE) -> Path:
    """`<family>-phone-mulaw`: every committed clean clip as a phone line carries it (degrade.phone_line),
    stored as 8 kHz G.711 mu-law and sent as stored to providers that take it; anchors carried (the
    band-pass is zero-phase and the resampler centred, so the words are where they were)."""
    folder, clean_dir = root / f"{family}-{PHONE_LINE}", root / clean_name
    record = {"name": PHONE_LINE, "params": {"rate": PHONE_MULAW.sample_rate, "band_hz": [300.0, 3400.0]}}
    clips = []
    for c in read_records(clean_dir / "manifest.jsonl", Clip):
        pcm, _ = read_pcm16(clean_dir / c.path)
        codes = degrade.phone_line(pcm.astype(np.float64) / 32767.0, PHONE_MULAW.sample_rate)
        path = folder / "clips" / f"{file_stem(c.utterance_id)}.wav"
        mulaw.write_wav(path, codes, PHONE_MULAW.sample_rate)
        clips.append(Clip(id=c.id, utterance_id=c.utterance_id, text=c.text, path=f"clips/{path.name}",
                          sha256=file_sha256(path), duration_s=round(codes.size / PHONE_MULAW.sample_rate, 4),
                          sample_rate=PHONE_MULAW.sample_rate, speech_start=c.speech_start, speech_end=c.speech_end,
                          voice=c.voice, accent=c.accent, source_clip=f"{clean_name}/{c.id}", transform=record,
                          source=c.source, license=c.license))
    write_records(folder / "manifest.jsonl", clips)
    write_info(folder, DatasetInfo(
        name=folder.name, kind="audio", family=family, condition=PHONE_LINE, recipe=recipe,
        sample_rate=PHONE_MULAW.sample_rate, wire=PHONE_MULAW.as_record(),
        description=f"{clean_name} as a phone line carries it: 8 kHz, 300-3400 Hz, G.711 mu-law, stored and sent as "
                    "mu-law (never pooled with the 16 kHz conditions); anchors carried from the clean clips",
        vad=vad_record(), transform=record))
    return folder


def build_prompts(root: Path) -> None:
    folder = root / "tts-prompts"
    write_records(folder / "manifest.jsonl", [Prompt(id=p, text=t, category=c) for p, c, t in TTS_PROMPTS])
    write_info(folder, DatasetInfo(
        name="tts-prompts", kind="text", family="tts-prompts", condition="text", recipe=RECIPE,
        description="30 customer-service prompts (order tracking, appointments, account verification, "
                    "tech support) and 5 longer agent passages"))


def build_streamed_prompts(root: Path) -> None:
    folder = root / "tts-streamed-text"
    write_records(folder / "manifest.jsonl", [Prompt(id=p, text=t, category=c) for p, c, t in TTS_PROMPTS])
    write_info(folder, DatasetInfo(
        name="tts-streamed-text", kind="text", family="tts-streamed-text", condition=STREAMED_TEXT_CONDITION, recipe=RECIPE,
        description="tts-prompts' prompts fed as an agent feeds them: word by word at an LLM's pace (a seeded "
                    "schedule), the reply cancelled once audible; for the models whose registry entry says "
                    "streamed_text"))


def reanchor(root: Path) -> int:
    """Recompute the VAD anchors of the committed clips without re-synthesizing them.

    eSpeak NG's frication noise is random, so a full rebuild makes new files (and new sha256s);
    when only the VAD changes, the committed audio is kept and only the anchors move. Degraded
    clips keep the shift their transform applied to the clean anchors.
    """
    clean_dir = root / f"{FAMILY}-clean"
    old_clean = {c.id: c for c in read_records(clean_dir / "manifest.jsonl", Clip)}
    new_clean = {}
    for c in old_clean.values():
        pcm, _ = read_pcm16(clean_dir / c.path)
        anchors = speech_anchors(pcm)
        new_clean[c.id] = replace(c, speech_start=anchors.speech_start, speech_end=anchors.speech_end)
    write_records(clean_dir / "manifest.jsonl", new_clean.values())
    changed = sum(new_clean[i] != old_clean[i] for i in old_clean)
    for name in (*degrade.TRANSFORMS, PHONE_LINE):
        folder = root / f"{FAMILY}-{name}"
        clips = []
        for c in read_records(folder / "manifest.jsonl", Clip):
            src_old, src_new = old_clean[c.utterance_id], new_clean[c.utterance_id]
            clips.append(replace(c, speech_start=round(src_new.speech_start + c.speech_start - src_old.speech_start, 3),
                                 speech_end=round(src_new.speech_end + c.speech_end - src_old.speech_end, 3)))
        write_records(folder / "manifest.jsonl", clips)
    for folder in [clean_dir] + [root / f"{FAMILY}-{n}" for n in (*degrade.TRANSFORMS, PHONE_LINE)]:
        info = read_info(folder)
        write_info(folder, replace(info, vad=vad_record()))
    return changed


def retag(root: Path) -> int:
    """Rewrite the entity tags of every starter manifest from STT_ENTITIES, audio and anchors untouched
    (entities are text metadata: no clip is re-synthesized). Returns how many clips changed."""
    changed = 0
    for folder in sorted(root.glob(f"{FAMILY}-*")):  # clean, each degraded set, the phone line's mu-law
        old = read_records(folder / "manifest.jsonl", Clip)
        new = [replace(c, entities=entities_of(c.utterance_id)) for c in old]
        changed += sum(a != b for a, b in zip(old, new))
        write_records(folder / "manifest.jsonl", new)
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=bundled_root())
    parser.add_argument("--reanchor", action="store_true", help="only recompute VAD anchors of the existing clips")
    parser.add_argument("--retag", action="store_true", help="only rewrite the entity tags of the existing clips")
    args = parser.parse_args()
    if args.retag:
        print(f"retagged {retag(args.out)} clips' entities in {args.out}")
        return
    if args.reanchor:
        print(f"re-anchored {reanchor(args.out)} of the clean clips' anchors in {args.out}")
        return
    for old in args.out.glob(f"{FAMILY}-*"):
        shutil.rmtree(old)
    clean, audio = build_clean(args.out)
    for name in degrade.TRANSFORMS:
        build_degraded(args.out, name, clean, audio)
    build_phone_line(args.out)
    build_prompts(args.out)
    build_streamed_prompts(args.out)
    digest = hashlib.sha256(b"".join((args.out / d / "manifest.jsonl").read_bytes() for d in sorted(
        p.name for p in args.out.iterdir() if (p / "manifest.jsonl").is_file()))).hexdigest()
    print(f"built {len(clean)} utterances x {2 + len(degrade.TRANSFORMS)} conditions and {len(TTS_PROMPTS)} prompts "
          f"in {args.out} (manifests sha256 {digest[:16]})")


if __name__ == "__main__":
    main()
