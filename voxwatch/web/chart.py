"""Server-side SVG line charts: the page needs no JavaScript and loads nothing from elsewhere.

One chart is one quantity on one dataset over the history's days; each line is one series' daily
value. A day without a value (no rows, or under the statistic's floor) breaks the line rather than
bridging it, so a gap is never drawn as data. A method change is a vertical marker on the day the
new version's first value is, labelled with the version.

Charts scale with the page (a viewBox, 100 % wide): the box is narrow and its text large enough
that at a phone's width (about 340 px of chart) the labels render at 11 px; wider screens set a
smaller font size in the stylesheet (pages.css). The title and legend are the page's HTML, which
wraps, not the SVG's. The y axis is fitted to the days' values (chart_layout.fitted_axis): a day far
above the others is drawn past a break at the top, marked with its value, and the chart says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from voxwatch.web.chart_layout import Box, Placer, fitted_axis, point_box

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
WIDTH, PLOT_HEIGHT = 520, 200
LEFT, RIGHT, TOP, AXIS_BELOW = 62, 14, 28, 46
FONT_SIZE = 17
"""In the viewBox's units: 520 units drawn 340 px wide put it at 11 px."""
X_LABELS = 5
FADED_OPACITY = "0.45"


@dataclass(frozen=True)
class Line:
    label: str
    color: str
    dashed: bool
    points: list[tuple[int, float]]  # (index into the chart's days, value), days ascending
    faded: bool = False  # a superseded method version's series: drawn lighter


@dataclass(frozen=True)
class Marker:
    """A vertical line at a day (index into the chart's days), labelled: a method change."""
    index: int
    label: str


def _number(v: float) -> str:
    return f"{v:.4g}" if abs(v) < 10 else f"{v:,.0f}"


def _segments(points: list[tuple[int, float]]) -> list[list[tuple[int, float]]]:
    """Runs of consecutive days."""
    runs: list[list[tuple[int, float]]] = []
    for p in points:
        if runs and p[0] == runs[-1][-1][0] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs


def _stroke(line: Line, width: str) -> str:
    dash = ' stroke-dasharray="5 3"' if line.dashed else ""
    fade = f' stroke-opacity="{FADED_OPACITY}"' if line.faded else ""
    return f'stroke="{line.color}" stroke-width="{width}"{dash}{fade}'


def swatch(line: Line) -> str:
    """A short sample of a line's stroke, for the legend the page writes beside the chart."""
    return (f'<svg width="26" height="10" viewBox="0 0 26 10" aria-hidden="true"><line x1="1" x2="25" y1="5" y2="5" '
            f'{_stroke(line, "2.5")}/></svg>')


def line_chart(title: str, unit: str, days: list[str], lines: list[Line], markers: list[Marker] = ()) -> str:
    """An SVG element: axes with ticks and labels, one polyline per line, a dashed vertical line per marker."""
    axis = fitted_axis([v for line in lines for _, v in line.points] or [1.0], [], TOP + PLOT_HEIGHT, TOP,
                       from_zero=True, count=5)
    ticks = axis.ticks
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + PLOT_HEIGHT + AXIS_BELOW

    def x(i: int) -> float:
        return LEFT + i * plot_w / max(1, len(days) - 1)

    def y(v: float) -> float:
        return axis.at(v)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 {WIDTH} {height}" '
           f'preserveAspectRatio="xMidYMid meet" font-family="sans-serif" font-size="{FONT_SIZE}">',
           f"<title>{escape(title)}</title>"]
    for t in ticks:  # horizontal grid and y labels
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text class="y-tick" x="{LEFT - 6}" y="{y(t) + 5:.1f}" text-anchor="end">{_number(t)}</text>')
    out.append(f'<text x="16" y="{TOP + PLOT_HEIGHT / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {TOP + PLOT_HEIGHT / 2:.1f})">{escape(unit)}</text>')
    every = max(1, math.ceil(len(days) / X_LABELS))
    for i, day in enumerate(days):
        if i % every == 0 and (i + every // 2 < len(days) or i == 0):  # none crowding the last day's
            _x_tick(out, x(i), day)
    if len(days) > 1:
        _x_tick(out, x(len(days) - 1), days[-1], "end")  # inside the box
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{TOP + PLOT_HEIGHT + 40}" text-anchor="middle">'
               f'day (UTC)</text>')
    out.append(f'<polyline points="{LEFT},{TOP} {LEFT},{TOP + PLOT_HEIGHT} {WIDTH - RIGHT},{TOP + PLOT_HEIGHT}" '
               f'fill="none" stroke="#555"/>')
    out.extend(f'<g class="axis-break"><rect x="{LEFT - 7}" y="{b - 4:.1f}" width="14" height="8" fill="white"/>'
               f'<path d="M{LEFT - 7},{b + 2:.1f} L{LEFT + 7},{b - 4:.1f} M{LEFT - 7},{b + 4:.1f} L{LEFT + 7},{b - 2:.1f}" '
               f'stroke="#555"/></g>' for b in axis.breaks)
    for m in markers:
        mx = x(m.index)
        anchor, dx = ("end", -4) if mx > LEFT + plot_w / 2 else ("start", 4)
        out.append(f'<g class="method-change" data-day="{escape(days[m.index])}">'
                   f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{TOP - 6}" y2="{TOP + PLOT_HEIGHT}" stroke="#8a4b00" '
                   f'stroke-width="1.5" stroke-dasharray="2 3"/>'
                   f'<text x="{mx + dx:.1f}" y="{TOP - 10}" text-anchor="{anchor}" fill="#8a4b00">{escape(m.label)}</text></g>')
    above = [(line, i, v) for line in lines for i, v in line.points if axis.off(v) > 0]
    placer = Placer(Box(LEFT, TOP, WIDTH - RIGHT, TOP + PLOT_HEIGHT), [point_box(x(i), y(v), 4) for _, i, v in above])
    for line, i, v in above:  # a day off the scale: its value beside it, where it covers no other
        spot = placer.place(x(i), y(v), 4, f"{_number(v)} ↑", FONT_SIZE)
        out.append(f'<text class="outlier" x="{spot.x:.1f}" y="{spot.baseline:.1f}" fill="{line.color}">'
                   f'{escape(_number(v))} ↑</text>')
    for line in lines:
        label = escape(line.label)
        out.append(f'<g class="series" data-label="{label}">')
        for run in _segments(line.points):
            coords = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in run)
            out.append(f'<polyline points="{coords}" fill="none" {_stroke(line, "2")}/>')
        for i, v in line.points:
            fade = f' fill-opacity="{FADED_OPACITY}"' if line.faded else ""
            out.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{line.color}"{fade}>'
                       f"<title>{label} {escape(days[i])}: {_number(v)} {escape(unit)}</title></circle>")
        out.append("</g>")
    out.append("</svg>")
    note = ('<p class="chart-note" data-field="axis-note">The axis is fitted to the days shown: a day far above '
            'the others is drawn past the break at the top, with its value.</p>') if above else ""
    return "\n".join(out) + note


def _x_tick(out: list[str], at: float, day: str, anchor: str = "middle") -> None:
    out.append(f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{TOP + PLOT_HEIGHT}" y2="{TOP + PLOT_HEIGHT + 4}" stroke="#555"/>')
    out.append(f'<text class="x-tick" x="{at:.1f}" y="{TOP + PLOT_HEIGHT + 20}" text-anchor="{anchor}">{escape(day[5:])}</text>')
