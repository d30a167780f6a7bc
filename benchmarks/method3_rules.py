"""Method 3's alert rules, kept for comparison only (benchmarks/alert_roc.py prints them beside the
new ones): they treat rows as independent. Mann-Whitney over rows for latency, a row bootstrap
of pooled WER (voxwatch/metrics/row_bootstrap.py), Fisher's exact test over rows for rates. Copied from
voxwatch/alerts/rules.py as it was at method 3; never used by the service.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.stats import fisher_exact, mannwhitneyu

from voxwatch.alerts.rules import Finding, _too_few
from voxwatch.config import Alerts
from voxwatch.metrics.row_bootstrap import BOOTSTRAP_SEED, bootstrap_pooled_draws
from voxwatch.metrics.series import pooled_wer, rate
from voxwatch.foundation.observation import FAILED

RATES = {  # method 3's rate kinds: what evaluate.py counted
    "error_rate": FAILED - {"timeout", "inaudible"},
    "timeout_rate": frozenset({"timeout"}),
    "inaudible_rate": frozenset({"inaudible"}),
}


def latency_shift(recent: Sequence[float], baseline: Sequence[float], rules: Alerts) -> Finding:
    """Significant: one-sided Mann-Whitney U (recent stochastically greater), p < p_value. Material:
    the recent median up by latency_increase_pct AND by latency_increase_ms (a tail that moves alone,
    or a 10 % drift on a 40 ms clock, is not a regression a user feels)."""
    x, y = np.asarray(recent, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    early = _too_few(x.size, y.size, rules, "samples")
    if early is not None:
        return early
    p = float(mannwhitneyu(x, y, alternative="greater").pvalue)
    now, before = float(np.median(x)), float(np.median(y))
    material = now >= before * (1 + rules.latency_increase_pct / 100) and now - before >= rules.latency_increase_ms
    significant = p < rules.p_value
    return Finding(material and significant, now, before, p, x.size, y.size,
                   f"median {now:.0f} ms vs {before:.0f} ms ({now - before:+.0f} ms, "
                   f"{(now / before - 1) * 100 if before else float('inf'):+.0f} %), one-sided Mann-Whitney p = {p:.2g}"
                   + ("" if material else f"; not material (needs +{rules.latency_increase_pct:g} % and "
                                          f"+{rules.latency_increase_ms:g} ms)")
                   + ("" if significant else f"; not significant (needs p < {rules.p_value:g})"))


def wer_shift(recent_errors: Sequence[int], recent_words: Sequence[int], baseline_errors: Sequence[int],
              baseline_words: Sequence[int], rules: Alerts) -> Finding:
    """Pooled WER (sum of errors over sum of reference words, METHOD "WER") up by wer_increase_points,
    with the bootstrap distribution of the difference (clips resampled in each window independently,
    metrics.stats) above 0 at the one-sided p_value level: p is the share of resamples where the
    recent window is no worse. The bootstrap (tens of ms on a 30-day baseline) runs only for a
    material shift: for any other it could not change the verdict."""
    n_recent, n_baseline = len(recent_errors), len(baseline_errors)
    early = _too_few(n_recent, n_baseline, rules, "clips")
    if early is not None:
        return early
    now = pooled_wer(recent_errors, recent_words)
    before = pooled_wer(baseline_errors, baseline_words)
    if now is None or before is None:
        return Finding(None, None, None, None, n_recent, n_baseline, "no reference words to score: not judged")
    line = f"pooled WER {now * 100:.1f} % vs {before * 100:.1f} % ({(now - before) * 100:+.1f} points)"
    if (now - before) * 100 < rules.wer_increase_points:
        return Finding(False, now, before, None, n_recent, n_baseline,
                       f"{line}; not material (needs +{rules.wer_increase_points:g} points)")
    diff = (bootstrap_pooled_draws(recent_errors, recent_words, seed=BOOTSTRAP_SEED)
            - bootstrap_pooled_draws(baseline_errors, baseline_words, seed=BOOTSTRAP_SEED + 1))
    p = float(np.mean(diff[~np.isnan(diff)] <= 0))
    significant = p < rules.p_value
    return Finding(significant, now, before, p, n_recent, n_baseline, f"{line}, bootstrap p = {p:.2g}"
                   + ("" if significant else f"; not significant (needs p < {rules.p_value:g})"))


def rate_spike(recent_hits: int, recent_n: int, baseline_hits: int, baseline_n: int, rules: Alerts,
               what: str) -> Finding:
    """A rate (errors, timeouts, inaudible replies over all attempts) up by rate_increase_points, and
    significantly: one-sided Fisher's exact test on the 2x2 table, exact at any count (a normal
    approximation is wrong at the few events a healthy series has)."""
    early = _too_few(recent_n, baseline_n, rules, "attempts")
    if early is not None:
        return early
    now, before = rate(recent_hits, recent_n), rate(baseline_hits, baseline_n)
    p = float(fisher_exact([[recent_hits, recent_n - recent_hits], [baseline_hits, baseline_n - baseline_hits]],
                           alternative="greater").pvalue)
    material = (now - before) * 100 >= rules.rate_increase_points
    significant = p < rules.p_value
    return Finding(material and significant, now, before, p, recent_n, baseline_n,
                   f"{what} {now * 100:.1f} % ({recent_hits}/{recent_n}) vs {before * 100:.1f} % "
                   f"({baseline_hits}/{baseline_n}), one-sided Fisher p = {p:.2g}"
                   + ("" if material else f"; not material (needs +{rules.rate_increase_points:g} points)")
                   + ("" if significant else f"; not significant (needs p < {rules.p_value:g})"))
