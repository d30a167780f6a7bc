"""Where a chart's axes end and its labels go, so that a chart stays readable whatever its data.

Axes are fitted to the points, not stretched by one far away: a value more than FAR median absolute
deviations from the median, and more than SQUEEZE times the others' spread beyond them, is drawn in
a zone past a break at the axis' end, with its value written beside it; a 95 % interval that runs
past the axis is cut there and ends in an arrow. So five models within 257-301 ms and one at
1,400 ms read as five apart and one off the scale, not as one dot and a smudge.

Labels are placed, not printed where the point is: each takes the first free place around its point
(rings further out, joined to it by a leader line), never over another label, a point or the plot's
edge. Text is measured with DejaVu Sans' advance widths (the browsers' fallback sans-serif on Debian;
the widths are rounded up, so other faces' narrower text stays inside its box).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

FAR = 6.0
"""A value this many median absolute deviations from the median (at least 2 % of the median) is off the scale."""
SQUEEZE = 5.0
"""...and this many times the other values' spread (at least a tenth of their size) beyond them."""
ZONE = 26.0
"""The drawn width of the zone past an axis' break where values off the scale are drawn."""
ASCENT, DESCENT = 0.93, 0.24
"""A line of text's box above and below its baseline, in ems (DejaVu Sans: what a browser's box of it measures)."""
_NARROW, _WIDE = set(" .,:;'!|()[]ilIjtf/"), set("mwMW%@")


def text_width(text: str, size: float, bold: bool = False) -> float:
    """The drawn width of a line of text at a font size (an upper bound for DejaVu Sans)."""
    def em(c: str) -> float:
        if c.isdigit():
            return 0.70 if bold else 0.64
        if c in _NARROW:
            return 0.40
        if c in _WIDE:
            return 1.0
        if c.isupper() or ord(c) > 0x2000:  # capitals, arrows and triangles
            return 0.84
        return 0.64 if bold else 0.62
    return sum(em(c) for c in text) * size


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def hits(self, other: "Box") -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1

    def within(self, outer: "Box") -> bool:
        return outer.x0 <= self.x0 and self.x1 <= outer.x1 and outer.y0 <= self.y0 and self.y1 <= outer.y1

    def overlap(self, other: "Box") -> float:
        return (max(0.0, min(self.x1, other.x1) - max(self.x0, other.x0))
                * max(0.0, min(self.y1, other.y1) - max(self.y0, other.y0)))


def text_box(x: float, baseline: float, text: str, size: float, anchor: str = "start", bold: bool = False) -> Box:
    """The box a line of text covers, drawn at (x, baseline) with an SVG text-anchor."""
    w = text_width(text, size, bold)
    left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
    return Box(left, baseline - ASCENT * size, left + w, baseline + DESCENT * size)


def point_box(x: float, y: float, r: float) -> Box:
    return Box(x - r, y - r, x + r, y + r)


@dataclass(frozen=True)
class Placed:
    """A label's place: its text's start and baseline, its box, and whether a leader joins it to its point."""
    x: float
    baseline: float
    box: Box
    leader: bool


_DIRECTIONS = ((1, -1), (1, 0), (0, -1), (-1, -1), (-1, 0), (1, 1), (0, 1), (-1, 1))
"""Around a point, in the order tried: up right (where a reader looks first), right, above, up left..."""
_GAPS = (1.0, 6.0, 12.0, 20.0, 30.0, 42.0, 56.0, 74.0, 96.0)
"""How far from a point's mark a label is tried, ring after ring (past the first, a leader line joins them)."""


class Placer:
    """Places labels inside `bounds` so that none covers another, nor anything `taken` (marks), and
    where it can, crosses none of the `lines` (whiskers, the frontier: boxes a label may cross)."""

    def __init__(self, bounds: Box, taken: Sequence[Box] = (), lines: Sequence[Box] = ()) -> None:
        self.bounds = bounds
        self.taken: list[Box] = list(taken)
        self.lines: list[Box] = list(lines)

    def take(self, box: Box) -> None:
        self.taken.append(box)

    def place(self, x: float, y: float, radius: float, text: str, size: float, bold: bool = False) -> Placed:
        """The first place around the mark at (x, y) where `text` covers nothing and crosses no line;
        else the first that covers nothing and crosses fewest; where none is free (a chart fuller than
        its labels can be) the one covering least."""
        w = text_width(text, size, bold)
        h = (ASCENT + DESCENT) * size
        covering: list[tuple[float, Placed]] = []
        crossing: list[tuple[int, Placed]] = []
        for ring, gap in enumerate(_GAPS):
            d = radius + gap
            for dx, dy in _DIRECTIONS:
                cx = x + dx * (d + w / 2) if dx else x  # the box's centre, its near edge d from the point
                cy = y + dy * (d + h / 2) if dy else y
                box = Box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
                spot = Placed(box.x0, box.y1 - DESCENT * size, box, ring > 0)
                if not box.within(self.bounds):
                    continue
                cover = sum(box.overlap(t) for t in self.taken)
                if cover:
                    covering.append((cover, spot))
                    continue
                crossed = sum(box.hits(line) for line in self.lines)
                if not crossed:
                    self.take(box)
                    return spot
                crossing.append((crossed, spot))
        least = min(crossing or covering, key=lambda t: t[0], default=None)  # min keeps the first of equals
        spot = least[1] if least else Placed(x + radius, y, text_box(x + radius, y, text, size, bold=bold), False)
        self.take(spot.box)
        return spot


def segment_box(x0: float, y0: float, x1: float, y1: float, width: float = 1.5) -> Box:
    """The box a horizontal or vertical line covers (a whisker, a step of the frontier)."""
    return Box(min(x0, x1) - width / 2, min(y0, y1) - width / 2, max(x0, x1) + width / 2, max(y0, y1) + width / 2)


def leader(x: float, y: float, radius: float, box: Box) -> tuple[float, float, float, float]:
    """A leader line from a mark's edge to the nearest point of its label's box."""
    nx, ny = min(max(x, box.x0), box.x1), min(max(y, box.y0), box.y1)
    dist = math.hypot(nx - x, ny - y) or 1.0
    return x + (nx - x) * radius / dist, y + (ny - y) * radius / dist, nx, ny


@dataclass(frozen=True)
class Fit:
    """What an axis shows of some values: [low, high] in full; values below `low` or above `high`
    are off the scale (drawn past a break)."""
    low: float
    high: float
    below: bool
    above: bool


def fitted(values: Sequence[float], from_zero: bool = False) -> Fit:
    """The span an axis shows of `values` (see the module's words); `from_zero`: it starts at 0."""
    v = sorted(values)
    if not v:
        return Fit(0.0, 1.0, False, False)
    med = statistics.median(v)
    mad = max(statistics.median(abs(x - med) for x in v), 0.02 * abs(med), 1e-12)
    core = [x for x in v if abs(x - med) <= FAR * mad] or v
    span = max(core[-1] - core[0], 0.1 * max(abs(core[0]), abs(core[-1])), 1e-9)  # the others' spread
    above = v[-1] > core[-1] and v[-1] - core[0] > SQUEEZE * span
    below = v[0] < core[0] and core[-1] - v[0] > SQUEEZE * span and not from_zero
    low = min(0.0, v[0]) if from_zero else core[0] if below else v[0]
    return Fit(low, core[-1] if above else v[-1], below, above)


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """Ticks from 0 up to at least `high`, a round step apart (1, 2, 2.5 or 5 times a power of ten)."""
    high = high if high > 0 else 1.0
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    return [i * step for i in range(math.ceil(high / step - 1e-9) + 1)]


def span_ticks(low: float, high: float, count: int = 4) -> list[float]:
    """Round ticks covering [low, high] (not from 0: a scatter's points would crowd one corner), a
    nice_ticks step apart; never below 0 when no value is; at least two."""
    step = nice_ticks(max(high - low, abs(high) * 0.1, 1e-9), count)[1]
    start = math.floor(low / step) * step
    ticks = [start + i * step for i in range(math.ceil((high - start) / step - 1e-9) + 1)]
    return ticks if len(ticks) > 1 else [ticks[0], ticks[0] + step]


@dataclass(frozen=True)
class Axis:
    """One axis of a plot: its round ticks (in drawn units) from pixel `start` to pixel `end` (for a y
    axis start is below end), and the pixels where values off the scale are drawn (None: none is)."""
    ticks: list[float]
    start: float
    end: float
    below_at: float | None = None
    above_at: float | None = None

    def off(self, v: float) -> int:
        """-1 below the axis' first tick, 1 above its last, 0 on the scale."""
        return -1 if v < self.ticks[0] else 1 if v > self.ticks[-1] else 0

    def clip(self, v: float) -> float:
        """A value's pixel, held to the scale's ends."""
        low, high = self.ticks[0], self.ticks[-1]
        return self.start + (min(max(v, low), high) - low) / (high - low) * (self.end - self.start)

    def at(self, v: float) -> float:
        """A value's pixel: on the scale, or in the zone past its break."""
        off = self.off(v)
        if off < 0 and self.below_at is not None:
            return self.below_at
        if off > 0 and self.above_at is not None:
            return self.above_at
        return self.clip(v)

    @property
    def breaks(self) -> list[float]:
        """The pixels between the scale and a zone: where the axis line shows its break."""
        direction = 1 if self.end >= self.start else -1
        return ([self.start - direction * ZONE / 2] if self.below_at is not None else []) + \
            ([self.end + direction * ZONE / 2] if self.above_at is not None else [])


def fitted_axis(values: Sequence[float], ends: Sequence[float], first: float, last: float, from_zero: bool = False,
                count: int = 4) -> Axis:
    """The axis that draws `values` (the points) between pixels `first` and `last`: fitted to them
    (fitted), widened for the interval ends `ends` near them (within half the points' span; those
    further are cut), with a zone past a break at each end that a value lies beyond."""
    fit = fitted(values, from_zero)
    pad = 0.5 * max(fit.high - fit.low, 0.1 * max(abs(fit.low), abs(fit.high)), 1e-9)
    near = [e for e in ends if fit.low - pad <= e <= fit.high + pad and (e >= 0 or not from_zero)]
    ticks = span_ticks(min([fit.low, *near]), max([fit.high, *near]), count)
    below, above = any(v < ticks[0] for v in values), any(v > ticks[-1] for v in values)
    direction = 1 if last >= first else -1
    start, end = first + direction * ZONE * below, last - direction * ZONE * above
    return Axis(ticks, start, end, first + direction * ZONE * 0.4 if below else None,
                last - direction * ZONE * 0.4 if above else None)
