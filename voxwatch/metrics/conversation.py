"""Deterministic scoring of a multi-turn conversation, turn by turn (METHOD "Conversations").

Each turn is scored on the dimensions in scope for it (voxwatch/foundation/scenario.py DIMENSIONS). What
code can decide, code decides: tool-call matching, the realignment of early and late calls,
penalty absorption, golden facts in the model's words, turn-taking. What it cannot (instruction
following, grounding beyond the golden facts) comes from a judge's verdicts, or stays None with
its reason: never guessed.

Two phases (Daily's realignment, Audio Arena): first each turn on its own, then the calls that
missed their turn are followed. A required call made early satisfies its own turn and is not
spurious where it was made; one made late is credited where it was made and fails where it was
due; two late calls in a row are each charged once, where due. A failure is charged to one
dimension: the most specific cause in scope (over-clarifying to `ambiguity_handling`, forgotten
state to `state_tracking`), else `tool_use_correct`; a missing call never fails
`instruction_following`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Mapping, Sequence

from voxwatch.foundation.scenario import ExpectedCall, Scenario, Turn
from voxwatch.foundation.conversation import CALLS, WORDS, ModelTurn, ToolCall

from voxwatch.metrics.conversation_match import call_matches, call_mismatch, mismatched_args
from voxwatch.metrics.conversation_timing import TurnTiming
from voxwatch.metrics.wer import WordErrors, normalize, word_errors

NO_JUDGE = "no judge configured"
JUDGED_DIMENSIONS = ("instruction_following", "kb_grounding", "state_tracking", "ambiguity_handling")
"""The dimensions whose judge verdicts are used (TurnOutcome.judged), each where code has not
failed the turn; `tool_use_correct` and `turn_taking` are code's alone."""

# the rule that decided a verdict, stored beside it so a score can be traced to its definition
RULE_CALLS = "calls"  # the turn's required calls were made (on the turn, or early)
RULE_LATE = "late_call"  # a required call was made on a later turn: failed where due
RULE_MISSING = "missing_call"
RULE_WRONG = "wrong_args"
RULE_OVER_CLARIFICATION = "over_clarification"
RULE_FORGOTTEN_STATE = "forgotten_state"
RULE_SPURIOUS = "spurious_call"
RULE_ABSORBED = "absorbed"  # the turn's call failure was charged to a more specific dimension
RULE_GOLDEN_FACTS = "golden_facts"
RULE_JUDGE = "judge"
RULE_NO_JUDGE = "no_judge"
RULE_TURN_TAKING = "turn_taking"
RULE_NO_RECORDING = "no_recording"
RULE_UNREPORTED = "unreported"  # the agent does not report what the verdict needs (a deployed agent's calls, words)
RULE_NO_SPEECH = "no_speech"  # the reply, transcribed after the call, has no words: a tone, noise or silence
NOT_SPEECH = "the reply has no words (a tone, noise or silence, or no reply): not speech"
UNREPORTED = {CALLS: "the agent does not report its tool calls", WORDS: "the agent does not report its words"}
NEEDS = {"tool_use_correct": CALLS, "state_tracking": CALLS, "ambiguity_handling": CALLS, "kb_grounding": WORDS}
"""What each code-decided dimension reads: with it unreported, the judge decides, or it is null."""
WORDS_DIMENSIONS = ("instruction_following", "kb_grounding")
"""Decided on the reply's words always; `state_tracking` and `ambiguity_handling` too where the agent
reports no calls (only its words, read by the judge, can decide them)."""

# what became of an expected call, and of a call the model made
MADE, EARLY, LATE, WRONG, MISSING = "made", "early", "late", "wrong", "missing"
SPURIOUS, EXTRA_READ = "spurious", "extra_read"


@dataclass(frozen=True)
class TurnBehaviourFacts:
    """What the recording says of a caller's behaviour on a turn (voxwatch/metrics/turn_taking.py):
    a barge-in's stop latency (to the agent's own stop, and as heard) and whether the agent then answered; a mid-turn pause's length and
    whether the agent spoke inside it. None: the caller did not behave so (or nothing measured it)."""

    barge_in_stop_ms: float | None = None
    barge_in_answered: bool | None = None
    pause_ms: float | None = None
    premature: bool | None = None
    barge_in_stop_heard_ms: float | None = None  # the stop on the recording (what the caller heard)


NO_BEHAVIOUR = TurnBehaviourFacts()


@dataclass(frozen=True)
class TurnOutcome:
    """What happened on one turn, as the runner (calls, transcript), the recording (turn-taking
    facts, V2V) and the judge (verdicts) report it. A fact is None when nothing measured it."""

    turn_id: str
    calls: tuple[ToolCall, ...] = ()
    transcript: str = ""
    interrupted: bool | None = None
    no_response: bool | None = None
    long_silence: bool | None = None
    v2v_ms: float | None = None
    gap_s: float | None = None  # the silence before the model's first audible sample (may be < 0.5 s)
    judged: Mapping[str, tuple[bool | None, str]] = field(default_factory=dict)
    unreported: tuple[str, ...] = ()  # what the agent does not report (CALLS, WORDS): those verdicts are null
    behaviour: TurnBehaviourFacts = field(default_factory=lambda: NO_BEHAVIOUR)
    quality_mos: float | None = None  # the speech quality of the model's reply (METHOD "Speech quality")
    quality_instrument: str | None = None  # the instrument that scored it
    transcript_instrument: str | None = None  # set when `transcript` is what the instrument heard in the reply
    reference_reply: str | None = None  # what the agent said, where a script knows it (the reference agent)

    @classmethod
    def of(cls, turn_id: str, model: ModelTurn) -> "TurnOutcome":
        """What a session's ModelTurn says: its calls in order, its own transcript, what it cannot report."""
        return cls(turn_id, calls=tuple(model.calls), transcript=model.transcript, unreported=model.unreported)


def with_timing(outcome: TurnOutcome, timing: TurnTiming) -> TurnOutcome:
    """The outcome with the turn-taking facts measured from the call recording."""
    return replace(outcome, interrupted=timing.interrupted, no_response=timing.no_response,
                   long_silence=timing.long_silence, v2v_ms=timing.v2v_ms, gap_s=timing.gap_s,
                   behaviour=TurnBehaviourFacts(timing.barge_in_stop_ms, timing.barge_in_answered,
                                                timing.pause_ms, timing.premature, timing.barge_in_stop_heard_ms))


@dataclass(frozen=True)
class Verdict:
    passed: bool | None
    reason: str
    rule: str


@dataclass(frozen=True)
class CallFate:
    """One expected call: due on `due`, `status` one of made / early / late / wrong / missing,
    `made_on` the turn of the call that satisfied it (or of the wrong attempt)."""

    name: str
    due: str
    status: str
    made_on: str | None
    reason: str


@dataclass(frozen=True)
class TurnScore:
    turn_id: str
    verdicts: dict[str, Verdict]  # in-scope dimensions only
    turn_taking_failed: bool  # the judge is told, and is lenient on instruction_following
    expected: tuple[CallFate, ...]  # the calls due on this turn
    made: tuple[tuple[ToolCall, str], ...]  # the calls made on this turn, each with what it counted as
    interrupted: bool | None = None
    no_response: bool | None = None
    v2v_ms: float | None = None
    gap_s: float | None = None
    behaviour: TurnBehaviourFacts = NO_BEHAVIOUR
    quality_mos: float | None = None  # None: the model sent no audio, or the instrument failed
    quality_instrument: str | None = None
    transcript_instrument: str | None = None  # the instrument that transcribed the reply (None: the model's own words)
    transcript_errors: int | None = None  # the transcription's word errors against the scripted reply ...
    transcript_ref_words: int | None = None  # ... and that reply's words (None: not measurable on the turn)


@dataclass(frozen=True)
class ConversationScore:
    conversation_id: str
    scenario: str
    turns: tuple[TurnScore, ...]
    end_state_ok: bool | None = None  # None when no backend was checked
    end_state_reason: str = ""

    def as_record(self) -> dict:
        """Plain JSON-able data (lists for tuples), for the store and the conversation's page."""
        return asdict(self)


def asks_question(transcript: str) -> bool:
    """Whether the model's reply asks the caller something: a sentence ending in a question mark
    (both S2S APIs' own transcripts and a cascade's LLM text are punctuated)."""
    return "?" in (transcript or "")


def missing_facts(facts: Sequence[str], transcript: str) -> tuple[str, ...]:
    """The golden facts not in the transcript, each compared as whole words after Whisper's English
    normalizer (the one WER uses), so "2 people" and "two people", "7 PM" and "seven pm", are
    the same fact (its limits are WER's: "7:30 PM" is not "seven thirty p.m.")."""
    said = f" {normalize(transcript)} "
    return tuple(f for f in facts if normalize(f) and f" {normalize(f)} " not in said)


def has_words(transcript: str | None) -> bool:
    """Whether a reply has words: a word left after the WER normalizer. An instrument that hears no
    words (Whisper hears none in a tone, noise or silence) says the reply was not speech."""
    return bool(normalize(transcript or ""))


def transcription_errors(outcome: TurnOutcome) -> WordErrors | None:
    """The instrument's word errors on the agent's voice, where they can be measured: a reply the
    instrument transcribed, whose words a script knows (`reference_reply`), heard as speech (a reply with
    no words fails the words dimensions instead). Pooled over turns: the transcription WER."""
    if outcome.transcript_instrument is None or not outcome.reference_reply or not has_words(outcome.transcript):
        return None
    return word_errors(outcome.reference_reply, outcome.transcript)


def turn_taking_verdict(outcome: TurnOutcome) -> Verdict:
    """turn_taking from audio timing alone: fails on interruption, no response or a long silence."""
    facts = {"interrupted the caller": outcome.interrupted, "no response": outcome.no_response,
             "long silence": outcome.long_silence}
    bad = [name for name, v in facts.items() if v]
    if bad:
        return Verdict(False, "; ".join(bad), RULE_TURN_TAKING)
    if all(v is None for v in facts.values()):
        return Verdict(None, "no recording measured", RULE_NO_RECORDING)
    return Verdict(True, "answered in turn", RULE_TURN_TAKING)


@dataclass
class _Failure:
    dimension: str
    reason: str
    rule: str


@dataclass
class _Alignment:
    """Phase 1 and 2: every made call's use, every expected call's fate, failures per turn."""

    used: dict[tuple[int, int], str] = field(default_factory=dict)
    fates: dict[tuple[int, int], CallFate] = field(default_factory=dict)
    failures: dict[int, list[_Failure]] = field(default_factory=dict)
    attempts: dict[tuple[int, int], ToolCall] = field(default_factory=dict)  # wrong attempts at expected calls
    state_evidence: dict[int, bool] = field(default_factory=dict)  # turn -> were its state args right


def _first_unused(a: _Alignment, turn: int, calls: Sequence[ToolCall], fits) -> int | None:
    return next((i for i, c in enumerate(calls) if (turn, i) not in a.used and fits(c)), None)


def _charge(turn: Turn, cause: str, expected: ExpectedCall) -> str:
    """The one dimension a call failure is charged to (penalty absorption)."""
    scope = turn.in_scope()
    if cause == RULE_OVER_CLARIFICATION:
        if "ambiguity_handling" in scope:
            return "ambiguity_handling"
        if "state_tracking" in scope and expected.state_args:
            return "state_tracking"  # asked the caller for what the conversation had already settled
    if cause == RULE_FORGOTTEN_STATE and "state_tracking" in scope:
        return "state_tracking"
    return "tool_use_correct"


def _align(scenario: Scenario, outcomes: Sequence[TurnOutcome]) -> _Alignment:
    a = _Alignment()
    turns = scenario.turns
    # phase 1: each turn on its own
    for t, (turn, out) in enumerate(zip(turns, outcomes)):
        for e, exp in enumerate(turn.expected_calls):
            i = _first_unused(a, t, out.calls, lambda c, exp=exp: call_matches(exp, c))
            if i is not None:
                a.used[(t, i)] = MADE
                a.fates[(t, e)] = CallFate(exp.name, turn.id, MADE, turn.id, "made on its turn")
    # phase 2: realignment, in turn order so a cascade is followed one call at a time
    for t, (turn, out) in enumerate(zip(turns, outcomes)):
        for e, exp in enumerate(turn.expected_calls):
            if (t, e) in a.fates:
                continue
            a.fates[(t, e)] = _realign(a, t, e, turn, outcomes, turns)
        state_ok = [a.fates[(t, e)].status in (MADE, EARLY) or _state_args_right(a.attempts.get((t, e)), exp)
                    for e, exp in enumerate(turn.expected_calls) if exp.state_args]
        if state_ok:
            a.state_evidence[t] = all(state_ok)
    # what is left was required nowhere
    for t, (out, turn) in enumerate(zip(outcomes, turns)):
        for i, c in enumerate(out.calls):
            if (t, i) in a.used:
                continue
            tool = scenario.tool(c.name)
            if tool is not None and tool.effect is None:
                a.used[(t, i)] = EXTRA_READ  # an extra look-up changes nothing: noted, not failed
                continue
            a.used[(t, i)] = SPURIOUS
            what = "an unknown function" if tool is None else "a call no turn required"
            a.failures.setdefault(t, []).append(_Failure("tool_use_correct", f"{c.name}: {what}", RULE_SPURIOUS))
    return a


def _state_args_right(attempt: ToolCall | None, exp: ExpectedCall) -> bool:
    """Whether a wrong attempt at `exp` still carried the state right (its other arguments were wrong)."""
    return attempt is not None and not set(mismatched_args(exp, attempt)) & set(exp.state_args)


def _realign(a: _Alignment, t: int, e: int, turn: Turn, outcomes: Sequence[TurnOutcome],
             turns: Sequence[Turn]) -> CallFate:
    exp = turn.expected_calls[e]
    for s in range(t - 1, -1, -1):  # early: the nearest earlier turn where it was not required
        i = _first_unused(a, s, outcomes[s].calls, lambda c: call_matches(exp, c))
        if i is not None:
            a.used[(s, i)] = EARLY
            return CallFate(exp.name, turn.id, EARLY, turns[s].id, f"made early, on turn {turns[s].id}")
    out = outcomes[t]
    w = _first_unused(a, t, out.calls, lambda c: c.name == exp.name)  # a wrong attempt on the turn
    attempt = out.calls[w] if w is not None else None
    if w is not None:
        a.used[(t, w)] = WRONG
        a.attempts[(t, e)] = attempt
    late = None
    for u in range(t + 1, len(outcomes)):  # late: credited where made, failed here
        i = _first_unused(a, u, outcomes[u].calls, lambda c: call_matches(exp, c))
        if i is not None:
            a.used[(u, i)] = LATE
            late = turns[u].id
            break
    if attempt is not None:
        wrong = set(mismatched_args(exp, attempt))
        cause = RULE_FORGOTTEN_STATE if wrong and wrong <= set(exp.state_args) else RULE_WRONG
        reason = call_mismatch(exp, attempt) or ""
        status, made_on = WRONG, turn.id
    elif asks_question(out.transcript):
        cause, reason, status, made_on = (RULE_OVER_CLARIFICATION, f"{exp.name}: not called, asked a question instead",
                                          MISSING, None)
    else:
        cause, reason, status, made_on = (RULE_LATE if late else RULE_MISSING), f"{exp.name}: not called", MISSING, None
    if late is not None:
        reason += f" (made late, on turn {late})"
        status, made_on = LATE, late
    a.failures.setdefault(t, []).append(_Failure(_charge(turn, cause, exp), reason, cause))
    return CallFate(exp.name, turn.id, status, made_on, reason)


def _judged(outcome: TurnOutcome, dimension: str) -> Verdict | None:
    if dimension not in outcome.judged:
        return None
    passed, reason = outcome.judged[dimension]
    return Verdict(passed, reason, RULE_JUDGE)


def _decide(failures: list[_Failure], judged: Verdict | None, code_pass: Verdict | None) -> Verdict:
    """Code's failure, else the judge's verdict, else code's pass, else null: never guessed."""
    if failures:
        return Verdict(False, "; ".join(f.reason for f in failures), failures[0].rule)
    if judged is not None and judged.passed is not None:
        return judged
    if code_pass is not None:
        return code_pass
    return judged if judged is not None else Verdict(None, NO_JUDGE, RULE_NO_JUDGE)


def _unreported(dim: str, out: TurnOutcome) -> Verdict | None:
    """A dimension whose evidence the agent does not report: the judge's verdict, else null with why."""
    missing = NEEDS.get(dim)
    if missing not in out.unreported:
        return None
    judged = _judged(out, dim) if dim != "tool_use_correct" else None
    return judged if judged is not None and judged.passed is not None else \
        Verdict(None, UNREPORTED[missing], RULE_UNREPORTED)


def _score_turn(t: int, turn: Turn, out: TurnOutcome, a: _Alignment) -> TurnScore:
    unreported = CALLS in out.unreported  # no call evidence: no call fates, no call failures
    charged = [] if unreported else a.failures.get(t, [])
    fates = () if unreported else tuple(a.fates[(t, e)] for e in range(len(turn.expected_calls)))
    satisfied = all(f.status in (MADE, EARLY) for f in fates)
    verdicts: dict[str, Verdict] = {}
    silent = out.transcript_instrument is not None and not has_words(out.transcript)
    for dim in turn.in_scope():
        mine = [f for f in charged if f.dimension == dim]
        blind = _unreported(dim, out)
        if silent and (dim in WORDS_DIMENSIONS or (blind is not None and NEEDS.get(dim) == CALLS
                                                   and dim != "tool_use_correct")):
            verdicts[dim] = Verdict(False, NOT_SPEECH, RULE_NO_SPEECH)  # the judge has no words to read
        elif blind is not None:
            verdicts[dim] = blind
        elif dim == "tool_use_correct":
            absorbed = [f for f in charged if f.dimension != dim]
            if mine:
                verdicts[dim] = _decide(mine, None, None)
            elif absorbed:
                verdicts[dim] = Verdict(True, f"call failure charged to {absorbed[0].dimension}", RULE_ABSORBED)
            else:
                verdicts[dim] = Verdict(True, f"{len(fates)} required call(s) made" if fates else "no call required",
                                        RULE_CALLS)
        elif dim == "turn_taking":
            verdicts[dim] = turn_taking_verdict(out)
        elif dim == "kb_grounding":
            missing = missing_facts(turn.golden_facts, out.transcript)
            fails = [_Failure(dim, "missing golden fact(s): " + ", ".join(missing), RULE_GOLDEN_FACTS)] if missing else []
            code_pass = Verdict(True, "golden facts present", RULE_GOLDEN_FACTS) if turn.golden_facts else None
            verdicts[dim] = _decide(fails, _judged(out, dim), code_pass)
        elif dim == "state_tracking":
            evidence = a.state_evidence.get(t)
            code_pass = Verdict(True, "state arguments right", RULE_CALLS) if evidence else None
            verdicts[dim] = _decide(mine, _judged(out, dim), code_pass)
        elif dim == "ambiguity_handling":
            code_pass = Verdict(True, "acted without over-clarifying", RULE_CALLS) if fates and satisfied else None
            verdicts[dim] = _decide(mine, _judged(out, dim), code_pass)
        else:  # instruction_following: judged only, and never failed for a missing call
            verdicts[dim] = _decide([], _judged(out, dim), None)
    made = tuple((c, a.used[(t, i)]) for i, c in enumerate(out.calls))
    heard = transcription_errors(out)
    return TurnScore(turn.id, verdicts, turn_taking_verdict(out).passed is False, fates, made,
                     out.interrupted, out.no_response, out.v2v_ms, out.gap_s, out.behaviour, out.quality_mos,
                     out.quality_instrument, out.transcript_instrument, None if heard is None else heard.errors,
                     None if heard is None else heard.ref_words)


def align_outcomes(scenario: Scenario, outcomes: Sequence[TurnOutcome]) -> None:
    """Raise unless there is one outcome per scenario turn, in order."""
    got, want = [o.turn_id for o in outcomes], [t.id for t in scenario.turns]
    if got != want:
        raise ValueError(f"outcomes for turns {got}, scenario {scenario.name} has {want}")


def score_conversation(scenario: Scenario, outcomes: Sequence[TurnOutcome], conversation_id: str = "",
                       end_state: tuple[bool | None, str] | None = None) -> ConversationScore:
    """Score every turn (phase 1, realignment, absorption) and carry the end-state check. What an agent
    does not report is the agent's, not a turn's: a turn that failed before the agent answered is
    scored as blind to its calls as the answered ones, so a rate never comes from failures alone."""
    align_outcomes(scenario, outcomes)
    if any(CALLS in o.unreported for o in outcomes):
        outcomes = [o if CALLS in o.unreported else replace(o, unreported=(*o.unreported, CALLS)) for o in outcomes]
    a = _align(scenario, outcomes)
    turns = tuple(_score_turn(t, turn, out, a) for t, (turn, out) in enumerate(zip(scenario.turns, outcomes)))
    ok, reason = end_state if end_state is not None else (None, "")
    return ConversationScore(conversation_id, scenario.name, turns, ok, reason)
