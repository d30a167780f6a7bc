"""A held conversation as stored rows, and stored rows as the score they came from.

A row is built from a ConversationRun after it was scored (`rows_of`), every text made safe
(text.safe_text, as observations are) and every secret of the run cut out (providers.keys.scrub),
and is read back into the ConversationScore it came from (`score_of`), so the board computed from
the store is the board computed in memory: every statistic stays defined once, in
voxwatch/metrics/conversation_aggregate.py.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from voxwatch.conversations.runner import ConversationRun, TurnRun
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.metrics.conversation import CallFate, ConversationScore, TurnBehaviourFacts, TurnScore, Verdict
from voxwatch.foundation.conversation import ToolCall
from voxwatch.providers.keys import Secret, scrub
from voxwatch.foundation.text import safe_text

from voxwatch.store.conversation_rows import ANCHORS, ConversationRow, TurnRow


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class _Cleaner:
    """Text bound for the store: every secret of the run cut out, then made safe (text.safe_text)."""

    def __init__(self, secrets: Sequence[Secret | None]) -> None:
        self.secrets = [s for s in secrets if s is not None]

    def __call__(self, text: str | None) -> str | None:
        if text is None:
            return None
        return safe_text(scrub(text, self.secrets) if self.secrets else text)

    def value(self, value: Any) -> Any:
        """A JSON value (a call's arguments or output) with each string cleaned."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value


def _calls(tr: TurnRun, scored: TurnScore | None, clean: _Cleaner) -> list[dict[str, Any]]:
    """Each call the model made on the turn, in order, with what it was sent back and what it counted as."""
    made = list(scored.made) if scored is not None else [(c, "") for c in (tr.model.calls if tr.model else [])]
    outputs = {id(call): output for call, output in tr.outputs}
    by_id = {call.call_id: output for call, output in tr.outputs}
    calls = []
    for i, (call, counted_as) in enumerate(made):
        output = outputs.get(id(call), by_id.get(call.call_id, tr.outputs[i][1] if i < len(tr.outputs) else None))
        calls.append({"call_id": clean(call.call_id), "name": clean(call.name), "arguments": clean.value(call.arguments),
                      "output": clean.value(output), "counted_as": counted_as})
    return calls


def _turn_row(conversation_id: str, index: int, tr: TurnRun, scored: TurnScore | None, clean: _Cleaner) -> TurnRow:
    verdicts = scored.verdicts if scored is not None else {}
    timing = tr.timing
    row = TurnRow(
        conversation_id=conversation_id, turn_index=index, turn_id=tr.turn_id, status=tr.status,
        reason=clean(tr.reason) or "", calls=_json(_calls(tr, scored, clean)),
        expected=_json([{k: clean(v) for k, v in asdict(f).items()} for f in (scored.expected if scored else ())]),
        verdicts=_json({d: {"passed": v.passed, "reason": clean(v.reason), "rule": v.rule} for d, v in verdicts.items()}),
        model_transcript=(clean(tr.transcript) or "" if tr.transcript_instrument is not None else
                          clean(tr.model.transcript) if tr.model is not None else ""),
        caller_transcript=clean(tr.model.caller_transcript) if tr.model is not None else None,
        v2v_ms=scored.v2v_ms if scored else None, gap_s=scored.gap_s if scored else None,
        interrupted=scored.interrupted if scored else None, no_response=scored.no_response if scored else None,
        long_silence=timing.long_silence if timing is not None and tr.status == "ok" else None,
        turn_taking_failed=scored.turn_taking_failed if scored else False)
    if scored is not None:
        b = scored.behaviour
        row.barge_in_stop_ms, row.barge_in_answered = b.barge_in_stop_ms, b.barge_in_answered
        row.pause_ms, row.premature_response = b.pause_ms, b.premature
        row.barge_in_stop_heard_ms = b.barge_in_stop_heard_ms
    if timing is not None:  # where on the recording the turn's clocks were read (TurnTiming's names)
        for name in ANCHORS:
            setattr(row, name, getattr(timing, name))
    if tr.witness is not None:
        row.clock_uncertainty_ms = tr.witness.uncertainty_ms
        if tr.witness.stalled:  # its clocks are null (conversations.runner): the reason says why
            row.reason = "; ".join(r for r in (row.reason, tr.witness.reason) if r)
    if tr.quality is not None:
        row.quality_mos, row.quality_instrument = tr.quality.mos, tr.quality.instrument
        row.instrument_error = clean(tr.quality.error)
    if tr.transcript_error is not None:
        row.instrument_error = "; ".join(e for e in (row.instrument_error, clean(tr.transcript_error)) if e)
    if scored is not None:
        row.transcript_instrument = scored.transcript_instrument
        row.transcript_errors, row.transcript_ref_words = scored.transcript_errors, scored.transcript_ref_words
    for dim, verdict in verdicts.items():
        setattr(row, dim, verdict.passed)
    return row


def rows_of(run: ConversationRun, loaded: LoadedScenario, *, run_id: str, region: str, started_at: float,
            finished_at: float, whole: bool, secrets: Sequence[Secret | None] = (),
            recordings_dir: Path | None = None, emulator: bool = False,
            persona: str | None = None) -> tuple[ConversationRow, list[TurnRow]]:
    """The rows of a held (and scored) conversation. `loaded` is the scenario as held (a trial's
    first turns); `whole` says whether that is every turn of the scenario; the persona is the run's
    identity (voxwatch/foundation/persona.py) unless given."""
    clean = _Cleaner(secrets)
    score = run.score
    scored = list(score.turns) if score is not None else [None] * len(run.turns)
    judge = next((t.judge for t in run.turns if t.judge is not None), None)
    recording = None
    if run.recording is not None:
        path = Path(run.recording)
        recording = str(path.relative_to(recordings_dir)) if recordings_dir and path.is_relative_to(recordings_dir) \
            else path.name
    row = ConversationRow(
        conversation_id=run.conversation_id, run_id=run_id, model_id=run.model_id, scenario=loaded.scenario.name,
        scenario_version=loaded.scenario.version, scenario_pin=loaded.pin, region=region, started_at=started_at,
        finished_at=finished_at, status=run.status, reason=clean(run.reason) or "", turns=len(run.turns),
        failed_turns=sum(t.status != "ok" for t in run.turns), whole=whole, rotations=len(run.rotations),
        reconnections=len(run.reconnections), rotation_reasons=_json([clean(r) for r in run.rotations]),
        reconnection_reasons=_json([clean(r) for r in run.reconnections]),
        end_state_ok=score.end_state_ok if score is not None else None,
        end_state_reason=(clean(score.end_state_reason) or "" if score is not None  # unscored: why it is null
                          else clean(run.reason) or "" if whole else ""),
        recording=recording, persona=persona or run.persona, emulator=emulator,
        judge=_json(judge) if judge is not None else None)
    return row, [_turn_row(run.conversation_id, i, tr, s, clean) for i, (tr, s) in enumerate(zip(run.turns, scored))]


def _turn_score(t: TurnRow) -> TurnScore:
    verdicts = {d: Verdict(v["passed"], v["reason"], v["rule"]) for d, v in json.loads(t.verdicts).items()}
    expected = tuple(CallFate(**f) for f in json.loads(t.expected))
    made = tuple((ToolCall(c["call_id"], c["name"], c["arguments"]), c["counted_as"]) for c in json.loads(t.calls))
    return TurnScore(t.turn_id, verdicts, t.turn_taking_failed, expected, made, t.interrupted, t.no_response,
                     t.v2v_ms, t.gap_s, TurnBehaviourFacts(t.barge_in_stop_ms, t.barge_in_answered, t.pause_ms,
                                                           t.premature_response, t.barge_in_stop_heard_ms),
                     t.quality_mos, t.quality_instrument, t.transcript_instrument, t.transcript_errors,
                     t.transcript_ref_words)


def score_of(row: ConversationRow, turns: Sequence[TurnRow]) -> ConversationScore:
    """The ConversationScore a conversation's stored rows came from (what the board's statistics read)."""
    ordered = sorted(turns, key=lambda t: t.turn_index)
    return ConversationScore(row.conversation_id, row.scenario, tuple(_turn_score(t) for t in ordered),
                             row.end_state_ok, row.end_state_reason)
