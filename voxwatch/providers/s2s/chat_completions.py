"""An OpenAI-compatible Chat Completions client (`POST /v1/chat/completions`), streamed, with tools.

The cascade's language model and the conversation judge both speak this one API, which OpenAI
and most other vendors and local servers (vLLM, llama.cpp, Ollama, ...) serve. As documented:
the request is JSON `model`, `messages` (roles system / user / assistant / tool; an assistant
message may carry `tool_calls`, each answered by a `tool` message naming its `tool_call_id`),
`tools` (`{"type": "function", "function": {name, description, parameters}}`), `stream: true`,
and optionally `temperature`, `seed`, `response_format`. A streamed answer is server-sent events:
`data: <chat.completion.chunk JSON>` blocks, then `data: [DONE]`. Each chunk's
`choices[0].delta` holds a piece of `content`, or `tool_calls` pieces keyed by `index` (the first
piece of a call carries its `id` and `function.name`, every piece a further slice of
`function.arguments`); `finish_reason` (`stop`, `tool_calls`, `length`, ...) ends the choice.
Errors are HTTP statuses with an `error` object (401 a refused key, 429 with Retry-After, 5xx).

Where the base URL has no path (`https://api.openai.com`, an emulator's root), the API is under
`/v1`; where it has one (`https://generativelanguage.googleapis.com/v1beta/openai`, a local
server's `/v1`), `/chat/completions` is appended to it, as OpenAI-compatible clients do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any, Sequence
from urllib.parse import urlsplit

import httpx

from voxwatch.providers.session import sse, stamped_http
from voxwatch.providers.base import ProviderError
from voxwatch.foundation.conversation import HistoryItem, ToolCall
from voxwatch.providers.session.endpoints import WarmClient, base_url, http_errors, http_failure
from voxwatch.foundation.events import Timeline
from voxwatch.providers.keys import Secret, api_key, vendor_variable

FIRST_TOKEN = "first_token"  # the arrival of the first delta with words or a call in it
DONE = "[DONE]"


@dataclass(frozen=True)
class ChatEndpoint:
    """Where a chat model is served: the base URL, the model name its API takes, and its key
    (None for a server that needs none; never printed: keys.Secret)."""

    url: str
    model: str
    key: Secret | None
    name: str = "chat endpoint"  # how errors name it ("OpenAI", "the judge")


@dataclass
class ChatReply:
    """One completion: its words, its calls (in index order), why it stopped, and the socket
    stamps of the exchange (request written, first token read)."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    first_token_ns: int | None = None


DEFAULT_URLS = {"openai": "https://api.openai.com"}
"""Vendors whose chat endpoint voxwatch knows; any other is reached through VOXWATCH_<VENDOR>_BASE_URL."""


def endpoint_for(vendor: str, model: str) -> ChatEndpoint:
    """A vendor's chat endpoint from the environment, as every adapter's: VOXWATCH_<VENDOR>_BASE_URL
    (else the vendor's own URL) and VOXWATCH_<VENDOR>_API_KEY."""
    url = base_url(vendor, DEFAULT_URLS.get(vendor, ""))
    if not url:
        raise ProviderError(f"no chat endpoint for {vendor}: set {vendor_variable(vendor, 'BASE_URL')}", "error")
    return ChatEndpoint(url, model, api_key(vendor), vendor)


def chat_path(url: str) -> str:
    return "/chat/completions" if urlsplit(url).path.strip("/") else "/v1/chat/completions"


def tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """AgentSetup's tool (name, description, parameters) as a Chat Completions function tool."""
    return {"type": "function", "function": {"name": tool["name"], "description": tool.get("description", ""),
                                             "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}}


def call_message(calls: Sequence[ToolCall], text: str = "") -> dict[str, Any]:
    """The assistant message that made `calls`, as the API takes it back in `messages`."""
    return {"role": "assistant", "content": text or None,
            "tool_calls": [{"id": c.call_id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments.get("_raw") if set(c.arguments) == {"_raw"}
                                         else json.dumps(c.arguments)}} for c in calls]}


def output_message(call_id: str, output: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": output if isinstance(output, str) else json.dumps(output)}


def history_messages(history: Sequence[HistoryItem]) -> list[dict[str, Any]]:
    """A conversation so far as chat messages (a rotation's replay is this list: the history is the state)."""
    out: list[dict[str, Any]] = []
    for item in history:
        if item.role == "tool" and item.call is not None:
            out += [call_message([item.call]), output_message(item.call.call_id, item.output)]
        elif item.role in ("user", "assistant"):
            out.append({"role": item.role, "content": item.text})
    return out


def parse_arguments(raw: str) -> dict[str, Any]:
    """A call's arguments; not a JSON object -> the raw string under "_raw" (scored wrong, never dropped)."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": raw}


class _Accumulator:
    """A streamed choice put back together: content pieces, and tool calls by index."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None
        self.first_token_ns: int | None = None

    def add(self, chunk: Any, at_ns: int, vendor: str) -> None:
        if not isinstance(chunk, dict):
            raise ProviderError(f"malformed chunk from {vendor} (not an object)", "malformed")
        if "error" in chunk:
            raise ProviderError(f"{vendor} reported an error mid-stream", "server_error")
        for choice in chunk.get("choices") or []:  # a usage-only chunk has none
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or choice.get("message") or {}
            self._delta(delta, at_ns, vendor)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def _delta(self, delta: dict[str, Any], at_ns: int, vendor: str) -> None:
        content = delta.get("content")
        if isinstance(content, str) and content:
            self.text.append(content)
            self.first_token_ns = self.first_token_ns or at_ns
        for piece in delta.get("tool_calls") or []:
            try:
                call = self.calls.setdefault(int(piece.get("index", len(self.calls))), {"id": "", "name": "", "arguments": ""})
                function = piece.get("function") or {}
            except (AttributeError, TypeError, ValueError):
                raise ProviderError(f"malformed tool call from {vendor}", "malformed") from None
            call["id"] = call["id"] or str(piece.get("id") or "")
            call["name"] = call["name"] or str(function.get("name") or "")  # some servers repeat it whole
            call["arguments"] += str(function.get("arguments") or "")
            self.first_token_ns = self.first_token_ns or at_ns

    def reply(self) -> ChatReply:
        calls = [ToolCall(c["id"] or f"call_{i}", c["name"], parse_arguments(c["arguments"]))
                 for i, c in sorted(self.calls.items())]
        return ChatReply("".join(self.text), calls, self.finish_reason, self.first_token_ns)


class ChatClient:
    """One endpoint's client, warmed once per event loop and reused: a completion's clock never
    pays for the connection set-up (the cascade's turns, the judge's many calls)."""

    def __init__(self, endpoint: ChatEndpoint) -> None:
        self.endpoint = endpoint
        self.path = chat_path(endpoint.url)
        self._warm: WarmClient | None = None
        self._loop = None

    async def connect(self) -> "ChatClient":
        loop = asyncio.get_running_loop()
        if self._warm is None or self._loop is not loop:
            headers = {"Authorization": f"Bearer {self.endpoint.key.reveal()}"} if self.endpoint.key else {}
            self._warm, self._loop = WarmClient(self.endpoint.url, headers, self.endpoint.name), loop
            await self._warm.warm()
        return self

    async def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] = (),
                       timeline: Timeline | None = None, **options: Any) -> ChatReply:
        """One streamed completion; `timeline` (if given) gets REQUEST_SENT, RESPONSE and FIRST_TOKEN
        at their socket stamps. `options`: temperature, seed, response_format, ... as the API names them."""
        await self.connect()
        vendor = self.endpoint.name
        request: dict[str, Any] = {"model": self.endpoint.model, "messages": list(messages), "stream": True, **options}
        if tools:
            request["tools"] = [tool_schema(t) for t in tools]
        acc, cold = _Accumulator(), [False]
        with http_errors(vendor):
            async with self._warm.stream("POST", self.path, cold, json=request) as response:
                if timeline is not None:
                    stamped_http.mark_exchange(timeline, response, cold[0])
                if response.status_code >= 400:
                    raise http_failure(response.status_code, response.headers, vendor)
                if response.headers.get("content-type", "").startswith("application/json"):  # a server that ignored stream
                    body = await response.aread()
                    acc.add(_json(body.decode("utf-8", "replace"), vendor), stamped_http.arrived(response), vendor)
                    done = True
                else:
                    done = await _read_stream(response, acc, vendor)
        if not done and acc.finish_reason is None:
            raise ProviderError(f"{vendor} ended the stream before it finished", "disconnected")
        reply = acc.reply()
        if timeline is not None and reply.first_token_ns is not None:
            timeline.mark(FIRST_TOKEN, at_ns=reply.first_token_ns)
        return reply

    async def aclose(self) -> None:
        if self._warm is not None:
            await self._warm.aclose()
            self._warm = None


def _json(data: str, vendor: str) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        raise ProviderError(f"malformed event from {vendor} (not JSON)", "malformed") from None


async def _read_stream(response: httpx.Response, acc: _Accumulator, vendor: str) -> bool:
    """Read the event stream into `acc`; True once `data: [DONE]` arrived."""
    async with contextlib.aclosing(sse.received_events(response)) as events:
        async for event, at in events:
            if event.strip() == DONE:
                return True
            acc.add(_json(event, vendor), at, vendor)
    return False
