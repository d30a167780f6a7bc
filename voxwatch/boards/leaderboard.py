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
from voxwatch.metrics.deadline_wer import DEADLINES_MS, wer_field
from voxwatch.metrics.paired import Comparison
from voxwatch.metrics.published import PLACES
from voxwatch.metrics.preliminary import row_reason
from voxwatch.metrics.ranking import PROTOCOL_NAMES, rank_order, ranked_metric, ranking_note, ranking_title, ranks, series_id
from voxwatch.metrics.series import MIN_N, WINDOWS, MetricRow, failure_rate, flat, percentile_floor, series_rows
from voxwatch.metrics.specs import METRICS
from voxwatch.metrics.wer import CHARACTER, scorer_for
from voxwatch.foundation.languages import is_english
from voxwatch.foundation.observation import Observation
from voxwatch.boards.marks import ROW_FIELDS as MARK_FIELDS, model_marks
from voxwatch.boards.prices import FIELDS as PRICE_FIELDS, ShownPrice, price_fields, shown_price
from voxwatch.metrics.price import BOARD_FIGURE_UNIT
from voxwatch.boards import end_of_turn, kept_off
from voxwatch.boards.listing import fitted, prose
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


def _ordered(rows: list[MetricRow], ranked: dict, by_region: bool = False) -> list[MetricRow]:
    """A board's rows by dataset and protocol (and region), each ranking's series in rank order
    (unranked last), a series' metric rows kept together in their order."""
    series: dict = {}
    for r in rows:
        series.setdefault(series_id(r), []).append(r)

    def key(members: list[MetricRow]) -> tuple:
        first = members[0]
        region = first.region if by_region else ""
        return first.dataset, first.protocol, region, rank_order(first, ranked.get(series_id(first)))

    return [r for members in sorted(series.values(), key=key) for r in members]


TABLE_HEADER = ("rank", "model", "dataset", "region", "method", "metric", "n", "mean", "p50 [95% CI]", "p95", "max",
                "errors", "timeouts", "inaudible", "pooled WER [95% CI]", "entity errors [95% CI]", "price")
QUALITY_HEADER = ("speech quality MOS [95% CI]",)
"""The TTS and S2S boards' last column: the mean DNSMOS P.835 OVRL of the audio the models sent."""
QUALITY_BOARDS = ("tts", "s2s")
ANSWER_HEADER = ("answer accuracy [95% CI]",)
"""The S2S board's accuracy column, where the others show pooled WER and entity errors: an S2S reply
has no reference words, but a reply to a spoken question has an answer (METHOD "Answer accuracy")."""
_ACCURACY_AT = TABLE_HEADER.index("pooled WER [95% CI]")
DEADLINE_HEADER = (f"WER at {' / '.join(str(d) for d in DEADLINES_MS)} ms",)
"""The STT board's last column: a streaming series' pooled WER of the transcript as it stood at each
deadline after the end of speech (METHOD "WER at the deadline"); their intervals are in the API and CSV."""


def wide_header(board: str) -> tuple[str, ...]:
    """A board's every column (`--wide`): S2S answer accuracy in WER's and entity errors' place, and
    the speech quality last on the boards whose models send audio."""
    header = TABLE_HEADER if board != "s2s" else \
        TABLE_HEADER[:_ACCURACY_AT] + ANSWER_HEADER + TABLE_HEADER[_ACCURACY_AT + 2:]
    return header + (QUALITY_HEADER if board in QUALITY_BOARDS else ()) + (DEADLINE_HEADER if board == "stt" else ())


def deadline_cell(r: MetricRow) -> str:
    """A streaming series' pooled WER at each deadline as the CLI shows it, with the clips scored there."""
    if not r.deadline_clips:
        return "n/a"
    return " / ".join(_num(getattr(r, wer_field(d)), True) for d in DEADLINES_MS) + f" ({r.deadline_clips} clips)"


def answer_cell(r: MetricRow) -> str:
    """A series' answer accuracy as the CLI shows it: the share, its interval, the replies scored."""
    if r.answer_accuracy is None:
        return f"n/a ({r.answer_clips} scored)" if r.answer_clips else "n/a"
    return _num(r.answer_accuracy, True) + _ci(r.answer_accuracy_ci, True) + f" ({r.answer_clips} replies)"


HALLUCINATION_HEADER = ("hallucination [95% CI]",)
FITTED_HALLUCINATION = ("hallucination",)
"""The fitted board's last column, where a series of the board was scored on clips without speech."""
"""The STT and TTS boards' column for a series heard on clips without speech (or empty prompts): the share
that made words (or sound) from nothing, and how much (METHOD "Hallucination on non-speech"); shown
where a board has such a series."""


def hallucination_cell(r: MetricRow, short: bool = False) -> str:
    """A series' hallucination figures as the CLI shows them: the share of clips without speech with any
    invented word and the invented words per minute (STT), or the share of empty prompts with audible
    audio and its mean audible ms (TTS); '' for a series not heard on any."""
    if not r.hallucination_clips:
        return ""
    if r.hallucination_rate is None:
        return f"n/a ({r.hallucination_clips} scored)"
    share = _short_rate(r.hallucination_rate, r.hallucination_rate_ci) if short else \
        _num(r.hallucination_rate, True) + _ci(r.hallucination_rate_ci, True)
    if r.board == "tts":
        return f"{share}, {_num(r.invented_audio_ms, places=0)} ms" + ("" if short else f" ({r.hallucination_clips} prompts)")
    per_min = _num(r.invented_words_per_min, places=1) + ("" if short else _ci(r.invented_words_per_min_ci, places=1))
    return f"{share}, {per_min}/min" + ("" if short else f" ({r.invented_words} words, {r.hallucination_clips} clips)")


def _hallucinated(rows: list[MetricRow]) -> bool:
    """Whether a board's rows hold a series heard on clips without speech (its column is shown then)."""
    return any(r.hallucination_clips for r in rows)


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
                 languages: Mapping[str, str | None] | None = None, width: int | None = None,
                 emulated: Mapping[str, int] | None = None, stalled: Mapping[str, int] | None = None) -> str:
    """The leaderboard as text: one line per metric of every series, each series' own figures on its
    first line (attempts, rates, pooled WER, entity error rate), its region, method version and rank (metrics.ranking);
    under each board, a line for every model of it that is retired or retires soon. `span` names
    the rows' time span when it is not the rolling window; `comparisons` are the same rows' paired
    comparisons (boards.comparisons), which the ranks come from; `models` shows only theirs, ranked
    among all the rows (a model's rank is its place on the board). `languages`: each dataset's
    language (its DatasetInfo's), named in the heading of a ranking that is not English. `width`:
    the most useful columns fitted to it (fitted_rows: the CLI's default); None: every column.
    `emulated`: each model's rows of the span measured against an emulator, which the board never
    shows, said where a model asked for (or the whole board) has nothing else (boards.kept_off).
    `stalled`: each model's rows of the span excluded as the measuring worker's stall, said under the
    board they would have been on (boards.kept_off.stalled_line)."""
    languages, where = languages or {}, span or f"in the last {window}"
    shown = [r for r in rows if not models or r.model_id in models]
    lines = kept_off.model_lines(models, {r.model_id for r in shown}, emulated or {}, where)
    if not shown:
        return "\n".join(lines) or kept_off.no_observations(where, emulated or {})
    ranked = ranks(rows, METHOD_VERSION, comparisons)
    for board in ("stt", "tts", "s2s"):
        mine = [r for r in shown if r.board == board]
        if not mine:
            continue
        methods = sorted({r.method_version for r in mine})
        lines.append(f"\n{board.upper()} board - {span or 'rolling ' + window}, current method v{METHOD_VERSION}"
                     + (f" (rows of method v{', v'.join(m for m in methods if m != METHOD_VERSION)} are shown, not "
                        "ranked: versions are never pooled)" if methods != [METHOD_VERSION] else ""))
        if width is None:
            table = wide_rows(mine, ranked, registry, languages)
            lines.extend(fitted(table, None, right=set(range(len(table[0]))) - {1, 2, 3, 4, 5}, rule=True))
            notes = []
        else:
            table, notes = fitted_rows(mine, ranked, registry, languages)
            lines.extend(fitted(table, width, right=set(range(3, len(table[0]))) | {0}, rule=True, flow=True,
                                flexible={1}, least={0: RANK_WIDTH}))
        notes += sorted({f"  note: {r.model_id} {r.metric}: n/a, {r.note}" for r in mine if r.note})
        notes += _marks(mine, registry)
        notes += [f"  status: {model_id} {s.notice}" for model_id, s in
                  sorted(standings(registry, {r.model_id for r in mine}).items()) if s.notice]
        held_off = kept_off.stalled_line({m: n for m, n in (stalled or {}).items() if m in {r.model_id for r in mine}},
                                         where)
        lines.extend(prose(n, width, "  ") for n in notes + [held_off] * bool(held_off) + [price_legend(board)])
        eot = end_of_turn.eot_lines(mine, registry)
        if eot:
            lines.append(f"\n{board.upper()} board, end of turn (streaming): false cut-offs against the latency at the end")
            lines.extend(fitted([end_of_turn.HEADER, *(end_of_turn.cells(e) for e in eot)], width,
                                right={3, 4, 5, 6}, rule=True))
            lines.append(prose(end_of_turn.LEGEND, width, "  "))
    lines.append(prose("\n" + ranking_note() + " '-' is not ranked (superseded method, or no interval yet: n < 5 or "
                       "one tick). Intervals [95% CI] are each series' own (`voxwatch compare` shows the pairs).\nn/a: "
                       f"under the statistic's floor (n < {MIN_N}; p95 needs n >= {percentile_floor(95)}) or excluded. "
                       "Latencies in ms; rtf in x real time; rates over attempts; WER is pooled over the scored clips; "
                       "speech quality (TTS, S2S) is the mean DNSMOS P.835 OVRL (1-5, higher is better) of the audio "
                       "the model sent" + (ANSWER_LEGEND if any(r.board == "s2s" for r in shown) else "")
                       + (HALLUCINATION_LEGEND if _hallucinated(shown) else "") + "." + ("" if width is None else FITTED_LEGEND), width))
    return "\n".join(lines).lstrip("\n")


def wide_rows(mine: list[MetricRow], ranked: dict, registry: Registry | None,
              languages: Mapping[str, str | None]) -> list[tuple[str, ...] | str]:
    """A board's every column (`--wide`): the header, then each ranking's heading (a str) and its
    series' metric rows."""
    quality, answers, deadlines = mine[0].board in QUALITY_BOARDS, mine[0].board == "s2s", mine[0].board == "stt"
    invented = _hallucinated(mine)
    table: list[tuple[str, ...] | str] = [wide_header(mine[0].board) + (HALLUCINATION_HEADER if invented else ())]
    mine = _ordered(mine, ranked)
    for i, r in enumerate(mine):
        first = i == 0 or series_id(mine[i - 1]) != series_id(r)
        if i == 0 or (mine[i - 1].dataset, mine[i - 1].protocol) != (r.dataset, r.protocol):
            table.append("-- " + _language_title(ranking_title(r.dataset, r.protocol), languages.get(r.dataset)))
        rank = ranked.get(series_id(r))
        unit = _count_unit(r, languages)
        wer = (_num(r.pooled_wer, True) + _ci(r.wer_ci, True) + f" ({r.wer_words} {unit})"
               if r.pooled_wer is not None else "n/a")
        entity = (_num(r.entity_error_rate, True) + _ci(r.entity_error_rate_ci, True) + f" ({r.entities} entities)"
                  if r.entity_error_rate is not None else "n/a")
        series = (str(rank) if rank else "-", r.model_id, r.dataset, r.region, f"v{r.method_version}")
        places = _PLACES.get(r.metric, 1)
        price = shown_price(registry, r.model_id)
        accuracy = (answer_cell(r),) if answers else (wer, entity)
        table.append((*(series if first else ("",) * 5), r.metric, str(r.n), _num(r.mean, places=places),
                      _num(r.p50, places=places) + _ci(r.p50_ci, places=places), _num(r.p95, places=places),
                      _num(r.max, places=places),
                      *((_num(r.error_rate, True), _num(r.timeout_rate, True), _num(r.inaudible_rate, True),
                         *accuracy, price.cell() if price else "-") if first else ("",) * (4 + len(accuracy))),
                      *(((quality_cell(r) if first else ""),) if quality else ()),
                      *(((deadline_cell(r) if first else ""),) if deadlines else ()),
                      *(((hallucination_cell(r) if first else ""),) if invented else ())))
    return table


ANSWER_LEGEND = ("; answer accuracy (S2S) is the share of replies to spoken questions in which the instrument heard "
                 "the answer (higher is better)")
"""The board legend's words on answer accuracy."""
HALLUCINATION_LEGEND = ("; hallucination: on clips without speech (STT), the share with any word transcribed and the "
                        "words invented per minute heard; on empty prompts (TTS), the share answered with audible audio "
                        "and its mean audible ms (lower is better; no latency is measured on either)")
"""The board legend's words on hallucination on non-speech."""


RANK_WIDTH = 5
"""The rank column's width in a fitted table: a rank range such as '1-4' fits."""
_FIRST = ("rank", "model", "metric", "n", "p50 [95% CI]", "failed")
FITTED_HEADERS = {"stt": (*_FIRST, "pooled WER", "entity errors", "price"),
                  "tts": (*_FIRST, "pooled WER", "entity errors", "price", "MOS"),
                  "s2s": (*_FIRST, "answer accuracy", "price", "MOS")}
"""A fitted board's columns: what a reader chooses a model by (its speed with its interval, how often
it failed, its accuracy or speech quality, its price). The dataset and region head each ranking, a
series of a superseded method says its version beside its model; an S2S reply has no WER (its
accuracy is whether it answered a spoken question) and an STT none of the audio a TTS or S2S model
sends. `--wide` adds the rest."""
FITTED_LEGEND = (" failed: the attempts that failed in any way (errors, timeouts, inaudible replies together). "
                 "`--wide` prints every column: the dataset, region and method, mean, p95 and max, each kind of "
                 "failure, and each series' counts.")


def fitted_rows(mine: list[MetricRow], ranked: dict, registry: Registry | None,
                languages: Mapping[str, str | None]) -> tuple[list[tuple[str, ...] | str], list[str]]:
    """A board's most useful columns (FITTED_HEADERS), each ranking headed by its dataset and region,
    intervals to the precision a reader compares them at; and its notes: the counts its pooled
    figures are over, and a list price that has no figure in the board's unit."""
    header = FITTED_HEADERS[mine[0].board] + (FITTED_HALLUCINATION if _hallucinated(mine) else ())
    table: list[tuple[str, ...] | str] = [header]
    counts: dict[str, list[int]] = {}
    notes: dict[str, None] = {}  # in order, each once
    mine = _ordered(mine, ranked, by_region=True)
    for i, r in enumerate(mine):
        before = mine[i - 1] if i else None
        if _nothing_said(r) and before is not None and series_id(before) == series_id(r):
            continue  # a clip without speech (an empty prompt) keeps no clock: its series' one line says what it made
        if before is None or (before.dataset, before.protocol, before.region) != (r.dataset, r.protocol, r.region):
            title = (f"{r.dataset}, {PROTOCOL_NAMES.get(r.protocol, r.protocol)}: nothing to say, no clock kept"
                     if _nothing_said(r) else _language_title(ranking_title(r.dataset, r.protocol), languages.get(r.dataset)))
            table.append(f"-- {title}; region {r.region}")
        places = max(0, _PLACES.get(r.metric, 1) - 1)
        cells = {"metric": r.metric, "n": str(r.n), "p50 [95% CI]": _num(r.p50, places=places) + _ci(r.p50_ci, places=places)}
        if before is None or series_id(before) != series_id(r):
            price = shown_price(registry, r.model_id)
            if price is not None and price.figure is None:  # a list price in another unit: said under the board
                notes[f"  price: {r.model_id} lists {price.list_text} (no figure in {BOARD_FIGURE_UNIT[r.board]})"] = None
            cells.update(_series_cells(r, ranked.get(series_id(r)), price))
            for figure, count, what in ((r.pooled_wer, r.wer_words, f"{_count_unit(r, languages)} (WER)"),
                                        (r.entity_error_rate, r.entities, "entities"),
                                        (r.quality_mos, r.quality_clips, "clips (MOS)"),
                                        (r.answer_accuracy, r.answer_clips, "replies (answer accuracy)")):
                if figure is not None:
                    counts.setdefault(what, []).append(count)
        table.append(tuple(cells.get(c, "") for c in header))
    counted = ", ".join(f"{min(c)}-{max(c)} {what}" if min(c) != max(c) else f"{c[0]} {what}"
                        for what, c in counts.items())
    counted_line = [f"  counted per series: {counted}; `--wide` shows each series' count"] if counts else []
    return table, counted_line + list(notes)


def _nothing_said(r: MetricRow) -> bool:
    """A series of clips without speech or of empty prompts (METHOD "Hallucination on non-speech"): scored
    for what it made from nothing, never timed."""
    return bool(r.hallucination_clips) and r.n == 0


def _series_cells(r: MetricRow, rank: int | str | None, price: ShownPrice | None) -> dict[str, str]:
    """A series' own cells of a fitted board, on its first metric's row."""
    superseded = "" if r.method_version == METHOD_VERSION else f" (v{r.method_version})"
    return {"rank": str(rank) if rank else "-", "model": r.model_id + superseded, "failed": _num(failure_rate(r), True),
            "pooled WER": _short_rate(r.pooled_wer, r.wer_ci),
            "entity errors": _short_rate(r.entity_error_rate, r.entity_error_rate_ci),
            "answer accuracy": _short_rate(r.answer_accuracy, r.answer_accuracy_ci),
            "price": "-" if price is None else "see below" if price.figure is None else price.cell(),
            "MOS": "n/a" if r.quality_mos is None else _num(r.quality_mos, places=2) + _ci(r.quality_mos_ci, places=2),
            "hallucination": hallucination_cell(r, short=True)}


def _short_rate(value: float | None, ci: tuple[float, float] | None) -> str:
    """A rate with its interval, the percent sign once: '9.1% [6.0, 12.2]'."""
    if value is None:
        return "n/a"
    return f"{100 * value:.1f}%" + ("" if ci is None else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]")


def _count_unit(r: MetricRow, languages: Mapping[str, str | None]) -> str:
    """What a series' pooled error rate counts: words, or characters where its language is scored by them."""
    return "characters" if scorer_for(languages.get(r.dataset)).unit == CHARACTER else "words"


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
