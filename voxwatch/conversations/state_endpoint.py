"""A deployed agent's own backend as the end-state verdict (Coval's API state check: after the call,
ask the backend whether the booking, refund or account change actually happened).

voxwatch answers a vendor model's function calls itself, so their end state is its simulated
backend's (backend.py). A team's own agent calls its own tools, which voxwatch never sees: its end
state is what its backend says. A scenario names the endpoint (`state_endpoint`: the environment
variables holding its URL and optional bearer token, and a timeout); after the conversation voxwatch
GETs it once, and its JSON answer (table -> list of records) is held against `expected_end_state`
with the same matchers (backend.end_state_matches). Whatever keeps the answer from being read is a
stated failure, never a pass: the variable unset, no connection, no answer in time, a refusal (an
HTTP status other than 200), an answer that is not JSON or not tables of records. Neither the URL
nor the token ever appears in a reason.

The answer is bounded: the whole request (connecting, the headers and every byte of the body) has
`timeout_s`, not each read (an endpoint dripping one byte a second would pass every read's timeout),
and the body is read as a stream and refused past MAX_STATE_BYTES (an endless body would fill memory).
What the endpoint answered is shown in a reason only scrubbed (it may echo its request's Authorization
header): the token it was sent and every given secret are cut out before the shown text is shortened.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Mapping, Sequence

import httpx

from voxwatch.conversations.backend import end_state_matches
from voxwatch.foundation.scenario import StateEndpoint
from voxwatch.foundation.server_url import HTTP, server_url_problem
from voxwatch.providers.keys import Secret, scrub

WHO = "state endpoint"
SHOWN_CHARS = 300  # of the records an endpoint answered, shown beside a failed match
MAX_STATE_BYTES = 1 << 20  # the most of an answer read (1 MiB): a test's tables of records, not a database


class StateUnread(Exception):
    """The endpoint's state could not be read; the message is the end-state check's reason."""


def _token(endpoint: StateEndpoint) -> str | None:
    """The bearer token the endpoint is sent (None: it names none); StateUnread when its variable is unset."""
    if endpoint.token_env is None:
        return None
    token = os.environ.get(endpoint.token_env, "").strip()
    if not token:
        raise StateUnread(f"{WHO}: {endpoint.token_env} is not set")
    return token


async def read_state(endpoint: StateEndpoint, max_bytes: int = MAX_STATE_BYTES) -> dict[str, list[dict[str, Any]]]:
    """GET the endpoint once, the whole request within its `timeout_s`, and return its tables;
    StateUnread says why they could not be read."""
    url = os.environ.get(endpoint.url_env, "").strip()
    if not url:
        raise StateUnread(f"{WHO}: {endpoint.url_env} is not set")
    problem = server_url_problem(url, HTTP)
    if problem:
        raise StateUnread(f"{WHO}: {endpoint.url_env} {problem}")
    headers = {"Accept": "application/json", "Accept-Encoding": "identity"}  # read as sent: no inflating bomb
    if (token := _token(endpoint)) is not None:
        headers["Authorization"] = f"Bearer {token}"
    try:
        async with httpx.AsyncClient(timeout=endpoint.timeout_s) as client:  # made off the clock (its TLS context)
            body = await asyncio.wait_for(_body(client, url, headers, max_bytes), endpoint.timeout_s)
    except (httpx.TimeoutException, asyncio.TimeoutError):
        raise StateUnread(f"{WHO}: no answer within {endpoint.timeout_s:g} s") from None
    except httpx.HTTPError as exc:
        raise StateUnread(f"{WHO}: cannot connect ({type(exc).__name__})") from None
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        raise StateUnread(f"{WHO}: the answer is not JSON") from None
    return tables(answer)


async def _body(client: httpx.AsyncClient, url: str, headers: dict[str, str], max_bytes: int) -> bytes:
    """The answer's body, read as a stream and refused once past `max_bytes` (by its declared length first)."""
    too_long = f"{WHO}: the answer is over {_size(max_bytes)}"
    async with client.stream("GET", url, headers=headers) as response:
        if response.status_code != 200:
            raise StateUnread(f"{WHO} refused: HTTP {response.status_code}")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise StateUnread(too_long)
        body = bytearray()
        async for chunk in response.aiter_raw():
            body += chunk
            if len(body) > max_bytes:
                raise StateUnread(too_long)
        return bytes(body)


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n} bytes"


def tables(answer: Any) -> dict[str, list[dict[str, Any]]]:
    """The answer as tables of records, or StateUnread naming what is wrong with its shape."""
    if not isinstance(answer, dict):
        raise StateUnread(f"{WHO}: the answer is not an object of tables (table -> list of records)")
    for table, records in answer.items():
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise StateUnread(f"{WHO}: table {str(table)[:64]!r} is not a list of records (objects)")
    return answer


def state_verdict(state: Mapping[str, list[Mapping[str, Any]]], expected: Mapping[str, list[Mapping[str, Any]]],
                  secrets: Sequence[Secret | str] = ()) -> tuple[bool, str]:
    """The end-state check of an endpoint's answer: on a mismatch, the reason names the expected
    record that found no match and shows what the endpoint answered for that table, `secrets` cut
    out before it is shortened (half a secret would no longer be found)."""
    ok, reason = end_state_matches(state, expected)
    if ok:
        return True, f"{WHO}: {reason}"
    table = reason.split(":", 1)[0]
    answered = scrub(json.dumps(state.get(table, []), default=str, ensure_ascii=False), list(secrets))
    if len(answered) > SHOWN_CHARS:
        answered = answered[:SHOWN_CHARS] + "..."
    return False, f"{WHO}: {reason}; it answered {table}: {answered}"


async def endpoint_end_state(endpoint: StateEndpoint, expected: Mapping[str, list[Mapping[str, Any]]],
                             secrets: Sequence[Secret | str] = (),
                             max_bytes: int = MAX_STATE_BYTES) -> tuple[dict, tuple[bool, str]]:
    """The endpoint's state (empty when unread) and the end-state check held against it; its reason
    shows none of `secrets`, nor the token the endpoint was sent."""
    try:
        token = _token(endpoint)
        state = await read_state(endpoint, max_bytes)
    except StateUnread as exc:
        return {}, (False, str(exc))
    return state, state_verdict(state, expected, [*secrets, *([token] if token else [])])
