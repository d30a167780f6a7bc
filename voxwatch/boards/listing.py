"""How every listing command prints its rows: aligned text for a person, CSV or JSON for a program.

One header and one row per thing listed; `--format` picks the form. Table text may add notes around
the table (a heading, a legend); CSV and JSON carry the rows only, so a program reads nothing else.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Sequence, TextIO, Union

FORMATS = ("table", "csv", "json")
Cell = Union[str, int, float, bool, None]


def add_format(parser: argparse.ArgumentParser) -> None:
    """The `--format` option of a listing command."""
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (default: aligned text), csv (a header line, then a line per row) or json "
                             "(a list of objects keyed by the header)")


def aligned(table: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell, two spaces apart, no trailing spaces."""
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]


def text(cell: Cell) -> str:
    return "-" if cell is None else str(cell)


def emit(header: Sequence[str], rows: Sequence[Sequence[Cell]], fmt: str, out: TextIO | None = None) -> None:
    """Write the rows in the chosen format (table: with the header, even when there are no rows)."""
    out = out or sys.stdout
    if fmt == "json":
        out.write(json.dumps([dict(zip(header, row)) for row in rows], indent=2) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    else:
        out.write("\n".join(aligned([tuple(header), *[tuple(text(c) for c in row) for row in rows]])) + "\n")
