"""WER at the agent's deadline (METHOD "WER at the deadline"): the streaming transcript as it stood
D ms after the end of speech, scored as the final is.

Why: a voice agent does not wait for the final transcript forever; it acts at a deadline after the
caller stops. A model that finalises late may have a good final and a poor transcript at the moment
the agent acts. The end of speech is TTFS's anchor: the shared VAD's end, at the write of the chunk
that carried it (metrics.as_sent). The transcript at a time is the finals received by then, joined,
plus the latest partial received after the last of them: a partial is the current segment's interim
text. An adapter whose partials hold the whole transcript so far (finals included, as Soniox's)
says so (`partial_scope = TRANSCRIPT`); its latest partial after the last final then stands alone.
"""

from __future__ import annotations

from typing import Sequence

from voxwatch.foundation.events import CHUNK_SENT, FINAL, PARTIAL, Event, Timeline
from voxwatch.foundation.text import safe_text
from voxwatch.metrics.as_sent import sent_at_ns
from voxwatch.metrics.wer import WordErrors, word_errors

DEADLINES_MS = (0, 250, 500, 1000)
"""The deadlines after the end of speech (ms) at which the transcript is scored (Cekura's bench's)."""
SEGMENT, TRANSCRIPT = "segment", "transcript"
"""What an adapter's PARTIAL text holds: the current segment's interim text (the default), or the
whole transcript so far, finals included."""
PARTIAL_SCOPES = (SEGMENT, TRANSCRIPT)


def errors_field(deadline_ms: int) -> str:
    """The Observation field holding a row's S + D + I at a deadline."""
    return f"errors_at_{deadline_ms}ms"


def wer_field(deadline_ms: int) -> str:
    """The MetricRow field holding a series' pooled WER at a deadline (its interval: `<field>_ci`)."""
    return f"wer_at_{deadline_ms}ms"


ERRORS_FIELDS = tuple(errors_field(d) for d in DEADLINES_MS)
WER_FIELDS = tuple(wer_field(d) for d in DEADLINES_MS)


def transcript_at(events: Sequence[Event], at_ns: float, partial_scope: str = SEGMENT) -> str:
    """The transcript as it stood at `at_ns`: the worded finals received by then, joined, then the
    latest partial received after the last final (ties in time go to the final); under TRANSCRIPT
    scope that partial, when there is one, is the whole transcript. Events are taken in time order
    (an adapter may stamp a final with an earlier arrival than a partial it marked before it)."""
    if partial_scope not in PARTIAL_SCOPES:
        raise ValueError(f"partial scope {partial_scope!r} is not one of {PARTIAL_SCOPES}")
    arrived = sorted((e for e in events if e.kind in (PARTIAL, FINAL) and e.t_ns <= at_ns),
                     key=lambda e: (e.t_ns, e.kind == FINAL))
    finals = [e for e in arrived if e.kind == FINAL]
    after = finals[-1].t_ns if finals else float("-inf")
    partials = [e for e in arrived if e.kind == PARTIAL and e.t_ns > after]
    latest = (partials[-1].text or "").strip() if partials else ""
    if partial_scope == TRANSCRIPT and partials:
        return latest
    words = [(e.text or "").strip() for e in finals] + [latest]
    return " ".join(w for w in words if w)


def speech_end_ns(timeline: Timeline, speech_end: float, sample_rate: int) -> float:
    """TTFS's anchor: the end of speech (seconds into the audio as generated) at the write of its chunk."""
    return sent_at_ns(timeline.of(CHUNK_SENT), speech_end * sample_rate, sample_rate)


def transcripts_at_deadlines(timeline: Timeline, speech_end: float, *, sample_rate: int,
                             partial_scope: str = SEGMENT,
                             deadlines_ms: Sequence[int] = DEADLINES_MS) -> dict[int, str]:
    """The transcript at each deadline (ms after the end of speech), made safe as a stored hypothesis is."""
    end = speech_end_ns(timeline, speech_end, sample_rate)
    return {d: safe_text(transcript_at(timeline.events, end + d * 1_000_000, partial_scope)) for d in deadlines_ms}


def errors_at_deadlines(timeline: Timeline, speech_end: float, reference: str, language: str | None, *,
                        sample_rate: int, partial_scope: str = SEGMENT,
                        deadlines_ms: Sequence[int] = DEADLINES_MS) -> dict[int, WordErrors]:
    """S, D, I and N of the transcript at each deadline against the clip's reference, with the final's
    scorer and normalizer (metrics.wer.word_errors): pooled WER at D is sum(S + D + I at D) / sum(N)."""
    texts = transcripts_at_deadlines(timeline, speech_end, sample_rate=sample_rate, partial_scope=partial_scope,
                                     deadlines_ms=deadlines_ms)
    return {d: word_errors(reference, text, language) for d, text in texts.items()}
