"""Cascades (STT -> chat model -> TTS) and the chat completions client they and the judge use.

The client against the OpenAI emulator's scripted chat endpoint (text, streamed tool calls, every
refusal's status); a cascade of emulated OpenAI STT, chat model and TTS through a conversation
with a tool call and a rotation; the streaming-STT path (pocketsphinx) and the no-key local
cascade (whisper tiny.en -> the scripted baseline -> eSpeak NG) on real engines, in a conversation
and on the single-turn S2S board's harness.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re

import numpy as np
import pytest
from support.contract import KEY

from voxwatch.foundation.scenario import Document, ExpectedCall, Scenario, Tool, Turn
from voxwatch.foundation.audio import resample
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.base import ProviderError
from voxwatch.providers.s2s.cascade import LLM_FIRST_TOKEN, Cascade, LocalScriptedCascade
from voxwatch.providers.cascade_ids import CascadeInfo
from voxwatch.providers.s2s.chat_completions import (FIRST_TOKEN, ChatClient, ChatEndpoint, call_message,
                                                     output_message)
from voxwatch.foundation.conversation import (CALLER_TEXT, MODEL_TEXT, TOOL_CALL, TOOL_RESULT, AgentSetup,
                                              HistoryItem, ToolCall)
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.s2s.chat import ChatScenario, ChatStep
from voxwatch.providers.emulators.s2s.openai import OpenAIScenario
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario
from voxwatch.foundation.events import AUDIO, CHUNK_SENT, CLOSED, FINAL, REQUEST_SENT, RESPONSE, Timeline
from voxwatch.providers.keys import Secret
from voxwatch.providers.local.espeak_engine import EspeakEngine
from voxwatch.providers.registry import Registry, RegistryError
from voxwatch.harness.measure import MeasureContext, measure_item
from voxwatch.harness.pacer import paced_send

REGISTRY = Registry.default()
LLM = "openai/gpt-4.1-mini-2025-04-14"
EMULATED = f"cascade/openai/whisper-1+{LLM}+openai/gpt-4o-mini-tts-2025-12-15"
STREAMING = f"cascade/pocketsphinx/en-us@5.1.1+{LLM}+openai/gpt-4o-mini-tts-2025-12-15"
LOOKUP = {"name": "lookup_order", "description": "Find an order by its id",
          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"},
                                                          "express": {"type": "boolean"}}}}
TEXT_REPLY = "Hello there, how can I help you today?"
SCRIPT = ChatScenario(turns=(
    (ChatStep(TEXT_REPLY),),
    (ChatStep("Let me check.", (("lookup_order", {"order_id": "A12"}),)), ChatStep("Order A12 ships on Monday.")),
    (ChatStep("You are welcome, goodbye."),),
), keyed=(("raw please", ChatStep(calls=(("lookup_order", "{not json"),))),), first_token_ms=120.0, every_ms=5.0,
    api_key=KEY)


def tone_pcm(seconds: float, freq: float) -> bytes:
    """A caller turn's audio (16 kHz int16): silence, a tone, silence; each turn its own bytes."""
    t = np.arange(int(16000 * seconds)) / 16000
    x = 0.3 * np.sin(2 * np.pi * freq * t) * ((t > 0.1) & (t < seconds - 0.1))
    return (x * 32767).astype("<i2").tobytes()


TURN_AUDIO = [tone_pcm(0.5, f) for f in (300.0, 400.0, 500.0)]
HEARD = ["hi there", "where is my order A12", "thanks bye"]


@pytest.fixture(scope="module")
def emulator():
    scenario = OpenAIScenario(Scenarios(
        stt=STTScenario(transcript="(unscripted audio)", speech_start_s=0.1, speech_end_s=0.4, final_ms=60.0,
                        api_key=KEY, transcripts=tuple((hashlib.sha256(a).hexdigest(), h) for a, h in zip(TURN_AUDIO, HEARD))),
        tts=TTSScenario(ttfb_ms=40.0, leading_silence_ms=20.0, speech_ms=200.0, api_key=KEY)), chat=SCRIPT)
    switch = server.Switch()
    with server.serve("openai", scenario, switch=switch) as url:
        yield url, switch, scenario


@pytest.fixture
def openai_env(monkeypatch, emulator):
    url, switch, scenario = emulator
    monkeypatch.setenv("VOXWATCH_OPENAI_BASE_URL", url)
    monkeypatch.setenv("VOXWATCH_OPENAI_API_KEY", KEY)
    yield url, switch
    switch.use(scenario)


def client(url: str, key: str = KEY) -> ChatClient:
    return ChatClient(ChatEndpoint(url, "gpt-4.1-mini-2025-04-14", Secret(key), "OpenAI"))


# --- the chat completions client ---------------------------------------------------------------------

@pytest.mark.realtime
def test_a_streamed_text_reply_is_put_together_and_its_first_token_stamped(openai_env):
    url, _ = openai_env

    async def go():
        c, timeline = client(url), Timeline()
        reply = await c.complete([{"role": "system", "content": "be kind"}, {"role": "user", "content": "hi"}],
                                 timeline=timeline)
        await c.aclose()
        return reply, timeline

    reply, timeline = asyncio.run(go())
    assert reply.text == TEXT_REPLY and reply.calls == [] and reply.finish_reason == "stop"
    sent = timeline.first(REQUEST_SENT).t_ns
    assert timeline.first(FIRST_TOKEN).t_ns == reply.first_token_ns
    assert reply.first_token_ns - sent >= 119e6  # never early: the emulator sends it 120 ms after the request arrived


def test_streamed_tool_calls_are_accumulated_and_their_outputs_taken_back(openai_env):
    url, _ = openai_env
    tools = (LOOKUP,)

    async def go():
        c = client(url)
        messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                    {"role": "user", "content": "where is my order"}]
        first = await c.complete(messages, tools)
        messages += [call_message(first.calls, first.text), output_message(first.calls[0].call_id, {"eta": "Monday"})]
        second = await c.complete(messages, tools)
        raw = await c.complete([{"role": "user", "content": "raw please"}], tools)
        await c.aclose()
        return first, second, raw

    first, second, raw = asyncio.run(go())
    assert first.finish_reason == "tool_calls" and first.text == "Let me check."
    [call] = first.calls
    assert call.name == "lookup_order" and call.arguments == {"order_id": "A12"} and call.call_id.startswith("call_")
    assert second.text == "Order A12 ships on Monday." and second.calls == []
    assert raw.calls[0].arguments == {"_raw": "{not json"}  # kept, to be scored as wrong arguments


def test_a_tool_output_without_its_call_is_refused_as_the_api_refuses_it(openai_env):
    url, _ = openai_env

    async def go():
        c = client(url)
        try:
            await c.complete([{"role": "user", "content": "hi"}, output_message("call_nobody", "x")])
        finally:
            await c.aclose()

    with pytest.raises(ProviderError) as err:
        asyncio.run(go())
    assert err.value.status == "error" and "400" in str(err.value)


@pytest.mark.parametrize("fault, status", [("unauthorized", "auth_error"), ("rate_limited", "rate_limited"),
                                           ("server_error", "server_error"), ("malformed", "malformed"),
                                           ("disconnect", "disconnected"), ("wrong key", "auth_error")])
def test_refusals_and_broken_streams_become_their_statuses_without_the_key(openai_env, fault, status):
    url, switch = openai_env
    if fault != "wrong key":
        switch.use(OpenAIScenario(Scenarios(), chat=ChatScenario(turns=((ChatStep(TEXT_REPLY),),), api_key=KEY,
                                                                  fault=fault)))
    key = "sk-wrong-0123456789abcdef" if fault == "wrong key" else KEY

    async def go():
        c = client(url, key)
        try:
            await c.complete([{"role": "user", "content": "hi"}])
        finally:
            await c.aclose()

    with pytest.raises(ProviderError) as err:
        asyncio.run(go())
    assert err.value.status == status
    assert key not in str(err.value) and key not in repr(err.value)
    if status == "rate_limited":
        assert err.value.retry_after_s == 7.0


# --- cascade ids ---------------------------------------------------------------------------------------

def test_cascade_ids_resolve_from_registered_components():
    info = REGISTRY.resolve(EMULATED)
    assert isinstance(info, CascadeInfo) and info.board == "s2s" and info.protocol == "s2s"
    assert info.stt.id == "openai/whisper-1" and info.llm == LLM and info.tts.id == "openai/gpt-4o-mini-tts-2025-12-15"
    assert info.needs_key and info.region == "vendor" and info.session_limit_unknown
    assert info.shutdown == min(info.stt.shutdown, info.tts.shutdown)  # the first component to go takes it along
    local = REGISTRY.resolve("cascade/pocketsphinx/en-us@5.1.1+scripted-baseline+espeak-ng/en-us@1.52.0")
    assert not local.needs_key and local.region == "local" and local.key_is_set()


@pytest.mark.parametrize("bad, why", [
    ("cascade/openai/whisper-1+openai/gpt-4.1-mini+openai/gpt-4o-mini-tts-2025-12-15", "floating alias"),
    ("cascade/openai/whisper-1+openai/latest+openai/gpt-4o-mini-tts-2025-12-15", "not an exact chat model id"),
    ("cascade/openai/whisper-1+openai/gpt-4o-mini-tts-2025-12-15", "cascade/<stt id>"),
    ("cascade/espeak-ng/en-us@1.52.0+scripted-baseline+openai/whisper-1", "must be an STT"),
    ("cascade/acme/nope+scripted-baseline+espeak-ng/en-us@1.52.0", "unknown model id"),
])
def test_cascade_ids_that_are_not_exact_are_refused(bad, why):
    with pytest.raises(RegistryError, match=re.escape(why)):
        REGISTRY.resolve(bad)


def test_the_scripted_baseline_is_registered_as_a_baseline_not_a_model():
    info = REGISTRY.resolve("local/cascade-scripted-baseline")
    assert info.board == "s2s" and not info.needs_key and "a scripted baseline, not a language model" in info.description


# --- a conversation, as the runner drives one -----------------------------------------------------------

async def run_turn(session, pcm: bytes, handler) -> tuple[Timeline, object]:
    timeline = Timeline()
    session.start_turn(timeline)
    await paced_send(session, pcm, 16000, 20, timeline)
    await session.end_audio()
    turn = await asyncio.wait_for(session.respond(handler), 60)
    return timeline, turn


class Backend:
    """The runner's tool handler: answers from a script and records every call."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []

    async def __call__(self, call: ToolCall):
        self.calls.append(call)
        return {"order_id": call.arguments.get("order_id"), "eta": "Monday"}


def assert_turn_timeline(timeline: Timeline, heard: str, said: str) -> None:
    kinds = [e.kind for e in timeline.events]
    assert not {FINAL, RESPONSE} & set(kinds)  # the components' own events stay on their stages
    caller = timeline.first(CALLER_TEXT)
    assert caller.text == heard and caller.t_ns >= timeline.of(CHUNK_SENT)[-1].t_ns
    assert timeline.first(MODEL_TEXT).text == said and kinds[-1] == CLOSED
    audio = timeline.of(AUDIO)
    assert audio and audio[0].t_ns >= timeline.first(LLM_FIRST_TOKEN).t_ns >= caller.t_ns
    offsets = [e.sample_offset for e in audio]
    assert offsets == [0] + list(np.cumsum([e.n_samples for e in audio[:-1]]))  # one continuous stream per turn


@pytest.mark.realtime
def test_an_emulated_cascade_holds_a_conversation_with_a_tool_call_and_a_rotation(openai_env):
    adapter = REGISTRY.create(REGISTRY.resolve(EMULATED))
    assert isinstance(adapter, Cascade) and adapter.emulator  # its rows are labelled as emulated
    setup = AgentSetup("You are an order desk.", (LOOKUP,))
    backend = Backend()

    async def go():
        session = await adapter.converse(Timeline(), setup)
        first = await run_turn(session, TURN_AUDIO[0], backend)
        second = await run_turn(session, TURN_AUDIO[1], backend)
        await session.aclose()
        call = backend.calls[0]
        history = [HistoryItem("user", HEARD[0]), HistoryItem("assistant", TEXT_REPLY), HistoryItem("user", HEARD[1]),
                   HistoryItem("tool", call=call, output={"eta": "Monday"}),
                   HistoryItem("assistant", "Let me check. Order A12 ships on Monday.")]
        rotated = await adapter.converse(Timeline(), setup, history)  # a new session, the history replayed
        third = await run_turn(rotated, TURN_AUDIO[2], backend)
        await rotated.aclose()
        return first, second, third, session

    (t1, m1), (t2, m2), (t3, m3), session = asyncio.run(go())
    assert (m1.caller_transcript, m1.transcript, m1.calls) == (HEARD[0], TEXT_REPLY, [])
    assert_turn_timeline(t1, HEARD[0], TEXT_REPLY)
    assert m2.transcript == "Let me check. Order A12 ships on Monday."
    assert [(c.name, c.arguments) for c in m2.calls] == [("lookup_order", {"order_id": "A12"})] and backend.calls == m2.calls
    assert_turn_timeline(t2, HEARD[1], m2.transcript)
    [marked_call], [marked_result] = t2.of(TOOL_CALL), t2.of(TOOL_RESULT)
    assert json.loads(marked_call.text)["name"] == "lookup_order" and marked_call.t_ns <= marked_result.t_ns
    assert json.loads(marked_result.text)["output"] == {"order_id": "A12", "eta": "Monday"}
    assert t2.of(AUDIO)[-1].sample_offset > 0 and len(t2.of(LLM_FIRST_TOKEN)) == 2  # both utterances spoken, in order
    # the emulator answers by the number of caller turns it is shown: the third answer proves the replay
    assert m3.transcript == "You are welcome, goodbye." and m3.caller_transcript == HEARD[2]
    assert [m["role"] for m in session.messages] == ["system", "user", "assistant", "user", "assistant", "tool", "assistant"]


# --- real engines ----------------------------------------------------------------------------------------

def espeak16k(text: str) -> bytes:
    engine = EspeakEngine.get()
    x = resample(engine.render(text, "en-us").astype(np.float64) / 32768.0, engine.sample_rate, 16000)
    return (np.clip(np.concatenate([np.zeros(3200), x, np.zeros(3200)]), -1, 1) * 32767).astype("<i2").tobytes()


MINI = Scenario(
    name="mini-orders", version=1, domain="retail", description="two turns", system_prompt="You are an order desk.",
    voice="en-us", sample_rate=16000,
    tools=(Tool("lookup_order", "Find an order", LOOKUP["parameters"]),),
    knowledge_base=(Document("ship", "Shipping", "Orders ship within two days."),),
    initial_state={}, expected_end_state={},
    turns=(Turn("t1", "Where is my order?", "t1.wav", "0" * 64, "Your order B123 ships tomorrow.",
                expected_calls=(ExpectedCall("lookup_order", {"order_id": {"regex": r"[a-z]\d{3}"},
                                                              "express": {"any": True}}, {"eta": "tomorrow"}),)),
           Turn("t2", "Thank you very much.", "t2.wav", "0" * 64, "You are welcome.")))


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


@pytest.mark.realtime
def test_the_local_cascade_follows_its_script_with_real_speech_engines():
    adapter = REGISTRY.create(REGISTRY.resolve("local/cascade-scripted-baseline"))
    assert isinstance(adapter, LocalScriptedCascade) and not adapter.emulator
    setup = AgentSetup(MINI.system_prompt, tuple({"name": t.name, "description": t.description,
                                                  "parameters": t.parameters} for t in MINI.tools), script=MINI)
    backend = Backend()

    async def go():
        session = await adapter.converse(Timeline(), setup)
        turns = [await run_turn(session, espeak16k(t.text), backend) for t in MINI.turns]
        await session.aclose()
        return turns

    (t1, m1), (t2, m2) = asyncio.run(go())
    [call] = m1.calls
    assert call.name == "lookup_order" and re.fullmatch(r"[a-z]\d{3}", call.arguments["order_id"], re.IGNORECASE)
    assert call.arguments["express"] is True and backend.calls == [call]  # `any`: a value of the schema's type
    assert (m1.transcript, m2.transcript, m2.calls) == (MINI.turns[0].reply, MINI.turns[1].reply, [])
    for timeline, model_turn, turn in ((t1, m1, MINI.turns[0]), (t2, m2, MINI.turns[1])):
        assert words(model_turn.caller_transcript) & words(turn.text) - {"is", "my", "you"}  # whisper heard the caller
        assert_turn_timeline(timeline, model_turn.caller_transcript, turn.reply)
        audio = np.frombuffer(b"".join(e.audio for e in timeline.of(AUDIO)), dtype="<i2")
        assert audio.size > 0.5 * timeline.of(AUDIO)[0].sample_rate and np.abs(audio).max() > 1000  # eSpeak spoke


@pytest.mark.realtime
def test_a_streaming_stt_cascade_feeds_the_caller_as_it_is_paced(openai_env):
    adapter = REGISTRY.create(REGISTRY.resolve(STREAMING))
    setup = AgentSetup("You are an order desk.", (LOOKUP,))

    async def go():
        session = await adapter.converse(Timeline(), setup)
        try:
            return await run_turn(session, espeak16k("hello there"), Backend())
        finally:
            await session.aclose()
            adapter.close()

    timeline, turn = asyncio.run(go())
    assert turn.transcript == TEXT_REPLY and turn.caller_transcript is not None
    assert_turn_timeline(timeline, turn.caller_transcript, TEXT_REPLY)


@pytest.mark.realtime
def test_a_cascade_is_measured_on_the_single_turn_s2s_board(tmp_path):
    """The S2S harness as it is: the clip paced in, the reply in the call recording, V2V from the file."""
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    clip = ds.clips[0]
    model = REGISTRY.resolve("local/cascade-scripted-baseline")
    adapter = REGISTRY.create(model)
    ctx = MeasureContext(run_id="cascade", seed=1, region="local", timeout_s=60, recordings_dir=tmp_path)
    row = asyncio.run(measure_item(model, adapter, ds, clip, ctx))
    assert row.status == "ok", row.reason
    assert row.v2v_ms is not None and row.v2v_ms > 0 and row.audio_duration_s > 0.5  # it said SINGLE_TURN_REPLY
    assert len(list(tmp_path.rglob("*.wav"))) == 1


def test_every_key_of_a_cascade_is_one_the_workers_scrub(monkeypatch):
    from voxwatch.providers.keys import key_variable, model_secrets

    model = REGISTRY.resolve(f"cascade/deepgram/nova-3+{LLM}+cartesia/sonic-3.5-2026-05-04")
    for vendor, key in (("deepgram", "dg-secret-1"), ("openai", "oa-secret-2"), ("cartesia", "ca-secret-3")):
        monkeypatch.setenv(key_variable(vendor), key)
    assert sorted(s.reveal() for s in model_secrets(model)) == ["ca-secret-3", "dg-secret-1", "oa-secret-2"]
    monkeypatch.setenv(key_variable("openai"), "")
    assert sorted(s.reveal() for s in model_secrets(model)) == ["ca-secret-3", "dg-secret-1"]
