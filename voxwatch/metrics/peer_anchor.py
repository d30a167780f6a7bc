"""The peers' end-of-speech anchor (METHOD "The peers' anchor"): where Coval, Pipecat's
stt-benchmark and Artificial Analysis put the end of a caller's speech, so that a TTFS measured
by voxwatch can be read on their scale as well as on its own.

They run Silero VAD over the clip and take the end of its last speech segment, padded: Coval's
runner (coval-ai/benchmarks, runner/scripts/precompute_vad_offsets.py) calls silero-vad's
get_speech_timestamps with a 300 ms minimum silence and a 100 ms speech pad, at silero-vad's
other defaults (threshold 0.5, 250 ms minimum speech), and clamps the end to the clip. The same
Silero model (v6) ships inside the faster-whisper wheel voxwatch already depends on, with the
same segmenting rule; it is used here, not a second copy. The shared VAD (metrics.vad) stays the
anchor of every headline figure: this one is reported beside it.
"""

from __future__ import annotations

from importlib.metadata import version

import numpy as np

from voxwatch.foundation.audio import resample

SILERO_RATE = 16000
MIN_SILENCE_MS = 300
SPEECH_PAD_MS = 100
MIN_SPEECH_MS = 250
THRESHOLD = 0.5
PEER_ANCHOR = (f"silero-vad v6 (faster-whisper {version('faster-whisper')}), threshold {THRESHOLD}, "
               f"min speech {MIN_SPEECH_MS} ms, min silence {MIN_SILENCE_MS} ms, speech pad {SPEECH_PAD_MS} ms")
"""What a row's peer-anchored TTFS was anchored on (recorded with the method's version)."""


def peer_speech_end(pcm16: np.ndarray, sample_rate: int) -> float | None:
    """The end of the last Silero speech segment, padded by 100 ms and clamped to the audio, in
    seconds into it; None when Silero finds no speech."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    x = np.asarray(pcm16, dtype=np.float32) / 32768.0
    if sample_rate != SILERO_RATE:
        x = resample(x, sample_rate, SILERO_RATE).astype(np.float32)
    options = VadOptions(threshold=THRESHOLD, min_speech_duration_ms=MIN_SPEECH_MS,
                         min_silence_duration_ms=MIN_SILENCE_MS, speech_pad_ms=SPEECH_PAD_MS)
    found = get_speech_timestamps(x, options, sampling_rate=SILERO_RATE)
    if not found:
        return None
    return round(min(found[-1]["end"], x.size) / SILERO_RATE, 3)
