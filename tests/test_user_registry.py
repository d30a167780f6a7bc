"""Models as configuration (issue #19): the user's registry files over the package's, under its rules.

A user file has registry.toml's format; it adds ids and vendors, replaces one only with an explicit
`override = true`, and every entry keeps the file it came from. A vendor may be a self-hosted server
speaking a protocol family (OpenAI-compatible) at its own base_url. End to end, such a server (the
OpenAI emulator) is measured by `voxwatch run` under the user's id.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from support.processes import run_cli
from test_registry import VENDOR
from voxwatch.config import ConfigError, load, registry_files
from voxwatch.providers.keys import key_variable
from voxwatch.providers.stt.openai_batch import OpenAIBatchSTT, auth_headers
from voxwatch.providers.tts.openai import OpenAITTS
from voxwatch.providers.registry import PACKAGE, Registry, RegistryError

SERVER = VENDOR.replace('"acme"', '"my-vllm"') + 'speaks = "openai-compatible"\nbase_url = "{url}"\n'
"""A self-hosted server (test_registry's vendor statement, renamed) speaking OpenAI's API at {url}."""

OPEN_SERVER = SERVER.replace('"my-vllm"', '"open-vllm"') + 'key_env = ""\n'


def model(model_id: str, *extra: str, protocol: str = "stt-batch", board: str = "stt", needs_key: bool = True) -> str:
    """One [[model]] of a user file (no adapter: its vendor's family supplies it unless `extra` names one)."""
    return "\n".join(["", "[[model]]", f'id = "{model_id}"', f'board = "{board}"', f'vendor = "{model_id.split("/")[0]}"',
                      f'protocol = "{protocol}"', 'status = "active"', 'region = "self-hosted"',
                      f"needs_key = {str(needs_key).lower()}", "checked = 2026-12-01",
                      'source = "our deployment"', *extra, ""])


def user_registry(tmp_path: Path, *texts: str) -> Registry:
    """The package's registry with the texts as user files 1, 2, ... over it."""
    paths = []
    for i, text in enumerate(texts, 1):
        path = tmp_path / f"models-{i}.toml"
        path.write_text(text)
        paths.append(path)
    return Registry.default(files=paths)


def refusal(tmp_path: Path, *texts: str) -> str:
    with pytest.raises(RegistryError) as exc:
        user_registry(tmp_path, *texts)
    return str(exc.value)


def test_a_user_file_adds_a_self_hosted_server_and_every_entry_keeps_its_file(tmp_path: Path):
    registry = user_registry(tmp_path, SERVER.format(url="http://10.0.0.5:8000/") + model("my-vllm/whisper-large-v3")
                             + model("my-vllm/kokoro-82m", 'voice = "af_heart"', protocol="tts-stream", board="tts"))
    stt, tts = registry.resolve("my-vllm/whisper-large-v3"), registry.resolve("my-vllm/kokoro-82m")
    assert stt.origin == tts.origin == str(tmp_path / "models-1.toml")
    assert stt.adapter == "voxwatch.providers.stt.openai_batch:OpenAIBatchSTT"
    assert tts.adapter == "voxwatch.providers.tts.openai:OpenAITTS"
    assert stt.base_url == "http://10.0.0.5:8000"  # the trailing slash dropped, as an environment override's
    assert registry.vendors["my-vllm"].origin == stt.origin and registry.vendors["openai"].origin == PACKAGE
    assert registry.resolve("openai/whisper-1").origin == PACKAGE
    assert len(registry.models) == len(Registry.default(files=[]).models) + 2


def test_the_family_adapters_use_the_vendors_server_and_the_environment_still_wins(tmp_path: Path, monkeypatch):
    registry = user_registry(tmp_path, SERVER.format(url="http://10.0.0.5:8000") + model("my-vllm/whisper-large-v3")
                             + model("my-vllm/kokoro-82m", protocol="tts-stream", board="tts"))
    monkeypatch.delenv("VOXWATCH_MY_VLLM_BASE_URL", raising=False)
    stt = OpenAIBatchSTT(registry.resolve("my-vllm/whisper-large-v3"))
    assert stt.url == "http://10.0.0.5:8000" and not stt.emulator
    assert OpenAITTS(registry.resolve("my-vllm/kokoro-82m")).url == "http://10.0.0.5:8000"
    monkeypatch.setenv("VOXWATCH_MY_VLLM_BASE_URL", "http://127.0.0.1:9/")
    assert OpenAIBatchSTT(registry.resolve("my-vllm/whisper-large-v3")).url == "http://127.0.0.1:9"
    assert OpenAIBatchSTT(registry.resolve("openai/whisper-1")).url != "http://127.0.0.1:9"  # OpenAI's own: not moved


def test_a_server_without_a_key_is_sent_none_and_one_with_a_key_needs_its_variable(tmp_path: Path, monkeypatch):
    registry = user_registry(tmp_path, SERVER.format(url="http://10.0.0.5:8000") + model("my-vllm/whisper-large-v3")
                             + OPEN_SERVER.format(url="http://10.0.0.6:8000")
                             + model("open-vllm/whisper-large-v3", needs_key=False))
    assert auth_headers("open-vllm", registry.resolve("open-vllm/whisper-large-v3").needs_key) == {}
    assert registry.resolve("open-vllm/whisper-large-v3").key_is_set()
    monkeypatch.delenv("VOXWATCH_MY_VLLM_API_KEY", raising=False)
    assert not registry.resolve("my-vllm/whisper-large-v3").key_is_set()
    monkeypatch.setenv("VOXWATCH_MY_VLLM_API_KEY", "k-planted")
    assert auth_headers("my-vllm", True) == {"Authorization": "Bearer k-planted"}


def test_an_existing_id_is_replaced_only_by_an_explicit_override(tmp_path: Path):
    nova = model("deepgram/nova-3", 'adapter = "voxwatch.providers.stt.deepgram:DeepgramSTT"', protocol="stt-stream")
    message = refusal(tmp_path, nova)
    assert re.fullmatch(re.escape(f"{tmp_path / 'models-1.toml'} model #1: id 'deepgram/nova-3' is already registered "
                                  f"({PACKAGE} model #") + r"\d+" + re.escape(
        "); set override = true in this entry to replace that one"), message)
    replaced = user_registry(tmp_path, nova + "override = true\n").resolve("deepgram/nova-3")
    assert (replaced.origin, replaced.source, replaced.region) == (str(tmp_path / "models-1.toml"), "our deployment",
                                                                    "self-hosted")
    # a second user file over the first: the same rule between them
    second = refusal(tmp_path, SERVER.format(url="http://h:1") + model("my-vllm/a-1"), model("my-vllm/a-1"))
    assert second.startswith(f"{tmp_path / 'models-2.toml'} model #1: id 'my-vllm/a-1' is already registered "
                             f"({tmp_path / 'models-1.toml'} model #1)")
    vendor = refusal(tmp_path, SERVER.format(url="http://h:1").replace("my-vllm", "openai"))
    assert "vendor #1: vendor 'openai' is already registered (registry.toml vendor #" in vendor
    stale = refusal(tmp_path, model("openai/whisper-2", 'adapter = "x:Y"', "override = true"))
    assert stale.endswith("model #1: override = true, but no earlier registry file registers id 'openai/whisper-2'")


@pytest.mark.parametrize("model_id", ["openai/gpt-4o-transcribe-latest", "openai/gpt-5-transcribe"])
def test_the_floating_alias_rule_refuses_a_user_entry_as_it_refuses_the_packages(tmp_path: Path, model_id: str):
    entry = model(model_id, 'adapter = "voxwatch.providers.stt.openai_batch:OpenAIBatchSTT"')
    as_user = refusal(tmp_path, entry)
    package = (Path(__file__).resolve().parents[1] / "voxwatch" / "providers" / "registry.toml").read_text()
    with pytest.raises(RegistryError) as exc:
        Registry.from_toml(package + entry)
    assert "floating alias" in as_user or "not an exact versioned id" in as_user
    # the same words; only the file (and the entry's number in it) differ
    assert as_user.split(": ", 1)[1] == str(exc.value).split(": ", 1)[1]
    assert as_user.startswith(str(tmp_path / "models-1.toml"))


def test_the_key_rule_holds_for_a_user_vendor(tmp_path: Path):
    for name in ("OPENAI_API_KEY", "VOXWATCH_OPENAI_API_KEY", "MY_VLLM_TOKEN"):
        message = refusal(tmp_path, SERVER.format(url="http://h:1") + f'key_env = "{name}"\n')
        assert message == (f"{tmp_path / 'models-1.toml'} vendor #1: key_env {name!r}: API keys come from the "
                           "environment only, as VOXWATCH_<VENDOR>_API_KEY; vendor 'my-vllm' reads "
                           'VOXWATCH_MY_VLLM_API_KEY (or key_env = "" for a server that takes no key)')
    assert key_variable("my-vllm") == "VOXWATCH_MY_VLLM_API_KEY"
    named = user_registry(tmp_path, SERVER.format(url="http://h:1") + 'key_env = "VOXWATCH_MY_VLLM_API_KEY"\n')
    assert named.vendors["my-vllm"].key_env == "VOXWATCH_MY_VLLM_API_KEY"
    keyless = refusal(tmp_path, OPEN_SERVER.format(url="http://h:1") + model("open-vllm/whisper-large-v3"))
    assert keyless.endswith("open-vllm/whisper-large-v3 says needs_key = true, but its vendor 'open-vllm' says "
                            'key_env = "" (a server that takes no key)')


@pytest.mark.parametrize("text, expected", [
    ("[[model]\n", "models-1.toml: Expected ']]' at the end of an array declaration (at line 1"),
    ("[registry]\nfiles = []\n", "models-1.toml: unknown table(s) ['registry']"),
    ("model = 3\n", "models-1.toml: model must be an array of tables ([[model]])"),
    (SERVER.format(url="http://h:1") + model("my-vllm/a-1") + model("my-vllm/b-1").replace('board = "stt"\n', ""),
     "models-1.toml model #2: missing field(s) ['board']"),
    (SERVER.format(url="http://h:1") + model("my-vllm/a-1") + model("my-vllm/a-1"),
     "models-1.toml: duplicate id(s) ['my-vllm/a-1']"),
    (SERVER.format(url="http://h:1") + model("my-vllm/a-1", "override = 1"),
     "models-1.toml model #1: override must be true or false, got 1"),
    (SERVER.format(url="http://h:1") + model("my-vllm/a-1", protocol="s2s", board="s2s"),
     "models-1.toml model #1: vendor 'my-vllm' speaks openai-compatible, which voxwatch measures over stt-batch, "
     "tts-stream; protocol 's2s' is not one of them"),
    (SERVER.format(url="http://h:1") + model("my-vllm/a-1", 'adapter = "voxwatch.providers.stt.deepgram:DeepgramSTT"'),
     "models-1.toml model #1: vendor 'my-vllm' speaks openai-compatible: its stt-batch adapter is "
     "voxwatch.providers.stt.openai_batch:OpenAIBatchSTT (leave adapter out), not 'voxwatch.providers.stt.deepgram:DeepgramSTT'"),
    (SERVER.format(url="http://user:hunter2@h:1"), "models-1.toml vendor #1: base_url must be http(s)://host[:port]"),
    (SERVER.format(url="ftp://h:1"), "models-1.toml vendor #1: base_url must be http(s)://host[:port]"),
    (SERVER.format(url="http://h:1").replace('speaks = "openai-compatible"\n', ""),
     "models-1.toml vendor #1: speaks (the protocol family its server speaks) and base_url (where that server is) "
     "go together"),
    (SERVER.format(url="http://h:1").replace("openai-compatible", "grpc"),
     "models-1.toml vendor #1: speaks must be one of ('openai-compatible',), got 'grpc'"),
    (model("nobody/a-1", 'adapter = "x:Y"'), "models-1.toml: vendor 'nobody' of nobody/a-1 has no [[vendor]] statement"),
    ('[[preference_options]]\nmodel = "openai/gpt-realtime-2"\n',
     "models-1.toml: [[preference_options]] and [[preference_config]] are the package registry's"),
])
def test_a_malformed_user_file_is_refused_naming_the_file_and_entry(tmp_path: Path, text: str, expected: str):
    message = refusal(tmp_path, text)
    assert message.startswith(str(tmp_path / expected.split(":", 1)[0].split(" ", 1)[0]))
    assert expected.split("models-1.toml", 1)[1] in message
    assert "hunter2" not in message  # a credential in a URL is never echoed


def test_an_unreadable_user_file_is_named(tmp_path: Path):
    with pytest.raises(RegistryError, match=r"missing\.toml: cannot read this registry file \(No such file"):
        Registry.default(files=[tmp_path / "missing.toml"])


def test_the_files_are_found_relative_to_the_config_file_or_the_working_directory(tmp_path: Path, monkeypatch):
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "voxwatch.toml"
    config.write_text('[registry]\nfiles = ["models/mine.toml", "/abs/theirs.toml"]\n')
    env = {"VOXWATCH_CONFIG": str(config)}
    expected = (tmp_path / "conf" / "models" / "mine.toml", Path("/abs/theirs.toml"))
    assert load(environ=env).registry_files == expected == registry_files(environ=env)
    monkeypatch.chdir(tmp_path)
    env["VOXWATCH_REGISTRY_FILES"] = "a.toml, b.toml"  # the environment's, over the file's: from the working directory
    assert load(environ=env).registry_files == (tmp_path / "a.toml", tmp_path / "b.toml") == registry_files(environ=env)
    assert load(environ={}).registry_files == () == registry_files(environ={})
    config.write_text('[registry]\nfiles = "mine.toml"\n')
    with pytest.raises(ConfigError, match=r"\[registry\] files.*expected a list of strings"):
        load(environ={"VOXWATCH_CONFIG": str(config)})
    with pytest.raises(ConfigError, match=r"\[registry\] files: expected a list of strings"):
        registry_files(environ={"VOXWATCH_CONFIG": str(config)})


def test_the_default_registry_reads_the_configured_files(tmp_path: Path, monkeypatch):
    path = tmp_path / "mine.toml"
    path.write_text(SERVER.format(url="http://h:1") + model("my-vllm/whisper-large-v3"))
    monkeypatch.setenv("VOXWATCH_REGISTRY_FILES", str(path))
    assert Registry.default().resolve("my-vllm/whisper-large-v3").origin == str(path)
    monkeypatch.setenv("VOXWATCH_REGISTRY_FILES", "")
    assert "my-vllm/whisper-large-v3" not in Registry.default().models


@pytest.mark.e2e
def test_a_self_hosted_openai_compatible_stt_is_listed_and_measured_under_its_id(tmp_path: Path, store_url: str):
    from voxwatch.providers.emulators.scenario import STTScenario
    from voxwatch.providers.emulators.server import serve

    mine, keyless = "my-vllm/whisper-1", "open-vllm/whisper-1"  # the emulator serves OpenAI's model names
    config = tmp_path / "voxwatch.toml"
    config.write_text('[registry]\nfiles = ["models.toml"]\n')
    env = {"VOXWATCH_CONFIG": str(config), "VOXWATCH_MY_VLLM_API_KEY": "emu-key"}
    with serve("openai", STTScenario(transcript="hello", speech_start_s=0.2, speech_end_s=1.0,
                                     api_key="emu-key")) as url:
        (tmp_path / "models.toml").write_text(SERVER.format(url=url) + model(mine) + OPEN_SERVER.format(url=url)
                                              + model(keyless, needs_key=False))
        listed = run_cli("providers", "list", "--wide", env=env).stdout  # with its source file column
        proc = run_cli("run", "--models", f"{mine},{keyless}", "--datasets", "stt-starter-clean", "--sample-size", "2",
                       "--store", store_url, "--no-progress", env=env)
    lines = listed.splitlines()
    header = next(line for line in lines if line.startswith("id "))
    row = next(line for line in lines if line.startswith(mine + " "))
    assert row[header.index("source file"):].strip() == str(tmp_path / "models.toml")
    whisper = next(line for line in lines if line.startswith("openai/whisper-1 "))
    assert whisper[header.index("source file"):].strip() == "registry.toml (package)"
    assert f"  my-vllm    {tmp_path / 'models.toml'}  openai-compatible  {url}  VOXWATCH_MY_VLLM_API_KEY" in listed
    assert f"  open-vllm  {tmp_path / 'models.toml'}  openai-compatible  {url}  none" in listed
    assert "emu-key" not in listed + proc.stdout + proc.stderr
    out = run_cli("export", "--format", "jsonl", "--store", store_url).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted((r["model_id"], r["vendor"], r["status"]) for r in rows) == [
        (mine, "my-vllm", "ok")] * 2 + [(keyless, "open-vllm", "auth_error")] * 2  # the keyless one was sent no key
    assert all(r["emulator"] for r in rows)  # a loopback server: never on a leaderboard
    measured = [r for r in rows if r["model_id"] == mine]
    assert all(r["latency_ms"] > 0 and r["hypothesis"] == "hello" and r["protocol"] == "stt-batch" for r in measured)


def test_the_readmes_example_file_loads_as_documented(tmp_path: Path):
    readme = (Path(__file__).resolve().parents[1] / "docs" / "OPERATIONS.md").read_text()
    example = readme.split("```toml\n# my-models.toml\n", 1)[1].split("```", 1)[0]
    registry = user_registry(tmp_path, example)
    mine = registry.resolve("my-vllm/whisper-large-v3")
    assert (mine.adapter, mine.base_url, mine.needs_key) == ("voxwatch.providers.stt.openai_batch:OpenAIBatchSTT",
                                                              "http://10.0.0.5:8000", False)
    assert registry.vendors["my-vllm"].key_env == ""
