"""xAI's streaming speech to text (`/v1/stt`), the STT endpoint of the one xAI emulator
(`emulators/s2s/xai.py` serves it on the port of the Voice Agent API, as xAI serves both from
api.x.ai).

Sources (read 2026-12-07): the xAI REST API reference, "Speech to text - Streaming",
https://docs.x.ai/developers/rest-api-reference/inference/speech-to-text (its field tables for the
query, `transcript.partial`, `transcript.done` and `error`; two revisions); the models page
https://docs.x.ai/developers/models/speech-to-text (limits). What it serves:
- The upgrade needs `Authorization: Bearer <key>` (else 401) and takes `sample_rate` (8000, 16000,
  22050, 24000, 44100, 48000; default 16000), `encoding` (pcm, mulaw, alaw; default pcm),
  `interim_results` (default false), `endpointing` (0-5000 ms, default 10). A value outside these is
  refused with 400 here: how xAI refuses one is not documented. The handshake faults refuse it too
  (429 with Retry-After, 401, 403, 503, 400).
- Then `transcript.created`; binary frames of audio; interim `transcript.partial` events
  (`is_final=false`, only with `interim_results=true`) on the STTScenario's cadence from
  `first_partial_ms` after the start of speech, each with its words timed in seconds; the utterance
  final (`is_final=true, speech_final=true`) `final_ms` after the end of speech. `{"type":
  "audio.done"}` is answered, once that final is out, by `transcript.done` with the text no
  `speech_final` event covered (empty here) and the duration of the audio received; then the server
  closes normally (the older revision's one utterance per connection). Any other text message gets
  `{"type": "error", "message": ...}` and the session goes on.
- Faults: `malformed` and `disconnect` / `close:<code>` at the first partial's time, `no_final`
  (neither the final nor `transcript.done`).

The cited sequence. xAI publishes no verbatim transcript of a session (and no official SDK speaks
this endpoint, so there is no SDK fixture): DOC_SEQUENCES are built from the reference's field
tables and its stated rules, each marked with the rule it shows, and `XAISTTScenario.replay`
serves one in place of the scenario's transcript, at the scenario's times. "utterance": an interim,
then the utterance final; `transcript.done` empty because "If all audio was covered by speech_final
events, text and words will be empty". "chunked": continuous speech split "into ~3-second chunks"
(a chunk final, `speech_final=false`), the rest returned by `transcript.done` ("any remaining
transcript not already covered by speech_final events"). "repeated": a `transcript.done` that repeats
the whole utterance, as Coval's runner saw from xAI (fixture `trailing-done` in
`runner/tests/providers/stt/fixtures/xai/`, Coval-authored, @ bf95d1b: a reference, not the vendor's).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record
from voxwatch.providers.emulators.scenario import STTScenario, Turn

PATH = "/v1/stt"
RATES = ("8000", "16000", "22050", "24000", "44100", "48000")
ENCODINGS = {"pcm": 2, "mulaw": 1, "alaw": 1}  # bytes per sample

# Each: (interim events, final events, transcript.done); the events' fields as the reference's tables
# name them, times in seconds.
_HELLO = {"text": "hello", "start": 0.0, "end": 0.48}
_WORLD = {"text": "world", "start": 0.52, "end": 0.96}
DOC_SEQUENCES: dict[str, tuple[list[dict], list[dict], dict]] = {
    "utterance": (
        [{"type": "transcript.partial", "text": "hello", "words": [_HELLO], "is_final": False,
          "speech_final": False, "start": 0.0, "duration": 0.5}],
        [{"type": "transcript.partial", "text": "hello world", "words": [_HELLO, _WORLD], "is_final": True,
          "speech_final": True, "start": 0.0, "duration": 1.0}],
        {"type": "transcript.done", "text": "", "words": [], "duration": 1.2}),
    "chunked": (
        [{"type": "transcript.partial", "text": "hello", "words": [_HELLO], "is_final": False,
          "speech_final": False, "start": 0.0, "duration": 0.5}],
        [{"type": "transcript.partial", "text": "hello", "words": [_HELLO], "is_final": True,
          "speech_final": False, "start": 0.0, "duration": 0.5}],
        {"type": "transcript.done", "text": "world", "words": [_WORLD], "duration": 1.2}),
    "repeated": (
        [],
        [{"type": "transcript.partial", "text": "hello world", "words": [_HELLO, _WORLD], "is_final": True,
          "speech_final": True, "start": 0.0, "duration": 1.0}],
        {"type": "transcript.done", "text": "hello world", "words": [_HELLO, _WORLD], "duration": 1.2}),
}


@dataclasses.dataclass(frozen=True)
class XAISTTScenario(STTScenario):
    """An STTScenario that can serve one of DOC_SEQUENCES (`replay`) in place of its transcript."""

    replay: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.replay is not None and self.replay not in DOC_SEQUENCES:
            raise ValueError(f"no xAI sequence {self.replay!r}; known: {', '.join(DOC_SEQUENCES)}")


def _words(turn: Turn, k: int, start_s: float, end_s: float) -> list[dict]:
    """The first k words of the turn, spread evenly over the speech (seconds)."""
    step = (end_s - start_s) / max(1, len(turn.words))
    return [{"text": w, "start": round(start_s + i * step, 3), "end": round(start_s + (i + 1) * step, 3)}
            for i, w in enumerate(turn.words[:k])]


class XAISTTEndpoint:
    """`/v1/stt` for the emulator `owner` (whose ledger the sends are recorded in)."""

    def __init__(self, owner, scenario: STTScenario | None) -> None:
        self.owner, self.s = owner, scenario

    def process_request(self, connection, request):
        """The upgrade's settings and the handshake faults (the dispatcher has checked the key)."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}
        endpointing = query.get("endpointing", "10")
        if (query.get("sample_rate", "16000") not in RATES or query.get("encoding", "pcm") not in ENCODINGS
                or not endpointing.isdigit() or int(endpointing) > 5000):
            return connection.respond(HTTPStatus.BAD_REQUEST, "invalid sample_rate, encoding or endpointing\n")
        return websocket_refusal(connection, self.s.fault)

    async def handle(self, ws) -> None:
        query = {k: v[0] for k, v in parse_qs(urlsplit(ws.request.path).query).items()}
        interim = query.get("interim_results", "false").lower() == "true"
        bytes_per_s = int(query.get("sample_rate", "16000")) * ENCODINGS[query.get("encoding", "pcm")]
        await ws.send(json.dumps({"type": "transcript.created", "id": str(uuid.uuid4())}))
        received, sender = 0, None
        try:
            async for message in ws:
                if isinstance(message, bytes):
                    received += len(message)
                    if sender is None:
                        sender = asyncio.create_task(self._transcribe(ws, time.perf_counter_ns(), message, interim))
                    continue
                kind = _kind(message)
                if kind != "audio.done":
                    await ws.send(json.dumps({"type": "error", "message": f"unknown message type {kind!r}"}))
                    continue
                if self.s.fault == "no_final":
                    continue  # the session stays open, and nothing more comes
                if sender is not None and not await sender:
                    return  # the session was broken off
                done = (DOC_SEQUENCES[self.s.replay][2] if getattr(self.s, "replay", None) else
                        {"type": "transcript.done", "text": "", "words": [], "duration": 0.0})
                await ws.send(json.dumps({**done, "duration": round(received / bytes_per_s, 2)}))
                await ws.close()
                return
        finally:
            if sender is not None:
                sender.cancel()

    async def _transcribe(self, ws, t0: int, first_chunk: bytes, interim: bool) -> bool:
        """The turn's events on the scenario's schedule; True once the final is out."""
        s = self.s
        turn = s.turn(first_chunk, t0)
        start_s, end_s = s.anchors_for(first_chunk)
        replay = DOC_SEQUENCES[s.replay] if getattr(s, "replay", None) else None
        async for k in turn.partials():
            if s.fault == "malformed":
                await ws.send('{"type": "transcript.partial", "text": ')
            elif breaks(s.fault):
                await break_off(ws, s.fault)
                return False
            if not interim or (replay is not None and k > len(replay[0])):
                continue
            if k == 1:
                record(self.owner, turn.transcript, "first_partial")
            await ws.send(json.dumps(replay[0][k - 1] if replay is not None else {
                "type": "transcript.partial", "text": " ".join(turn.words[:k]),
                "words": _words(turn, k, start_s, end_s), "is_final": False, "speech_final": False,
                "start": start_s, "duration": round(end_s - start_s, 3)}))
        if s.fault == "no_final":
            return False
        await sleep_until(turn.final_at)
        record(self.owner, turn.transcript, "final")
        for event in replay[1] if replay is not None else [{
                "type": "transcript.partial", "text": turn.transcript,
                "words": _words(turn, len(turn.words), start_s, end_s), "is_final": True, "speech_final": True,
                "start": start_s, "duration": round(end_s - start_s, 3)}]:
            await ws.send(json.dumps(event))
        return True


def _kind(message: str) -> str | None:
    try:
        data = json.loads(message)
    except ValueError:
        return None
    return data.get("type") if isinstance(data, dict) else None
