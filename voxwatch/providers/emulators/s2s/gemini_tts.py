"""The Gemini emulator's HTTP side: the Gemini API's TTS models on `generateContent` and
`streamGenerateContent?alt=sse`, served beside the Live WebSocket on one port as
generativelanguage.googleapis.com serves both (an ASGI app for uvicorn: `GeminiLiveEmulator.app`).

Sources (docs/vendor-notes/tts-gemini.md; read 2026-12-07):
- [DOC] https://ai.google.dev/gemini-api/docs/speech-generation: the request (text, `responseModalities`
  ["AUDIO"], a `prebuiltVoiceConfig.voiceName` of its 30 voices) and where the audio is
  (`candidates[0].content.parts[0].inlineData.data`). DOC_TTS_REQUEST is the REST body of its
  Python sample (model `gemini-2.5-flash-preview-tts`, "Say cheerfully: Have a wonderful day!",
  voice `Kore`), as the SDK sends it.
- [CB] google-gemini/cookbook quickstarts/Get_started_TTS.ipynb @05f13174: streamed chunks are raw
  16-bit PCM; the unary answer of Gemini 3.8 TTS is WAV bytes.
- Google's API error object, `{"error": {"code", "message", "status"}}`, for refusals.

Both methods check `x-goog-api-key` (or `?key=`): a wrong key is 400 INVALID_ARGUMENT "API key not
valid", as Google answers it; the handshake faults answer as HTTP statuses. The audio (leading
silence, then the speech; TTSScenario) is `audio/L16;codec=pcm;rate=24000` blobs: streamed, one
chunk an event, the first `ttfb_ms` after the request arrived, the rest every `send_every_ms`, the
last event with `finishReason: "STOP"` and `usageMetadata`; unary, one response with all of it
(WAV for the 3.8 models, raw L16 otherwise [CB]). Faults: `malformed` (a cut event), `disconnect`
(the connection closed mid-stream), `no_final` (the stream never ends), `inaudible` (silence).

`LiveSocket` gives a Starlette WebSocket the surface of the `websockets` library's connection that
the Live handlers (gemini.py, gemini_agent.py) were written against, so they run under uvicorn
unchanged.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from types import SimpleNamespace

import websockets
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.frames import Close

from voxwatch.foundation.audio import wav_bytes
from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import http_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache
from voxwatch.providers.emulators.stamped_h11 import record_at_write

RATE = 24000
MIME = f"audio/L16;codec=pcm;rate={RATE}"
TTS_MODELS = ("gemini-2.5-flash-preview-tts", "gemini-2.5-pro-preview-tts", "gemini-3.8-flash-tts",
              "gemini-3.8-flash-lite-tts")  # tts-gemini.md section 4
WAV_MODELS = ("gemini-3.8-flash-tts", "gemini-3.8-flash-lite-tts")  # unary answers carry a RIFF header [CB]
VOICES = frozenset("Zephyr Puck Charon Kore Fenrir Leda Orus Aoede Callirrhoe Autonoe Enceladus Iapetus Umbriel "
                   "Algieba Despina Erinome Algenib Rasalgethi Laomedeia Achernar Alnilam Schedar Gacrux "
                   "Pulcherrima Achird Zubenelgenubi Vindemiatrix Sadachbia Sadaltager Sulafat".split())  # [DOC]

# [DOC] the Python sample's request, as its REST body (camelCase JSON)
DOC_TTS_REQUEST = {"contents": [{"parts": [{"text": "Say cheerfully: Have a wonderful day!"}]}],
                   "generationConfig": {"responseModalities": ["AUDIO"], "speechConfig": {
                       "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}}}
DOC_TTS_MODEL = "gemini-2.5-flash-preview-tts"


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": status, "message": message, "status": code}}, status)


class LiveSocket:
    """A Starlette WebSocket as a `websockets` server connection: `request.path` and `.headers`,
    `recv`, `send`, `close`, iteration, `transport` (for a drop); a gone client raises
    `websockets.ConnectionClosed`, as the Live handlers expect."""

    def __init__(self, ws: WebSocket) -> None:
        self._ws = ws
        query = ws.url.query
        self.request = SimpleNamespace(path=ws.url.path + (f"?{query}" if query else ""), headers=ws.headers)
        self.transport = ws._receive.__self__.transport

    async def recv(self) -> str | bytes:
        message = await self._ws.receive()
        if message["type"] == "websocket.disconnect":
            raise websockets.ConnectionClosed(Close(message.get("code", 1000), ""), None)
        return message["text"] if message.get("text") is not None else message["bytes"]

    async def send(self, data: str | bytes) -> None:
        try:
            await (self._ws.send_bytes(data) if isinstance(data, bytes) else self._ws.send_text(data))
        except (WebSocketDisconnect, RuntimeError):
            raise websockets.ConnectionClosed(None, None) from None

    async def close(self, code: int = 1000, reason: str = "") -> None:
        try:
            await self._ws.close(code, reason)
        except RuntimeError:
            pass  # already closed

    def __aiter__(self):
        return self

    async def __anext__(self) -> str | bytes:
        try:
            return await self.recv()
        except websockets.ConnectionClosed:
            raise StopAsyncIteration from None


class GeminiTTSRoutes:
    """The TTS methods of one Gemini emulator (`live`: the GeminiLiveEmulator whose port they share)."""

    def __init__(self, live, scenario) -> None:
        self.live = live
        self.tts: TTSScenario | None = scenario_for(scenario, "tts")
        self._chunks = ChunkCache(self.tts) if self.tts is not None else None
        if self._chunks is not None:
            self._chunks.get("", RATE)  # first-use costs paid before any stream is timed

    def app(self, live_path: str) -> Starlette:
        return Starlette(routes=[WebSocketRoute(live_path, self._live),
                                 Route("/v1beta/models/{call}", self._generate, methods=["POST"])])

    async def _live(self, ws: WebSocket) -> None:
        if self.live.scenario is None:
            await ws.send_denial_response(_error(404, "NOT_FOUND", "this emulator serves no Live API here"))
            return
        refusal = http_refusal(self.live.scenario.fault)
        if refusal is not None:
            await ws.send_denial_response(refusal)
            return
        await ws.accept()
        await self.live.handle(LiveSocket(ws))

    async def _generate(self, request: Request) -> Response:
        arrived = time.perf_counter_ns()
        model, _, method = request.path_params["call"].partition(":")
        s = self.tts
        if s is None or method not in ("generateContent", "streamGenerateContent"):
            return _error(404, "NOT_FOUND", "this emulator does not serve that method")
        if (request.headers.get("x-goog-api-key") or request.query_params.get("key")) != s.api_key:
            return _error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
        refusal = http_refusal(s.fault)
        if refusal is not None:
            return refusal
        try:
            body = json.loads(await request.body())
            text = " ".join(p["text"] for c in body["contents"] for p in c["parts"])
            config = body["generationConfig"]
            voice = config["speechConfig"]["voiceConfig"]["prebuiltVoiceConfig"]["voiceName"]
        except (ValueError, KeyError, TypeError):
            return _error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
        if model not in TTS_MODELS or config.get("responseModalities") != ["AUDIO"] or voice not in VOICES:
            return _error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
        saw(self.live, "tts", {"model": model, "method": method, "text": text, "voice": voice,
                               "sse": request.query_params.get("alt") == "sse"})
        raw, first_speech = self._chunks.get(text, RATE)
        times = s.send_times(arrived, text, len(raw), first_speech)
        if method == "generateContent":
            await sleep_until(times[-1])
            record(self.live, text, "first_audio")
            audio = b"".join(raw)
            audio, mime = (wav_bytes(audio, RATE), "audio/wav") if model in WAV_MODELS else (audio, MIME)
            return JSONResponse(_response(base64.b64encode(audio).decode(), mime, last=True))
        abort = request.receive.__self__.transport.abort  # the disconnect fault: no end to the body
        return StreamingResponse(self._events(text, raw, first_speech, times, s, abort), media_type="text/event-stream")

    async def _events(self, text: str, raw: list[bytes], first_speech: int, times: list[int], s: TTSScenario, abort):
        for i, (chunk, at) in enumerate(zip(raw, times)):
            await sleep_until(at)
            if s.fault == "malformed" and i == 1:
                yield b'data: {"candidates": [{"content": \r\n\r\n'
            elif s.fault == "disconnect" and i == 2:
                abort()
                return
            if i == 0:
                record_at_write(self.live, text, "first_audio")
            if i == first_speech:
                record_at_write(self.live, text, "first_speech")
            last = i == len(raw) - 1 and s.fault != "no_final"
            yield b"data: " + json.dumps(_response(base64.b64encode(chunk).decode(), MIME, last)).encode() + b"\r\n\r\n"
        if s.fault == "no_final":
            await asyncio.Event().wait()  # the stream never ends


def _response(data: str, mime: str, last: bool) -> dict:
    """A GenerateContentResponse with one audio blob; the last one finishes the candidate."""
    candidate: dict = {"content": {"parts": [{"inlineData": {"mimeType": mime, "data": data}}], "role": "model"},
                       "index": 0}
    response: dict = {"candidates": [candidate]}
    if last:
        candidate["finishReason"] = "STOP"
        response["usageMetadata"] = {"promptTokenCount": 9, "candidatesTokenCount": 32,
                                     "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}],
                                     "candidatesTokensDetails": [{"modality": "AUDIO", "tokenCount": 32}]}
    return response
