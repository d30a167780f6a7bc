"""A deployed agent that takes raw audio over a WebSocket: each binary frame is 16-bit linear PCM,
little-endian, mono, at the rate its registry entry states (`sample_rate`: 8000, 16000 or 24000),
both ways; text frames carry nothing voxwatch reads (an agent's own status messages are ignored,
within the line's bound on messages per second).
The line's behaviour is line.py's; this is the wire.

This is the shape of the raw-audio WebSocket transports of the agent frameworks (Pipecat's
WebsocketServerTransport with a raw serializer, LiveKit's and home-made bridges): no handshake, no
end-of-turn message; the agent hears the caller's frames, and its own frames are its speech.
"""

from __future__ import annotations

from voxwatch.foundation.frame_rates import Halver, Upsampler
from voxwatch.providers.agents.line import CALLER_RATE, FRAME_MS, AgentLine, AgentStream
from voxwatch.providers.session.stamped import received


class _Same:
    def push(self, pcm16: bytes) -> bytes:
        return pcm16


def converter(rate: int):
    """The caller's 16 kHz frames at `rate` (registry.PCM_RATES: halved, as they are, or upsampled 3:2),
    continuous across frames."""
    return {8000: Halver, CALLER_RATE: _Same, 24000: Upsampler}[rate]()


class PcmLine(AgentLine):
    """One call: binary frames of PCM at `rate` each way."""

    def __init__(self, ws, timeline, rate: int = CALLER_RATE, **options) -> None:
        self.rate = rate
        self._convert = converter(rate)
        self._silence = b"\0\0" * (CALLER_RATE * FRAME_MS // 1000)
        super().__init__(ws, timeline, **options)

    def _caller_frame(self, pcm16: bytes) -> bytes:
        return self._convert.push(pcm16)

    def _silence_frame(self) -> bytes:
        return self._convert.push(self._silence)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                self._agent_audio(message, at)
            else:
                self._control(at)  # read for nothing, but bounded per second as every other message


class PcmAgent(AgentStream):
    """`agent/<name>` with transport = "pcm-ws" and its `sample_rate`."""

    session = PcmLine

    def _options(self) -> dict:
        return {"rate": self.model.sample_rate or CALLER_RATE}
