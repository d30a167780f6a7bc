"""A loopback emulator of Murf's stream-input TTS WebSocket (`/v1/speech/stream-input`).

Speaks what voxwatch/providers/tts/murf.py cites. The handshake: the key in the `api-key` header (or
the `api-key` / `api_key` query parameter, as the reference page lists it), else 401; `model`
`FALCON`, `falcon-2` or `GEN2`; `sample_rate` one of 8000, 16000, 24000, 44100, 48000 (Falcon's default
24000, Gen2's 44100); `format` `PCM` or `WAV` (the default) - the other documented formats (MP3, FLAC,
ALAW, ULAW, OGG) are refused with a 400 that says this emulator serves neither, never served as
something else; `channel_type` `MONO`.

Messages, per `context_id`: `voice_config` sets the context's voice; `min_buffer_size` /
`max_buffer_delay_in_ms` set the text buffering (40 characters and 300 ms until set: the defaults
of Murf's own Pipecat plugin; the reference page gives no defaults). Text is buffered: it is spoken
up to a sentence boundary (`.`, `?`, `!`) as it comes - the plugin: "Minimum characters to buffer
before synthesis when no sentence boundary is detected" - else once the buffer holds
`min_buffer_size` characters, or `max_buffer_delay_in_ms` after the text came, or at once with
`end: true`: the buffering that delays the first audio of a client that does not end its text.
`{"clear": true}` drops the context's buffer and stops its audio. Each piece of text is spoken as
`{"audio": <base64>, "context_id"}` messages - leading silence, then the speech (a sharp-onset tone
or eSpeak NG) - the first `ttfb_ms` after the text that triggered it, the rest every
`send_every_ms` (the speech `gaming_delay_ms` after the silence, when set); after the audio of
`end: true`, `{"final": true, "context_id"}`. With `format=WAV` every chunk opens with its own RIFF
header, as a client measured against the live API reports (not in the vendor's documentation).
A message that is not JSON, or has none of these keys, gets `{"error": ...}` and the session goes on.

The cited sequence (DOCUMENTED_SEQUENCE): what the vendor-maintained Pipecat plugin sends
(murf-ai/pipecat-murf-tts src/pipecat_murf_tts/tts.py @03827415baf241a347e20dda5e332de436054328:
`_send_advanced_settings`, the text message with the voice configuration, `flush_audio`), in the
message shapes of the official SDK (murf-ai/murf-python-sdk src/murf/stream_input/types and
src/murf/types/{audio_output,final_output}.py @8cbd6385e67e79a5605a945987ead52f708fb568). Murf
publishes no recorded server transcript; the server side is the SDK's AudioOutput and FinalOutput.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.audio import wav_bytes
from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import saw
from voxwatch.providers.emulators.scenario import TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import paced, warmed

PATH = "/v1/speech/stream-input"
MODELS = {"FALCON": 24000, "falcon-2": 24000, "GEN2": 44100}  # model -> its default sample_rate
RATES = (8000, 16000, 24000, 44100, 48000)
SERVED, OTHER_FORMATS = ("PCM", "WAV"), ("MP3", "FLAC", "ALAW", "ULAW", "OGG")
MIN_BUFFER, MAX_DELAY_MS = 40, 300  # the plugin's defaults
SENTENCE_END = re.compile(r"[.?!]")  # a sentence boundary: spoken without waiting for min_buffer_size

# the plugin's messages for one utterance, in order, then its interruption; "<...>" stands for the
# plugin's value of that name (its context id, the text, its voice settings), 40 and 300 its defaults
DOCUMENTED_SEQUENCE = (
    {"min_buffer_size": 40, "max_buffer_delay_in_ms": 300},
    {"voice_config": {"voice_id": "<voice_id>", "style": "<style>", "rate": "<rate>", "pitch": "<pitch>",
                      "pronunciation_dictionary": "<pronunciation_dictionary>", "variation": "<variation>"},
     "context_id": "<ctx>", "text": "<text>", "end": False, "min_buffer_size": 40, "max_buffer_delay_in_ms": 300},
    {"context_id": "<ctx>", "end": True},
)
DOCUMENTED_CLEAR = {"clear": True, "context_id": "<ctx>"}



class _Context:
    def __init__(self) -> None:
        self.voice = "en-US-daniel"  # the SDK's default voice_id
        self.buffer = ""
        self.timer: asyncio.Task | None = None  # speaks the buffer once max_buffer_delay_in_ms has passed
        self.speaking: list[asyncio.Task] = []


class MurfEmulator:
    def __init__(self, scenario) -> None:
        self.scenario: TTSScenario | None = scenario_for(scenario, "tts")
        self._chunks = warmed(self.scenario, 24000)

    def process_request(self, connection, request):
        url = urlsplit(request.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if url.path != PATH or self.scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        key = request.headers.get("api-key") or query.get("api-key") or query.get("api_key")
        if key != self.scenario.api_key:
            return connection.respond(HTTPStatus.UNAUTHORIZED, '{"error": "Invalid API key"}\n')
        model = query.get("model", "FALCON")
        fmt = query.get("format", "WAV").upper()
        rate = query.get("sample_rate", str(MODELS.get(model, 24000)))
        problem = (f"unknown model {model[:40]!r}" if model not in MODELS
                   else f"sample_rate must be one of {RATES}" if not (rate.isdigit() and int(rate) in RATES)
                   else f"this emulator serves {' and '.join(SERVED)} only" if fmt in OTHER_FORMATS
                   else f"unknown format {fmt[:40]!r}" if fmt not in SERVED
                   else "this emulator serves MONO only" if query.get("channel_type", "MONO").upper() != "MONO"
                   else None)
        if problem:
            return connection.respond(HTTPStatus.BAD_REQUEST, json.dumps({"error": problem}) + "\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        query = {k: v[-1] for k, v in parse_qs(urlsplit(ws.request.path).query).items()}
        model = query.get("model", "FALCON")
        rate = int(query.get("sample_rate", MODELS[model]))
        wav = query.get("format", "WAV").upper() == "WAV"
        contexts: dict[str | None, _Context] = {}
        settings = {"min_buffer_size": MIN_BUFFER, "max_buffer_delay_in_ms": MAX_DELAY_MS}
        try:
            async for message in ws:
                arrived = time.perf_counter_ns()
                try:
                    data = json.loads(message)
                    if not isinstance(data, dict):
                        raise ValueError("not an object")
                except ValueError:
                    await ws.send(json.dumps({"error": "Invalid message: not a JSON object"}))
                    continue
                saw(self, "message", data)
                known = False
                for name in settings:
                    if isinstance(data.get(name), int):
                        settings[name], known = data[name], True
                context = contexts.setdefault(data.get("context_id"), _Context())
                if isinstance(data.get("voice_config"), dict):
                    config, known = data["voice_config"], True
                    context.voice = str(config.get("voice_id") or config.get("voiceId") or context.voice)
                if data.get("clear") is True:
                    known = True
                    for task in [context.timer, *context.speaking]:
                        if task is not None:
                            task.cancel()
                    context.buffer, context.timer, context.speaking = "", None, []
                if "text" in data or "end" in data:
                    known = True
                    context.buffer += str(data.get("text") or "")
                    end = data.get("end") is True
                    sentences = [m.end() for m in SENTENCE_END.finditer(context.buffer)]
                    if end or len(context.buffer) >= settings["min_buffer_size"]:
                        self._speak(ws, context, data.get("context_id"), arrived, rate, wav, end)
                    elif sentences:
                        self._speak(ws, context, data.get("context_id"), arrived, rate, wav, False, sentences[-1])
                    if context.timer is None and context.buffer:
                        context.timer = asyncio.create_task(self._after_delay(
                            ws, context, data.get("context_id"), arrived + settings["max_buffer_delay_in_ms"] * 1_000_000,
                            rate, wav))
                if not known:
                    await ws.send(json.dumps({"error": "Invalid message: expected voice_config, text, end, clear "
                                                       "or buffer settings"}))
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            for context in contexts.values():
                for task in [context.timer, *context.speaking]:
                    if task is not None:
                        task.cancel()

    async def _after_delay(self, ws, context: _Context, context_id, at: int, rate: int, wav: bool) -> None:
        await sleep_until(at)
        context.timer = None
        self._speak(ws, context, context_id, at, rate, wav, False)

    def _speak(self, ws, context: _Context, context_id, arrived: int, rate: int, wav: bool, end: bool,
               upto: int | None = None) -> None:
        """Speak the context's buffer, or its first `upto` characters (after the audio already under way),
        then `final` if the text ended."""
        upto = len(context.buffer) if upto is None else upto
        text, context.buffer = context.buffer[:upto].strip(), context.buffer[upto:]
        if context.timer is not None and not context.buffer:
            context.timer.cancel()
            context.timer = None
        before = context.speaking[-1] if context.speaking else None
        context.speaking.append(asyncio.create_task(self._audio(ws, before, text, context_id, arrived, rate, wav, end)))

    async def _audio(self, ws, before: asyncio.Task | None, text: str, context_id, arrived: int, rate: int, wav: bool,
                     end: bool) -> None:
        s = self.scenario
        try:
            if before is not None:
                await asyncio.gather(before, return_exceptions=True)
            if text:
                chunks, first_speech = await asyncio.to_thread(self._chunks.get, text, rate)
                async for i in paced(self, ws, s, text, len(chunks), first_speech, arrived, '{"audio": '):
                    chunk = wav_bytes(chunks[i], rate) if wav else chunks[i]
                    await ws.send(json.dumps({"audio": base64.b64encode(chunk).decode(), "context_id": context_id}))
                if breaks(s.fault) and len(chunks) > 2:
                    return
            if end and s.fault != "no_final":
                await ws.send(json.dumps({"final": True, "context_id": context_id}))
        except websockets.ConnectionClosed:
            pass
