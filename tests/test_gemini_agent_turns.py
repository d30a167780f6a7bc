"""The Gemini Live conversation session's reading of the server's messages, message by message
(a socket stand-in the test feeds): when a turn with tool calls is over, and whose turn a caller
transcription fragment is. The emulator tests (test_s2s_conversation.py) cover the same over real
sockets; here the order of the messages against the client's own writes is the test's to choose."""

from __future__ import annotations

import asyncio
import base64
import collections
import json

from voxwatch.foundation.conversation import CALLER_TEXT, ToolCall
from voxwatch.foundation.events import Timeline
from voxwatch.providers.s2s.gemini_agent import GeminiAgentSession
from voxwatch.providers.keys import Secret


class FakeSocket:
    """Messages in as the test feeds them (each with an arrival stamp), messages out recorded."""

    close_code, close_reason = 1000, ""

    def __init__(self) -> None:
        self.arrivals: collections.deque = collections.deque()
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.sent: list[dict] = []

    def feed(self, message: dict) -> None:
        self.arrivals.append(0)
        self.inbox.put_nowait(json.dumps(message))

    def __aiter__(self):
        return self

    async def __anext__(self):
        message = await self.inbox.get()
        if message is None:
            raise StopAsyncIteration
        return message

    async def send(self, text: str) -> None:
        self.sent.append(json.loads(text))

    async def close(self) -> None:
        self.inbox.put_nowait(None)


AUDIO = {"serverContent": {"modelTurn": {"parts": [{"inlineData": {
    "mimeType": "audio/pcm;rate=24000", "data": base64.b64encode(b"\0\0" * 240).decode()}}]}}}
DONE = {"serverContent": {"turnComplete": True}}
CALL = {"toolCall": {"functionCalls": [{"id": "c1", "name": "lookup", "args": {"id": "A1"}}]}}


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def answer(call: ToolCall) -> dict:
    return {"ok": True}


def test_audio_that_trails_a_call_before_it_is_answered_does_not_end_the_turn():
    """The model spoke, called a tool, and its paused generation's last audio and turnComplete came
    before the client answered: the turn ends only at the turnComplete after the answered reply."""

    async def run():
        ws = FakeSocket()
        session = GeminiAgentSession(ws, Timeline(), Secret("k"), None)
        session.start_turn(Timeline())
        for message in (CALL, AUDIO, DONE):  # read before respond() gets to answer the call
            ws.feed(message)
        await settle()
        turn = asyncio.create_task(session.respond(answer))
        await settle()
        assert not turn.done(), "the turnComplete of the paused generation ended the turn"
        assert ws.sent[-1]["toolResponse"]["functionResponses"][0]["id"] == "c1"
        ws.feed({"serverContent": {**AUDIO["serverContent"], "outputTranscription": {"text": "It ships today."}}})
        ws.feed(DONE)
        result = await asyncio.wait_for(turn, 5)
        await session.aclose()
        return result

    result = asyncio.run(run())
    assert result.transcript == "It ships today." and [c.name for c in result.calls] == ["lookup"]


def test_a_finished_transcription_is_marked_on_its_turn_at_once():
    async def run():
        ws = FakeSocket()
        session = GeminiAgentSession(ws, Timeline(), Secret("k"), None)
        timeline = Timeline()
        session.start_turn(timeline)
        await session.send_audio(b"\0\0" * 320)
        await session.end_audio()
        ws.feed(AUDIO)
        ws.feed(DONE)
        model_turn = await asyncio.wait_for(session.respond(answer), 5)
        before = (model_turn.caller_transcript, len(timeline.of(CALLER_TEXT)))
        ws.feed({"serverContent": {"inputTranscription": {"text": "where is"}}})
        ws.feed({"serverContent": {"inputTranscription": {"text": " my order", "finished": True}}})
        await settle()
        after = (model_turn.caller_transcript, [e.text for e in timeline.of(CALLER_TEXT)])
        await session.aclose()
        return before, after, [e.text for e in timeline.of(CALLER_TEXT)]

    before, after, final = asyncio.run(run())
    assert before == (None, 0)
    assert after == ("where is my order", ["where is my order"])
    assert final == ["where is my order"]  # marked once: closing the session adds nothing
