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
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

import httpx

from voxwatch.conversations.backend import end_state_matches
from voxwatch.foundation.scenario import StateEndpoint
from voxwatch.foundation.server_url import HTTP, server_url_problem

WHO = "state endpoint"
SHOWN_CHARS = 300  # of the records an endpoint answered, shown beside a failed match


class StateUnread(Exception):
    """The endpoint's state could not be read; the message is the end-state check's reason."""


async def read_state(endpoint: StateEndpoint) -> dict[str, list[dict[str, Any]]]:
    """GET the endpoint once and return its tables; StateUnread says why it could not be read."""
    url = os.environ.get(endpoint.url_env, "").strip()
    if not url:
        raise StateUnread(f"{WHO}: {endpoint.url_env} is not set")
    problem = server_url_problem(url, HTTP)
    if problem:
        raise StateUnread(f"{WHO}: {endpoint.url_env} {problem}")
    headers = {"Accept": "application/json"}
    if endpoint.token_env is not None:
        token = os.environ.get(endpoint.token_env, "").strip()
        if not token:
            raise StateUnread(f"{WHO}: {endpoint.token_env} is not set")
        headers["Authorization"] = f"Bearer {token}"
    try:
        async with httpx.AsyncClient(timeout=endpoint.timeout_s) as client:
            response = await client.get(url, headers=headers)
    except httpx.TimeoutException:
        raise StateUnread(f"{WHO}: no answer within {endpoint.timeout_s:g} s") from None
    except httpx.HTTPError as exc:
        raise StateUnread(f"{WHO}: cannot connect ({type(exc).__name__})") from None
    if response.status_code != 200:
        raise StateUnread(f"{WHO} refused: HTTP {response.status_code}")
    try:
        answer = json.loads(response.content)
    except (ValueError, RecursionError):
        raise StateUnread(f"{WHO}: the answer is not JSON") from None
    return tables(answer)


def tables(answer: Any) -> dict[str, list[dict[str, Any]]]:
    """The answer as tables of records, or StateUnread naming what is wrong with its shape."""
    if not isinstance(answer, dict):
        raise StateUnread(f"{WHO}: the answer is not an object of tables (table -> list of records)")
    for table, records in answer.items():
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise StateUnread(f"{WHO}: table {str(table)[:64]!r} is not a list of records (objects)")
    return answer


def state_verdict(state: Mapping[str, list[Mapping[str, Any]]],
                  expected: Mapping[str, list[Mapping[str, Any]]]) -> tuple[bool, str]:
    """The end-state check of an endpoint's answer: on a mismatch, the reason names the expected
    record that found no match and shows what the endpoint answered for that table."""
    ok, reason = end_state_matches(state, expected)
    if ok:
        return True, f"{WHO}: {reason}"
    table = reason.split(":", 1)[0]
    answered = json.dumps(state.get(table, []), default=str, ensure_ascii=False)
    if len(answered) > SHOWN_CHARS:
        answered = answered[:SHOWN_CHARS] + "..."
    return False, f"{WHO}: {reason}; it answered {table}: {answered}"


async def endpoint_end_state(endpoint: StateEndpoint,
                             expected: Mapping[str, list[Mapping[str, Any]]]) -> tuple[dict, tuple[bool, str]]:
    """The endpoint's state (empty when unread) and the end-state check held against it."""
    try:
        state = await read_state(endpoint)
    except StateUnread as exc:
        return {}, (False, str(exc))
    return state, state_verdict(state, expected)
