"""The reference agent (`voxwatch emulate --vendors agent`, voxwatch/providers/emulators/agents/reference.py) for
tests: a short booking trial of clinic-desk whose end state is reached in three turns, and the agent
served on loopback following it."""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Iterator

from voxwatch.cli.emulate import AGENT, AgentOptions, agent_scenario
from voxwatch.conversations.catalog import bundled_root
from voxwatch.conversations.scenario_file import LoadedScenario, dump, load
from voxwatch.foundation.scenario import StateEndpoint
from voxwatch.providers.emulators.server import serve

STATE_ENV = "VOXWATCH_AGENT_REFERENCE_STATE_URL"
BOOKED = {"patient_id": "P-1001", "slot_id": "SHAH-0611-1130", "reason": {"regex": ".*physical.*"}}
FAST = AgentOptions(reply_delay_ms=100.0, end_of_turn_ms=700.0, voice="tone")
"""A quick agent: a 600 ms tone per reply (no words to render), 0.7 s of silence ends the caller's turn (the callers pause up to 0.48 s between sentences)."""


def booking_trial(folder: Path, turns: int = 3) -> LoadedScenario:
    """clinic-desk's first `turns` turns (the third books Elena Alvarez's physical) as a scenario of its
    own in `folder`: its expected end state is the booking added to the initial appointments, and it
    names the reference agent's state endpoint."""
    source = load(bundled_root() / "clinic-desk")
    s = source.scenario
    initial = s.initial_state["appointments"]
    expected = {"appointments": [*initial, BOOKED] if turns >= 3 else list(initial)}
    trial = replace(s, name="clinic-booking", turns=s.turns[:turns], expected_end_state=expected,
                    state_endpoint=StateEndpoint(STATE_ENV, timeout_s=5.0))
    for turn in trial.turns:
        (folder / turn.audio).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source.audio_path(turn), folder / turn.audio)
    dump(trial, folder)
    return load(folder)


@contextlib.contextmanager
def reference_agent(loaded: LoadedScenario, options: AgentOptions = FAST, pcm_rate: int = 16000,
                    token: str | None = None) -> Iterator[str]:
    """The reference agent following `loaded` on loopback; yields its http://127.0.0.1:PORT."""
    scenario = replace(agent_scenario(loaded, options), pcm_rate=pcm_rate, token=token)
    with serve(AGENT, scenario) as url:
        yield url
