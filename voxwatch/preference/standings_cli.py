"""`voxwatch preference fit` and `voxwatch preference board`: fit every board once, read it many times.

`fit` is the expensive one (bootstraps of every board: seconds to minutes) and cron-able: it stores
a snapshot and prints the headline board. `board` prints the newest snapshot, fitting nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

from voxwatch.config import Config

from voxwatch.preference import standings_format
from voxwatch.preference.standings_format import BREAKDOWNS

ConfigOf = Callable[[argparse.Namespace], Config]


class FitError(ValueError):
    """A fit asked for with arguments that cannot work (a user error: printed, not a traceback)."""


def register(actions: argparse._SubParsersAction, config_of: ConfigOf) -> None:
    f = actions.add_parser("fit", help="fit every preference board (Elo, intervals, breakdowns, rubric clusters) "
                                       "and store the snapshot the web and `board` show")
    f.add_argument("--resamples", type=int, help="bootstrap resamples per board (default: the method's 1,000)")
    f.add_argument("--exclude-raters", default="",
                   help="comma-separated rater ids to leave out, beside the careless raters the gold pairs "
                        "caught (always left out: preference/gold.py)")
    f.add_argument("--store", help="store URL (default: config)")
    f.set_defaults(func=lambda a: cmd_fit(a, config_of(a)))
    b = actions.add_parser("board", help="print the newest fitted preference board")
    b.add_argument("--by", choices=BREAKDOWNS, default="model", help="which boards (default: model, the headline)")
    b.add_argument("--format", choices=("text", "csv", "json"), default="text",
                   help="text (default), csv or json")
    b.add_argument("--store", help="store URL (default: config)")
    b.set_defaults(func=lambda a: cmd_board(a, config_of(a)))


def _raters(text: str) -> set[str]:
    ids = {x.strip() for x in text.split(",") if x.strip()}
    bad = sorted(x for x in ids if not x.isdigit())
    if bad:
        raise FitError(f"--exclude-raters takes rater ids (numbers), got {', '.join(bad)}")
    return ids


def cmd_fit(args: argparse.Namespace, cfg: Config) -> int:
    from voxwatch.metrics.preference_bootstrap import RESAMPLES
    from voxwatch.store import open_store

    from voxwatch.preference.gold import careless_raters
    from voxwatch.preference.standings import fit

    resamples = RESAMPLES if args.resamples is None else args.resamples
    if resamples < 2:
        raise FitError("--resamples must be at least 2 (an interval needs draws)")
    store = open_store(cfg.store_url)
    try:
        careless = careless_raters(store, cfg.preference_gold_pass_share, cfg.preference_gold_min_answers)
        exclude = _raters(args.exclude_raters) | {str(r) for r in careless}
        if careless:
            print(f"leaving out {len(careless)} careless rater(s) caught by their gold pairs: "
                  f"{', '.join(str(r) for r in sorted(careless))}")
        row = fit(store, exclude, resamples)
    finally:
        store.close()
    print(f"stored preference fit {row.fit_id}")
    sys.stdout.write(standings_format.to_text(standings_format.document(row, "model")))
    return 0


def cmd_board(args: argparse.Namespace, cfg: Config) -> int:
    from voxwatch.store import open_store

    store = open_store(cfg.store_url, create=False)
    try:
        doc = standings_format.document(store.latest_preference_fit(), args.by)
    finally:
        store.close()
    if args.format == "json":
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif args.format == "csv":
        sys.stdout.write(standings_format.to_csv(doc))
    else:
        sys.stdout.write(standings_format.to_text(doc))
    return 0
