"""A persona's caller audio, per turn, rendered once and kept (voxwatch/foundation/persona.py).

The default persona is the scenario's pinned WAVs. Any other persona re-speaks each turn's words
with its eSpeak NG voice and rate (the scenario's recipe, voxwatch/conversations/synthesis.py) and/or
mixes its background noise in at its SNR over the speech frames (voxwatch/metrics/snr.py), the noise drawn
from the persona's seed, the scenario's pin and the turn's id.

eSpeak NG does not render the same bytes twice, so a rendering is kept on disk under
var/personas/<key>/, the key a sha256 of the scenario pin, the persona's fields, the recipe and
the eSpeak NG version: each persona is synthesized once per scenario, and every model of a
persona hears the same audio. A noise-only persona is deterministic in itself (the pinned audio
and a seeded generator), so its cache only saves time. A re-spoken turn under a noise keeps its
clean words too (<turn>.speech.wav): their VAD anchors time the turn (render_persona).

A persona's behaviours in the audio: fillers are put into the words before they are re-spoken
(voxwatch/foundation/hesitations.py), and a mid-turn pause is a silence of `pause_ms` put into the clean
words at their quietest 20 ms frame in the middle third of the speech (between two words), before
any noise is mixed over it: the rendering says where each pause is (PersonaRendering.pauses), so
the recording can tell whether the agent answered inside it.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from voxwatch.foundation.audio import resample, to_pcm16
from voxwatch.foundation.noises import generate
from voxwatch.metrics.snr import noise_gain, speech_mask
from voxwatch.metrics.vad import VAD_PARAMS, SpeechAnchors, speech_anchors

from voxwatch.foundation.hesitations import with_fillers
from voxwatch.foundation.persona import RECIPE, Persona, PersonaError, as_record
from voxwatch.conversations.noise_library import DEFAULT_LIBRARY, noise_stretch
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.conversations.synthesis import RATE_WPM, RECORDED, engine_version, render

DEFAULT_CACHE = Path("var/personas")
PEAK = 32767 * 10 ** (-1 / 20)  # a mix louder than -1 dBFS is turned down whole (the SNR unchanged)


def pinned_audio(loaded: LoadedScenario, index: int) -> bytes:
    """A turn's pinned caller audio as int16 PCM (the scenario's rate, mono: checked at load), whole:
    the runner trims what it sends (runner.caller_turn)."""
    data, _ = sf.read(str(loaded.audio_path(loaded.scenario.turns[index])), dtype="int16")
    return np.ascontiguousarray(data).tobytes()


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "little")


def rendering_key(loaded: LoadedScenario, persona: Persona) -> str:
    """The cache key: what the rendered audio depends on, and nothing else (not the persona's name)."""
    record = {"recipe": RECIPE, "pin": loaded.pin, "sample_rate": loaded.scenario.sample_rate,
              **persona.fields_record()}
    if persona.resynthesized:
        record["engine"] = f"espeak-ng {engine_version()}"
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def mix_noise(speech: np.ndarray, kind: str, snr_db: float, rate: int, seed: int,
              noise: np.ndarray | None = None) -> np.ndarray:
    """speech (int16 values as floats) with `kind` noise (generated, unless `noise` gives the unit-RMS
    samples: an imported recording's) at snr_db over its speech frames, as int16."""
    if speech.size == 0:
        return speech.astype("<i2")
    noise = generate(kind, speech.size, rate, seed) if noise is None else noise
    mask = speech_mask(speech, rate)
    y = speech + noise * noise_gain(speech, noise, mask, snr_db)
    peak = float(np.max(np.abs(y)))
    if peak > PEAK:
        y *= PEAK / peak
    return np.clip(np.round(y), -32768, 32767).astype("<i2")


def _pinned(loaded: LoadedScenario, index: int) -> np.ndarray:
    return np.frombuffer(pinned_audio(loaded, index), dtype="<i2")


def _read(path: Path) -> np.ndarray:
    data, _ = sf.read(str(path), dtype="int16")
    return np.ascontiguousarray(data).astype("<i2")


def _write(path: Path, pcm: np.ndarray, rate: int) -> None:
    """Whole or not at all: a run reading the cache never sees half a file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    sf.write(str(tmp), pcm, rate, subtype="PCM_16", format="WAV")
    os.replace(tmp, path)


def _speech(loaded: LoadedScenario, persona: Persona, index: int, folder: Path) -> np.ndarray:
    """The turn's clean words under the persona: the pinned audio, or re-spoken (once, then kept)."""
    scenario = loaded.scenario
    if not persona.resynthesized:
        return _pinned(loaded, index)
    turn = scenario.turns[index]
    path = folder / (f"{turn.id}.wav" if persona.noise is None else f"{turn.id}.speech.wav")
    if not path.is_file():
        if scenario.voice == RECORDED:
            raise PersonaError(f"persona {persona.name!r}: {scenario.name}'s caller audio was recorded, not "
                               "synthesized; a persona can add noise to it but not change its voice or rate")
        text = with_fillers(turn.text, persona.fillers, _seed("fillers", persona.seed, loaded.pin, turn.id))
        x = render(text, persona.voice or scenario.voice, scenario.sample_rate,
                   _seed("speech", persona.seed, loaded.pin, turn.id), persona.rate_wpm or RATE_WPM)
        _write(path, to_pcm16(x), scenario.sample_rate)
    return _read(path)


@dataclass(frozen=True)
class PersonaRendering:
    """Each turn's caller audio (int16 PCM), and where its words are when noise would hide them."""

    audio: list[bytes]
    anchors: list[SpeechAnchors | None]  # the clean speech's, under a noise; None: read the audio itself
    pauses: list[tuple[float, float] | None] | None = None  # per turn: a mid-turn pause (start, length s)


PAUSE_FRAME_MS = 20


def insert_pause(speech: np.ndarray, rate: int, pause_ms: int) -> tuple[np.ndarray, float]:
    """`speech` (int16 values) with `pause_ms` of silence put in at its quietest 20 ms frame in the
    middle third of its speech frames (voxwatch/metrics/snr.py's mask), and where the pause starts (s)."""
    x = np.asarray(speech)
    n = max(1, rate * PAUSE_FRAME_MS // 1000)
    loud = np.flatnonzero(speech_mask(x.astype(np.float64), rate))
    if loud.size == 0:
        raise PersonaError("a mid-turn pause needs speech in the turn; this turn's audio is silent")
    first, last = int(loud[0]) // n, int(loud[-1]) // n
    third = max(1, (last - first + 1) // 3)
    frames = np.arange(first + third, max(first + third + 1, last + 1 - third))
    power = [float(np.mean(x[k * n:(k + 1) * n].astype(np.float64) ** 2)) for k in frames]
    at = int(frames[int(np.argmin(power))]) * n + n // 2
    gap = np.zeros(int(round(pause_ms * rate / 1000)), dtype=x.dtype)
    return np.concatenate([x[:at], gap, x[at:]]), at / rate


def render_persona(loaded: LoadedScenario, persona: Persona, cache_dir: Path | None = None,
                   noises_dir: Path | None = None) -> PersonaRendering:
    """The persona's caller audio per turn, rendered turns read from (or first written to) cache_dir
    (default var/personas), an imported noise read from noises_dir (default var/noises). Under a noise each turn also carries the clean speech's VAD anchors: noise
    at 10 dB makes the VAD call the whole clip speech, and the caller's last word would move to the
    clip's end (so degraded datasets carry their clean anchors too)."""
    count = len(loaded.scenario.turns)
    if persona.unchanged or (not persona.resynthesized and persona.noise is None and persona.pause_ms is None):
        return PersonaRendering([pinned_audio(loaded, i) for i in range(count)], [None] * count, [None] * count)
    folder = (cache_dir or DEFAULT_CACHE) / rendering_key(loaded, persona)
    folder.mkdir(parents=True, exist_ok=True)
    about = folder / "persona.json"
    if not about.is_file():
        record = {"persona": as_record(persona), "identity": persona.identity, "scenario": loaded.identity,
                  "pin": loaded.pin, "recipe": RECIPE}
        _write_text(about, json.dumps(record, indent=2) + "\n")
    audio: list[bytes] = []
    anchors: list[SpeechAnchors | None] = []
    pauses: list[tuple[float, float] | None] = []
    rate = loaded.scenario.sample_rate
    for i, turn in enumerate(loaded.scenario.turns):
        speech = _speech(loaded, persona, i, folder)
        pause = None
        if persona.pause_ms is not None:
            speech, start = insert_pause(speech, rate, persona.pause_ms)
            pause = (start, persona.pause_ms / 1000.0)
        pauses.append(pause)
        if persona.noise is None:
            audio.append(speech.tobytes())
            anchors.append(None)
            continue
        path = folder / f"{turn.id}.wav"
        if not path.is_file():
            seed = _seed("noise", persona.noise, persona.seed, loaded.pin, turn.id)
            imported = None if persona.noise_sha256 is None else noise_stretch(
                noises_dir or DEFAULT_LIBRARY, persona.noise, persona.noise_sha256, speech.size, rate, seed)
            _write(path, mix_noise(speech.astype(np.float64), persona.noise, persona.snr_db, rate, seed, imported), rate)
        audio.append(_read(path).tobytes())
        anchors.append(speech_anchors(speech if rate == VAD_PARAMS.sample_rate else
                                      to_pcm16(resample(speech / 32768.0, rate, VAD_PARAMS.sample_rate))))
    return PersonaRendering(audio, anchors, pauses)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def persona_audio(loaded: LoadedScenario, persona: Persona, cache_dir: Path | None = None) -> list[bytes]:
    """Each turn's caller audio (int16 PCM at the scenario's rate) under the persona (render_persona)."""
    return render_persona(loaded, persona, cache_dir).audio
