"""Server-side SVG line charts: the page needs no JavaScript and loads nothing from elsewhere.

One chart is one metric on one dataset over the history's days; each line is one series' daily
p50 or p95. A day without a value (no rows, or n < 5) breaks the line rather than bridging it, so
a gap is never drawn as data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
WIDTH, PLOT_HEIGHT = 760, 220
LEFT, RIGHT, TOP, AXIS_BELOW = 70, 20, 34, 46
LEGEND_ROW, LEGEND_COLUMNS = 18, 3


@dataclass(frozen=True)
class Line:
    label: str
    color: str
    dashed: bool
    points: list[tuple[int, float]]  # (index into the chart's days, value), days ascending


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """Ticks from 0 up to at least `high`, a round step apart (1, 2, 2.5 or 5 times a power of ten)."""
    high = high if high > 0 else 1.0
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    return [i * step for i in range(math.ceil(high / step - 1e-9) + 1)]


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


def line_chart(title: str, unit: str, days: list[str], lines: list[Line]) -> str:
    """An SVG document fragment: axes with ticks and labels, one polyline per line, a legend below."""
    ticks = nice_ticks(max((v for line in lines for _, v in line.points), default=1.0))
    plot_w = WIDTH - LEFT - RIGHT
    legend_rows = math.ceil(len(lines) / LEGEND_COLUMNS)
    height = TOP + PLOT_HEIGHT + AXIS_BELOW + legend_rows * LEGEND_ROW + 8

    def x(i: int) -> float:
        return LEFT + i * plot_w / max(1, len(days) - 1)

    def y(v: float) -> float:
        return TOP + PLOT_HEIGHT - v / ticks[-1] * PLOT_HEIGHT

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">',
           f"<title>{escape(title)}</title>",
           f'<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>']
    for t in ticks:  # horizontal grid and y labels
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text class="y-tick" x="{LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{_number(t)}</text>')
    out.append(f'<text x="14" y="{TOP + PLOT_HEIGHT / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {TOP + PLOT_HEIGHT / 2:.1f})">{escape(unit)}</text>')
    every = max(1, math.ceil(len(days) / 8))
    for i, day in enumerate(days):
        if i % every == 0 or i == len(days) - 1:
            out.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{TOP + PLOT_HEIGHT}" y2="{TOP + PLOT_HEIGHT + 4}" '
                       f'stroke="#555"/>')
            out.append(f'<text class="x-tick" x="{x(i):.1f}" y="{TOP + PLOT_HEIGHT + 16}" '
                       f'text-anchor="middle">{escape(day[5:])}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{TOP + PLOT_HEIGHT + 32}" text-anchor="middle">'
               f'day (UTC)</text>')
    out.append(f'<polyline points="{LEFT},{TOP} {LEFT},{TOP + PLOT_HEIGHT} {WIDTH - RIGHT},{TOP + PLOT_HEIGHT}" '
               f'fill="none" stroke="#555"/>')
    for line in lines:
        dash = ' stroke-dasharray="5 3"' if line.dashed else ""
        label = escape(line.label)
        out.append(f'<g class="series" data-label="{label}">')
        for run in _segments(line.points):
            coords = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in run)
            out.append(f'<polyline points="{coords}" fill="none" stroke="{line.color}" stroke-width="1.5"{dash}/>')
        for i, v in line.points:
            out.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{line.color}">'
                       f"<title>{label} {escape(days[i])}: {_number(v)} {escape(unit)}</title></circle>")
        out.append("</g>")
    legend_top = TOP + PLOT_HEIGHT + AXIS_BELOW
    column_w = plot_w / LEGEND_COLUMNS
    for k, line in enumerate(lines):
        lx, ly = LEFT + (k % LEGEND_COLUMNS) * column_w, legend_top + (k // LEGEND_COLUMNS) * LEGEND_ROW
        dash = ' stroke-dasharray="5 3"' if line.dashed else ""
        out.append(f'<line x1="{lx:.1f}" x2="{lx + 22:.1f}" y1="{ly:.1f}" y2="{ly:.1f}" stroke="{line.color}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text class="legend" x="{lx + 28:.1f}" y="{ly + 4:.1f}">{escape(line.label)}</text>')
    out.append("</svg>")
    return "\n".join(out)
