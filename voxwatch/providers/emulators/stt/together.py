"""A loopback emulator of Together AI's realtime transcription WebSocket (`/v1/realtime`).

As Together's OpenAPI spec documents it (togethercomputer/openapi openapi.yaml `/realtime`,
@090263aa, 2026-04-28; docs.together.ai/docs/inference/transcription/streaming, read 2026-12-07):
checks `Authorization: Bearer <key>` (a wrong key gets the documented `.failed` event with code
`invalid_api_key`, then a close), the `model` query parameter (an unknown one: `model_not_available`)
and `input_audio_format` (required, `pcm_s16le_16000` only: any other is refused the same way); opens
with `session.created`; answers a client `transcription_session.updated` (the VAD settings) with the
same event; takes base64 PCM in `input_audio_buffer.append`.

Server VAD is on, as by default: from the first append's arrival (this emulator's t0) the segment's
`conversation.item.input_audio_transcription.delta` events go out on the STTScenario cadence from
`first_partial_ms` after the start of speech, each the segment's whole text so far ("Each delta
message overrides the previous delta"), and its `.completed` `final_ms` after the end of speech.
Speech longer than `max_speech_duration_s` (5.0 s, the documented default; `TogetherScenario.max_speech_s`)
is split: a `.completed` at each such length of speech (the words said so far but the newest), the next
segment's deltas starting afresh from there, until the commit. `input_audio_buffer.commit`
does not move the scenario's timing (the scenario is the truth) and the server never closes after it
(Coval's reference: "The server never closes; the client closes after draining the forced final"); a
commit notes the audio received in the ledger (`seen:stream`). Under `no_final` no `.completed` is sent.

Faults: the handshake ones refuse the upgrade (websocket_refusal); `malformed` sends a broken JSON
event, `disconnect` drops the connection and `close:<code>` closes it, each in place of the first delta.

The stream's scenario keys (anchors, transcript, jitter) are the sha256 of its first append's decoded
audio (the harness's first 20 ms chunk, sent as it is). Ledger: `first_partial` and `final` (the last
segment's `.completed`), keyed by the transcript.

`TogetherScenario(scenario, documented=True)` replays instead the server messages of the spec's own
example, verbatim (DOCUMENTED: session.created, one delta, one completed; the delta at the first
partial's time and the completed at the final's), so the contract test runs the vendor's sequence
through the adapter; `DOCUMENTED_ERROR` is the spec's error event, sent for a wrong key.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import STTScenario, scenario_for

PATH = "/v1/realtime"
MODELS = ("openai/whisper-large-v3", "nvidia/parakeet-tdt-0.6b-v3", "nvidia/nemotron-3.5-asr-streaming-0.6b")
INPUT_AUDIO_FORMAT = "pcm_s16le_16000"
MAX_SPEECH_S = 5.0  # max_speech_duration_s, the documented default: longer speech is split into segments
DELTA = "conversation.item.input_audio_transcription.delta"
COMPLETED = "conversation.item.input_audio_transcription.completed"

# The spec's example server sequence, verbatim: togethercomputer/openapi openapi.yaml, path /realtime
# (operationId realtime-transcription) @090263aa0fde006d9cd958bef52719958079bbc4 (2026-04-28), the
# session.created, delta and completed examples; the streaming guide
# (docs.together.ai/docs/inference/transcription/streaming) shows the same order.
DOCUMENTED = (
    {"type": "session.created", "session": {"id": "session-id", "object": "realtime.session",
                                            "modalities": ["audio"], "model": "openai/whisper-large-v3"}},
    {"type": "conversation.item.input_audio_transcription.delta", "delta": "The quick brown"},
    {"type": "conversation.item.input_audio_transcription.completed",
     "transcript": "The quick brown fox jumps over the lazy dog"},
)
# ... and its error event, same source
DOCUMENTED_ERROR = {"type": "conversation.item.input_audio_transcription.failed",
                    "error": {"message": "Error description", "type": "invalid_request_error", "param": None,
                              "code": "invalid_api_key"}}


@dataclass(frozen=True)
class TogetherScenario:
    """Together's own behaviour on top of an STTScenario (or a bundle): `documented` replays DOCUMENTED;
    `max_speech_s` is the VAD's longest segment."""

    scenario: object
    documented: bool = False
    max_speech_s: float = MAX_SPEECH_S  # the VAD's longest segment (a shorter one splits a short clip too)


def _failed(code: str, message: str) -> str:
    return json.dumps({"type": "conversation.item.input_audio_transcription.failed",
                       "error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}})


class TogetherEmulator:
    def __init__(self, scenario) -> None:
        options = scenario if isinstance(scenario, TogetherScenario) else TogetherScenario(scenario)
        self.documented, self.max_speech_s = options.documented, options.max_speech_s
        scenario = options.scenario
        self.scenario: STTScenario = scenario_for(scenario, "stt")

    def process_request(self, connection, request):
        if urlsplit(request.path).path != PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        query = {k: v[-1] for k, v in parse_qs(urlsplit(ws.request.path).query).items()}
        speaker: asyncio.Task | None = None
        try:
            if ws.request.headers.get("Authorization") != f"Bearer {self.scenario.api_key}":
                await ws.send(json.dumps(DOCUMENTED_ERROR if self.documented
                                         else json.loads(_failed("invalid_api_key", "Invalid API key provided"))))
                await ws.close(1008, "invalid_api_key")
                return
            model = query.get("model")
            if model not in MODELS:
                await ws.send(_failed("model_not_available", f"Model {model!r} is not available for realtime"))
                await ws.close(1008, "model_not_available")
                return
            if query.get("input_audio_format") != INPUT_AUDIO_FORMAT:
                await ws.send(_failed("invalid_audio_format",
                                      f"input_audio_format must be {INPUT_AUDIO_FORMAT}"))
                await ws.close(1008, "invalid_audio_format")
                return
            created = DOCUMENTED[0] if self.documented else {
                "type": "session.created", "session": {"id": f"session-{uuid.uuid4().hex[:12]}",
                                                       "object": "realtime.session", "modalities": ["audio"],
                                                       "model": model}}
            await ws.send(json.dumps(created))
            audio, committed = bytearray(), asyncio.Event()
            async for message in ws:
                event = json.loads(message)
                kind = event.get("type")
                if kind == "input_audio_buffer.append":
                    arrived = time.perf_counter_ns()
                    chunk = base64.b64decode(event["audio"], validate=True)
                    if speaker is None:
                        speaker = asyncio.create_task(self._speak(ws, arrived, chunk, committed))
                    audio += chunk
                elif kind == "input_audio_buffer.commit":
                    committed.set()
                    saw(self, "stream", {"model": model, "audio": hashlib.sha256(audio).hexdigest()})
                elif kind == "transcription_session.updated":
                    await ws.send(json.dumps(event))  # the ack has the same body
                else:
                    await ws.send(_failed("invalid_event", f"unknown event type {str(kind)[:40]!r}"))
        except (ValueError, TypeError, KeyError, AttributeError):
            with contextlib.suppress(websockets.ConnectionClosed):
                await ws.send(_failed("invalid_event", "could not read the event"))
                await ws.close(1007, "invalid event")
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            if speaker is not None:
                speaker.cancel()

    async def _speak(self, ws, t0: int, first: bytes, committed: asyncio.Event) -> None:
        s = self.scenario
        turn = s.turn(first, t0)
        start, _ = s.anchors_for(first)
        split_every = int(self.max_speech_s * 1e9)
        next_split = t0 + int(start * 1e9) + split_every
        segment_from, said = 0, 0  # the first word of the open segment; words said so far
        async for k in turn.partials():
            if s.fault == "malformed":
                await ws.send('{"type": "conversation.item.input_audio_transcription.delta", "delta": ')
            elif breaks(s.fault):
                await break_off(ws, s.fault)
                return
            if k == 1:
                record(self, turn.transcript, "first_partial")
            if self.documented:
                if k == 1:
                    await ws.send(json.dumps(DOCUMENTED[1]))
                continue
            said = k
            if time.perf_counter_ns() >= next_split and segment_from < said - 1 and not committed.is_set():
                # the VAD's longest segment ends (after a commit the audio has ended: nothing is left to split)
                await ws.send(json.dumps({"type": COMPLETED, "transcript": " ".join(turn.words[segment_from:said - 1])}))
                segment_from, next_split = said - 1, next_split + split_every
            await ws.send(json.dumps({"type": DELTA, "delta": " ".join(turn.words[segment_from:said])}))
        if s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        record(self, turn.transcript, "final")
        if self.documented:
            await ws.send(json.dumps(DOCUMENTED[2]))
        else:
            await ws.send(json.dumps({"type": COMPLETED, "transcript": " ".join(turn.words[segment_from:])}))
