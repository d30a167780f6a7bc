"""A series comparison board's lines over each of its use cases in one window: what the comparison
page, its API and CSV show (web/compare_views adds the price and the rounding), computed from the
window's rows (SQLite, a store no refresh has seen) or from the board's stored series (Postgres'
kept views, store.compare_views, refreshed as ticks finish by boards.compare_refresh). Both go
through boards.use_cases.pooled_comparison, so a kept view is the view the rows make.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

from voxwatch.boards.use_cases import (CompareBoard, UseCase, accuracy_of, board_rows, chosen_use_case,
                                       pooled_comparison, use_cases_of)
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.hallucination import EMPTY_PROMPT, NONSPEECH
from voxwatch.metrics.preliminary import row_reason
from voxwatch.metrics.ranking import rank_text, series_id, why_unranked
from voxwatch.metrics.series import MetricRow, SeriesData, series_rows
from voxwatch.providers.registry import Registry
from voxwatch.store.series_data import group


EVERY = "*"
"""from_series' `only` for the lines of every use case."""
VIEW_FORMAT = 5
"""The kept view's format: 2 gave each line its preliminary reason, 3 made S2S single turn's accuracy its
answer accuracy (2's was the speech quality), 4 put the latency's p95 beside its p50, 5 gave each line its
hallucination figures. A view kept in an older format is not read (the page
computes its lines from the rows, as SQLite's do) rather than shown without a warning or as another figure."""


@dataclass(frozen=True)
class Line:
    """One model's line: its figures as computed (the document rounds them)."""
    model_id: str
    region: str
    instrument: str
    rank: str | None  # metrics.ranking.Rank as printed: "2", "1-4"
    unranked: str | None
    latency_n: int
    latency_p50: float | None
    latency_p50_ci: tuple[float, float] | None
    accuracy_n: int
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None
    on_frontier: bool
    quality_n: int = 0  # speech quality (MOS) beside the accuracy: a TTS voice's, an S2S model's replies
    quality: float | None = None
    quality_ci: tuple[float, float] | None = None
    preliminary_reason: str | None = None  # metrics.preliminary's, of the pooled series or the conversations
    accuracy_passed: int | None = None  # where the accuracy is a share of items (adherence): how many passed
    not_judged: tuple[str, ...] = ()  # dimensions others on the table were judged on and this line was not
    latency_p95: float | None = None  # beside the p50 (n/a under p95's floor, 100 values)
    latency_p95_ci: tuple[float, float] | None = None
    # hallucination on non-speech (METHOD "Hallucination on non-speech"): the model's figures on the window's
    # clips without speech (STT) or empty prompts (TTS), whatever the use case: a model invents words alike on any
    hallucination_n: int = 0
    hallucination: float | None = None
    hallucination_ci: tuple[float, float] | None = None
    invented_words_per_min: float | None = None
    invented_audio_ms: float | None = None

    @property
    def key(self) -> str:
        return "|".join((self.model_id, self.region, self.instrument))


@dataclass(frozen=True)
class CaseLines:
    """A use case's lines, in the page's order, and the series left out for lack of a dataset."""
    use_case: UseCase
    lines: list[Line]
    left_out: list[str]


@dataclass(frozen=True)
class CompareView:
    """A board's use cases in one window (the default ones first) and the lines of those computed."""
    board: str
    window: str
    cases: list[UseCase]
    lines: dict[str, CaseLines]
    computed_at: float
    statistic: str = "p50"  # the latency statistic ranks, the frontier and the order read


def ordered(lines: Iterable[Line], statistic: str = "p50") -> list[Line]:
    """Ranked lines first, each part by the latency statistic (the ranked estimate, p50 unless a page
    asks for p95; n/a last), ties by model id: no line stands above one with a lower figure
    (metrics.ranking.rank_order)."""
    def figure(x: Line) -> float | None:
        return getattr(x, f"latency_{statistic}")

    return sorted(lines, key=lambda x: (x.rank is None, figure(x) is None, figure(x) or 0.0,
                                        x.model_id, x.region, x.instrument))


NOTHING_SAID = (NONSPEECH, EMPTY_PROMPT)
"""The conditions of the datasets with nothing to say: no use case of their own (they have no latency or
accuracy), their figures beside every use case's lines."""


def heard_nothing(series: Mapping[SeriesKey, SeriesData],
                  datasets: Mapping[str, tuple[str | None, str | None]]) -> dict[tuple[str, str], MetricRow]:
    """Each (model, region)'s series on a dataset with nothing to say, as metrics.series summarizes it (its
    first row: the hallucination figures are the series'); one such dataset a board. Not by instrument: an
    empty prompt's row is heard by none (a TTS line's instrument scores its speech, not its silence)."""
    out = {}
    for key, data in series.items():
        if datasets.get(key.dataset, (None, None))[0] in NOTHING_SAID:
            out[(key.model_id, key.region)] = series_rows(key, data)[0]
    return out


def case_lines(series: Mapping[SeriesKey, SeriesData], board: CompareBoard, case: UseCase,
               registry: Registry | None, statistic: str = "p50",
               nothing: Mapping[tuple[str, str], MetricRow] | None = None) -> CaseLines:
    """The lines of a use case from the board's series of the window, ranked on the latency `statistic`,
    each with its model's figures on the clips with nothing to say (`nothing`: heard_nothing's)."""
    c = pooled_comparison(series, board, case, registry, statistic)
    lines = []
    for r in c.rows:
        if r.metric != board.latency:
            continue
        sid = series_id(r)
        silent = (nothing or {}).get((r.model_id, r.region))
        invented = {} if silent is None else dict(
            hallucination_n=silent.hallucination_clips, hallucination=silent.hallucination_rate,
            hallucination_ci=silent.hallucination_rate_ci, invented_words_per_min=silent.invented_words_per_min,
            invented_audio_ms=silent.invented_audio_ms)
        figure, interval, counted = accuracy_of(r, board)
        lines.append(Line(r.model_id, r.region, r.instrument or "", rank_text(c.ranks.get(sid)),
                          why_unranked(r, METHOD_VERSION, statistic),
                          r.n, r.p50, r.p50_ci, counted, figure, interval, sid in c.on_frontier,
                          quality_n=r.quality_clips, quality=r.quality_mos, quality_ci=r.quality_mos_ci,
                          preliminary_reason=row_reason(r), latency_p95=r.p95, latency_p95_ci=r.p95_ci, **invented))
    left_out = [f"{k.model_id} ({k.region}): not measured on {', '.join(ds)}" for k, ds in c.missing.items()]
    return CaseLines(case, ordered(lines, statistic), left_out)


def from_series(series: Mapping[SeriesKey, SeriesData], datasets: Mapping[str, tuple[str | None, str | None]],
                board: CompareBoard, window: str, registry: Registry | None, at: float,
                only: str | None = EVERY, statistic: str = "p50") -> CompareView:
    """The view of a window from the board's series and their datasets' (condition, language): the
    lines of every use case (only=EVERY, what is kept), or of the one a page asks for (None: the
    first; a ValueError naming the choices for an unknown one), ranked on the latency `statistic`."""
    cases = use_cases_of({d: datasets[d] for d in {k.dataset for k in series} if datasets[d][0] not in NOTHING_SAID})
    chosen = cases if only == EVERY else [u for u in [chosen_use_case(cases, only)] if u is not None]
    nothing = heard_nothing(series, datasets)
    return CompareView(board.id, window, cases,
                       {u.id: case_lines(series, board, u, registry, statistic, nothing) for u in chosen}, at,
                       statistic)


def from_rows(rows: Iterable[Observation], board: CompareBoard, window: str, registry: Registry | None, at: float,
              only: str | None = EVERY, statistic: str = "p50") -> CompareView:
    """The view of a window from its rows (the board's protocol and current method are kept)."""
    mine = board_rows(rows, board)
    return from_series(group(mine), {r.dataset: (r.condition, r.language) for r in mine}, board, window, registry,
                       at, only, statistic)


def to_json(view: CompareView) -> dict:
    return {"format": VIEW_FORMAT, "board": view.board, "window": view.window, "computed_at": view.computed_at,
            "cases": [asdict(u) for u in view.cases],
            "lines": {cid: {"use_case": asdict(c.use_case), "lines": [asdict(x) for x in c.lines],
                            "left_out": c.left_out} for cid, c in view.lines.items()}}


def is_current(data: dict) -> bool:
    """Whether a kept view is in this code's format (one kept before it lacks a line's warnings)."""
    return data.get("format") == VIEW_FORMAT


def from_json(data: dict) -> CompareView:
    def case(u: dict) -> UseCase:
        return UseCase(u["id"], u["title"], tuple(u["datasets"]))

    def line(x: dict) -> Line:
        pairs = {k: tuple(x[k]) if x.get(k) is not None else None
                 for k in ("latency_p50_ci", "accuracy_ci", "quality_ci", "latency_p95_ci", "hallucination_ci")}
        rank = x.get("rank")  # a view kept before ranks were ranges holds an int
        return Line(**{**x, **pairs, "rank": None if rank is None else str(rank),
                       "not_judged": tuple(x.get("not_judged", ()))})

    return CompareView(data["board"], data["window"], [case(u) for u in data["cases"]],
                       {cid: CaseLines(case(c["use_case"]), [line(x) for x in c["lines"]], c["left_out"])
                        for cid, c in data["lines"].items()}, data["computed_at"])
