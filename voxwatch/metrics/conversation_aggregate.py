"""What the S2S board shows per model for conversations (per scenario and persona): every
conversation statistic, defined once (METHOD "Conversations").

The turns of one conversation share its history (a forgotten entity on turn 4 colours turn 9),
so they are not independent: every interval is clustered by conversation with the cluster
bootstrap of voxwatch/metrics/clustered.py (conversations resampled, never turns), and needs at least two
conversations. Floors and percentiles are the series' own (voxwatch/metrics/series.py).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from math import comb
from typing import Iterable, Mapping, Sequence

import numpy as np

from voxwatch.foundation.scenario import DIMENSIONS

from voxwatch.metrics import support
from voxwatch.metrics.clustered import design
from voxwatch.metrics.conversation import ConversationScore
from voxwatch.metrics.conversation_timing import silence_gap_latency
from voxwatch.metrics.series import MIN_N, mean_ci, percentile, present, quantile_ci, rate, rate_ci
from voxwatch.metrics.wer import WordErrors, pooled_wer


@dataclass(frozen=True)
class Rate:
    """A share of decided items: `passed` of `n` (None verdicts are not counted), its 95 %
    interval clustered by conversation (None with fewer than two conversations)."""

    rate: float | None
    passed: int
    n: int
    interval: tuple[float, float] | None


def clustered_rate(hits: Sequence[bool], conversations: Sequence[str]) -> Rate:
    """A rate over items (turn-dimensions, turns or conversations), each labelled with its
    conversation; the interval resamples conversations."""
    x = np.asarray(hits, dtype=np.float64)
    if x.size == 0:
        return Rate(None, 0, 0, None)
    d = design(conversation=list(conversations))
    return Rate(rate(int(x.sum()), int(x.size)), int(x.sum()), int(x.size), rate_ci(x, d))


def decided_items(turns: Iterable[tuple[str, Mapping[str, bool | None]]],
                  dimensions: Sequence[str] = DIMENSIONS) -> tuple[list[bool], list[str]]:
    """The items a pass rate counts: each decided (not None) verdict of `dimensions` on each turn,
    given as (its conversation, {dimension: passed}), labelled with its conversation. Instruction
    adherence is their share over every dimension (the board, and the alert on stored turn rows)."""
    hits, labels = [], []
    for conversation, verdicts in turns:
        for dim in dimensions:
            passed = verdicts.get(dim)
            if passed is not None:
                hits.append(bool(passed))
                labels.append(conversation)
    return hits, labels


TIMING_ONLY = "turn_taking"
"""The dimension decided from audio timing alone: adherence never passes on it alone."""


def adherence_items(turns: Iterable[tuple[str, Mapping[str, bool | None]]]) -> tuple[list[bool], list[str]]:
    """Instruction adherence's items (decided_items over every dimension), none at all when the only
    decided dimension is turn-taking: an agent whose words and calls decided nothing (a beep that answers
    in turn) has no adherence, never a pass on turn-taking alone."""
    turns = list(turns)
    if not decided_items(turns, [d for d in DIMENSIONS if d != TIMING_ONLY])[0]:
        return [], []
    return decided_items(turns)


def _verdicts(scores: Iterable[ConversationScore], dimensions: Sequence[str]) -> tuple[list[bool], list[str]]:
    return decided_items(((c.conversation_id, {d: v.passed for d, v in turn.verdicts.items()})
                          for c in scores for turn in c.turns), dimensions)


def instruction_adherence(scores: Sequence[ConversationScore]) -> Rate:
    """Coval's S2S headline: the share of in-scope turn-dimensions passed (null verdicts left out;
    `n` says how many were decided); none when turn-taking alone was decided (adherence_items)."""
    return clustered_rate(*adherence_items((c.conversation_id, {d: v.passed for d, v in turn.verdicts.items()})
                                           for c in scores for turn in c.turns))


def decided_dimensions(scores: Iterable[ConversationScore]) -> frozenset[str]:
    """The dimensions with at least one decided verdict over some conversations: what their adherence
    counts (dimension_rates' dimensions with n > 0, without the rates' intervals)."""
    return frozenset(d for c in scores for turn in c.turns for d, v in turn.verdicts.items()
                     if d in DIMENSIONS and v.passed is not None)


def dimension_rates(scores: Sequence[ConversationScore]) -> dict[str, Rate]:
    """Per dimension, the share of turns that passed it, over the turns where it was decided."""
    return {dim: clustered_rate(*_verdicts(scores, (dim,))) for dim in DIMENSIONS}


def end_state_rate(scores: Sequence[ConversationScore]) -> Rate:
    """The share of conversations whose backend ended in the expected state (tau2-bench)."""
    checked = [c for c in scores if c.end_state_ok is not None]
    return clustered_rate([bool(c.end_state_ok) for c in checked], [c.conversation_id for c in checked])


def pass_hat_k(runs: Mapping[str, Sequence[bool]], k: int) -> float | None:
    """tau2-bench's pass^k: per scenario with n runs and c successes, C(c, k) / C(n, k) (the chance
    that k runs drawn without replacement all succeeded), averaged over the scenarios with at least
    k runs; None when none has."""
    if k < 1:
        raise ValueError("k must be at least 1")
    per = [comb(sum(map(bool, r)), k) / comb(len(r), k) for r in runs.values() if len(r) >= k]
    return float(np.mean(per)) if per else None


def end_state_pass_hat_k(scores: Sequence[ConversationScore], k: int) -> float | None:
    """pass^k of end-state success over the repeats of each scenario."""
    runs: dict[str, list[bool]] = defaultdict(list)
    for c in scores:
        if c.end_state_ok is not None:
            runs[c.scenario].append(bool(c.end_state_ok))
    return pass_hat_k(runs, k)


def _fact(turn, fact: str):
    """A turn's fact by name: its own, or its behaviour's (barge_in_*, pause_ms, premature)."""
    return getattr(turn, fact) if hasattr(turn, fact) else getattr(turn.behaviour, fact)


def _turn_fact(scores: Sequence[ConversationScore], fact: str) -> Rate:
    hits, labels = [], []
    for c in scores:
        for turn in c.turns:
            v = _fact(turn, fact)
            if v is not None:
                hits.append(bool(v))
                labels.append(c.conversation_id)
    return clustered_rate(hits, labels)


def interruption_rate(scores: Sequence[ConversationScore]) -> Rate:
    """The share of measured turns where the model's audio overlapped the caller's words."""
    return _turn_fact(scores, "interrupted")


def no_response_rate(scores: Sequence[ConversationScore]) -> Rate:
    """The share of measured turns with no audible reply within the no-response timeout."""
    return _turn_fact(scores, "no_response")


@dataclass(frozen=True)
class Percentiles:
    n: int
    p50: float | None
    p95: float | None
    p50_ci: tuple[float, float] | None
    p95_ci: tuple[float, float] | None


def v2v_per_turn(scores: Sequence[ConversationScore]) -> Percentiles:
    """V2V p50 / p95 over the turns answered in turn (floors as for a series; Woodruff intervals
    clustered by conversation)."""
    return _turn_percentiles(scores, "v2v_ms")


def barge_in_stop(scores: Sequence[ConversationScore]) -> Percentiles:
    """Barge-in stop latency p50 / p95 over the turns the caller barged in on (as V2V's), to the
    agent's own stop (metrics/turn_taking.py agent_stop)."""
    return _turn_percentiles(scores, "barge_in_stop_ms")


def barge_in_stop_heard(scores: Sequence[ConversationScore]) -> Percentiles:
    """... and to the end of the agent's talk on the recording (what the caller heard), beside it."""
    return _turn_percentiles(scores, "barge_in_stop_heard_ms")


def barge_in_answered_rate(scores: Sequence[ConversationScore]) -> Rate:
    """The share of barge-in turns the agent then answered (an audible reply after the caller's turn)."""
    return _turn_fact(scores, "barge_in_answered")


def premature_rate(scores: Sequence[ConversationScore]) -> Rate:
    """The share of turns with a mid-turn pause in which the agent started speaking inside the pause.
    A block is one persona, so one pause length: read beside the block's V2V, the pause lengths'
    blocks are the agent's end-of-turn trade-off."""
    return _turn_fact(scores, "premature")


def pause_lengths(scores: Sequence[ConversationScore]) -> tuple[float, ...]:
    """The mid-turn pause lengths (ms) the block's callers made."""
    return tuple(sorted({t.behaviour.pause_ms for c in scores for t in c.turns if t.behaviour.pause_ms is not None}))


def _turn_percentiles(scores: Sequence[ConversationScore], fact: str) -> Percentiles:
    values, labels = [], []
    for c in scores:
        for turn in c.turns:
            if (v := _fact(turn, fact)) is not None:
                values.append(v)
                labels.append(c.conversation_id)
    x = present(values)
    d = design(conversation=labels)
    return Percentiles(int(x.size), percentile(x, 50), percentile(x, 95), quantile_ci(x, 50, d), quantile_ci(x, 95, d))


@dataclass(frozen=True)
class Quality:
    """A block's speech quality: the mean MOS of its scored turns (None under MIN_N), how many, its 95 %
    interval clustered by conversation, and the instrument(s) that scored them (one per method version)."""

    mos: float | None
    n: int
    interval: tuple[float, float] | None
    instruments: tuple[str, ...]


def speech_quality(scores: Sequence[ConversationScore]) -> Quality:
    """The speech quality of the replies of a set of conversations (METHOD "Speech quality"): every
    scored turn pooled, as a series pools its rows, with the clustered interval of a mean (conversations
    resampled, never turns: one conversation's replies share a voice and a session), truncated at 1 and 5."""
    values, labels, instruments = [], [], set()
    for c in scores:
        for turn in c.turns:
            if turn.quality_mos is not None:
                values.append(turn.quality_mos)
                labels.append(c.conversation_id)
                instruments.add(turn.quality_instrument or "")
    x = np.asarray(values, dtype=np.float64)
    return Quality(float(x.mean()) if x.size >= MIN_N else None, int(x.size),
                   mean_ci(x, design(conversation=labels), support.MOS) if x.size else None,
                   tuple(sorted(instruments)))


@dataclass(frozen=True)
class Transcription:
    """The reply transcriber's word error rate on the agent's voice (METHOD "Conversations"): its errors
    over the scripted replies' words, pooled over the turns where it was measured (a scripted agent's
    replies heard as speech and said whole); None when none was. `words`: the reference words counted."""

    wer: float | None
    turns: int
    words: int
    instruments: tuple[str, ...]


def transcription_wer(scores: Sequence[ConversationScore]) -> Transcription:
    """The transcription WER of a set of conversations: sum of errors over sum of reference words, as
    every WER is pooled (metrics/wer.py pooled_wer), over the turns that measured it."""
    parts, instruments = [], set()
    for c in scores:
        for turn in c.turns:
            if turn.transcript_ref_words is not None and turn.transcript_errors is not None:
                # a turn stores its errors' total, not their kinds: counted as substitutions, pooled as every WER is
                parts.append(WordErrors(turn.transcript_errors, 0, 0, turn.transcript_ref_words))
                instruments.add(turn.transcript_instrument or "")
    return Transcription(pooled_wer(parts), len(parts), sum(p.ref_words for p in parts), tuple(sorted(instruments)))


def conversation_silence_gap(score: ConversationScore) -> float | None:
    """One conversation's silence-gap latency (Coval), in seconds."""
    return silence_gap_latency(t.gap_s for t in score.turns)


def silence_gap(scores: Sequence[ConversationScore]) -> float | None:
    """Silence-gap latency over a set of conversations: the mean of all their gaps >= 0.5 s
    (pooled over gaps, as Coval's is over a call's gaps)."""
    return silence_gap_latency(t.gap_s for c in scores for t in c.turns)


@dataclass(frozen=True)
class Scorecard:
    """Everything the S2S board's conversation block shows for one model on one scenario set and persona."""

    conversations: int
    adherence: Rate
    dimensions: dict[str, Rate]
    end_state: Rate
    pass_hat_k: dict[int, float | None]
    interruption: Rate
    no_response: Rate
    v2v: Percentiles
    silence_gap_s: float | None
    barge_in_stop: Percentiles  # caller behaviours (metrics/turn_taking.py): n 0 when none behaved so
    barge_in_answered: Rate
    premature: Rate
    pause_ms: tuple[float, ...]
    speech_quality: Quality
    transcription: Transcription  # the reply transcriber's WER on a scripted agent's voice (turns 0: not measured)
    barge_in_stop_heard: Percentiles  # the barge-in stop on the recording, beside the agent's own


def scorecard(scores: Sequence[ConversationScore], ks: Sequence[int] = (1, 2, 4)) -> Scorecard:
    """The board's statistics for a set of conversations (one model, one persona; never pooled)."""
    return Scorecard(len(scores), instruction_adherence(scores), dimension_rates(scores), end_state_rate(scores),
                        {k: end_state_pass_hat_k(scores, k) for k in ks}, interruption_rate(scores),
                        no_response_rate(scores), v2v_per_turn(scores), silence_gap(scores), barge_in_stop(scores),
                        barge_in_answered_rate(scores), premature_rate(scores), pause_lengths(scores),
                        speech_quality(scores), transcription_wer(scores), barge_in_stop_heard(scores))
