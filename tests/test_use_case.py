"""The use-case combining rule and the Pareto frontier (metrics/use_case.py, METHOD "Use cases and the
frontier"): hand-computed cases, ties, a single model, missing figures, and a pooled series that
metrics.series summarizes exactly as one series holding all the rows."""

from __future__ import annotations

import numpy as np
import pytest

from voxwatch.boards.use_cases import UseCase, chosen_use_case, use_case_of
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.series import SeriesData, series_rows
from voxwatch.metrics.use_case import Point, dominates, frontier, pooled, use_case_series


def _keys(points: list[Point]) -> list[str]:
    return [p.key for p in points]


def test_the_frontier_of_a_hand_computed_set():
    # a (100 ms, 10 %) and c (300 ms, 4 %) trade off; b (200 ms, 12 %) is slower and worse than a;
    # d (300 ms, 5 %) as slow as c and worse; e (50 ms, 20 %) the fastest: on it
    points = [Point("a", 100, 0.10), Point("b", 200, 0.12), Point("c", 300, 0.04), Point("d", 300, 0.05),
              Point("e", 50, 0.20)]
    assert _keys(frontier(points)) == ["e", "a", "c"]
    assert dominates(points[0], points[1]) and not dominates(points[1], points[0])
    assert dominates(points[2], points[3])  # equal latency, better accuracy
    assert not dominates(points[0], points[2]) and not dominates(points[2], points[0])


def test_higher_is_better_accuracy_turns_the_frontier():
    points = [Point("a", 100, 0.70), Point("b", 200, 0.90), Point("c", 150, 0.60)]
    assert _keys(frontier(points, accuracy_lower_is_better=False)) == ["a", "b"]
    assert _keys(frontier(points)) == ["a", "c"]  # the same points read as error rates: b is worse than c


def test_ties_stay_on_the_frontier_together():
    points = [Point("a", 100, 0.1), Point("b", 100, 0.1), Point("c", 100, 0.2), Point("d", 90, 0.1)]
    assert _keys(frontier(points)) == ["d"]  # d is faster at the same accuracy: a and b are off it
    twins = [Point("a", 100, 0.1), Point("b", 100, 0.1), Point("c", 120, 0.2)]
    assert _keys(frontier(twins)) == ["a", "b"]  # neither of two equal points dominates the other
    assert not dominates(twins[0], twins[1])


def test_a_single_model_is_the_frontier_and_missing_figures_never_are():
    assert _keys(frontier([Point("only", 250.0, 0.3)])) == ["only"]
    assert frontier([]) == []
    points = [Point("fast-no-wer", 10.0, None), Point("no-latency", None, 0.0), Point("a", 100.0, 0.2)]
    assert _keys(frontier(points)) == ["a"]  # what has no figure neither joins nor dominates
    assert not dominates(points[0], points[2]) and not dominates(points[2], points[0])


def _data(utterances: list[str], ticks: list[str], latency: list[float | None], errors: list[int | None],
          words: list[int | None], statuses: list[str] | None = None) -> SeriesData:
    return SeriesData(statuses=statuses or ["ok"] * len(utterances), utterances=utterances, ticks=ticks,
                      values={"ttfs_ms": latency, "ttfs_peer_ms": latency, "first_partial_ms": latency,
                              "connect_ms": [None] * len(utterances)},
                      errors=errors, words=words)


def _key(dataset: str, model: str = "m") -> SeriesKey:
    return SeriesKey("stt", model, dataset, "us-east", "10", "stt-stream", "")


def test_pooling_is_one_series_of_all_the_rows_with_clips_named_by_dataset():
    rng = np.random.default_rng(7)
    clean = _data([f"c{i % 4}" for i in range(12)], [f"t{i // 4}" for i in range(12)],
                  list(rng.uniform(200, 300, 12)), [1] * 12, [10] * 12)
    noisy = _data([f"c{i % 4}" for i in range(12)], [f"t{i // 4}" for i in range(12)],
                  list(rng.uniform(400, 500, 12)), [3] * 11 + [None], [10] * 11 + [None],
                  ["ok"] * 11 + ["timeout"])
    found = use_case_series({_key("clean"): clean, _key("noise"): noisy, _key("other"): clean}, "both",
                            ("clean", "noise"))
    assert list(found.series) == [_key("both")] and found.missing == {}
    data = found.series[_key("both")]
    by_hand = SeriesData(statuses=list(clean.statuses) + list(noisy.statuses),
                         utterances=[f"clean/{u}" for u in clean.utterances] + [f"noise/{u}" for u in noisy.utterances],
                         ticks=list(clean.ticks) + list(noisy.ticks),
                         values={m: list(clean.values[m]) + list(noisy.values[m]) for m in clean.values},
                         errors=list(clean.errors) + list(noisy.errors), words=list(clean.words) + list(noisy.words))
    assert series_rows(_key("both"), data) == series_rows(_key("both"), by_hand)
    row = series_rows(_key("both"), data)[0]
    assert row.pooled_wer == pytest.approx((12 * 1 + 11 * 3) / (12 * 10 + 11 * 10))  # sum(S+D+I) / sum(N)
    latencies = [v for v in list(clean.values["ttfs_ms"]) + list(noisy.values["ttfs_ms"][:11])]
    assert row.p50 == pytest.approx(float(np.percentile(latencies, 50)))  # the p50 of the pooled rows
    assert row.utterances == 8  # c0..c3 of clean and c0..c3 of noise are eight utterances, not four
    assert row.p50_ci is not None and row.wer_ci is not None  # the clustered machinery's intervals


def test_a_series_missing_a_dataset_of_the_use_case_has_no_figure():
    clean = _data(["a"] * 5, ["t"] * 5, [1.0] * 5, [0] * 5, [5] * 5)
    found = use_case_series({_key("clean", "both"): clean, _key("noise", "both"): clean, _key("clean", "half"): clean},
                            "u", ["clean", "noise"])
    assert list(found.series) == [_key("u", "both")]
    assert found.missing == {_key("u", "half"): ("noise",)}
    with pytest.raises(ValueError, match="names no dataset"):
        use_case_series({}, "u", [])
    with pytest.raises(ValueError, match="nothing to pool"):
        pooled({})


def test_use_cases_are_named_by_condition_and_language():
    assert use_case_of("clean", "en") == ("clean", "clean audio")
    assert use_case_of("clean", None) == ("clean", "clean audio")
    assert use_case_of("phonecodec", "en-GB") == use_case_of("phone-mulaw", "en") == ("phone", "phone line")
    assert use_case_of("noise", "es") == ("noisy-es", "noisy, es")
    assert use_case_of("car", "en") == ("car", "car")  # an unlisted condition is a use case of its own
    assert use_case_of("reverb", "en") == ("reverberant", "reverberant room")  # WildASR's reverberation (Coval's stt-wildasr-reverb)
    assert use_case_of("accent", "en") == ("accented", "accented speech")  # stt-wildasr-accent, built with condition "accent"
    cases = [UseCase("clean", "clean audio", ("a",)), UseCase("noisy", "noisy", ("b", "c"))]
    assert chosen_use_case(cases, None) == cases[0] and chosen_use_case(cases, "noisy") == cases[1]
    assert chosen_use_case([], None) is None
    with pytest.raises(ValueError, match="the use cases are clean, noisy"):
        chosen_use_case(cases, "underwater")
