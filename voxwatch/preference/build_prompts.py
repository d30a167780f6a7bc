"""The bundled prompt set's recipe: `python -m voxwatch.preference.build_prompts`.

preference-starter is SYNTHESIZED, not recorded: nine single-turn requests to a voice assistant
spoken by eSpeak NG (voxwatch/conversations/synthesis.py's recipe, 16 kHz), and three of them again in a
degraded condition made by the project's own code: cafe babble at 5 dB SNR over the speech
(indoor-noise), traffic-like brown noise at 5 dB (outdoor-noise), both mixed as personas mix
theirs (conversations/persona_audio.mix_noise), and a synthetic room's reverberation (far-field,
datasets/degrade.farfield). Each prompt carries the scripted baseline's reply. eSpeak NG does not
render the same bytes twice: the committed files and their sha256s are the reference.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
from pathlib import Path

import numpy as np

from voxwatch.conversations.persona_audio import mix_noise
from voxwatch.conversations.synthesis import engine_version, render
from voxwatch.datasets import degrade
from voxwatch.foundation.audio import CATALOG_RATE, to_pcm16, write_wav
from voxwatch.foundation.integrity import file_sha256
from voxwatch.metrics.vad import speech_anchors

from voxwatch.preference.prompt_catalog import BUNDLED, bundled_root
from voxwatch.preference.prompts import Prompt, PromptSetInfo, load_prompt_set, write_prompt_set

RECIPE = "voxwatch.preference.build_prompts v1"
VOICES = ("en-us", "en-gb-x-rp")
# id, category, difficulty, tags, what the caller says, the scripted baseline's reply
CLEAN = (
    ("p01", "factual", "L1", (), "What is the capital of France?", "The capital of France is Paris."),
    ("p02", "factual", "L3", (), "Explain in one sentence why the sky is blue.",
     "Sunlight scatters off the air, and blue light scatters the most, so the sky looks blue."),
    ("p03", "reasoning", "L3", ("needs_reasoning",),
     "My train leaves at nine fifteen and the trip takes two hours and fifty minutes. When do I arrive?",
     "You arrive at five past twelve."),
    ("p04", "reasoning", "L4", ("needs_reasoning",),
     "I have twelve apples, give away a third of them, then buy five more. How many do I have?",
     "You have thirteen apples."),
    ("p05", "instruction", "L2", (), "Give me three tips for sleeping better, and keep it short.",
     "Keep a regular bedtime, put screens away an hour before bed, and skip coffee after noon."),
    ("p06", "instruction", "L3", (), "Spell the word necessary, letter by letter.",
     "N, E, C, E, S, S, A, R, Y."),
    ("p07", "empathy", "L2", (), "I just lost my job and I feel terrible. What should I do first?",
     "I am sorry, that is hard. Give yourself a day, then update your resume and tell friends you are looking."),
    ("p08", "multilingual", "L3", ("multilingual",), "How do you say thank you very much in Spanish?",
     "In Spanish you say muchas gracias."),
    ("p09", "small-talk", "L1", (), "Good morning! How are you today?",
     "Good morning! I am doing well, thank you. How can I help?"),
)
# degraded id, its clean prompt, condition, transform record
DEGRADED = (
    ("p01-indoor", "p01", "indoor-noise", {"name": "babble", "params": {"snr_db": 5.0}}),
    ("p03-outdoor", "p03", "outdoor-noise", {"name": "brown", "params": {"snr_db": 5.0}}),
    ("p05-farfield", "p05", "far-field", {"name": "farfield", "params": {"rt60_s": 0.6, "drr_db": 0.0}}),
)


def _seed(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256(":".join(parts).encode()).digest()[:8], "little")


def _prompt(folder: Path, pid: str, x: np.ndarray, base: tuple, condition: str, **extra) -> Prompt:
    _pid, category, difficulty, tags, text, reply = base
    path = folder / "audio" / f"{pid}.wav"
    write_wav(path, x, CATALOG_RATE)
    return Prompt(pid, f"audio/{pid}.wav", file_sha256(path), text, category, difficulty, condition, tuple(tags),
                  reply, **extra)


def degraded(pcm: np.ndarray, pid: str, transform: dict) -> np.ndarray:
    """The clean prompt's samples (int16 values as floats) through the transform, as floats in [-1, 1]."""
    name, params = transform["name"], transform["params"]
    if name == "farfield":
        anchors = speech_anchors(pcm.astype("<i2"))
        start, end = (anchors.speech_start, anchors.speech_end) if anchors else (0.0, pcm.size / CATALOG_RATE)
        return degrade.farfield(pcm / 32767.0, start, end, np.random.default_rng(_seed(name, pid)), **params).audio
    return mix_noise(pcm, name, params["snr_db"], CATALOG_RATE, _seed(name, pid)).astype(np.float64) / 32767.0


def build(root: Path) -> Path:
    folder = root / BUNDLED
    shutil.rmtree(folder, ignore_errors=True)
    prompts, clean = [], {}
    for i, row in enumerate(CLEAN):
        x = render(row[4], VOICES[i % len(VOICES)], CATALOG_RATE, _seed("clean", row[0]))
        pcm = to_pcm16(x).astype(np.float64)
        clean[row[0]] = (row, pcm)
        prompts.append(_prompt(folder, row[0], pcm / 32767.0, row, "clean"))
    for pid, source, condition, transform in DEGRADED:
        row, pcm = clean[source]
        prompts.append(_prompt(folder, pid, degraded(pcm, pid, transform), row, condition, source=source,
                               transform=transform))
    write_prompt_set(folder, PromptSetInfo(
        name=BUNDLED, synthesized=True, recipe=RECIPE,
        description=(f"SYNTHESIZED with eSpeak NG {engine_version()} (voices {', '.join(VOICES)}), not recorded from "
                     f"people: {len(CLEAN)} single-turn requests to a voice assistant and {len(DEGRADED)} of them in a "
                     "degraded condition made by voxwatch's own noise and reverberation; a starter set to try the "
                     "preference pipeline with no key, not a benchmark of human speech"),
        extra={"voices": list(VOICES), "engine": f"espeak-ng {engine_version()}"}), prompts)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=bundled_root())
    args = parser.parse_args()
    folder = build(args.root)
    loaded = load_prompt_set(folder)
    print(f"built {len(loaded.prompts)} prompts in {folder} (pin {loaded.pin[:16]})")


if __name__ == "__main__":
    main()
