"""The Chat Completions endpoint of the loopback OpenAI emulator: answers from a script.

A real model is not deterministic and needs a key; a script is both, so the cascade and the judge
run in tests with no key. The emulator is stateless like the API: it picks its answer from the
request's own messages. `turns[i][j]` answers the request holding i+1 user messages and j
assistant messages after the last of them (so a tool-calling step, its outputs sent back, is
followed by the next step of the same caller turn); `keyed` answers first any request whose last
user message contains its key (a judge asked about one turn, say).

As the API does, it refuses (400) a `tool` message that answers no call of the assistant message
before it, and a call left unanswered; `require` refuses a request missing a parameter value
(the judge's temperature and seed, say), so a test sees what was sent. Streamed as the API
streams: `data: <chat.completion.chunk>` events, a word of content or a slice of a call's
arguments each, the first `first_token_ms` after the request arrived and the rest every
`every_ms`, then one with `finish_reason`, then `data: [DONE]`. Faults: handshake faults refuse
the request; `malformed` sends a broken event, `disconnect` cuts the body short, `no_final`
never ends it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import check


@dataclass(frozen=True)
class ChatStep:
    """One scripted answer: words, or calls ((name, arguments object, or a raw string that is not JSON))."""

    text: str = ""
    calls: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class ChatScenario:
    turns: tuple[tuple[ChatStep, ...], ...] = ()
    keyed: tuple[tuple[str, ChatStep], ...] = ()
    fallback: ChatStep = ChatStep("I have nothing scripted for that.")
    require: tuple[tuple[str, Any], ...] = ()  # (parameter, value) every request must carry
    first_token_ms: float = 150.0
    every_ms: float = 10.0
    api_key: str = "emulator-key"
    fault: str | None = None

    def __post_init__(self) -> None:
        check(self.fault)

    def step_for(self, messages: list[dict[str, Any]]) -> ChatStep:
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        last = messages[users[-1]].get("content") if users else ""
        for key, step in self.keyed:
            if isinstance(last, str) and key in last:
                return step
        if not users:
            return self.fallback
        after = sum(1 for m in messages[users[-1]:] if m.get("role") == "assistant")
        i = len(users) - 1
        if i < len(self.turns) and after < len(self.turns[i]):
            return self.turns[i][after]
        return self.fallback


def problem(scenario: ChatScenario, request: Any) -> str | None:
    """Why the API would refuse this request (400), or None."""
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list) or not request.get("model"):
        return "model and messages are required"
    for name, value in scenario.require:
        if request.get(name) != value:
            return f"expected {name} = {json.dumps(value)}, got {json.dumps(request.get(name))}"
    pending: set[str] = set()
    for m in request["messages"]:
        if not isinstance(m, dict) or m.get("role") not in ("system", "developer", "user", "assistant", "tool"):
            return "each message needs a role"
        if m["role"] == "tool":
            if m.get("tool_call_id") not in pending:
                return "messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
            pending.discard(m["tool_call_id"])
            continue
        if pending:
            return f"tool_call_ids without a response message: {sorted(pending)}"
        if m["role"] == "assistant":
            pending = {c.get("id") for c in m.get("tool_calls") or []}
    return None


def chunks(step: ChatStep, model: str) -> list[dict[str, Any]]:
    """The streamed chunks of one answer (without [DONE])."""
    cid, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    words = step.text.split(" ") if step.text else []
    out += [chunk({"content": (" " if k else "") + w}) for k, w in enumerate(words)]
    for index, (name, arguments) in enumerate(step.calls):
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        half = len(raw) // 2
        out.append(chunk({"tool_calls": [{"index": index, "id": f"call_{uuid.uuid4().hex[:20]}", "type": "function",
                                          "function": {"name": name, "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}) for part in (raw[:half], raw[half:])]
    out.append(chunk({}, "tool_calls" if step.calls else "stop"))
    return out


class ChatStream(Response):
    """The answer as server-sent events, each at its time on the emulator clock, or the fault."""

    def __init__(self, scenario: ChatScenario, step: ChatStep, model: str, arrived_ns: int) -> None:
        self.s, self.events, self.arrived_ns = scenario, chunks(step, model), arrived_ns
        self.background = None

    async def __call__(self, scope, receive, send) -> None:
        s = self.s
        first, every = self.arrived_ns + int(s.first_token_ms * 1e6), int(s.every_ms * 1e6)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
        for i, event in enumerate(self.events):
            await sleep_until(first + max(0, i - 1) * every)  # the role chunk goes with the first token
            if i == 2 and s.fault == "malformed":
                await send({"type": "http.response.body", "body": b'data: {"choices": [\n\n', "more_body": True})
            if i == 2 and s.fault == "disconnect":
                return  # uvicorn closes the connection on an unfinished response
            await send({"type": "http.response.body", "body": f"data: {json.dumps(event)}\n\n".encode(), "more_body": True})
        if s.fault == "no_final":
            await asyncio.Event().wait()
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
