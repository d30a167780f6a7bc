"""Gemini Live as a multi-turn voice agent (providers/conversation.py's ConversationSession).

Protocol facts (ai.google.dev/api/live, ai.google.dev/gemini-api/docs/live-tools and live-session;
the google-genai SDKs' Live types):
- `setup` carries `systemInstruction` (a Content), `tools: [{functionDeclarations: [{name,
  description, parameters}]}]`, `inputAudioTranscription: {}` and `outputAudioTranscription: {}`
  (what the API heard, and the model's own words, as `serverContent.inputTranscription.text` /
  `outputTranscription.text` fragments) and `sessionResumption: {}` (the server then sends
  `sessionResumptionUpdate {newHandle, resumable}`).
- Turns are marked by hand as in the single-turn adapter (automatic activity detection off):
  `activityStart`, audio, `activityEnd`.
- A call comes as `toolCall {functionCalls: [{id, name, args}]}`; the client answers with
  `toolResponse {functionResponses: [{id, name, response}]}` (`response` is an object: a result that
  is not one is sent as {"result": ...}). The model speaks after the response, so a `turnComplete`
  that comes after a call and before any of the model's words does not end the caller's turn.
- History on rotation: `clientContent {turns: [...], turnComplete: true}` with `historyConfig
  {initialHistoryInClientContent: true}` in the setup, so the replayed history (which may end with
  the model's words) does not start a generation; calls are replayed as `functionCall` /
  `functionResponse` parts.
- Session limits: a connection lasts about 10 minutes, an audio-only session 15 minutes without
  context compression (live-session, "Session lifetime"); the registry's `session_limit_s` is the
  shorter. The server sends `goAway {timeLeft}` before it ends a connection. Either makes
  `rotation_due` say so; a close after a goAway is the announced end (`disconnected`), never a
  server error.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
from typing import Any, Sequence

import websockets

from .agent_turn import Rotation, TurnRecord, parse_call
from .base import ProviderError
from .close_codes import closed
from .conversation import AgentSetup, HistoryItem, ModelTurn, ToolHandler
from .events import AUDIO, CLOSED, REQUEST_SENT, Timeline
from .gemini import INPUT_MIME, OUTPUT_RATE, _closed_error, _decode
from .keys import Secret
from .registry import ModelInfo
from .stamped import received
from .ws_session import ReaderSession

_END = ("end", None, None)


def setup_message(model: ModelInfo, setup: AgentSetup, with_history: bool) -> dict:
    """The `setup` of a conversation: the agent's instructions, tools and voice, manual turns,
    both transcriptions, session resumption; `historyConfig` when a history is to be replayed."""
    config: dict[str, Any] = {
        "model": f"models/{model.vendor_model}",
        "generationConfig": {"responseModalities": ["AUDIO"]},
        "systemInstruction": {"parts": [{"text": setup.instructions}]},
        "realtimeInputConfig": {"automaticActivityDetection": {"disabled": True}},
        "inputAudioTranscription": {}, "outputAudioTranscription": {}, "sessionResumption": {},
    }
    if setup.tools:
        config["tools"] = [{"functionDeclarations": [
            {"name": t["name"], "description": t.get("description", ""),
             "parameters": t.get("parameters") or {"type": "object", "properties": {}}} for t in setup.tools]}]
    voice = setup.voice or model.voice
    if voice:
        config["generationConfig"]["speechConfig"] = {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": voice}}}
    if with_history:
        config["historyConfig"] = {"initialHistoryInClientContent": True}
    return {"setup": config}


def function_response(output: Any) -> dict:
    """A function's result as the object `functionResponses[].response` must be."""
    return output if isinstance(output, dict) else {"result": output}


def history_turns(history: Sequence[HistoryItem]) -> list[dict]:
    """The conversation so far as Live `clientContent` turns, in order."""
    turns: list[dict] = []
    for h in history:
        if h.call is not None:
            ids = {"id": h.call.call_id, "name": h.call.name}
            turns.append({"role": "model", "parts": [{"functionCall": {**ids, "args": h.call.arguments}}]})
            turns.append({"role": "user", "parts": [{"functionResponse": {**ids, "response": function_response(h.output)}}]})
        elif h.role in ("user", "assistant"):
            turns.append({"role": "user" if h.role == "user" else "model", "parts": [{"text": h.text}]})
    return turns


class GeminiAgentSession(ReaderSession):
    """One Live session across many caller turns; `start_turn` moves it to the next turn's timeline."""

    def __init__(self, ws, timeline: Timeline, key: Secret, limit_s: float | None) -> None:
        self.timeline, self.key = timeline, key
        self._queue: asyncio.Queue = asyncio.Queue()  # ("calls" | "done" | "failed" | "end", payload, at)
        self._record = TurnRecord(timeline)
        self._offset = 0
        self._turn_open = False  # activityStart sent for this turn
        self._awaiting = False  # a call came and the model has not spoken since
        self._heard, self._heard_at = "", None
        self._go_away: str | None = None
        self.resume_handle: str | None = None  # the last resumable state's handle (sessionResumptionUpdate)
        self.rotation = Rotation(timeline, limit_s)
        super().__init__(ws)

    def rotation_due(self) -> str | None:
        """Why this session must be replaced before the next turn (goAway, or its limit is near), or None."""
        return self.rotation.due()

    def start_turn(self, timeline: Timeline) -> None:
        self.timeline, self._record, self._offset = timeline, TurnRecord(timeline), 0
        self._heard, self._heard_at = "", None

    async def replay(self, history: Sequence[HistoryItem]) -> None:
        turns = history_turns(history)
        if turns:
            await self._send({"clientContent": {"turns": turns, "turnComplete": True}})

    async def _receive(self) -> None:
        try:
            async for message, at in received(self.ws):
                if self._on(_decode(message), at):
                    break
            else:
                self._error = self._ended(None)
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError,
                binascii.Error) as exc:
            self._error = ProviderError(f"malformed message from Gemini ({type(exc).__name__})", "malformed")
        except websockets.ConnectionClosed as exc:
            self._error = self._ended(exc)
        finally:
            self._done.set()
            self._queue.put_nowait(_END)

    def _ended(self, exc: websockets.ConnectionClosed | None) -> ProviderError:
        """The session the server ended: after a goAway, the announced end (`disconnected`)."""
        note = f" after goAway (timeLeft {self._go_away})" if self._go_away is not None else ""
        if exc is None:
            reason = f": {self.ws.close_reason}" if self.ws.close_reason else ""
            error = closed("Gemini", self.ws.close_code, "before the turn was complete", note=note + reason)
        else:
            error = _closed_error(exc, self.key, note)
        if self._go_away is not None and error.status in ("server_error", "disconnected"):
            return ProviderError(str(error), "disconnected")
        return error

    def _on(self, data: dict, at: int) -> bool:
        """Handle one server message (arrived at `at`); True ends the reader."""
        if "error" in data:
            self._error = ProviderError(f"Gemini error: {str(data['error'])[:300]}")
            return True
        if "goAway" in data:
            self._go_away = str((data["goAway"] or {}).get("timeLeft"))
            self.rotation.announce(f"Gemini sent goAway (timeLeft {self._go_away})")
        update = data.get("sessionResumptionUpdate")
        if update and update.get("resumable") and update.get("newHandle"):
            self.resume_handle = str(update["newHandle"])
        if "toolCall" in data:
            calls = [parse_call(c.get("id", ""), c["name"], c.get("args") or {})
                     for c in data["toolCall"].get("functionCalls") or []]
            for call in calls:
                self._record.call(call, at)
            self._awaiting = True
            self._queue.put_nowait(("calls", calls, at))
        content = data.get("serverContent")
        if content is not None:
            self._content(content, at)
        return False

    def _content(self, content: dict, at: int) -> None:
        for part in (content.get("modelTurn") or {}).get("parts", []):
            blob = part.get("inlineData")
            if blob is None or not str(blob.get("mimeType", "")).startswith("audio/pcm"):
                continue
            pcm = base64.b64decode(blob["data"], validate=True)
            rate = re.search(r"rate=(\d+)", blob["mimeType"])
            self.timeline.mark(AUDIO, at, sample_offset=self._offset, n_samples=len(pcm) // 2,
                               sample_rate=int(rate.group(1)) if rate else OUTPUT_RATE, audio=pcm)
            self._offset += len(pcm) // 2
            self._awaiting = False
        said = (content.get("outputTranscription") or {}).get("text")
        if said:
            self._record.said(said)
            self._awaiting = False
        heard = (content.get("inputTranscription") or {}).get("text")
        if heard:
            self._heard, self._heard_at = self._heard + heard, at
        if content.get("interrupted"):
            self._queue.put_nowait(("failed", ProviderError("Gemini interrupted the model's turn"), at))
        elif content.get("turnComplete") and not self._awaiting:
            if self._heard:
                self._record.heard(self._heard, self._heard_at)
            self._queue.put_nowait(("done", None, at))

    async def _send(self, payload: dict) -> None:
        try:
            await self.ws.send(json.dumps(payload))
        except websockets.ConnectionClosed as exc:
            try:
                await asyncio.wait_for(self._done.wait(), self.close_wait_s)  # the reader sees the close too
            except asyncio.TimeoutError:
                pass
            raise self._error or _closed_error(exc, self.key) from None

    async def send_audio(self, pcm16: bytes) -> None:
        if not self._turn_open:
            await self._send({"realtimeInput": {"activityStart": {}}})
            self._turn_open = True
        await self._send({"realtimeInput": {"audio": {"mimeType": INPUT_MIME, "data": base64.b64encode(pcm16).decode()}}})

    async def end_audio(self) -> None:
        """Close the caller's turn (manual activity detection): the model answers from here."""
        await self._send({"realtimeInput": {"activityEnd": {}}})
        self._turn_open = False
        self.timeline.mark(REQUEST_SENT)

    async def respond(self, tools: ToolHandler) -> ModelTurn:
        while True:
            kind, payload, at = await self._queue.get()
            if kind == "done":
                self.timeline.mark(CLOSED, at)
                return self._record.complete(at)
            if kind == "failed":
                raise payload
            if kind == "end":
                self._queue.put_nowait(_END)  # every later turn fails the same way
                raise self._error or closed("Gemini", self.ws.close_code, "before the turn was complete")
            outputs = [(call, await tools(call)) for call in payload]
            await self._send({"toolResponse": {"functionResponses": [
                {"id": call.call_id, "name": call.name, "response": function_response(output)}
                for call, output in outputs]}})
            for call, output in outputs:
                self._record.written(call, output)
