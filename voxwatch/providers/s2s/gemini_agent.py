"""Gemini Live as a multi-turn voice agent (voxwatch/providers/conversation.py's ConversationSession).

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
  is not one is sent as {"result": ...}). The model pauses while a call is outstanding and speaks
  after the response. `turnComplete` means "generation will only start in response to additional
  client messages" (the API reference), and a `toolResponse` is one: some Live models send a
  `turnComplete` right after a tool call, others do not (livekit/agents#3192), and it may reach us
  after our response was written. So the caller's turn ends at a `turnComplete` only once every call
  is answered and the model has spoken (audio or its transcript) since the answers were written; a
  `turnComplete` after a call with no speech since is the paused generation's, never the turn's end.
  Limits of what the protocol lets us tell: audio that trails a call mid-utterance (the model spoke
  before calling: livekit/agents#7195) and reaches us after the answers were written counts as the
  model's speech after them; and a model that says nothing at all after a tool result leaves the
  turn to the runner's turn timeout (its silence and the paused generation's late `turnComplete`
  look the same on the wire).
- What the API heard the caller say comes as `inputTranscription.text` fragments, "sent
  independently of the other server messages, with no guaranteed ordering" (the API reference): a
  fragment may come after the turn's `turnComplete`. Unlike OpenAI's transcript (which names its
  input item) a fragment does not say which turn it transcribes, so the session goes by what the
  client knows: no audio of the next turn exists before its `activityStart`, so every fragment until
  then is the turn just ended; the words are marked (CALLER_TEXT, once, on that turn's timeline and
  ModelTurn) when the transcription says it is `finished` (the SDKs' Transcription.finished, where the
  server sends it), at the next turn's `activityStart`, or when the session ends (so, as with
  OpenAI's late transcript, a ModelTurn's `caller_transcript` may be filled in after `respond`
  returned). A fragment that comes after the next turn has begun goes to that turn: the protocol
  cannot tell it apart.
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

from typing import Any, Sequence

import websockets

from voxwatch.providers.session.agent_turn import AgentTurns, TurnRecord, parse_call
from voxwatch.providers.base import ProviderError
from voxwatch.foundation.conversation import AgentSetup, HistoryItem, ToolCall
from voxwatch.foundation.events import Timeline
from voxwatch.providers.s2s.gemini import LiveSession, live_setup, mark_audio
from voxwatch.providers.keys import Secret
from voxwatch.providers.registry import ModelInfo


def agent_setup(model: ModelInfo, setup: AgentSetup, with_history: bool) -> dict:
    """The `setup` fields of a conversation: the agent's instructions, tools and voice, manual turns,
    both transcriptions, session resumption; `historyConfig` when a history is to be replayed."""
    config: dict[str, Any] = {
        **live_setup(model),
        "systemInstruction": {"parts": [{"text": setup.instructions}]},
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
    return config


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


class GeminiAgentSession(AgentTurns, LiveSession):
    """One Live session across many caller turns; `start_turn` moves it to the next turn's timeline."""

    def __init__(self, ws, timeline: Timeline, key: Secret, limit_s: float | None) -> None:
        self._init_turns(timeline, limit_s)
        self._turn_open = False  # activityStart sent for this turn
        self._unanswered = 0  # calls whose toolResponse is not written yet
        self._awaiting = False  # a call came, and the model has not spoken since its answers were written
        self._hearing: TurnRecord = self._record  # the turn the caller's transcription fragments are of
        self._heard, self._heard_at = "", None
        self.resume_handle: str | None = None  # the last resumable state's handle (sessionResumptionUpdate)
        super().__init__(ws, timeline, key)

    async def replay(self, history: Sequence[HistoryItem]) -> None:
        turns = history_turns(history)
        if turns:
            await self._send({"clientContent": {"turns": turns, "turnComplete": True}})

    def _reader_ended(self) -> None:
        self._heard_whole()
        self._session_ended()

    def _ended(self, exc: websockets.ConnectionClosed | None) -> ProviderError:
        """After a goAway, the server's end of the session is the announced one (`disconnected`)."""
        error = super()._ended(exc)
        if self._go_away is not None and error.status in ("server_error", "disconnected"):
            return ProviderError(str(error), "disconnected")
        return error

    def _on(self, data: dict, at: int) -> bool:
        if "goAway" in data:
            self.rotation.announce(f"Gemini sent goAway (timeLeft {self._go_away})")
        update = data.get("sessionResumptionUpdate")
        if update and update.get("resumable") and update.get("newHandle"):
            self.resume_handle = str(update["newHandle"])
        if "toolCall" in data:
            calls = [parse_call(c.get("id", ""), c["name"], c.get("args") or {})
                     for c in data["toolCall"].get("functionCalls") or []]
            for call in calls:
                self._record.call(call, at)
            self._unanswered += len(calls)
            self._awaiting = True
            self._turn_calls(calls, at)
        content = data.get("serverContent")
        if content is not None:
            self._content(content, at)
        return False

    def _content(self, content: dict, at: int) -> None:
        offset = mark_audio(self.timeline, content, at, self._offset)
        said = (content.get("outputTranscription") or {}).get("text")
        if said:
            self._record.said(said)
        if (said or offset > self._offset) and not self._unanswered:
            self._awaiting = False  # the model speaks after its calls were answered
        self._offset = offset
        heard = content.get("inputTranscription")
        if heard:
            self._hear(heard, at)
        if content.get("interrupted"):
            self._turn_failed(ProviderError("Gemini interrupted the model's turn"), at)
        elif content.get("turnComplete") and not self._awaiting:
            self._turn_done(at)

    def _hear(self, transcription: dict, at: int) -> None:
        """One fragment of what the API heard the caller say (the module docstring says whose turn)."""
        text = str(transcription.get("text") or "")
        if text:
            self._heard, self._heard_at = self._heard + text, at
        if transcription.get("finished"):
            self._heard_whole()

    def _heard_whole(self) -> None:
        """The transcription of the turn being heard is whole: mark its words on that turn, once."""
        if self._heard.strip():
            self._hearing.heard(self._heard, self._heard_at)
        self._heard, self._heard_at = "", None

    async def send_audio(self, pcm16: bytes) -> None:
        if not self._turn_open:
            self._heard_whole()  # no fragment of this turn can exist yet: what came before is the last turn's
            self._hearing = self._record
            await self._realtime("activityStart", {})
            self._turn_open = True
        await super().send_audio(pcm16)

    async def end_audio(self) -> None:
        await super().end_audio()
        self._turn_open = False

    async def _answer(self, outputs: list[tuple[ToolCall, Any]]) -> None:
        """One `toolResponse` with every call's result; the model speaks after it."""
        await self._send({"toolResponse": {"functionResponses": [
            {"id": call.call_id, "name": call.name, "response": function_response(output)}
            for call, output in outputs]}})
        self._unanswered = max(self._unanswered - len(outputs), 0)

    def _end_error(self) -> ProviderError:
        return self._error or self._ended(None)

    async def aclose(self) -> None:
        self._heard_whole()  # the last turn's words, before the session goes
        await super().aclose()
