"""A vendor's documented message sequence, played to an adapter as the vendor's server would play it.

Each emulator carries at least one exchange quoted from its vendor's own documentation or SDK test
fixtures (docs/ADDING_A_PROVIDER.md, step 2). A `Replay` serves it over a real WebSocket: it waits
for each client message the documentation shows (`Expect`: a test of the message, JSON decoded where
it is JSON; binary frames are the audio and pass), sends each server message as the documentation
quotes it (`Send`), and keeps every message the client sent (`received`), so that a contract test
can run the adapter against the vendor's own words, not only against an emulator written to match
the adapter.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import websockets


@dataclass(frozen=True)
class Expect:
    """Wait for the client message the documentation shows next (`test` of its decoded JSON)."""

    what: str
    test: Callable[[Any], bool]


@dataclass(frozen=True)
class Send:
    """Send a server message as the documentation quotes it (a dict is sent as JSON text). `adapt`,
    when given, makes it from the quoted message and what the client sent so far: for an identifier
    the client chose (a context id) where the documentation shows its own example's."""

    message: Any
    adapt: Callable[[Any, list], Any] | None = None


@dataclass(frozen=True)
class Close:
    """Close the WebSocket with this code, as the documentation says the server does."""

    code: int = 1000


@dataclass
class Replay:
    """One documented exchange, served to one connection; `missed` names an expectation the client
    never met, `received` holds what it sent (text decoded as JSON, binary as bytes)."""

    steps: list
    received: list = field(default_factory=list)
    missed: str | None = None

    def __post_init__(self) -> None:
        self.audio_bytes = 0

    async def _next(self, ws) -> Any:
        message = await ws.recv()
        if isinstance(message, bytes):
            self.audio_bytes += len(message)
            self.received.append(message)
            return message
        try:
            data = json.loads(message)
        except ValueError:
            data = message  # a plain text command (Cartesia's "finalize")
        self.received.append(data)
        return data

    async def handle(self, ws) -> None:
        try:
            for step in self.steps:
                if isinstance(step, Expect):
                    self.missed = step.what
                    while True:
                        data = await self._next(ws)
                        if not isinstance(data, bytes) and step.test(data):
                            break
                    self.missed = None
                elif isinstance(step, Send):
                    message = step.message if step.adapt is None else step.adapt(step.message, self.received)
                    await ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
                elif isinstance(step, Close):
                    await ws.close(step.code)
                    return
            with contextlib.suppress(websockets.ConnectionClosed):  # what the client sends after the sequence
                while True:
                    await self._next(ws)
        except websockets.ConnectionClosed:
            pass
