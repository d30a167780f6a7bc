"""DNSMOS P.835 OVRL: the fixed speech quality instrument of TTS audio and S2S replies (METHOD "Speech quality").

The weights are the ONNX model `dnsmos_models/sig_bak_ovr.onnx` inside the speechmos 0.0.1.1 wheel
(MIT, Microsoft; Reddy, Gopal and Cutler, ICASSP 2022). speechmos' own module imports librosa and
requests, so it is never imported: the file is found through the installed distribution, its sha256
checked before it is loaded (a swapped file cannot change scores), and run on onnxruntime. This model
takes raw 16 kHz samples, so no features are computed here. Its three raw outputs (SIG, BAK, OVRL) are
mapped to the P.835 scale by the published third-order fit; OVRL is what a row keeps.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from importlib.metadata import distribution
from pathlib import Path

import numpy as np

from voxwatch.foundation.integrity import ModelIntegrityError, verified
from voxwatch.providers.local.one_per_process import OnePerProcess

MODEL_FILE = "speechmos/dnsmos_models/sig_bak_ovr.onnx"
MODEL_SHA256 = "269fbebdb513aa23cddfbb593542ecc540284a91849ac50516870e1ac78f6edd"
INSTRUMENT_ID = f"dnsmos-p835@{MODEL_SHA256[:12]}"
"""What a row's quality_instrument says: the model and its weights' digest (a new file is a new instrument)."""
SAMPLE_RATE = 16000
WINDOW_SAMPLES = int(9.01 * SAMPLE_RATE)  # the model's fixed input: 144,160 samples
HOP_SAMPLES = SAMPLE_RATE  # windows start a second apart, as DNSMOS scores a long clip
OVRL_FIT = (-0.06766283, 1.11546468, 0.04602535)  # raw OVRL -> P.835 OVRL (speechmos' non-personalized fit)
SCORES_KEPT = 256
"""Scores a process keeps by the audio's digest: the model is a pure function of its input, and identical
audio comes back often where a voice is deterministic (an emulator's eSpeak NG, a local engine on the
same prompt): each padded window costs about 1.5 CPU-s on a busy worker."""

__all__ = ["DnsmosQuality", "INSTRUMENT_ID", "ModelIntegrityError"]


def model_path() -> Path:
    """Where the installed speechmos wheel put the P.835 model."""
    return Path(distribution("speechmos").locate_file(MODEL_FILE))


def windows(audio16k: np.ndarray) -> np.ndarray:
    """The model's inputs for a clip: the clip repeated up to one window if shorter, then every
    window starting a whole second apart that fits (N x 144,160 float32)."""
    audio = np.clip(np.asarray(audio16k, dtype=np.float32).ravel(), -1.0, 1.0)
    if audio.size == 0 or not np.isfinite(audio).all():
        raise ValueError("no audio to score (empty or not finite)")
    if audio.size < WINDOW_SAMPLES:
        audio = np.tile(audio, -(-WINDOW_SAMPLES // audio.size))
    starts = range(0, audio.size - WINDOW_SAMPLES + 1, HOP_SAMPLES)
    return np.stack([audio[s:s + WINDOW_SAMPLES] for s in starts])


class DnsmosQuality(OnePerProcess):
    """One loaded model per process (`get()`); `score` is safe from several threads."""

    def __init__(self, path: Path | None = None, expected_sha256: str = MODEL_SHA256, threads: int = 1) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = threads  # a measuring worker keeps its other core
        self._session = onnxruntime.InferenceSession(str(verified(path or model_path(), expected_sha256)), options,
                                                     providers=["CPUExecutionProvider"])
        self._input = self._session.get_inputs()[0].name
        self._scored: OrderedDict[bytes, float] = OrderedDict()  # digest of the input -> its score (SCORES_KEPT)
        self._lock = threading.Lock()

    def score(self, audio16k: np.ndarray) -> float:
        """The P.835 OVRL MOS (about 1 to 5, higher is better) of float mono 16 kHz audio in [-1, 1]:
        the mean over its windows (the same audio's score once computed: SCORES_KEPT)."""
        digest = hashlib.blake2b(np.asarray(audio16k, dtype=np.float32).tobytes(), digest_size=16).digest()
        with self._lock:
            if digest in self._scored:  # only audio that was scored is kept: an empty clip never is
                self._scored.move_to_end(digest)
                return self._scored[digest]
        raw = np.concatenate([self._session.run(None, {self._input: w[np.newaxis]})[0] for w in windows(audio16k)])
        value = float(np.polyval(OVRL_FIT, raw[:, 2].astype(np.float64)).mean())
        with self._lock:
            self._scored[digest] = value
            while len(self._scored) > SCORES_KEPT:
                self._scored.popitem(last=False)
        return value
