"""web/chart_layout (issue #40 part 4): axes fitted to the points with a far value drawn past a
break, and labels placed so that none covers another or a point. The drawing of these in a browser
is tests/test_web_charts.py's; here the geometry the charts are built on."""

from __future__ import annotations

import itertools
import re

import numpy as np

from voxwatch.web.board_charts import PERCENT, Point, point_chart
from voxwatch.web.chart import Line, line_chart
from voxwatch.web.chart_layout import Box, Placer, fitted, fitted_axis, point_box, text_width


def test_one_far_value_is_off_the_scale_and_a_spread_is_not():
    cluster = [257.0, 266.0, 275.0, 288.0, 301.0]
    fit = fitted(cluster + [1400.0])
    assert (fit.low, fit.high, fit.above, fit.below) == (257.0, 301.0, True, False)
    assert fitted(cluster + [1400.0], from_zero=True).low == 0.0
    assert not fitted([250.0, 320.0, 400.0, 500.0]).above  # spread out: every value on the scale
    assert not fitted([0.33, 0.4, 0.5, 1.0]).above  # 100 % adherence beside 33-50 %: on the scale
    assert fitted([5.0, 400.0, 410.0, 420.0]).below and not fitted([5.0, 400.0, 410.0, 420.0], from_zero=True).below


def test_the_axis_gives_the_outlier_a_zone_past_its_end_and_cuts_far_intervals():
    axis = fitted_axis([257.0, 266.0, 301.0, 1400.0], [250.0, 320.0, 3697.0], 58.0, 384.0)
    assert axis.ticks[0] <= 250.0 and 320.0 <= axis.ticks[-1] < 1400.0  # near interval ends widen it, far ones do not
    assert axis.off(1400.0) == 1 and axis.at(1400.0) == axis.above_at and axis.end < axis.above_at <= 384.0
    assert axis.off(3697.0) == 1 and axis.clip(3697.0) == axis.end  # a whisker is cut at the scale's end
    assert axis.at(257.0) < axis.at(301.0) < axis.end and len(axis.breaks) == 1


def test_text_width_is_an_upper_bound_of_dejavu_sans():
    # DejaVu Sans' advances (em): digits 0.636, 'm' 0.974, '.' 0.318; the estimate is never narrower
    assert text_width("1,398", 13) >= 13 * (4 * 0.636 + 0.318)
    assert text_width("mm", 10) >= 10 * 2 * 0.974
    assert text_width("12", 13, bold=True) >= 13 * 2 * 0.696


def test_placed_labels_never_cover_each_other_nor_a_point():
    rng = np.random.default_rng(3)
    bounds = Box(58, 50, 384, 290)
    points = [(float(x), float(y)) for x, y in zip(rng.uniform(200, 240, 12), rng.uniform(150, 190, 12))]
    placer = Placer(bounds, [point_box(x, y, 7) for x, y in points])
    boxes = [placer.place(x, y, 7, f"{i} baseline" if i % 4 == 0 else str(i), 13, bold=True).box
             for i, (x, y) in enumerate(points, 1)]
    assert all(b.within(bounds) for b in boxes)
    assert not any(a.hits(b) for a, b in itertools.combinations(boxes, 2))
    assert not any(b.hits(point_box(x, y, 7)) for b in boxes for x, y in points)


def test_a_point_chart_numbers_and_marks_its_points_and_says_what_it_cut():
    points = [Point(f"acme/m{i} (us-east)", f"k{i}", x, 0.03 + 0.001 * i, number=n, marks=marks)
              for i, (x, n, marks) in enumerate([(257.0, 4, ()), (266.0, 7, ("baseline",)), (288.0, 9, ()),
                                                  (301.0, 2, ("preliminary",)), (1400.0, 5, ("retiring 2027-01-20",))])]
    svg = point_chart("scatter", "t", "x", "y", points, PERCENT, from_zero=True)
    drawn = re.findall(r'<g class="[^"]*" data-key="(k\d)" data-x="[^"]+" data-y="[^"]+" data-number="(\d)"', svg)
    assert drawn == [("k0", "4"), ("k1", "7"), ("k2", "9"), ("k3", "2"), ("k4", "5")]
    assert '<text class="number outlier"' in svg and "5 (1,400 ms →)" in svg and 'class="chart-note"' in svg
    assert ">7 baseline</text>" in svg  # a baseline is named on the plot, not only in the legend
    legend = re.findall(r'<li data-key="(k\d)" data-number="(\d)"><b>\d</b> ([^<]*)</li>', svg)
    assert [n for _, n, _ in legend] == ["2", "4", "5", "7", "9"]  # the legend in number order
    assert dict((k, words) for k, _, words in legend)["k4"] == "acme/m4 (us-east): 1,400 ms, 3.40% (retiring 2027-01-20)"
    assert 'class="chart-note"' not in point_chart("scatter", "t", "x", "y", points[:4], PERCENT, from_zero=True)


def test_a_history_day_far_above_the_others_is_drawn_at_the_top_with_its_value():
    days = [f"2026-12-{d:02d}" for d in range(1, 11)]
    steady = Line("us-east", "#1f77b4", False, [(i, 300.0 + 5 * (i % 3)) for i in range(10)])
    spiked = Line("eu-west", "#d62728", False, [(i, 320.0 if i != 6 else 4200.0) for i in range(10)])
    svg = line_chart("TTFS p50", "ms", days, [steady, spiked])
    ticks = [float(t.replace(",", "")) for t in re.findall(r'<text class="y-tick"[^>]*>([^<]+)</text>', svg)]
    assert max(ticks) < 1000 and ticks[0] == 0  # fitted to the days, from 0, not stretched to 4,200
    assert re.findall(r'<text class="outlier"[^>]*>([^<]+)</text>', svg) == ["4,200 ↑"]
    assert 'class="axis-break"' in svg and 'class="chart-note"' in svg
    assert 'class="chart-note"' not in line_chart("TTFS p50", "ms", days, [steady])
