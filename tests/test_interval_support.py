"""Every interval a series publishes lies within the support of what it bounds (metrics/support.py):
shares in [0, 1], pooled WER and unsigned clocks at or above 0, speech quality on 1-5. Checked on
the statistics themselves over many small series (where t intervals overshoot), then through every
reader (the leaderboard, its CSV, the API's JSON, the CLI's table) on SQLite and Postgres alike."""

from __future__ import annotations

import csv
import io
import re
import time
from dataclasses import fields

import numpy as np
import pytest
from starlette.testclient import TestClient

from voxwatch.boards import comparisons as board_comparisons
from voxwatch.boards import leaderboard
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics import support
from voxwatch.metrics.clustered import design, rate_interval
from voxwatch.metrics.series import MetricRow, SeriesData, series_rows
from voxwatch.store import open_store
from voxwatch.web.app import create_app

MODEL = "pocketsphinx/en-us@5.1.1"


def _within(row: MetricRow) -> list[str]:
    """The intervals of a row outside their support (empty: all within)."""
    out = []
    for f in fields(row):
        ci = getattr(row, f.name)
        if f.name.endswith("_ci") and ci is not None:
            low, high = support.of_interval(f.name, row.metric)
            if not (low <= ci[0] <= ci[1] <= high):
                out.append(f"{f.name} {ci} outside [{low}, {high}]")
    return out


def test_support_is_named_for_every_interval_field():
    assert support.of_interval("entity_error_rate_ci", "ttfs_ms") == support.SHARE
    assert support.of_interval("wer_ci", "ttfs_ms") == support.NON_NEGATIVE  # insertions: WER may pass 1
    assert support.of_interval("mean_ci", "ttfs_ms") == support.SIGNED  # a final can come before speech ends
    assert support.of_interval("mean_ci", "latency_ms") == support.NON_NEGATIVE
    assert support.of_interval("quality_mos_ci", "ttfa_ms") == support.MOS
    assert support.clip((-3.0, 7.0), support.MOS) == (1.0, 5.0)


@pytest.mark.parametrize("seed", range(40))
def test_small_series_never_publish_a_bound_outside_the_support(seed: int):
    """Two or three ticks of a few utterances, skewed values, shares near 0 and 1: the t interval
    overshoots here (an entity error rate of 0.9 over 2 ticks had an upper bound of 1.39)."""
    rng = np.random.default_rng(seed)
    ticks, clips = int(rng.integers(2, 4)), int(rng.integers(2, 5))
    n = ticks * clips * 2
    statuses = ["ok"] * n
    share = rng.choice([0.05, 0.5, 0.95])
    total = rng.integers(1, 3, n)
    data = SeriesData(
        statuses=statuses, utterances=[i % clips for i in range(n)], ticks=[i // (clips * 2) for i in range(n)],
        values={"latency_ms": list(rng.lognormal(4, 2, n)), "rtf": list(rng.lognormal(-2, 2, n)),
                "connect_ms": list(rng.lognormal(3, 2, n))},
        errors=list(rng.integers(0, 12, n)), words=list(rng.integers(1, 6, n)),
        entities_missed=[int(rng.binomial(t, share)) for t in total], entities_total=list(total),
        quality=list(np.clip(rng.normal(4.6, 0.6, n), 1, 5)))
    rows = series_rows(SeriesKey("stt", MODEL, "d", "local", "10", "stt-batch", ""), data)
    assert rows and all(r.wer_ci is not None and r.entity_error_rate_ci is not None for r in rows)
    assert [problem for r in rows for problem in _within(r)] == []


def test_the_entity_error_rate_interval_is_clopper_pearsons_within_0_and_1():
    """9 of 10 entities missed over 2 ticks: Clopper-Pearson's interval at the clustered effective size
    stays under 1 and holds the estimate (the t interval truncated at 0 gave [0, 2.28] on this series)."""
    data = SeriesData(statuses=["ok"] * 6, utterances=[0, 1, 2, 0, 1, 2], ticks=[0, 0, 0, 1, 1, 1],
                      values={"latency_ms": [1.0] * 6, "rtf": [0.1] * 6, "connect_ms": [1.0] * 6},
                      errors=[1] * 6, words=[5] * 6, entities_missed=[2, 1, 1, 2, 1, 2], entities_total=[2, 2, 1, 2, 1, 2])
    row = series_rows(SeriesKey("stt", MODEL, "d", "local", "10", "stt-batch", ""), data)[0]
    low, high = row.entity_error_rate_ci
    assert row.entity_error_rate == pytest.approx(9 / 10)
    assert 0 < low < 0.9 < high <= 1.0


def test_a_share_at_0_of_n_or_n_of_n_gets_the_exact_binomial_bounds():
    """0 of 6 over two conversations read [0 %, 96 %] with Student's t over 1 degree of freedom; the
    exact interval of 0 successes in 6 trials is [0, 1 - 0.025^(1/6)] = [0 %, 45.9 %]."""
    d = design(conversation=[0, 0, 0, 1, 1, 1])
    assert rate_interval(np.zeros(6), d) == pytest.approx((0.0, 1 - 0.025 ** (1 / 6)))
    assert rate_interval(np.ones(6), d) == pytest.approx((0.025 ** (1 / 6), 1.0))
    low, high = rate_interval(np.array([1.0, 0, 0, 0, 0, 0]), d)
    assert 0.0 < low < 1 / 6 < high < 1.0


def test_pooled_wer_has_a_count_rate_interval_that_cannot_cross_zero():
    """A pooled WER of 72 % over two ticks read [19.1 %, 125.8 %] as a t interval (and 23 % read
    [0.0 %, 189,146 %] on the log scale with t over one degree of freedom): errors per word as a
    count's rate (Garwood's interval at the effective number of words) stays above 0, is longer
    above than below, as a count's distribution is, and a WER of 0 gets the exact upper bound of 0
    errors in its words, 3.69 / words."""
    rng = np.random.default_rng(4)
    n = 12
    words = rng.integers(3, 9, n)
    errors = np.minimum(words, rng.poisson(0.7 * words))
    data = SeriesData(statuses=["ok"] * n, utterances=[i % 6 for i in range(n)], ticks=[i // 6 for i in range(n)],
                      values={"latency_ms": [1.0] * n, "rtf": [0.1] * n, "connect_ms": [1.0] * n},
                      errors=list(errors), words=list(words))
    row = series_rows(SeriesKey("stt", MODEL, "d", "local", "13", "stt-batch", ""), data)[0]
    low, high = row.wer_ci
    assert 0 < low < row.pooled_wer < high < 3 * row.pooled_wer
    assert high - row.pooled_wer > row.pooled_wer - low  # a count's longer upper tail
    clean = SeriesData(**{**data.__dict__, "errors": [0] * n})
    zero = series_rows(SeriesKey("stt", MODEL, "d", "local", "13", "stt-batch", ""), clean)[0]
    assert zero.pooled_wer == 0 and zero.wer_ci[0] == 0
    assert zero.wer_ci[1] == pytest.approx(3.6889 / int(np.sum(words)), rel=1e-3)


def test_a_signed_clocks_interval_stops_at_0_or_at_its_smallest_value():
    """TTFS can be negative (a final before the end of speech); its mean's interval reaches below 0
    only where the series measured such a value, and never below the smallest one."""
    key = SeriesKey("stt", MODEL, "d", "local", "13", "stt-stream", "")

    def first(values: list[float]):
        n = len(values)
        data = SeriesData(statuses=["ok"] * n, utterances=[i % 3 for i in range(n)], ticks=[i // 3 for i in range(n)],
                          values={"ttfs_ms": values, "first_partial_ms": values, "ttfs_peer_ms": values,
                                  "connect_ms": [1.0] * n}, errors=[0] * n, words=[5] * n)
        return series_rows(key, data)[0]

    positive = first([5.0, 900.0, 8.0, 12.0, 2000.0, 7.0])
    assert positive.mean_ci[0] == 0.0 and positive.mean_ci[1] > positive.mean
    early = first([-40.0, 900.0, 8.0, 12.0, 2000.0, 7.0])
    assert early.mean_ci[0] == -40.0


def _observations() -> list[Observation]:
    """Two ticks of three clips of a batch STT missing most tagged entities, with a slow outlier."""
    now = time.time()
    out = []
    for tick in range(2):
        for clip in range(3):
            for attempt in range(2):
                i = len(out)
                out.append(Observation(
                    run_id=f"r{tick}", model_id=MODEL, dataset="stt-starter-clean", clip_id=f"c{clip}",
                    attempt=1 + attempt, board="stt", vendor="pocketsphinx", protocol="stt-batch", region="local",
                    started_at=now - 3600 * (tick + 1) - 60 * i, status="ok",
                    latency_ms=9000.0 if i == 0 else 40.0 + i, rtf=0.05 + i / 100, substitutions=3, deletions=0,
                    insertions=i % 4, ref_words=4, method_version="10", hypothesis="h", reference="r",
                    entities_total=1 + i % 2, entities_missed=1 + i % 2 if i % 5 else 0))
    return out


def _check_readers(url: str) -> None:
    store = open_store(url)
    try:
        board = leaderboard.from_store(store, "30d")
        table = leaderboard.format_table(board, "30d", comparisons=board_comparisons.from_store(store, "30d"))
    finally:
        store.close()
    assert board and [p for r in board for p in _within(r)] == []
    first = board[0]
    low, high = first.entity_error_rate_ci
    assert first.entity_error_rate > 0.7 and high <= 1.0
    printed = re.search(r"entities\)", table) and re.findall(r"\[(-?[\d.]+)%, (-?[\d.]+)%\] \(\d+ entities\)", table)
    assert printed and all(0 <= float(a) <= float(b) <= 100 for a, b in printed)
    for line in csv.DictReader(io.StringIO(leaderboard.format_csv(board))):
        assert 0 <= float(line["entity_error_rate_ci_low"]) <= float(line["entity_error_rate_ci_high"]) <= 1
        if line["metric"] == "latency_ms":
            assert float(line["mean_ci_low"]) >= 0
    with TestClient(create_app(url)) as client:
        api = client.get("/api/v1/leaderboard", params={"board": "stt"}).json()["rows"]
    assert api and all(r["entity_error_rate_ci"] == [round(v, 4) for v in first.entity_error_rate_ci] for r in api)
    assert all(0 <= r["mean_ci"][0] for r in api if r["mean_ci"])


def test_every_reader_publishes_the_bounded_intervals_sqlite(store_url: str):
    store = open_store(store_url)
    store.add(_observations())
    store.close()
    _check_readers(store_url)


@pytest.mark.e2e  # `voxwatch db upgrade` in a subprocess
def test_every_reader_publishes_the_bounded_intervals_postgres(postgres_store_url: str):
    store = open_store(postgres_store_url)
    store.add(_observations())
    store.close()
    _check_readers(postgres_store_url)
