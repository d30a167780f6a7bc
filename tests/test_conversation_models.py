"""Only a model whose adapter can hold a conversation is given one (issue #40): a single-turn S2S
adapter (xAI, Qwen, Zhipu) is refused up front, in one line naming the models that can, by every
path that starts a conversation: `voxwatch scenarios run`, `voxwatch run`'s configured
conversations, the distributed plan and a converse task. Nothing is measured first, and nothing
ends in a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from support.processes import cli_in_process
from voxwatch.config import load
from voxwatch.conversations.tick import plan_conversations
from voxwatch.harness.tick import PlanError
from voxwatch.providers.keys import key_variable
from voxwatch.providers.registry import Registry
from voxwatch.workers import converse
from voxwatch.workers.conversation_tasks import CONVERSATION_PLAN_ERRORS
from voxwatch.workers.job import ConversationJob, Job
from voxwatch.workers.process_state import ProcessState, Unmeasurable

SINGLE_TURN = ("xai/grok-voice-think-fast-2.0", "qwen/qwen3-omni-flash-realtime-2025-09-15", "zhipu/glm-realtime-air")
CAN = ("local/cascade-scripted-baseline", "openai/gpt-realtime-2", "gemini/gemini-3.8-live")


def _keyed(model_id: str) -> dict[str, str]:
    """The model's vendor key set (to anything): the refusal is about the adapter, not a missing key."""
    return {key_variable(model_id.split("/")[0]): "not-a-real-key"}


def _says_who_can(line: str, model_id: str) -> None:
    assert line.startswith("voxwatch: error: ") and "\n" not in line.strip() and "Traceback" not in line
    assert f"{model_id} cannot hold a conversation" in line and "measures single turns only" in line
    able = line.split("the models that can: ", 1)[1]
    assert all(m in able for m in CAN) and not any(m in able for m in SINGLE_TURN)


@pytest.mark.parametrize("model_id", SINGLE_TURN)
def test_scenarios_run_refuses_a_single_turn_model_before_holding_anything(model_id: str):
    proc = cli_in_process("scenarios", "run", "clinic-desk", "--model", model_id, "--turns", "3", env=_keyed(model_id))
    assert proc.returncode == 2 and proc.stdout == ""  # no conversation, no board: refused before the call
    _says_who_can(proc.stderr, model_id)


def test_voxwatch_run_refuses_a_configured_single_turn_model_before_measuring(tmp_path: Path):
    store = tmp_path / "voxwatch.sqlite"
    proc = cli_in_process("run", "--store", f"sqlite:///{store}", "--no-progress",
                          env={"VOXWATCH_BOARDS_S2S_CONVERSATION_MODELS": f"{CAN[0]},{SINGLE_TURN[0]}",
                               **_keyed(SINGLE_TURN[0])})
    assert proc.returncode == 2 and proc.stdout == ""
    assert "[boards.s2s] conversation_models: " in proc.stderr
    _says_who_can(proc.stderr.replace("[boards.s2s] conversation_models: ", ""), SINGLE_TURN[0])
    assert not store.exists()  # nothing measured: the store was never opened


def test_the_distributed_plan_refuses_it_and_a_converse_task_ends_in_failed_rows():
    cfg = load(environ={})
    st = ProcessState(cfg)
    with pytest.raises(PlanError, match=r"xai/grok-voice-think-fast-2.0 cannot hold a conversation") as refused:
        plan_conversations(cfg, st.registry, models=[SINGLE_TURN[0]], turns=2)
    assert isinstance(refused.value, CONVERSATION_PLAN_ERRORS)  # the plan task logs it in one line, enqueues nothing
    job = ConversationJob("run1", SINGLE_TURN[1], "clinic-desk", st.scenarios.load("clinic-desk").pin, 2, "default")
    held = converse.hold(st, job, budget_s=60)  # a job sent by hand: it never reaches a session
    assert held.run is None and held.row.status == "failed" and "cannot hold a conversation" in held.row.reason
    assert [t.status for t in held.turns] == ["error", "error"]


def test_the_soft_time_limit_met_while_a_job_is_rebuilt_is_the_tasks_limit_not_a_job_it_cannot_rebuild():
    """CI once saw the soft limit fire while a busy worker loaded the scenario: the row said "this worker
    cannot rebuild the conversation: SoftTimeLimitExceeded()". The limit goes up to the task, which says it."""
    st = ProcessState(load(environ={}))
    job = ConversationJob("run1", CAN[1], "clinic-desk", st.scenarios.load("clinic-desk").pin, 1, "default")
    measure = Job("run1", 0, "faster-whisper/tiny.en@1.2.1", "stt-clean", "item-1", "0" * 64)

    def limit(*_args):
        raise SoftTimeLimitExceeded()

    st.scenario, st.dataset = limit, limit
    with pytest.raises(SoftTimeLimitExceeded):
        converse.hold(st, job, budget_s=60)
    with pytest.raises(SoftTimeLimitExceeded):
        st.task(measure)

    def missing(*_args):
        raise KeyError("clinic-desk")

    st.scenario, st.dataset = missing, missing  # a job this worker truly cannot rebuild is still said as one
    held = converse.hold(st, job, budget_s=60)
    assert held.row.status == "failed" and "this worker cannot rebuild the conversation" in held.row.reason
    with pytest.raises(Unmeasurable, match="this worker cannot rebuild the task"):
        st.task(measure)


def test_a_conversation_whose_session_never_opens_is_said_without_a_traceback(tmp_path: Path):
    with socket.socket() as s:  # a port nothing listens on: the session is refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = cli_in_process("scenarios", "run", "clinic-desk", "--model", CAN[1], "--turns", "1",
                          env={**_keyed(CAN[1]), "VOXWATCH_OPENAI_BASE_URL": f"http://127.0.0.1:{port}"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "ended (no session: disconnected: cannot connect to OpenAI" in proc.stdout
    assert "(0 conversation(s))" in proc.stdout  # a conversation with no session scores nothing


def test_every_model_named_as_able_converses_and_the_preference_board_uses_only_those():
    registry = Registry.default(files=())
    able = {m.id for m in registry.models.values() if m.board == "s2s"
            and callable(getattr(registry.adapter_class(m), "converse", None))}
    assert set(CAN) <= able and not able & set(SINGLE_TURN)
    assert {c.model for c in registry.preference_configs} <= able  # `preference generate` converses with each
