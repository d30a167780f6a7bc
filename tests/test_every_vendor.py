"""Every cloud vendor end to end, as a user would try it: `voxwatch emulate` in one process,
`voxwatch run --models ...` in another with the base URLs it printed; and a planted key that
must never show up anywhere a user or an operator could see it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.processes import REPO, run_cli
from support.processes import kept_env
from voxwatch.cli.emulate import ERROR_EVERY, with_errors
from voxwatch.providers.registry import Registry

pytestmark = pytest.mark.e2e

REGISTRY = Registry.default()
CLOUD = sorted(m.id for m in REGISTRY.models.values() if m.needs_key and not REGISTRY.standing(m).retired)
DATASETS = "stt-starter-clean,tts-prompts"
AT_ONCE = {"VOXWATCH_RUN_CONCURRENCY": "8"}  # 66 models' streams, 8 at a time (one at a time, the default, took
# minutes of CI's budget); each emulator serves streams at once as its vendor does


@pytest.fixture(scope="module")
def emulators():
    """`voxwatch emulate` as a subprocess; yields the environment lines it printed."""
    env = kept_env()
    proc = subprocess.Popen([sys.executable, "-m", "voxwatch.cli", "emulate"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    exports: dict[str, str] = {}
    try:
        for line in proc.stdout:
            if line.startswith("export "):
                name, value = line[len("export "):].strip().split("=", 1)
                exports[name] = value
            elif line.startswith("# emulators are running"):
                break
        assert exports, proc.stderr.read()
        yield exports
    finally:
        proc.terminate()
        proc.wait(20)


def _rows(store_url: str) -> list[dict]:
    out = run_cli("export", "--format", "jsonl", "--store", store_url).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_with_no_key_every_cloud_model_is_skipped_with_one_line(store_url: str):
    proc = run_cli("run", "--models", ",".join(CLOUD), "--datasets", DATASETS, "--store", store_url, "--no-progress")
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == len(CLOUD)
    assert all(any(line.startswith(f"skipped {m}: set VOXWATCH_") for line in skipped) for m in CLOUD)


def test_every_vendor_is_measured_end_to_end_against_its_emulator(emulators, store_url: str):
    run_cli("run", "--models", ",".join(CLOUD), "--datasets", DATASETS, "--sample-size", "1", "--seed", "3",
            "--store", store_url, "--no-progress", env={**emulators, **AT_ONCE})
    rows = _rows(store_url)
    assert {r["model_id"] for r in rows} == set(CLOUD)
    bad = [(r["model_id"], r["status"], r["reason"]) for r in rows if r["status"] != "ok"]
    assert not bad
    assert all(r["emulator"] for r in rows)
    for r in rows:
        if r["board"] == "stt":  # the emulator's transcript is the reference with known errors
            assert r["hypothesis"] == with_errors(r["reference"])
            assert r["substitutions"] + r["deletions"] + r["insertions"] <= len(r["reference"].split()) // ERROR_EVERY + 1
            assert (r["ttfs_ms"] if r["protocol"] == "stt-stream" else r["latency_ms"]) > 0
        elif r["board"] == "tts":  # eSpeak NG speaks the prompt; the instrument hears words
            assert r["ttfa_ms"] >= r["ttfb_ms"] > 0 and r["ref_words"] > 0 and r["hypothesis"]
        else:
            assert r["v2v_ms"] > 0 and r["audio_duration_s"] > 0
    board = json.loads(run_cli("leaderboard", "--format", "json", "--store", store_url).stdout)["rows"]
    assert board == []  # emulator rows never reach a leaderboard


def test_a_planted_key_never_appears_in_output_rows_or_the_store(emulators, tmp_path: Path):
    """Every vendor refuses the planted key; it must not show in stdout, stderr, rows, exports or the file."""
    planted = "sk-PLANTED-7f3a9c1e5b"
    env = {k: v for k, v in emulators.items() if k.endswith("_BASE_URL")}
    env.update({k: planted for k in emulators if k.endswith("_API_KEY")})
    store = tmp_path / "leak.sqlite"
    url = f"sqlite:///{store}"
    proc = run_cli("run", "--models", ",".join(CLOUD), "--datasets", DATASETS, "--sample-size", "1",
                   "--store", url, "--no-progress", env=env, check=False)
    assert proc.returncode == 1, proc.stderr  # every row failed
    rows = _rows(url)
    assert {r["model_id"] for r in rows} == set(CLOUD)
    assert all(r["status"] == "auth_error" for r in rows), [(r["model_id"], r["status"], r["reason"]) for r in rows]
    texts = [proc.stdout, proc.stderr, json.dumps(rows),
             run_cli("export", "--format", "csv", "--store", url).stdout,
             run_cli("leaderboard", "--format", "json", "--store", url).stdout]
    assert all(planted not in text for text in texts)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert planted.encode() not in path.read_bytes(), path


def test_whisper_1_as_the_tts_intelligibility_instrument(emulators, store_url: str):
    """With an OpenAI key, `[boards.tts] instrument = "openai/whisper-1"` scores TTS through it."""
    run_cli("run", "--models", "cartesia/sonic-3.5-2026-05-04", "--datasets", "tts-prompts", "--sample-size", "2",
            "--store", store_url, "--no-progress",
            env={**emulators, "VOXWATCH_BOARDS_TTS_INSTRUMENT": "openai/whisper-1"})
    rows = _rows(store_url)
    assert len(rows) == 2 and all(r["instrument_id"] == "openai/whisper-1" for r in rows)
    # the OpenAI emulator answers an unknown recording with its scenario's default transcript
    assert all(r["status"] == "ok" and r["hypothesis"] == "hello" and not r["instrument_error"] for r in rows)


def test_whisper_1_as_instrument_needs_its_key(store_url: str):
    proc = run_cli("run", "--models", "espeak-ng/en-us@1.52.0", "--sample-size", "1", "--store", store_url,
                   env={"VOXWATCH_BOARDS_TTS_INSTRUMENT": "openai/whisper-1"}, check=False)
    assert proc.returncode == 2 and "set VOXWATCH_OPENAI_API_KEY to use it" in proc.stderr
