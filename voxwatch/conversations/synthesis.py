"""The caller's voice: each turn's words rendered once with eSpeak NG and pinned by sha256.

Same recipe as the starter datasets (voxwatch/datasets/build_starter.py): eSpeak NG at a fixed rate,
resampled to the scenario's rate, a short lead-in and a trailing silence over a faint seeded
noise floor, loudness-normalised. eSpeak NG's output varies from call to call (its frication
noise, and a few samples of length, even with its own and libc's random seeds set: measured on
1.52.0), so a turn is rendered once and its file is kept: the sha256 in scenario.json is the
reference, and only a turn without valid audio is rendered again.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np

from voxwatch.foundation.audio import normalize_loudness, resample, to_pcm16, write_wav
from voxwatch.foundation.integrity import file_sha256

from voxwatch.foundation.scenario import Scenario, Turn

RECIPE = "voxwatch.conversations.synthesis v1"
RATE_WPM = 140
LEAD_S = 0.4
TRAIL_S = 0.6
FLOOR_DBFS = -72.0
RECORDED = "recorded"  # a scenario voice that says the audio was recorded, not synthesized


def _seed(scenario: str, turn_id: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{scenario}/{turn_id}".encode()).digest()[:4], "little")


def render(text: str, voice: str, sample_rate: int, seed: int, rate_wpm: int = RATE_WPM) -> np.ndarray:
    """The turn's audio as float64 in [-1, 1] at sample_rate; seed draws the noise floor (a
    persona speaks at its own rate: voxwatch/conversations/persona_audio.py)."""
    from voxwatch.providers.local.espeak_engine import EspeakEngine  # loads the library only when rendering

    engine = EspeakEngine.get()
    speech = engine.render(text, voice, rate_wpm).astype(np.float64) / 32768.0
    if speech.size == 0:
        raise RuntimeError(f"eSpeak NG rendered no audio for {text!r}")
    speech = resample(speech, engine.sample_rate, sample_rate)
    x = np.concatenate([np.zeros(int(LEAD_S * sample_rate)), speech, np.zeros(int(TRAIL_S * sample_rate))])
    x = normalize_loudness(x)
    return x + np.random.default_rng(seed).standard_normal(x.size) * 10 ** (FLOOR_DBFS / 20)


def engine_version() -> str:
    from voxwatch.providers.local.espeak_engine import EspeakEngine

    return EspeakEngine.get().version


def needs_audio(folder: Path, turn: Turn) -> bool:
    """No audio yet, or a file that is missing or no longer the one pinned."""
    path = folder / turn.audio
    return not (turn.audio and turn.audio_sha256 and path.is_file() and file_sha256(path) == turn.audio_sha256)


def synthesize_missing(scenario: Scenario, folder: Path, force: bool = False) -> tuple[Scenario, list[str]]:
    """Render every turn that needs audio (all with force) into folder/audio/<turn id>.wav; the
    scenario with those paths and sha256s filled in, and the ids rendered."""
    if scenario.voice == RECORDED:
        raise ValueError(f"{scenario.name}: its voice is {RECORDED!r}; recorded audio cannot be synthesized")
    turns, done = [], []
    for turn in scenario.turns:
        if force or needs_audio(folder, turn):
            rel = turn.audio or f"audio/{turn.id}.wav"
            x = render(turn.text, scenario.voice, scenario.sample_rate, _seed(scenario.name, turn.id))
            write_wav(folder / rel, to_pcm16(x).astype(np.float64) / 32767.0, scenario.sample_rate)
            turn = replace(turn, audio=rel, audio_sha256=file_sha256(folder / rel))
            done.append(turn.id)
        turns.append(turn)
    extra = dict(scenario.extra)
    if done:
        extra["synthesis"] = {"engine": f"espeak-ng {engine_version()}", "voice": scenario.voice,
                              "rate_wpm": RATE_WPM, "recipe": RECIPE}
    return replace(scenario, turns=tuple(turns), extra=extra), done
