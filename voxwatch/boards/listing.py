"""How every listing command prints its rows: aligned text for a person, CSV or JSON for a program.

One header and one row per thing listed; `--format` picks the form. Table text may add notes around
the table (a heading, a legend); CSV and JSON carry the rows only, so a program reads nothing else.
Text is fitted to WIDTH columns (the widest columns narrowed, their cells wrapped onto the next
lines); `--wide` prints every cell whole on one line however wide, as a program-like reader wants.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import textwrap
from typing import Collection, Mapping, Sequence, TextIO, Union

FORMATS = ("table", "csv", "json")
Cell = Union[str, int, float, bool, None]
WIDTH = 160
"""The columns the CLI's tables and notes fit in by default: a terminal beside another window."""
GAP = 2  # spaces between two columns
NARROWEST = 12  # a narrowed column keeps at least this many characters
BREAKS = (" ", "+", "/", ",;", "-_.")  # where a cell is wrapped, strongest first: at a space, or after one of these


def add_format(parser: argparse.ArgumentParser) -> None:
    """The `--format` option of a listing command."""
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (default: aligned text), csv (a header line, then a line per row) or json "
                             "(a list of objects keyed by the header)")
    add_wide(parser)


def add_wide(parser: argparse.ArgumentParser) -> None:
    """The `--wide` option of a command that prints a table."""
    parser.add_argument("--wide", action="store_true",
                        help=f"print every column, each cell whole on one line, however wide (default: the most "
                             f"useful columns, fitted to {WIDTH} columns)")


def aligned(table: Sequence[Sequence[str]], width: int | None = None) -> list[str]:
    """Columns padded to their widest cell, two spaces apart, no trailing spaces; with a width, fitted to it."""
    return fitted(table, width)


def fitted(table: Sequence[Sequence[str] | str], width: int | None = WIDTH, *, right: Collection[int] = (),
           rule: bool = False, flow: bool = False, flexible: Collection[int] | None = None,
           least: Mapping[int, int] | None = None) -> list[str]:
    """A table as lines: columns padded to their widest cell (at least `least` of some), GAP apart,
    `right` ones right-justified, a line of dashes under the header (the first row) with `rule`; a
    str row is a heading, printed as it is. With a width, the widest `flexible` columns (default:
    all) are narrowed until the table fits, each longer cell wrapped onto the next lines; with
    `flow`, into the next rows' blank cells first (a series' name beside its later metric rows)."""
    rows = [r for r in table if not isinstance(r, str)]
    widths = [max([len(r[i]) for r in rows] + [(least or {}).get(i, 0)]) for i in range(len(rows[0]))]
    if width is not None:
        widths = _narrowed(widths, rows, width, range(len(widths)) if flexible is None else flexible)
    lines: list[str] = []
    pending: dict[int, list[str]] = {}

    def put(cells: Sequence[str]) -> None:
        lines.append("  ".join(c.rjust(w) if i in right else c.ljust(w)
                               for i, (c, w) in enumerate(zip(cells, widths))).rstrip())

    def flush() -> None:
        while any(pending.values()):
            put([pending[i].pop(0) if pending.get(i) else "" for i in range(len(widths))])
        pending.clear()

    for row in table:
        if isinstance(row, str):
            flush()
            lines.append(row)
            continue
        cells = list(row)
        if not flow or any(cells[i] for i, left in pending.items() if left):
            flush()
        for i, left in pending.items():
            if left:
                cells[i] = left.pop(0)
        for i, cell in enumerate(cells):
            if len(cell) > widths[i]:
                cells[i], *pending[i] = wrapped(cell, widths[i])
        put(cells)
        if row is rows[0]:
            flush()  # a header's wrapped words stay in the header
            if rule:
                lines.append("  ".join("-" * w for w in widths))
    flush()
    return lines


def _narrowed(widths: list[int], rows: Sequence[Sequence[str]], width: int, flexible: Collection[int]) -> list[int]:
    """The widest flexible column narrowed by one at a time until the rows fit: first the columns of
    words (down to their longest word), then any flexible one (down to NARROWEST)."""
    widths = list(widths)
    words = [max((len(w) for r in rows for w in r[i].split()), default=0) if any(" " in r[i] for r in rows) else None
             for i in range(len(widths))]
    passes = ([max(words[i], NARROWEST) if i in flexible and words[i] is not None else w for i, w in enumerate(widths)],
              [min(w, NARROWEST) if i in flexible else w for i, w in enumerate(widths)])
    for floors in passes:
        while sum(widths) + GAP * (len(widths) - 1) > width:
            narrower = [i for i in range(len(widths)) if widths[i] > floors[i]]
            if not narrower:
                break
            widths[max(narrower, key=lambda i: widths[i])] -= 1
    return widths


def wrapped(text: str, width: int) -> list[str]:
    """A cell cut into lines of at most `width`, each at the strongest break (BREAKS): the last space,
    else after the last '+', '/', ... that leaves the line at least half full (a cascade id at its
    '+', a URL at a '/'), else at the width."""
    lines = []
    while len(text) > width:
        cut = next((i for tier in BREAKS for i in range(width, 0 if tier == " " else width // 2, -1)
                    if (text[i] == " " if tier == " " else text[i - 1] in tier)), width)
        lines.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return lines + [text]


def prose(text: str, width: int | None = WIDTH, indent: str = "") -> str:
    """A note or legend wrapped to the width (each paragraph on its own; None: as it is), its later
    lines indented past the note's own indent."""
    if width is None:
        return text
    return "\n".join(textwrap.fill(line, width, subsequent_indent=" " * (len(line) - len(line.lstrip())) + indent,
                                   break_on_hyphens=False) if line else line for line in text.split("\n"))


def text(cell: Cell) -> str:
    return "-" if cell is None else str(cell)


def emit(header: Sequence[str], rows: Sequence[Sequence[Cell]], fmt: str, out: TextIO | None = None,
         wide: bool = False) -> None:
    """Write the rows in the chosen format (table: with the header, even when there are no rows, fitted
    to WIDTH unless `wide`)."""
    out = out or sys.stdout
    if fmt == "json":
        out.write(json.dumps([dict(zip(header, row)) for row in rows], indent=2) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    else:
        out.write("\n".join(aligned([tuple(header), *[tuple(text(c) for c in row) for row in rows]],
                                     None if wide else WIDTH)) + "\n")
