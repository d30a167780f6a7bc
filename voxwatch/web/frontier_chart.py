"""The comparison page's chart: every model's headline latency (x) against its accuracy (y), each
with its 95 % interval as a whisker, the Pareto frontier (metrics.use_case.frontier) as a step line
through the models on it, and the models off it dimmed.

Drawn like the boards' scatter (board_charts): a narrow viewBox scaled to the page, numbered points
named in a legend below, every mark carrying the exact number it draws (data-x, data-y), so a test
holds the picture to the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from voxwatch.web.board_charts import COLOR, FONT, LEGEND_ROW, S_BOTTOM, S_LEFT, S_TOP, WHISKER, Plane, _open, _tick

DIMMED = "0.3"
TOP = S_TOP + 20  # the y axis' title is written across, above the plot: a rotated one would not fit its height
FRONTIER_COLOR = "#d62728"


@dataclass(frozen=True)
class Mark:
    label: str
    key: str
    x: float
    y: float
    x_ci: tuple[float, float] | None
    y_ci: tuple[float, float] | None
    on_frontier: bool


def frontier_chart(title: str, x_label: str, y_label: str, marks: list[Mark], percent: bool) -> str:
    """An SVG element; y drawn in percent when `percent` (a rate), else as it is (a score)."""
    scale = 100.0 if percent else 1.0

    def y_text(v: float) -> str:
        return f"{scale * v:.2f}%" if percent else f"{v:.2f}"

    xs = [v for m in marks for v in (m.x, *(m.x_ci or ()))]
    ys = [scale * v for m in marks for v in (m.y, *(m.y_ci or ()))]
    plane = Plane.spanning(xs, ys, TOP, scale)
    plot_w, plot_h = plane.width, plane.height
    height = TOP + plot_h + S_BOTTOM + len(marks) * LEGEND_ROW + 6
    x, y = plane.x, plane.y

    out = _open("frontier", title, height)
    plane.grid(out, lambda t: _tick(t) + ("%" if percent else ""))
    out.append(f'<text class="axis-title" x="{S_LEFT + plot_w / 2:.1f}" y="{TOP + plot_h + 34}" '
               f'text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text class="axis-title" x="8" y="{TOP - 10}">{escape(y_label)}</text>')
    out.append(plane.frame())
    legend_top = TOP + plot_h + S_BOTTOM
    for i, m in enumerate(marks, 1):
        px, py = x(m.x), y(m.y)
        dim = "" if m.on_frontier else f' opacity="{DIMMED}"'
        out.append(f'<g class="point{"" if m.on_frontier else " dimmed"}" data-key="{escape(m.key)}" '
                   f'data-x="{m.x!r}" data-y="{m.y!r}"{dim}>')
        whiskers = []
        if m.x_ci:
            whiskers.append(f"M{x(m.x_ci[0]):.1f},{py:.1f} H{x(m.x_ci[1]):.1f}")
        if m.y_ci:
            whiskers.append(f"M{px:.1f},{y(m.y_ci[0]):.1f} V{y(m.y_ci[1]):.1f}")
        if whiskers:
            out.append(f'<path class="whisker" d="{" ".join(whiskers)}" stroke="{WHISKER}" stroke-width="1.2" '
                       f'fill="none"/>')
        out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="5" fill="{COLOR}"><title>{escape(m.label)}: '
                   f"{_tick(m.x)}, {y_text(m.y)}</title></circle>")
        out.append(f'<text class="number" x="{px + 7:.1f}" y="{py - 5:.1f}" font-weight="bold">{i}</text>')
        out.append(f'<text class="label" x="8" font-size="{FONT - 1}" y="{legend_top + (i - 1) * LEGEND_ROW:.1f}">'
                   f'{i}: {escape(m.label)} ({_tick(m.x)}, {y_text(m.y)}){"" if m.on_frontier else ", off the frontier"}'
                   f"</text>")
        out.append("</g>")
    on = sorted((m for m in marks if m.on_frontier), key=lambda m: m.x)
    if on:  # drawn over the points; a staircase: along at one model's accuracy to the next model's latency, then to its accuracy
        steps = f"M{x(on[0].x):.1f},{y(on[0].y):.1f}" + "".join(f" H{x(m.x):.1f} V{y(m.y):.1f}" for m in on[1:])
        out.append(f'<path class="frontier" d="{steps}" fill="none" stroke="{FRONTIER_COLOR}" stroke-width="2" '
                   f'data-keys="{escape(" ".join(m.key for m in on))}"/>')
    out.append("</svg>")
    return "\n".join(out)
