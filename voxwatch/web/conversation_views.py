"""What the pages and the API show of conversations: the S2S conversation board and one conversation.

The board's numbers are scorecards.stored_scorecards' (voxwatch/metrics/conversation_aggregate.py
defines every statistic); this only selects the window's conversations, names the parts of each
block and lays the figures out for HTML, JSON and CSV. A stored row's JSON columns (calls, fates,
verdicts, reasons, the judge) are parsed once here for the page and the API alike.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

from voxwatch.boards import leaderboard
from voxwatch.boards.marks import FIELDS as MARK_FIELDS, Marks, model_marks
from voxwatch.conversations.scorecards import SCORECARD_KEY_FIELDS, ScorecardKey, block_title, stored_scorecards
from voxwatch.store.conversation_rows import ANCHORS, ConversationRow, TurnRow
from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.metrics import METHOD_VERSION, preliminary
from voxwatch.providers.registry import Registry
from voxwatch.metrics.published import rounded, rounded_seconds, scorecard_record, when
from voxwatch.metrics.conversation_aggregate import Scorecard, Rate
from voxwatch.metrics.conversation_timing import SILENCE_GAP_MIN_S
from voxwatch.metrics.series import MIN_ATTEMPTS, MIN_N, percentile_floor

from voxwatch.web.source import Conversation, Source

RECENT_SHOWN = 100
"""The board page and the API list the newest this many conversations of the window."""


@dataclass(frozen=True)
class Block:
    """One board block: a model on one scenario under one set of conditions, and its statistics."""
    key: ScorecardKey
    summary: Scorecard

    @property
    def parts(self) -> dict[str, Any]:
        return dict(zip(SCORECARD_KEY_FIELDS, self.key))

    @property
    def title(self) -> str:
        return block_title(self.key)

    def marks(self, registry: Registry) -> Marks:
        """Its model's marks and its figures' preliminary reason (a block's intervals cluster by conversation)."""
        return model_marks(registry, self.key[0], preliminary.scorecard_reason(self.summary.conversations))


@dataclass(frozen=True)
class ConversationBoard:
    window: str
    model_id: str | None
    blocks: list[Block]
    recent: list[ConversationRow]  # newest first, at most RECENT_SHOWN
    total: int  # conversations in the window (emulated ones never counted)


def conversation_board(source: Source, window: str, model_id: str | None = None) -> ConversationBoard:
    """The board of the conversations started within the window (of one model)."""
    found = source.conversations(leaderboard.since(window), model_id)
    blocks = [Block(key, summary) for key, summary in stored_scorecards(found).items()]
    newest = sorted((row for row, _ in found), key=lambda r: (r.started_at, r.conversation_id), reverse=True)
    return ConversationBoard(window, model_id, blocks, newest[:RECENT_SHOWN], len(found))


def count(source: Source, window: str, model_id: str | None = None) -> int:
    """How many conversations (of one model) started within the window: what the home page and a
    model's page count beside their series."""
    return len(source.conversations(leaderboard.since(window), model_id))


def conversation_url(conversation_id: str) -> str:
    return "/conversation/" + quote(conversation_id, safe="")


def recording_url(conversation_id: str) -> str:
    return "/recording/" + quote(conversation_id, safe="") + ".wav"


def api_url(conversation_id: str) -> str:
    return "/api/v1/conversations/" + quote(conversation_id, safe="")


def recording_path(recordings_dir: Path | None, relative: str | None) -> Path | None:
    """The recording file a row names, when it exists inside `recordings_dir`; None otherwise (no
    folder given, no recording, gone, or a path that would lead out of the folder)."""
    if recordings_dir is None or not relative:
        return None
    base = recordings_dir.resolve()
    path = (base / relative).resolve()  # an absolute `relative` or a '..' or a link out lands outside
    return path if path.is_relative_to(base) and path.is_file() else None


def summary_json(s: Scorecard) -> dict:
    """A block's statistics at their published precision (metrics.published)."""
    out = asdict(s)
    out["pass_hat_k"] = {str(k): v for k, v in s.pass_hat_k.items()}  # JSON object keys are text
    return scorecard_record(out)


def _listed(row: ConversationRow) -> dict:
    return {"conversation_id": row.conversation_id, "model_id": row.model_id, "scenario": row.scenario,
            "scenario_version": row.scenario_version, "persona": row.persona, "region": row.region,
            "started_at": when(row.started_at), "status": row.status, "reason": row.reason, "turns": row.turns,
            "failed_turns": row.failed_turns, "end_state_ok": row.end_state_ok,
            "url": conversation_url(row.conversation_id), "api_url": api_url(row.conversation_id)}


def board_document(board: ConversationBoard, registry: Registry) -> dict:
    """The API's /conversations: every block with its statistics and its marks (whether its model is a
    baseline, whether its figures are preliminary and why, its model's lifecycle status), and the
    newest conversations."""
    return {"window": board.window, "model_id": board.model_id, "generated_at": when(time.time()),
            "method_version": METHOD_VERSION,
            "blocks": [{**b.parts, "title": b.title, **b.marks(registry).fields(), **summary_json(b.summary)}
                       for b in board.blocks],
            "conversations_total": board.total, "conversations": [_listed(r) for r in board.recent]}


CSV_COLUMNS = (*SCORECARD_KEY_FIELDS, *MARK_FIELDS, "conversations", "statistic", "value", "passed", "n", "ci_low",
               "ci_high", "instrument")


def _rate_line(name: str, r: Rate) -> tuple:
    low, high = r.interval if r.interval is not None else (None, None)
    return name, r.rate, r.passed, r.n, low, high, None


def statistics(s: Scorecard) -> Iterator[tuple]:
    """A block's statistics, one line each: (statistic, value, passed, n, ci_low, ci_high, instrument)."""
    yield _rate_line("instruction_adherence", s.adherence)
    for name, r in s.dimensions.items():
        yield _rate_line(name, r)
    yield _rate_line("end_state", s.end_state)
    for k, v in s.pass_hat_k.items():
        yield f"pass_hat_{k}", v, None, None, None, None, None
    for q, value, ci in (("p50", s.v2v.p50, s.v2v.p50_ci), ("p95", s.v2v.p95, s.v2v.p95_ci)):
        yield (f"v2v_{q}_ms", value, None, s.v2v.n, *(ci if ci is not None else (None, None)), None)
    yield "silence_gap_s", s.silence_gap_s, None, None, None, None, None
    q = s.speech_quality
    yield ("quality_mos", q.mos, None, q.n, *(q.interval if q.interval is not None else (None, None)),
           ", ".join(q.instruments) or None)
    if (t := s.transcription).turns:  # the reply transcriber's WER on a scripted agent's voice, where measured
        yield "transcription_wer", t.wer, None, t.words, None, None, ", ".join(t.instruments) or None
    yield _rate_line("interruption", s.interruption)
    yield _rate_line("no_response", s.no_response)
    if s.barge_in_stop.n or s.barge_in_answered.n:  # caller behaviours: only a block whose callers behaved so
        for name, b in (("barge_in_stop", s.barge_in_stop), ("barge_in_stop_heard", s.barge_in_stop_heard)):
            for q, value, ci in (("p50", b.p50, b.p50_ci), ("p95", b.p95, b.p95_ci)):
                yield (f"{name}_{q}_ms", value, None, b.n, *(ci if ci is not None else (None, None)), None)
        yield _rate_line("barge_in_answered", s.barge_in_answered)
    if s.premature.n:
        yield _rate_line("premature_response", s.premature)


LABELS = {"instruction_adherence": "instruction adherence", "end_state": "end-state success",
          "v2v_p50_ms": "V2V p50", "v2v_p95_ms": "V2V p95", "silence_gap_s": "silence-gap latency",
          "quality_mos": "speech quality (MOS)", "transcription_wer": "reply transcription WER (scripted agent)",
          "interruption": "interruption rate", "no_response": "no-response rate",
          "barge_in_stop_p50_ms": "barge-in stop latency p50", "barge_in_stop_p95_ms": "barge-in stop latency p95",
          "barge_in_stop_heard_p50_ms": "barge-in stop latency p50, heard",
          "barge_in_stop_heard_p95_ms": "barge-in stop latency p95, heard",
          "barge_in_answered": "answered after barge-in", "premature_response": "premature response in a pause"}
"""How a statistic is named on the page (a dimension by its own name, pass^k as such)."""


@dataclass(frozen=True)
class StatLine:
    """One statistic of a block as the board page shows it; `na` says why it has no value."""
    statistic: str
    label: str
    value: float | None
    passed: int | None
    n: int | None
    interval: tuple[float, float] | None
    na: str | None
    instrument: str | None = None  # what scored it (speech quality)


def _na(statistic: str, value: float | None, passed: int | None, n: int | None) -> str | None:
    if value is not None:
        return None
    if statistic.startswith("pass_hat_"):
        return f"no scenario with {statistic.removeprefix('pass_hat_')} or more end-state-checked runs"
    if statistic.startswith(("v2v_", "barge_in_stop_")):
        return f"n < {percentile_floor(95 if '95' in statistic else 50)}"
    if statistic == "silence_gap_s":
        return f"no gap of {SILENCE_GAP_MIN_S:g} s or more"
    if statistic == "quality_mos":
        return "no turn scored" if not n else f"n < {MIN_N} turns scored"
    return "none decided" if not n else f"n < {MIN_ATTEMPTS} ({passed}/{n})"


def stat_lines(s: Scorecard) -> list[StatLine]:
    """The block's statistics in board order, named and with the reason of each n/a."""
    lines = []
    for name, value, passed, n, low, high, instrument in statistics(s):
        label = LABELS.get(name) or (f"pass^{name.removeprefix('pass_hat_')}" if name.startswith("pass_hat_") else name)
        lines.append(StatLine(name, label, value, passed, n, (low, high) if low is not None else None,
                              _na(name, value, passed, n), instrument))
    return lines


def board_csv(board: ConversationBoard, registry: Registry) -> str:
    """The blocks as CSV, one line per block and statistic, each with its block's marks (full precision;
    empty cells are n/a)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for b in board.blocks:
        marks = b.marks(registry).fields()
        for line in statistics(b.summary):
            writer.writerow([*b.key, *("" if marks[k] is None else marks[k] for k in MARK_FIELDS),
                             b.summary.conversations, *("" if v is None else v for v in line)])
    return out.getvalue()


@dataclass(frozen=True)
class TurnView:
    row: TurnRow
    calls: list[dict]
    expected: list[dict]
    verdicts: dict[str, dict]  # in DIMENSIONS order


@dataclass(frozen=True)
class ConversationView:
    row: ConversationRow
    turns: list[TurnView]
    rotation_reasons: list[str]
    reconnection_reasons: list[str]
    judge: dict | None
    has_recording: bool


def conversation_view(found: Conversation, recordings_dir: Path | None) -> ConversationView:
    row, turns = found
    shown = []
    for t in turns:
        verdicts = json.loads(t.verdicts or "{}")
        ordered = {d: verdicts[d] for d in DIMENSIONS if d in verdicts} | verdicts
        shown.append(TurnView(t, json.loads(t.calls or "[]"), json.loads(t.expected or "[]"), ordered))
    return ConversationView(row, shown, json.loads(row.rotation_reasons or "[]"),
                            json.loads(row.reconnection_reasons or "[]"),
                            json.loads(row.judge) if row.judge else None,
                            recording_path(recordings_dir, row.recording) is not None)


def conversation_document(view: ConversationView, registry: Registry) -> dict:
    """The API's /conversations/{id}: the stored row (its `turns` is the count held), whether its
    model is a baseline, and the list of its turns, the JSON columns parsed."""
    row = {**asdict(view.row), "rotation_reasons": view.rotation_reasons,
           "reconnection_reasons": view.reconnection_reasons, "judge": view.judge,
           "started_at": when(view.row.started_at), "finished_at": when(view.row.finished_at)}
    row.pop("recording")  # a path on the server: the URL says where to get it
    turns = [{**asdict(t.row), "calls": t.calls, "expected": t.expected, "verdicts": t.verdicts,
              "v2v_ms": rounded(t.row.v2v_ms, "ms"), "gap_s": rounded_seconds(t.row.gap_s),
              "quality_mos": rounded(t.row.quality_mos, "fraction"),
              **{name: rounded_seconds(getattr(t.row, name)) for name in ANCHORS}} for t in view.turns]
    return {"conversation": row, "baseline": registry.is_baseline(view.row.model_id),
            "url": conversation_url(view.row.conversation_id),
            "recording_url": recording_url(view.row.conversation_id) if view.has_recording else None, "turns": turns}
