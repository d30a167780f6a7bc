"""The comparison page of a board over a use case, and its API and CSV: one document for all three.

Every model of the board (one line per model, region and instrument; current method, no emulator
rows) with its headline latency p50 and its accuracy over the use case, each with its 95 %
interval, its rank from the paired comparisons over the use case where one has landed, its price,
and whether it is on the latency-accuracy frontier. The figures are metrics.use_case's (pooled
rows; boards.use_cases chooses the rows); the S2S conversations' are metrics.conversation_aggregate's
(V2V per turn and instruction adherence over the model's conversations of a persona). The page
renders this module's document, rounded as the API publishes it, so the two cannot disagree.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass

from voxwatch.boards import leaderboard
from voxwatch.boards.prices import FIELDS as PRICE_FIELDS, price_fields
from voxwatch.boards.use_cases import (COMPARE_BOARDS, RANKS_NOTE, CompareBoard, UseCase, accuracy_of,
                                       chosen_use_case, series_comparison, use_cases)
from voxwatch.conversations.records import score_of
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.conversation_aggregate import instruction_adherence, v2v_per_turn
from voxwatch.metrics.published import rounded, when
from voxwatch.metrics.ranking import series_id, why_unranked
from voxwatch.metrics.use_case import Point, frontier
from voxwatch.providers.registry import Registry
from voxwatch.store.row_filter import RowFilter

from voxwatch.web.source import Source
from voxwatch.web.views import UNITS

CONVERSATIONS = "s2s-conversations"
NO_PAIRED = "No ranks: conversations are not paired turn by turn."


@dataclass(frozen=True)
class Line:
    """One model's line: its figures as computed (the document rounds them)."""
    model_id: str
    region: str
    instrument: str
    rank: int | None
    unranked: str | None
    latency_n: int
    latency_p50: float | None
    latency_p50_ci: tuple[float, float] | None
    accuracy_n: int
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None
    on_frontier: bool

    @property
    def key(self) -> str:
        return "|".join((self.model_id, self.region, self.instrument))


def _conversation_lines(source: Source, window: str, use_case: str | None) -> tuple[list[UseCase], UseCase | None,
                                                                                    list[Line], list[str]]:
    """The conversation board's use cases (one per persona: the scenarios its conversations held are
    its datasets) and each model's V2V per turn and instruction adherence over the chosen one."""
    found = [(row, turns) for row, turns in source.conversations(leaderboard.since(window))
             if not row.emulator and row.method_version == METHOD_VERSION]
    personas: dict[str, set[str]] = {}
    for row, _ in found:
        personas.setdefault(row.persona, set()).add(row.scenario)
    cases = sorted((UseCase(p, f"persona {p}", tuple(sorted(s))) for p, s in personas.items()),
                   key=lambda u: (u.id != "default", u.id))
    chosen = chosen_use_case(cases, use_case)
    scores: dict[tuple[str, str], list] = {}
    for row, turns in found:
        if chosen is not None and row.persona == chosen.id:
            scores.setdefault((row.model_id, row.region), []).append(score_of(row, turns))
    lines = []
    for (model_id, region), kept in sorted(scores.items()):
        v2v, adherence = v2v_per_turn(kept), instruction_adherence(kept)
        lines.append(Line(model_id, region, "", None, NO_PAIRED, v2v.n, v2v.p50, v2v.p50_ci, adherence.n,
                          adherence.rate, adherence.interval, False))
    return cases, chosen, _marked(lines, COMPARE_BOARDS[CONVERSATIONS]), []


def _series_lines(source: Source, registry: Registry, board: CompareBoard, window: str,
                  use_case: str | None) -> tuple[list[UseCase], UseCase | None, list[Line], list[str]]:
    rows = source.observations(RowFilter(since=leaderboard.since(window), boards=(board.board,)))
    mine = [r for r in rows if r.protocol == board.protocol and r.method_version == METHOD_VERSION and not r.emulator]
    cases = use_cases(mine)
    chosen = chosen_use_case(cases, use_case)
    if chosen is None:
        return cases, None, [], []
    c = series_comparison(mine, board, chosen, registry)
    lines = []
    for r in c.rows:
        if r.metric != board.latency:
            continue
        sid = series_id(r)
        figure, interval = accuracy_of(r, board)
        lines.append(Line(r.model_id, r.region, r.instrument or "", c.ranks.get(sid), why_unranked(r, METHOD_VERSION),
                          r.n, r.p50, r.p50_ci, r.wer_clips if board.accuracy == "pooled_wer" else r.quality_clips,
                          figure, interval, sid in c.on_frontier))
    left_out = [f"{k.model_id} ({k.region}): not measured on {', '.join(ds)}" for k, ds in c.missing.items()]
    return cases, chosen, _ordered(lines), left_out


def _marked(lines: list[Line], board: CompareBoard) -> list[Line]:
    """The lines with their frontier flags (metrics.use_case.frontier), in the page's order."""
    on = {p.key for p in frontier([Point(line.key, line.latency_p50, line.accuracy) for line in lines],
                                  board.accuracy_lower_is_better)}
    return _ordered([Line(**{**line.__dict__, "on_frontier": line.key in on}) for line in lines])


def _ordered(lines: list[Line]) -> list[Line]:
    """Ranked first by rank, then by latency p50, n/a last; ties by model id."""
    return sorted(lines, key=lambda x: (x.rank is None, x.rank or 0, x.latency_p50 is None, x.latency_p50 or 0.0,
                                        x.model_id, x.region, x.instrument))


def comparison_document(source: Source, registry: Registry, board_id: str, window: str,
                        use_case: str | None) -> dict:
    """The comparison of a board over a use case, at the API's precision (a ValueError for an
    unknown use case: the caller's 400)."""
    board = COMPARE_BOARDS[board_id]
    if board_id == CONVERSATIONS:
        cases, chosen, lines, left_out = _conversation_lines(source, window, use_case)
    else:
        cases, chosen, lines, left_out = _series_lines(source, registry, board, window, use_case)
    unit = UNITS.get(board.latency, "ms")
    accuracy_unit = "fraction" if board.accuracy_is_rate else "score"
    return {
        "board": board_id, "title": board.title, "window": window, "generated_at": when(time.time()),
        "method_version": METHOD_VERSION,
        "use_case": _case(chosen), "use_cases": [_case(u) for u in cases],
        "latency": {"metric": board.latency, "statistic": "p50", "unit": unit, "lower_is_better": True},
        "accuracy": {"figure": board.accuracy, "title": board.accuracy_title, "unit": accuracy_unit,
                     "lower_is_better": board.accuracy_lower_is_better},
        "ranks": NO_PAIRED if board_id == CONVERSATIONS else RANKS_NOTE,
        "rows": [{"model_id": x.model_id, "region": x.region, "instrument": x.instrument or None, "rank": x.rank,
                  "unranked": x.unranked if x.rank is None else None,
                  "latency_n": x.latency_n, "latency_p50": rounded(x.latency_p50, unit),
                  "latency_p50_ci": rounded(x.latency_p50_ci, unit),
                  "accuracy_n": x.accuracy_n, "accuracy": rounded(x.accuracy, "fraction"),
                  "accuracy_ci": rounded(x.accuracy_ci, "fraction"), "on_frontier": x.on_frontier,
                  **price_fields(registry, x.model_id)} for x in lines],
        "left_out": left_out,
    }


def _case(u: UseCase | None) -> dict | None:
    return None if u is None else {"id": u.id, "title": u.title, "datasets": list(u.datasets)}


CSV_COLUMNS = ("board", "use_case", "window", "method_version", "model_id", "region", "instrument", "rank",
               "latency_metric", "latency_n", "latency_p50", "latency_p50_low", "latency_p50_high", "accuracy_figure",
               "accuracy_n", "accuracy", "accuracy_low", "accuracy_high", "on_frontier") + PRICE_FIELDS


def to_csv(doc: dict) -> str:
    """The document's rows, one line each, intervals as _low and _high columns."""
    out = io.StringIO()
    w = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in doc["rows"]:
        lat, acc = r["latency_p50_ci"] or (None, None), r["accuracy_ci"] or (None, None)
        w.writerow({**{k: r[k] for k in ("model_id", "region", "instrument", "rank", "latency_n", "latency_p50",
                                         "accuracy_n", "accuracy", "on_frontier")},
                    **{k: r[k] for k in PRICE_FIELDS}, "board": doc["board"],
                    "use_case": doc["use_case"]["id"] if doc["use_case"] else None, "window": doc["window"],
                    "method_version": doc["method_version"], "latency_metric": doc["latency"]["metric"],
                    "latency_p50_low": lat[0], "latency_p50_high": lat[1], "accuracy_figure": doc["accuracy"]["figure"],
                    "accuracy_low": acc[0], "accuracy_high": acc[1]})
    return out.getvalue()
