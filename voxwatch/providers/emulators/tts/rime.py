"""A loopback emulator of Rime's `/ws3` JSON TTS WebSocket.

Speaks what voxwatch/providers/tts/rime.py cites. The handshake: `Authorization: Bearer <key>` (else
401); `speaker` required (how Rime refuses a connection without one is not documented: this emulator
refuses the upgrade with a 400); `modelId` one of Rime's models (`mistv3` when omitted); `audioFormat` `pcm`
(or `l16`) or `wav`, and any unrecognized value falls back to `wav` as documented - the compressed
formats (mp3, ogg, webm, mulaw) are refused with a 400 that says this emulator serves none of them,
never served as something else; `samplingRate` a positive integer (24000 when omitted); `segment`
`bySentence` (the default), `never` or `immediate` (`immediate=true` its alias).

Text is buffered as documented: under `bySentence` the buffer is spoken up to its last `.`, `?` or
`!` when a text message brings one (text without one waits, however long, for `flush` or `eos`: the
buffering that delays a client that does not end its sentences), under `never` only on `flush` or
`eos`, under `immediate` at once. `clear` drops the buffer and the audio under way; `eos` speaks what
is left, then closes the connection (1000). Each batch is `chunk` messages - base64 pcm (or wav, its
RIFF header first) at the requested rate, cut one byte off the sample grid as Rime's may be ("a chunk
may end mid-sample") - leading silence, then the speech (a sharp-onset tone or eSpeak NG), the first
`ttfb_ms` after the message that triggered it, the rest every `send_every_ms` (the speech
`gaming_delay_ms` after the silence, when set); then a `timestamps` event (only for `lang` en/eng,
es/spa or none, as documented), then `done`. Events carry the most recent `contextId` at the time
the audio was asked for (null before any). A message that is not JSON, or no documented message, gets
`{"type": "error", "message"}` and the connection stays open, as documented.

The cited sequence, from Rime's documentation (https://docs.rime.ai/api-reference/coda/websockets-json,
read 2026-12-07 as its Markdown export docs.rime.ai/api-reference/coda/websockets-json.md):
DOCUMENTED_CLIENT is the page's Python example's message list, verbatim (its connection asks for
`speaker=astra&modelId=coda&audioFormat=mp3`), and DOCUMENTED_TIMESTAMPS the page's example
`timestamps` event, verbatim, which `RimeScenario.documented_timestamps` sends in place of the
emulator's own. Rime publishes no recorded server transcript or SDK fixture beyond these.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.audio import wav_bytes
from voxwatch.providers.emulators.faults import breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import saw
from voxwatch.providers.emulators.scenario import TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache, paced

DOCUMENTED_CLIENT = [
    {"text": "This "},
    {"text": "is "},
    {"text": "a "},
    {"text": "test "},
    {"operation": "clear"},
    {"text": "This "},
    {"text": "is "},
    {"text": "an "},
    {"text": "incomplete "},
    {"text": "sentence "},
    {"operation": "eos"},
]
DOCUMENTED_TIMESTAMPS = {
    "type": "timestamps",
    "word_timestamps": {
        "words": ["Hello", "from", "Coda", "over", "JSON", "websockets."],
        "start": [0, 0.36106, 0.54159, 0.72212, 0.90265, 1.08318],
        "end": [0.36106, 0.54159, 0.72212, 0.90265, 1.08318, 2.88848],
    },
    "contextId": None,
}

PATH = "/ws3"
MODELS = ("coda", "arcana", "mistv3", "mistv2", "mistv1", "mist")  # docs.rime.ai/docs/websockets: the models ws3 serves
PCM, WAV = ("pcm", "l16"), "wav"
COMPRESSED = ("mp3", "mpeg", "ogg", "webm", "mulaw", "pcmu")  # documented, not served here
SEGMENTS = ("bySentence", "never", "immediate")
TIMESTAMP_LANGS = (None, "en", "eng", "es", "spa")
SENTENCE_END = re.compile(r"[.?!]")


@dataclass(frozen=True)
class RimeScenario:
    """Rime's own behaviour on top of the shared TTS scenario (`scenario`: one, or a Scenarios bundle)."""

    scenario: object
    documented_timestamps: bool = False  # send the documentation's timestamps event, verbatim


def _query(path: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(path).query).items()}



def off_the_grid(chunks: list[bytes]) -> list[bytes]:
    """The same bytes, each cut moved one byte on: every chunk but the last ends mid-sample."""
    if len(chunks) < 2:
        return list(chunks)
    joined, cuts = b"".join(chunks), []
    at = 0
    for chunk in chunks[:-1]:
        at += len(chunk)
        cuts.append(at + 1)
    return [joined[a:b] for a, b in zip([0, *cuts], [*cuts, len(joined)])]


class _Connection:
    """One connection's state: its query, the text buffer, the latest contextId, the batches under way."""

    def __init__(self, query: dict[str, str]) -> None:
        self.rate = int(query.get("samplingRate", "24000"))
        self.wav = query.get("audioFormat", WAV).lower() not in PCM
        self.segment = "immediate" if query.get("immediate") == "true" else query.get("segment", "bySentence")
        self.timestamps = query.get("lang") in TIMESTAMP_LANGS
        self.buffer = ""
        self.context: str | None = None
        self.batches: list[asyncio.Task] = []


class RimeEmulator:
    def __init__(self, scenario) -> None:
        self.options = scenario if isinstance(scenario, RimeScenario) else RimeScenario(scenario)
        self.scenario: TTSScenario | None = scenario_for(self.options.scenario, "tts")
        self._raw = ChunkCache(self.scenario) if self.scenario is not None else None
        self._encoded: dict[tuple[str, int, bool], tuple[list[str], int]] = {}
        if self.scenario is not None:
            self._chunks("", 24000, False)  # first-use costs paid before any stream is timed

    def _chunks(self, text: str, rate: int, wav: bool) -> tuple[list[str], int]:
        key = (text if self.scenario.voice != "tone" else "", rate, wav)
        if key not in self._encoded:
            raw, first_speech = self._raw.get(text, rate)
            cut = off_the_grid(raw)
            if wav:
                joined = b"".join(raw)
                cut[0] = wav_bytes(joined, rate)[:-len(joined)] + cut[0]  # the RIFF header, then the samples
            self._encoded[key] = ([base64.b64encode(c).decode() for c in cut], first_speech)
        return self._encoded[key]

    def process_request(self, connection, request):
        if urlsplit(request.path).path != PATH or self.scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Bearer {self.scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid API key\n")
        query = _query(request.path)
        rate, fmt = query.get("samplingRate", "24000"), query.get("audioFormat", WAV).lower()
        problem = ("speaker is required" if not query.get("speaker")
                   else f"unknown modelId {query['modelId'][:40]!r}" if query.get("modelId", "mistv3") not in MODELS
                   else f"this emulator serves pcm and wav only, not {fmt}" if fmt in COMPRESSED
                   else "samplingRate must be a positive integer" if not (rate.isdigit() and int(rate) > 0)
                   else f"segment must be one of {', '.join(SEGMENTS)}" if query.get("segment", "bySentence") not in SEGMENTS
                   else None)
        if problem:
            return connection.respond(HTTPStatus.BAD_REQUEST, problem + "\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        c = _Connection(_query(ws.request.path))
        try:
            async for message in ws:
                arrived = time.perf_counter_ns()
                try:
                    data = json.loads(message)
                    if not isinstance(data, dict):
                        raise ValueError("not an object")
                except ValueError:
                    await ws.send(json.dumps({"type": "error", "message": "message is not a JSON object"}))
                    continue
                saw(self, "message", data)
                operation = data.get("operation")
                if isinstance(data.get("text"), str) and operation is None:
                    c.buffer += data["text"]
                    c.context = data.get("contextId", c.context)
                    if c.segment == "immediate":
                        self._speak(ws, c, len(c.buffer), arrived)
                    elif c.segment == "bySentence":
                        ends = [m.end() for m in SENTENCE_END.finditer(c.buffer)]
                        if ends:
                            self._speak(ws, c, ends[-1], arrived)
                elif operation == "flush":
                    self._speak(ws, c, len(c.buffer), arrived)
                elif operation == "clear":
                    for batch in c.batches:
                        batch.cancel()
                    c.buffer, c.batches = "", []
                elif operation == "eos":
                    self._speak(ws, c, len(c.buffer), arrived)
                    await asyncio.gather(*c.batches, return_exceptions=True)
                    if self.scenario.fault != "no_final":
                        await ws.close(1000)
                        return
                else:
                    await ws.send(json.dumps({"type": "error", "message": "expected text or an operation "
                                                                          "(flush, clear, eos)"}))
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            for batch in c.batches:
                batch.cancel()

    def _speak(self, ws, c: _Connection, upto: int, arrived: int) -> None:
        """A synthesis batch of the buffer's first `upto` characters, after the batches under way."""
        text, c.buffer = c.buffer[:upto].strip(), c.buffer[upto:]
        if text:
            before = c.batches[-1] if c.batches else None
            c.batches.append(asyncio.create_task(self._batch(ws, c, before, text, c.context, arrived)))

    async def _batch(self, ws, c: _Connection, before: asyncio.Task | None, text: str, context, arrived: int) -> None:
        s = self.scenario
        try:
            if before is not None:
                await asyncio.gather(before, return_exceptions=True)
            saw(self, "synthesis", text)
            chunks, first_speech = await asyncio.to_thread(self._chunks, text, c.rate, c.wav)
            async for i in paced(self, ws, s, text, len(chunks), first_speech, arrived, '{"type": "chunk", "data": '):
                await ws.send(json.dumps({"type": "chunk", "data": chunks[i], "contextId": context}))
            if breaks(s.fault) and len(chunks) > 2:
                return
            if self.options.documented_timestamps:
                await ws.send(json.dumps(DOCUMENTED_TIMESTAMPS))
            elif c.timestamps:
                await ws.send(json.dumps({"type": "timestamps", "word_timestamps": self._words(text),
                                          "contextId": context}))
            if s.fault != "no_final":
                await ws.send(json.dumps({"type": "done", "contextId": context}))
        except websockets.ConnectionClosed:
            pass

    def _words(self, text: str) -> dict[str, list]:
        """Each word's start and end (s from the start of the synthesis), spread over the speech."""
        s, words = self.scenario, text.split()
        step = s.speech_ms / 1000 / max(len(words), 1)
        start = [round(s.leading_silence_ms / 1000 + i * step, 5) for i in range(len(words))]
        return {"words": words, "start": start, "end": [round(t + step, 5) for t in start]}
