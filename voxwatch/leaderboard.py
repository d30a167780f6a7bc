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
from collections import Counter
from dataclasses import asdict, dataclass, fields, replace
from typing import Iterable

from voxwatch.metrics.specs import for_protocol
from voxwatch.metrics.stats import Interval, bootstrap_percentile_ci, bootstrap_pooled_ci, rate, summarize
from voxwatch.metrics.wer import WordErrors
from voxwatch.observation import FAILED, Observation
from voxwatch.providers.registry import ModelInfo, Registry, RegistryError

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
    p99: float | None
    max: float | None
    std: float | None
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


SeriesKey = tuple[str, str, str, str, str, str, str]
"""board, model_id, dataset, region, method_version, protocol, instrument ("" when none): one leaderboard series."""


def series_key(r: Observation) -> SeriesKey:
    instrument = r.instrument_id if r.board == "tts" else None
    return r.board, r.model_id, r.dataset, r.region, r.method_version, r.protocol, instrument or ""


def build(rows: Iterable[Observation], registry: Registry | None = None) -> list[MetricRow]:
    groups: dict[SeriesKey, list[Observation]] = {}
    for r in rows:
        if not r.emulator:
            groups.setdefault(series_key(r), []).append(r)
    out: list[MetricRow] = []
    for key, members in sorted(groups.items()):
        ok = [r for r in members if r.status == "ok"]
        values = {spec.name: [getattr(r, spec.name) for r in ok] for spec in for_protocol(key[5], headline_only=True)}
        parts = [WordErrors(r.substitutions, r.deletions, r.insertions, r.ref_words) for r in ok if r.ref_words is not None]
        out.extend(series_rows(key, [r.status for r in members], values, [p.errors for p in parts],
                               [p.ref_words for p in parts]))
    return exclude(out, registry)


def series_rows(key: SeriesKey, statuses: list[str], values: dict[str, list[float | None]], errors: list[int],
                words: list[int]) -> list[MetricRow]:
    """One series' rows, one per headline metric, from just the columns the statistics read.

    values maps each headline metric to its value on every `ok` row; errors (S + D + I) and words
    (N) are the WER parts of the `ok` rows that have them. The Postgres store calls this on the
    columns it fetches, so both stores compute every number with the same code.
    """
    board, model_id, dataset, region, method, protocol, instrument = key
    count = Counter(statuses)
    timeouts = count["timeout"]
    failed = sum(n for s, n in count.items() if s in FAILED) - timeouts
    total_words = sum(words)
    wer = rate(sum(errors), total_words)  # pooled WER (metrics.wer.pooled_wer): sum(S + D + I) / sum(N)
    wer_ci = _pair(bootstrap_pooled_ci(errors, words))
    out = []
    for spec in for_protocol(protocol, headline_only=True):
        s = summarize(values[spec.name])
        out.append(MetricRow(board, model_id, dataset, region, method, spec.name, s.n, s.mean, s.p50, s.p95, s.p99,
                             s.max, s.std, len(statuses), rate(failed, len(statuses)), rate(timeouts, len(statuses)),
                             wer, total_words, _pair(bootstrap_percentile_ci(values[spec.name], 50)),
                             _pair(bootstrap_percentile_ci(values[spec.name], 95)), wer_ci, None, instrument or None))
    return out


def exclude(rows: list[MetricRow], registry: Registry | None) -> list[MetricRow]:
    """Blank the statistics of metrics the registry excludes for a model, with its reason as the note."""
    if registry is None:
        return rows
    models: dict[str, ModelInfo | None] = {}
    out = []
    for r in rows:
        if r.model_id not in models:
            try:
                models[r.model_id] = registry.resolve(r.model_id)
            except RegistryError:
                models[r.model_id] = None
        exclusion = models[r.model_id].excluded(r.metric) if models[r.model_id] else None
        out.append(replace(r, n=0, mean=None, p50=None, p95=None, p99=None, max=None, std=None, p50_ci=None,
                           p95_ci=None, note=exclusion.reason) if exclusion else r)
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


def flat(row: MetricRow) -> dict:
    """One column per value: each interval becomes <name>_low and <name>_high (CSV, the Postgres aggregates)."""
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
        writer.writerow(flat(r))
    return buf.getvalue()


def format_json(rows: list[MetricRow], window: str) -> str:
    return json.dumps({"window": window, "generated_at": time.time(), "rows": [asdict(r) for r in rows]}, indent=2)


def since(window: str, now: float | None = None) -> float:
    return (now or time.time()) - WINDOWS[window]


def from_store(store, window: str, registry: Registry | None = None) -> list[MetricRow]:
    """The rolling leaderboard over one window of a store's rows.

    A store that keeps the aggregates current as rows arrive (Postgres) is read as is; otherwise
    (SQLite) they are computed here from the window's rows.
    """
    precomputed = getattr(store, "aggregates", None)
    if precomputed is not None:
        return exclude(precomputed(window, since(window)), registry)
    return build(store.observations(since=since(window)), registry)
