"""A deployed agent over the Twilio Media Streams WebSocket protocol, with voxwatch as the phone
network: the protocol Pipecat (TwilioFrameSerializer), LiveKit's telephony bridges and most voice-agent
platforms accept for phone calls. The line's behaviour is line.py's; this is the wire.

Protocol facts (twilio.com/docs/voice/media-streams/websocket-messages; what Pipecat's
TwilioFrameSerializer reads and writes agrees):
- every message is a JSON text frame with an `event`. The network opens the socket to the agent and
  sends `connected` ({"protocol": "Call", "version": "1.0.0"}), then `start` once, with
  `sequenceNumber` "1", `streamSid`, and `start` = {streamSid, accountSid, callSid, tracks
  ["inbound"], customParameters {}, mediaFormat {encoding "audio/x-mulaw", sampleRate 8000,
  channels 1}};
- the caller's audio is `media` messages: `media` = {track "inbound", chunk (a string counting from
  "1"), timestamp (milliseconds since the stream started, a string), payload (base64 of 8 kHz mono
  mu-law, no header)}, one per 20 ms; every message after `connected` carries `sequenceNumber` (a
  string counting up from "1") and `streamSid`;
- the agent answers with `media` ({streamSid, media: {payload}}: base64 8 kHz mu-law), `mark`
  ({streamSid, mark: {name}}), which the network echoes back with the same name once the audio
  queued before it has played (or a `clear` dropped it), and `clear` ({streamSid}), which drops the
  audio the network still has queued: a barge-in;
- the network ends the call with `stop` ({accountSid, callSid}) and closes the socket.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import uuid

import websockets

from voxwatch.foundation.clock import sleep_until
from voxwatch.foundation.mulaw import RATE as MULAW_RATE, from_wire, to_wire
from voxwatch.foundation.frame_rates import Halver
from voxwatch.providers.agents.line import FRAME_MS, AgentLine, AgentStream
from voxwatch.providers.session.stamped import received

ACCOUNT_SID = "AC" + "0" * 32  # a placeholder account: the agent gets no Twilio account of anyone's
SILENCE = to_wire(b"\0\0" * (MULAW_RATE * FRAME_MS // 1000))


class TwilioLine(AgentLine):
    """One call's media stream, voxwatch as the network."""

    rate = MULAW_RATE

    def __init__(self, ws, timeline, **options) -> None:
        self.stream_sid = "MZ" + uuid.uuid4().hex
        self.call_sid = "CA" + uuid.uuid4().hex
        self._sequence = 0
        self._chunk = 0
        self._halver = Halver()
        self._marks: list[tuple[str, asyncio.Task]] = []  # each mark waiting for its audio to play
        super().__init__(ws, timeline, **options)
        self._started = timeline.clock()  # media timestamps count from the `start` message

    def _message(self, event: str, **fields) -> str:
        """A message after `connected`: numbered, and naming the stream."""
        self._sequence += 1
        return json.dumps({"event": event, "sequenceNumber": str(self._sequence), **fields,
                           "streamSid": self.stream_sid})

    def _media(self, codes: bytes) -> str:
        self._chunk += 1
        millis = (self.timeline.clock() - self._started) // 1_000_000
        return self._message("media", media={"track": "inbound", "chunk": str(self._chunk),
                                             "timestamp": str(millis),
                                             "payload": base64.b64encode(codes).decode()})

    def _caller_frame(self, pcm16: bytes) -> str:
        return self._media(to_wire(self._halver.push(pcm16)))

    def _silence_frame(self) -> str:
        self._halver.push(b"\0\0" * (2 * len(SILENCE)))  # the caller's filter hears the silence too
        return self._media(SILENCE)

    async def _open(self) -> None:
        await self.ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        await self.ws.send(self._message("start", start={
            "streamSid": self.stream_sid, "accountSid": ACCOUNT_SID, "callSid": self.call_sid,
            "tracks": ["inbound"], "customParameters": {},
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": MULAW_RATE, "channels": 1}}))
        self._started = self.timeline.clock()

    async def _hang_up(self) -> None:
        await self.ws.send(self._message("stop", stop={"accountSid": ACCOUNT_SID, "callSid": self.call_sid}))

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            try:
                data = json.loads(message)
            except RecursionError:  # nested past the parser's depth: not a message of the protocol
                raise ValueError("a message nested too deep") from None
            event = data["event"]
            if event == "media":
                self._agent_audio(from_wire(base64.b64decode(data["media"]["payload"], validate=True)), at)
                continue
            self._control(at)  # a mark, a clear, or an event the network does not read: bounded per second
            if event == "mark":
                name = str(data["mark"]["name"])
                self._marks = [m for m in self._marks if not m[1].done()]  # those answered are gone
                self._marks.append((name, asyncio.create_task(self._echo(name, self._playout_end))))
            elif event == "clear":
                self._cleared(at)
                self._echo_now()

    async def _echo(self, name: str, played_at: int) -> None:
        """The network's answer to a mark: once the audio queued before it has played."""
        await sleep_until(min(played_at, self._playout_end), self.timeline.clock)
        with contextlib.suppress(websockets.ConnectionClosed):  # the call ended first: no one to answer
            await self.ws.send(self._message("mark", mark={"name": name}))

    def _echo_now(self) -> None:
        """A clear drops the queued audio: every mark waiting behind it is answered now."""
        waiting, self._marks = self._marks, []
        for name, task in waiting:
            if not task.done():
                task.cancel()
                self._marks.append((name, asyncio.create_task(self._echo(name, 0))))

    async def aclose(self) -> None:
        for _, task in self._marks:
            task.cancel()
        await super().aclose()


class TwilioAgent(AgentStream):
    """`agent/<name>` with transport = "twilio-media-streams"."""

    session = TwilioLine
