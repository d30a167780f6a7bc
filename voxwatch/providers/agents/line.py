"""A team's own deployed voice agent (Pipecat, LiveKit, Vapi, home-made) as a ConversationSession
(voxwatch/providers/conversation.py), reached over an audio-only WebSocket: voxwatch is the caller's
line. The wire formats are the transports' own (twilio.py: Twilio Media Streams; pcm_ws.py:
raw PCM frames); what every such line does is here, once:

- the line is live for the whole call: whenever the caller is not speaking it carries one frame of
  silence every FRAME_MS, as a phone network does, so an agent's own voice activity detector hears
  the caller stop (an agent that hears nothing at all never ends the caller's turn);
- each frame of the agent's audio is stamped on the turn's Timeline when its last bytes arrive
  (AUDIO, at the wire's rate), so V2V, the silence gap, turn-taking and no-response come from the
  call recording, as for every other agent;
- the agent reports no turn boundaries, calls or words: its reply is over once no audio has arrived
  for QUIET_S past the end of its playout (the audio received so far, played in order), and a turn
  with no audio NO_REPLY_S after the caller stopped is a turn without a reply (no response, from
  the recording). Its turns carry `unreported = (CALLS, WORDS)`: the scores that need them are null
  with that reason, and its end state is the state endpoint's (voxwatch/conversations/state_endpoint.py).

Where the agent is: `VOXWATCH_AGENT_<NAME>_URL` (ws:// or wss://), and an optional bearer token in
`VOXWATCH_AGENT_<NAME>_TOKEN` (sent as `Authorization: Bearer ...`), for the registry id `agent/<name>`.

What an agent sends is bounded (LineBounds, docs/CONVERSATIONS.md "Bounds"): one message's size (the
WebSocket's max_size: a bigger one is refused before it is read), its audio per turn and per call, its
audio messages per turn, and its other messages (marks, clears, anything not audio) in any second.
Past a bound the turn fails `malformed` with the bound named, the reader stops (nothing more is
buffered) and the call ends; the turn timeout could not do it, since a huge message or a flood of
them is read and decoded before any timeout is looked at.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
from dataclasses import dataclass
from typing import Sequence

import websockets
from websockets.frames import CloseCode

from voxwatch.foundation.clock import sleep_until
from voxwatch.foundation.conversation import CALLS, WORDS, AgentSetup, HistoryItem, ModelTurn, ToolHandler
from voxwatch.foundation.events import AUDIO, CLEARED, Timeline
from voxwatch.foundation.server_url import WS, server_url_problem
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import is_loopback, open_websocket
from voxwatch.providers.base import ProviderError
from voxwatch.providers.keys import Secret, agent_name, agent_token, vendor_variable
from voxwatch.providers.registry import RegistryError
from voxwatch.providers.session.ws_session import ReaderSession

VENDOR = "agent"
FRAME_MS = 20  # the caller's frames on the line (the runner's chunks, and the silence between turns)
QUIET_S = 1.0  # the reply is over this long after the end of its playout with no more audio
NO_REPLY_S = 8.0  # no audio this long after the caller stopped: the turn had no reply
CALLER_RATE = 16000  # what the runner sends (ConversationSession.send_audio)


@dataclass(frozen=True)
class LineBounds:
    """What an agent may send on one call (docs/CONVERSATIONS.md "Bounds"); past any of them the turn
    fails `malformed` and the call ends. Generous for any agent that talks to a caller (a reply of a
    minute, five minutes of replies on one call, a mark or clear every 5 ms), and small enough that
    the call's recording and its analysis (about 0.4 MB a second of audio) stay far below 300 MB."""

    message_bytes: int = 1 << 20  # one WebSocket message (1 MiB: 98 s of Twilio's base64 mu-law)
    turn_audio_s: float = 60.0  # the agent's audio on one turn
    call_audio_s: float = 300.0  # the agent's audio on one call (a reconnection is a new call)
    turn_messages: int = 6_000  # audio messages on one turn (one per 10 ms of turn_audio_s)
    control_per_s: int = 200  # messages that are not audio (mark, clear, text) in any one second
    handshake_s: float = 10.0  # the WebSocket's opening handshake

    def over(self, what: str) -> ProviderError:
        """The failure of an agent that went past the bound `what` names."""
        return ProviderError(f"the agent sent {what} (a bound of the line: docs/CONVERSATIONS.md)", "malformed")


def url_variable(name: str) -> str:
    return vendor_variable(f"{VENDOR}_{name}", "URL")


def token_variable(name: str) -> str:
    return vendor_variable(f"{VENDOR}_{name}", "TOKEN")


@dataclass(frozen=True)
class AgentEndpoint:
    """Where one registered agent listens, read from the environment when its adapter is made."""

    name: str
    url: str
    token: Secret | None

    @classmethod
    def of(cls, model_id: str) -> "AgentEndpoint":
        """The agent's address and token; a RegistryError (a one-line refusal, as a missing key is)
        when its address is unset or not a WebSocket's."""
        name = agent_name(model_id)
        variable = url_variable(name)
        url = os.environ.get(variable, "").strip()
        if not url:
            raise RegistryError(f"{model_id}: set {variable} to the agent's WebSocket address (ws:// or wss://)")
        problem = server_url_problem(url, WS)
        if problem:
            raise RegistryError(f"{variable} {problem}")
        return cls(name, url, agent_token(name))

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token.reveal()}"} if self.token is not None else {}


class AgentLine(ReaderSession):
    """One call on the line. A transport says how the caller's frames and the silence are written
    (`_caller_frame`, `_silence_frame`), what is said when the call opens and ends (`_open`,
    `_hang_up`), and reads the agent's messages (`_read`), handing its audio to `_agent_audio`."""

    vendor = VENDOR
    rate: int  # the agent's audio on the wire, samples per second
    takes_barge_in = True  # the line carries the caller whenever it speaks: it can talk over the agent

    def __init__(self, ws, timeline: Timeline, quiet_s: float = QUIET_S, no_reply_s: float = NO_REPLY_S,
                 bounds: LineBounds = LineBounds()) -> None:
        self.timeline = timeline
        self._quiet_ns, self._no_reply_ns = int(quiet_s * 1e9), int(no_reply_s * 1e9)
        self.bounds = bounds
        self._offset = 0  # the turn's agent audio so far, in samples
        self._call_samples = 0  # the call's agent audio so far
        self._turn_messages = 0  # the turn's audio messages so far
        self._controls: collections.deque[int] = collections.deque(maxlen=bounds.control_per_s)  # their arrivals
        self._playout_end = 0  # when the agent's audio received so far has played out (ns)
        self._last_audio = 0
        self._caller_done: int | None = None  # when the caller's turn ended (None while the caller speaks)
        self._replied = False  # audio arrived after the caller's turn ended
        self._talking = False
        self._line: asyncio.Task | None = None
        super().__init__(ws)

    # -- the transport's part -------------------------------------------------------------------

    def _caller_frame(self, pcm16: bytes) -> str | bytes:
        """One frame of the caller's 16 kHz int16 PCM as the transport's message."""
        raise NotImplementedError

    def _silence_frame(self) -> str | bytes:
        """One FRAME_MS frame of silence as the transport's message."""
        raise NotImplementedError

    async def _open(self) -> None:
        """What the line says before any audio (nothing, unless the transport has a handshake)."""

    async def _hang_up(self) -> None:
        """What the line says when the call ends (nothing, unless the transport has a stop message)."""

    # -- the line -------------------------------------------------------------------------------

    async def opened(self) -> "AgentLine":
        await self._open()
        self._line = asyncio.create_task(self._carry_silence())
        return self

    async def _carry_silence(self) -> None:
        """One frame of silence every FRAME_MS while the caller is not speaking, on absolute deadlines."""
        period = FRAME_MS * 1_000_000
        clock = self.timeline.clock
        due = clock()
        with contextlib.suppress(websockets.ConnectionClosed):  # the call is over: the reader says how
            while not self._done.is_set():
                due += period
                await sleep_until(due, clock)
                if not self._talking:
                    await self.ws.send(self._silence_frame())

    def _agent_audio(self, pcm16: bytes, at: int) -> None:
        """One frame of the agent's audio (int16 PCM at `rate`), arrived at `at`; past a bound of the
        line (per turn, per call) it is refused, not kept."""
        if len(pcm16) % 2:
            raise ValueError("an audio frame ended mid-sample")
        n = len(pcm16) // 2
        if n == 0:
            return
        b = self.bounds
        self._turn_messages += 1
        if self._turn_messages > b.turn_messages:
            raise b.over(f"over {b.turn_messages} audio messages on one turn")
        if self._offset + n > b.turn_audio_s * self.rate:
            raise b.over(f"over {b.turn_audio_s:g} s of audio on one turn")
        if self._call_samples + n > b.call_audio_s * self.rate:
            raise b.over(f"over {b.call_audio_s:g} s of audio on one call")
        self._call_samples += n
        self.timeline.mark(AUDIO, at, sample_offset=self._offset, n_samples=n, sample_rate=self.rate, audio=pcm16)
        self._offset += n
        self._playout_end = max(self._playout_end, at) + n * 1_000_000_000 // self.rate
        self._last_audio = at
        if self._caller_done is not None:
            self._replied = True

    def _control(self, at: int) -> None:
        """A message that is not audio (a mark, a clear, a text frame) arrived at `at`: more than
        control_per_s of them within one second is past the line's bound."""
        window = self._controls
        if len(window) == window.maxlen and at - window[0] < 1_000_000_000:
            raise self.bounds.over(f"over {self.bounds.control_per_s} messages other than audio in one second")
        window.append(at)

    def _dropped(self, exc: websockets.ConnectionClosed) -> ProviderError:
        """A message over the line's size bound closes the socket (websockets' max_size): that is the
        agent's malformed message, not a dropped call."""
        if exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG:
            return self.bounds.over(f"a message over {self.bounds.message_bytes} bytes")
        return super()._dropped(exc)

    def _cleared(self, at: int) -> None:
        """The agent dropped the audio it had queued (a barge-in): its playout ends now, and the turn's
        timeline says when (the agent's own stop: metrics/turn_taking.py agent_stop)."""
        self._playout_end = min(self._playout_end, at)
        self.timeline.mark(CLEARED, at)

    # -- ConversationSession ------------------------------------------------------------------

    def start_turn(self, timeline: Timeline) -> None:
        self.timeline, self._offset, self._turn_messages = timeline, 0, 0
        self._caller_done, self._replied = None, False

    async def send_audio(self, pcm16: bytes) -> None:
        self._talking = True
        await self._send(self._caller_frame(pcm16))  # a call the reader ended fails with the reader's reason

    async def end_audio(self) -> None:
        self._talking = False
        self._caller_done = self.timeline.clock()

    async def respond(self, tools: ToolHandler) -> ModelTurn:
        """Wait for the agent's reply to end (QUIET_S past its playout) or not to come (NO_REPLY_S)."""
        clock = self.timeline.clock
        ended = self._caller_done if self._caller_done is not None else clock()
        while True:
            if self._done.is_set():
                raise self._error or closed(self.vendor, self.ws.close_code, "before the turn was complete")
            now = clock()
            if self._replied and now >= max(self._last_audio, self._playout_end) + self._quiet_ns:
                break
            if not self._replied and now >= ended + self._no_reply_ns:
                break
            await asyncio.sleep(FRAME_MS / 1000)
        return ModelTurn(unreported=(CALLS, WORDS))

    def cut_short(self) -> ModelTurn:
        """The turn's reply as far as it went when the caller talked over it (a persona's barge-in)."""
        return ModelTurn(unreported=(CALLS, WORDS))

    async def aclose(self) -> None:
        if self._line is not None:
            self._line.cancel()
        if not self._done.is_set():
            try:
                await self._hang_up()
            except Exception:  # noqa: BLE001 - the call is over either way
                pass
        if self._error is not None:  # past a bound (or broken): no close handshake with what sent it
            self.ws.transport.abort()
        await super().aclose()


class AgentStream:
    """The registry's adapter of a deployed agent (`agent/<name>`): opens one line per conversation.
    The agent is told nothing of the scenario (it is deployed with its own prompt and tools), and a
    rotation's history cannot be replayed into it: a new line is a new call."""

    session: type[AgentLine]
    unreported = (CALLS, WORDS)  # of every turn, a failed one included: its words are transcribed after the call,
    # and its end state is its own backend's (CALLS: conversations/state_endpoint.py), never voxwatch's

    def __init__(self, model, bounds: LineBounds = LineBounds()) -> None:
        self.model = model
        self.bounds = bounds
        self.endpoint = AgentEndpoint.of(model.id)
        self.emulator = is_loopback(self.endpoint.url)  # a loopback agent's rows are an emulator's

    def secrets(self) -> tuple[Secret, ...]:
        return (self.endpoint.token,) if self.endpoint.token is not None else ()

    async def converse(self, timeline: Timeline, setup: AgentSetup,
                       history: Sequence[HistoryItem] = ()) -> AgentLine:
        ws = await open_websocket(self.endpoint.url, self.endpoint.headers(), f"agent {self.endpoint.name}",
                                  clock=timeline.clock, max_size=self.bounds.message_bytes,
                                  open_timeout_s=self.bounds.handshake_s)
        session = self.session(ws, timeline, bounds=self.bounds, **self._options())
        try:
            return await session.opened()
        except BaseException:
            await session.aclose()
            raise

    def _options(self) -> dict:
        return {}
