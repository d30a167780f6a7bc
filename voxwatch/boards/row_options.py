"""The options that choose which observations a reader reads: --board --dataset --model --since --until,
and the clips' --speaker and --accent.

`voxwatch leaderboard` and `voxwatch export` take them; they become a store.RowFilter, which the
store puts in its SQL, so a filtered read never reads the rest of the rows.
"""

from __future__ import annotations

import argparse

from voxwatch.config import BOARDS, ConfigError
from voxwatch.boards.moments import MomentError, moment, shown
from voxwatch.store.row_filter import RowFilter


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def add_row_filters(p: argparse.ArgumentParser) -> None:
    """--board --dataset --model --since --until: which rows a reader of observations reads (in the store's SQL)."""
    p.add_argument("--board", type=_listed("board", BOARDS), default=(),
                   help=f"only these boards, comma-separated ({', '.join(BOARDS)})")
    p.add_argument("--dataset", type=_listed("dataset"), default=(), help="only these datasets, comma-separated")
    p.add_argument("--model", type=_listed("model"), default=(), help="only these model ids, comma-separated")
    p.add_argument("--since", type=_moment, metavar="WHEN",
                   help="only rows started at or after this: an ISO date or time (2026-05-01, 2026-05-01T12:00Z; "
                        "UTC when no zone) or an age (7d, 24h, 30m)")
    p.add_argument("--until", type=_moment, metavar="WHEN", help="only rows started before this (as --since)")
    p.add_argument("--speaker", type=_whole("speaker"), action="append", default=[],
                   help="only clips of this speaker (repeat it for more; taken whole, commas and all): a board's "
                        "statistics over their clips alone")
    p.add_argument("--accent", type=_whole("accent"), action="append", default=[],
                   help="only clips of speakers with this accent (repeat it for more; taken whole: an accent is free "
                        "text such as 'non-native English, Mandarin L1')")


def row_filter(args) -> RowFilter:
    if args.since is not None and args.until is not None and args.since >= args.until:
        raise ConfigError(f"--since ({shown(args.since)}) must be before --until ({shown(args.until)})")
    return RowFilter(args.since, args.until, args.board, args.dataset, args.model, speakers=tuple(args.speaker),
                     accents=tuple(args.accent))


def span_text(only: RowFilter, window: str) -> str | None:
    """How a board heading names a span of the user's, and the speakers' or accents' clips it is
    computed from (None: the rolling window over every clip)."""
    parts = [f"since {shown(only.since)}" if only.since is not None else "",
             f"until {shown(only.until)}" if only.until is not None else ""]
    span = " ".join(p for p in parts if p) or (f"rolling {window}" if only.by_clip else "")
    clips = [f"{what} {', '.join(values)}" for what, values in (("speaker", only.speakers), ("accent", only.accents))
             if values]
    return (span + (f", clips of {' and '.join(clips)} only" if clips else "")) or None


def _moment(text: str) -> float:
    try:
        return moment(text)
    except MomentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _whole(what: str):
    """One free-text value (a speaker, an accent), stripped; an empty one is refused."""
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"expected a {what}, got an empty value")
        return text.strip()
    parse.__name__ = what
    return parse


def _listed(what: str, known: tuple[str, ...] | None = None):
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(_names(text))
        unknown = [n for n in names if known is not None and n not in known]
        if not names or unknown:
            raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated {what} names"
                                             + (f" of {', '.join(known)}" if known else ""))
        return names
    parse.__name__ = what
    return parse
