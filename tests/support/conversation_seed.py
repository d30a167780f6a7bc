"""Stored conversations built by hand (no audio, no runner), for the readers of the conversation
tables: the Grafana board and the alert rules. Each turn's verdicts JSON and its per-dimension
columns say the same thing, as conversation_records.rows_of writes them, so
conversation_records.score_of reads every row back into the score the statistics of
voxwatch/metrics/conversation_aggregate.py take.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from voxwatch.store.conversation_rows import ConversationRow, TurnRow
from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.providers.local.dnsmos_quality import INSTRUMENT_ID as QUALITY_INSTRUMENT

TAGGED = {"state_tracking": 3, "ambiguity_handling": 4}
"""Dimensions in scope only on tagged turns: here every 3rd (state) and 4th (ambiguity) turn."""


def stored_conversation(rng: np.random.Generator, conversation_id: str, *, model: str, scenario: str, persona: str,
                        region: str, started_at: float, turns: int, adherence: float = 0.85,
                        v2v_ms: float = 700.0, whole: bool = True, method: str = "3", emulator: bool = False,
                        scenario_version: int = 1, undecided: float = 0.1,
                        quality: float | None = None, unjudged: tuple[str, ...] = ()
                        ) -> tuple[ConversationRow, list[TurnRow]]:
    """One conversation of `turns` turns: each in-scope dimension passes with probability `adherence`
    (a share `undecided` of judged verdicts left undecided, as with no judge), V2V around `v2v_ms`
    (none on a turn that interrupted or got no response), gaps around V2V, some under half a second;
    with `quality`, each answered turn's speech quality around it (drawn last: the other draws stay);
    the dimensions in `unjudged` left undecided on every turn (as a reference agent's tool use is)."""
    pin = hashlib.sha256(f"{scenario}@{scenario_version}".encode()).hexdigest()
    rows = []
    failed = 0
    for i in range(turns):
        interrupted, no_response = bool(rng.random() < 0.08), bool(rng.random() < 0.05)
        status = "timeout" if no_response else "ok"
        failed += status != "ok"
        verdicts: dict[str, dict] = {}
        for dim in DIMENSIONS:
            if dim in TAGGED and i % TAGGED[dim]:
                continue  # out of scope on this turn
            judged = dim in ("instruction_following", "kb_grounding")
            passed = None if judged and rng.random() < undecided else bool(rng.random() < adherence)
            if dim == "turn_taking":
                passed = not (interrupted or no_response)
            if dim in unjudged:
                passed = None
            verdicts[dim] = {"passed": passed, "reason": "seeded", "rule": "judge" if judged else "code"}
        answered = not (interrupted or no_response)
        v2v = float(v2v_ms * rng.lognormal(0, 0.25)) if answered else None
        gap = (v2v / 1000 if v2v is not None else float(rng.uniform(0.1, 0.4))) if not no_response else None
        turn = TurnRow(conversation_id=conversation_id, turn_index=i, turn_id=f"t{i + 1:02d}", status=status,
                       reason="" if status == "ok" else "no reply", calls="[]", expected="[]",
                       verdicts=json.dumps(verdicts, sort_keys=True), model_transcript="seeded reply",
                       v2v_ms=v2v, gap_s=gap, interrupted=interrupted, no_response=no_response)
        for dim, v in verdicts.items():
            setattr(turn, dim, v["passed"])
        if quality is not None and status == "ok":
            turn.quality_mos = float(np.clip(rng.normal(quality, 0.3), 1.0, 5.0))
            turn.quality_instrument = QUALITY_INSTRUMENT
        rows.append(turn)
    end_state = bool(rng.random() < adherence) if whole else None
    row = ConversationRow(
        conversation_id=conversation_id, run_id=f"run-{conversation_id}", model_id=model, scenario=scenario,
        scenario_version=scenario_version, scenario_pin=pin, region=region, started_at=started_at,
        finished_at=started_at + 20.0 * turns, status="ok", reason="", turns=turns, failed_turns=failed, whole=whole,
        rotations=0, reconnections=0, rotation_reasons="[]", reconnection_reasons="[]", end_state_ok=end_state,
        persona=persona, method_version=method, emulator=emulator)
    return row, rows
