"""A hostile deployed agent (tests/support/hostile_agent.py, real loopback servers) ends in a stated failure,
within its time bound and with memory flat: what it sends is bounded on the line (one message's size, audio
per turn and per call, audio messages per turn, other messages per second, the handshake), its state
endpoint is bounded (the whole request's time, the body's size), nothing it echoes keeps a secret, and a
call that fails never passes its end state (issue 43, part 3)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from support.hostile_agent import HostileState, hostile_agent
from support.processes import REPO, cli_in_process, kept_env, run_cli
from support.reference_agent import STATE_ENV, booking_trial, reference_agent
from voxwatch.conversations.runner import NO_STATE, NOTHING_ANSWERED, ConversationRun, TurnRun, _end_state
from voxwatch.conversations.catalog import bundled_root
from voxwatch.conversations.scenario_file import ScenarioError, load, parse, to_record
from voxwatch.conversations.state_endpoint import MAX_STATE_BYTES, endpoint_end_state
from voxwatch.foundation.conversation import CALLS, ModelTurn
from voxwatch.foundation.events import Timeline
from voxwatch.foundation.scenario import StateEndpoint
from voxwatch.providers.agents.line import LineBounds, url_variable
from voxwatch.providers.agents.pcm_ws import PcmAgent
from voxwatch.providers.agents.twilio import TwilioAgent
from voxwatch.providers.base import ProviderError
from voxwatch.providers.keys import configured_secrets

REFERENCE = REPO / "voxwatch" / "providers" / "emulators" / "agents" / "reference_agents.toml"
MiB = 1 << 20


async def _call(agent, turn_s: float = 0.2) -> tuple[ProviderError | None, float]:
    """One call with `agent`: the caller's turn (`turn_s` of quiet audio, paced), then its reply awaited
    (10 s at most); what failed it and how long the whole call took."""
    started = time.monotonic()
    timeline = Timeline()
    try:
        line = await agent.converse(timeline, None)
    except ProviderError as exc:
        return exc, time.monotonic() - started
    error = None
    try:
        line.start_turn(timeline)
        for _ in range(int(turn_s / 0.02)):
            await line.send_audio(b"\x10\x00" * 320)
            await asyncio.sleep(0.02)
        await line.end_audio()
        await asyncio.wait_for(line.respond(None), 10)
    except ProviderError as exc:
        error = exc
    finally:
        await line.aclose()
    return error, time.monotonic() - started


def _hostile(monkeypatch, url: str, transport=TwilioAgent, **bounds):
    monkeypatch.setenv(url_variable("hostile"), url)
    return transport(SimpleNamespace(id="agent/hostile", sample_rate=16000), LineBounds(**bounds))


def _peak_growth_mib(work):
    """`work()`'s result and how far it raised this process's peak resident memory, in MiB: the peak
    (VmHWM) is reset to the present (VmRSS) first, so what earlier tests used does not count."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    before = _status("VmRSS")
    result = work()
    return result, (_status("VmHWM") - before) / 1024


def _status(field: str) -> int:
    return int(re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M).group(1))


def _bounded(agent) -> tuple[ProviderError | None, float, float]:
    """`_call`, and how far it raised the peak resident memory (MiB)."""
    (error, took), growth = _peak_growth_mib(lambda: asyncio.run(_call(agent)))
    return error, took, growth


@pytest.mark.parametrize(("path", "says"), [
    ("/twilio/huge", "the agent sent a message over 1048576 bytes"),
    ("/pcm/huge", "the agent sent a message over 1048576 bytes"),
    ("/twilio/flood", "the agent sent over 60 s of audio on one turn"),
    ("/pcm/flood", "the agent sent over 60 s of audio on one turn"),
    ("/twilio/crumbs", "the agent sent over 6000 audio messages on one turn"),
    ("/pcm/crumbs", "the agent sent over 6000 audio messages on one turn"),
    ("/twilio/clears", "the agent sent over 200 messages other than audio in one second"),
    ("/twilio/marks", "the agent sent over 200 messages other than audio in one second"),
    ("/pcm/texts", "the agent sent over 200 messages other than audio in one second"),
])
def test_an_agent_past_a_bound_of_the_line_fails_its_turn_malformed_at_once_with_memory_flat(monkeypatch, path, says):
    """The documented default bounds, each met by the issue's hostile case (a 50 MB frame was 3.7 GB and
    no answer after 240 s; audio at 3 MB/s a traceback; 3,000 clears 3.5 GB): a stated failure in seconds."""
    with hostile_agent() as url:
        agent = _hostile(monkeypatch, url + path, PcmAgent if path.startswith("/pcm") else TwilioAgent)
        error, took, peak = _bounded(agent)
    assert error is not None and error.status == "malformed", error
    assert str(error) == f"{says} (a bound of the line: docs/CONVERSATIONS.md)"
    assert took < 8.0  # the caller's 0.2 s turn and the act: never the 10 s wait for a reply
    assert peak < 64, f"{peak:.0f} MiB more"  # the bounds' worth (60 s of 8 kHz audio is 1 MB), not the flood's


def test_a_call_is_bounded_by_its_audio_across_turns_and_the_handshake_by_its_time(monkeypatch):
    with hostile_agent() as url:
        over_call, _ = asyncio.run(_call(_hostile(monkeypatch, url + "/twilio/flood", turn_audio_s=600, call_audio_s=3)))
        hung, hung_took = asyncio.run(_call(_hostile(monkeypatch, url + "/hang", handshake_s=0.5)))
    assert (over_call.status, str(over_call)) == ("malformed", "the agent sent over 3 s of audio on one call "
                                                              "(a bound of the line: docs/CONVERSATIONS.md)")
    assert hung.status == "disconnected" and str(hung) == "cannot connect to agent hostile: no handshake within 0.5 s"
    assert hung_took < 3.0


# --- the state endpoint ------------------------------------------------------------------------------

EXPECTED = {"appointments": [{"patient_id": "P-1"}]}


def _state(monkeypatch, server: HostileState, path: str, timeout_s: float = 5.0, token: str | None = None):
    monkeypatch.setenv("VOXWATCH_AGENT_HOSTILE_STATE_URL", server.url(path))
    if token is not None:
        monkeypatch.setenv("VOXWATCH_AGENT_HOSTILE_STATE_TOKEN", token)
    endpoint = StateEndpoint("VOXWATCH_AGENT_HOSTILE_STATE_URL",
                             None if token is None else "VOXWATCH_AGENT_HOSTILE_STATE_TOKEN", timeout_s)
    started = time.monotonic()
    (_, verdict), peak = _peak_growth_mib(lambda: asyncio.run(endpoint_end_state(endpoint, EXPECTED,
                                                                                 configured_secrets())))
    return verdict, time.monotonic() - started, peak


def test_the_state_endpoint_is_bounded_by_the_whole_requests_time_and_the_bodys_size(monkeypatch):
    with HostileState() as server:
        drip = _state(monkeypatch, server, "/drip", timeout_s=1.0)  # one byte every 0.2 s: each read in time
        endless = _state(monkeypatch, server, "/endless")
        huge = _state(monkeypatch, server, "/huge")  # 200 MB, declared
        chunked = _state(monkeypatch, server, "/huge-chunked")  # 200 MB, undeclared
    assert drip[0] == (False, "state endpoint: no answer within 1 s") and drip[1] < 3.0
    assert MAX_STATE_BYTES == MiB
    for verdict, took, peak in (endless, huge, chunked):
        assert verdict == (False, "state endpoint: the answer is over 1 MiB")
        assert took < 4.0 and peak < 16, (took, peak)


def test_what_the_state_endpoint_echoes_is_stored_without_any_configured_secret(monkeypatch):
    monkeypatch.setenv("VOXWATCH_OPENAI_API_KEY", "sk-live-" + "k" * 40)
    token = "state-tok-" + "t" * 300  # longer than what a reason shows: cut out before it is shortened
    with HostileState() as server:
        verdict, _, _ = _state(monkeypatch, server, "/echo", token=token)
    ok, reason = verdict
    assert not ok and reason.startswith("state endpoint: appointments: no record matches {'patient_id': 'P-1'}; "
                                        'it answered appointments: [{"seen": "Bearer ***"}]')
    assert "tok-" not in reason and "sk-live" not in reason


def test_every_configured_secret_is_one_the_scrubber_is_given():
    env = {"VOXWATCH_OPENAI_API_KEY": "sk-1", "VOXWATCH_AGENT_DESK_TOKEN": "t-2", "VOXWATCH_AGENT_DESK_STATE_TOKEN": "t-3",
           "VOXWATCH_GRAFANA_TOKEN": "g-4", "VOXWATCH_PG_WEB_PASSWORD": "p-5", "VOXWATCH_AGENT_DESK_URL": "ws://x",
           "VOXWATCH_JUDGE_API_KEY": " ", "OPENAI_API_KEY": "not-ours"}
    assert sorted(s.reveal() for s in configured_secrets(env)) == ["g-4", "p-5", "sk-1", "t-2", "t-3"]


def test_a_scenario_may_name_only_the_agents_own_variable_as_its_token():
    scenario = load(bundled_root() / "clinic-desk").scenario
    record = json.loads(json.dumps(to_record(replace(scenario, state_endpoint=StateEndpoint("VOXWATCH_AGENT_DESK_STATE_URL")))))
    for name in ("VOXWATCH_AGENT_DESK_STATE_TOKEN", "VOXWATCH_AGENT_DESK_TOKEN"):
        record["state_endpoint"]["token_env"] = name
        assert parse(record, "desk/scenario.json").state_endpoint.token_env == name
    for name in ("VOXWATCH_OPENAI_API_KEY", "VOXWATCH_GRAFANA_TOKEN", "AWS_SECRET_ACCESS_KEY", "VOXWATCH_AGENT_DESK_URL"):
        record["state_endpoint"]["token_env"] = name
        with pytest.raises(ScenarioError) as refused:
            parse(record, "desk/scenario.json")
        assert str(refused.value) == (f"desk/scenario.json: state_endpoint.token_env: {name!r}: expected the agent's own "
                                      "variable, VOXWATCH_AGENT_<NAME>_TOKEN (no other secret is sent)")


# --- failures never pass ---------------------------------------------------------------------------


def test_an_agents_end_state_is_its_endpoints_or_null_and_a_conversation_with_no_answered_turn_fails(trial):
    scenario = replace(trial.scenario, state_endpoint=None)
    answered = ConversationRun("c1", "agent/desk", "x", "0" * 64,
                               [TurnRun(t.id, Timeline(), b"", model=ModelTurn("ok")) for t in scenario.turns],
                               end_state=scenario.initial_state)  # the simulated backend, never called
    # the simulated backend (which the agent never touched) would say "end state matches": never asked
    assert asyncio.run(_end_state(replace(answered, unreported=(CALLS,)), scenario)) == (None, NO_STATE)
    assert asyncio.run(_end_state(answered, scenario)) == (True, "end state matches")
    failed = ConversationRun("c2", "agent/desk", "x", "0" * 64,
                             [TurnRun(t.id, Timeline(), b"", "malformed", "the agent sent ...") for t in scenario.turns],
                             end_state=scenario.initial_state)
    for unreported in ((CALLS,), ()):  # a vendor model's too: a state no answered turn reached is no pass
        assert asyncio.run(_end_state(replace(failed, unreported=unreported), scenario)) == \
            (False, f"{NOTHING_ANSWERED} (the agent sent ...)")


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    """clinic-desk's first turn as a whole scenario: its expected end state is the initial one, which
    the simulated backend always 'reaches'."""
    return booking_trial(tmp_path_factory.mktemp("scenarios") / "clinic-booking", turns=1)


def _peak_rss_cli(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float, float]:
    """`voxwatch ARGS` in a process of its own: its result, its peak resident memory (VmHWM, MiB) and wall time."""
    code = ("import runpy, sys\n"
            "sys.argv = ['voxwatch', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('voxwatch.cli', run_name='__main__')\n"
            "finally:\n"
            "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
            "    print('peak', hwm.split()[1], file=sys.stderr)\n")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env={**kept_env(), **env},
                          capture_output=True, text=True, timeout=300)
    took = time.monotonic() - started
    peak = re.search(r"^peak (\d+)$", proc.stderr, re.M)
    return proc, (int(peak.group(1)) / 1024 if peak else float("inf")), took


@pytest.mark.e2e
@pytest.mark.parametrize("act", ["huge", "flood"])
def test_scenarios_run_against_a_hostile_agent_says_why_in_bounded_time_and_memory_and_never_passes(trial, act):
    with hostile_agent() as url:
        env = {"VOXWATCH_REGISTRY_FILES": str(REFERENCE), url_variable("reference-twilio"): f"{url}/twilio/{act}",
               "VOXWATCH_SCENARIOS_DIR": str(trial.folder.parent), STATE_ENV: "http://127.0.0.1:9/state"}
        proc, peak, took = _peak_rss_cli(["scenarios", "run", "clinic-booking", "--model", "agent/reference-twilio"],
                                         env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "1 turns (1 failed)" in proc.stdout and re.search(r"^t01 +malformed ", proc.stdout, re.M), proc.stdout
    assert re.search(r"end-state success +-  \(0/1 passed", proc.stdout), proc.stdout
    assert "k=1: 0.00" in proc.stdout  # the initial state the simulated backend 'reached' is no pass
    assert peak < 300, f"peak {peak:.0f} MiB"
    assert took < 120, took


def test_scenarios_run_states_a_call_that_opens_no_session_and_never_tracebacks(trial):
    with hostile_agent() as url:
        for path, says in (("/401", "auth_error"), ("/500", "server_error"),
                           ("/redirect", "cannot connect to agent reference-twilio: SecurityError")):
            env = {"VOXWATCH_REGISTRY_FILES": str(REFERENCE), url_variable("reference-twilio"): url + path,
                   "VOXWATCH_SCENARIOS_DIR": str(trial.folder.parent)}
            done = cli_in_process("scenarios", "run", "clinic-booking", "--model", "agent/reference-twilio", env=env)
            assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
            assert "ended (no session: " in done.stdout and says in done.stdout, done.stdout
            assert "k=1: -" in done.stdout  # no conversation held: nothing passes


@pytest.mark.realtime
def test_an_answered_agent_whose_endpoint_is_hostile_fails_its_end_state_with_the_reason(trial, monkeypatch):
    """The reference agent answers; its state endpoint sends an endless body: the end state fails, said."""
    from voxwatch.conversations.runner import run_conversation, ConversationSettings
    from voxwatch.providers.registry import Registry

    with reference_agent(trial) as url, HostileState() as state:
        monkeypatch.setenv(url_variable("reference-twilio"), url.replace("http://", "ws://") + "/twilio")
        monkeypatch.setenv(STATE_ENV, state.url("/endless"))
        registry = Registry.default(files=[REFERENCE])
        model = registry.resolve("agent/reference-twilio")
        run = asyncio.run(run_conversation(registry.create(model), model.id, model.vendor, trial, ConversationSettings()))
    assert [t.status for t in run.turns] == ["ok"]
    assert (run.score.end_state_ok, run.score.end_state_reason) == (False, "state endpoint: the answer is over 1 MiB")



@pytest.mark.e2e
def test_a_stored_conversation_whose_every_turn_failed_is_no_pass_on_the_bakeoff(trial, tmp_path):
    """`voxwatch run` holds the trial (expected end state = the initial one) with an agent whose every
    turn breaks a bound and whose state endpoint refuses: stored end_state_ok false with the reason, and
    /api/v1/bakeoff counts it 0 of 1."""
    from starlette.testclient import TestClient

    from voxwatch.providers.registry import Registry
    from voxwatch.store import open_store
    from voxwatch.web.app import create_app

    url = f"sqlite:///{tmp_path / 'store.db'}"
    with hostile_agent() as agent:
        env = {"VOXWATCH_REGISTRY_FILES": str(REFERENCE), url_variable("reference-twilio"): f"{agent}/twilio/clears",
               STATE_ENV: "http://127.0.0.1:9/state", "VOXWATCH_SCENARIOS_DIR": str(trial.folder.parent),
               "VOXWATCH_BOARDS_S2S_CONVERSATION_MODELS": "agent/reference-twilio",
               "VOXWATCH_BOARDS_S2S_SCENARIOS": "clinic-booking"}
        done = run_cli("run", "--board", "s2s", "--conversation-turns", "0", "--store", url, "--no-progress",
                       env=env, check=False)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    store = open_store(url, create=False)
    try:
        [(row, turns)] = store.conversations()
    finally:
        store.close()
    assert [t.status for t in turns] == ["malformed"]
    assert turns[0].reason == "the agent sent over 200 messages other than audio in one second (a bound of the " \
                              "line: docs/CONVERSATIONS.md)"
    assert (row.end_state_ok, row.end_state_reason) == (False, f"{NOTHING_ANSWERED} ({turns[0].reason})")
    client = TestClient(create_app(url, Registry.default(files=[REFERENCE])))
    [line] = [x for s in client.get("/api/v1/bakeoff").json()["sets"] for x in s["lines"]]
    assert (line["model_id"], line["end_state"]["passed"], line["end_state"]["n"]) == ("agent/reference-twilio", 0, 1)


def test_a_conversation_that_opened_no_session_is_stored_with_its_end_state_null_and_why(trial):
    from voxwatch.conversations.records import rows_of

    reason = "no session: auth_error: agent reference-twilio refused the key: HTTP 401"
    run = ConversationRun("c3", "agent/reference-twilio", trial.identity, trial.pin,
                          [TurnRun(t.id, Timeline(), b"", "not_run", reason) for t in trial.scenario.turns],
                          status="ended", reason=reason)
    row, _ = rows_of(run, trial, run_id="r1", region="eu", started_at=0.0, finished_at=1.0, whole=True)
    assert (row.end_state_ok, row.end_state_reason) == (None, reason)
    trial_row, _ = rows_of(run, trial, run_id="r1", region="eu", started_at=0.0, finished_at=1.0, whole=False)
    assert (trial_row.end_state_ok, trial_row.end_state_reason) == (None, "")  # a trial never checks it
