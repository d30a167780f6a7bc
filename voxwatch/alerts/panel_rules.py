"""The sentinel panel's rules (docs/ALERTS.md "Sequential rules"): latency and WER by a capped CUSUM
over per-run paired differences (voxwatch/metrics/sequential.py), and outages from the newest run.

A rule is pending once its evidence reaches `*_pending_at` (the evaluator then asks for a
confirmation burst: the panel measured again at once), and decisive from `*_fire_at` when the
effect is also material: a pending alert fires at its fire_after-th successive holding evaluation
only when decisive. Everything is
computed from the rows of the window at each evaluation, so a replay gives the same verdicts.
"""

from __future__ import annotations

import math
from typing import Hashable, Sequence

import numpy as np

from voxwatch.config import Alerts
from voxwatch.metrics.clustered import design, rate_interval
from voxwatch.metrics.sequential import (Observations, Sequential, latency_observations, sequential_shift,
                                         utterance_reference, utterance_wer, wer_observations)

from voxwatch.alerts.rules import Finding


def _not_judged(n_recent: int, n_baseline: int, why: str) -> Finding:
    return Finding(None, None, None, None, n_recent, n_baseline, why)


def _verdict(s: Sequential, pending_at: float, fire_at: float, material: bool, recent: float, baseline: float,
             what: str, effect: str, rules: Alerts, allowance: float) -> Finding:
    holds = s.statistic >= pending_at  # pending (a burst) on evidence alone; firing also needs materiality
    return Finding(holds, recent, baseline, None, s.n_recent, s.n_baseline,
                   f"panel {what}: {effect} over the last {s.n_evidence} of {s.n_recent} runs (ticks and bursts), "
                   f"CUSUM {s.statistic:.1f} (pending at {pending_at:g}, fires at {fire_at:g}; allowance "
                   f"{allowance:g}, increments capped at {rules.increment_cap:g}, in baseline sd {s.scale:.3g}; "
                   f"{s.n_baseline} baseline runs)" + ("" if material else "; not material: cannot fire"),
                   decisive=holds and s.statistic >= fire_at and material, observed_at=s.newest_at)


def latency_sequential(values: np.ndarray, utterances: np.ndarray, runs: np.ndarray, started: np.ndarray,
                       recent: np.ndarray, rules: Alerts) -> Finding:
    """Panel ok rows of one latency metric (ms): each run's median log ratio to its utterances'
    baseline medians, through the CUSUM. Material as the window rule: the effect's estimate up by
    latency_increase_pct and latency_increase_ms (at the panel's baseline median)."""
    ok = np.isfinite(values) & (values > 0)
    logs = np.log(np.where(ok, values, 1.0))
    base = ok & ~recent
    reference = utterance_reference(logs[base], utterances[base])
    b = latency_observations(logs[base], utterances[base], runs[base], started[base], reference)
    if b.value.size < rules.min_baseline_observations:
        return Finding(False, None, None, None, 0, int(b.value.size),
                       f"no panel baseline yet ({b.value.size} runs, fewer than {rules.min_baseline_observations})")
    now = ok & recent
    r = latency_observations(logs[now], utterances[now], runs[now], started[now], reference)
    s = sequential_shift(r, b, rules.latency_allowance, rules.increment_cap, rules.hour_window)
    if s is None:
        return _not_judged(int(r.value.size), int(b.value.size), "no recent panel run: not judged")
    median_ms = float(np.exp(np.median(logs[base])))
    ratio, low, high = math.exp(s.effect), math.exp(s.low), math.exp(s.high)
    added = median_ms * (ratio - 1)
    material = (ratio - 1) * 100 >= rules.latency_increase_pct and added >= rules.latency_increase_ms
    effect = (f"{added:+.0f} ms ({(ratio - 1) * 100:+.0f} %, 95 % interval {(low - 1) * 100:+.0f} to "
              f"{(high - 1) * 100:+.0f} %) against each utterance's {rules.baseline_days:g} d median, panel median {median_ms:.0f} ms")
    return _verdict(s, rules.latency_pending_at, rules.latency_fire_at, material, median_ms * ratio, median_ms,
                    "latency", effect, rules, rules.latency_allowance)


def wer_sequential(errors: np.ndarray, words: np.ndarray, utterances: np.ndarray, runs: np.ndarray,
                   started: np.ndarray, recent: np.ndarray, rules: Alerts) -> Finding:
    """Panel scored rows: each run's errors minus words x its utterances' baseline WERs, over its
    words, through the CUSUM (the allowance is its materiality)."""
    base = ~recent
    reference = utterance_wer(errors[base], words[base], utterances[base])
    b = wer_observations(errors[base], words[base], utterances[base], runs[base], started[base], reference)
    if b.value.size < rules.min_baseline_observations:
        return Finding(False, None, None, None, 0, int(b.value.size),
                       f"no panel baseline yet ({b.value.size} runs, fewer than {rules.min_baseline_observations})")
    r = wer_observations(errors[recent], words[recent], utterances[recent], runs[recent], started[recent], reference)
    s = sequential_shift(r, b, rules.wer_allowance, rules.increment_cap, rules.hour_window)
    if s is None:
        return _not_judged(int(r.value.size), int(b.value.size), "no recent panel run: not judged")
    e, w = errors[base].astype(np.float64), words[base].astype(np.float64)
    baseline = float(e.sum() / w.sum()) if w.sum() > 0 else 0.0
    effect = (f"{s.effect * 100:+.1f} WER points (95 % interval {s.low * 100:+.1f} to {s.high * 100:+.1f}) against "
              f"each utterance's {rules.baseline_days:g} d WER, panel WER {baseline * 100:.1f} %")
    return _verdict(s, rules.wer_pending_at, rules.wer_fire_at, True, baseline + s.effect, baseline, "WER", effect,
                    rules, rules.wer_allowance)


def outage(failed: np.ndarray, utterances: np.ndarray, runs: np.ndarray, started: np.ndarray, recent: np.ndarray,
           rules: Alerts) -> Finding:
    """The newest panel run's attempts: at least outage_share of them failed (any status but ok:
    errors, timeouts, inaudible), against a baseline that failed less than that. One such run is
    pending (a burst confirms at once); the burst failing too is decisive."""
    if not recent.any():
        return _not_judged(0, int((~recent).sum()), "no recent panel attempt: not judged")
    firsts: dict[Hashable, float] = {}
    for run, t in sorted(zip(runs[recent].tolist(), started[recent].tolist()), key=lambda x: x[1]):
        firsts.setdefault(run, t)
    newest = max(firsts, key=firsts.__getitem__)
    mine = recent & (runs == newest)
    n, bad = int(mine.sum()), int(failed[mine].sum())
    base = failed[~recent]
    before = float(base.mean()) if base.size else 0.0
    share = bad / n
    low, high = rate_interval(failed[mine], design(utterance=utterances[mine])) or (0.0, 1.0)
    holds = share >= rules.outage_share and before < rules.outage_share
    return Finding(holds, share, before, None, n, int(base.size),
                   f"panel attempts of the newest run failed: {bad}/{n} ({share * 100:.0f} %, 95 % interval "
                   f"{low * 100:.0f}-{high * 100:.0f} %) vs {before * 100:.1f} % of the baseline's "
                   f"(an outage from {rules.outage_share * 100:.0f} %)",
                   decisive=holds, observed_at=firsts[newest])


def panel_mask(utterances: Sequence[Hashable], in_panel: Sequence[bool]) -> np.ndarray:
    """Rows of panel utterances (the evaluator marks them from the family's pinned panel)."""
    return np.asarray(in_panel, dtype=bool) & (np.asarray(utterances, dtype=object) != None)  # noqa: E711


__all__ = ["latency_sequential", "wer_sequential", "outage", "panel_mask", "Observations"]
