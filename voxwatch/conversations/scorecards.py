"""The S2S board's conversation block as text: one conversation's turns, and a scorecard (every
statistic of a set of conversations of one model x scenario x persona, defined in
voxwatch/metrics/conversation_aggregate.py; this only lays them out) per block, in memory or read from
the store's conversation rows. "Board" is kept for the STT/TTS/S2S leaderboards (docs/ARCHITECTURE.md)."""

from __future__ import annotations

from typing import Callable, Collection, Iterable, Sequence

from voxwatch.conversations.records import score_of
from voxwatch.store.conversation_rows import ConversationRow, TurnRow
from voxwatch.conversations.runner import ConversationRun
from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.metrics.conversation_aggregate import Quality, Scorecard, Rate, scorecard
from voxwatch.metrics.preliminary import scorecard_reason
from voxwatch.providers.registry import Registry

MARKS = {True: "pass", False: "FAIL", None: "-"}


def _rate(r: Rate, counted: str = "passed") -> str:
    if r.rate is None:  # below the floor of a rate (voxwatch/metrics/series.py): the count, not a share
        return f"-  ({r.passed}/{r.n} {counted}; too few for a rate)" if r.n else "-  (none in scope)"
    ci = f" [{r.interval[0]:.0%}, {r.interval[1]:.0%}]" if r.interval is not None else ""
    return f"{r.rate:.0%}{ci}  ({r.passed}/{r.n})"


def turns_table(run: ConversationRun) -> str:
    """Per turn: status, the calls made, V2V, the reply's speech quality, and each in-scope dimension's verdict."""
    behaved = any(t.barge_in or t.pause is not None for t in run.turns)
    head = ["turn", "status", "calls", "v2v ms", "MOS"] + (["barge-in stop ms (heard)", "premature"] if behaved else []) \
        + list(DIMENSIONS)
    rows = [head]
    for tr, scored in zip(run.turns, run.score.turns if run.score else [None] * len(run.turns)):
        calls = ",".join(c.name for c in tr.model.calls) if tr.model else ""
        timing = tr.timing
        v2v = f"{timing.v2v_ms:.0f}" if timing is not None and timing.v2v_ms is not None else "-"
        verdicts = scored.verdicts if scored is not None else {}
        acts = []
        if behaved:
            stop = timing.barge_in_stop_ms if timing is not None else None
            heard = timing.barge_in_stop_heard_ms if timing is not None else None
            premature = timing.premature if timing is not None else None
            acts = [("-" if stop is None else f"{stop:.0f} ({heard:.0f})") if tr.barge_in else "",
                    ("-" if premature is None else "yes" if premature else "no") if tr.pause is not None else ""]
        mos = tr.quality.mos if tr.quality is not None else None
        rows.append([tr.turn_id, tr.status, calls or "-", v2v, "-" if mos is None else f"{mos:.2f}"] + acts
                    + [MARKS[verdicts[d].passed] if d in verdicts else "" for d in DIMENSIONS])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def scorecard_text(model_id: str, scenario: str, s: Scorecard, baseline: bool = False) -> str:
    """The board's block for one model on one scenario (one persona: conditions are never pooled);
    a `baseline` (a script, not a model) says so in its heading, preliminary figures on their own line."""
    mark = " [baseline: a script, not a model]" if baseline else ""
    lines = [f"S2S conversation board: {model_id}{mark} on {scenario} ({s.conversations} conversation(s))"]
    if (early := scorecard_reason(s.conversations)) is not None:
        lines.append(f"  preliminary: {early}")
    lines.append(f"  instruction adherence   {_rate(s.adherence)}")
    lines += [f"  {name:<22}  {_rate(rate)}" for name, rate in s.dimensions.items()]
    lines.append(f"  end-state success       {_rate(s.end_state)}")
    lines.append("  pass^k                  " + "  ".join(
        f"k={k}: {'-' if v is None else f'{v:.2f}'}" for k, v in s.pass_hat_k.items()))
    v = s.v2v
    lines.append(f"  V2V per turn            p50 {'-' if v.p50 is None else f'{v.p50:.0f} ms'}, "
                 f"p95 {'-' if v.p95 is None else f'{v.p95:.0f} ms'}  (n {v.n})")
    gap = "-" if s.silence_gap_s is None else f"{s.silence_gap_s * 1000:.0f} ms"
    lines.append(f"  silence-gap latency     {gap}  (mean of gaps >= 0.5 s)")
    lines.append(f"  speech quality (MOS)    {quality_text(s.speech_quality)}")
    if (t := s.transcription).turns:
        wer = "-" if t.wer is None else f"{t.wer * 100:.1f} %"
        lines.append(f"  transcription WER       {wer}  (the reply transcriber on the agent's scripted voice: "
                     f"{t.turns} turns, {t.words} words; {', '.join(t.instruments)})")
    lines.append(f"  interruptions           {_rate(s.interruption, 'interrupted')}")
    lines.append(f"  no response             {_rate(s.no_response, 'unanswered')}")
    if s.barge_in_stop.n or s.barge_in_answered.n:
        b = s.barge_in_stop
        lines.append(f"  barge-in stop latency   p50 {_ms(b.p50)}, p95 {_ms(b.p95)}  (n {b.n})")
        h = s.barge_in_stop_heard
        lines.append(f"    heard (recording)     p50 {_ms(h.p50)}, p95 {_ms(h.p95)}  (n {h.n})")
        lines.append(f"  answered after barge-in {_rate(s.barge_in_answered, 'answered')}")
    if s.premature.n:
        pauses = ", ".join(f"{p:.0f}" for p in s.pause_ms)
        lines.append(f"  premature response      {_rate(s.premature, 'premature')}  in a {pauses} ms mid-turn pause, "
                     f"against V2V p50 {_ms(s.v2v.p50)}")
    return "\n".join(lines)


def quality_text(q: Quality) -> str:
    """A block's speech quality in words: the mean MOS and its interval, the turns scored, the instrument."""
    by = f"; {', '.join(q.instruments)}" if q.instruments else ""
    if q.mos is None:
        return f"-  ({q.n} turns scored; too few for a mean{by})" if q.n else "-  (no turn scored)"
    ci = f" [{q.interval[0]:.2f}, {q.interval[1]:.2f}]" if q.interval is not None else ""
    return f"{q.mos:.2f}{ci}  ({q.n} turns{by})"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


ScorecardKey = tuple[str, str, int, str, str, int, bool, str, str]
"""model, scenario, version, pin, persona, turns held, whole, region, method version: one board
block. Conditions are never pooled: a persona, a trial's length, a region or a method version is
a block of its own."""
SCORECARD_KEY_FIELDS = ("model_id", "scenario", "scenario_version", "scenario_pin", "persona", "turns", "whole", "region",
                    "method_version")
"""The names of a ScorecardKey's parts (the stored columns they come from), for readers that label them."""


def scorecard_key(row: ConversationRow) -> ScorecardKey:
    """The block a stored conversation counts in."""
    return tuple(getattr(row, name) for name in SCORECARD_KEY_FIELDS)  # type: ignore[return-value]


def block_title(key: ScorecardKey) -> str:
    """A block's scenario and conditions in words (the CLI's and the web board's heading)."""
    _, name, version, pin, persona, turns, whole, region, method = key
    trial = "" if whole else f", first {turns} turns (end state not checked)"
    return f"{name}@v{version}#{pin[:12]}{trial}; persona {persona}, region {region}, method v{method}"


def stored_scorecards(conversations: Iterable[tuple[ConversationRow, Sequence[TurnRow]]],
                      shown: Callable[[ConversationRow], bool] = lambda row: not row.emulator
                      ) -> dict[ScorecardKey, Scorecard]:
    """The board's statistics per block, from stored conversations (those `shown` keeps: emulated
    ones left out, as on every board, unless a reader says otherwise), each conversation read back
    into its score (conversation_records.score_of)."""
    groups: dict[ScorecardKey, list] = {}
    for row, turns in conversations:
        if shown(row):
            groups.setdefault(scorecard_key(row), []).append(score_of(row, turns))
    return {key: scorecard(scores) for key, scores in sorted(groups.items())}


def store_scorecards_text(store, since: float | None = None, until: float | None = None,
                     models: Collection[str] = (), registry: Registry | None = None) -> str | None:
    """The S2S conversation board from a store's conversations started since `since` (and before
    `until`, of `models` when given), each baseline of `registry` labelled; None when there are none."""
    boards = stored_scorecards((row, turns) for row, turns in store.conversations(since=since)
                           if (until is None or row.started_at < until) and (not models or row.model_id in models))
    if not boards:
        return None
    baseline = registry.is_baseline if registry is not None else (lambda model_id: False)
    return "\n\n".join(scorecard_text(key[0], block_title(key), summary, baseline(key[0]))
                       for key, summary in boards.items())
