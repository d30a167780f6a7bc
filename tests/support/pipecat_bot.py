"""A voice bot built with Pipecat, as a team would deploy one behind Twilio, for the framework
contract test (tests/test_pipecat_agent.py; docs/CONVERSATIONS.md "A Pipecat bot"). It imports
nothing of voxwatch's: it runs in its own process, on Pipecat's pinned environment
(`make test` puts it in .venv/pipecat-site; Pipecat's pins conflict with voxwatch's).

Pipecat's own parts: the FastAPI WebSocket transport, the Twilio Media Streams serializer
(`TwilioFrameSerializer`, auto hang-up off: voxwatch's call ids are no Twilio account's), Silero
VAD. Its "LLM and TTS" is one small frame processor: when the VAD says the caller stopped, it says
a fixed clip; when the caller starts talking while it speaks, it interrupts itself (the serializer
then sends `clear`).

    python tests/support/pipecat_bot.py --clip reply.wav   # prints "listening <port>", serves ws://127.0.0.1:<port>/ws
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import wave

import uvicorn
from fastapi import FastAPI, WebSocket

from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.frames.frames import (BotStartedSpeakingFrame, BotStoppedSpeakingFrame, Frame, TTSAudioRawFrame,
                                   TTSStartedFrame, TTSStoppedFrame, VADUserStartedSpeakingFrame,
                                   VADUserStoppedSpeakingFrame)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.runner.utils import parse_telephony_websocket
from pipecat.serializers.twilio import TwilioFrameSerializer
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport
from pipecat.workers.runner import WorkerRunner

RATE = 16000  # the pipeline's rate both ways; the serializer converts to and from 8 kHz mu-law
CHUNK_MS = 20


class FixedReply(FrameProcessor):
    """Answers each caller turn (the VAD's stop) with the same clip, and stops when talked over."""

    def __init__(self, clip: bytes) -> None:
        super().__init__()
        self._clip = clip
        self._speaking = False
        self._reply = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, BotStartedSpeakingFrame):
            self._speaking = True
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self._speaking = False
        if isinstance(frame, VADUserStartedSpeakingFrame) and self._speaking:
            self._speaking = False
            await self.broadcast_interruption()  # the output transport drops its queue; Twilio hears `clear`
        await self.push_frame(frame, direction)
        if isinstance(frame, VADUserStoppedSpeakingFrame):  # as a TTS says it: the transport then knows the bot speaks
            self._reply += 1
            context = f"reply-{self._reply}"
            await self.push_frame(TTSStartedFrame(context_id=context))
            step = RATE * CHUNK_MS // 1000 * 2
            for k in range(0, len(self._clip), step):
                await self.push_frame(TTSAudioRawFrame(self._clip[k:k + step], RATE, 1, context_id=context))
            await self.push_frame(TTSStoppedFrame(context_id=context))


def read_clip(path: str) -> bytes:
    with wave.open(path, "rb") as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (RATE, 1, 2):
            sys.exit(f"{path}: expected 16 kHz mono 16-bit PCM")
        return w.readframes(w.getnframes())


def app(clip: bytes) -> FastAPI:
    api = FastAPI()

    @api.websocket("/ws")
    async def call(websocket: WebSocket) -> None:
        await websocket.accept()
        _, data = await parse_telephony_websocket(websocket)  # reads `connected` and `start`
        serializer = TwilioFrameSerializer(stream_sid=data["stream_id"], call_sid=data["call_id"],
                                           params=TwilioFrameSerializer.InputParams(auto_hang_up=False))
        transport = FastAPIWebsocketTransport(websocket, FastAPIWebsocketParams(
            audio_in_enabled=True, audio_out_enabled=True, add_wav_header=False, serializer=serializer))
        vad = VADProcessor(vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=0.8)))
        worker = PipelineWorker(Pipeline([transport.input(), vad, FixedReply(clip), transport.output()]),
                                params=PipelineParams(audio_in_sample_rate=RATE, audio_out_sample_rate=RATE),
                                idle_timeout_secs=None)
        runner = WorkerRunner(handle_sigint=False)

        @transport.event_handler("on_client_disconnected")
        async def hung_up(_transport, _ws) -> None:
            await worker.cancel()

        await runner.add_workers(worker)
        await runner.run()

    return api


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clip", required=True, help="the reply: a 16 kHz mono 16-bit WAV")
    args = ap.parse_args()
    clip = read_clip(args.clip)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    print(f"listening {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app(clip), log_level="warning"))
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
