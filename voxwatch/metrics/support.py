"""Where each published quantity can lie (METHOD "Uncertainty", its support), defined once.

An interval is reported within the support of what it bounds: a share (a rate, the entity error
rate, a conversation's pass rate) lies in [0, 1]; pooled WER is at least 0 but can exceed 1 (a
hypothesis with more insertions than the reference has words); a duration or a real-time factor is
at least 0, unless its clock can run before its anchor (a `signed` metric: a final before the end
of speech, and then never below the smallest value measured); speech quality lies on the P.835
scale, 1 to 5. Shares get Clopper-Pearson's interval at the effective sample size
(clustered.proportion_interval), which never leaves [0, 1]; pooled WER a count rate's interval
(clustered.count_rate_interval), which cannot cross 0; every other interval is the t interval truncated
at its support (`clip`). Every reader prints the interval as metrics made it, so a
negative bound of a quantity that cannot be negative never reaches a page.
"""

from __future__ import annotations

import math

from voxwatch.metrics.deadline_wer import WER_FIELDS
from voxwatch.metrics.specs import METRICS

Support = tuple[float, float]

SHARE: Support = (0.0, 1.0)
"""A proportion of counted things: rates over attempts, missed over tagged entities, verdicts passed,
replies that said the answer, clips that stalled."""
NON_NEGATIVE: Support = (0.0, math.inf)
"""A duration, a real-time factor, or pooled WER (insertions can take it past 1)."""
SIGNED: Support = (-math.inf, math.inf)
"""A clock that can stop before its anchor (MetricSpec.signed)."""
MOS: Support = (1.0, 5.0)
"""The P.835 scale speech quality is scored on."""

_SIGNED = frozenset(m.name for m in METRICS if m.signed)
_FIELDS: dict[str, Support] = {
    "error_rate_ci": SHARE, "timeout_rate_ci": SHARE, "entity_error_rate_ci": SHARE, "answer_accuracy_ci": SHARE,
    "stall_share_ci": SHARE,
    "hallucination_rate_ci": SHARE, "wer_ci": NON_NEGATIVE, "invented_words_per_min_ci": NON_NEGATIVE, "quality_mos_ci": MOS,
    **{f"{name}_ci": NON_NEGATIVE for name in WER_FIELDS},  # pooled WER at a deadline, as pooled WER
}


def of_metric(metric: str) -> Support:
    """Where a metric's values (and so its mean and percentiles) lie."""
    return SIGNED if metric in _SIGNED else NON_NEGATIVE


def of_interval(field: str, metric: str) -> Support:
    """The support of a MetricRow interval field (`p50_ci`, `wer_ci`, ...) on a row of `metric`."""
    return _FIELDS.get(field, of_metric(metric))


def of_values(within: Support, values) -> Support:
    """A signed clock's support as a series shows it: a duration cannot be below 0 unless the clock
    ran before its anchor, so its interval stops at 0, or at the smallest value measured where
    the series measured one below 0 (a final before the end of speech is kept, never clamped, and
    an interval may reach it, never beyond). Any other support is returned as it is."""
    if within != SIGNED or not len(values):
        return within
    return (min(0.0, float(min(values))), math.inf)


def clip(interval: tuple[float, float], support: Support) -> tuple[float, float]:
    """An interval truncated at its support (the truncation METHOD names for t intervals)."""
    low, high = support
    return float(min(max(interval[0], low), high)), float(max(min(interval[1], high), low))
