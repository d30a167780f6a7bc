"""A loopback emulator of Speechmatics' Realtime API v2 WebSocket (`/v2`, or `/v2/<language>`).

Checks `Authorization: Bearer <key>`; sends an `Info` (recognition_quality) on connect; takes one
`StartRecognition` (raw audio_format with encoding and sample_rate, a transcription_config with a
language and, if given, a realtime model `enhanced` | `standard`; anything else is an `Error` and
close 1003) and answers `RecognitionStarted`; acknowledges every binary audio frame with
`AudioAdded` (`seq_no` from 1). From the first frame's arrival it sends `AddPartialTranscript`s of
the words not yet final on the STTScenario cadence from `first_partial_ms` after the start of
speech; transcripts of four words or more get a first-half `AddTranscript` segment mid-speech, as
Speechmatics finalizes segments as it goes; the last segment's `AddTranscript` goes `final_ms`
after the end of speech. `ForceEndOfUtterance` is answered with `EndOfUtterance` after that final
(at once, with an empty `AddTranscript` first, once the final is out); `EndOfStream` notes the
audio_format and every byte received (ledger `seen:stream`), flushes a final not yet sent, then
`EndOfTranscript` and a normal close.

End of utterance (docs.speechmatics.com/speech-to-text/realtime/turn-detection): with
`transcription_config.conversation_config.end_of_utterance_silence_trigger` set, the server's own
end of utterance is "a final transcript message ... followed by an extra EndOfUtterance message":
here the final as above, then `EndOfUtterance` at the scenario's end of turn (`eot_ms` after the end
of speech, not before the final) unless ForceEndOfUtterance came first (the forced one is answered as
above); each of the scenario's cut-offs (`cutoffs_s`) is an `AddTranscript` of the words not yet final
and an `EndOfUtterance` mid-speech. Without the setting no EndOfUtterance comes unasked.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from http import HTTPStatus
from urllib.parse import urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import STTScenario, scenario_for

MODELS = ("enhanced", "standard")
ENCODINGS = ("pcm_s16le", "pcm_f32le", "mulaw")
MIN_SEGMENT_WORDS = 4  # transcripts this long are finalized in two segments


def _transcript(kind: str, words: list[str], start: float = 0.0, end: float = 0.0) -> str:
    return json.dumps({
        "message": kind, "format": "2.9",
        "metadata": {"start_time": start, "end_time": end, "transcript": " ".join(words)},
        "results": [{"type": "word", "start_time": start, "end_time": end,
                     "alternatives": [{"content": w, "confidence": 0.99, "language": "en"}]} for w in words]})


def _end_of_utterance(at: float) -> str:
    return json.dumps({"message": "EndOfUtterance", "metadata": {"start_time": at, "end_time": at}})


def _error(kind: str, reason: str) -> str:
    return json.dumps({"message": "Error", "type": kind, "reason": reason})


def _config_problem(start: dict) -> str | None:
    """What is wrong with a StartRecognition message, or None."""
    fmt, config = start.get("audio_format"), start.get("transcription_config")
    if not isinstance(fmt, dict) or not isinstance(config, dict):
        return "audio_format and transcription_config are required"
    if fmt.get("type") != "raw" or fmt.get("encoding") not in ENCODINGS:
        return "audio_format must be raw with a supported encoding"
    if not isinstance(fmt.get("sample_rate"), int) or fmt["sample_rate"] <= 0:
        return "audio_format.sample_rate must be a positive integer"
    if not isinstance(config.get("language"), str):
        return "transcription_config.language is required"
    if config.get("model", MODELS[0]) not in MODELS:
        return f"unknown realtime model {config.get('model')!r}"
    return None


class _Stream:
    """One session's state shared by its reader and its speaker."""

    def __init__(self) -> None:
        self.transcript = ""
        self.words: list[str] = []
        self.finalized = 0  # words already sent in an AddTranscript
        self.final_sent = False
        self.forced = False
        self.utterances = False  # end-of-utterance detection asked for (conversation_config)
        self.speaker: asyncio.Task | None = None


class SpeechmaticsEmulator:
    def __init__(self, scenario) -> None:
        self.scenario: STTScenario = scenario_for(scenario, "stt")

    def process_request(self, connection, request):
        path = urlsplit(request.path).path.rstrip("/")
        if path != "/v2" and not (path.startswith("/v2/") and path.count("/") == 2):
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Bearer {self.scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid credentials\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        stream = _Stream()
        seq_no = 0
        try:
            await ws.send(json.dumps({"message": "Info", "type": "recognition_quality", "quality": "broadcast",
                                      "reason": "Running recognition using a broadcast model quality."}))
            try:
                start = json.loads(await ws.recv())
                problem = None if start.get("message") == "StartRecognition" else "expected StartRecognition"
                problem = problem or _config_problem(start)
            except (ValueError, TypeError, AttributeError):
                problem = "the message was not understood"
            if problem:
                await ws.send(_error("protocol_error" if "expected" in problem else "invalid_config", problem))
                await ws.close(1003, "protocol_error")
                return
            await ws.send(json.dumps({"message": "RecognitionStarted", "id": str(uuid.uuid4()),
                                      "orchestrator_version": "emulator",
                                      "language_pack_info": {"adapted": False, "itn": True, "language_description":
                                                             "English", "word_delimiter": " ",
                                                             "writing_direction": "left-to-right"}}))
            fmt, audio = start["audio_format"], bytearray()
            conversation = start["transcription_config"].get("conversation_config")
            stream.utterances = isinstance(conversation, dict) and "end_of_utterance_silence_trigger" in conversation
            async for message in ws:
                if isinstance(message, bytes):
                    audio += message
                    seq_no += 1
                    if stream.speaker is None:
                        stream.speaker = asyncio.create_task(self._speak(ws, time.perf_counter_ns(), message, stream))
                    await ws.send(json.dumps({"message": "AudioAdded", "seq_no": seq_no}))
                    continue
                try:
                    data = json.loads(message)
                    kind = data.get("message")
                except (ValueError, AttributeError):
                    kind = None
                if kind == "ForceEndOfUtterance":
                    stream.forced = True
                    if stream.final_sent or stream.speaker is None:
                        await ws.send(_transcript("AddTranscript", []))
                        await ws.send(_end_of_utterance(0.0))
                elif kind == "EndOfStream":
                    saw(self, "stream", {"encoding": fmt["encoding"], "sample_rate": fmt["sample_rate"],
                                         "audio": audio.hex()})
                    await self._flush(ws, stream)
                    await ws.send(json.dumps({"message": "EndOfTranscript"}))
                    await ws.close()
                    return
                elif kind != "SetRecognitionConfig":
                    await ws.send(_error("protocol_error", "the message was not understood"))
                    await ws.close(1003, "protocol_error")
                    return
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            if stream.speaker is not None:
                stream.speaker.cancel()

    async def _flush(self, ws, stream: _Stream) -> None:
        """EndOfStream: the last segment gets its final now (unless the scenario withholds it)."""
        if stream.speaker is not None:
            stream.speaker.cancel()
            if not stream.final_sent and self.scenario.fault != "no_final":
                await self._final(ws, stream)

    async def _final(self, ws, stream: _Stream) -> None:
        stream.final_sent, forced = True, stream.forced  # a later ForceEndOfUtterance is answered by the reader
        record(self, stream.transcript, "final")
        await ws.send(_transcript("AddTranscript", stream.words[stream.finalized:]))
        stream.finalized = len(stream.words)
        if forced:
            await ws.send(_end_of_utterance(0.0))

    async def _speak(self, ws, t0: int, first_chunk: bytes, stream: _Stream) -> None:
        s = self.scenario
        turn = s.turn(first_chunk, t0)
        stream.transcript, stream.words = turn.transcript, turn.words
        words = turn.words
        split = len(words) // 2 if len(words) >= MIN_SEGMENT_WORDS else 0
        cut = 0
        async for k in turn.partials(cutoffs=stream.utterances):
            if k <= 0:  # a cut-off: what is said so far is final, and the utterance has ended
                cut += 1
                record(self, stream.transcript, f"cutoff:{cut}")
                await ws.send(_transcript("AddTranscript", words[stream.finalized:-k]))
                stream.finalized = max(stream.finalized, -k)
                await ws.send(_end_of_utterance(0.0))
                continue
            if s.fault == "malformed":
                await ws.send('{"message": "AddPartialTranscript", "metadata": ')
            elif breaks(s.fault):
                await break_off(ws, s.fault)
                return
            if split and not stream.finalized and k > split:
                await ws.send(_transcript("AddTranscript", words[:split]))  # a segment ends mid-speech
                stream.finalized = split
            if k == 1:
                record(self, stream.transcript, "first_partial")
            await ws.send(_transcript("AddPartialTranscript", words[stream.finalized:k]))
        if s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        await self._final(ws, stream)
        if stream.utterances and not stream.forced:
            await sleep_until(max(turn.eot_at, turn.final_at))
            if not stream.forced:
                record(self, stream.transcript, "end_of_turn")
                await ws.send(_end_of_utterance(0.0))
