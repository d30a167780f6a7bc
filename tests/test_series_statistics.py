"""The one definition of every series statistic (voxwatch/metrics/series.py) and its clustered intervals
(voxwatch/metrics/clustered.py): floors, which statuses each rate counts, and intervals that widen when
rows share an utterance or a tick."""

import numpy as np
import pytest

from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.clustered import bootstrap_variance, design, quantile_interval, rate_interval, ratio_variance
from voxwatch.metrics.series import (MIN_ATTEMPTS, RATES, SeriesData, percentile_floor, pooled_wer, rate,
                                     series_rows)

KEY = SeriesKey("stt", "m/x@1", "d", "local", "4", "stt-stream", "")


def _data(n_ticks: int, per_tick: int, rng, tick_sd: float = 0.0, statuses=None) -> SeriesData:
    ticks = np.repeat(np.arange(n_ticks), per_tick)
    utterances = np.concatenate([rng.choice(40, per_tick, replace=False) for _ in range(n_ticks)])
    shock = rng.normal(0, tick_sd, n_ticks)[ticks]
    ttfs = 300 * np.exp(0.2 * rng.standard_normal(ticks.size) + shock)
    statuses = statuses if statuses is not None else ["ok"] * ticks.size
    ok = [s == "ok" for s in statuses]
    return SeriesData(statuses=statuses, utterances=[f"u{u}" for u in utterances], ticks=[f"r{t}" for t in ticks],
                      values={"ttfs_ms": [v if g else None for v, g in zip(ttfs, ok)],
                              "ttfs_peer_ms": [v - 100 if g else None for v, g in zip(ttfs, ok)],
                              "first_partial_ms": [v / 3 if g else None for v, g in zip(ttfs, ok)],
                              "connect_ms": [None] * ticks.size},
                      errors=[int(u % 3) if g else None for u, g in zip(utterances, ok)],
                      words=[10 if g else None for g in ok])


def test_floors_apply_to_every_statistic():
    assert [percentile_floor(q) for q in (50, 95, 99)] == [5, 100, 500]
    assert rate(0, MIN_ATTEMPTS - 1) is None and rate(1, MIN_ATTEMPTS) == pytest.approx(1 / MIN_ATTEMPTS)
    assert pooled_wer([1, 1], [10, 10]) is None  # 2 scored clips: n/a, as every statistic under 5
    assert pooled_wer([1] * 5, [10] * 5) == pytest.approx(0.1)
    rows = series_rows(KEY, _data(1, 4, np.random.default_rng(0)))
    ttfs = rows[0]
    assert ttfs.n == 4 and ttfs.mean is None and ttfs.error_rate is None and ttfs.pooled_wer is None
    assert ttfs.mean_ci is None and ttfs.wer_ci is None and ttfs.error_rate_ci is None


def test_rates_are_disjoint_and_count_attempts_only():
    assert not (RATES["error_rate"] & RATES["timeout_rate"]) and not (RATES["error_rate"] & RATES["inaudible_rate"])
    statuses = ["ok"] * 14 + ["timeout", "inaudible", "error", "server_error", "excluded", "excluded"]
    rows = series_rows(KEY, _data(2, 10, np.random.default_rng(1), statuses=statuses))
    first = rows[0]
    assert first.attempts == 18  # an `excluded` row was never attempted
    assert (first.error_rate, first.timeout_rate, first.inaudible_rate) == pytest.approx((2 / 18, 1 / 18, 1 / 18))
    assert first.error_rate_ci[0] <= first.error_rate <= first.error_rate_ci[1]
    assert [r.metric for r in rows] == ["ttfs_ms", "first_partial_ms", "ttfs_peer_ms", "connect_ms"]  # connect_ms: its own summary
    assert rows[3].n == 0 and rows[3].mean is None


def test_a_rate_of_zero_still_has_an_upper_bound():
    low, high = rate_interval(np.zeros(40), design(utterance=np.arange(40), tick=np.arange(40) // 10))
    assert low == 0.0 and 0.05 < high < 0.25  # 4 ticks: Student's t with 3 degrees of freedom


def test_per_clip_wer_distribution_beside_pooled_wer():
    data = _data(3, 10, np.random.default_rng(2))
    row = series_rows(KEY, data)[0]
    clip = np.array([e / w for e, w in zip(data.errors, data.words)])
    assert row.pooled_wer == pytest.approx(sum(data.errors) / sum(data.words)) and row.wer_clips == 30
    assert row.clip_wer_p50 == pytest.approx(np.percentile(clip, 50)) and row.clip_wer_max == pytest.approx(clip.max())
    assert row.clip_wer_p95 is None  # 30 clips: a p95 needs 100
    assert row.wer_ci[0] <= row.pooled_wer <= row.wer_ci[1]


def test_closed_form_variance_is_the_cluster_bootstraps():
    """For a ratio, ratio_variance is the limit of resampling clusters: the resampled one agrees."""
    rng = np.random.default_rng(4)
    ticks, utt = np.repeat(np.arange(30), 8), rng.integers(0, 25, 240)
    x = rng.lognormal(5, 0.4, 240) * np.exp(rng.normal(0, 0.3, 30))[ticks]
    d = design(utterance=utt, tick=ticks)
    closed = ratio_variance(d, x, np.ones(x.size))
    resampled = bootstrap_variance(d, lambda w: float(w @ x / w.sum()), resamples=3000)
    assert resampled.total == pytest.approx(closed.total, rel=0.15)
    assert [round(t / c, 1) for t, c in zip(resampled.terms, closed.terms)] == pytest.approx([1.0, 1.0], abs=0.15)


def test_rows_of_one_tick_are_not_independent():
    """A tick shock shared by its rows widens the interval well beyond what treating rows as
    independent gives, and a design where each row is its own cluster is exactly that."""
    rng = np.random.default_rng(5)
    data = _data(20, 10, rng, tick_sd=0.3)
    x = np.asarray(data.values["ttfs_ms"], dtype=float)
    clustered = ratio_variance(design(utterance=data.utterances, tick=data.ticks), x, np.ones(x.size))
    rows = ratio_variance(design(row=np.arange(x.size)), x, np.ones(x.size))
    assert clustered.total > 4 * rows.total
    assert clustered.df < 30  # 20 ticks: Student's t with few degrees of freedom, not the normal
    row = series_rows(KEY, data)[0]
    assert row.mean_ci[0] <= row.mean <= row.mean_ci[1] and row.p50_ci[0] <= row.p50 <= row.p50_ci[1]
    assert (row.utterances, row.ticks) == (len(set(data.utterances)), 20)


def test_intervals_do_not_depend_on_row_order():
    data = _data(12, 10, np.random.default_rng(6), tick_sd=0.2)
    order = np.random.default_rng(7).permutation(120)
    shuffled = SeriesData(*[[list(col)[i] for i in order] for col in (data.statuses, data.utterances, data.ticks)],
                          values={k: [list(v)[i] for i in order] for k, v in data.values.items()},
                          errors=[data.errors[i] for i in order], words=[data.words[i] for i in order])
    a, b = series_rows(KEY, data), series_rows(KEY, shuffled)
    for x, y in zip(a, b):
        for name in ("mean_ci", "p50_ci", "p95_ci", "wer_ci", "error_rate_ci"):
            assert getattr(x, name) == pytest.approx(getattr(y, name)) if getattr(x, name) else getattr(y, name) is None


def test_a_percentile_interval_follows_the_skew():
    rng = np.random.default_rng(8)
    x = rng.lognormal(5, 0.8, 400)
    low, high = quantile_interval(x, 95, design(utterance=np.arange(400) % 40, tick=np.arange(400) // 10))
    estimate = np.percentile(x, 95)
    assert low < estimate < high and high - estimate > estimate - low  # the long tail is on the right


def test_the_failure_rate_is_one_minus_availability():
    """The fitted table's 'failed' column (metrics.series.failure_rate): the three disjoint failure rates
    together, every attempt that did not succeed."""
    from voxwatch.foundation.series_key import SeriesKey
    from voxwatch.metrics.series import SeriesData, availability, failure_rate, series_rows

    statuses = ["ok"] * 12 + ["error", "timeout", "inaudible", "excluded"]
    n = len(statuses)
    data = SeriesData(statuses=statuses, utterances=[i % 4 for i in range(n)], ticks=[i // 8 for i in range(n)],
                      values={"ttfa_ms": [10.0] * n, "ttfb_ms": [5.0] * n, "leading_silence_ms": [5.0] * n,
                              "connect_ms": [1.0] * n}, errors=[None] * n, words=[None] * n)
    row = series_rows(SeriesKey("tts", "m/x@1", "d", "local", "13", "tts-stream", ""), data)[0]
    assert failure_rate(row) == pytest.approx(3 / 15) == pytest.approx(1 - availability(statuses))
