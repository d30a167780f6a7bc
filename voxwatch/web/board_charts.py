"""Server-side SVG charts that compare the models of one ranking: a bar per model (its headline p50
with its 95 % interval as a whisker), latency against WER and latency against price (one point per model).

Each chart is drawn in a narrow coordinate box (WIDTH units) and scaled by the stylesheet to the
width it is given (`width: 100%`), so on a phone its text stays near its drawn size instead of
shrinking with a wide drawing. Every mark carries the exact number it draws (data-value, data-low,
data-high, data-x, data-y: the MetricRow's own floats), so a test can hold the picture to the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from voxwatch.web.chart import nice_ticks

WIDTH = 400
FONT = 13
BAR_ROW = 40  # a label line above each bar
BAR_LEFT, BAR_RIGHT, BAR_TOP, BAR_AXIS = 8, 64, 30, 34
PLOT_HEIGHT = 240
LEGEND_ROW = 18
S_LEFT, S_RIGHT, S_TOP, S_BOTTOM = 58, 16, 30, 46
COLOR, WHISKER = "#1f77b4", "#14324f"


@dataclass(frozen=True)
class Bar:
    label: str
    key: str  # the table row it draws (its data-key)
    value: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Point:
    label: str
    key: str
    x: float
    y: float  # a rate (drawn in percent), or US dollars (scatter's dollars=True)


def _tick(v: float) -> str:
    return f"{v:.4g}" if abs(v) < 10 else f"{v:,.0f}"


def _open(kind: str, title: str, height: float) -> list[str]:
    return [f'<svg xmlns="http://www.w3.org/2000/svg" class="board-chart {kind}" role="img" '
            f'viewBox="0 0 {WIDTH} {height:.0f}" preserveAspectRatio="xMinYMin meet" font-family="sans-serif" '
            f'font-size="{FONT}">',
            f"<title>{escape(title)}</title>",
            f'<text x="0" y="16" font-size="{FONT + 1}" font-weight="bold">{escape(title)}</text>']


def interval_bars(title: str, unit: str, bars: list[Bar]) -> str:
    """Horizontal bars from 0 to each value, a whisker over [low, high], the value printed after it."""
    top_value = max([b.high if b.high is not None else b.value for b in bars] + [b.value for b in bars], default=1.0)
    ticks = nice_ticks(top_value, 4)
    plot_w = WIDTH - BAR_LEFT - BAR_RIGHT
    height = BAR_TOP + len(bars) * BAR_ROW + BAR_AXIS

    def x(v: float) -> float:
        return BAR_LEFT + max(0.0, v) / ticks[-1] * plot_w

    out = _open("bars", title, height)
    bottom = BAR_TOP + len(bars) * BAR_ROW
    for t in ticks:
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{BAR_TOP}" y2="{bottom}" stroke="#e4e4e4"/>')
        out.append(f'<text class="x-tick" x="{x(t):.1f}" y="{bottom + 16}" text-anchor="middle">{_tick(t)}</text>')
    out.append(f'<text x="{BAR_LEFT + plot_w / 2:.1f}" y="{bottom + 31}" text-anchor="middle">{escape(unit)}</text>')
    for i, b in enumerate(bars):
        y0 = BAR_TOP + i * BAR_ROW
        low_high = (f' data-low="{b.low!r}" data-high="{b.high!r}"' if b.low is not None and b.high is not None
                    else "")
        out.append(f'<g class="bar" data-key="{escape(b.key)}" data-value="{b.value!r}"{low_high}>')
        out.append(f'<text class="label" x="{BAR_LEFT}" y="{y0 + 13}">{escape(b.label)}</text>')
        out.append(f'<rect x="{BAR_LEFT}" y="{y0 + 18}" width="{x(b.value) - BAR_LEFT:.1f}" height="14" '
                   f'fill="{COLOR}" fill-opacity="0.75"><title>{escape(b.label)}: {_tick(b.value)} {escape(unit)}'
                   f"</title></rect>")
        if low_high:
            mid = y0 + 25
            out.append(f'<path d="M{x(b.low):.1f},{mid} H{x(b.high):.1f} M{x(b.low):.1f},{mid - 6} V{mid + 6} '
                       f'M{x(b.high):.1f},{mid - 6} V{mid + 6}" stroke="{WHISKER}" stroke-width="1.5" fill="none"/>')
        end = x(b.high) if low_high else x(b.value)
        out.append(f'<text class="value" x="{end + 4:.1f}" y="{y0 + 30}">{_tick(b.value)}</text>')
        out.append("</g>")
    out.append(f'<line x1="{BAR_LEFT}" x2="{BAR_LEFT}" y1="{BAR_TOP}" y2="{bottom}" stroke="#555"/>')
    out.append("</svg>")
    return "\n".join(out)


def span_ticks(low: float, high: float, count: int = 4) -> list[float]:
    """Round ticks covering [low, high] (not from 0: a scatter's points would crowd one corner), a
    nice_ticks step apart; never below 0 when no value is."""
    step = nice_ticks(max(high - low, abs(high) * 0.1, 1e-9), count)[1]
    start = math.floor(low / step) * step
    return [start + i * step for i in range(math.ceil((high - start) / step - 1e-9) + 1)]


@dataclass(frozen=True)
class Plane:
    """A scatter's plot area: its ticks (in drawn units: a rate's in percent), where it starts, and
    how a value maps to drawn units (`scale`: 100 for a rate drawn in percent)."""
    x_ticks: list[float]
    y_ticks: list[float]
    top: float
    scale: float
    width: float = WIDTH - S_LEFT - S_RIGHT
    height: float = PLOT_HEIGHT

    @classmethod
    def spanning(cls, xs: list[float], ys: list[float], top: float, scale: float, from_zero: bool = False) -> "Plane":
        """The plane whose axes span the values (ys in drawn units), with at least two ticks each;
        `from_zero`: both axes start at 0, so a gap between points reads at its true size."""
        if from_zero:
            xs, ys = [0.0, *xs], [0.0, *ys]
        x_ticks, y_ticks = span_ticks(min(xs), max(xs)), span_ticks(min(ys), max(ys))
        for ticks in (x_ticks, y_ticks):
            if len(ticks) < 2:
                ticks.append(ticks[0] + 1)
        return cls(x_ticks, y_ticks, top, scale)

    def x(self, v: float) -> float:
        return S_LEFT + (v - self.x_ticks[0]) / (self.x_ticks[-1] - self.x_ticks[0]) * self.width

    def y(self, v: float) -> float:
        """A value (not in drawn units) to its place."""
        share = (self.scale * v - self.y_ticks[0]) / (self.y_ticks[-1] - self.y_ticks[0])
        return self.top + self.height - share * self.height

    def grid(self, out: list[str], y_tick_text) -> None:
        """The grid lines and the ticks' numbers (`y_tick_text` writes a y tick in drawn units)."""
        bottom = self.top + self.height
        for t in self.x_ticks:
            out.append(f'<line x1="{self.x(t):.1f}" x2="{self.x(t):.1f}" y1="{self.top}" y2="{bottom}" stroke="#eee"/>')
            out.append(f'<text class="x-tick" x="{self.x(t):.1f}" y="{bottom + 16}" text-anchor="middle">'
                       f"{_tick(t)}</text>")
        for t in self.y_ticks:
            yt = self.y(t / self.scale)
            out.append(f'<line x1="{S_LEFT}" x2="{S_LEFT + self.width}" y1="{yt:.1f}" y2="{yt:.1f}" stroke="#eee"/>')
            out.append(f'<text class="y-tick" x="{S_LEFT - 5}" y="{yt + 4:.1f}" text-anchor="end">{y_tick_text(t)}</text>')

    def frame(self) -> str:
        bottom = self.top + self.height
        return (f'<polyline points="{S_LEFT},{self.top} {S_LEFT},{bottom} {S_LEFT + self.width},{bottom}" '
                f'fill="none" stroke="#555"/>')


def scatter(title: str, x_label: str, y_label: str, points: list[Point], dollars: bool = False) -> str:
    """One numbered point per model (the number is its line in the table, named in the legend
    below), x a latency, y a rate drawn in percent (or, `dollars`, a price in US dollars); both axes
    start at 0 (no whiskers here to give a gap its scale: 72 % against 74 % on an axis spanning just
    those would look like a chasm)."""
    scale = 1.0 if dollars else 100.0

    def y_text(v: float) -> str:  # v in drawn units
        return f"${v:,.2f}" if dollars else f"{v:.2f}%"

    plane = Plane.spanning([p.x for p in points], [scale * p.y for p in points], S_TOP, scale, from_zero=True)
    plot_w, plot_h = plane.width, plane.height
    height = S_TOP + plot_h + S_BOTTOM + len(points) * LEGEND_ROW + 6
    x, y = plane.x, plane.y

    out = _open("scatter", title, height)
    plane.grid(out, lambda t: ("$" + _tick(t)) if dollars else _tick(t) + "%")
    out.append(f'<text x="{S_LEFT + plot_w / 2:.1f}" y="{S_TOP + plot_h + 34}" text-anchor="middle">'
               f"{escape(x_label)}</text>")
    mid = S_TOP + plot_h / 2
    out.append(f'<text x="14" y="{mid:.1f}" text-anchor="middle" transform="rotate(-90 14 {mid:.1f})">'
               f"{escape(y_label)}</text>")
    out.append(plane.frame())
    legend_top = S_TOP + plot_h + S_BOTTOM
    for i, p in enumerate(points, 1):
        px, py = x(p.x), y(p.y)
        out.append(f'<g class="point{" price" if dollars else ""}" data-key="{escape(p.key)}" data-x="{p.x!r}" '
                   f'data-y="{p.y!r}">')
        out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="5" fill="{COLOR}"><title>{escape(p.label)}: '
                   f"{_tick(p.x)}, {y_text(scale * p.y)}</title></circle>")
        out.append(f'<text class="number" x="{px + 7:.1f}" y="{py - 5:.1f}" font-weight="bold">{i}</text>')
        out.append(f'<text class="label" x="8" font-size="{FONT - 1}" y="{legend_top + (i - 1) * LEGEND_ROW:.1f}">{i}: '
                   f"{escape(p.label)} ({_tick(p.x)}, {y_text(scale * p.y)})</text>")
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)
