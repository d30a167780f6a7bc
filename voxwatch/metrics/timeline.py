"""Timeline to metrics (METHOD "TTS: time to first audio", "STT clocks").

Pure functions: a list of events (and, for audio, the samples) in, numbers out. Nothing of
connection set-up is inside these clocks; `connect_ms` is measured separately by the harness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from voxwatch.foundation.events import (AUDIO, CHUNK_SENT, CONNECT_START, CONNECTED, FINAL, PARTIAL, REQUEST_SENT,
                                        RESPONSE, Event, Timeline)

from voxwatch.metrics.as_sent import sent_at_ns
from voxwatch.metrics.onset import detect_onset

NS_PER_MS = 1_000_000


def _ms(ns: float) -> float:
    return ns / NS_PER_MS


def connect_ms(timeline: Timeline) -> float | None:
    """Connection and session set-up: from CONNECT_START to CONNECTED, outside every other clock."""
    start, done = timeline.first(CONNECT_START), timeline.first(CONNECTED)
    return _ms(done.t_ns - start.t_ns) if start and done else None


def pacing_error_ms(timeline: Timeline) -> float | None:
    """The latest any chunk was written after its real-time deadline (0 when all were on time)."""
    late = [e.t_ns - e.deadline_ns for e in timeline.of(CHUNK_SENT) if e.deadline_ns is not None]
    return _ms(max(0, max(late))) if late else None


@dataclass(frozen=True)
class STTStreamMetrics:
    first_partial_ms: float | None  # from the speech start's write
    first_partial_from_t0_ms: float | None
    ttfs_ms: float | None  # from the speech end's write; negative values are kept
    hypothesis: str
    ttfs_peer_ms: float | None = None  # from the peers' speech end's write (metrics.peer_anchor), when given


def stt_stream_metrics(timeline: Timeline, speech_start: float, speech_end: float,
                       peer_speech_end: float | None = None, *, sample_rate: int) -> STTStreamMetrics:
    """First partial and TTFS, anchored on the shared VAD (and TTFS on the peers' anchor too, when
    its end of speech is given): each anchor (seconds into the audio as generated, at `sample_rate`)
    at the write of the chunk that carried it (metrics.as_sent), so a chunk written late moves the
    anchor with it and never the vendor's latency; t0 is the first chunk written."""
    chunks = timeline.of(CHUNK_SENT)
    if not chunks:
        raise ValueError("no audio chunk was sent")
    t0 = chunks[0].t_ns

    def sent(seconds: float) -> float:
        return sent_at_ns(chunks, seconds * sample_rate, sample_rate)

    transcript_events = [e for e in timeline.events if e.kind in (PARTIAL, FINAL) and (e.text or "").strip()]
    finals = timeline.of(FINAL)
    first = transcript_events[0] if transcript_events else None
    worded = [e for e in finals if (e.text or "").strip()]
    last_final = (worded or finals)[-1] if finals else None  # an empty flush after the last words is not the final
    return STTStreamMetrics(
        first_partial_ms=_ms(first.t_ns - sent(speech_start)) if first else None,
        first_partial_from_t0_ms=_ms(first.t_ns - t0) if first else None,
        ttfs_ms=_ms(last_final.t_ns - sent(speech_end)) if last_final else None,
        hypothesis=" ".join((e.text or "").strip() for e in finals if (e.text or "").strip()),
        ttfs_peer_ms=_ms(last_final.t_ns - sent(peer_speech_end)) if last_final and peer_speech_end is not None
        else None,
    )


@dataclass(frozen=True)
class BatchMetrics:
    latency_ms: float
    rtf: float
    hypothesis: str


def batch_metrics(timeline: Timeline, audio_seconds: float) -> BatchMetrics:
    """Request-to-response time and real-time factor of a batch transcription."""
    sent, got = timeline.first(REQUEST_SENT), timeline.first(RESPONSE)
    if sent is None or got is None:
        raise ValueError("batch timeline needs a request and a response")
    latency = _ms(got.t_ns - sent.t_ns)
    text = " ".join((e.text or "").strip() for e in timeline.of(FINAL)).strip()
    return BatchMetrics(latency_ms=latency, rtf=latency / 1000 / audio_seconds if audio_seconds else 0.0, hypothesis=text)


@dataclass(frozen=True)
class AudioStream:
    samples: np.ndarray  # float in [-1, 1]
    sample_rate: int
    chunk_arrivals_ns: np.ndarray
    chunk_offsets: np.ndarray


def collect_audio(events: list[Event]) -> AudioStream:
    """Concatenate AUDIO events in stream order into one float signal with chunk arrival times."""
    chunks = sorted((e for e in events if e.kind == AUDIO and e.n_samples), key=lambda e: e.sample_offset or 0)
    if not chunks:
        return AudioStream(np.zeros(0), 0, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    rates = {e.sample_rate for e in chunks}
    if len(rates) != 1:
        raise ValueError(f"audio chunks disagree on sample rate: {sorted(rates)}")
    pcm = np.frombuffer(b"".join(e.audio or b"" for e in chunks), dtype="<i2")
    return AudioStream(
        samples=pcm.astype(np.float64) / 32768.0,
        sample_rate=rates.pop(),
        chunk_arrivals_ns=np.array([e.t_ns for e in chunks], dtype=np.int64),
        chunk_offsets=np.array([e.sample_offset for e in chunks], dtype=np.int64),
    )


def playout_starts_ns(stream: AudioStream, queued_until_ns: float | None = None) -> np.ndarray:
    """Playout model: when sample 0 would have been heard, as of each chunk (chunks in stream order).

    Playback starts with the first chunk and stalls when data is late, so sample s is heard at
    max over chunks i with s_i <= s of (a_i - s_i/sr), plus s/sr. `queued_until_ns`: when audio
    queued on the same line before this stream (a call's earlier turns) has played out; the
    stream's first sample plays no earlier (a reply streamed ahead of real time and talked over
    goes on playing from the queue on the next turn).
    """
    starts = stream.chunk_arrivals_ns - stream.chunk_offsets * 1e9 / stream.sample_rate
    if queued_until_ns is not None:
        starts = np.maximum(starts, queued_until_ns)
    return np.maximum.accumulate(starts)


def heard_at_ns(stream: AudioStream, sample: int, queued_until_ns: float | None = None) -> float:
    """When sample `sample` of the stream is heard under the playout model."""
    chunk = int(np.searchsorted(stream.chunk_offsets, sample, side="right")) - 1
    return float(playout_starts_ns(stream, queued_until_ns)[chunk] + sample * 1e9 / stream.sample_rate)


@dataclass(frozen=True)
class TTSMetrics:
    ttfb_ms: float
    ttfa_ms: float | None  # None when the audio has no audible onset
    leading_silence_ms: float | None
    synthesis_ms: float
    audio_duration_s: float
    stream: AudioStream  # the audio as received, for the inaudible report and the instrument
    onset: int | None = None  # the first audible sample (metrics.stalls counts from it)


def tts_metrics(timeline: Timeline) -> TTSMetrics:
    """TTFA with its components; a late audible chunk counts even when silence arrived early."""
    sent = timeline.first(REQUEST_SENT)
    if sent is None:
        raise ValueError("TTS timeline has no request")
    stream = collect_audio(timeline.events)
    if stream.samples.size == 0:
        raise ValueError("TTS stream carried no audio")
    t0 = sent.t_ns
    onset = detect_onset(stream.samples, stream.sample_rate)
    return TTSMetrics(
        ttfb_ms=_ms(int(stream.chunk_arrivals_ns.min()) - t0),
        ttfa_ms=_ms(heard_at_ns(stream, onset) - t0) if onset is not None else None,
        leading_silence_ms=onset * 1000 / stream.sample_rate if onset is not None else None,
        synthesis_ms=_ms(int(stream.chunk_arrivals_ns.max()) - t0),
        audio_duration_s=stream.samples.size / stream.sample_rate,
        stream=stream,
        onset=onset,
    )
