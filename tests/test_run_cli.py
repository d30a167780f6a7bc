"""`voxwatch` as a user runs it: real engines, a real SQLite file, subprocesses."""

import csv
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from support.processes import run_cli
from voxwatch.foundation.store_url import parse_store_url
from support.contract import RIG_MS
from voxwatch.datasets.catalog import bundled_root
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.series import pooled_wer
from voxwatch.providers.local.espeak_engine import EspeakEngine

pytestmark = pytest.mark.e2e

PS = "pocketsphinx/en-us@5.1.1"
WHISPER = "faster-whisper/tiny.en@1.2.1"
ESPEAK = "espeak-ng/en-us@1.52.0"


def _export(store_url: str) -> list[dict]:
    out = run_cli("export", "--format", "jsonl", "--store", store_url).stdout
    return [json.loads(line) for line in out.splitlines()]


def _stored(store_url: str) -> bool:
    """Whether anything was stored: a read-only `voxwatch export` refuses a store that was never created."""
    return parse_store_url(store_url).path.exists() and bool(_export(store_url))


def _board(store_url: str) -> list[dict]:
    return json.loads(run_cli("leaderboard", "--format", "json", "--store", store_url).stdout)["rows"]


def test_a_tick_measures_every_board_and_a_second_tick_adds_a_run(store_url: str, tmp_path: Path):
    one_turn = {"VOXWATCH_BOARDS_S2S_CONVERSATION_TURNS": "1", "VOXWATCH_RUN_RECORDINGS_DIR": str(tmp_path)}
    first = run_cli("run", "--sample-size", "2", "--seed", "11", "--store", store_url, "--no-progress", env=one_turn)
    assert "succeeded: 16 observations" in first.stdout  # and 2 clips without speech a model, 2 empty prompts
    assert "STT board" in first.stdout and "TTS board" in first.stdout
    assert "S2S conversation board: local/cascade-scripted-baseline" in first.stdout  # and the board's conversations
    every = _export(store_url)
    assert len(every) == 16 and {r["status"] for r in every} == {"ok"}
    silent = [r for r in every if r["dataset"] in ("stt-nonspeech", "tts-empty")]
    assert len(silent) == 6 and all(r["invented_words"] is not None or r["invented_audio_ms"] is not None
                                    for r in silent)  # scored for what was made of nothing, with no clock
    assert all(r["ttfs_ms"] is None and r["latency_ms"] is None and r["ttfa_ms"] is None for r in silent)
    rows = [r for r in every if r not in silent]
    by_model = {m: [r for r in rows if r["model_id"] == m] for m in (PS, WHISPER, ESPEAK)}
    assert all(r["ttfs_ms"] is not None and r["first_partial_ms"] is not None and r["connect_ms"] is not None
               for r in by_model[PS])
    # pocketsphinx finalizes at the end of the stream, which is sent 100 ms after the end of speech
    assert all(r["ttfs_ms"] > 0 for r in by_model[PS])
    assert all(r["latency_ms"] > 0 and r["rtf"] > 0 for r in by_model[WHISPER])
    assert all(r["ttfa_ms"] >= r["ttfb_ms"] > 0 and r["leading_silence_ms"] is not None and r["ref_words"] > 0
               and r["instrument_id"] == WHISPER for r in by_model[ESPEAK])
    # one draw for every model on the board, the same utterances in every condition of the family
    draws = {}
    for r in rows:
        if r["board"] == "stt":
            draws.setdefault((r["model_id"], r["dataset"]), []).append(r["utterance_id"])
    assert len(draws) == 4
    assert len({tuple(sorted(v)) for v in draws.values()}) == 1 and len(next(iter(draws.values()))) == 2
    assert {r["method_version"] for r in rows} == {METHOD_VERSION} and all(r["vad_params"] and r["normalizer_version"] for r in rows)
    assert {r["region"] for r in rows} == {"local"} and len({r["run_id"] for r in rows}) == 1
    (listed,) = [r for r in json.loads(run_cli("runs", "list", "--format", "json", "--store", store_url).stdout)
                 if r["run"] == rows[0]["run_id"]]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", listed[k]) for k in ("started", "finished"))  # ISO 8601 UTC

    run_cli("run", "--sample-size", "2", "--store", store_url, "--no-progress",
            env={"VOXWATCH_BOARDS_S2S_CONVERSATION_MODELS": ""})  # no conversation: [boards.s2s] lists none
    rows = _export(store_url)
    assert len(rows) == 32 and len({r["run_id"] for r in rows}) == 2
    board = _board(store_url)
    ttfs = next(b for b in board
                if b["model_id"] == PS and b["dataset"] == "stt-recorded-clean" and b["metric"] == "ttfs_ms")
    assert ttfs["n"] == 4 and ttfs["p50"] is None  # n < 5 shows as n/a

    # the exported rows let anyone recompute the pooled WER; 4 scored clips are under its floor of 5
    table = list(csv.DictReader(io.StringIO(run_cli("export", "--format", "csv", "--store", store_url).stdout)))
    mine = [r for r in table if r["model_id"] == PS and r["dataset"] == "stt-recorded-clean"]
    errors = [int(r["substitutions"]) + int(r["deletions"]) + int(r["insertions"]) for r in mine]
    words = [int(r["ref_words"]) for r in mine]
    assert ttfs["wer_clips"] == len(mine) == 4 and ttfs["wer_words"] == sum(words)
    assert ttfs["pooled_wer"] is None and pooled_wer(errors, words) is None
    assert pooled_wer(errors + errors[:1], words + words[:1]) == pytest.approx((sum(errors) + errors[0]) / (sum(words) + words[0]))
    assert ttfs["rank"] is None and ttfs["ranked_by"] == "ttfs_ms"  # the API's shape: n < 5 has no interval to rank
    assert run_cli("leaderboard", "--window", "24h", "--format", "csv", "--store", store_url).stdout.startswith("board,")


def _speech_folder(folder: Path) -> None:
    """Three utterances at 22.05 kHz: a stereo WAV, a FLAC and a mono WAV, with a manifest."""
    engine = EspeakEngine.get()
    texts = {"a": "I need to reset my password.", "b": "Please call me back tomorrow.", "c": "Yes, that is correct."}
    folder.mkdir()
    lines = []
    for i, (cid, text) in enumerate(texts.items()):
        x = engine.render(text, "en-us", 170) / 32768.0
        x = np.concatenate([np.zeros(8000), x, np.zeros(8000)]) * 0.5
        name = ["a.wav", "b.flac", "c.wav"][i]
        data = np.stack([x, x], axis=1) if cid == "a" else x
        sf.write(folder / name, data, engine.sample_rate)
        lines.append(json.dumps({"id": cid, "path": name, "text": text}))
    (folder / "manifest.jsonl").write_text("\n".join(lines) + "\n")


def test_bring_your_own_audio_then_measure_it(tmp_path: Path, store_url: str):
    source = tmp_path / "mine"
    _speech_folder(source)
    env = {"VOXWATCH_DATASETS_DIR": str(tmp_path / "catalog")}
    out = run_cli("datasets", "import", str(source), "--name", "my-calls", env=env).stdout
    assert "imported 3 clips" in out
    listing = run_cli("datasets", "list", env=env).stdout
    assert any(line.split()[:6] == ["my-calls", "audio", "my-calls", "imported", "en", "3"]
               for line in listing.splitlines())
    manifest = [json.loads(l) for l in (tmp_path / "catalog" / "my-calls" / "manifest.jsonl").read_text().splitlines()]
    assert all(m["sample_rate"] == 16000 and 0.3 < m["speech_start"] < m["speech_end"] for m in manifest)
    run_cli("run", "--datasets", "my-calls", "--models", PS, "--sample-size", "10", "--store", store_url,
            "--no-progress", env=env)
    rows = _export(store_url)
    assert sorted(r["clip_id"] for r in rows) == ["a", "b", "c"] and {r["status"] for r in rows} == {"ok"}
    assert all(r["dataset"] == "my-calls" and r["condition"] == "imported" for r in rows)
    again = run_cli("datasets", "import", str(source), "--name", "my-calls", env=env, check=False)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_a_corrupt_file_in_an_import_is_named_and_nothing_is_written(tmp_path: Path):
    source = tmp_path / "mine"
    _speech_folder(source)
    (source / "b.flac").write_bytes(b"fLaC" + b"\x00garbage" * 20)
    catalog = tmp_path / "catalog"
    proc = run_cli("datasets", "import", str(source), "--name", "broken", check=False,
                   env={"VOXWATCH_DATASETS_DIR": str(catalog)})
    assert proc.returncode == 2 and "b.flac" in proc.stderr and "Traceback" not in proc.stderr
    assert not any(catalog.iterdir())


def test_a_tampered_dataset_aborts_the_run_before_anything_is_stored(tmp_path: Path, store_url: str):
    catalog = tmp_path / "catalog"
    shutil.copytree(bundled_root() / "stt-starter-noise", catalog / "copy-noise")
    info = json.loads((catalog / "copy-noise" / "dataset.json").read_text())
    (catalog / "copy-noise" / "dataset.json").write_text(json.dumps({**info, "name": "copy-noise"}))
    victim = catalog / "copy-noise" / "clips" / "u020.wav"
    victim.write_bytes(victim.read_bytes()[:-2] + b"\x01\x02")
    proc = run_cli("run", "--datasets", "copy-noise", "--models", PS, "--store", store_url, "--no-progress",
                   check=False, env={"VOXWATCH_DATASETS_DIR": str(catalog)})
    assert proc.returncode == 2 and "u020.wav" in proc.stderr and "sha256" in proc.stderr
    assert not _stored(store_url)


@pytest.mark.parametrize("args, message", [
    (["run", "--models", "pocketsphinx/latest"], "floating alias"),
    (["run", "--models", "pocketsphinx/en-us"], "exact versioned id: pocketsphinx/en-us@5.1.1"),
    (["run", "--datasets", "no-such-set"], "unknown dataset 'no-such-set'"),
    (["run", "--datasets", "stt-starter-claen"], "did you mean stt-starter-clean"),  # foundation.text.did_you_mean
    (["run", "--models", "faster-whisper/tiny-en@1.2.1"], "did you mean faster-whisper/tiny.en@1.2.1"),
    (["run", "--datasets", "tts-prompts", "--models", PS], "fit no board"),
    (["leaderboard", "--store", "mysql://x"], "expected sqlite"),
])
def test_bad_requests_get_one_clear_line(args, message, store_url):
    proc = run_cli(*args, "--store", store_url, check=False) if "--store" not in args else run_cli(*args, check=False)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_a_bad_config_file_names_the_key(tmp_path: Path):
    bad = tmp_path / "voxwatch.toml"
    bad.write_text("[run]\nsample_size = -3\n")
    proc = run_cli("--config", str(bad), "run", check=False)
    assert proc.returncode == 2 and "[run] sample_size = -3: expected a positive integer" in proc.stderr


def test_a_cloud_model_without_its_key_is_skipped_with_one_line_and_local_engines_still_run(store_url: str):
    proc = run_cli("run", "--models", f"deepgram/nova-3,{ESPEAK}", "--sample-size", "2", "--store", store_url,
                   "--no-progress")
    assert "skipped deepgram/nova-3: set VOXWATCH_DEEPGRAM_API_KEY to measure it" in proc.stdout
    assert {r["model_id"] for r in _export(store_url)} == {ESPEAK}


def test_a_cloud_model_against_its_emulator_end_to_end(store_url: str):
    """The CLI path with a base URL override: rows are measured, labelled emulator, and kept off the board."""
    from voxwatch.providers.emulators.scenario import TTSScenario
    from voxwatch.providers.emulators.server import serve

    with serve("cartesia", TTSScenario(ttfb_ms=70.0, api_key="emu-key")) as url:
        run_cli("run", "--models", "cartesia/sonic-3.5-2026-05-04", "--sample-size", "3", "--store", store_url, "--no-progress",
                env={"VOXWATCH_CARTESIA_BASE_URL": url, "VOXWATCH_CARTESIA_API_KEY": "emu-key"})
    every = _export(store_url)
    assert len(every) == 5 and all(r["status"] == "ok" and r["emulator"] for r in every)  # 2 empty prompts too
    rows = [r for r in every if r["dataset"] == "tts-prompts"]
    assert len(rows) == 3 and all(r["invented_audio_ms"] > 0 for r in every if r["dataset"] == "tts-empty")
    # the definition (from the request), not precision (the contract tests' and clock_truth's): the best row on time
    assert min(abs(r["ttfb_ms"] - 70.0) for r in rows) < RIG_MS
    assert _board(store_url) == []


def test_providers_list_shows_every_id_with_its_board():
    out = run_cli("providers", "list", "--wide").stdout  # every column (the fitted table names no board)
    for model, board in ((PS, "stt"), (WHISPER, "stt"), (ESPEAK, "tts")):
        assert any(line.split()[:2] == [model, board] for line in out.splitlines())


REALTIME = "openai/gpt-realtime-2025-08-28"


def _providers(day: str) -> tuple[dict[str, dict[str, str]], dict[str, str], str]:
    """`voxwatch providers list` on a pinned day: its table by id, its `checked against` lines, the text."""
    out = run_cli("providers", "list", "--wide", env={"VOXWATCH_TODAY": day}).stdout  # every column, a row a line
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("id "))
    names = ["id", "board", "protocol", "status", "key", "checked", "deprecated", "shutdown", "successor", "session limit",
             "price", "price checked", "source file"]
    starts = [lines[header].index(n) for n in names] + [None]
    table = {}
    for line in lines[header + 1:lines.index("", header)]:
        cells = {n: line[a:b].strip() for n, a, b in zip(names, starts, starts[1:])}
        table[cells["id"]] = cells
    sources = {}
    for line in lines[lines.index("checked against:") + 1:]:
        if not line.strip():
            break
        model, source = line.split(None, 1)
        sources[model] = source
    return table, sources, out


def test_providers_list_shows_the_check_date_source_and_deprecation_of_every_entry():
    from voxwatch.providers.registry import Registry

    registry = Registry.default()
    table, sources, out = _providers("2026-12-01")
    assert "statuses on 2026-12-01" in out and set(table) == set(sources) == set(registry.models)
    for model_id, m in registry.models.items():
        row = table[model_id]
        assert row["checked"] == str(m.checked) and sources[model_id] == m.source
        assert row["deprecated"] == str(m.deprecated or "-") and row["shutdown"] == str(m.shutdown or "-")
        assert row["successor"] == (m.successor or "-")
    assert table["openai/whisper-1"]["deprecated"] == "2026-08-26" and table["openai/whisper-1"]["shutdown"] == "2027-02-26"
    assert table[REALTIME]["status"] == "active, retiring 2027-01-20" and table[REALTIME]["session limit"] == "3600 s"
    assert table["openai/whisper-1"]["status"] == "active, retiring 2027-02-26"
    assert table["cartesia/sonic-3.5"]["status"] == "retired" and table["deepgram/nova-3"]["status"] == "active"
    assert "vendors (how each versions its models):" in out and re.search(r"^  cartesia +dated ", out, re.MULTILINE)

    later, _, _ = _providers("2027-01-20")  # the shutdown day itself: retired
    assert later[REALTIME]["status"] == "retired 2027-01-20"
    assert later["openai/gpt-4o-mini-tts-2025-12-15"]["status"] == "retired 2027-01-06"
    assert later["openai/whisper-1"]["status"] == "active, retiring 2027-02-26"
    earlier, _, _ = _providers("2026-09-01")  # more than 90 days before any shutdown: no warning yet
    assert earlier[REALTIME]["status"] == "active" and earlier["openai/whisper-1"]["status"] == "active"


def test_a_retired_model_is_skipped_by_run_and_a_retiring_one_is_measured_with_a_warning(store_url: str):
    from voxwatch.providers.emulators.scenario import STTScenario
    from voxwatch.providers.emulators.server import serve

    env = {"VOXWATCH_TODAY": "2027-01-20", "VOXWATCH_OPENAI_API_KEY": "k-never-used"}
    proc = run_cli("run", "--models", REALTIME, "--datasets", "stt-starter-clean", "--store", store_url,
                   "--no-progress", env=env)
    assert f"skipped {REALTIME}: retired 2027-01-20; successor openai/gpt-realtime-2.1" in proc.stdout
    assert "nothing to measure" in proc.stdout and not _stored(store_url)
    with serve("openai", STTScenario(transcript="hello", speech_start_s=0.2, speech_end_s=1.0,
                                     api_key="emu-key")) as url:  # whisper-1 retires 2027-02-26: measured, warned
        proc = run_cli("run", "--models", f"{REALTIME},openai/whisper-1", "--datasets", "stt-starter-clean",
                       "--sample-size", "2", "--store", store_url, "--no-progress",
                       env={**env, "VOXWATCH_OPENAI_API_KEY": "emu-key", "VOXWATCH_OPENAI_BASE_URL": url})
    assert "warning: openai/whisper-1 is retiring 2027-02-26; successor openai/gpt-transcribe:http" in proc.stdout
    assert f"skipped {REALTIME}: retired" in proc.stdout
    assert {(r["model_id"], r["status"]) for r in _export(store_url)} == {("openai/whisper-1", "ok")}


def _history_rows(path: Path) -> None:
    """Stored rows of a model that has since retired, and of one that has not (not emulated: on the board)."""
    import time
    from dataclasses import asdict

    from voxwatch.foundation.observation import Observation

    rows = []
    for i in range(6):
        for model_id, board, protocol, value in ((REALTIME, "s2s", "s2s", {"v2v_ms": 700.0 + i}),
                                                  (PS, "stt", "stt-stream", {"ttfs_ms": 300.0 + i})):
            rows.append(Observation(run_id=f"r{i}", model_id=model_id, dataset="stt-starter-clean", clip_id=f"c{i}",
                                    attempt=1, board=board, vendor=model_id.split("/")[0], protocol=protocol,
                                    region="us-east", started_at=time.time() - 3600 * (i + 1), status="ok",
                                    method_version=METHOD_VERSION, emulator=False, **value))
    path.write_text("".join(json.dumps(asdict(r)) + "\n" for r in rows))


def test_the_cli_board_keeps_a_retired_models_rows_and_marks_it(store_url: str, tmp_path: Path):
    _history_rows(tmp_path / "rows.jsonl")
    run_cli("ingest", str(tmp_path / "rows.jsonl"), "--store", store_url)
    for day, notice in (("2027-01-20", "retired 2027-01-20; successor openai/gpt-realtime-2.1"),
                        ("2026-12-01", "retiring 2027-01-20; successor openai/gpt-realtime-2.1")):
        env = {"VOXWATCH_TODAY": day}
        table = run_cli("leaderboard", "--store", store_url, env=env).stdout
        assert f"  status: {REALTIME} {notice}" in table and REALTIME in table.split("S2S board")[1]
        assert f"status: {PS}" not in table
        doc = json.loads(run_cli("leaderboard", "--format", "json", "--store", store_url, env=env).stdout)
        assert doc["status_date"] == day
        mine = [r for r in doc["rows"] if r["model_id"] == REALTIME]
        assert mine and all(r["model_notice"] == notice for r in mine)
        assert [r["n"] for r in mine if r["metric"] == "v2v_ms"] == [6]  # the history stays
        assert {r["model_status"] for r in mine} == {"retired" if day == "2027-01-20" else "active"}
        assert {r["model_status"] for r in doc["rows"] if r["model_id"] == PS} == {"active"}
