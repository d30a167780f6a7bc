"""The rolling leaderboard: per board, model, dataset, region and method version, from stored rows.

Every number comes from voxwatch.metrics.series (one definition, shared with the Postgres
aggregates, the web app, the API and the alerts); this module groups rows into series, applies
the registry's exclusions and formats. Rows measured against an emulator never appear here.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import fields, replace
from typing import Collection, Iterable, Mapping

from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.paired import Comparison
from voxwatch.metrics.published import PLACES
from voxwatch.metrics.preliminary import row_reason
from voxwatch.metrics.ranking import rank_order, ranked_metric, ranking_note, ranking_title, ranks, series_id
from voxwatch.metrics.series import MIN_N, WINDOWS, MetricRow, flat, percentile_floor, series_rows
from voxwatch.metrics.specs import METRICS
from voxwatch.metrics.wer import CHARACTER, scorer_for
from voxwatch.foundation.languages import is_english
from voxwatch.foundation.observation import Observation
from voxwatch.boards.marks import ROW_FIELDS as MARK_FIELDS, model_marks
from voxwatch.boards.prices import FIELDS as PRICE_FIELDS, price_fields, shown_price
from voxwatch.metrics.price import BOARD_FIGURE_UNIT
from voxwatch.providers.lifecycle import CHECK_MAX_AGE_DAYS, Standing
from voxwatch.providers.registry import ModelInfo, Registry, RegistryError
from voxwatch.store.row_filter import RowFilter
from voxwatch.store.series_data import group


def build(rows: Iterable[Observation], registry: Registry | None = None) -> list[MetricRow]:
    """The board of some stored rows: every series' statistics (metrics.series), exclusions applied."""
    return exclude([m for key, data in group(rows).items() for m in series_rows(key, data)], registry)


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
                           p95_ci=None, mean_ci=None, note=exclusion.reason) if exclusion else r)
    return out


def _num(v: float | None, pct: bool = False, places: int = 1) -> str:
    if v is None:
        return "n/a"
    return f"{100 * v:.1f}%" if pct else f"{v:.{places}f}"


def _ci(ci: tuple[float, float] | None, pct: bool = False, places: int = 1) -> str:
    return "" if ci is None else f" [{_num(ci[0], pct, places)}, {_num(ci[1], pct, places)}]"


_PLACES = {m.name: PLACES[m.unit] for m in METRICS}  # ms to 0.1, real-time factors to 0.001 (metrics.published)


def _ordered(rows: list[MetricRow], ranked: dict) -> list[MetricRow]:
    """A board's rows by dataset and protocol, each ranking's series in rank order (unranked last), a
    series' metric rows kept together in their order."""
    series: dict = {}
    for r in rows:
        series.setdefault(series_id(r), []).append(r)

    def key(members: list[MetricRow]) -> tuple:
        first = members[0]
        return first.dataset, first.protocol, rank_order(first, ranked.get(series_id(first)))

    return [r for members in sorted(series.values(), key=key) for r in members]


TABLE_HEADER = ("rank", "model", "dataset", "region", "method", "metric", "n", "mean", "p50 [95% CI]", "p95", "max",
                "errors", "timeouts", "inaudible", "pooled WER [95% CI]", "entity errors [95% CI]", "price")
QUALITY_HEADER = ("speech quality MOS [95% CI]",)
"""The TTS and S2S boards' last column: the mean DNSMOS P.835 OVRL of the audio the models sent."""
QUALITY_BOARDS = ("tts", "s2s")


def quality_cell(r: MetricRow) -> str:
    """A series' speech quality as the CLI shows it: the mean MOS, its interval, the clips scored."""
    if r.quality_mos is None:
        return f"n/a ({r.quality_clips} scored)" if r.quality_clips else "n/a"
    return _num(r.quality_mos, places=2) + _ci(r.quality_mos_ci, places=2) + f" ({r.quality_clips} clips)"


def standings(registry: Registry | None, model_ids: Iterable[str]) -> dict[str, Standing]:
    """Each registered model's standing on the registry's day (unregistered ids have none)."""
    if registry is None:
        return {}
    return {m: registry.standing(registry.models[m]) for m in model_ids if m in registry.models}


def _language_title(title: str, language: str | None) -> str:
    """A ranking's heading with its dataset's language when that is not English (and CER where it
    is scored by characters): every ranking is one dataset, so one language."""
    if language is None or is_english(language):
        return title
    return f"{title} [language {language}, scored as {scorer_for(language).error_rate_label}]"


def format_table(rows: list[MetricRow], window: str, registry: Registry | None = None, *,
                 comparisons: Iterable[Comparison], span: str | None = None, models: Collection[str] = (),
                 languages: Mapping[str, str | None] | None = None) -> str:
    """The leaderboard as text: one line per metric of every series, each series' own figures on its
    first line (attempts, rates, pooled WER, entity error rate), its region, method version and rank (metrics.ranking);
    under each board, a line for every model of it that is retired or retires soon. `span` names
    the rows' time span when it is not the rolling window; `comparisons` are the same rows' paired
    comparisons (boards.comparisons), which the ranks come from; `models` shows only theirs, ranked
    among all the rows (a model's rank is its place on the board). `languages`: each dataset's
    language (its DatasetInfo's), named in the heading of a ranking that is not English."""
    languages = languages or {}
    shown = [r for r in rows if not models or r.model_id in models]
    if not shown:
        return f"No observations {span or 'in the last ' + window}. Run `voxwatch run` first."
    ranked = ranks(rows, METHOD_VERSION, comparisons)
    lines: list[str] = []
    for board in ("stt", "tts", "s2s"):
        mine = _ordered([r for r in shown if r.board == board], ranked)
        if not mine:
            continue
        methods = sorted({r.method_version for r in mine})
        lines.append(f"\n{board.upper()} board - {span or 'rolling ' + window}, current method v{METHOD_VERSION}"
                     + (f" (rows of method v{', v'.join(m for m in methods if m != METHOD_VERSION)} are shown, not "
                        "ranked: versions are never pooled)" if methods != [METHOD_VERSION] else ""))
        quality = board in QUALITY_BOARDS
        header = TABLE_HEADER + (QUALITY_HEADER if quality else ())
        table: list[tuple[str, ...] | str] = [header]  # a str is a ranking's heading
        for i, r in enumerate(mine):
            first = i == 0 or series_id(mine[i - 1]) != series_id(r)
            if i == 0 or (mine[i - 1].dataset, mine[i - 1].protocol) != (r.dataset, r.protocol):
                table.append(_language_title(ranking_title(r.dataset, r.protocol), languages.get(r.dataset)))
            rank = ranked.get(series_id(r))
            unit = "characters" if scorer_for(languages.get(r.dataset)).unit == CHARACTER else "words"
            wer = (_num(r.pooled_wer, True) + _ci(r.wer_ci, True) + f" ({r.wer_words} {unit})"
                   if r.pooled_wer is not None else "n/a")
            entity = (_num(r.entity_error_rate, True) + _ci(r.entity_error_rate_ci, True) + f" ({r.entities} entities)"
                      if r.entity_error_rate is not None else "n/a")
            series = (str(rank) if rank else "-", r.model_id, r.dataset, r.region, f"v{r.method_version}")
            places = _PLACES.get(r.metric, 1)
            price = shown_price(registry, r.model_id)
            table.append((*(series if first else ("",) * 5), r.metric, str(r.n), _num(r.mean, places=places),
                          _num(r.p50, places=places) + _ci(r.p50_ci, places=places), _num(r.p95, places=places),
                          _num(r.max, places=places),
                          *((_num(r.error_rate, True), _num(r.timeout_rate, True), _num(r.inaudible_rate, True), wer,
                             entity, price.cell() if price else "-") if first else ("",) * 6),
                          *(((quality_cell(r) if first else ""),) if quality else ())))
        widths = [max(len(row[i]) for row in table if not isinstance(row, str)) for i in range(len(header))]
        for k, row in enumerate(table):
            if isinstance(row, str):
                lines.append(f"-- {row}")
                continue
            lines.append("  ".join(c.ljust(w) if 1 <= i <= 5 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(row, widths))).rstrip())
            if k == 0:
                lines.append("  ".join("-" * w for w in widths))
        notes = sorted({f"{r.model_id} {r.metric}: n/a, {r.note}" for r in mine if r.note})
        lines.extend(f"  note: {n}" for n in notes)
        lines.extend(_marks(mine, registry))
        lines.extend(f"  status: {model_id} {s.notice}" for model_id, s in
                     sorted(standings(registry, {r.model_id for r in mine}).items()) if s.notice)
        lines.append(price_legend(board))
    lines.append("\n" + ranking_note() + " '-' is not ranked (superseded method, or no interval yet: n < 5 or one "
                 "tick). Intervals [95% CI] are each series' own (`voxwatch compare` shows the pairs).\nn/a: under the statistic's "
                 f"floor (n < {MIN_N}; p95 needs n >= {percentile_floor(95)}) or excluded. Latencies in ms; rtf in x "
                 "real time; rates over attempts; WER is pooled over the scored clips; speech quality (TTS, S2S) is the mean "
                 "DNSMOS P.835 OVRL (1-5, higher is better) of the audio the model sent.")
    return "\n".join(lines).lstrip("\n")


def _marks(rows: list[MetricRow], registry: Registry | None) -> list[str]:
    """A board's lines for its baselines (a script, not a model) and its preliminary series (each
    series once, on its ranked metric's reason: metrics.preliminary)."""
    models = sorted({r.model_id for r in rows})
    out = [f"  baseline: {m} is a script, not a model (a reference to read the models against)"
           for m in models if registry is not None and registry.is_baseline(m)]
    for r in rows:
        if r.metric == ranked_metric(r.protocol) and (reason := row_reason(r)) is not None:
            out.append(f"  preliminary: {r.model_id} on {r.dataset} ({r.region}, v{r.method_version}): {reason}")
    return out


def price_legend(board: str) -> str:
    """What a board's price column is: its unit, where it comes from, when it is stale (metrics.price)."""
    return (f"  price: {BOARD_FIGURE_UNIT[board]}, from the vendor's list price in the registry (its source and "
            f"check date: `voxwatch providers list`); '(stale)': checked over {CHECK_MAX_AGE_DAYS} days ago; "
            "'-': no list price recorded")


def format_csv(rows: list[MetricRow], registry: Registry | None = None) -> str:
    """Every row at full precision, with its marks (boards.marks: baseline, preliminary, the model's
    status) and its model's price fields (boards.prices) where the registry is given."""
    buf = io.StringIO()
    names = [n for f in fields(MetricRow)
             for n in ((f"{f.name}_low", f"{f.name}_high") if f.name.endswith("_ci") else (f.name,))]
    writer = csv.DictWriter(buf, fieldnames=names + list(MARK_FIELDS) + list(PRICE_FIELDS), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({**flat(r), **model_marks(registry, r.model_id, row_reason(r)).row_fields(),
                         **price_fields(registry, r.model_id)})
    return buf.getvalue()


def since(window: str, now: float | None = None) -> float:
    return (now or time.time()) - WINDOWS[window]


def from_store(store, window: str, registry: Registry | None = None, only: RowFilter | None = None) -> list[MetricRow]:
    """The rolling leaderboard over one window of a store's rows, or over the span and sets `only`
    selects (its since, when given, replaces the window's start).

    A store that keeps the aggregates current as rows arrive (Postgres) is read as is for a rolling
    window; otherwise (SQLite, a span of the user's, or some speakers' or accents' clips) they are
    computed here, by the same metrics.series, from the rows the store's SQL selects.
    """
    only = only or RowFilter()
    precomputed = getattr(store, "aggregates", None)
    if precomputed is not None and only.since is None and only.until is None and not only.by_clip:
        return exclude(precomputed(window, since(window), boards=only.boards, datasets=only.datasets,
                                   models=only.models), registry)
    start = since(window) if only.since is None else only.since
    return build(store.observations(only=replace(only, since=start)), registry)
