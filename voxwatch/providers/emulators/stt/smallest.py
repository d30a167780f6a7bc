"""A loopback emulator of Smallest.ai's Waves API: Pulse live speech to text (`/waves/v1/stt/live`,
and the legacy `/waves/v1/pulse/get_text`) and Lightning text to speech (`/waves/v1/tts/live`, and
the legacy `/waves/v1/lightning-v3.1/get_speech/stream`), on one port as Smallest serves them from
api.smallest.ai. Sources: those of the adapters (stt/smallest.py, tts/smallest.py).

Both check `Authorization: Bearer <key>` (HTTP 401 before the upgrade otherwise).

Pulse: the unified path requires `model` and `language`; `model` other than `pulse` is HTTP 400 before
the upgrade (`pulse-pro` with the vendor's sentence), as is a `sample_rate` or `encoding` outside the
spec's enums (of the encodings, this emulator speaks linear16 and mulaw, the ones voxwatch sends) or a
language outside the streaming list. Binary frames are the audio. From the first frame's arrival (the
emulator's t0) it sends interim `transcription` events (`is_final: false`, the segment so far) on the
STTScenario cadence from `first_partial_ms` after the start of speech, and the segment's final
`final_ms` after the end of speech, with `from_finalize: true` when a `finalize` had arrived (it does not
move the final: the scenario is the truth), with `language`, and with `words` (start and end in
seconds, spread over the clip's speech) when `word_timestamps` is 'true', the legacy path's default.
Each event carries both `transcription` and `transcript`, as the unified schema says the WebSocket DTO
does. A `finalize` that finds the final already sent gets the one `is_final` the spec promises, empty,
`from_finalize: true`. `close_stream` notes what was received (ledger `seen:stream`), lets the pending
final go at its time, sends the terminal `is_final` + `is_last` transcript and closes normally. An
unknown control message gets `{"type": "error", "status": "error", "message"}` and a forced close
(1003: the spec names no code for it). Close 1008 is the documented concurrency limit (the fault
`close:1008`).

Lightning: each JSON request (`text` and `voice_id` required; `model` lightning_v3.1 or
lightning_v3.1_pro; `sample_rate` 8000, 16000, 24000 or 44100, default 44100; `output_format` pcm, the
one this emulator speaks) is answered with base64 PCM `chunk` messages (leading silence, then the
speech) from `ttfb_ms` after it arrived, every `send_every_ms`, then `complete` `complete_backoff_ms`
(default 4000) after the last chunk, and the server closes the socket, as the reference says. A request
with `continue: true` and no `flush` holds its text for a later `flush: true` request (no audio till
then). `{"type": "ping"}` (or its aliases) is answered `{"type": "pong"}`. A bad request is answered
`{"status": "error", "message"}`; so is a socket idle for `?timeout=` seconds (default 60, at most 180),
which is then closed. Not emulated: the one-active-request-per-account limit of the base plan (a
parallel tick against this emulator must measure, not be refused; the refusal is the `rate_limited`
fault).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import websocket_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.replay import Close, Expect, Send
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario, scenario_for, send_partials
from voxwatch.providers.emulators.speech import b64, paced, warmed

STT_PATHS = ("/waves/v1/stt/live", "/waves/v1/pulse/get_text")  # unified, legacy
TTS_PATHS = ("/waves/v1/tts/live", "/waves/v1/lightning-v3.1/get_speech/stream")
SAMPLE_RATES = (8000, 16000, 22050, 24000, 44100, 48000)
ENCODINGS = ("linear16", "linear32", "alaw", "mulaw", "opus", "ogg_opus")
BYTES_PER_SAMPLE = {"linear16": 2, "mulaw": 1}  # the encodings this emulator speaks
LANGUAGES = ("en", "hi", "de", "es", "ru", "it", "fr", "nl", "pt", "zh", "yue", "ja", "ko", "gu", "mr", "or", "bn",
             "ta", "te", "kn", "ml", "north_indic", "multi-asian", "multi-south-indic")
TTS_MODELS = ("lightning_v3.1", "lightning_v3.1_pro")
TTS_RATES = (8000, 16000, 24000, 44100)
PINGS = ("ping", "keepalive", "keep_alive", "keep-alive")
IDLE_S, IDLE_MAX_S = 60.0, 180.0

# --- the documented sequences, replayed through the adapters by tests/test_smallest.py ---

# Pulse: the single-shot session of smallest-inc/smallest-ai-documentation
# fern/apis/waves/asyncapi/pulse-stt-ws.yaml @ 012ff34d ("after the entire buffer of a single-shot
# transcription is streamed", send close_stream: the server flushes, "emit the terminal is_final +
# is_last transcript, then close the WebSocket"), with the server's messages as that repository quotes
# them: the `partial` and `final` examples of the unified TranscriptionEvent
# (fern/apis/waves/asyncapi/stt-live-ws.yaml @ 004cd61c), then the two PulseTranscriptionResponse
# examples of pulse-stt-ws.yaml @ 012ff34d (the second, terminal one, with its words as given).
PULSE_DOCUMENTED = [
    Expect("binary audio, then {\"type\": \"close_stream\"}", lambda m: m == {"type": "close_stream"}),
    Send({"type": "transcription", "status": "success", "transcription": "Hi, how are you", "is_final": False,
          "is_last": False, "session_id": "4b5ae9cb-1234-5678-9abc-def012345678"}),
    Send({"type": "transcription", "status": "success", "transcription": "Hi, how are you doing?", "is_final": True,
          "is_last": False, "session_id": "4b5ae9cb-1234-5678-9abc-def012345678"}),
    Send({"session_id": "sess_12345abcde", "transcript": "Hello, how are you?", "is_final": True, "is_last": False,
          "language": "en"}),
    Send({"session_id": "session_id_12346abcde",
          "transcript": "I paid using my card [CREDITCARDCVV_1] with expiry [TIME_2].", "is_final": True,
          "is_last": True, "language": "en", "languages": ["en"],
          "words": [{"word": "I", "start": 0.0, "end": 0.2, "confidence": 0.98, "speaker": 0, "speaker_confidence": 0.95},
                    {"word": "paid", "start": 0.2, "end": 0.5, "confidence": 1.0, "speaker": 0,
                     "speaker_confidence": 0.59},
                    {"word": "using", "start": 0.5, "end": 0.8, "confidence": 0.73, "speaker": 0,
                     "speaker_confidence": 0.74},
                    {"word": "my", "start": 0.8, "end": 1.0, "confidence": 0.88, "speaker": 0,
                     "speaker_confidence": 0.92},
                    {"word": "card", "start": 1.0, "end": 1.3, "confidence": 0.95, "speaker": 0,
                     "speaker_confidence": 0.91},
                    {"word": "[creditcardcvv_1]", "start": 1.3, "end": 1.8, "confidence": 0.99, "speaker": 0,
                     "speaker_confidence": 0.85},
                    {"word": "with", "start": 1.8, "end": 2.0, "confidence": 0.85, "speaker": 0,
                     "speaker_confidence": 0.87},
                    {"word": "expiry", "start": 2.0, "end": 2.4, "confidence": 0.9, "speaker": 0,
                     "speaker_confidence": 0.67},
                    {"word": "[time_2]", "start": 2.4, "end": 2.7, "confidence": 0.97, "speaker": 0,
                     "speaker_confidence": 0.76}]}),
    Close(1000),
]

# Lightning: the Node.js WebSocket example of Smallest's "Streaming" guide
# (docs.smallest.ai/waves/documentation/text-to-speech-lightning/streaming, in docs.smallest.ai/llms-full.txt,
# read 2026-12-07): the request {"text": "Streaming delivers audio in real-time for voice assistants and
# chatbots.", "voice_id": "magnus", "sample_rate": 24000}, then { "status": "chunk", "data": { "audio":
# "base64_encoded_pcm_data" } } per chunk and { "status": "complete", "message": "All chunks sent",
# "done": true }. The guide's audio is a placeholder string (not base64), so the replay puts real PCM
# there (`lightning_documented`); every other field is the guide's.
LIGHTNING_TEXT = "Streaming delivers audio in real-time for voice assistants and chatbots."


def lightning_documented(chunks: list[bytes]) -> list:
    """The guide's exchange with `chunks` (16-bit PCM) as the audio of its chunk messages."""
    return [Expect("the request with text, voice_id and sample_rate 24000",
                   lambda m: isinstance(m, dict) and isinstance(m.get("text"), str) and bool(m.get("voice_id"))
                   and m.get("sample_rate") == 24000),
            *(Send({"status": "chunk", "data": {"audio": b64(c)}}) for c in chunks),
            Send({"status": "complete", "message": "All chunks sent", "done": True}),
            Close(1000)]


def _query(path: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(path).query).items()}


def _event(session: str, text: str, is_final: bool, *, is_last: bool = False, from_finalize: bool = False,
           words: list | None = None) -> str:
    event = {"type": "transcription", "status": "success", "transcription": text, "transcript": text,
             "is_final": is_final, "is_last": is_last, "from_finalize": from_finalize, "session_id": session}
    if is_final:
        event["language"] = "en"
    if words is not None:
        event["words"] = words
    return json.dumps(event)


def _words(words: list[str], start_s: float, end_s: float) -> list[dict]:
    """Word timings (seconds from the first audio frame) spread evenly over the speech."""
    step = (end_s - start_s) / max(1, len(words))
    return [{"word": w, "start": round(start_s + i * step, 3), "end": round(start_s + (i + 1) * step, 3),
             "confidence": 0.99} for i, w in enumerate(words)]


class _Stream:
    def __init__(self, session: str, word_timestamps: bool) -> None:
        self.session, self.word_timestamps = session, word_timestamps
        self.finalized = False  # a finalize arrived
        self.final_sent = False
        self.speaker: asyncio.Task | None = None
        self.audio = bytearray()


class SmallestEmulator:
    def __init__(self, scenario) -> None:
        self.stt: STTScenario | None = scenario_for(scenario, "stt")
        self.tts: TTSScenario | None = scenario_for(scenario, "tts")
        self._chunks = warmed(self.tts, 24000, b64)

    def process_request(self, connection, request):
        path = urlsplit(request.path).path
        scenario = self.stt if path in STT_PATHS else self.tts if path in TTS_PATHS else None
        if scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Bearer {scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "missing or invalid API key\n")
        if path in STT_PATHS:
            problem = self._stt_query_problem(path, _query(request.path))
            if problem:
                return connection.respond(HTTPStatus.BAD_REQUEST, problem + "\n")
        return websocket_refusal(connection, scenario.fault)

    @staticmethod
    def _stt_query_problem(path: str, query: dict[str, str]) -> str | None:
        if path == STT_PATHS[0]:
            if query.get("model") == "pulse-pro":
                return "Pulse Pro has no streaming transport. Use POST /waves/v1/stt/?model=pulse-pro instead."
            if query.get("model") != "pulse" or "language" not in query:
                return "model (pulse) and language are required"
        if query.get("language", "en") not in LANGUAGES:
            return f"unsupported language {query['language'][:20]!r}"
        if query.get("sample_rate", "16000") not in map(str, SAMPLE_RATES):
            return "sample_rate must be one of " + ", ".join(map(str, SAMPLE_RATES))
        if query.get("encoding", "linear16") not in ENCODINGS:
            return "encoding must be one of " + ", ".join(ENCODINGS)
        if query.get("encoding", "linear16") not in BYTES_PER_SAMPLE:
            return "this emulator speaks linear16 and mulaw only"
        return None

    async def handle(self, ws) -> None:
        try:
            if urlsplit(ws.request.path).path in STT_PATHS:
                await self._listen(ws)
            else:
                await self._speak(ws)
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it

    # --- Pulse STT ---

    async def _listen(self, ws) -> None:
        query = _query(ws.request.path)
        legacy = urlsplit(ws.request.path).path == STT_PATHS[1]
        encoding, rate = query.get("encoding", "linear16"), int(query.get("sample_rate", "16000"))
        stream = _Stream(str(uuid.uuid4()), query.get("word_timestamps", "true" if legacy else "false") == "true")
        try:
            async for message in ws:
                if isinstance(message, bytes):
                    stream.audio += message
                    if stream.speaker is None:
                        stream.speaker = asyncio.create_task(self._transcribe(ws, time.perf_counter_ns(), message,
                                                                             stream))
                    continue
                try:
                    kind = json.loads(message).get("type")
                except (ValueError, AttributeError):
                    kind = None
                if kind == "finalize":
                    stream.finalized = True
                    if stream.final_sent:
                        await ws.send(_event(stream.session, "", True, from_finalize=True))
                elif kind == "close_stream":
                    saw(self, "stream", {"encoding": encoding, "sample_rate": rate, "audio": stream.audio.hex()})
                    if stream.speaker is not None:
                        await stream.speaker  # the results still pending go first
                    if self.stt.fault != "no_final":  # that fault withholds every final, the terminal one too
                        await ws.send(_event(stream.session, "", True, is_last=True))
                    await ws.close()
                    return
                else:
                    await ws.send(json.dumps({"type": "error", "status": "error",
                                              "message": "expected binary audio, finalize or close_stream"}))
                    await ws.close(1003, "unsupported message")
                    return
        finally:
            if stream.speaker is not None:
                stream.speaker.cancel()

    async def _transcribe(self, ws, t0: int, first_chunk: bytes, stream: _Stream) -> None:
        s = self.stt
        turn = s.turn(first_chunk, t0)

        async def partial(k: int) -> None:
            await ws.send(_event(stream.session, " ".join(turn.words[:k]), False))

        if not await send_partials(self, ws, turn, s.fault, '{"type": "transcription", "transcript": ', partial) \
                or s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        start, end = s.anchors_for(first_chunk)
        words = _words(turn.words, start, end) if stream.word_timestamps else None
        record(self, turn.transcript, "final")
        await ws.send(_event(stream.session, turn.transcript, True, from_finalize=stream.finalized, words=words))
        stream.final_sent = True

    # --- Lightning TTS ---

    async def _speak(self, ws) -> None:
        query = _query(ws.request.path)
        try:
            idle_s = min(float(query.get("timeout", IDLE_S)), IDLE_MAX_S)
        except ValueError:
            idle_s = IDLE_S
        held: list[str] = []  # text of `continue` requests waiting for a flush
        while True:
            try:
                message = await asyncio.wait_for(ws.recv(), idle_s)
            except asyncio.TimeoutError:
                await ws.send(json.dumps({"status": "error", "message": f"Connection timed out after {idle_s:g} "
                                                                        "seconds of inactivity"}))
                await ws.close()
                return
            arrived = time.perf_counter_ns()
            try:
                request = json.loads(message)
                if not isinstance(request, dict):
                    raise ValueError("not an object")
            except ValueError:
                await ws.send(json.dumps({"status": "error", "message": "the request is not a JSON object"}))
                continue
            if request.get("type") in PINGS:
                await ws.send(json.dumps({"type": "pong"}))
                continue
            problem = self._request_problem(request)
            if problem:
                await ws.send(json.dumps({"status": "error", "message": problem}))
                continue
            held.append(str(request["text"]))
            if request.get("continue") and not request.get("flush"):
                continue  # held until a flush: no audio
            text = " ".join(t for t in held if t)
            held.clear()
            if not await self._say(ws, arrived, text, request):
                return
            if self.tts.fault == "no_final":
                continue
            await ws.close()  # "the server closes the WebSocket after" complete
            return

    @staticmethod
    def _request_problem(request: dict) -> str | None:
        if not isinstance(request.get("text"), str) or not request.get("voice_id"):
            return "text and voice_id are required"
        if request.get("model", TTS_MODELS[0]) not in TTS_MODELS:
            return "model must be one of " + ", ".join(TTS_MODELS)
        if request.get("sample_rate", 44100) not in TTS_RATES:
            return "sample_rate must be one of " + ", ".join(map(str, TTS_RATES))
        if request.get("output_format", "pcm") != "pcm":
            return "this emulator speaks output_format pcm only"
        backoff = request.get("complete_backoff_ms", 4000)
        if not isinstance(backoff, int) or not 0 <= backoff <= 10000:
            return "complete_backoff_ms must be an integer from 0 to 10000"
        return None

    async def _say(self, ws, arrived: int, text: str, request: dict) -> bool:
        """One request's audio, then `complete` after the backoff; False when a fault ended the stream."""
        s = self.tts
        rate = request.get("sample_rate", 44100)
        ids = {"session_id": str(uuid.uuid4()), "request_id": str(request.get("request_id") or uuid.uuid4())}
        chunks, first_speech = await asyncio.to_thread(self._chunks.get, text, rate)
        sent = 0
        async for i in paced(self, ws, s, text, len(chunks), first_speech, arrived, '{"status": "chunk", "data": '):
            await ws.send(json.dumps({**ids, "status": "chunk", "data": {"audio": chunks[i]}}))
            sent += 1
        if sent < len(chunks):
            return False
        if s.fault == "no_final":
            return True
        await asyncio.sleep(request.get("complete_backoff_ms", 4000) / 1000)
        await ws.send(json.dumps({**ids, "status": "complete", "message": "All chunks sent", "done": True}))
        return True
