"""eSpeak NG through the library inside the espeakng-loader wheel (ctypes, retrieval mode).

The library is process-global, so one synthesis runs at a time; each chunk is handed to the
caller as eSpeak produces it, which is what makes eSpeak NG a streaming TTS.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Callable

import espeakng_loader
import numpy as np

from voxwatch.providers.local.one_per_process import OnePerProcess

AUDIO_OUTPUT_RETRIEVAL = 1
ESPEAK_RATE = 1
POS_CHARACTER = 1
ESPEAK_CHARS_UTF8 = 1
BUFFER_MS = 100

_SynthCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


class EspeakError(RuntimeError):
    pass


class EspeakEngine(OnePerProcess):
    """Process-wide eSpeak NG handle; use `EspeakEngine.get()`."""

    def __init__(self) -> None:
        lib = ctypes.CDLL(espeakng_loader.get_library_path())
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
                                     ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Info.argtypes = [ctypes.c_void_p]
        lib.espeak_Info.restype = ctypes.c_char_p
        rate = lib.espeak_Initialize(AUDIO_OUTPUT_RETRIEVAL, BUFFER_MS, espeakng_loader.get_data_path().encode(), 0)
        if rate <= 0:
            raise EspeakError(f"espeak_Initialize failed ({rate})")
        self.sample_rate: int = rate
        self.version: str = lib.espeak_Info(None).decode()
        self._lib = lib
        self._lock = threading.Lock()
        self._on_chunk: Callable[[np.ndarray], None] | None = None
        self._callback = _SynthCallback(self._receive)  # kept referenced for the library's lifetime
        lib.espeak_SetSynthCallback(self._callback)

    def _receive(self, wav, n: int, events) -> int:
        if n > 0 and self._on_chunk is not None:
            self._on_chunk(np.ctypeslib.as_array(wav, shape=(n,)).copy())
        return 0

    def has_voice(self, voice: str) -> bool:
        """Whether eSpeak NG has a voice of that name (setting it is the library's only check)."""
        with self._lock:
            return self._lib.espeak_SetVoiceByName(voice.encode()) == 0

    def synthesize(self, text: str, voice: str, on_chunk: Callable[[np.ndarray], None],
                   rate_wpm: int | None = None, before_request: Callable[[], None] | None = None) -> None:
        """Synthesize text, calling on_chunk(int16 samples) for each chunk; blocks until done."""
        with self._lock:
            if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise EspeakError(f"unknown eSpeak NG voice {voice!r}")
            if rate_wpm is not None:
                self._lib.espeak_SetParameter(ESPEAK_RATE, int(rate_wpm), 0)
            data = text.encode("utf-8")
            self._on_chunk = on_chunk
            try:
                if before_request is not None:
                    before_request()
                status = self._lib.espeak_Synth(data, len(data) + 1, 0, POS_CHARACTER, 0, ESPEAK_CHARS_UTF8, None, None)
                if status != 0:
                    raise EspeakError(f"espeak_Synth failed ({status})")
                self._lib.espeak_Synchronize()
            finally:
                self._on_chunk = None

    def render(self, text: str, voice: str, rate_wpm: int | None = None) -> np.ndarray:
        """The whole utterance as int16 samples at `sample_rate` (for building datasets)."""
        parts: list[np.ndarray] = []
        self.synthesize(text, voice, parts.append, rate_wpm)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int16)
