"""`voxwatch preference generate` (docs/PREFERENCE.md): the no-key configurations answer the bundled
prompts through the local cascade (its scripted baseline in two eSpeak NG voices) and every output
is stored with its audio pinned and its side streams, once; and an OpenAI Realtime configuration
(voice and reasoning effort) answers through the emulator, its row flagged as an emulator's."""

from __future__ import annotations

import pytest
import json
from dataclasses import replace
from pathlib import Path

from support.processes import run_cli
from support.contract import KEY

from voxwatch.foundation.integrity import file_sha256
from voxwatch.preference.generate import GenerateSettings, generate, resolve_audio
from voxwatch.preference.prompt_catalog import BUNDLED, PromptCatalog, bundled_root
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger
from voxwatch.providers.emulators.scenario import ConversationScript, ScriptedTurn
from voxwatch.providers.keys import key_variable, vendor_variable
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store

pytestmark = pytest.mark.realtime

LOCAL = ("local/cascade-scripted-baseline|none|en-us", "local/cascade-scripted-baseline|none|en-gb-x-rp")


def test_the_no_key_configurations_answer_two_bundled_prompts_once(store_url, tmp_path):
    env = {"VOXWATCH_PREFERENCE_OUTPUTS_DIR": str(tmp_path / "out")}
    args = ("preference", "generate", "--configs", ",".join(LOCAL), "--limit", "2", "--store", store_url)
    out = run_cli(*args, env=env).stdout
    assert "SYNTHESIZED" in out and "stored 4 outputs, 0 failed" in out
    store = open_store(store_url)
    rows = store.preference_outputs(BUNDLED)
    ps = PromptCatalog([bundled_root()]).load(BUNDLED)
    assert {(r.prompt_id, r.config_id) for r in rows} == {(p.id, c) for p in ps.prompts[:2] for c in LOCAL}
    for r in rows:
        assert r.status == "ok" and not r.emulator and r.duration_s > 0.5
        assert r.transcript == ps.prompt(r.prompt_id).reply  # the baseline says the scripted reply
        path = resolve_audio(tmp_path / "out", r.audio_path)
        assert not Path(r.audio_path).is_absolute() and file_sha256(path) == r.audio_sha256
        side = json.loads(r.side)
        assert [e["kind"] for e in side["events"]] == ["caller_text", "model_text"] and side["timings"]["audio_s"] > 0
    voices = {r.config_id: r.audio_sha256 for r in rows if r.prompt_id == "p01"}
    assert len(set(voices.values())) == 2  # two voices, two different replies' audio
    assert {p.prompt_id for p in store.preference_prompts(BUNDLED)} == {p.id for p in ps.prompts[:2]}
    store.close()
    again = run_cli(*args, env=env).stdout
    assert "stored 0 outputs, 0 failed (stored with their reason), 4 already stored" in again


def test_an_openai_realtime_configuration_through_the_emulator(store_url, tmp_path, monkeypatch):
    registry = Registry.default()
    config = next(c for c in registry.preference_configs if c.id == "openai/gpt-realtime-2|low|marin")
    ps = PromptCatalog([bundled_root()]).load(BUNDLED)
    ps = replace(ps, prompts=ps.prompts[:1])
    script = ConversationScript(turns=(ScriptedTurn(reply="Paris is the capital of France.", heard="capital"),),
                                response_ms=300.0, leading_silence_ms=60.0, speech_ms=300.0, api_key=KEY)
    store = open_store(store_url)
    with server.serve("openai", script, ledger=Ledger()) as url:
        monkeypatch.setenv(vendor_variable("openai", "BASE_URL"), url)
        monkeypatch.setenv(key_variable("openai"), KEY)
        done = generate(store, registry, ps, [config], GenerateSettings(tmp_path / "out"), log=lambda _: None)
    assert done.stored == 1 and done.failed == 0
    [row] = store.preference_outputs(BUNDLED)
    assert row.status == "ok" and row.emulator and row.transcript == "Paris is the capital of France."
    assert (row.model_id, row.thinking, row.voice) == ("openai/gpt-realtime-2", "low", "marin")
    assert file_sha256(tmp_path / "out" / row.audio_path) == row.audio_sha256 and KEY not in row.side
    monkeypatch.setenv(vendor_variable("openai", "BASE_URL"), "http://127.0.0.1:9")  # nothing listens there
    retry = generate(store, registry, ps, [config], GenerateSettings(tmp_path / "out", retry_failed=True),
                     log=lambda _: None)
    assert retry.skipped == 1 and retry.stored == 0  # an ok output is not answered again
    second = replace(ps, prompts=PromptCatalog([bundled_root()]).load(BUNDLED).prompts[1:2])
    failed = generate(store, registry, second, [config], GenerateSettings(tmp_path / "out"), log=lambda _: None)
    assert failed.failed == 1
    [lost] = [r for r in store.preference_outputs(BUNDLED) if r.prompt_id == second.prompts[0].id]
    assert lost.status != "ok" and lost.reason and KEY not in lost.reason and lost.audio_path is None  # kept, with why
    store.close()
