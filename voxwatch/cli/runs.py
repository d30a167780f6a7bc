"""`voxwatch runs list` and `voxwatch runs reconcile`: the run records, and finishing runs from the store.

`reconcile` is what beat sends every [run] reconcile_every_s in distributed mode
(voxwatch.workers.reconcile): it first adds the rows spooled in [store] spool_dir (and spool_fallback_dir), then finishes
every run whose planned rows are all stored, and every run still short of rows at its deadline.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

from voxwatch.boards import listing
from voxwatch.config import Config
from voxwatch.foundation.observation import RunRecord
from voxwatch.metrics.published import when
from voxwatch.store import open_store, redact
from voxwatch.store.spool import drain
from voxwatch.workers.reconcile import LOOKBACK_S, reconcile

ConfigOf = Callable[[argparse.Namespace], Config]
STATUSES = ("running", "succeeded", "partial", "failed")


def register(sub: argparse._SubParsersAction, config_of: ConfigOf) -> None:
    """Add the `runs` command; config_of reads --config and --store as every other command does."""
    runs = sub.add_parser("runs", help="the run records: list them, or finish runs from the store's rows")
    actions = runs.add_subparsers(dest="action", required=True)
    ls = actions.add_parser("list", help="print the run records, newest first")
    ls.add_argument("--status", choices=(*STATUSES, "all"), default="all", help="only runs with this status (default all)")
    ls.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    ls.add_argument("--store", help="store URL (default: config)")
    listing.add_format(ls)
    ls.set_defaults(func=lambda args: cmd_list(args, config_of(args)))
    rc = actions.add_parser("reconcile", help="add the spooled rows, then finish every run whose rows are all "
                                              "stored or whose deadline ([run] reconcile_after_s) has passed")
    rc.add_argument("--store", help="store URL (default: config)")
    rc.set_defaults(func=lambda args: cmd_reconcile(config_of(args)))


def cmd_list(args: argparse.Namespace, cfg: Config) -> int:
    store = open_store(cfg.store_url, create=False)  # a mistyped path is an error, not a new store
    try:
        runs = [r for r in reversed(store.runs()) if args.status in ("all", r.status)][:max(1, args.limit)]
    finally:
        store.close()
    if not runs and args.format == "table":
        print(f"no {'' if args.status == 'all' else args.status + ' '}runs in {redact(cfg.store_url)}")
        return 0
    table = [(r.run_id, r.region, r.status, r.rows, r.planned, r.failed_rows, _when(r.started_at),
              _when(r.finished_at), r.note or "") for r in runs]
    listing.emit(("run", "region", "status", "rows", "planned", "not ok", "started", "finished", "note"), table,
                 args.format, wide=args.wide)
    return 0


def cmd_reconcile(cfg: Config) -> int:
    store = open_store(cfg.store_url, create=False)  # a mistyped path is an error, not a new store
    try:
        drained = drain(store, cfg.spool_dirs)
        for problem in drained.unreadable:
            print(f"spool file set aside, not ingested: {problem}")
        if drained.rows:
            print(f"spool: {sum(drained.rows.values())} rows of {len(drained.rows)} runs stored from "
                  f"{drained.files} files in {', '.join(map(str, cfg.spool_dirs))}")
        if drained.error is not None:
            raise drained.error
        now = time.time()
        settled = reconcile(store, cfg.reconcile_after_s, now)
        waiting = [r for r in store.runs_since(now - LOOKBACK_S) if r.status == "running"]
    finally:
        store.close()
    for run in settled:
        print(f"run {run.run_id} {run.status}: {_rows(run)}; {run.note}")
    print(f"{len(settled)} runs finished from the store; {len(waiting)} still running inside their deadline "
          f"({cfg.reconcile_after_s:g} s after their start)")
    return 0


def _rows(run: RunRecord) -> str:
    of = f" of {run.planned} planned" if run.planned is not None else ""
    return f"{run.rows} observations{of} ({run.failed_rows} not ok)"


def _when(t: float | None) -> str | None:
    """ISO 8601 UTC to the second, in the table and in the CSV and JSON (metrics.published)."""
    return when(t, "seconds")
