"""The comparison boards and their use cases: which rows a comparison page pools, and what it plots.

A comparison board is one ranking's protocol (streaming STT, batch STT, streaming TTS, S2S single
turn; the S2S conversations are web/compare_views' own). Its use cases are named sets of the
window's datasets, by condition: English (or unnamed-language) datasets by their condition group
(clean, phone line, noisy, ...), another language's datasets by that group and the language. The
figures over a use case are metrics.use_case's (pooled rows, one series per model, region and
instrument, current method only); the ranks come from paired comparisons of those pooled series
(metrics.paired, metrics.ranking), as a board's do per dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from voxwatch.boards.leaderboard import exclude
from voxwatch.foundation.languages import is_english
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.deadline_wer import DEADLINES_MS, wer_field
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.paired import Comparison, compare, compare_tail
from voxwatch.metrics.ranking import RANK_RULE, Rank, comparable, ranked_metric, ranks, series_id
from voxwatch.metrics.series import MetricRow, SeriesData, series_rows
from voxwatch.metrics.use_case import Point, frontier, told_apart, use_case_series
from voxwatch.providers.registry import Registry


@dataclass(frozen=True)
class CompareBoard:
    """A comparison page's board: what it reads (a board's protocol) and its accuracy figure."""
    id: str
    title: str
    board: str
    protocol: str
    accuracy: str  # the MetricRow field plotted against latency ("pooled_wer", "answer_accuracy"), or "adherence"
    accuracy_title: str
    accuracy_lower_is_better: bool
    accuracy_is_rate: bool = True  # drawn and printed in percent

    @property
    def latency(self) -> str:
        """The headline latency: the protocol's ranked metric (for conversations, V2V per turn)."""
        return ranked_metric(self.protocol) or "v2v_ms"


COMPARE_BOARDS: dict[str, CompareBoard] = {b.id: b for b in (
    CompareBoard("stt-stream", "Streaming STT", "stt", "stt-stream", "pooled_wer", "pooled WER", True),
    *(CompareBoard(f"stt-stream-at-{d}ms", f"Streaming STT, WER at {d} ms", "stt", "stt-stream", wer_field(d),
                   f"WER {d} ms after the end of speech", True) for d in DEADLINES_MS),
    CompareBoard("stt-batch", "Batch STT", "stt", "stt-batch", "pooled_wer", "pooled WER", True),
    CompareBoard("tts", "Streaming TTS", "tts", "tts-stream", "pooled_wer", "pooled WER", True),  # the instrument's
    CompareBoard("s2s", "S2S single turn", "s2s", "s2s", "answer_accuracy", "answer accuracy", False),
    CompareBoard("s2s-conversations", "S2S conversations", "s2s", "s2s-conversation", "adherence",
                 "instruction adherence", False),
)}
"""Every comparison page by its id (the path's /compare/<id>)."""
SERIES_BOARDS = tuple(b for b in COMPARE_BOARDS if COMPARE_BOARDS[b].accuracy != "adherence")

CONDITION_GROUPS = {"clean": ("clean", "clean audio"), "text": ("prompts", "text prompts"),
                    "phonecodec": ("phone", "phone line"), "phone-mulaw": ("phone", "phone line"),
                    "noise": ("noisy", "noisy"), "noisegap": ("noisy", "noisy"),
                    "farfield": ("far-field", "far-field"), "clipping": ("clipped", "clipped"),
                    "reverb": ("reverberant", "reverberant room"), "accent": ("accented", "accented speech"),
                    "questions": ("questions", "spoken questions")}
"""A dataset's condition -> its use case's id and words (an unlisted condition is a use case of its own)."""
DEFAULT_USE_CASES = ("questions", "clean", "prompts")
"""The use cases a page opens on, in this order (spoken questions first: S2S answer accuracy needs them)."""
RANKS_NOTE = (f"Ranks per use case and region by the headline latency's p50 over the use case's datasets: {RANK_RULE}. "
              "The frontier reads the same verdicts: a model is off it only where another is shown better on one "
              "figure and is no worse on the other.")
"""What a comparison page's rank means (metrics.ranking over the pooled series)."""
TAIL_RANKS_NOTE = (RANKS_NOTE.replace("latency's p50", "latency's p95").replace("ranked median", "ranked p95")
                   + " On p95 the paired comparisons are of the two p95s on the shared clips (a clustered bootstrap); "
                   "a model under 100 values has no p95 and no rank.")
"""The same, on a page ranked on the latency's p95 (?statistic=p95)."""


@dataclass(frozen=True)
class UseCase:
    id: str
    title: str
    datasets: tuple[str, ...]


def use_case_of(condition: str | None, language: str | None) -> tuple[str, str]:
    """A dataset's use case (id, words) from its condition and language."""
    cid, words = CONDITION_GROUPS.get(condition or "", (condition or "unnamed", condition or "unnamed condition"))
    if language and not is_english(language):
        return f"{cid}-{language}", f"{words}, {language}"
    return cid, words


def use_cases_of(datasets: Mapping[str, tuple[str | None, str | None]]) -> list[UseCase]:
    """The use cases some datasets make (from each one's condition and language), the default ones
    first, then by id."""
    members: dict[tuple[str, str], set[str]] = {}
    for dataset, (condition, language) in datasets.items():
        members.setdefault(use_case_of(condition, language), set()).add(dataset)
    found = [UseCase(cid, words, tuple(sorted(ds))) for (cid, words), ds in members.items()]
    return sorted(found, key=lambda u: (DEFAULT_USE_CASES.index(u.id) if u.id in DEFAULT_USE_CASES
                                        else len(DEFAULT_USE_CASES), u.id))


def chosen_use_case(cases: list[UseCase], wanted: str | None) -> UseCase | None:
    """The use case a page asked for (None: the first, a default when there is one); a ValueError
    naming the choices for an unknown one."""
    if wanted is None:
        return cases[0] if cases else None
    for u in cases:
        if u.id == wanted:
            return u
    raise ValueError(f"no use case {wanted!r} on this board in this window: the use cases are "
                     f"{', '.join(u.id for u in cases) or 'none'}")


@dataclass(frozen=True)
class SeriesComparison:
    """A use case's pooled series: each one's rows (one per headline metric), ranks, frontier and
    the series left out for lack of a dataset."""
    rows: list[MetricRow]
    comparisons: list[Comparison]
    ranks: dict[SeriesKey, Rank | None]
    on_frontier: set[SeriesKey]
    missing: dict[SeriesKey, tuple[str, ...]]


def board_rows(rows: Iterable[Observation], board: CompareBoard) -> list[Observation]:
    """The rows a comparison board reads: its protocol's, current method, never an emulator's."""
    return [r for r in rows if r.board == board.board and r.protocol == board.protocol
            and r.method_version == METHOD_VERSION and not r.emulator]


ACCURACY_FIELDS = {"pooled_wer": ("wer_ci", "wer_clips"), "answer_accuracy": ("answer_accuracy_ci", "answer_clips"),
                   **{wer_field(d): (f"{wer_field(d)}_ci", "deadline_clips") for d in DEADLINES_MS}}
"""A series board's accuracy figure -> the MetricRow fields of its interval and of the items it counts (WER at a
deadline after the end of speech: the streaming STT boards that rank on what an agent has when it acts)."""


def accuracy_of(row: MetricRow, board: CompareBoard) -> tuple[float | None, tuple[float, float] | None, int]:
    """A pooled series' accuracy figure, its interval and the items (clips, replies) it is over."""
    interval, counted = ACCURACY_FIELDS[board.accuracy]
    return getattr(row, board.accuracy), getattr(row, interval), getattr(row, counted)


def pooled_comparison(series: Mapping[SeriesKey, SeriesData], board: CompareBoard, use_case: UseCase,
                      registry: Registry | None, statistic: str = "p50") -> SeriesComparison:
    """The comparison of a series board's models over a use case, from the board's series (a
    window's, its protocol's and current method's only; those of other datasets are left out).
    Latency is compared on `statistic`: p50 (the paired medians, metrics.paired.compare), or p95
    (the paired p95s of the latency metric, metrics.paired.compare_tail; WER still paired as ever):
    ranks and the frontier read that statistic's estimates and verdicts."""
    pooled = use_case_series(series, use_case.id, use_case.datasets)
    metric_rows = exclude([m for key, data in pooled.series.items() for m in series_rows(key, data)], registry)
    comparisons = compare(pooled.series, comparable(metric_rows, METHOD_VERSION))
    if statistic != "p50":
        tail = compare_tail(pooled.series, comparable(metric_rows, METHOD_VERSION, statistic), [board.latency])
        comparisons = [c for c in comparisons if c.statistic != board.latency] + tail
    baseline = registry.is_baseline if registry is not None else (lambda model_id: False)
    points = [Point(series_id(r), getattr(r, statistic), accuracy_of(r, board)[0], reference=baseline(r.model_id))
              for r in metric_rows if r.metric == board.latency]
    told = told_apart(comparisons, points, board.latency, board.accuracy == "pooled_wer")
    return SeriesComparison(metric_rows, comparisons, ranks(metric_rows, METHOD_VERSION, comparisons, statistic),
                            {p.key for p in frontier(points, board.accuracy_lower_is_better, told)}, pooled.missing)
