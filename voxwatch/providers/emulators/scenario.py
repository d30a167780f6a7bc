"""Scenarios: the known truth an emulator injects, shared by the emulator and whoever checks it."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import AsyncIterator, Awaitable, Callable

from voxwatch.foundation.clock import sleep_until
from voxwatch.metrics.stalls import STALL_MIN_MS

from voxwatch.providers.emulators.faults import break_off, breaks, check
from voxwatch.providers.emulators.ledger import record


def jitter_ms(key: bytes | str, spread_ms: float) -> float:
    """A per-stream offset in [-spread, +spread], derived from the stream's own content."""
    if spread_ms <= 0:
        return 0.0
    data = key.encode() if isinstance(key, str) else key
    unit = int.from_bytes(hashlib.sha256(data).digest()[:8], "little") / 2**64
    return (2 * unit - 1) * spread_ms


@dataclass(frozen=True)
class Scripted:
    """One result of a scripted streaming STT schedule: sent `at_ms` after the end of speech (negative:
    before it, on the emulator's clock, as `final_ms` is), a final or a partial, holding the stream's
    transcript's words from the end of the last final up to word `upto` (None: all of them). A partial
    is the current segment's interim text; a final closes the segment."""

    at_ms: float
    final: bool
    upto: int | None = None


@dataclass(frozen=True)
class STTScenario:
    """Streaming STT: times are on the emulator's clock from the first audio chunk's arrival."""

    transcript: str
    speech_start_s: float
    speech_end_s: float
    first_partial_ms: float = 150.0  # after the start of speech
    partial_every_ms: float = 100.0
    final_ms: float = 250.0  # after the end of speech; negative: before it
    jitter_ms: float = 0.0  # per stream, keyed by the first audio chunk's bytes
    api_key: str = "emulator-key"
    # per-stream speech anchors, keyed by the sha256 of the stream's first chunk (hex); streams
    # whose first chunk is not listed use speech_start_s / speech_end_s
    anchors: tuple[tuple[str, float, float], ...] = ()
    # per-stream transcripts, keyed the same way (the clip's reference, perhaps with injected errors)
    transcripts: tuple[tuple[str, str], ...] = ()
    fault: str | None = None  # see faults.py
    # Deepgram: a Finalize that finds no audio left (the final already sent) gets an empty
    # from_finalize final; False: no reply, which Deepgram does not guarantee then
    empty_finalize_reply: bool = True
    # a scripted schedule of partials and finals (Deepgram's /v1/listen emulator), in place of the
    # cadence above: the injected truth of the transcript at each moment (script_text_at); its last
    # result is a final
    script: tuple[Scripted, ...] = ()
    # the STT's own end of turn (METHOD "STT end of turn"): where a protocol's end of turn is a message of
    # its own (Speechmatics' EndOfUtterance), it goes `eot_ms` after the end of speech (+ jitter; None:
    # with the final, final_ms); where it is the final itself (Flux's EndOfTurn, AssemblyAI's end-of-turn
    # Turn, Deepgram's speech_final) it is the final. `cutoffs_s`: seconds after the first chunk's arrival
    # (on the anchors' clock) at which the emulator ends the turn mid-speech, the injected false cut-offs
    # (spoken by the Flux and Speechmatics emulators; the others ignore them)
    eot_ms: float | None = None
    cutoffs_s: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        check(self.fault)
        if self.script and not self.script[-1].final:
            raise ValueError("a script ends with a final")

    def scripted(self, first_chunk: bytes, t0_ns: int) -> list[tuple[int, bool, str]]:
        """(when, final?, text) of each scripted result of the stream whose first chunk arrived at `t0_ns`."""
        _, speech_end = self.anchors_for(first_chunk)
        at = t0_ns + int((speech_end * 1000 + jitter_ms(first_chunk, self.jitter_ms)) * 1e6)
        return [(at + int(step.at_ms * 1e6), step.final, text)
                for step, text in zip(self.script, self._script_texts(self.transcript_for(first_chunk)))]

    def _script_texts(self, transcript: str) -> list[str]:
        words, start, out = transcript.split(), 0, []
        for step in self.script:
            upto = len(words) if step.upto is None else min(step.upto, len(words))
            out.append(" ".join(words[start:upto]))
            if step.final:
                start = upto
        return out

    def script_text_at(self, transcript: str, ms_after_end: float) -> str:
        """The injected truth: what the script has said `ms_after_end` after the end of speech (the
        finals sent by then, then the partial sent after the last of them, if any)."""
        said, pending = [], ""
        for step, text in zip(self.script, self._script_texts(transcript)):
            if step.at_ms > ms_after_end:
                break
            if step.final:
                said.append(text)
                pending = ""
            else:
                pending = text
        return " ".join(t for t in said + [pending] if t)

    def transcript_for(self, first_chunk: bytes) -> str:
        digest = hashlib.sha256(first_chunk).hexdigest()
        return next((text for key, text in self.transcripts if key == digest), self.transcript)

    def anchors_for(self, first_chunk: bytes) -> tuple[float, float]:
        digest = hashlib.sha256(first_chunk).hexdigest()
        return next(((a, b) for key, a, b in self.anchors if key == digest), (self.speech_start_s, self.speech_end_s))

    def truth(self, first_chunk: bytes) -> dict[str, float]:
        """The injected truth: first partial, TTFS and the end of turn (ms, from the anchors as the
        emulator reckons them), and how many cut-offs fall inside the speech."""
        j = jitter_ms(first_chunk, self.jitter_ms)
        start, end = self.anchors_for(first_chunk)
        return {"first_partial_ms": self.first_partial_ms + j, "ttfs_ms": self.final_ms + j,
                "eot_ms": (self.final_ms if self.eot_ms is None else self.eot_ms) + j,
                "eot_false_cutoffs": sum(1 for c in self.cutoffs_s if start <= c < end)}

    def turn(self, first_chunk: bytes, t0_ns: int) -> Turn:
        """The schedule of one stream whose first audio chunk (`first_chunk`) arrived at `t0_ns`."""
        j = jitter_ms(first_chunk, self.jitter_ms)
        speech_start, speech_end = self.anchors_for(first_chunk)
        transcript = self.transcript_for(first_chunk)
        eot_ms = self.final_ms if self.eot_ms is None else self.eot_ms
        return Turn(transcript, transcript.split(), t0_ns + int((speech_start * 1000 + self.first_partial_ms + j) * 1e6),
                    t0_ns + int((speech_end * 1000 + self.final_ms + j) * 1e6), int(self.partial_every_ms * 1e6),
                    eot_at=t0_ns + int((speech_end * 1000 + eot_ms + j) * 1e6),
                    cutoffs_at=tuple(sorted(t0_ns + int(c * 1e9) for c in self.cutoffs_s)))


@dataclass(frozen=True)
class Turn:
    """One stream's transcription, as every streaming STT emulator schedules it: partials of one more
    word each on a fixed cadence from `first_partial_at`, then the final at `final_at` (ns)."""

    transcript: str
    words: list[str]
    first_partial_at: int
    final_at: int
    every_ns: int
    eot_at: int | None = None  # the STT's own end of turn, where it is a message of its own
    cutoffs_at: tuple[int, ...] = ()  # mid-speech ends of turn (ns), in order

    async def partials(self, cutoffs: bool = False) -> AsyncIterator[int]:
        """Wait for each partial's deadline, then yield how many words it holds (1, 2, ...); with
        `cutoffs`, each cut-off (`cutoffs_at`) before the final is yielded in its place in time as minus
        the words said by then (0 or less)."""
        at, k = self.first_partial_at, 1
        cutoffs = [c for c in self.cutoffs_at if c < self.final_at] if cutoffs else []
        while at < self.final_at:
            while cutoffs and cutoffs[0] < at:
                await sleep_until(cutoffs.pop(0))
                yield -(k - 1)
            await sleep_until(at)
            yield k
            k, at = min(k + 1, len(self.words)), at + self.every_ns
        for cutoff in cutoffs:
            await sleep_until(cutoff)
            yield -k


async def send_partials(emulator, ws, turn: Turn, fault: str | None, broken: str,
                        send: Callable[[int], Awaitable[None]],
                        cut_off: Callable[[int], Awaitable[None]] | None = None) -> bool:
    """A streaming STT emulator's partials: `send(k)` sends the partial of the turn's first k words on
    the turn's cadence (the first recorded in the ledger), with the stream faults committed on the way:
    `broken` (a message that breaks the vendor's protocol) before each partial under `malformed`, and a
    drop or a close in place of the first under `disconnect` / `close:<code>`. False when a fault ended
    the stream (nothing more is owed to it). `cut_off(k)`, where the emulator speaks them, ends the turn
    mid-speech with k words said at each of the turn's cut-offs (each recorded as `cutoff:<n>`)."""
    cut = 0
    async for k in turn.partials(cutoffs=cut_off is not None):
        if k <= 0:
            cut += 1
            record(emulator, turn.transcript, f"cutoff:{cut}")
            await cut_off(-k)
            continue
        if fault == "malformed":
            await ws.send(broken)
        elif breaks(fault):
            await break_off(ws, fault)
            return False
        if k == 1:
            record(emulator, turn.transcript, "first_partial")
        await send(k)
    return True


@dataclass(frozen=True)
class TTSScenario:
    """Streaming TTS: times are on the emulator's clock from the request's arrival."""

    ttfb_ms: float = 120.0
    leading_silence_ms: float = 80.0  # a whole number of chunks
    speech_ms: float = 600.0
    chunk_ms: float = 20.0
    send_every_ms: float = 5.0  # chunks go out this often: faster than real time, never one burst
    gaming_delay_ms: float = 0.0  # > 0: the silence is sent at TTFB, the speech this much later
    jitter_ms: float = 0.0  # per stream, keyed by the transcript
    api_key: str = "emulator-key"
    fault: str | None = None  # see faults.py
    voice: str = "tone"  # "tone": a sharp-onset 220 Hz tone; "espeak": the transcript spoken by eSpeak NG
    # playback stalls (METHOD "TTS: playback stalls"): (k, ms) holds the speech's k-th chunk after its first
    # (k >= 1, within the reply) until `ms` after the chunks before it would have played out on the
    # emulator's own clock, the chunks after it following on the usual cadence
    stalls: tuple[tuple[int, float], ...] = ()
    # a reply's cancel (METHOD "TTS: streamed text and cancel"): the chunks due within cancel_ms of its
    # arrival still go, none after; an acknowledgement (Deepgram's `Cleared`) goes cancel_ms after it
    cancel_ms: float = 20.0

    def __post_init__(self) -> None:
        check(self.fault)
        if self.cancel_ms < 0:
            raise ValueError(f"cancel_ms must be >= 0, got {self.cancel_ms!r}")
        if any(k < 1 or ms < 0 for k, ms in self.stalls) or len({k for k, _ in self.stalls}) < len(self.stalls):
            raise ValueError(f"stalls: each (k, ms) needs a distinct k >= 1 and ms >= 0, got {self.stalls!r}")

    @property
    def stalled(self) -> dict[int, float]:
        """The injected stalls, speech chunk k (counted after the first) -> ms."""
        return dict(self.stalls)

    def truth(self, transcript: str) -> dict[str, float]:
        ttfb = self.ttfb_ms + jitter_ms(transcript, self.jitter_ms)
        counted = [ms for ms in self.stalled.values() if ms >= STALL_MIN_MS]
        return {"ttfb_ms": ttfb, "leading_silence_ms": self.leading_silence_ms,
                "ttfa_ms": ttfb + max(self.leading_silence_ms, self.gaming_delay_ms),
                "stall_count": len(counted), "stall_ms": float(sum(counted))}

    def send_times(self, arrived_ns: int, transcript: str, n: int, first_speech: int) -> list[int]:
        """When each of a reply's n chunks goes out (ns): the first `ttfb_ms` (+ jitter) after the
        request arrived, the rest every `send_every_ms`; with `gaming_delay_ms`, the speech (from
        chunk `first_speech` on) that much after the silence."""
        first_at = arrived_ns + int((self.ttfb_ms + jitter_ms(transcript, self.jitter_ms)) * 1e6)
        every, held = int(self.send_every_ms * 1e6), int(self.gaming_delay_ms * 1e6)
        times = [first_at + held + (i - first_speech) * every if held and i >= first_speech else first_at + i * every
                 for i in range(n)]
        return self._stalled_times(times, first_speech)

    def _stalled_times(self, times: list[int], first_speech: int) -> list[int]:
        """`times` with each injected stall (`stalls`): the chunk held until `ms` after its playout time
        under TTFA's playout model of the sends before it, and every later chunk that much later."""
        chunk = self.chunk_ms * 1e6
        for k, ms in sorted(self.stalls):
            i = first_speech + k
            if i >= len(times):
                continue
            start = max(t - j * chunk for j, t in enumerate(times[:i]))  # when chunk 0 would have played
            shift = max(0, int(start + i * chunk + ms * 1e6) - times[i])
            times[i:] = [t + shift for t in times[i:]]
        return times


@dataclass(frozen=True)
class S2SScenario:
    """Speech-to-speech: the model's reply starts `response_ms` after the caller's speech ends.

    Times are on the emulator's clock: the end of the caller's speech is the first audio chunk's
    arrival plus the clip's speech_end (from `anchors`, as in STTScenario). The reply's audio
    (leading silence, then speech) goes out in chunks every `send_every_ms`. What it says is
    `transcript`, or the stream's own reply in `replies` (keyed by the sha256 of its first chunk, as
    `anchors` are): an emulated answer to a spoken question (OpenAI Realtime's emulator speaks it).
    """

    response_ms: float = 400.0
    leading_silence_ms: float = 60.0
    speech_ms: float = 600.0
    chunk_ms: float = 20.0
    send_every_ms: float = 5.0
    transcript: str = "sure, i can help with that"
    speech_end_s: float = 1.0
    anchors: tuple[tuple[str, float, float], ...] = ()
    jitter_ms: float = 0.0  # per stream, keyed by the first audio chunk's bytes
    api_key: str = "emulator-key"
    fault: str | None = None
    voice: str = "tone"
    replies: tuple[tuple[str, str], ...] = ()  # (sha256 of a stream's first chunk, what the reply says)

    def __post_init__(self) -> None:
        check(self.fault)

    def reply_for(self, first_chunk: bytes) -> str:
        """What the reply to the stream that began with `first_chunk` says."""
        digest = hashlib.sha256(first_chunk).hexdigest()
        return next((text for key, text in self.replies if key == digest), self.transcript)

    def speech_end_for(self, first_chunk: bytes) -> float:
        digest = hashlib.sha256(first_chunk).hexdigest()
        return next((b for key, a, b in self.anchors if key == digest), self.speech_end_s)

    def truth(self, first_chunk: bytes) -> dict[str, float]:
        return {"v2v_ms": self.response_ms + jitter_ms(first_chunk, self.jitter_ms) + self.leading_silence_ms}

    def reply_at(self, first_chunk: bytes, t0_ns: int | None, requested_ns: int) -> int:
        """When a reply asked for at `requested_ns` starts (ns): `response_ms` (+ jitter) after the
        caller's speech end (the first chunk's arrival `t0_ns` plus its speech_end), never before the
        request; `response_ms` after the request when no audio came."""
        if t0_ns is None:
            return requested_ns + int(self.response_ms * 1e6)
        j = jitter_ms(first_chunk, self.jitter_ms)
        return max(t0_ns + int((self.speech_end_for(first_chunk) * 1000 + self.response_ms + j) * 1e6), requested_ns)


@dataclass(frozen=True)
class ScriptedTurn:
    """One turn of a scripted voice agent: the function calls it makes (name, arguments) before it
    speaks, what it then says, and what its API reports hearing the caller say."""

    reply: str
    calls: tuple[tuple[str, dict], ...] = ()
    heard: str = ""


@dataclass(frozen=True)
class ConversationScript(S2SScenario):
    """A multi-turn voice agent (CONVERSATIONS.md): turn k of a conversation (counted across a
    rotation: the caller turns committed in this session plus the user messages replayed into it)
    makes `turns[k].calls`, waits for their outputs, then speaks `turns[k].reply`, its first sample
    `response_ms` (+ jitter) after the end of that turn's caller speech (anchored, as S2SScenario,
    on the turn's first audio chunk). `session_expires_s`: the session ends that long after it opened,
    as the vendor ends an expired session. `drop_on_turn`: that turn's reply is cut off by a dropped
    connection (no close frame). `heard_after_reply`: the caller's transcription comes only after the
    reply is over, as the asynchronous transcription may (OpenAI: after the reply's `response.done`,
    once the next turn has begun; Gemini: in word fragments after `turnComplete`).
    `turn_complete_after_call` (Gemini): a `turnComplete` right after the `toolCall`, before any
    speech, as some Live models send."""

    turns: tuple[ScriptedTurn, ...] = ()
    session_expires_s: float | None = None
    drop_on_turn: int | None = None
    heard_after_reply: bool = False
    turn_complete_after_call: bool = False

    def turn_at(self, index: int) -> ScriptedTurn:
        """Turn `index` of the script; past its end the agent only says it has nothing scripted."""
        return self.turns[index] if index < len(self.turns) else ScriptedTurn(reply="nothing is scripted for this turn")


@dataclass(frozen=True)
class Scenarios:
    """One emulator process serving several of a vendor's APIs at once (Deepgram's STT and TTS, say)."""

    stt: STTScenario | None = None
    tts: TTSScenario | None = None
    s2s: S2SScenario | None = None


def scenario_for(scenario, board: str):
    """The scenario an emulator should use for one board's API, from a single scenario or a bundle."""
    if isinstance(scenario, Scenarios):
        return getattr(scenario, board)
    kind = {"stt": STTScenario, "tts": TTSScenario, "s2s": S2SScenario}[board]
    return scenario if isinstance(scenario, kind) else None


def scenario_as(scenario, board: str, kind: type):
    """The board's scenario (scenario_for) as a vendor's own scenario class `kind` (a dataclass that
    extends the board's with the vendor's behaviours): a plain one, as `voxwatch emulate` serves,
    gets the vendor's defaults."""
    found = scenario_for(scenario, board)
    return found if isinstance(found, kind) else kind(**dataclasses.asdict(found))
