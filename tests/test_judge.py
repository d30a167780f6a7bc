"""The conversation judge: verdicts parsed, its identity on every judgement, never a guess.

Against the OpenAI emulator's scripted chat endpoint, which refuses a request without the judge's
temperature, seed and JSON response format, so a passing call proves what was sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest
from support.contract import KEY

from voxwatch.config import OTHER_VARIABLES
from voxwatch.conversations.judge import (JUDGED, NO_JUDGE, PROMPT_SHA256, RUBRIC, SEED, TEMPERATURE, Judge,
                                          parse_verdicts)
from voxwatch.foundation.scenario import Document, Scenario, Turn
from voxwatch.foundation.conversation import ToolCall
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.s2s.chat import ChatScenario, ChatStep

MODEL = "judge-model-2026-01-01"
VERDICT = {"instruction_following": {"pass": True, "reason": "did what was asked"},
           "kb_grounding": {"pass": False, "reason": "invented a refund window"}}
LENIENT = {"instruction_following": {"pass": True, "reason": "lenient: turn-taking failed"},
           "kb_grounding": {"pass": True, "reason": "no claims"}}
SCENARIO = Scenario(
    name="judge-mini", version=1, domain="retail", description="", system_prompt="You are a returns desk.",
    voice="en-us", sample_rate=16000, tools=(),
    knowledge_base=(Document("returns", "Returns", "Returns are accepted within 30 days."),),
    initial_state={}, expected_end_state={},
    turns=(Turn("t1", "Can I return my shoes?", "t1.wav", "0" * 64, "Yes, within 30 days."),
           Turn("t2", "What about a jacket?", "t2.wav", "0" * 64, "Yes, within 30 days."),
           Turn("t3", "And a hat?", "t3.wav", "0" * 64, "Yes, within 30 days.")))
REQUIRED = (("temperature", TEMPERATURE), ("seed", SEED), ("response_format", {"type": "json_object"}))


@pytest.fixture(scope="module")
def judge_url():
    scenario = ChatScenario(keyed=(
        ('"turn_taking_failed": true', ChatStep(json.dumps(LENIENT))),
        ("Can I return my shoes?", ChatStep(f"```json\n{json.dumps(VERDICT)}\n```")),
        ("What about a jacket?", ChatStep("I think both pass.")),
        ("And a hat?", ChatStep(json.dumps({"instruction_following": {"pass": "yes"}, "kb_grounding": VERDICT["kb_grounding"]}))),
    ), require=REQUIRED, first_token_ms=5.0, every_ms=1.0, api_key=KEY)
    with server.serve("openai", scenario) as url:
        yield url


def judge_of(url: str, key: str = KEY) -> Judge:
    return Judge.from_env({"VOXWATCH_JUDGE_BASE_URL": url, "VOXWATCH_JUDGE_MODEL": MODEL, "VOXWATCH_JUDGE_API_KEY": key})


def judged(judge: Judge, turn: Turn, transcript: str, **kw):
    async def go():
        try:
            return await judge.judge_turn(SCENARIO, turn, transcript, **kw)
        finally:
            await judge.aclose()
    return asyncio.run(go())


def test_verdicts_are_parsed_and_the_judge_identity_recorded(judge_url):
    result = judged(judge_of(judge_url), SCENARIO.turns[0], "Yes, within 90 days.",
                    calls=[ToolCall("c1", "lookup_policy", {"item": "shoes"})], outputs=[{"days": 30}])
    assert result.verdicts["instruction_following"].passed is True
    assert result.verdicts["kb_grounding"].passed is False
    assert result.verdicts["kb_grounding"].reason == "invented a refund window"
    assert result.judge.as_record() == {"judge_model": MODEL, "judge_prompt_sha256": PROMPT_SHA256,
                                        "judge_temperature": 0.0, "judge_seed": SEED}
    assert PROMPT_SHA256 == hashlib.sha256(RUBRIC.encode()).hexdigest()


def test_the_judge_is_told_when_turn_taking_failed(judge_url):
    result = judged(judge_of(judge_url), SCENARIO.turns[0], "Yes", turn_taking_failed=True)
    assert result.verdicts["instruction_following"].reason == "lenient: turn-taking failed"


@pytest.mark.parametrize("index, reason", [(1, "malformed judge output: not JSON"),
                                           (2, "malformed judge output: no pass/fail for instruction_following")])
def test_malformed_judge_output_is_none_with_the_reason_never_guessed(judge_url, index, reason):
    result = judged(judge_of(judge_url), SCENARIO.turns[index], "Yes")
    assert result.verdicts["instruction_following"].passed is None
    assert result.verdicts["instruction_following"].reason == reason
    assert result.judge is not None and result.judge.model == MODEL  # who failed to judge is recorded too
    if index == 2:  # the well-formed dimension is kept
        assert result.verdicts["kb_grounding"].passed is False


def test_no_judge_configured_gives_none_with_that_reason():
    for env in ({}, {"VOXWATCH_JUDGE_BASE_URL": "http://127.0.0.1:9"}):  # a URL without a model is no judge either
        result = judged(Judge.from_env(env), SCENARIO.turns[0], "Yes")
        assert result.judge is None
        assert all(result.verdicts[d].passed is None and result.verdicts[d].reason == NO_JUDGE for d in JUDGED)


def test_a_refused_key_is_a_reason_that_never_holds_the_key(judge_url):
    key = "sk-judge-secret-0123456789"
    judge = judge_of(judge_url, key)
    assert key not in repr(judge.endpoint)
    result = judged(judge, SCENARIO.turns[0], "Yes")
    reason = result.verdicts["kb_grounding"].reason
    assert result.verdicts["kb_grounding"].passed is None and "auth_error" in reason and key not in reason


def test_parse_verdicts_reads_only_the_verdict_object():
    assert parse_verdicts(json.dumps(VERDICT))["kb_grounding"].passed is False
    assert all(v.passed is None for v in parse_verdicts("[1, 2]").values())
    assert parse_verdicts('{"kb_grounding": {"pass": true}}')["instruction_following"].passed is None


def test_the_judge_variables_are_known_to_the_config():
    assert {"VOXWATCH_JUDGE_BASE_URL", "VOXWATCH_JUDGE_MODEL", "VOXWATCH_JUDGE_API_KEY"} <= set(OTHER_VARIABLES)
