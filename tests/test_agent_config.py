"""A team's own deployed agent, without a call: how it is registered and found (the registry's
transport fields, its environment variables), what a scenario's state endpoint is and how its answer
is read and judged (a loopback HTTP server), how an agent that reports no calls or words is scored,
and the line's 16 -> 8 kHz converter. The calls themselves: test_agent_transports.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from support.loopback_http import Loopback
from voxwatch.config import ConfigError, load as load_config
from voxwatch.conversations.runner import NO_STATE, ConversationRun, TurnRun, _end_state
from voxwatch.conversations.scenario_file import ScenarioError, parse, to_record
from voxwatch.conversations.state_endpoint import endpoint_end_state
from voxwatch.foundation.conversation import CALLS, WORDS, ModelTurn
from voxwatch.foundation.events import Timeline
from voxwatch.foundation.scenario import ExpectedCall, Scenario, StateEndpoint, Tool, Turn
from voxwatch.metrics.conversation import RULE_NO_SPEECH, RULE_UNREPORTED, UNREPORTED, TurnOutcome, score_conversation
from voxwatch.metrics.conversation_aggregate import scorecard
from voxwatch.foundation.frame_rates import Halver
from voxwatch.providers.agents.line import AgentEndpoint, token_variable, url_variable
from voxwatch.providers.keys import model_secrets
from voxwatch.providers.registry import Registry, RegistryError

REFERENCE = Path(str(files("voxwatch.providers.emulators.agents").joinpath("reference_agents.toml")))
AGENT = """
[[model]]
id = "agent/front-desk"
board = "s2s"
vendor = "{vendor}"
protocol = "s2s"
status = "active"
region = "eu"
needs_key = false
exclusions = []
checked = 2026-12-05
source = "our deployment"
session_limit_unknown = "our agent keeps a call open"
{extra}
"""


def _user_registry(tmp_path: Path, extra: str, vendor: str = "agent") -> Registry:
    path = tmp_path / "agents.toml"
    path.write_text(AGENT.format(vendor=vendor, extra=extra))
    return Registry.default(files=[path])


def test_a_registered_agent_names_its_transport_which_picks_its_adapter(tmp_path):
    reference = Registry.default(files=[REFERENCE])
    assert reference.resolve("agent/reference-twilio").adapter == "voxwatch.providers.agents.twilio:TwilioAgent"
    pcm = reference.resolve("agent/reference-pcm")
    assert (pcm.transport, pcm.sample_rate, pcm.adapter) == ("pcm-ws", 16000, "voxwatch.providers.agents.pcm_ws:PcmAgent")
    own = _user_registry(tmp_path, 'transport = "pcm-ws"\nsample_rate = 8000').resolve("agent/front-desk")
    assert (own.sample_rate, own.needs_key, own.key_is_set()) == (8000, False, True)


@pytest.mark.parametrize("extra, vendor, says", [
    ("", "agent", "a deployed agent needs transport, one of twilio-media-streams, pcm-ws"),
    ('transport = "sip"', "agent", "got 'sip'"),
    ('transport = "pcm-ws"', "agent", "sample_rate (the PCM's rate"),
    ('transport = "twilio-media-streams"\nsample_rate = 8000', "agent", "goes with transport \"pcm-ws\""),
    ('transport = "pcm-ws"\nsample_rate = 44100', "agent", "sample_rate must be one of (8000, 16000, 24000)"),
    ('transport = "pcm-ws"\nsample_rate = 16000\nadapter = "voxwatch.providers.s2s.cascade:LocalScriptedCascade"', "agent",
     "adapter is voxwatch.providers.agents.pcm_ws:PcmAgent (leave adapter out)"),
    ('transport = "pcm-ws"\nsample_rate = 16000\nadapter = "x:Y"', "local", "are a deployed agent's"),
])
def test_an_agent_entry_that_cannot_be_reached_is_refused_in_one_line(tmp_path, extra, vendor, says):
    with pytest.raises(RegistryError) as refused:
        _user_registry(tmp_path, extra, vendor)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_the_agents_address_and_token_come_from_the_environment_only(monkeypatch):
    model = Registry.default(files=[REFERENCE]).resolve("agent/reference-twilio")
    assert url_variable("reference-twilio") == "VOXWATCH_AGENT_REFERENCE_TWILIO_URL"
    with pytest.raises(RegistryError, match="set VOXWATCH_AGENT_REFERENCE_TWILIO_URL to the agent's WebSocket address"):
        AgentEndpoint.of(model.id)
    monkeypatch.setenv(url_variable("reference-twilio"), "https://agent.example/stream")
    with pytest.raises(RegistryError, match=r"must be ws\(s\)://"):
        AgentEndpoint.of(model.id)
    monkeypatch.setenv(url_variable("reference-twilio"), "wss://agent.example/stream")
    assert AgentEndpoint.of(model.id).headers() == {}
    monkeypatch.setenv(token_variable("reference-twilio"), "tok-31c")
    endpoint = AgentEndpoint.of(model.id)
    assert endpoint.headers() == {"Authorization": "Bearer tok-31c"} and "tok-31c" not in repr(endpoint)
    assert [s.reveal() for s in model_secrets(model)] == ["tok-31c"]  # cut out of every stored reason


def test_the_configuration_knows_the_agents_variables_and_refuses_a_misspelt_one():
    load_config(environ={"VOXWATCH_AGENT_FRONT_DESK_URL": "wss://agent.example/stream",
                         "VOXWATCH_AGENT_FRONT_DESK_TOKEN": "t", "VOXWATCH_AGENT_FRONT_DESK_STATE_URL": "https://x.example/s"})
    with pytest.raises(ConfigError, match="VOXWATCH_AGENT_FRONT_DESK_ULR: unknown variable"):
        load_config(environ={"VOXWATCH_AGENT_FRONT_DESK_ULR": "wss://agent.example/stream"})


# --- the scenario's state endpoint -------------------------------------------------------------

TOOLS = (Tool("book", "book a table", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
              {"op": "insert", "table": "bookings", "key": "name"}),)
BOOK = ExpectedCall("book", {"name": "Ada"}, {"ok": True})


def _scenario(**kw) -> Scenario:
    turns = (Turn("t1", "a table for Ada", "audio/t1.wav", "0" * 64, "Booked.", ("booked",), (BOOK,)),)
    return Scenario(name="bistro", version=1, domain="restaurant", description="d", system_prompt="p",
                    voice="en-us", sample_rate=16000, tools=TOOLS, knowledge_base=(), initial_state={"bookings": []},
                    expected_end_state={"bookings": [{"name": "Ada"}]}, turns=turns, **kw)


def test_a_scenario_names_its_state_endpoint_by_variables_and_keeps_it_through_its_file():
    endpoint = StateEndpoint("BISTRO_STATE_URL", "VOXWATCH_AGENT_BISTRO_STATE_TOKEN", 3.0)
    record = json.loads(json.dumps(to_record(_scenario(state_endpoint=endpoint))))
    assert record["state_endpoint"] == {"url_env": "BISTRO_STATE_URL", "token_env": "VOXWATCH_AGENT_BISTRO_STATE_TOKEN", "timeout_s": 3.0}
    assert parse(record, "bistro/scenario.json").state_endpoint == endpoint
    for bad, says in (({"url_env": "https://x.example"}, "state_endpoint.url_env: 'https://x.example': expected an "
                                                          "environment variable's name"),
                      ({"url_env": "S", "timeout_s": 0}, "state_endpoint.timeout_s: expected seconds above 0"),
                      ({"url_env": "S", "url": "https://x.example"}, "state_endpoint: unknown field 'url'")):
        with pytest.raises(ScenarioError, match=says):
            parse({**record, "state_endpoint": bad}, "bistro/scenario.json")


class _State(BaseHTTPRequestHandler):
    """Answers GET by the path: /ok, /wrong, /refused, /not-json, /list, /not-records, /slow, /bearer."""

    def do_GET(self):
        answers = {"/ok": (200, {"bookings": [{"name": "ada", "party": 2}]}),
                   "/wrong": (200, {"bookings": [{"name": "Grace", "party": 2}]}),
                   "/refused": (503, {"error": "down"}), "/not-json": (200, "<html>"),
                   "/list": (200, [{"name": "Ada"}]), "/not-records": (200, {"bookings": "Ada"})}
        if self.path == "/slow":
            time.sleep(1.0)
        if self.path == "/bearer":
            ok = self.headers.get("Authorization") == "Bearer s3cret-tok"
            status, body = (200, {"bookings": [{"name": "Ada"}]}) if ok else (401, {})
        else:
            status, body = answers.get(self.path, (404, {}))
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # /slow: the client has given up
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_the_state_endpoints_answer_is_the_verdict_and_what_keeps_it_unread_is_a_stated_failure(monkeypatch):
    expected = _scenario().expected_end_state
    endpoint = StateEndpoint("BISTRO_STATE_URL", timeout_s=0.3)
    verdicts = {}
    with Loopback(_State) as server:
        for path in ("/ok", "/wrong", "/refused", "/not-json", "/list", "/not-records", "/slow"):
            monkeypatch.setenv("BISTRO_STATE_URL", server.url(path))
            verdicts[path] = asyncio.run(endpoint_end_state(endpoint, expected))[1]
        monkeypatch.setenv("BISTRO_STATE_URL", server.url("/bearer"))
        monkeypatch.setenv("VOXWATCH_AGENT_BISTRO_STATE_TOKEN", "s3cret-tok")
        bearer = asyncio.run(endpoint_end_state(replace(endpoint, token_env="VOXWATCH_AGENT_BISTRO_STATE_TOKEN"), expected))
        monkeypatch.delenv("VOXWATCH_AGENT_BISTRO_STATE_TOKEN")
        no_token = asyncio.run(endpoint_end_state(replace(endpoint, token_env="VOXWATCH_AGENT_BISTRO_STATE_TOKEN"), expected))[1]
    monkeypatch.delenv("BISTRO_STATE_URL")
    unset = asyncio.run(endpoint_end_state(endpoint, expected))[1]
    assert verdicts["/ok"] == (True, "state endpoint: end state matches")
    assert verdicts["/wrong"] == (False, "state endpoint: bookings: no record matches {'name': 'Ada'}; it answered "
                                         'bookings: [{"name": "Grace", "party": 2}]')
    assert verdicts["/refused"] == (False, "state endpoint refused: HTTP 503")
    assert verdicts["/not-json"] == (False, "state endpoint: the answer is not JSON")
    assert verdicts["/list"] == (False, "state endpoint: the answer is not an object of tables (table -> list of records)")
    assert verdicts["/not-records"] == (False, "state endpoint: table 'bookings' is not a list of records (objects)")
    assert verdicts["/slow"] == (False, "state endpoint: no answer within 0.3 s")
    assert bearer == ({"bookings": [{"name": "Ada"}]}, (True, "state endpoint: end state matches"))
    assert no_token == (False, "state endpoint: VOXWATCH_AGENT_BISTRO_STATE_TOKEN is not set")
    assert unset == (False, "state endpoint: BISTRO_STATE_URL is not set")
    assert not any("127.0.0.1" in reason or "s3cret" in reason for _, reason in verdicts.values())  # never the URL


def test_an_agent_that_reports_no_calls_has_no_end_state_without_an_endpoint():
    scenario = _scenario()
    blind = ModelTurn(unreported=(CALLS, WORDS))
    run = ConversationRun("c1", "agent/front-desk", "bistro@v1", "0" * 64, [TurnRun("t1", Timeline(), b"", model=blind)])
    assert asyncio.run(_end_state(run, scenario)) == (None, NO_STATE)
    run.turns[0].model = ModelTurn("Booked.")  # an agent whose calls voxwatch answered: its simulated backend's
    assert asyncio.run(_end_state(run, scenario)) == (False, "bookings: 0 records, expected 1")


def test_an_agent_that_reports_no_calls_or_words_is_null_on_what_needs_them_not_failed():
    scenario = _scenario()
    blind = score_conversation(scenario, [TurnOutcome("t1", unreported=(CALLS, WORDS), interrupted=False,
                                                      no_response=False, long_silence=False,
                                                      judged={"instruction_following": (True, "polite")})])
    seen = score_conversation(scenario, [TurnOutcome("t1", interrupted=False, no_response=False, long_silence=False)])
    verdicts = blind.turns[0].verdicts
    assert (verdicts["tool_use_correct"].passed, verdicts["tool_use_correct"].reason,
            verdicts["tool_use_correct"].rule) == (None, UNREPORTED[CALLS], RULE_UNREPORTED)
    assert (verdicts["kb_grounding"].passed, verdicts["kb_grounding"].reason) == (None, UNREPORTED[WORDS])
    assert verdicts["instruction_following"].passed is True and verdicts["turn_taking"].passed is True
    assert blind.turns[0].expected == ()  # no call evidence, no call fates
    # the same silence from an agent whose calls voxwatch sees is a missing call and missing facts
    assert seen.turns[0].verdicts["tool_use_correct"].passed is False
    assert seen.turns[0].verdicts["kb_grounding"].passed is False


def _two_turns() -> Scenario:
    second = Turn("t2", "at eight", "audio/t2.wav", "0" * 64, "Done, Ada, at eight.", ("eight",))
    return replace(_scenario(), turns=(*_scenario().turns, second))


def test_an_agents_failed_turn_is_as_blind_to_its_calls_as_its_answered_ones():
    """A rate never comes from failures alone: the turn that failed before the agent answered (no ModelTurn,
    so no `unreported` of its own) is null on tool use as the answered turn is, not failed."""
    scenario = _two_turns()
    failed = TurnOutcome("t1", no_response=True, interrupted=False, long_silence=False)  # its booking was due
    answered = TurnOutcome("t2", unreported=(CALLS,), transcript="Done, Ada, at eight.", transcript_instrument="stt",
                           interrupted=False, no_response=False, long_silence=False)
    score = score_conversation(scenario, [failed, answered])
    assert [t.verdicts["tool_use_correct"].rule for t in score.turns] == [RULE_UNREPORTED] * 2
    assert scorecard([score]).dimensions["tool_use_correct"].n == 0
    # an agent whose calls voxwatch sees keeps its failed turn's missing call
    seen = score_conversation(scenario, [failed, replace(answered, unreported=())])
    assert seen.turns[0].verdicts["tool_use_correct"].passed is False


def test_a_reply_the_instrument_heard_no_words_in_fails_the_words_dimensions_and_one_with_words_does_not():
    scenario = _two_turns()
    heard = dict(unreported=(CALLS,), transcript_instrument="stt", interrupted=False, no_response=False,
                 long_silence=False, judged={"instruction_following": (True, "polite")})
    tone, spoken = (score_conversation(scenario, [TurnOutcome("t1", transcript=said, reference_reply="Booked.", **heard),
                                                  TurnOutcome("t2", transcript="Done, Ada, at eight.", **heard)])
                    for said in ("", "Booked, Ada."))
    for dim in ("instruction_following", "kb_grounding"):  # the judge cannot pass words that are not there
        assert (tone.turns[0].verdicts[dim].passed, tone.turns[0].verdicts[dim].rule) == (False, RULE_NO_SPEECH)
    assert tone.turns[0].transcript_ref_words is None  # not speech: no transcription WER on it
    assert spoken.turns[0].verdicts["instruction_following"].passed is True
    assert spoken.turns[0].verdicts["kb_grounding"].passed is True  # "booked" was said
    assert (spoken.turns[0].transcript_errors, spoken.turns[0].transcript_ref_words) == (1, 1)  # "booked ada" vs "booked"
    assert spoken.turns[1].transcript_ref_words is None  # no script to hold it against
    assert scorecard([spoken]).transcription.wer == 1.0 and scorecard([tone]).transcription.turns == 0


def test_adherence_never_passes_on_turn_taking_alone():
    """An agent heard saying words no code or judge could decide (no golden facts, no judge) answered in turn:
    turn-taking is its only decided dimension, so it has no adherence; one decided word dimension beside it
    and adherence counts both."""
    scenario = replace(_scenario(), turns=(replace(_scenario().turns[0], golden_facts=()),))
    said = dict(unreported=(CALLS,), transcript="Sure.", transcript_instrument="stt", interrupted=False,
                no_response=False, long_silence=False)
    alone = [score_conversation(scenario, [TurnOutcome("t1", **said)], f"c{i}") for i in range(6)]
    assert {v.passed for c in alone for d, v in c.turns[0].verdicts.items() if d != "turn_taking"} == {None}
    card = scorecard(alone)
    assert card.dimensions["turn_taking"].rate == 1.0 and card.dimensions["turn_taking"].n == 6
    assert (card.adherence.rate, card.adherence.n) == (None, 0)
    judged = [score_conversation(scenario, [TurnOutcome("t1", judged={"instruction_following": (False, "rude")},
                                                        **said)], f"c{i}") for i in range(6)]
    assert (scorecard(judged).adherence.passed, scorecard(judged).adherence.n) == (6, 12)


def test_the_lines_halving_is_continuous_across_frames_and_keeps_the_phone_band():
    t = np.arange(16000) / 16000
    tone = (0.5 * 32767 * np.sin(2 * np.pi * 1000 * t)).astype("<i2").tobytes()
    whole = np.frombuffer(Halver().push(tone), dtype="<i2")
    halver = Halver()
    framed = np.frombuffer(b"".join(halver.push(tone[i:i + 640]) for i in range(0, len(tone), 640)), dtype="<i2")
    assert whole.size == framed.size == 8000 and np.array_equal(whole, framed)
    steady = whole[100:].astype(float)
    assert 0.3 < np.sqrt(np.mean((steady / 32768) ** 2)) * np.sqrt(2) < 0.55  # 1 kHz passes at about its level
    high = (0.5 * 32767 * np.sin(2 * np.pi * 6000 * t)).astype("<i2").tobytes()
    aliased = np.frombuffer(Halver().push(high), dtype="<i2")[100:].astype(float)
    assert np.sqrt(np.mean((aliased / 32768) ** 2)) < 0.02  # 6 kHz (above the phone band) is filtered, not folded
