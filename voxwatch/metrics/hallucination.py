"""Words from nothing (METHOD "Hallucination on non-speech"): what a model makes of audio without speech.

A streaming STT that writes "thank you" on a silent line starts an agent's turn that nobody asked
for. The bundled `stt-nonspeech` clips (silence, line noise, background noise, music-like tones, hold
music: datasets.build_nonspeech) hold no speech and have an empty reference; a dataset is one of them
by its condition, NONSPEECH. Each such row is scored by the words its transcript holds after the
normalizer WER uses (Whisper's English normalizer drops fillers such as "um" and "hmm", and the
punctuation a model may send alone): any word is invented. The series figures (metrics.series) are
the share of the scored clips with any invented word and the invented words per minute of the clips
heard, pooled.

The TTS mirror: an empty or whitespace-only prompt (`tts-empty`, condition EMPTY_PROMPT) should make no
sound. A row stores the milliseconds of audible audio the model sent for it (the onset detector's
audible frames, metrics.onset), 0 when it sent none or refused the prompt with a clean error (the
vendor answered with a refusal: a fine answer to an empty request, not a failure).
"""

from __future__ import annotations

import numpy as np

from voxwatch.metrics.onset import OnsetParams, detect_onset, windowed_rms
from voxwatch.metrics.wer import word_errors

NONSPEECH = "nonspeech"
"""The condition of an STT dataset whose clips hold no speech: its rows are scored for invented words,
never for WER or latency."""
EMPTY_PROMPT = "empty-prompt"
"""The condition of a TTS dataset whose prompts are empty or whitespace: its rows are scored for the
audible audio sent, never for TTFA or WER."""


def invented_words(hypothesis: str | None, language: str | None) -> int:
    """The words (the language's unit: characters where it is scored by them) a transcript of a clip
    without speech holds, after the WER normalizer: WER's insertions against an empty reference."""
    return word_errors("", hypothesis or "", language).insertions


def audible_ms(samples: np.ndarray, sample_rate: int, params: OnsetParams = OnsetParams()) -> float:
    """How much of some audio is audible, in ms: 0.0 unless it has an audible onset (metrics.onset: a
    sustained run of audible windows); else the 1 ms hops whose 10 ms window is audible (the
    detector's windows, above -40 dBFS), so a 300 ms tone reads about 300 ms."""
    x = np.asarray(samples, dtype=np.float64)
    if not x.size or not sample_rate or detect_onset(x, sample_rate, params) is None:
        return 0.0
    hop = max(1, round(params.hop_s * sample_rate))
    audible = windowed_rms(x, hop * params.window_hops, hop) > params.threshold_rms
    return float(np.count_nonzero(audible) * hop / sample_rate * 1000)
