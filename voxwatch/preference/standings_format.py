"""The stored preference fit laid out for readers: the API's JSON, CSV, and the CLI's text.

One layout for `voxwatch preference board`, GET /api/v1/preference and the page: every number is
the snapshot's (voxwatch/preference/standings.py fitted it); nothing is recomputed here.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from typing import Any

from voxwatch.metrics import METHOD_VERSION
from voxwatch.store.preference_fits import FitRow

BREAKDOWNS = ("model", "config", "voice", "thinking", "rubric", "category")
"""What `?by=` and `--by` choose; "model" is the headline."""
INTERVAL = ("95 % interval: the ordinal Bradley-Terry fit's Elo +- t * sqrt(V), V the multiway variance of "
            "rater- and prompt-clustered bootstraps (raters + prompts - their cells), t with Satterthwaite's "
            "degrees of freedom; the crossed (rater x prompt) bootstrap's percentile interval is reported beside "
            "it. Ranks are shared where intervals overlap: 1 + the entries whose whole interval lies above.")
ROW_FIELDS = ("rank", "name", "elo", "low", "high", "crossed_low", "crossed_high", "missing", "ratings", "raters",
              "prompts")
NO_RATINGS = "No ratings yet: the preference board has nothing to rank."
NO_BOARD = ("No {by} board in this fit: its groups need ratings between at least two of them (every rated pair "
            "compares configurations within one group); `--by config` ranks the configurations.")
NOT_FITTED = "No ratings yet fitted: `voxwatch preference fit` fits the stored ratings."
CSV_COLUMNS = ("by", "key", *ROW_FIELDS, "method_version", "fitted_at")


def document(row: FitRow | None, by: str | None = None) -> dict[str, Any]:
    """The newest fit as JSON, its boards only those of `by` (None: every board). `reason` says why
    there are no boards (nothing fitted, or no ratings when it was)."""
    if row is None:
        return {"fitted": False, "reason": NOT_FITTED, "fit_id": None, "fitted_at": None, "method_version": None,
                "current_method_version": METHOD_VERSION, "ratings": 0, "raters": 0, "excluded_ratings": 0,
                "resamples": None, "interval": INTERVAL, "by": by, "sections": [], "engines": None, "clusters": None,
                "clusters_reason": None}
    doc = json.loads(row.boards)
    sections = [s for s in doc["sections"] if by is None or s["by"] == by]
    reason = None if doc["sections"] else NO_RATINGS
    if reason is None and not sections:
        reason = NO_BOARD.format(by=by)
    return {"fitted": True, "reason": reason, "fit_id": row.fit_id,
            "fitted_at": row.fitted_at, "method_version": row.method_version,
            "current_method_version": METHOD_VERSION, "ratings": row.ratings, "raters": row.raters,
            "excluded_ratings": doc["excluded_ratings"], "resamples": row.resamples, "interval": doc["interval"],
            "by": by, "sections": sections, "engines": doc["engines"], "clusters": doc["clusters"],
            "clusters_reason": doc["clusters_reason"]}


def to_csv(doc: dict[str, Any]) -> str:
    """One line per board entry, every board of the document."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for s in doc["sections"]:
        for r in s["rows"]:
            w.writerow([s["by"], s["key"], *("" if r[f] is None else r[f] for f in ROW_FIELDS), doc["method_version"],
                        doc["fitted_at"]])
    return out.getvalue()


def fitted_on(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _elo(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0f}"


def to_text(doc: dict[str, Any]) -> str:
    """Each board as an aligned table, under the fit's time, counts and method version."""
    if not doc["fitted"]:
        return doc["reason"] + "\n"
    lines = [f"preference board fitted {fitted_on(doc['fitted_at'])}: {doc['ratings']} ratings by {doc['raters']} "
             f"raters, {doc['resamples']} resamples, method v{doc['method_version']}"]
    if doc["method_version"] != doc["current_method_version"]:
        lines.append(f"(method v{doc['method_version']} is superseded by v{doc['current_method_version']}: refit)")
    if doc["reason"]:
        return "\n".join(lines + [doc["reason"]]) + "\n"
    for s in doc["sections"]:
        lines += ["", f"{s['title']}: {s['ratings']} ratings, {s['raters']} raters, {s['prompts']} prompts"]
        table = [("rank", "name", "elo", "95% interval", "ratings", "raters", "prompts")]
        table += [("-" if r["rank"] is None else str(r["rank"]), r["name"], _elo(r["elo"]),
                   f"{_elo(r['low'])}..{_elo(r['high'])}", str(r["ratings"]), str(r["raters"]), str(r["prompts"]))
                  for r in s["rows"]]
        widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip() for t in table]
    return "\n".join(lines) + "\n"

