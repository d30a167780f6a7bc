"""The rolling leaderboard: per board, model, dataset, region and method version, from stored rows.

Statistics come from voxwatch.metrics.stats (n < 5 is n/a); the error rate counts every attempt
that did not end `ok`; pooled WER is sum(S + D + I) / sum(N) over the rows that have WER parts.
Rows measured against an emulator never appear here.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import asdict, dataclass, fields
from typing import Iterable

from voxwatch.metrics.specs import for_protocol
from voxwatch.metrics.stats import Interval, bootstrap_percentile_ci, bootstrap_pooled_ci, rate, summarize
from voxwatch.metrics.wer import WordErrors, pooled_wer
from voxwatch.observation import FAILED, Observation
from voxwatch.providers.registry import Registry, RegistryError

WINDOWS = {"24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400}


@dataclass(frozen=True)
class MetricRow:
    board: str
    model_id: str
    dataset: str
    region: str
    method_version: str
    metric: str
    n: int
    mean: float | None
    p50: float | None
    p95: float | None
    max: float | None
    attempts: int
    error_rate: float | None
    timeout_rate: float | None
    pooled_wer: float | None
    wer_words: int
    p50_ci: tuple[float, float] | None = None  # bootstrap 95 % over clips
    p95_ci: tuple[float, float] | None = None
    wer_ci: tuple[float, float] | None = None
    note: str | None = None
    instrument: str | None = None  # TTS: the STT that scored intelligibility (never pooled across)


def build(rows: Iterable[Observation], registry: Registry | None = None) -> list[MetricRow]:
    groups: dict[tuple, list[Observation]] = {}
    for r in rows:
        if r.emulator:
            continue
        instrument = r.instrument_id if r.board == "tts" else None
        groups.setdefault((r.board, r.model_id, r.dataset, r.region, r.method_version, r.protocol, instrument or ""),
                          []).append(r)
    out: list[MetricRow] = []
    for (board, model_id, dataset, region, method, protocol, instrument), members in sorted(groups.items()):
        try:
            model = registry.resolve(model_id) if registry else None
        except RegistryError:
            model = None
        ok = [r for r in members if r.status == "ok"]
        errors = sum(r.status in FAILED and r.status != "timeout" for r in members)
        timeouts = sum(r.status == "timeout" for r in members)
        parts = [WordErrors(r.substitutions, r.deletions, r.insertions, r.ref_words) for r in ok if r.ref_words is not None]
        wer = pooled_wer(parts)
        wer_ci = _pair(bootstrap_pooled_ci([p.errors for p in parts], [p.ref_words for p in parts]))
        for spec in for_protocol(protocol, headline_only=True):
            exclusion = model.excluded(spec.name) if model else None
            values = [] if exclusion else [getattr(r, spec.name) for r in ok]
            s = summarize(values)
            out.append(MetricRow(board, model_id, dataset, region, method, spec.name, s.n, s.mean, s.p50, s.p95, s.max,
                                 len(members), rate(errors, len(members)), rate(timeouts, len(members)), wer,
                                 sum(p.ref_words for p in parts), _pair(bootstrap_percentile_ci(values, 50)),
                                 _pair(bootstrap_percentile_ci(values, 95)), wer_ci,
                                 exclusion.reason if exclusion else None, instrument or None))
    return out


def _pair(ci: Interval | None) -> tuple[float, float] | None:
    return (ci.low, ci.high) if ci else None


def _num(v: float | None, pct: bool = False) -> str:
    if v is None:
        return "n/a"
    return f"{100 * v:.1f}%" if pct else f"{v:.1f}"


def format_table(rows: list[MetricRow], window: str) -> str:
    if not rows:
        return f"No observations in the last {window}. Run `voxwatch run` first."
    lines: list[str] = []
    header = ("model", "dataset", "metric", "n", "mean", "p50", "p95", "max", "errors", "pooled WER")
    for board in ("stt", "tts", "s2s"):
        mine = [r for r in rows if r.board == board]
        if not mine:
            continue
        regions = sorted({r.region for r in mine})
        methods = sorted({r.method_version for r in mine})
        lines.append(f"\n{board.upper()} board - rolling {window}, region {', '.join(regions)}, method v{', v'.join(methods)}"
                     + (" (series changed method: versions are never pooled)" if len(methods) > 1 else ""))
        table = [header]
        for i, r in enumerate(mine):
            first = i == 0 or (mine[i - 1].model_id, mine[i - 1].dataset) != (r.model_id, r.dataset)
            wer = _num(r.pooled_wer, True) + (f" ({r.wer_words} words)" if r.pooled_wer is not None else "")
            table.append((r.model_id if first else "", r.dataset if first else "", r.metric, str(r.n), _num(r.mean),
                          _num(r.p50), _num(r.p95), _num(r.max), _num(r.error_rate, True) if first else "",
                          wer if first else ""))
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        for k, row in enumerate(table):
            lines.append("  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
            if k == 0:
                lines.append("  ".join("-" * w for w in widths))
        notes = sorted({f"{r.model_id} {r.metric}: n/a, {r.note}" for r in mine if r.note})
        lines.extend(f"  note: {n}" for n in notes)
    lines.append("\nn/a: fewer than 5 samples (or excluded). Latencies in ms; rtf in x real time; "
                 "WER is pooled over the clips (words scored).")
    return "\n".join(lines).lstrip("\n")


def _flat(row: MetricRow) -> dict:
    """One column per value: each interval becomes <name>_low and <name>_high."""
    out = {}
    for name, value in asdict(row).items():
        if name.endswith("_ci"):
            out[f"{name}_low"], out[f"{name}_high"] = value if value else (None, None)
        else:
            out[name] = value
    return out


def format_csv(rows: list[MetricRow]) -> str:
    buf = io.StringIO()
    names = [n for f in fields(MetricRow)
             for n in ((f"{f.name}_low", f"{f.name}_high") if f.name.endswith("_ci") else (f.name,))]
    writer = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow(_flat(r))
    return buf.getvalue()


def format_json(rows: list[MetricRow], window: str) -> str:
    return json.dumps({"window": window, "generated_at": time.time(), "rows": [asdict(r) for r in rows]}, indent=2)


def since(window: str, now: float | None = None) -> float:
    return (now or time.time()) - WINDOWS[window]


def from_store(store, window: str, registry: Registry | None = None) -> list[MetricRow]:
    """The rolling leaderboard over one window of a store's rows."""
    return build(store.observations(since=since(window)), registry)
