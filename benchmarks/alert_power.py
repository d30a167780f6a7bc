"""The best any rule could do on benchmarks/alert_roc.py's simulated series (its power lines).

A rule that must fire within 2 evaluations of a latency step sees at most 2 ticks after it (at the
default schedule, 1); within 4 evaluations of a WER step, 2. Whatever the rule, it cannot know
more than those ticks tell: the best test is one-sided on their summary, at a false-alarm level
per decision that keeps a month of decisions (one per new tick) under the target. The noise of
those summaries is measured here on the stable series, with the production statistics
(metrics.compare: tick medians; the paired WER difference against a 30-day baseline).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from voxwatch.metrics.clustered import design
from voxwatch.metrics.compare import paired_ratio_shift, tick_medians
from voxwatch.metrics.detection import ideal_power, robust_sd


@dataclass(frozen=True)
class Noise:
    """One stable series' k-tick summaries after its baseline: latency as log(median of the k tick
    medians / the baseline's median of tick medians), alone and with `step_ms` added to every row;
    WER as the paired difference (points) of k ticks against the baseline's per-utterance WERs."""
    latency: dict[int, np.ndarray]
    latency_stepped: dict[int, np.ndarray]
    wer: np.ndarray


def noise(columns: list[np.ndarray], first: float, step_ms: float, wer_ticks: int = 2) -> Noise:
    """Columns in store.series_rows' order (alert_roc.simulate); the baseline is every row before `first`."""
    at, status, _, errors, words, tick, utt, latency = columns
    ok, after = status == "ok", at >= first
    base = tick_medians(latency[ok & ~after], tick[ok & ~after])
    med = float(np.median(base))
    tm = tick_medians(latency[ok & after], tick[ok & after])  # tick labels rise with time
    lat, stepped = {}, {}
    for k in (1, 2):
        windows = np.lib.stride_tricks.sliding_window_view(tm, k)
        lat[k] = np.log(np.median(windows, axis=1) / med)
        stepped[k] = np.log(np.median(windows + step_ms, axis=1) / med)
    b = ok & ~after
    labels = np.unique(tick[ok & after])
    wer = []
    for j in range(0, labels.size - wer_ticks + 1):
        r = ok & after & np.isin(tick, labels[j:j + wer_ticks])
        s = paired_ratio_shift(utt[r], errors[r], words[r], design(utterance=utt[r], tick=tick[r]),
                               utt[b], errors[b], words[b])
        if s is not None:
            wer.append((s.recent - s.baseline) * 100)
    return Noise(lat, stepped, np.asarray(wer))


def _figures(calm: np.ndarray, moved: np.ndarray, alpha: float) -> dict:
    """The step's z over the calm summaries' Gaussian core (robust sd), the ideal test's detection
    at `alpha` on that core (optimistic) and against the simulated noise itself, outliers included
    (its (1 - alpha) quantile as the threshold)."""
    sd = robust_sd(calm)
    z = float((np.median(moved) - np.median(calm)) / sd)
    return {"sd": round(sd, 4), "z": round(z, 2), "ideal_detection_gaussian": round(ideal_power(z, alpha), 3),
            "ideal_detection_simulated": round(float(np.mean(moved > np.quantile(calm, 1 - alpha))), 3)}


def lines(parts: list[Noise], step_ms: float, wer_points: float, alpha: float) -> tuple[list[str], dict]:
    """The power lines and their figures, per detection target (and latency's 1-tick case: what the
    default schedule's evaluations 1 and 2 see)."""
    out, figures = [], {}
    for k in (2, 1):
        f = figures[f"latency_{k}_tick"] = _figures(np.concatenate([p.latency[k] for p in parts]),
                                                    np.concatenate([p.latency_stepped[k] for p in parts]), alpha)
        out.append(f"latency +{step_ms:g} ms, {k} post-step tick(s): summary sd {f['sd']:.3f} in log, step "
                   f"{f['z']:.1f} sd; ideal test: {f['ideal_detection_gaussian']:.0%} (Gaussian core), "
                   f"{f['ideal_detection_simulated']:.0%} (simulated noise, slow ticks included)")
    calm = np.concatenate([p.wer for p in parts])
    f = figures["wer_2_ticks"] = _figures(calm, calm + wer_points, alpha)
    out.append(f"WER +{wer_points:g} points, 2 post-step ticks (evaluations 3-4): paired difference sd {f['sd']:.2f} "
               f"points, step {f['z']:.1f} sd; ideal test: {f['ideal_detection_gaussian']:.0%} (Gaussian core), "
               f"{f['ideal_detection_simulated']:.0%} (simulated noise)")
    return out, figures
