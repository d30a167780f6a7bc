"""A loopback emulator of AssemblyAI's Universal-Streaming WebSocket (streaming API v3, `/v3/ws`).

Checks the raw key in `Authorization` and the query (`sample_rate` a positive integer, `encoding`
pcm_s16le or pcm_mulaw, a known `speech_model`); opens with `Begin`; takes binary audio frames of
50 to 1000 ms each and closes with 3007 on any other length, as AssemblyAI does. Audio must come at
the pace it was recorded (assemblyai.com/docs/streaming/guides/stream_prerecorded_file_realtime);
AssemblyAI does not publish its tolerance, so this emulator lets the audio received run ahead of
the time since the first frame by one largest frame (`REALTIME_LEAD_MS`) and closes with 4029
"Client sent audio too fast" (the SDK's wording) beyond that. From the first
frame's arrival (this emulator's t0) it sends partial `Turn`s (`end_of_turn: false`, the words so
far, all but the newest final) on the STTScenario cadence from `first_partial_ms` after the start
of speech, and the end-of-turn `Turn` `final_ms` after the end of speech; with `format_turns=true`
a formatted copy of the final follows `FORMAT_DELAY_MS` later. `ForceEndpoint` does not move the
scenario's timing (the scenario is the truth); `Terminate` notes the encoding, rate and every byte
received (ledger `seen:stream`), flushes a final (and formatted copy) not yet sent, then
`Termination` and a normal close.

A stream's scenario keys (anchors, transcripts, jitter) are the sha256 of its first harness chunk:
AssemblyAI's clients batch 20 ms chunks into 50 ms frames, so the key is the prefix of the first
frame that matches a scenario key (10 ms steps), else its first 20 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
import uuid
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import STTScenario, scenario_for

PATH = "/v3/ws"
MODELS = ("universal-streaming-english", "universal-streaming-multilingual", "u3-rt-pro", "whisper-rt")
BYTES_PER_SAMPLE = {"pcm_s16le": 2, "pcm_mulaw": 1}
MIN_MS, MAX_MS = 50, 1000
REALTIME_LEAD_MS = MAX_MS  # how far the audio received may run ahead of the time since its first frame
FORMAT_DELAY_MS = 40.0  # the formatted copy of a final follows it this much later
KEY_CHUNK_MS = 20  # the harness's chunk: the fallback stream key


def stream_key(scenario: STTScenario, first_frame: bytes, bytes_per_ms: int) -> bytes:
    """The bytes a stream's scenario entries are keyed by: a matching 10 ms-step prefix, else 20 ms."""
    keys = {k for k, _, _ in scenario.anchors} | {k for k, _ in scenario.transcripts}
    step = 10 * bytes_per_ms
    for n in range(step, len(first_frame) + 1, step) if keys else ():
        if hashlib.sha256(first_frame[:n]).hexdigest() in keys:
            return first_frame[:n]
    return first_frame[:KEY_CHUNK_MS * bytes_per_ms]


def _turn(words: list[str], final_count: int, end: bool, formatted: bool = False) -> str:
    transcript = " ".join(words[:final_count])
    if formatted and transcript:
        transcript = transcript[0].upper() + transcript[1:] + "."
    return json.dumps({
        "type": "Turn", "turn_order": 0, "turn_is_formatted": formatted, "end_of_turn": end,
        "transcript": transcript, "end_of_turn_confidence": 0.9 if end else 0.01,
        "utterance": transcript if end else "",
        "words": [{"start": 0, "end": 0, "text": w, "confidence": 0.99, "word_is_final": i < final_count}
                  for i, w in enumerate(words)]})


async def _close_mid_audio(ws, code: int, reason: str) -> None:
    """Close while the client may still be sending audio, reading (and dropping) what it already sent
    so that its close frame is read and the connection ends at once, as AssemblyAI's does; left
    unread, those frames would hold it open until the close timeout."""
    closing = asyncio.ensure_future(ws.close(code, reason))
    with contextlib.suppress(websockets.ConnectionClosed):
        async for _ in ws:
            pass
    await closing


class _Stream:
    """One session's state shared by its reader and its speaker."""

    def __init__(self, bytes_per_ms: int, format_turns: bool) -> None:
        self.bytes_per_ms, self.format_turns = bytes_per_ms, format_turns
        self.audio_bytes = 0
        self.audio = bytearray()  # every frame received, for the ledger
        self.first_frame_ns: int | None = None
        self.transcript = ""
        self.words: list[str] = []
        self.final_sent = self.formatted_sent = False
        self.speaker: asyncio.Task | None = None

    def too_fast(self, frame_bytes: int, now_ns: int) -> bool:
        """Add a frame; True when the audio so far is more than REALTIME_LEAD_MS ahead of real time."""
        if self.first_frame_ns is None:
            self.first_frame_ns = now_ns
        self.audio_bytes += frame_bytes
        return self.audio_bytes / self.bytes_per_ms - (now_ns - self.first_frame_ns) / 1e6 > REALTIME_LEAD_MS


class AssemblyAIEmulator:
    def __init__(self, scenario) -> None:
        self.scenario: STTScenario = scenario_for(scenario, "stt")

    def process_request(self, connection, request):
        if urlsplit(request.path).path != PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != self.scenario.api_key:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid credentials\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        query = {k: v[-1] for k, v in parse_qs(urlsplit(ws.request.path).query).items()}
        stream: _Stream | None = None
        started = time.time()
        try:
            rate = int(query.get("sample_rate", "0")) if query.get("sample_rate", "").isdigit() else 0
            if rate <= 0:
                await ws.close(4000, "Sample rate must be a positive integer")
                return
            encoding = query.get("encoding", "pcm_s16le")
            if encoding not in BYTES_PER_SAMPLE or query.get("speech_model", MODELS[0]) not in MODELS:
                await ws.close(3006, "Input validation error")
                return
            stream = _Stream(BYTES_PER_SAMPLE[encoding] * rate // 1000, query.get("format_turns") == "true")
            await ws.send(json.dumps({"type": "Begin", "id": str(uuid.uuid4()), "expires_at": int(started) + 3600}))
            async for message in ws:
                if isinstance(message, bytes):
                    ms = len(message) / stream.bytes_per_ms
                    if not MIN_MS <= ms <= MAX_MS:
                        await _close_mid_audio(ws, 3007, f"Input duration violation: {ms:.0f} ms. "
                                                         f"Expected between {MIN_MS} and {MAX_MS} ms")
                        return
                    arrived = time.perf_counter_ns()
                    if stream.too_fast(len(message), arrived):
                        await _close_mid_audio(ws, 4029, "Client sent audio too fast")
                        return
                    stream.audio += message
                    if stream.speaker is None:
                        stream.speaker = asyncio.create_task(self._speak(ws, arrived, message, stream))
                    continue
                try:
                    kind = json.loads(message).get("type")
                except (ValueError, AttributeError):
                    await ws.close(4100, "Endpoint received invalid JSON")
                    return
                if kind == "Terminate":
                    saw(self, "stream", {"encoding": encoding, "sample_rate": rate, "audio": stream.audio.hex()})
                    await self._flush(ws, stream)
                    audio_s = int(stream.audio_bytes / stream.bytes_per_ms / 1000)
                    await ws.send(json.dumps({"type": "Termination", "audio_duration_seconds": audio_s,
                                              "session_duration_seconds": int(time.time() - started)}))
                    await ws.close()
                    return
                if kind not in ("ForceEndpoint", "KeepAlive", "UpdateConfiguration"):
                    await ws.close(4101, "Endpoint received a message with an invalid schema")
                    return
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            if stream is not None and stream.speaker is not None:
                stream.speaker.cancel()

    async def _flush(self, ws, stream: _Stream) -> None:
        """Terminate: the turn still open gets its final (and formatted copy) now, unless the
        scenario withholds the final."""
        if stream.speaker is None:
            return
        stream.speaker.cancel()
        if not stream.final_sent and self.scenario.fault != "no_final":
            await self._final(ws, stream)
        if stream.final_sent and not stream.formatted_sent:
            await self._formatted(ws, stream)

    async def _final(self, ws, stream: _Stream) -> None:
        stream.final_sent = True
        record(self, stream.transcript, "final")
        await ws.send(_turn(stream.words, len(stream.words), True))

    async def _formatted(self, ws, stream: _Stream) -> None:
        if stream.format_turns:
            stream.formatted_sent = True
            await ws.send(_turn(stream.words, len(stream.words), True, formatted=True))

    async def _speak(self, ws, t0: int, first_frame: bytes, stream: _Stream) -> None:
        s = self.scenario
        turn = s.turn(stream_key(s, first_frame, stream.bytes_per_ms), t0)
        stream.transcript, stream.words = turn.transcript, turn.words
        async for k in turn.partials():
            if s.fault == "malformed":
                await ws.send('{"type": "Turn", "turn_order": ')
            elif breaks(s.fault):
                await break_off(ws, s.fault)
                return
            if k == 1:
                record(self, stream.transcript, "first_partial")
            await ws.send(_turn(stream.words[:k], k - 1, False))
        if s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        record(self, stream.transcript, "end_of_turn")  # the turn detector's own end of turn (METHOD "STT end of turn")
        await self._final(ws, stream)
        await asyncio.sleep(FORMAT_DELAY_MS / 1000)
        await self._formatted(ws, stream)
