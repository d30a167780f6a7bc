"""The published precision of the JSON's numbers and times (voxwatch/metrics/published.py)."""

from __future__ import annotations

from voxwatch.metrics.published import comparison_record, metric_record, p_value, rounded, when


def test_each_unit_has_its_precision_and_a_tiny_p_value_stays_non_zero():
    assert rounded(508.78072799999995, "ms") == 508.8 and rounded(0.16549, "x") == 0.165
    assert rounded(0.15555555555555556, "fraction") == 0.1556 and rounded((1.04, 2.96), "ms") == [1.0, 3.0]
    assert rounded(None, "ms") is None and p_value(3.14159e-9) == 3.14e-9 and p_value(None) is None


def test_a_row_rounds_its_statistics_in_its_unit_and_its_rates_as_fractions():
    row = metric_record({"metric": "ttfs_ms", "n": 7, "p50": 311.54321, "p50_ci": (172.51, 595.049),
                         "pooled_wer": 0.834567, "wer_ci": (0.670012, 0.99812), "note": None}, "ms")
    assert row == {"metric": "ttfs_ms", "n": 7, "p50": 311.5, "p50_ci": [172.5, 595.0], "pooled_wer": 0.8346,
                   "wer_ci": [0.67, 0.9981], "note": None}
    pair = comparison_record({"unit": "fraction", "a": 0.123456, "b": 0.2, "estimate": 0.076544, "ci_low": None,
                              "ci_high": None, "p_value": 0.0123456, "p_holm": 0.0246912, "shown": True})
    assert (pair["a"], pair["estimate"], pair["p_value"], pair["p_holm"]) == (0.1235, 0.0765, 0.0123, 0.0247)


def test_times_are_iso_8601_utc_to_the_millisecond():
    assert when(1796451065.2762022) == "2026-12-05T06:11:05.276Z" and when(None) is None
