"""The bake-off (/bakeoff, /api/v1/bakeoff, CSV): the same scenario under the same persona against
several agents, side by side.

A bake-off set is one scenario (version and pin) held under one persona, trial length and method
version; each of its lines is one agent (model and region) with the statistics of its block on
the conversation board (scorecards.stored_scorecards' definition, metrics.conversation_aggregate:
rates and V2V with 95 % intervals clustered by conversation). A persona is a condition, so two
personas are two sets, never pooled. The agents are every conversation model: vendor S2S models,
cascades, and a team's own deployed agents (`agent/<name>`), the last also when they answer on a
loopback address (a team's agent on its own machine, or voxwatch's reference agent): their
conversations are stored as held against a local address and kept off the rolling boards, but
here they are what is being compared, marked `loopback`, never presented as a vendor's figures.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass, replace

from voxwatch.boards import leaderboard
from voxwatch.boards.marks import FIELDS as MARK_FIELDS, NOT_JUDGED, judged_dimensions, model_marks, not_judged
from voxwatch.conversations.scorecards import SCORECARD_KEY_FIELDS, ScorecardKey, scorecard_key, stored_scorecards
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics import preliminary
from voxwatch.metrics.conversation_aggregate import Scorecard
from voxwatch.metrics.published import when
from voxwatch.providers.registry import AGENT_VENDOR, Registry

from voxwatch.web.conversation_views import summary_json
from voxwatch.web.source import Conversation, Source

SET_FIELDS = ("scenario", "scenario_version", "scenario_pin", "persona", "turns", "whole", "method_version")
"""What one bake-off set holds fixed: every line was held on these (ScorecardKey less model and region)."""
_LINE_FIELDS = ("model_id", "region")


def is_deployed_agent(model_id: str) -> bool:
    return model_id.split("/", 1)[0] == AGENT_VENDOR


def compared(found: list[Conversation]) -> list[Conversation]:
    """The conversations a bake-off compares: those the site shows, and a deployed agent's on loopback."""
    return [c for c in found if not c[0].emulator or is_deployed_agent(c[0].model_id)]


@dataclass(frozen=True)
class Line:
    key: ScorecardKey
    summary: Scorecard
    loopback: bool
    not_judged: tuple[str, ...] = ()  # dimensions other agents of the set were judged on and this one was not

    def part(self, name: str):
        return self.key[SCORECARD_KEY_FIELDS.index(name)]


@dataclass(frozen=True)
class BakeoffSet:
    fixed: tuple
    title: str
    lines: list[Line]

    def part(self, name: str):
        return self.fixed[SET_FIELDS.index(name)]


def set_title(fixed: dict) -> str:
    """A set's scenario and conditions in words (block_title's, less the model and region its lines differ by)."""
    trial = "" if fixed["whole"] else f", first {fixed['turns']} turns (end state not checked)"
    return (f"{fixed['scenario']}@v{fixed['scenario_version']}#{fixed['scenario_pin'][:12]}{trial}; "
            f"persona {fixed['persona']}, method v{fixed['method_version']}")


def bakeoff_sets(conversations: list[Conversation], scenario: str | None = None,
                 persona: str | None = None) -> list[BakeoffSet]:
    """The sets of these conversations (of one scenario, of one persona, when given), the sets with
    the most agents first; each set's lines by V2V p50 (n/a last), then model."""
    wanted = [(row, turns) for row, turns in conversations
              if (scenario is None or row.scenario == scenario) and (persona is None or row.persona == persona)]
    loopback = {scorecard_key(row) for row, _ in wanted if row.emulator}  # compared() kept only deployed agents' ones
    sets: dict[tuple, list[Line]] = {}
    for key, card in stored_scorecards(wanted, shown=lambda row: True).items():
        fixed = tuple(key[SCORECARD_KEY_FIELDS.index(name)] for name in SET_FIELDS)
        sets.setdefault(fixed, []).append(Line(key, card, key in loopback))
    for fixed, lines in sets.items():
        missing = not_judged({x.key: judged_dimensions(x.summary.dimensions) for x in lines})
        lines[:] = sorted((replace(x, not_judged=missing[x.key]) for x in lines),
                          key=lambda x: (x.summary.v2v.p50 is None, x.summary.v2v.p50 or 0.0, x.key))
    out = [BakeoffSet(fixed, set_title(dict(zip(SET_FIELDS, fixed))), lines) for fixed, lines in sets.items()]
    return sorted(out, key=lambda s: (-len(s.lines), s.fixed))


def bakeoff_document(source: Source, registry: Registry, window: str, scenario: str | None = None,
                     persona: str | None = None) -> dict:
    """Every bake-off set of the window (of one scenario or persona), at the API's precision."""
    found = compared(source.bakeoff_conversations(leaderboard.since(window)))
    sets = bakeoff_sets(found, scenario, persona)
    return {
        "window": window, "scenario": scenario, "persona": persona, "generated_at": when(time.time()),
        "method_version": METHOD_VERSION,
        "scenarios": sorted({row.scenario for row, _ in found}), "personas": sorted({row.persona for row, _ in found}),
        "sets": [{**dict(zip(SET_FIELDS, s.fixed)), "title": s.title, "agents": len(s.lines),
                  "lines": [{**{name: x.part(name) for name in _LINE_FIELDS}, "loopback": x.loopback,
                             "deployed_agent": is_deployed_agent(x.part("model_id")),
                             **model_marks(registry, x.part("model_id"),
                                           preliminary.scorecard_reason(x.summary.conversations), x.loopback,
                                           x.not_judged).fields(judged=True),
                             **summary_json(x.summary)} for x in s.lines]} for s in sets],
    }


RATES = ("adherence", "end_state", "interruption", "no_response")
"""The shares a line shows, each with its denominator: `passed` of `n` decided items."""
_RATE_COLUMNS = {name: (name, f"{name}_low", f"{name}_high", f"{name}_passed", f"{name}_n") for name in RATES}
CSV_COLUMNS = (*SET_FIELDS, *_LINE_FIELDS, "loopback", *MARK_FIELDS, NOT_JUDGED, "conversations",
               *_RATE_COLUMNS["adherence"], *_RATE_COLUMNS["end_state"], "v2v_p50_ms", "v2v_p50_low_ms",
               "v2v_p50_high_ms", "silence_gap_s", *_RATE_COLUMNS["interruption"], *_RATE_COLUMNS["no_response"],
               "quality_mos", "quality_mos_low", "quality_mos_high", "quality_n")


def _rate_cells(name: str, r: dict) -> dict:
    """A rate's CSV cells: the share, its interval where the columns have one, and its denominator."""
    low, high = r["interval"] or (None, None)
    return dict(zip(_RATE_COLUMNS[name], (r["rate"], low, high, r["passed"], r["n"])))


def to_csv(doc: dict) -> str:
    """One line per agent of each set: its marks, each rate with its denominator, the interval of each
    rate and of V2V p50 as _low and _high."""
    out = io.StringIO()
    w = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for s in doc["sets"]:
        for x in s["lines"]:
            v2v_ci = x["v2v"]["p50_ci"] or (None, None)
            quality = x["speech_quality"]
            mos_ci = quality["interval"] or (None, None)
            w.writerow({**{k: s[k] for k in SET_FIELDS}, **{k: x[k] for k in (*_LINE_FIELDS, "loopback", *MARK_FIELDS)},
                        NOT_JUDGED: " ".join(x[NOT_JUDGED]), "conversations": x["conversations"],
                        **{k: v for name in RATES for k, v in _rate_cells(name, x[name]).items()},
                        "v2v_p50_ms": x["v2v"]["p50"], "v2v_p50_low_ms": v2v_ci[0], "v2v_p50_high_ms": v2v_ci[1],
                        "silence_gap_s": x["silence_gap_s"], "quality_mos": quality["mos"],
                        "quality_mos_low": mos_ci[0], "quality_mos_high": mos_ci[1], "quality_n": quality["n"]})
    return out.getvalue()
