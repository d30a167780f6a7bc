"""The judge: the turn dimensions that code cannot decide, asked of a language model (CONVERSATIONS.md).

`instruction_following` and `kb_grounding` are judged; everything else is decided in code. The
judge is any OpenAI-compatible chat endpoint, configured by environment: VOXWATCH_JUDGE_BASE_URL,
VOXWATCH_JUDGE_MODEL and its key VOXWATCH_JUDGE_API_KEY (optional for a server that needs none;
never logged or stored). It is asked at temperature 0 with a fixed seed for a JSON verdict, and
its identity - model id, the prompt's sha256, temperature, seed - goes with every judged score, so
a score can be traced to the rubric and model that gave it and two judges are never pooled.

Never guessed: with no judge configured both verdicts are None with the reason "no judge
configured"; a judge that fails, or answers anything but the verdict object, gives None with the
reason. When turn-taking failed on the turn the judge is told so and asked to be lenient on
instruction following (the model may have misheard).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from voxwatch.providers.base import ProviderError
from voxwatch.providers.s2s.chat_completions import ChatClient, ChatEndpoint
from voxwatch.foundation.conversation import ToolCall
from voxwatch.providers.keys import Secret, scrub

from voxwatch.foundation.scenario import Scenario, Turn

BASE_URL_VARIABLE, MODEL_VARIABLE, KEY_VARIABLE = ("VOXWATCH_JUDGE_BASE_URL", "VOXWATCH_JUDGE_MODEL",
                                                   "VOXWATCH_JUDGE_API_KEY")
JUDGED = ("instruction_following", "kb_grounding")
TEMPERATURE = 0.0
SEED = 16  # fixed: the same request gets the same sampling wherever the endpoint honours a seed
NO_JUDGE = "no judge configured"

RUBRIC = """You grade one turn of a spoken conversation between a caller and a voice agent.
You are given the agent's system prompt, its knowledge base, what the caller said, a reference
reply, the agent's words (as transcribed) and the function calls it made with their outputs.
Judge two dimensions, each pass or fail, with a one-sentence reason:

instruction_following: fail only when the agent's words and actions contradict each other or the
system prompt in a non-tool sense (it says it did something it did not do, it breaks a rule of
the system prompt, it ignores the caller's request). A missing or wrong function call is never
an instruction-following failure: tool use is graded elsewhere. When turn_taking_failed is true,
the agent may have misheard or been cut off: be lenient on instruction following.

kb_grounding: fail when the agent states a fact that contradicts, or is not supported by, the
knowledge base, the system prompt or the outputs of its function calls. A turn with no factual
claim passes.

Answer with one JSON object and nothing else:
{"instruction_following": {"pass": true|false, "reason": "..."},
 "kb_grounding": {"pass": true|false, "reason": "..."}}"""
PROMPT_SHA256 = hashlib.sha256(RUBRIC.encode()).hexdigest()
"""Names the rubric: the user message is the turn's data as JSON, so the rubric is the prompt."""


@dataclass(frozen=True)
class JudgeIdentity:
    """Stored on every judged score."""

    model: str
    prompt_sha256: str = PROMPT_SHA256
    temperature: float = TEMPERATURE
    seed: int = SEED

    def as_record(self) -> dict[str, Any]:
        return {"judge_model": self.model, "judge_prompt_sha256": self.prompt_sha256,
                "judge_temperature": self.temperature, "judge_seed": self.seed}


@dataclass(frozen=True)
class Verdict:
    passed: bool | None  # None: not judged (the reason says why)
    reason: str


@dataclass(frozen=True)
class Judgement:
    """One turn's judged dimensions and the judge that gave them (None when there was none)."""

    verdicts: dict[str, Verdict]
    judge: JudgeIdentity | None


def _none(reason: str, judge: JudgeIdentity | None) -> Judgement:
    return Judgement({d: Verdict(None, reason) for d in JUDGED}, judge)


def turn_document(scenario: Scenario, turn: Turn, transcript: str, calls: Sequence[ToolCall],
                  outputs: Sequence[Any], turn_taking_failed: bool) -> dict[str, Any]:
    """What the judge is shown of one turn (the user message, as JSON)."""
    return {
        "system_prompt": scenario.system_prompt,
        "knowledge_base": [{"id": d.id, "title": d.title, "text": d.text} for d in scenario.knowledge_base],
        "caller_said": turn.text,
        "reference_reply": turn.reply,
        "agent_said": transcript,
        "agent_calls": [{"name": c.name, "arguments": c.arguments,
                         "output": outputs[i] if i < len(outputs) else None} for i, c in enumerate(calls)],
        "turn_taking_failed": turn_taking_failed,
    }


def parse_verdicts(text: str) -> dict[str, Verdict]:
    """The verdict object, per dimension; anything else is None with the reason, never guessed."""
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.DOTALL)  # a code fence around the object
    try:
        data = json.loads(fenced.group(1) if fenced else body)
    except json.JSONDecodeError:
        return {d: Verdict(None, "malformed judge output: not JSON") for d in JUDGED}
    if not isinstance(data, dict):
        return {d: Verdict(None, "malformed judge output: not a JSON object") for d in JUDGED}
    out = {}
    for d in JUDGED:
        v = data.get(d)
        if not isinstance(v, dict) or not isinstance(v.get("pass"), bool):
            out[d] = Verdict(None, f"malformed judge output: no pass/fail for {d}")
        else:
            out[d] = Verdict(v["pass"], str(v.get("reason") or "").strip()[:500])
    return out


class Judge:
    """A configured judge (or none: `endpoint` None)."""

    def __init__(self, endpoint: ChatEndpoint | None) -> None:
        self.endpoint = endpoint
        self.identity = JudgeIdentity(endpoint.model) if endpoint is not None else None
        self._client = ChatClient(endpoint) if endpoint is not None else None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Judge":
        env = os.environ if environ is None else environ
        url = env.get(BASE_URL_VARIABLE, "").strip().rstrip("/")
        model = env.get(MODEL_VARIABLE, "").strip()
        key = env.get(KEY_VARIABLE, "").strip()
        if not url or not model:
            return cls(None)
        return cls(ChatEndpoint(url, model, Secret(key) if key else None, "the judge"))

    async def judge_turn(self, scenario: Scenario, turn: Turn, transcript: str, calls: Sequence[ToolCall] = (),
                         outputs: Sequence[Any] = (), turn_taking_failed: bool = False) -> Judgement:
        if self._client is None:
            return _none(NO_JUDGE, None)
        document = turn_document(scenario, turn, transcript, calls, outputs, turn_taking_failed)
        messages = [{"role": "system", "content": RUBRIC},
                    {"role": "user", "content": json.dumps(document, ensure_ascii=False, default=str)}]
        try:
            reply = await self._client.complete(messages, temperature=TEMPERATURE, seed=SEED,
                                                response_format={"type": "json_object"})
        except ProviderError as exc:
            reason = scrub(f"judge failed ({exc.status}): {exc}", [self.endpoint.key])
            return _none(reason, self.identity)
        return Judgement(parse_verdicts(reply.text), self.identity)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
