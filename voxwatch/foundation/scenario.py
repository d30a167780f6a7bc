"""A scenario: one scripted multi-turn voice-agent conversation, as data (../shared/CONVERSATIONS.md).

Audio Arena calls these "benchmarks"; here they are scenarios, so they are not confused with
`benchmarks/`. A scenario is a folder holding `scenario.json` (this model, serialised) and the
caller's audio, one WAV per turn, synthesized once with one fixed voice and pinned by sha256 so
that every model hears identical audio. The file's own sha256 and `version` name what was run.

Everything a conversation is scored against lives here: the tools the model may call (JSON
schema per function), the knowledge base, each turn's golden facts and required calls (with
flexible argument matching and the scripted result the tool returns), the turn's category tags,
and the expected end state of the small simulated backend the tools change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCENARIO_SCHEMA = 1

DIMENSIONS = ("tool_use_correct", "instruction_following", "kb_grounding", "state_tracking",
              "ambiguity_handling", "turn_taking")
"""Every scored dimension of a turn (CONVERSATIONS.md "Scoring each turn")."""

ALWAYS_IN_SCOPE = ("tool_use_correct", "instruction_following", "kb_grounding", "turn_taking")
TAGGED_ONLY = ("state_tracking", "ambiguity_handling")
"""Dimensions scored only on turns whose tags name them."""

MATCHERS = ("exact", "any", "one_of", "regex", "approx", "set")
"""How an expected argument (or end-state field) matches a value: a plain JSON value is `exact`
(strings compared case- and whitespace-insensitively); otherwise an object with one of these keys:
`{"any": true}`, `{"one_of": [...]}`, `{"regex": "..."}` (full match, case-insensitive),
`{"approx": x, "tolerance": t}` (numbers within t), `{"set": [...]}` (a list in any order, each
element matched exactly), `{"exact": v}` (v compared exactly, for objects and lists)."""


@dataclass(frozen=True)
class Tool:
    """A function the model may call. `effect` says what a call does to the simulated backend:
    {"op": "insert" | "update" | "delete", "table": name, "key": argument naming the record};
    None for a tool that only reads."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments (an object schema)
    effect: dict[str, Any] | None = None


@dataclass(frozen=True)
class Document:
    """One knowledge base document, given to the model in its instructions."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class ExpectedCall:
    """A function call the turn requires: its name, its arguments (each value a matcher; arguments
    not listed are not checked) and the result the simulated backend returns when it is made.
    `state_args` names the arguments whose values come from an earlier turn (a wrong one there is
    forgotten state, charged to `state_tracking` when the turn is tagged for it)."""

    name: str
    args: dict[str, Any]
    result: Any
    state_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Turn:
    """One caller turn, in order. `text` is what the caller says (and what its audio says);
    `golden_facts` must appear in the model's reply (normalized match); `expected_calls` must
    be made on this turn; `tags` name the categories (`state_tracking`, `ambiguity_handling`,
    `correction`, `kb`, `trap`, ...); `reply` is a correct agent's words for the turn: what the
    scripted baseline says, and a reference for the judge."""

    id: str
    text: str
    audio: str  # path relative to the scenario folder
    audio_sha256: str
    reply: str
    golden_facts: tuple[str, ...] = ()
    expected_calls: tuple[ExpectedCall, ...] = ()
    tags: tuple[str, ...] = ()

    def in_scope(self) -> tuple[str, ...]:
        """The dimensions this turn is scored on."""
        return ALWAYS_IN_SCOPE + tuple(d for d in TAGGED_ONLY if d in self.tags)


@dataclass(frozen=True)
class StateEndpoint:
    """Where a deployed agent's own backend tells its state after a call (Coval's API state check):
    an HTTP GET whose URL, and optional bearer token, are read from the environment variables named
    here (never from the file: a scenario is shared, a deployment is not); its JSON answer (table ->
    records) is held against `expected_end_state`."""

    url_env: str
    token_env: str | None = None
    timeout_s: float = 10.0


@dataclass(frozen=True)
class Scenario:
    name: str
    version: int
    domain: str
    description: str
    system_prompt: str
    voice: str  # the eSpeak NG voice the caller's audio was synthesized with (or "recorded")
    sample_rate: int
    tools: tuple[Tool, ...]
    knowledge_base: tuple[Document, ...]
    initial_state: dict[str, list[dict[str, Any]]]  # table -> records
    expected_end_state: dict[str, list[dict[str, Any]]]  # table -> records (values are matchers)
    turns: tuple[Turn, ...]
    schema: int = SCENARIO_SCHEMA
    extra: dict[str, Any] = field(default_factory=dict)
    state_endpoint: StateEndpoint | None = None  # a deployed agent's backend to ask after the call

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)
