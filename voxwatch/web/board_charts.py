"""Server-side SVG charts that compare the models of one ranking: a bar per model (its headline p50
with its 95 % interval as a whisker), and points (latency against WER, against price, or against
accuracy with the frontier: frontier_chart).

Each chart is drawn in a narrow coordinate box (WIDTH units) and scaled by the stylesheet to the
width it is given (`width: 100%`), so on a phone its text stays near its drawn size instead of
shrinking with a wide drawing. Every mark carries the exact number it draws (data-value, data-low,
data-high, data-x, data-y: the figure's own floats), so a test can hold the picture to the table.

A model has one number on a page (its `number`: the page's numbering, so the same model is the same
number on every chart beside it); a point is labelled by its number only, placed where it covers
nothing (chart_layout.Placer), and named in the legend below the drawing: HTML, which wraps at a
phone's width, with the model's marks (boards.marks: baseline, preliminary, retiring...). Axes are
fitted to the points (chart_layout.fitted_axis): one far off is drawn past a break with its value,
and the chart says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from html import escape
from typing import Callable

from voxwatch.web.chart_layout import Axis, Box, Placer, fitted_axis, leader, point_box, segment_box, text_width

WIDTH = 400
FONT = 13
LABEL_LINE = 16  # a bar's label line
BAR_GAP, BAR_HEIGHT = 4, 14
BAR_LEFT, BAR_RIGHT, BAR_TOP, BAR_AXIS = 8, 64, 30, 40
PLOT_HEIGHT = 240
S_LEFT, S_RIGHT, S_TOP, S_BOTTOM = 58, 16, 30, 48
TICK_BELOW, TITLE_BELOW = 20, 38
"""Baselines under the plot of the x ticks' numbers and the axis' title: each clear of the other, the
first tick's clear of the last y tick's (their boxes are 1.17 em tall: chart_layout.ASCENT + DESCENT)."""
COLOR, WHISKER, BASELINE_COLOR, FRONTIER_COLOR = "#1f77b4", "#14324f", "#8a4b00", "#d62728"
DIMMED = "0.3"
RADIUS = 5.0
AXIS_NOTE = ("Axes fitted to the models shown: a model beyond an axis is drawn past the break at its end, with its "
             "value; an interval that runs past an axis ends in an arrow there.")


@dataclass(frozen=True)
class Bar:
    label: str
    key: str  # the table row it draws (its data-key)
    value: float
    low: float | None
    high: float | None
    number: int = 0  # the model's number on the page (0: none)
    marks: tuple[str, ...] = ()  # boards.marks' words


@dataclass(frozen=True)
class Point:
    label: str
    key: str
    x: float
    y: float  # a rate (drawn in percent), US dollars, or a score
    number: int = 0
    marks: tuple[str, ...] = ()
    x_ci: tuple[float, float] | None = None
    y_ci: tuple[float, float] | None = None
    on_frontier: bool | None = None  # None: a chart without a frontier

    @property
    def baseline(self) -> bool:
        return "baseline" in self.marks


def _tick(v: float) -> str:
    return f"{v:.4g}" if abs(v) < 10 else f"{v:,.0f}"


def _open(kind: str, title: str, height: float) -> list[str]:
    return [f'<svg xmlns="http://www.w3.org/2000/svg" class="board-chart {kind}" role="img" '
            f'viewBox="0 0 {WIDTH} {height:.0f}" preserveAspectRatio="xMinYMin meet" font-family="sans-serif" '
            f'font-size="{FONT}">',
            f"<title>{escape(title)}</title>",
            f'<text class="chart-title" x="0" y="16" font-size="{FONT + 1}" font-weight="bold">{escape(title)}</text>']


def _named(number: int, label: str, marks: tuple[str, ...]) -> str:
    """A model as a legend or a bar names it: its number, its label, its marks."""
    return (f"{number}: " if number else "") + label + (f" ({', '.join(marks)})" if marks else "")


def _wrapped(text: str, width: float, size: float) -> list[str]:
    """A text's lines no wider than `width` (broken at spaces; a word longer than a line stands alone)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and text_width(lines[-1] + " " + word, size) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _arrow(x: float, y: float, dx: float, dy: float, color: str) -> str:
    """A small arrowhead at (x, y) pointing along (dx, dy): where a whisker is cut at an axis."""
    px, py = -dy, dx
    return (f'<path class="cut" d="M{x + 5 * dx:.1f},{y + 5 * dy:.1f} L{x + 4 * px:.1f},{y + 4 * py:.1f} '
            f'L{x - 4 * px:.1f},{y - 4 * py:.1f} Z" fill="{color}"/>')


def _break(x: float, y: float, vertical: bool) -> str:
    """The break in an axis line at (x, y): a white gap crossed by two slanted strokes."""
    if vertical:
        return (f'<g class="axis-break"><rect x="{x - 5:.1f}" y="{y - 3:.1f}" width="10" height="6" fill="white"/>'
                f'<path d="M{x - 5:.1f},{y + 1:.1f} L{x + 5:.1f},{y - 3:.1f} M{x - 5:.1f},{y + 3:.1f} '
                f'L{x + 5:.1f},{y - 1:.1f}" stroke="#555"/></g>')
    return (f'<g class="axis-break"><rect x="{x - 3:.1f}" y="{y - 5:.1f}" width="6" height="10" fill="white"/>'
            f'<path d="M{x - 3:.1f},{y + 5:.1f} L{x + 1:.1f},{y - 5:.1f} M{x - 1:.1f},{y + 5:.1f} '
            f'L{x + 3:.1f},{y - 5:.1f}" stroke="#555"/></g>')


def legend(kind: str, entries: list[tuple[str, int, str]]) -> str:
    """The chart's legend as HTML (it wraps): (key, number, words) per model, in number order."""
    items = "".join(f'<li data-key="{escape(key)}" data-number="{number}"><b>{number}</b> {escape(words)}</li>'
                    for key, number, words in sorted(entries, key=lambda e: e[1]))
    return f'<ul class="chart-legend" data-chart="{kind}">{items}</ul>'


def note(cut: bool) -> str:
    """What a fitted axis did, said under the chart (or nothing, when it drew everything on its scale)."""
    return f'<p class="chart-note" data-field="axis-note">{AXIS_NOTE}</p>' if cut else ""


def interval_bars(title: str, unit: str, bars: list[Bar]) -> str:
    """Horizontal bars from 0 to each value, a whisker over [low, high], the value printed after it;
    a value far beyond the others drawn past the axis' break, an interval past it cut with an arrow."""
    plot_w = WIDTH - BAR_LEFT - BAR_RIGHT
    axis = fitted_axis([b.value for b in bars], [e for b in bars for e in (b.low, b.high) if e is not None],
                       BAR_LEFT, BAR_LEFT + plot_w, from_zero=True)
    labels = [_wrapped(_named(b.number, b.label, b.marks), WIDTH - BAR_LEFT, FONT) for b in bars]
    rows = [len(lines) * LABEL_LINE + BAR_GAP + BAR_HEIGHT + 8 for lines in labels]
    bottom = BAR_TOP + sum(rows)
    out = _open("bars", title, bottom + BAR_AXIS)
    for t in axis.ticks:
        out.append(f'<line x1="{axis.at(t):.1f}" x2="{axis.at(t):.1f}" y1="{BAR_TOP}" y2="{bottom}" stroke="#e4e4e4"/>')
        out.append(f'<text class="x-tick" x="{axis.at(t):.1f}" y="{bottom + TICK_BELOW}" text-anchor="middle">'
                   f'{_tick(t)}</text>')
    out.append(f'<text class="axis-title" x="{BAR_LEFT + plot_w / 2:.1f}" y="{bottom + TITLE_BELOW}" '
               f'text-anchor="middle">{escape(unit)}</text>')
    y0, cut = BAR_TOP, False
    for b, lines, row in zip(bars, labels, rows):
        low_high = (f' data-low="{b.low!r}" data-high="{b.high!r}"' if b.low is not None and b.high is not None
                    else "")
        out.append(f'<g class="bar" data-key="{escape(b.key)}" data-value="{b.value!r}"{low_high} '
                   f'data-number="{b.number}">')
        for k, line in enumerate(lines):
            out.append(f'<text class="label" x="{BAR_LEFT}" y="{y0 + 13 + k * LABEL_LINE}">{escape(line)}</text>')
        top = y0 + len(lines) * LABEL_LINE + BAR_GAP
        end, mid = axis.at(b.value), top + BAR_HEIGHT / 2
        out.append(f'<rect x="{BAR_LEFT}" y="{top}" width="{end - BAR_LEFT:.1f}" height="{BAR_HEIGHT}" '
                   f'fill="{COLOR}" fill-opacity="0.75"><title>{escape(b.label)}: {_tick(b.value)} {escape(unit)}'
                   f"</title></rect>")
        if axis.off(b.value):
            cut = True
            out.append(_break(axis.breaks[-1], mid, False))
        elif low_high:
            lo, hi = axis.clip(b.low), axis.clip(b.high)
            out.append(f'<path d="M{lo:.1f},{mid} H{hi:.1f} M{lo:.1f},{mid - 6} V{mid + 6}'
                       + ("" if axis.off(b.high) else f" M{hi:.1f},{mid - 6} V{mid + 6}")
                       + f'" stroke="{WHISKER}" stroke-width="1.5" fill="none"/>')
            if axis.off(b.high):
                cut = True
                out.append(_arrow(hi, mid, 1, 0, WHISKER))
            end = max(end, hi + (5 if axis.off(b.high) else 0))
        out.append(f'<text class="value" x="{end + 4:.1f}" y="{mid + 5}">{_tick(b.value)}</text>')
        out.append("</g>")
        y0 += row
    out.append(f'<line x1="{BAR_LEFT}" x2="{BAR_LEFT}" y1="{BAR_TOP}" y2="{bottom}" stroke="#555"/>')
    out.append("</svg>")
    return "\n".join(out) + note(cut)


@dataclass(frozen=True)
class Plane:
    """A point chart's plot area: its two fitted axes (y's ticks in drawn units: a rate's in percent),
    where it starts, and how a value maps to drawn units (`scale`: 100 for a rate drawn in percent)."""
    x_axis: Axis
    y_axis: Axis
    top: float
    scale: float
    width: float = WIDTH - S_LEFT - S_RIGHT
    height: float = PLOT_HEIGHT

    @classmethod
    def fitted(cls, points: list[Point], top: float, scale: float, from_zero: bool = False) -> "Plane":
        """The plane fitted to the points (and their intervals where near: chart_layout.fitted_axis);
        `from_zero`: both axes start at 0, so a gap between points reads at its true size."""
        width = WIDTH - S_LEFT - S_RIGHT
        x_ends = [e for p in points for e in (p.x_ci or ())]
        y_ends = [scale * e for p in points for e in (p.y_ci or ())]
        return cls(fitted_axis([p.x for p in points], x_ends, S_LEFT, S_LEFT + width, from_zero),
                   fitted_axis([scale * p.y for p in points], y_ends, top + PLOT_HEIGHT, top, from_zero), top, scale)

    @property
    def bounds(self) -> Box:
        return Box(S_LEFT, self.top, S_LEFT + self.width, self.top + self.height)

    def x(self, v: float) -> float:
        return self.x_axis.at(v)

    def y(self, v: float) -> float:
        """A value (not in drawn units) to its place."""
        return self.y_axis.at(self.scale * v)

    def grid(self, out: list[str], y_tick_text: Callable[[float], str]) -> None:
        """The grid lines and the ticks' numbers (`y_tick_text` writes a y tick in drawn units)."""
        bottom = self.top + self.height
        for t in self.x_axis.ticks:
            at = self.x_axis.at(t)
            out.append(f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{self.top}" y2="{bottom}" stroke="#eee"/>')
            out.append(f'<text class="x-tick" x="{at:.1f}" y="{bottom + TICK_BELOW}" text-anchor="middle">'
                       f'{_tick(t)}</text>')
        for t in self.y_axis.ticks:
            at = self.y_axis.at(t)
            out.append(f'<line x1="{S_LEFT}" x2="{S_LEFT + self.width}" y1="{at:.1f}" y2="{at:.1f}" stroke="#eee"/>')
            out.append(f'<text class="y-tick" x="{S_LEFT - 5}" y="{at + 4:.1f}" text-anchor="end">{y_tick_text(t)}</text>')

    def frame(self) -> str:
        bottom = self.top + self.height
        return (f'<polyline points="{S_LEFT},{self.top} {S_LEFT},{bottom} {S_LEFT + self.width},{bottom}" '
                f'fill="none" stroke="#555"/>' + "".join(_break(b, bottom, False) for b in self.x_axis.breaks)
                + "".join(_break(S_LEFT, b, True) for b in self.y_axis.breaks))


@dataclass(frozen=True)
class Format:
    """How a point chart writes its values: x with its unit, y in drawn units (a rate in percent, a
    price in dollars, a score as it is) and its ticks."""
    x_unit: str
    scale: float
    y_text: Callable[[float], str]  # a value in drawn units
    y_tick: Callable[[float], str]

    def x_text(self, v: float) -> str:
        return _tick(v) + (f" {self.x_unit}" if self.x_unit else "")


PERCENT = Format("ms", 100.0, lambda v: f"{v:.2f}%", lambda t: _tick(t) + "%")
DOLLARS = Format("ms", 1.0, lambda v: f"${v:,.2f}", lambda t: "$" + _tick(t))
SCORE = Format("ms", 1.0, lambda v: f"{v:.2f}", _tick)


def _marker(px: float, py: float, p: Point, off: tuple[int, int], color: str) -> str:
    """A point's mark: a dot; a baseline's an open diamond; one off the scale a triangle pointing off it."""
    tip = f"<title>{escape(p.label)}</title>"
    dx, dy = off
    if dx or dy:
        ux, uy = (dx, 0) if dx else (0, -dy)  # a y value above the scale is drawn at the top
        px_, py_ = -uy, ux
        pts = [(px + 7 * ux, py + 7 * uy), (px - 4 * ux + 6 * px_, py - 4 * uy + 6 * py_),
               (px - 4 * ux - 6 * px_, py - 4 * uy - 6 * py_)]
        fill = "white" if p.baseline else color
        return (f'<path class="marker off-scale" d="M{pts[0][0]:.1f},{pts[0][1]:.1f} L{pts[1][0]:.1f},{pts[1][1]:.1f} '
                f'L{pts[2][0]:.1f},{pts[2][1]:.1f} Z" fill="{fill}" stroke="{color}" stroke-width="1.5">{tip}</path>')
    if p.baseline:
        r = RADIUS + 1
        return (f'<path class="marker" d="M{px:.1f},{py - r:.1f} L{px + r:.1f},{py:.1f} L{px:.1f},{py + r:.1f} '
                f'L{px - r:.1f},{py:.1f} Z" fill="white" stroke="{BASELINE_COLOR}" stroke-width="2">{tip}</path>')
    return f'<circle class="marker" cx="{px:.1f}" cy="{py:.1f}" r="{RADIUS}" fill="{color}">{tip}</circle>'


def _label_text(p: Point, off: tuple[int, int], fmt: Format) -> str:
    """A point's label on the plot: its number; a baseline says so; one off the scale gives its value."""
    words = [str(p.number)] + (["baseline"] if p.baseline else [])
    dx, dy = off
    if dx:
        words.append(f"({'← ' if dx < 0 else ''}{fmt.x_text(p.x)}{' →' if dx > 0 else ''})")
    if dy:
        words.append(f"({fmt.y_text(fmt.scale * p.y)} {'↑' if dy > 0 else '↓'})")
    return " ".join(words)


def point_chart(kind: str, title: str, x_label: str, y_label: str, points: list[Point], fmt: Format, *,
                from_zero: bool = False, top: float = S_TOP, y_title_across: bool = False,
                point_class: str = "point") -> str:
    """Numbered points (and their intervals as whiskers) on fitted axes, every label placed apart,
    the frontier where the points say whether they are on it; the legend and the axes' note below."""
    points = [p if p.number else replace(p, number=i) for i, p in enumerate(points, 1)]
    plane = Plane.fitted(points, top, fmt.scale, from_zero)
    out = _open(kind, title, top + plane.height + S_BOTTOM)
    plane.grid(out, fmt.y_tick)
    _axis_titles(out, plane, x_label, y_label, y_title_across)
    frontier = any(p.on_frontier is not None for p in points)
    offs = [(plane.x_axis.off(p.x), plane.y_axis.off(fmt.scale * p.y)) for p in points]
    places = [(plane.x(p.x), plane.y(p.y)) for p in points]
    whiskers = [_whiskers(plane, p, px, py, off) for p, (px, py), off in zip(points, places, offs)]
    on = sorted((xy for p, xy in zip(points, places) if p.on_frontier), key=lambda xy: xy[0])
    steps = [seg for a, b in zip(on, on[1:]) for seg in ((a[0], a[1], b[0], a[1]), (b[0], a[1], b[0], b[1]))]
    placer = Placer(plane.bounds, [point_box(px, py, RADIUS + 2) for px, py in places],
                    [segment_box(*seg) for w in whiskers for seg in w.segments] + [segment_box(*seg) for seg in steps])
    entries = []
    for p, (px, py), off, w in zip(points, places, offs, whiskers):
        dimmed = frontier and not p.on_frontier
        classes = " ".join([point_class] + (["dimmed"] if dimmed else []) + (["baseline"] if p.baseline else [])
                           + (["off-scale"] if off != (0, 0) else []))
        fade = f' opacity="{DIMMED}"' if dimmed else ""
        out.append(f'<g class="{classes}" data-key="{escape(p.key)}" data-x="{p.x!r}" data-y="{p.y!r}" '
                   f'data-number="{p.number}"{fade}>')
        out.extend(w.svg)
        color = BASELINE_COLOR if p.baseline else COLOR
        out.append(_marker(px, py, p, off, color))
        out.append(_label(placer, px, py, _label_text(p, off, fmt), color, off != (0, 0)))
        out.append("</g>")
        words = f"{p.label}: {fmt.x_text(p.x)}, {fmt.y_text(fmt.scale * p.y)}" + (", off the frontier" if dimmed else "")
        entries.append((p.key, p.number, words + (f" ({', '.join(p.marks)})" if p.marks else "")))
    if on:  # drawn over the points; a staircase: along at one model's accuracy to the next model's latency, then to its accuracy
        path = f"M{on[0][0]:.1f},{on[0][1]:.1f}" + "".join(f" H{x:.1f} V{y:.1f}" for x, y in on[1:])
        keys = " ".join(p.key for p in sorted((p for p in points if p.on_frontier), key=lambda p: p.x))
        out.append(f'<path class="frontier" d="{path}" fill="none" stroke="{FRONTIER_COLOR}" stroke-width="2" '
                   f'data-keys="{escape(keys)}"/>')
    out.append("</svg>")
    cut = any(off != (0, 0) for off in offs) or any(w.cut for w in whiskers)
    return "\n".join(out) + legend(point_class.split()[-1] if kind == "scatter" else kind, entries) + note(cut)


def _axis_titles(out: list[str], plane: Plane, x_label: str, y_label: str, across: bool) -> None:
    """The axes' titles and the frame: y's written across above the plot (`across`: a rotated one
    would not fit a short plot's height) or rotated beside it."""
    bottom = plane.top + plane.height
    out.append(f'<text class="axis-title" x="{S_LEFT + plane.width / 2:.1f}" y="{bottom + TITLE_BELOW}" '
               f'text-anchor="middle">{escape(x_label)}</text>')
    if across:
        out.append(f'<text class="axis-title" x="8" y="{plane.top - 13}">{escape(y_label)}</text>')  # clear of the top tick
    else:
        mid = plane.top + plane.height / 2
        out.append(f'<text class="axis-title" x="14" y="{mid:.1f}" text-anchor="middle" '
                   f'transform="rotate(-90 14 {mid:.1f})">{escape(y_label)}</text>')
    out.append(plane.frame())


def _label(placer: Placer, px: float, py: float, text: str, color: str, off_scale: bool) -> str:
    """A point's label where the placer finds room, joined to its point by a leader when it is not beside it."""
    spot = placer.place(px, py, RADIUS + 2, text, FONT, bold=True)
    line = ""
    if spot.leader:
        x1, y1, x2, y2 = leader(px, py, RADIUS + 1, spot.box)
        line = (f'<line class="leader" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#777" '
                f'stroke-width="0.8"/>')
    return (line + f'<text class="number{" outlier" if off_scale else ""}" x="{spot.x:.1f}" y="{spot.baseline:.1f}" '
            f'font-weight="bold" fill="{color}">{escape(text)}</text>')


@dataclass(frozen=True)
class Whiskers:
    """A point's whiskers: their SVG, their segments (x0, y0, x1, y1) and whether one was cut at an axis."""
    svg: list[str]
    segments: list[tuple[float, float, float, float]]
    cut: bool


def _whiskers(plane: Plane, p: Point, px: float, py: float, off: tuple[int, int]) -> Whiskers:
    """A point's intervals as whiskers, cut with an arrow where they run past an axis (none along an
    axis the point itself is off)."""
    segments, arrows = [], []
    if p.x_ci and not off[0]:
        lo, hi = p.x_ci
        segments.append((plane.x_axis.clip(lo), py, plane.x_axis.clip(hi), py))
        arrows += [_arrow(plane.x_axis.clip(v), py, d, 0, WHISKER) for v, d in ((lo, -1), (hi, 1))
                   if plane.x_axis.off(v)]
    if p.y_ci and not off[1]:
        lo, hi = (plane.scale * v for v in p.y_ci)
        segments.append((px, plane.y_axis.clip(lo), px, plane.y_axis.clip(hi)))
        arrows += [_arrow(px, plane.y_axis.clip(v), 0, d, WHISKER) for v, d in ((lo, 1), (hi, -1))
                   if plane.y_axis.off(v)]
    svg = [f'<path class="whisker" d="{" ".join(f"M{a:.1f},{b:.1f} L{c:.1f},{d:.1f}" for a, b, c, d in segments)}" '
           f'stroke="{WHISKER}" stroke-width="1.2" fill="none"/>'] if segments else []
    return Whiskers(svg + arrows, segments, bool(arrows))


def scatter(title: str, x_label: str, y_label: str, points: list[Point], dollars: bool = False) -> str:
    """One numbered point per model (named in the legend below), x a latency, y a rate drawn in
    percent (or, `dollars`, a price in US dollars); both axes start at 0 (no whiskers here to give a
    gap its scale: 72 % against 74 % on an axis spanning just those would look like a chasm)."""
    return point_chart("scatter", title, x_label, y_label, points,
                       DOLLARS if dollars else PERCENT, from_zero=True,
                       point_class="point price" if dollars else "point")
