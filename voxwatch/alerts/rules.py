"""The regression rules (docs/ALERTS.md "Rules"): the recent window against the baseline before it.

An alert condition is both significant (a one-sided test at `p_value`: the recent window is worse,
not merely different) and material (a shift big enough to matter to a user), on enough recent
samples to judge. Rows are never the unit (voxwatch/metrics/compare.py): latency compares ticks (runs),
WER compares each utterance (clip) with itself, and a rate's variance is clustered by utterance and
tick. A conversation's turns share its history, so the conversation rules take the conversation
as the unit: instruction adherence's variance is clustered by conversation, and conversation V2V
compares each conversation's median. Pure functions over arrays, so the rules are testable, and
benchmarked, without a store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from voxwatch.config import Alerts
from voxwatch.metrics.clustered import Design, design
from voxwatch.metrics.compare import paired_ratio_shift, rate_shift, tick_median_shift


@dataclass(frozen=True)
class Scored:
    """One window's scored rows (WER): each row's utterance, tick, S + D + I and reference words."""
    utterances: np.ndarray
    ticks: np.ndarray
    errors: np.ndarray
    words: np.ndarray


@dataclass(frozen=True)
class Finding:
    """One rule's verdict at one evaluation, with the numbers behind it."""
    holds: bool | None  # None: too few recent samples to judge either way
    recent: float | None  # median of the recent ticks' medians (ms) / pooled WER of paired rows / rate
    baseline: float | None  # the same over the baseline window (WER: the same rows at their utterances' baseline WER)
    p_value: float | None
    n_recent: int
    n_baseline: int
    why: str  # what decided it, in words
    decisive: bool | None = None  # a sequential rule: strong enough to fire once pending (None: any holding)
    observed_at: float | None = None  # a sequential rule: when its newest observation (run) started


def _too_few(n_recent: int, n_baseline: int, rules: Alerts, what: str, least: tuple[int, int] | None = None
             ) -> Finding | None:
    """Not enough to judge (None), or no baseline to judge against (clear), or None when both suffice.
    `least`: the (recent, baseline) minimums, min_recent and min_baseline unless given."""
    min_recent, min_baseline = least or (rules.min_recent, rules.min_baseline)
    if n_recent < min_recent:
        return Finding(None, None, None, None, n_recent, n_baseline,
                       f"{n_recent} recent {what} (fewer than {min_recent}): not judged")
    if n_baseline < min_baseline:
        return Finding(False, None, None, None, n_recent, n_baseline,
                       f"no baseline yet ({n_baseline} {what} of this method version, fewer than {min_baseline})")
    return None


def latency_shift(recent: Sequence[float], recent_ticks: Sequence[Hashable], baseline: Sequence[float],
                  baseline_ticks: Sequence[Hashable], rules: Alerts) -> Finding:
    """Tick against tick: each tick's median, then the median of the recent ticks' medians against the
    baseline's. Significant: one-sided Mann-Whitney U over ticks, p < p_value. Material: up by
    latency_increase_pct AND by latency_increase_ms (a 10 % drift on a 40 ms clock is not a
    regression a user feels). One slow tick among a window's dozen cannot move a median of ticks."""
    x, y = np.asarray(recent, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    early = _too_few(x.size, y.size, rules, "samples")
    if early is not None:
        return early
    return _median_of_medians(x, recent_ticks, y, baseline_ticks, rules, "tick", (x.size, y.size))


def _median_of_medians(x: np.ndarray, recent_units: Sequence[Hashable], y: np.ndarray,
                       baseline_units: Sequence[Hashable], rules: Alerts, unit: str, n: tuple[int, int]) -> Finding:
    """Each unit's (tick's, conversation's) median, the recent units' median against the baseline's:
    significant by a one-sided Mann-Whitney U over units, material by latency_increase_pct AND
    latency_increase_ms. `n` is what the finding reports as its sample counts."""
    s = tick_median_shift(x, recent_units, y, baseline_units)
    now, before, p = s.recent, s.baseline, s.p_value
    material = now >= before * (1 + rules.latency_increase_pct / 100) and now - before >= rules.latency_increase_ms
    significant = p < rules.p_value
    return Finding(material and significant, now, before, p, n[0], n[1],
                   f"median of {unit} medians {now:.0f} ms vs {before:.0f} ms ({now - before:+.0f} ms, "
                   f"{(now / before - 1) * 100 if before else float('inf'):+.0f} %; {s.units_recent} vs "
                   f"{s.units_baseline} {unit}s), one-sided Mann-Whitney over {unit}s p = {p:.2g}"
                   + ("" if material else f"; not material (needs +{rules.latency_increase_pct:g} % and "
                                          f"+{rules.latency_increase_ms:g} ms)")
                   + ("" if significant else f"; not significant (needs p < {rules.p_value:g})"))


def wer_shift(recent: Scored, baseline: Scored, rules: Alerts) -> Finding:
    """Paired by utterance (metrics.compare.paired_ratio_shift): the recent rows of utterances also
    measured in the baseline, their pooled WER against the same rows at each utterance's baseline
    WER, so the draw of utterances cancels out. Material: up by wer_increase_points. Significant: the
    difference over its multiway (utterance x tick) standard error, one-sided Student's t, p <
    wer_p_value, stricter than the other rules' p_value: on short clips +2 points is only ~2
    standard errors of a 6-hour window, so significance, not materiality, is what keeps the
    ~120 independent windows judged a month quiet. Needs min_recent paired rows over at least
    min_paired_utterances utterances."""
    s = paired_ratio_shift(recent.utterances, recent.errors, recent.words,
                           design(utterance=recent.utterances, tick=recent.ticks),
                           baseline.utterances, baseline.errors, baseline.words)
    paired = 0 if s is None else int(np.isin(recent.utterances, baseline.utterances).sum())
    early = _too_few(paired, len(baseline.errors), rules, "clips of utterances in both windows")
    if early is not None:
        return early
    if s is None or s.units_recent < rules.min_paired_utterances:
        return Finding(None, None, None, None, paired, len(baseline.errors),
                       f"{0 if s is None else s.units_recent} utterances in both windows (fewer than "
                       f"{rules.min_paired_utterances}): not judged")
    now, before, p = s.recent, s.baseline, s.p_value
    material = (now - before) * 100 >= rules.wer_increase_points
    significant = p < rules.wer_p_value
    return Finding(material and significant, now, before, p, paired, len(baseline.errors),
                   f"pooled WER {now * 100:.1f} % vs {before * 100:.1f} % on the same {s.units_recent} utterances "
                   f"({(now - before) * 100:+.1f} points), paired one-sided t p = {p:.2g}"
                   + ("" if material else f"; not material (needs +{rules.wer_increase_points:g} points)")
                   + ("" if significant else f"; not significant (needs p < {rules.wer_p_value:g})"))


def rate_spike(recent_hits: Sequence[bool], recent: Design, baseline_hits: Sequence[bool], baseline: Design,
               rules: Alerts, what: str) -> Finding:
    """A rate (one of metrics.series.RATES over all attempts) up by rate_increase_points, and
    significantly: the difference over its multiway standard error (utterance x tick, both windows),
    one-sided Student's t, p < p_value. A single tick where everything failed is one cluster, not
    ten independent failures."""
    h, g = np.asarray(recent_hits, dtype=bool), np.asarray(baseline_hits, dtype=bool)
    early = _too_few(h.size, g.size, rules, "attempts")
    if early is not None:
        return early
    s = rate_shift(h, recent, g, baseline)
    now, before, p = s.recent, s.baseline, s.p_value
    material = (now - before) * 100 >= rules.rate_increase_points
    significant = p < rules.p_value
    return Finding(material and significant, now, before, p, h.size, g.size,
                   f"{what} {now * 100:.1f} % ({int(h.sum())}/{h.size}, {s.units_recent} ticks) vs "
                   f"{before * 100:.1f} % ({int(g.sum())}/{g.size}), clustered one-sided t p = {p:.2g}"
                   + ("" if material else f"; not material (needs +{rules.rate_increase_points:g} points)")
                   + ("" if significant else f"; not significant (needs p < {rules.p_value:g})"))


def immaterial_rate(recent_hits: Sequence[bool], baseline_hits: Sequence[bool], rules: Alerts,
                    what: str) -> Finding | None:
    """rate_spike's verdict when it needs no variance: too few attempts, no baseline, or a rise short
    of rate_increase_points (it cannot hold, whatever its p; p is then not computed). None when the
    rise is material and rate_spike must test it."""
    h, g = np.asarray(recent_hits, dtype=bool), np.asarray(baseline_hits, dtype=bool)
    early = _too_few(h.size, g.size, rules, "attempts")
    if early is not None:
        return early
    now, before = float(h.mean()), float(g.mean())
    if (now - before) * 100 >= rules.rate_increase_points:
        return None
    return Finding(False, now, before, None, h.size, g.size,
                   f"{what} {now * 100:.1f} % ({int(h.sum())}/{h.size}) vs {before * 100:.1f} % "
                   f"({int(g.sum())}/{g.size}); not material (needs +{rules.rate_increase_points:g} points)")


def _conversations(rules: Alerts) -> tuple[int, int]:
    return rules.min_recent_conversations, rules.min_baseline_conversations


def adherence_drop(recent_passed: Sequence[bool], recent_conversations: Sequence[Hashable],
                   baseline_passed: Sequence[bool], baseline_conversations: Sequence[Hashable],
                   rules: Alerts) -> Finding:
    """Instruction adherence (voxwatch/metrics/conversation_aggregate.py: the share of decided in-scope
    turn-dimensions passed, one item per turn-dimension labelled with its conversation) down by
    adherence_drop_points, and significantly: metrics.compare.rate_shift on the failures (a drop in
    adherence is a rise in failures) with a design over conversations, so a conversation that went
    wrong from turn 3 on is one cluster, not twenty independent failures; one-sided t, p < p_value.
    Judged on min_recent_conversations, against min_baseline_conversations."""
    h, g = np.asarray(recent_passed, dtype=bool), np.asarray(baseline_passed, dtype=bool)
    rc, bc = np.asarray(recent_conversations), np.asarray(baseline_conversations)
    n_recent, n_baseline = int(np.unique(rc).size), int(np.unique(bc).size)
    early = _too_few(n_recent, n_baseline, rules, "conversations", _conversations(rules))
    if early is not None:
        return early
    s = rate_shift(~h, design(conversation=rc), ~g, design(conversation=bc))
    now, before, p = 1 - s.recent, 1 - s.baseline, s.p_value
    material = (before - now) * 100 >= rules.adherence_drop_points
    significant = p < rules.p_value
    return Finding(material and significant, now, before, p, n_recent, n_baseline,
                   f"instruction adherence {now * 100:.1f} % ({int(h.sum())}/{h.size} turn-dimensions, {n_recent} "
                   f"conversations) vs {before * 100:.1f} % ({int(g.sum())}/{g.size}, {n_baseline} conversations), "
                   f"one-sided t clustered by conversation p = {p:.2g}"
                   + ("" if material else f"; not material (needs -{rules.adherence_drop_points:g} points)")
                   + ("" if significant else f"; not significant (needs p < {rules.p_value:g})"))


def conversation_latency_shift(recent: Sequence[float], recent_conversations: Sequence[Hashable],
                               baseline: Sequence[float], baseline_conversations: Sequence[Hashable],
                               rules: Alerts) -> Finding:
    """Per-turn V2V, conversation against conversation: each conversation's median turn, then the
    median of the recent conversations' medians against the baseline's (as latency_shift does with
    ticks; the same materiality). Judged on min_recent_conversations, against
    min_baseline_conversations."""
    x, y = np.asarray(recent, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    rc, bc = np.asarray(recent_conversations), np.asarray(baseline_conversations)
    n = (int(np.unique(rc).size), int(np.unique(bc).size))
    early = _too_few(*n, rules, "conversations with a measured V2V", _conversations(rules))
    if early is not None:
        return early
    return _median_of_medians(x, rc, y, bc, rules, "conversation", n)
