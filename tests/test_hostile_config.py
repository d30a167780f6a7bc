"""Hostile configuration: a registry file nested past the parser, a vendor server address that smuggles
a header, credentials or another scheme (in a registry file or in VOXWATCH_<VENDOR>_BASE_URL, one rule
for both), and webhook URLs that are not http(s) URLs. Each is refused when the configuration is read,
in one line (exit 2), without the secret and without a raw control character.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from support.postgres import fresh_postgres
from support.processes import cli_in_process, run_cli
from test_user_registry import SERVER
from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.endpoints import base_url
from voxwatch.providers.registry import Registry, RegistryError

SECRET = "s3cretPW"
BAD_SERVER_URLS = [  # as inside a TOML string: JSON's escapes are TOML's
    json.dumps(u)[1:-1] for u in (
        "http://h:1/\r\nX-Evil: 1", "http://h:1/v1\x1b[31m", "http://h:1/\x00", "http://h:1/a b", "http://h:1/\x85v1",
        f"http://admin:{SECRET}@h:1", "file:///etc/passwd", "gopher://h:70/", "http://h:port/", "http:///v1",
        "http://h:1/?key=1",
    )
]


def _one_line_error(proc) -> str:
    err = proc.stderr.strip()
    assert proc.returncode == 2 and "Traceback" not in err and len(err.splitlines()) == 1, proc.stderr[-2000:]
    assert SECRET not in err and not any(c in err for c in "\r\x1b\x00\x85")
    return err


def test_a_registry_file_nested_past_the_parser_is_one_line_naming_it(tmp_path: Path):
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    proc = run_cli("providers", "list", env={"VOXWATCH_REGISTRY_FILES": str(deep)}, check=False)
    assert f"{deep}: nested deeper than a TOML parser can read" in _one_line_error(proc)


@pytest.mark.parametrize("name", ["config", "fetch catalog"])
def test_a_config_or_fetch_catalog_nested_past_the_parser_is_one_line(tmp_path: Path, name: str):
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "{a = " * 50_000 + "1" + "}" * 50_000 + "\n")
    args, env = (("--config", str(deep), "providers", "list"), {}) if name == "config" else \
        (("datasets", "fetch"), {"VOXWATCH_DATASETS_FETCH_CATALOG": str(deep)})
    err = _one_line_error(run_cli(*args, env=env, check=False))
    assert str(deep) in err and "nested deeper than a" in err


@pytest.mark.parametrize("url", BAD_SERVER_URLS)
def test_a_bad_server_address_is_refused_alike_in_a_registry_file_and_in_the_environment(tmp_path: Path, url: str):
    registry_file = tmp_path / "models.toml"
    registry_file.write_text(SERVER.format(url=url))
    with pytest.raises(RegistryError, match=r"models.toml vendor #1: base_url (must be|holds|is not)") as refused:
        Registry.default(files=[registry_file])
    assert SECRET not in str(refused.value) and "\r" not in str(refused.value)
    # the CLI's refusal, in this process (two interpreter starts a case; the first case runs them for real)
    call = run_cli if url == BAD_SERVER_URLS[0] else cli_in_process
    proc = call("providers", "list", env={"VOXWATCH_REGISTRY_FILES": str(registry_file)}, **_checked(call))
    assert "models.toml vendor #1: base_url" in _one_line_error(proc)

    if "\x00" in json.loads(f'"{url}"'):
        return  # an environment cannot hold a NUL
    proc = call("providers", "list", env={"VOXWATCH_MY_VLLM_BASE_URL": json.loads(f'"{url}"')}, **_checked(call))
    assert "environment VOXWATCH_MY_VLLM_BASE_URL:" in _one_line_error(proc)


def _checked(call) -> dict:
    return {"check": False} if call is run_cli else {}


@pytest.mark.parametrize("field", ["source", "note"])
def test_a_control_character_in_any_text_of_a_registry_file_is_refused_and_shown_escaped(tmp_path: Path, field: str):
    registry_file = tmp_path / "models.toml"
    hostile = '"ours \\u001b[2J\\r\\nX-Evil: 1"'  # TOML escapes: ESC, CR, LF
    text = SERVER.format(url="http://h:1")
    text = re.sub(r"(?m)^source = .*$", lambda _: f"source = {hostile}", text) if field == "source" else text + f"note = {hostile}\n"
    registry_file.write_text(text)
    proc = run_cli("providers", "list", env={"VOXWATCH_REGISTRY_FILES": str(registry_file)}, check=False)
    err = _one_line_error(proc)
    assert f"models.toml vendor #1: {field} holds control character(s)" in err and "\\x1b" in err and "\\r" in err


def test_the_adapters_own_reading_of_the_environment_refuses_what_the_configuration_does(monkeypatch):
    monkeypatch.setenv("VOXWATCH_DEEPGRAM_BASE_URL", f"gopher://admin:{SECRET}@h:70/")
    with pytest.raises(ProviderError, match=r"VOXWATCH_DEEPGRAM_BASE_URL must be http\(s\)\|ws\(s\)://host") as refused:
        base_url("deepgram", "wss://api.deepgram.com")
    assert SECRET not in str(refused.value)
    monkeypatch.setenv("VOXWATCH_DEEPGRAM_BASE_URL", "ws://127.0.0.1:9/")
    assert base_url("deepgram", "wss://api.deepgram.com") == "ws://127.0.0.1:9"


def test_good_server_addresses_still_pass_both_paths(tmp_path: Path):
    registry_file = tmp_path / "models.toml"
    registry_file.write_text(SERVER.format(url="http://10.0.0.5:8000/v1"))
    assert Registry.default(files=[registry_file]).vendors["my-vllm"].base_url == "http://10.0.0.5:8000/v1"
    env = {"VOXWATCH_REGISTRY_FILES": str(registry_file), "VOXWATCH_SPEECHMATICS_BASE_URL": "wss://global.rt.speechmatics.com/"}
    assert run_cli("providers", "list", env=env).returncode == 0


WEBHOOK_TOKEN = "tok3nSECRET"
BAD_WEBHOOK_URLS = ["", "   ", f"ftp://hooks.example/T0/B1/{WEBHOOK_TOKEN}", f"hooks.example/T0/B1/{WEBHOOK_TOKEN}",
                    f"not a url {WEBHOOK_TOKEN}", f"https:///services/{WEBHOOK_TOKEN}", f"https://hooks.example:{WEBHOOK_TOKEN}/",
                    f"https://hooks.example/\r\nX-Evil: {WEBHOOK_TOKEN}", f"gopher://hooks.example/{WEBHOOK_TOKEN}"]


@pytest.mark.parametrize("url", BAD_WEBHOOK_URLS)
def test_a_webhook_url_that_is_not_an_http_url_stops_alerts_evaluate_naming_the_setting(url: str):
    env = {"VOXWATCH_ALERTS_WEBHOOKS": "ops:slack:OPS_URL", "OPS_URL": url}
    with fresh_postgres() as store:
        proc = run_cli("alerts", "evaluate", "--store", store, env=env, check=False)
    err = _one_line_error(proc)
    assert err.startswith("voxwatch: error: [alerts] webhooks: ops: the environment variable OPS_URL (this webhook's URL)")
    assert WEBHOOK_TOKEN not in err and "hooks.example" not in err


def test_an_unset_webhook_url_stops_alerts_evaluate_but_not_a_process_that_delivers_nothing():
    env = {"VOXWATCH_ALERTS_WEBHOOKS": "ops:slack:OPS_URL"}
    assert run_cli("providers", "list", env=env).returncode == 0  # the web app's case: no URL, nothing to deliver
    with fresh_postgres() as store:
        proc = run_cli("alerts", "evaluate", "--store", store, env=env, check=False)
    assert "[alerts] webhooks: ops: the environment variable OPS_URL (this webhook's URL) is not set" in _one_line_error(proc)
