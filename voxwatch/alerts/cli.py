"""`voxwatch alerts list` and `voxwatch alerts evaluate`: read the alerts, or run one evaluation now."""

from __future__ import annotations

import argparse
import os
import time
from datetime import datetime, timezone
from typing import Callable


from voxwatch.boards import listing
from voxwatch.config import Config, require_webhook_urls

from voxwatch.alerts import store
from voxwatch.alerts.store import STATES, Alert

ConfigOf = Callable[[argparse.Namespace], Config]


def register(sub: argparse._SubParsersAction, config_of: ConfigOf) -> None:
    """Add the `alerts` command; config_of reads --config and --store as every other command does."""
    alerts = sub.add_parser("alerts", help="regression alerts (Postgres store): list them, or evaluate now")
    actions = alerts.add_subparsers(dest="action", required=True)
    ls = actions.add_parser("list", help="print the alerts, newest first")
    ls.add_argument("--state", choices=(*STATES, "all"), default="all", help="only alerts in this state (default all)")
    ls.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")
    ls.add_argument("--store", help="store URL (default: config)")
    listing.add_format(ls)
    ls.set_defaults(func=lambda args: cmd_list(args, config_of(args)))
    ev = actions.add_parser("evaluate", help="run one evaluation now and notify the webhooks of any transition")
    ev.add_argument("--store", help="store URL (default: config)")
    ev.set_defaults(func=lambda args: cmd_evaluate(config_of(args)))


def cmd_list(args: argparse.Namespace, cfg: Config) -> int:
    with store.connected(cfg.store_url, "cannot read the alerts of") as conn:
        alerts = store.list_alerts(conn, args.state, max(1, args.limit))
    if not alerts and args.format == "table":
        print(f"no {'' if args.state == 'all' else args.state + ' '}alerts")
        return 0
    table = [(a.id, a.state, a.kind, a.model_id, a.metric, a.dataset, a.region, _when(a.opened_at), _when(a.fired_at),
              _when(a.resolved_at), _value(a, a.recent_value), _value(a, a.baseline_value),
              None if a.p_value is None else f"{a.p_value:.2g}", f"{a.n_recent}/{a.n_baseline}", a.summary)
             for a in alerts]
    listing.emit(("id", "state", "kind", "model", "metric", "dataset", "region", "opened", "fired", "resolved",
                  "recent", "baseline", "p", "n", "summary"), table, args.format, wide=args.wide)
    return 0


def cmd_evaluate(cfg: Config) -> int:
    require_webhook_urls(cfg.alerts.webhooks, os.environ)
    with store.connected(cfg.store_url, "cannot evaluate the alerts of") as conn:
        from voxwatch.alerts.evaluate import run  # scipy.stats: a second of every other command's start

        result = run(conn, cfg.alerts, time.time(), panel_size=cfg.panel_size)
    counts = {e: sum(t.event == e for t in result.transitions) for e in ("pending", "firing", "resolved", "cleared")}
    print(f"evaluated {result.checks} checks at {_when(result.at)}: {counts['pending']} opened (pending), "
          f"{counts['firing']} firing, {counts['resolved']} resolved, {counts['cleared']} cleared before firing")
    for t in result.transitions:
        print(f"  {t.event}: #{t.alert.id} {t.alert.summary}")
    for d in result.deliveries:
        outcome = "delivered" if d.ok else f"NOT delivered ({d.error})"
        print(f"  webhook {d.target}: alert #{d.alert_id} {d.event} {outcome} after {d.attempts} attempt(s)")
    return 1 if any(not d.ok for d in result.deliveries) else 0


def _when(t: float | None) -> str:
    return "-" if t is None else datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M")


def _value(a: Alert, v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.0f} ms" if a.kind == "latency" else f"{v * 100:.1f} %"  # WER and the rates are fractions
