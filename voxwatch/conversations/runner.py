"""Running one scenario as a conversation with one voice agent (CONVERSATIONS.md "Running").

Per turn: a fresh Timeline, the caller's audio paced in real time (voxwatch/harness/pacer.py), the turn
ended, and the model's answer awaited while its function calls are answered from the scenario's
script and simulated backend. The next turn starts once the model has stopped speaking (the end
of its audio under the playout model) plus a pause, or after the turn's time limit. Sessions are
rotated when the adapter says its session is due to end (and every `rotate_every_turns` turns
when asked), the history replayed; a failure on a turn becomes that turn's failure, and the
conversation goes on in a new session, or ends with the reason when none can be opened.

A persona that barges in (`barge_in_ms`) says the first word of each later turn that long after the
agent's reply to the one before became audible (its audible onset as received, under the playout
model), while the agent is still talking; only a session that can be talked over (a deployed agent's line, which
hears the caller whenever it speaks) takes such a persona. A turn the caller barged in on ends
there: the agent's talk after the caller started is measured as the barge-in's stop latency, to the
agent's own stop (its `clear`, where its transport has one) and, beside it, to the end of its talk
on the recording (heard).

After the last turn: one two-channel recording of the whole call is written and every turn's
timing is measured back from it; each answered turn's reply is scored for speech quality (off
every clock); the replies of an agent that does not report its words are transcribed by the fixed
instrument (conversations/transcripts.py, off every clock too); the turns are scored
(voxwatch/metrics/conversation.py) on those words, with the judge's verdicts where a judge is configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from voxwatch.foundation.clock import on_the_clock, sleep_until
from voxwatch.foundation.audio import CATALOG_RATE as CALLER_RATE, resample, to_pcm16
from voxwatch.metrics.conversation import ConversationScore, TurnOutcome, score_conversation, with_timing
from voxwatch.metrics.conversation_timing import TurnBehaviour, TurnTiming, turn_timings_from_file
from voxwatch.metrics.onset import detect_onset
from voxwatch.metrics.timeline import collect_audio, heard_at_ns, playout_starts_ns
from voxwatch.metrics.v2v import (caller_words_s, conversation_recording, on_recording_s, recording_zero_ns,
                                  write_recording)
from voxwatch.metrics.vad import SpeechAnchors, speech_anchors
from voxwatch.metrics.witness import Witness, caller_turn_witness
from voxwatch.foundation.conversation import (CALLS, RECONNECTED, ROTATED, WORDS, AgentSetup, HistoryItem, ModelTurn,
                                              ToolCall)
from voxwatch.providers.conversation import ConversationStream
from voxwatch.foundation.events import CHUNK_SENT, CLEARED, Timeline
from voxwatch.providers.keys import Secret, configured_secrets, scrub
from voxwatch.harness.measure import TRIM_AFTER_SPEECH_S, QualityScore, failure_of, score_quality
from voxwatch.harness.pacer import paced_send

from voxwatch.conversations.backend import Backend, end_state_matches, scripted_result
from voxwatch.conversations.state_endpoint import endpoint_end_state
from voxwatch.conversations.transcripts import transcribe_replies
from voxwatch.foundation.persona import DEFAULT, Persona
from voxwatch.conversations.persona_audio import pinned_audio, render_persona
from voxwatch.foundation.scenario import Scenario
from voxwatch.conversations.scenario_file import LoadedScenario

PAUSE_S = 0.5  # CONVERSATIONS.md: the next turn starts once the model has stopped speaking plus this
TURN_TIMEOUT_S = 30.0  # the most a turn may take from the caller's last chunk to the model's finished reply
NO_RESPONSE_S = 10.0
NO_REPLY = "no finished reply within the turn's time limit"
NO_STATE = "the agent does not report its tool calls and the scenario names no state endpoint"
NOTHING_ANSWERED = "every turn failed: a state no answered turn reached is no pass"
NO_SESSION = "no session within the time limit"  # no audible reply this long after the caller's last word: no response
BARGE_LEAD_S = 0.1  # a barging caller's audio starts this long before its first word
BARGE_POLL_S = 0.005  # how often the reply received so far is read for its audible onset


@dataclass(frozen=True)
class ConversationSettings:
    pause_s: float = PAUSE_S
    turn_timeout_s: float = TURN_TIMEOUT_S
    no_response_s: float = NO_RESPONSE_S
    chunk_ms: int = 20
    rotate_every_turns: int | None = None  # proactive rotation on a fixed cadence (tests; capped contexts)
    recordings_dir: Path | None = None
    persona_cache_dir: Path | None = None  # where personas' rendered caller audio is kept (var/personas)
    noises_dir: Path | None = None  # the imported noise recordings (var/noises)
    secrets: tuple[Secret, ...] = ()
    quality: Callable[[np.ndarray], float] | None = None  # float32 16 kHz -> MOS: each reply's speech quality
    stall_bound_ms: float | None = None  # the clock witness's bound ([run] stall_bound_ms); None: the method's
    transcriber: Callable[[np.ndarray], str] | None = None  # float32 16 kHz -> text: replies without words
    transcriber_id: str | None = None  # its registry id ([boards.s2s] reply_transcriber), stored per turn
    scripted_replies: bool = False  # the agent says each turn's scripted `reply` (a baseline): its WER is measured


@dataclass
class TurnRun:
    turn_id: str
    timeline: Timeline
    caller_pcm: bytes
    status: str = "ok"  # or a failure status (timeout, disconnected, error, ...), or "not_run"
    reason: str = ""
    model: ModelTurn | None = None
    outputs: list[tuple[ToolCall, Any]] = field(default_factory=list)  # each call and what it was sent
    timing: TurnTiming | None = None
    judge: dict[str, Any] | None = None  # the judge's identity (model, prompt sha256, temperature, seed)
    caller_anchors: SpeechAnchors | None = None  # the clean words' anchors under a persona's noise
    pause: tuple[float, float] | None = None  # a persona's mid-turn pause (start, length s) in caller_pcm
    barge_in: bool = False  # the caller started this turn while the agent was answering the one before
    quality: QualityScore | None = None  # the reply's speech quality, when scored (an answered turn with audio)
    witness: Witness | None = None  # the clock witness of its V2V (METHOD "Clock witness"), once timed
    transcript: str | None = None  # the reply as the instrument heard it (conversations/transcripts.py)
    transcript_instrument: str | None = None  # ... the instrument's id, set when it was transcribed
    transcript_error: str | None = None  # why the instrument gave no transcript (never the agent's failure)


@dataclass
class ConversationRun:
    conversation_id: str
    model_id: str
    scenario: str  # name@vN#pin12
    scenario_pin: str
    turns: list[TurnRun]
    rotations: list[str] = field(default_factory=list)
    reconnections: list[str] = field(default_factory=list)
    status: str = "ok"  # "ok": every turn ran; "ended": ended early (reason)
    reason: str = ""
    recording: Path | None = None
    end_state: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    score: ConversationScore | None = None
    persona: str = DEFAULT.identity  # the caller's persona (name#sha256 prefix): a condition, never pooled
    unreported: tuple[str, ...] = ()  # what the agent never reports (CALLS, WORDS), its failed turns included


def agent_setup(scenario: Scenario, voice: str | None = None) -> AgentSetup:
    """What the model is told: the system prompt, then the knowledge base, and the tools."""
    kb = "\n\n".join(f"## {d.title}\n{d.text}" for d in scenario.knowledge_base)
    instructions = f"{scenario.system_prompt}\n\n# Knowledge base\n\n{kb}" if kb else scenario.system_prompt
    tools = tuple({"name": t.name, "description": t.description, "parameters": t.parameters} for t in scenario.tools)
    return AgentSetup(instructions, tools, voice, script=scenario)


def caller_turn(pcm: bytes, rate: int, anchors: SpeechAnchors | None = None) -> bytes:
    """What the caller sends on a turn: its audio (int16 PCM, mono, at `rate`) at 16 kHz, trimmed to
    100 ms after the end of its speech, as a single-turn caller's clip is (METHOD "Shared VAD
    anchors"), so the turn ends when the caller stops talking. The end is the shared VAD's on the
    audio, or `anchors`' when given: a persona's clean words under its noise (render_persona)."""
    x = np.frombuffer(pcm, dtype="<i2")
    if rate != CALLER_RATE:  # a user's scenario at another rate: the catalog's rate, as datasets are imported
        x = to_pcm16(resample(x / 32768.0, rate, CALLER_RATE))
    anchors = anchors if anchors is not None else speech_anchors(x)
    if anchors is not None:
        x = x[: int(round((anchors.speech_end + TRIM_AFTER_SPEECH_S) * CALLER_RATE))]
    return np.ascontiguousarray(x).tobytes()


def caller_audio(loaded: LoadedScenario, index: int) -> bytes:
    """The scenario's own caller audio of a turn (the default persona's), as sent (caller_turn)."""
    return caller_turn(pinned_audio(loaded, index), loaded.scenario.sample_rate)


def barging(pcm: bytes, anchors: SpeechAnchors | None,
            pause: tuple[float, float] | None) -> tuple[bytes, SpeechAnchors | None, tuple[float, float] | None]:
    """A turn the caller barges into, as sent: its audio from BARGE_LEAD_S before its first word (a
    caller talking over the agent does not wait in silence first), its anchors and pause moved with it."""
    found = anchors if anchors is not None else speech_anchors(np.frombuffer(pcm, dtype="<i2"))
    if found is None:
        return pcm, anchors, pause
    n = int(round(max(0.0, found.speech_start - BARGE_LEAD_S) * CALLER_RATE))
    skip = n / CALLER_RATE
    moved = None if anchors is None else SpeechAnchors(anchors.speech_start - skip, anchors.speech_end - skip)
    return pcm[2 * n:], moved, None if pause is None else (pause[0] - skip, pause[1])


def _lead_ms(pcm: bytes, anchors: SpeechAnchors | None) -> int:
    """How long a turn's audio (as sent) runs before the caller's first word."""
    anchors = anchors if anchors is not None else speech_anchors(np.frombuffer(pcm, dtype="<i2"))
    return 0 if anchors is None else int(round(anchors.speech_start * 1000))


def _reply_onset_ns(timeline: Timeline, after_ns: int) -> int | None:
    """When the reply received on the turn since `after_ns` (the caller's end) became audible (the onset
    detector, playout model): audio heard before then is the caller's turn's (a reply it talked over)."""
    audio = collect_audio(timeline.events)
    if audio.samples.size == 0:
        return None
    heard = playout_starts_ns(audio) + audio.chunk_offsets * 1e9 / audio.sample_rate
    first = int(np.searchsorted(heard, after_ns))
    if first >= heard.size:
        return None
    start = int(audio.chunk_offsets[first])
    onset = detect_onset(audio.samples[start:], audio.sample_rate)
    return None if onset is None else int(heard_at_ns(audio, start + onset))


async def respond_or_barge(session, handler, timeline: Timeline, barge_in_ms: int | None,
                           timeout_s: float) -> tuple[ModelTurn, bool]:
    """The model's reply to the turn, and whether the caller barged in on it: with `barge_in_ms`, the
    wait for the reply is cut short that long after its audible onset (at once when that has passed;
    the session's `cut_short` says what the reply was), unless the reply ended first."""
    if barge_in_ms is None:
        return await asyncio.wait_for(session.respond(handler), timeout_s), False
    task = asyncio.ensure_future(session.respond(handler))
    clock = timeline.clock
    ended = clock()
    deadline = ended + int(timeout_s * 1e9)
    onset: int | None = None
    try:
        while True:
            now = clock()
            if now >= deadline:
                raise asyncio.TimeoutError()
            if onset is None:
                onset = _reply_onset_ns(timeline, ended)
            barge_at = None if onset is None else onset + barge_in_ms * 1_000_000
            wait_s = BARGE_POLL_S if barge_at is None else max(0.0, (barge_at - now) / 1e9)
            await asyncio.wait({task}, timeout=min(wait_s, (deadline - now) / 1e9))
            if task.done():
                return task.result(), False
            if barge_at is not None and clock() >= barge_at:
                return session.cut_short(), True
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _spoken_until_ns(timeline: Timeline) -> int | None:
    """When the model's last sample of the turn is heard (playout model), or None if it sent none."""
    audio = collect_audio(timeline.events)
    if audio.samples.size == 0:
        return None
    return int(heard_at_ns(audio, audio.samples.size - 1))


class _Turns:
    """The tool handler of a conversation: answers each call from the script and the backend."""

    def __init__(self, scenario: Scenario, backend: Backend) -> None:
        self.scenario, self.backend = scenario, backend
        self.index = 0
        self.outputs: list[tuple[ToolCall, Any]] = []

    async def __call__(self, call: ToolCall) -> Any:
        tool = self.scenario.tool(call.name)
        if tool is None:
            output: Any = {"ok": False, "error": f"unknown function {call.name!r}"}
        elif "_raw" in call.arguments:
            output = {"ok": False, "error": "the arguments were not valid JSON"}
        else:
            output = self.backend.call(tool, call.arguments, scripted_result(self.scenario, self.index, call))
        self.outputs.append((call, output))
        return output


async def run_conversation(stream: ConversationStream, model_id: str, vendor: str, loaded: LoadedScenario,
                           settings: ConversationSettings = ConversationSettings(), judge=None,
                           voice: str | None = None, whole: bool = True,
                           persona: Persona | None = None, conversation_id: str | None = None) -> ConversationRun:
    """Run every turn of `loaded` against `stream`, then record, time and score the conversation
    (the backend's end state only when `whole`: a trial of the first turns cannot reach it). The
    caller speaks as `persona` (default: the scenario's own audio), rendered before the call opens.
    A planner gives the conversation's id (one per run, model, scenario and persona), so a held-again
    conversation is the same row; otherwise it is fresh."""
    scenario = loaded.scenario
    persona = persona or DEFAULT
    rendered = await asyncio.to_thread(render_persona, loaded, persona, settings.persona_cache_dir,
                                     settings.noises_dir)
    # the caller's turns as sent, made before the call opens: nothing heavy runs on a live line
    # (a resampling or a VAD pass would hold up the silence it carries to the agent)
    pauses = rendered.pauses or [None] * len(scenario.turns)
    sent = [(caller_turn(rendered.audio[i], scenario.sample_rate, rendered.anchors[i]), rendered.anchors[i], pauses[i])
            for i in range(len(scenario.turns))]
    if persona.barge_in_ms is not None:
        sent = [sent[0], *(barging(*t) for t in sent[1:])]
    setup = agent_setup(scenario, voice)
    backend = Backend(scenario.initial_state)
    handler = _Turns(scenario, backend)
    run = ConversationRun(conversation_id or uuid.uuid4().hex, model_id, loaded.identity, loaded.pin, [], persona=persona.identity,
                          unreported=tuple(getattr(stream, "unreported", ())))
    history: list[HistoryItem] = []
    session = None

    secrets = [*settings.secrets, *configured_secrets()]  # whatever an agent or its endpoint echoes back

    def kept(reason: str) -> str:  # a reason as stored: no key in it, and short
        return scrub(reason, secrets)[:500]

    async def open_session(why: str | None, kind: str, timeline: Timeline) -> None:
        nonlocal session
        if session is not None:
            with contextlib.suppress(Exception):
                await session.aclose()
        session = None
        session = await stream.converse(timeline, setup, tuple(history))
        if why is not None:
            timeline.mark(kind, text=why)
            (run.rotations if kind == ROTATED else run.reconnections).append(why)

    try:
        await open_session(None, ROTATED, Timeline())
        if persona.barge_in_ms is not None and not getattr(session, "takes_barge_in", False):
            raise ValueError(f"persona {persona.name} barges in, and {model_id}'s session cannot be talked over "
                             "(only a deployed agent's line hears the caller while it speaks)")
    except Exception as exc:  # noqa: BLE001 - every failure becomes the conversation's reason
        status, reason = failure_of(exc, vendor, NO_SESSION)
        run.status, run.reason = "ended", kept(f"no session: {status}: {reason}")
        run.turns = [TurnRun(t.id, Timeline(), b"", "not_run", run.reason) for t in scenario.turns]
        if session is not None:
            with contextlib.suppress(Exception):
                await session.aclose()
        return run

    next_at: int | None = None
    barged = False
    # the call is on the clock from its first turn to its hang-up: the measuring thread is woken ahead
    # (foundation.priority), and other measurements' scoring waits until it is over (on_the_clock)
    with on_the_clock:
        for i, turn in enumerate(scenario.turns):
            timeline = Timeline()
            run.turns.append(tr := TurnRun(turn.id, timeline, sent[i][0], caller_anchors=sent[i][1],
                                           pause=sent[i][2], barge_in=barged))
            barged = False
            if session is None:
                tr.status, tr.reason = "not_run", run.reason
                continue
            due = getattr(session, "rotation_due", lambda: None)()
            if due is None and settings.rotate_every_turns and i and i % settings.rotate_every_turns == 0:
                due = f"every {settings.rotate_every_turns} turns"
            try:
                if due is not None:
                    await open_session(due, ROTATED, timeline)
                if next_at is not None:
                    await sleep_until(next_at, timeline.clock)
                handler.index, handler.outputs = i, tr.outputs
                session.start_turn(timeline)
                await paced_send(session, tr.caller_pcm, CALLER_RATE, settings.chunk_ms, timeline)
                await session.end_audio()
                barge_in_ms = None
                if persona.barge_in_ms is not None and i + 1 < len(scenario.turns):  # the next caller's first word then
                    barge_in_ms = persona.barge_in_ms - _lead_ms(*sent[i + 1][:2])
                tr.model, barged = await respond_or_barge(session, handler, timeline, barge_in_ms,
                                                          settings.turn_timeout_s)
            except Exception as exc:  # noqa: BLE001 - a failed turn is the turn's row; the call goes on
                status, reason = failure_of(exc, vendor, NO_REPLY)
                tr.status, tr.reason = status, kept(reason)
            timeline.settle()  # the kernel's send times of the turn's chunks, while its connection is open
            history.append(HistoryItem("user", turn.text))  # said, whatever became of the answer
            history.extend(HistoryItem("tool", call=call, output=output) for call, output in tr.outputs)
            if tr.model is not None and tr.model.transcript:
                history.append(HistoryItem("assistant", tr.model.transcript))
            if tr.status != "ok":
                try:
                    await open_session(f"turn {turn.id}: {tr.status}", RECONNECTED, timeline)
                except Exception as again:  # noqa: BLE001
                    status, reason = failure_of(again, vendor, NO_SESSION)
                    run.status, run.reason = "ended", kept(f"after turn {turn.id} no new session: {status}: {reason}")
                    session = None
            if barged:
                next_at = None
                continue
            spoken = _spoken_until_ns(timeline)
            next_at = (spoken or timeline.clock()) + int(settings.pause_s * 1e9)
        if session is not None:
            with contextlib.suppress(Exception):
                await session.aclose()
    run.end_state = backend.state
    end_state = await _end_state(run, scenario, secrets) if whole else None
    if end_state is not None:
        end_state = (end_state[0], kept(end_state[1]))  # an endpoint's echo may hold a secret
    with on_the_clock.scoring():  # the recording, its timing and the quality score delay no clock of the worker's
        await on_the_clock.quiet(settings.turn_timeout_s)
        await _record_and_time(run, settings)
        await _score_quality(run, settings)
        if settings.transcriber is not None:
            await transcribe_replies(run, settings.transcriber, settings.transcriber_id or "")
    run.score = await _score(run, scenario, judge, end_state, settings.scripted_replies)
    return run


async def _end_state(run: ConversationRun, scenario: Scenario,
                     secrets: Sequence[Secret] = ()) -> tuple[bool | None, str]:
    """The end-state check: the simulated backend's, fed by the calls voxwatch answered; or, for an
    agent that does not report its calls (its own tools changed its own backend: CALLS in the run's
    `unreported`, its stream's, or a turn's), the scenario's state endpoint's answer (state_endpoint.py), asked
    once the call is over; else null with why. A conversation in which no turn was answered fails:
    a state nothing reached (the initial one, expected unchanged) is never a pass."""
    if run.turns and all(t.status != "ok" for t in run.turns):
        return False, f"{NOTHING_ANSWERED} ({run.turns[0].reason or run.turns[0].status})"
    unreported = CALLS in run.unreported or any(t.model is not None and CALLS in t.model.unreported for t in run.turns)
    if not unreported:
        return end_state_matches(run.end_state, scenario.expected_end_state)
    if scenario.state_endpoint is None:
        return None, NO_STATE
    run.end_state, verdict = await endpoint_end_state(scenario.state_endpoint, scenario.expected_end_state, secrets)
    return verdict


async def _record_and_time(run: ConversationRun, settings: ConversationSettings) -> None:
    """Write the call recording, then measure each turn's timing back from the file, from the caller's
    words (and pause) found on each turn's audio as generated, at their writes (metrics.as_sent)."""
    turns = [(t.timeline, t.caller_pcm) for t in run.turns]
    if not any(t.timeline.of(CHUNK_SENT) for t in run.turns):
        return
    recording, spans = conversation_recording(turns)
    sent = [t for t, s in zip(run.turns, spans) if s is not None]
    with contextlib.ExitStack() as stack:
        folder = settings.recordings_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        path = folder / f"conversation-{run.conversation_id}.wav"
        await asyncio.to_thread(write_recording, path, recording)
        zero = recording_zero_ns(t.timeline for t in run.turns)
        words = await asyncio.to_thread(lambda: [caller_words_s(t.timeline, t.caller_pcm, zero, t.caller_anchors)
                                                 for t in sent])
        behaviours = [TurnBehaviour(t.barge_in, None if t.pause is None else
                                    (on_recording_s(t.timeline, zero, t.pause[0]), t.pause[1]),
                                    tuple((e.t_ns - zero) / 1e9 for e in t.timeline.of(CLEARED))) for t in sent]
        timings = iter(await asyncio.to_thread(turn_timings_from_file, path, [s for s in spans if s is not None],
                                               words, no_response_s=settings.no_response_s,
                                               behaviours=behaviours))
        for turn, span in zip(run.turns, spans):
            turn.timing = next(timings) if span is not None else None
        for turn, said in zip(sent, words):
            _witnessed(turn, said, zero, settings.stall_bound_ms)
        run.recording = path if settings.recordings_dir else None


def _witnessed(turn: TurnRun, words: tuple[float, float] | None, zero_ns: int, bound_ms: float | None = None) -> None:
    """A timed turn's clock witness, held to the worker's bound (None: the method's); a stall over it leaves
    its clocks (V2V, barge-in stop) null, as a single turn's row is excluded: the worker's stall is never
    the agent's latency."""
    timing = turn.timing
    if timing is None or words is None or timing.model_onset_s is None:
        return
    turn.witness = replace(caller_turn_witness(turn.timeline, zero_ns + words[1] * 1e9,
                                               zero_ns + timing.model_onset_s * 1e9), bound_ms=bound_ms)
    if turn.witness.stalled:
        turn.timing = replace(timing, v2v_ms=None, barge_in_stop_ms=None, barge_in_stop_heard_ms=None)


async def _score_quality(run: ConversationRun, settings: ConversationSettings) -> None:
    """Each answered turn's reply scored by the speech quality instrument, once the call is over (no
    turn's clock is running), as a single turn's reply is (harness.measure.score_quality)."""
    if settings.quality is None:
        return
    for turn in run.turns:
        reply = collect_audio(turn.timeline.events)
        if turn.status == "ok" and reply.samples.size:
            turn.quality = await score_quality(reply.samples, reply.sample_rate, settings.quality)


def _heard(outcome: TurnOutcome, run: ConversationRun, i: int, reply: str, scripted: bool) -> TurnOutcome:
    """The outcome with the reply's words as the instrument heard them (its words are then reported), and
    the scripted reply to hold them against where the agent said it whole (not talked over, not failed)."""
    tr = run.turns[i]
    if tr.transcript_instrument is None:
        return outcome
    whole = tr.status == "ok" and not (i + 1 < len(run.turns) and run.turns[i + 1].barge_in)
    return replace(outcome, transcript=tr.transcript or "", transcript_instrument=tr.transcript_instrument,
                   unreported=tuple(u for u in outcome.unreported if u != WORDS),
                   reference_reply=reply if scripted and whole else None)


async def _score(run: ConversationRun, scenario: Scenario, judge,
                 end_state: tuple[bool | None, str] | None, scripted: bool = False) -> ConversationScore:
    outcomes = []
    for i, (turn, tr) in enumerate(zip(scenario.turns, run.turns)):
        outcome = TurnOutcome.of(turn.id, tr.model) if tr.model is not None else TurnOutcome(turn.id,
                                                                                            unreported=run.unreported)
        outcome = _heard(outcome, run, i, turn.reply, scripted)
        if tr.timing is not None and tr.status == "ok":
            outcome = with_timing(outcome, tr.timing)
        elif tr.status != "ok":  # a turn that failed got no response the caller could hear
            outcome = replace(outcome, no_response=True, interrupted=False, long_silence=False)
        if tr.quality is not None:
            outcome = replace(outcome, quality_mos=tr.quality.mos, quality_instrument=tr.quality.instrument)
        if judge is not None and tr.model is not None:
            judgement = await judge.judge_turn(scenario, turn, outcome.transcript, tr.model.calls,
                                               [o for _, o in tr.outputs], outcome.interrupted or outcome.no_response
                                               or outcome.long_silence or False)
            outcome = replace(outcome, judged={d: (v.passed, v.reason) for d, v in judgement.verdicts.items()})
            tr.judge = judgement.judge.as_record() if judgement.judge is not None else None
        outcomes.append(outcome)
    return score_conversation(scenario, outcomes, run.conversation_id, end_state)


def summary_line(run: ConversationRun) -> str:
    """A conversation's heading over its turns table, in words: a JSON line would sit inside the CLI's
    table (the stored row, `voxwatch export` and /api/v1/conversations/{id} carry it for a program)."""
    failed = sum(t.status != "ok" for t in run.turns)
    reason = f" ({run.reason})" if run.reason else ""
    return (f"conversation {run.conversation_id}: {run.model_id} on {run.scenario}, persona {run.persona}: "
            f"{run.status}{reason}, {len(run.turns)} turns ({failed} failed), {len(run.rotations)} rotations, "
            f"{len(run.reconnections)} reconnections")
