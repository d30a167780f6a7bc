"""The comparison page's chart: every model's headline latency (x) against its accuracy (y), each
with its 95 % interval as a whisker, the Pareto frontier (metrics.use_case.frontier) as a step line
through the models on it, and the models off it dimmed.

Drawn as the boards' point charts (board_charts.point_chart): a narrow viewBox scaled to the page,
axes fitted to the models (one far off drawn past a break with its value), each model's number
placed where it covers nothing and named, with its marks, in the legend below; every mark carries
the exact number it draws (data-x, data-y), so a test holds the picture to the table.
"""

from __future__ import annotations

from voxwatch.web.board_charts import PERCENT, S_TOP, SCORE, Point, point_chart

TOP = S_TOP + 20  # the y axis' title is written across, above the plot: a rotated one would not fit its height


def frontier_chart(title: str, x_label: str, y_label: str, points: list[Point], percent: bool) -> str:
    """An SVG element and its legend; y drawn in percent when `percent` (a rate), else as it is (a
    score). Each point says whether it is on the frontier (on_frontier)."""
    return point_chart("frontier", title, x_label, y_label, points, PERCENT if percent else SCORE, top=TOP,
                       y_title_across=True)
