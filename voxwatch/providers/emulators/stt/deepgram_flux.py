"""Deepgram Flux (`/v2/listen`) for the Deepgram emulator (emulators/stt/deepgram.py serves it on the
same port, as api.deepgram.com serves v1 and v2). Sources: voxwatch/providers/stt/deepgram_flux.py and
docs/vendor-notes/stt-deepgram-flux.md, read 2026-12-07.

What it speaks:
- The handshake (checked before the upgrade, after the Deepgram emulator's `Token` check): `model`
  `flux-general-en` or `flux-general-multi`; v1-only parameters are refused with HTTP 400 (Coval:
  "v2/listen 400s on v1-only query params"); raw audio needs `encoding` (of Flux's, this emulator
  speaks linear16 and mulaw) and `sample_rate` (8000, 16000, 24000, 44100, 48000), else HTTP 400 (how
  Flux refuses a bad audio setting is not documented: the status is this emulator's choice).
- `Connected` on open; from the first audio frame's arrival (the emulator's t0) one turn on the
  STTScenario cadence: `StartOfTurn` with the first word `first_partial_ms` after the start of speech,
  an `Update` per word after it (the turn's transcript so far), and `EndOfTurn` (`trigger` `model`, or
  `manual` when a `ForceEndTurn` had arrived) `final_ms` after the end of speech, with `words` in
  seconds spread over the speech and increasing `sequence_id`s. ForceEndTurn does not move the final
  (the scenario is the truth); one that finds no active turn gets nothing (undocumented).
- `CloseStream`: notes what was received (ledger `seen:flux`). "CloseStream does not finalize the
  active turn": an EndOfTurn not yet due is sent only when ForceEndTurn had asked for it (and the
  scenario does not withhold it), otherwise the turn is dropped with one trailing `Update`; then the
  server closes "without sending a WebSocket close status code" (an empty close frame: 1005).
- End of turn: the EndOfTurn above is the model's own (`trigger` `model`) unless ForceEndTurn came
  first; each of the scenario's cut-offs (`cutoffs_s`) is an EndOfTurn (`model`) mid-speech with the
  turn's words so far, and the words after it make the next turn (`turn_index` + 1, transcripts reset).
- Faults (faults.py): the handshake ones (through the Deepgram emulator); `malformed`, `disconnect`,
  `close:<code>` at the first partial; `no_final` (no EndOfTurn ever; CloseStream still closes).
  An unknown client message gets a fatal `Error` and a close 1011 (the code is not documented).

`DOCUMENTED` is the "Turn Lifecycle Example" of developers.deepgram.com/docs/flux/state (stored copy of
https://developers.deepgram.com/docs/flux/state.md, read 2026-12-07), quoted event by event. The page
omits `type`, `request_id` and `sequence_id` and elides most `words` arrays as `[...]`: the replay adds
`"type": "TurnInfo"`, one request id, sequence ids counting from 1 after `Connected` (whose shape is the
asyncapi's, deepgram/deepgram-api-specs asyncapi.yml @ 4ba987c), and an empty list for each elided
`words`, and to the EndOfTurn the `"trigger": "model"` that, since Deepgram's changelog of 2026-08-28
("Flexible turn-taking control for Flux": "EndOfTurn events carry "trigger": "model""), marks Flux's own
end of turn. Everything else is the page's. No official SDK fixture with a TurnInfo sequence exists
(deepgram-python-sdk @ 7da415d tests only the URL).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from urllib.parse import parse_qs

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.replay import Close, Expect, Send
from voxwatch.providers.emulators.scenario import STTScenario, send_partials

PATH = "/v2/listen"
MODELS = ("flux-general-en", "flux-general-multi")
RATES = (8000, 16000, 24000, 44100, 48000)
ENCODINGS = ("linear16", "mulaw")
V1_ONLY = ("channels", "interim_results", "punctuate", "smart_format", "endpointing", "utterance_end_ms",
           "vad_events", "diarize", "language")
V2 = ("model", "encoding", "sample_rate", "eager_eot_threshold", "eot_threshold", "eot_timeout_ms", "keyterm",
      "language_hint", "profanity_filter", "numerals", "redact", "mip_opt_out", "tag")

_REQUEST = "b7f3c9a2-4d1e-4f6a-9c8b-2e5d7a1f0c3b"  # the replay's request id (the page shows none)


def _turn_info(n: int, event: str, window: tuple[float, float], transcript: str, words: list,
               eot: float) -> dict:
    trigger = {"trigger": "model"} if event == "EndOfTurn" else {}  # the changelog of 2026-08-28 (below)
    return {"type": "TurnInfo", "request_id": _REQUEST, "sequence_id": n, "event": event, "turn_index": 0,
            "audio_window_start": window[0], "audio_window_end": window[1], "transcript": transcript,
            "words": words, "end_of_turn_confidence": eot, **trigger}


_HI_I = [{"word": "Hi", "confidence": 0.95, "start": 0.42, "end": 0.56},
         {"word": "I", "confidence": 0.92, "start": 0.56, "end": 0.6}]
_SUB = "Hi I need to cancel my subscription."
_PLEASE = "Hi I need to cancel my subscription please."
DOCUMENTED_TURN = [  # docs/flux/state "Turn Lifecycle Example", in order (eager mode on)
    ("Update", (0.0, 0.2), "", [], 0.1),
    ("Update", (0.0, 0.5), "", [], 0.1),
    ("StartOfTurn", (0.0, 0.6), "Hi I", _HI_I, 0.1),
    ("Update", (0.0, 0.8), "Hi I need to", [], 0.1),
    ("Update", (0.0, 1.0), _SUB, [], 0.3),
    ("EagerEndOfTurn", (0.0, 1.1), _SUB, [], 0.3),
    ("TurnResumed", (0.0, 1.2), "Hi I need to cancel my subscription please", [], 0.1),
    ("Update", (0.0, 1.4), _PLEASE, [], 0.3),
    ("EagerEndOfTurn", (0.0, 1.5), _PLEASE, [], 0.3),
    ("Update", (0.1, 1.6), _PLEASE, [], 0.5),
    ("EndOfTurn", (0.0, 1.7), _PLEASE, [], 0.7),
]
DOCUMENTED = [
    Send({"type": "Connected", "request_id": _REQUEST, "sequence_id": 0}),
    *(Send(_turn_info(n, *step)) for n, step in enumerate(DOCUMENTED_TURN, 1)),
    Expect('{"type": "CloseStream"}', lambda m: m == {"type": "CloseStream"}),
    Close(None),  # "closes the connection without sending a WebSocket close status code"
]


def handshake_problem(query: str) -> str | None:
    """Why Flux would refuse this query with HTTP 400, or None."""
    q = {k: v[-1] for k, v in parse_qs(query).items()}
    if q.get("model") not in MODELS:
        return "model must be one of " + ", ".join(MODELS)
    if any(name in q for name in V1_ONLY):
        return "v1-only parameters are not accepted on /v2/listen"
    if any(name not in V2 for name in q):
        return "unknown parameter"
    if q.get("encoding") not in ENCODINGS or not q.get("sample_rate", "").isdigit() \
            or int(q["sample_rate"]) not in RATES:
        return "raw audio needs encoding (linear16 or mulaw here) and a supported sample_rate"
    return None


class _Turn:
    """One Flux session's state shared by its reader and its speaker."""

    def __init__(self) -> None:
        self.sequence = 0
        self.forced = False  # ForceEndTurn arrived
        self.ended = False  # the EndOfTurn was sent
        self.said = ""  # the turn's transcript so far
        self.index = 0  # turn_index: a cut-off ends a turn and the words after it are the next one's
        self.base = 0  # the words the turns before this one held
        self.audio = bytearray()
        self.speaker: asyncio.Task | None = None

    def message(self, event: str, transcript: str, words: list | None = None, **extra) -> str:
        self.sequence += 1
        self.said = transcript
        return json.dumps({"type": "TurnInfo", "request_id": "emulated", "sequence_id": self.sequence,
                           "event": event, "turn_index": self.index, "audio_window_start": 0.0, "audio_window_end": 0.0,
                           "transcript": transcript, "words": words or [], "end_of_turn_confidence": 0.1,
                           **extra})


async def flux_session(emulator, scenario: STTScenario, ws, query: str) -> None:
    """One `/v2/listen` session, until CloseStream or the client's close."""
    q = {k: v[-1] for k, v in parse_qs(query).items()}
    turn = _Turn()
    await ws.send(json.dumps({"type": "Connected", "request_id": str(uuid.uuid4()), "sequence_id": 0}))
    try:
        async for message in ws:
            if isinstance(message, bytes):
                turn.audio += message
                if turn.speaker is None and message:
                    turn.speaker = asyncio.create_task(_speak(emulator, scenario, ws, time.perf_counter_ns(),
                                                              message, turn))
                continue
            kind = json.loads(message).get("type")
            if kind == "ForceEndTurn":
                turn.forced = True
            elif kind == "CloseStream":
                saw(emulator, "flux", {"model": q["model"], "encoding": q["encoding"],
                                       "sample_rate": int(q["sample_rate"]), "audio": turn.audio.hex()})
                if turn.speaker is not None:
                    if turn.forced and scenario.fault != "no_final":
                        await turn.speaker  # the forced EndOfTurn goes at its time
                    else:
                        turn.speaker.cancel()  # CloseStream does not finalize the turn
                if not turn.ended:
                    await ws.send(turn.message("Update", turn.said))  # the decoded rest, no EndOfTurn
                await ws.close(None)
                return
            else:
                await ws.send(json.dumps({"type": "Error", "sequence_id": turn.sequence, "code": "UNKNOWN_MESSAGE",
                                          "description": "expected binary audio, ForceEndTurn or CloseStream"}))
                await ws.close(1011)
                return
    finally:
        if turn.speaker is not None:
            turn.speaker.cancel()


async def _speak(emulator, s: STTScenario, ws, t0: int, first_chunk: bytes, turn: _Turn) -> None:
    schedule = s.turn(first_chunk, t0)

    async def partial(k: int) -> None:
        await ws.send(turn.message("StartOfTurn" if k == turn.base + 1 else "Update",
                                   " ".join(schedule.words[turn.base:k])))

    async def cut_off(k: int) -> None:  # the model ends the turn mid-speech; the words after it are a new turn
        await ws.send(turn.message("EndOfTurn", " ".join(schedule.words[turn.base:k]), trigger="model"))
        turn.index, turn.base, turn.said = turn.index + 1, k, ""

    if not await send_partials(emulator, ws, schedule, s.fault, '{"type": "TurnInfo", "event": ', partial,
                               cut_off) or s.fault == "no_final":
        return
    await sleep_until(schedule.final_at)
    start, end = s.anchors_for(first_chunk)
    step = (end - start) / max(1, len(schedule.words))
    words = [{"word": w, "confidence": 0.97, "start": round(start + i * step, 3),
              "end": round(start + (i + 1) * step, 3)} for i, w in enumerate(schedule.words)][turn.base:]
    record(emulator, schedule.transcript, "final")
    if not turn.forced:
        record(emulator, schedule.transcript, "end_of_turn")
    turn.ended = True
    await ws.send(turn.message("EndOfTurn", " ".join(schedule.words[turn.base:]), words,
                               trigger="manual" if turn.forced else "model"))
