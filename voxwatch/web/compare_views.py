"""The comparison page of a board over a use case, and its API and CSV: one document for all three.

Every model of the board (one line per model, region and instrument; current method, no emulator
rows) with its headline latency p50 and its accuracy over the use case, each with its 95 %
interval, its rank from the paired comparisons over the use case where one has landed, its price,
whether it is on the latency-accuracy frontier, and its marks (boards.marks: baseline, preliminary,
lifecycle status, the dimensions a conversation line was not judged on). The figures are metrics.use_case's (pooled
rows; boards.use_cases chooses the rows); the S2S conversations' are metrics.conversation_aggregate's
(V2V per turn, instruction adherence and the replies' speech quality over the model's conversations
of a persona). The page renders this module's document, rounded as the API publishes it, so the two cannot disagree.
"""

from __future__ import annotations

import csv
import io
import time
from voxwatch.boards import leaderboard
from voxwatch.boards.compare_lines import Line, from_json, from_rows, is_current, ordered
from voxwatch.boards.marks import FIELDS as MARK_FIELDS, NOT_JUDGED, model_marks, not_judged
from voxwatch.boards.prices import FIELDS as PRICE_FIELDS, price_fields
from voxwatch.boards.use_cases import COMPARE_BOARDS, RANKS_NOTE, TAIL_RANKS_NOTE, CompareBoard, UseCase, chosen_use_case
from voxwatch.conversations.records import score_of
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.conversation_aggregate import decided_dimensions, instruction_adherence, speech_quality, v2v_per_turn
from voxwatch.metrics.preliminary import scorecard_reason
from voxwatch.metrics.published import rounded, when
from voxwatch.metrics.use_case import Point, frontier
from voxwatch.providers.registry import Registry
from voxwatch.store.row_filter import RowFilter

from voxwatch.web.source import Source
from voxwatch.web.views import UNITS

CONVERSATIONS = "s2s-conversations"
NO_PAIRED = "No ranks: conversations are not paired turn by turn."


def _conversation_lines(source: Source, registry: Registry, window: str,
                        use_case: str | None) -> tuple[list[UseCase], UseCase | None,
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
    judged = {key: decided_dimensions(kept) for key, kept in scores.items()}
    missing = not_judged(judged)
    for (model_id, region), kept in sorted(scores.items()):
        v2v, adherence, quality = v2v_per_turn(kept), instruction_adherence(kept), speech_quality(kept)
        lines.append(Line(model_id, region, "", None, NO_PAIRED, v2v.n, v2v.p50, v2v.p50_ci, adherence.n,
                          adherence.rate, adherence.interval, False, quality.n, quality.mos, quality.interval,
                          preliminary_reason=scorecard_reason(len(kept)), accuracy_passed=adherence.passed,
                          not_judged=missing[(model_id, region)]))
    return cases, chosen, _marked(lines, COMPARE_BOARDS[CONVERSATIONS], registry), []


def _series_lines(source: Source, registry: Registry, board: CompareBoard, window: str,
                  use_case: str | None, statistic: str) -> tuple[list[UseCase], UseCase | None, list[Line], list[str]]:
    """The kept view of the window (Postgres, refreshed as ticks finish: the p50's), or one computed
    from its rows (SQLite, and any view ranked on p95)."""
    kept = source.compare_view(board.id, window) if statistic == "p50" else None
    if kept is not None and is_current(kept):
        view = from_json(kept)
    else:
        rows = source.observations(RowFilter(since=leaderboard.since(window), boards=(board.board,)))
        view = from_rows(rows, board, window, registry, time.time(), only=use_case, statistic=statistic)
    chosen = chosen_use_case(view.cases, use_case)
    if chosen is None:
        return view.cases, None, [], []
    lines = view.lines[chosen.id]
    return view.cases, chosen, lines.lines, lines.left_out


STATISTICS = ("p50", "p95")
"""The latency statistics a comparison ranks and draws its frontier on (p95: METHOD "Paired comparisons")."""


def _marked(lines: list[Line], board: CompareBoard, registry: Registry) -> list[Line]:
    """The lines with their frontier flags (metrics.use_case.frontier), in the page's order; a baseline
    (a script, not a model) is drawn beside the frontier, never on it."""
    on = {p.key for p in frontier([Point(line.key, line.latency_p50, line.accuracy, registry.is_baseline(line.model_id))
                                   for line in lines], board.accuracy_lower_is_better)}
    return ordered([Line(**{**line.__dict__, "on_frontier": line.key in on}) for line in lines])


ORDERS = ("rank", "hallucination")
"""How a comparison's lines may be ordered: by rank (the default: boards.compare_lines.ordered), or by the
hallucination share on the clips with nothing to say (lowest first, ties and n/a by rank's order)."""


def comparison_document(source: Source, registry: Registry, board_id: str, window: str,
                        use_case: str | None, statistic: str = "p50", order: str = "rank") -> dict:
    """The comparison of a board over a use case, its latency ranked on `statistic` (p50 or p95), at
    the API's precision (a ValueError for an unknown use case or order, or p95 on the conversations: the
    caller's 400)."""
    board = COMPARE_BOARDS[board_id]
    if order not in ORDERS:
        raise ValueError(f"no order {order!r}: the orders are {', '.join(ORDERS)}")
    if board_id == CONVERSATIONS:
        if statistic != "p50":
            raise ValueError("statistic p95 is not offered for conversations: V2V per turn is compared by its p50")
        cases, chosen, lines, left_out = _conversation_lines(source, registry, window, use_case)
    else:
        cases, chosen, lines, left_out = _series_lines(source, registry, board, window, use_case, statistic)
    if order == "hallucination":  # a stable sort: rank's order among equals
        lines = sorted(lines, key=lambda x: (x.hallucination is None, x.hallucination or 0.0))
    unit = UNITS.get(board.latency, "ms")
    accuracy_unit = "fraction" if board.accuracy_is_rate else "score"
    return {
        "board": board_id, "title": board.title, "window": window, "generated_at": when(time.time()),
        "method_version": METHOD_VERSION,
        "use_case": _case(chosen), "use_cases": [_case(u) for u in cases],
        "latency": {"metric": board.latency, "statistic": statistic, "unit": unit, "lower_is_better": True},
        "accuracy": {"figure": board.accuracy, "title": board.accuracy_title, "unit": accuracy_unit,
                     "lower_is_better": board.accuracy_lower_is_better},
        "ranks": NO_PAIRED if board_id == CONVERSATIONS else RANKS_NOTE if statistic == "p50" else TAIL_RANKS_NOTE,
        "order": order,
        "rows": [{"model_id": x.model_id, "region": x.region, "instrument": x.instrument or None, "rank": x.rank,
                  "unranked": x.unranked if x.rank is None else None,
                  "latency_n": x.latency_n, "latency_p50": rounded(x.latency_p50, unit),
                  "latency_p50_ci": rounded(x.latency_p50_ci, unit),
                  "latency_p95": rounded(x.latency_p95, unit), "latency_p95_ci": rounded(x.latency_p95_ci, unit),
                  "accuracy_n": x.accuracy_n, "accuracy": rounded(x.accuracy, "fraction"),
                  "accuracy_ci": rounded(x.accuracy_ci, "fraction"), "on_frontier": x.on_frontier,
                  "quality_n": x.quality_n, "quality_mos": rounded(x.quality, "fraction"),
                  "quality_mos_ci": rounded(x.quality_ci, "fraction"), "accuracy_passed": x.accuracy_passed,
                  "hallucination_n": x.hallucination_n, "hallucination": rounded(x.hallucination, "fraction"),
                  "hallucination_ci": rounded(x.hallucination_ci, "fraction"),
                  "invented_words_per_min": rounded(x.invented_words_per_min, "fraction"),
                  "invented_audio_ms": rounded(x.invented_audio_ms, "ms"),
                  **model_marks(registry, x.model_id, x.preliminary_reason, not_judged=x.not_judged).fields(judged=True),
                  **price_fields(registry, x.model_id)} for x in lines],
        "left_out": left_out,
    }


def _case(u: UseCase | None) -> dict | None:
    return None if u is None else {"id": u.id, "title": u.title, "datasets": list(u.datasets)}


CSV_COLUMNS = ("board", "use_case", "window", "method_version", "model_id", "region", "instrument", "rank",
               "latency_metric", "latency_statistic", "latency_n", "latency_p50", "latency_p50_low", "latency_p50_high",
               "latency_p95", "latency_p95_low", "latency_p95_high", "accuracy_figure",
               "accuracy_n", "accuracy_passed", "accuracy", "accuracy_low", "accuracy_high", "on_frontier", "quality_n",
               "quality_mos", "quality_mos_low", "quality_mos_high", "hallucination_n", "hallucination", "hallucination_low",
               "hallucination_high", "invented_words_per_min", "invented_audio_ms", *MARK_FIELDS, NOT_JUDGED) + PRICE_FIELDS


def to_csv(doc: dict) -> str:
    """The document's rows, one line each, intervals as _low and _high columns."""
    out = io.StringIO()
    w = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in doc["rows"]:
        lat, acc = r["latency_p50_ci"] or (None, None), r["accuracy_ci"] or (None, None)
        tail = r["latency_p95_ci"] or (None, None)
        mos, hal = r["quality_mos_ci"] or (None, None), r["hallucination_ci"] or (None, None)
        w.writerow({**{k: r[k] for k in ("model_id", "region", "instrument", "rank", "latency_n", "latency_p50", "latency_p95",
                                         "accuracy_n", "accuracy_passed", "accuracy", "on_frontier", "quality_n",
                                         "quality_mos", "hallucination_n", "hallucination", "invented_words_per_min",
                                         "invented_audio_ms", *MARK_FIELDS)},
                    "hallucination_low": hal[0], "hallucination_high": hal[1],
                    NOT_JUDGED: " ".join(r[NOT_JUDGED]), **{k: r[k] for k in PRICE_FIELDS}, "board": doc["board"],
                    "use_case": doc["use_case"]["id"] if doc["use_case"] else None, "window": doc["window"],
                    "method_version": doc["method_version"], "latency_metric": doc["latency"]["metric"],
                    "latency_statistic": doc["latency"]["statistic"], "latency_p95_low": tail[0], "latency_p95_high": tail[1],
                    "latency_p50_low": lat[0], "latency_p50_high": lat[1], "accuracy_figure": doc["accuracy"]["figure"],
                    "accuracy_low": acc[0], "accuracy_high": acc[1], "quality_mos_low": mos[0], "quality_mos_high": mos[1]})
    return out.getvalue()
