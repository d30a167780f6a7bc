"""TTS fed like an agent feeds it (METHOD "TTS: streamed text and cancel"): the prompt sent in
token-sized pieces at an LLM's pace, TTFA read from the first and the last piece's write, and the
cancel latency of the reply once it is audible.

Pure functions: the schedule is a function of the text and a seed (so every adapter, the emulators'
tests and the benchmark send the same pieces at the same offsets); the measures read a timeline
with the playout model and onset detector of TTFA (metrics.timeline).
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass

from voxwatch.foundation.events import AUDIO, CANCEL_ACK, CANCEL_SENT, TEXT_SENT, Timeline
from voxwatch.metrics.onset import detect_onset
from voxwatch.metrics.timeline import NS_PER_MS, AudioStream, collect_audio, heard_at_ns

PIECE_EVERY_MS = 40.0
"""The stated LLM pace: one piece (a word with its following space) every 40 ms on average."""
PIECE_JITTER_MS = 10.0
"""Each gap is PIECE_EVERY_MS plus a seeded uniform draw in [-PIECE_JITTER_MS, +PIECE_JITTER_MS]."""


@dataclass(frozen=True)
class Piece:
    text: str  # the piece as sent: pieces concatenated verbatim give back the prompt
    at_ms: float  # when it is due, ms after the first piece's write


def text_schedule(text: str, seed: int, every_ms: float = PIECE_EVERY_MS,
                  jitter_ms: float = PIECE_JITTER_MS) -> list[Piece]:
    """The prompt in word-sized pieces (each word with the spaces after it, as an LLM's tokens carry
    them) and when each is due: the first at 0, each next `every_ms` +- a seeded `jitter_ms` later."""
    if not text.strip():
        raise ValueError("streamed text needs a non-empty prompt")
    if jitter_ms < 0 or every_ms - jitter_ms < 0:
        raise ValueError(f"a piece gap of {every_ms} +- {jitter_ms} ms can go negative")
    words = re.findall(r"\s*\S+\s*", text)
    draw = random.Random(seed)
    pieces, at = [], 0.0
    for i, word in enumerate(words):
        if i:
            at += every_ms + draw.uniform(-jitter_ms, jitter_ms)
        pieces.append(Piece(word, at))
    return pieces


@dataclass(frozen=True)
class StreamedTextTTFA:
    ttfa_first_text_ms: float  # first audible sample heard, from the first piece's write
    ttfa_last_text_ms: float  # from the last piece's write; negative when speech began before it


def streamed_text_ttfa(timeline: Timeline, stream: AudioStream, onset: int) -> StreamedTextTTFA:
    """When the first audible sample (`onset`, TTFA's detector) is heard under TTFA's playout model,
    from the first and from the last streamed-text write (TEXT_SENT)."""
    writes = timeline.of(TEXT_SENT)
    if not writes:
        raise ValueError("no streamed text was written")
    heard = heard_at_ns(stream, onset)
    return StreamedTextTTFA((heard - writes[0].t_ns) / NS_PER_MS, (heard - writes[-1].t_ns) / NS_PER_MS)


@dataclass(frozen=True)
class CancelLatency:
    cancel_ms: float | None  # None: no audio after the cancel and no acknowledgement came
    cancel_end: str  # "audio": to the last audio after the cancel; "ack": to the vendor's acknowledgement; "none"


def cancel_latency(timeline: Timeline) -> CancelLatency | None:
    """From the cancel's write (CANCEL_SENT) to the last audio received after it; with no audio after
    it, to the vendor's acknowledgement (CANCEL_ACK) if one came, else none. None: no cancel was sent."""
    cancel = timeline.first(CANCEL_SENT)
    if cancel is None:
        return None
    after = [e.t_ns for e in timeline.of(AUDIO) if e.t_ns > cancel.t_ns]
    if after:
        return CancelLatency((max(after) - cancel.t_ns) / NS_PER_MS, "audio")
    ack = timeline.first(CANCEL_ACK)
    if ack is not None and ack.t_ns >= cancel.t_ns:
        return CancelLatency((ack.t_ns - cancel.t_ns) / NS_PER_MS, "ack")
    return CancelLatency(None, "none")


STREAMED_TEXT_CONDITION = "streamed-text"
"""The dataset condition whose prompts are fed as streamed text and whose replies are cancelled once
audible: its rows are their own series (a dataset is part of the series key), never whole-text TTFA's."""


def schedule_seed(item_id: str) -> int:
    """The seed of a prompt's piece schedule: its id's CRC-32, so every run feeds a prompt alike."""
    return zlib.crc32(item_id.encode("utf-8"))


def reply_audible(timeline: Timeline) -> bool:
    """Does the audio received so far hold an audible onset (TTFA's detector, which needs 50 ms of
    sustained sound, so the chunk holding the onset is in when this first says so)?"""
    stream = collect_audio(timeline.events)
    return stream.samples.size > 0 and detect_onset(stream.samples, stream.sample_rate) is not None
