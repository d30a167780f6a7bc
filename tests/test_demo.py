"""`voxwatch demo` (voxwatch/cli/demo.py, voxwatch/store/demo.py, voxwatch/web/watermark.py): a separate
store of emulated rows, shown on every page and API document behind a watermark, never in the default
store, and refused as a place to measure into."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest
from starlette.testclient import TestClient

from voxwatch.cli.demo import as_board_rows, demo_models
from voxwatch.cli.emulate import VENDORS
from voxwatch.foundation.store_url import StoreError
from voxwatch.providers.registry import Registry
from voxwatch.store import demo, open_store
from voxwatch.web.app import create_app

from support.compare_seed import ROWS
from support.processes import run_cli

PAGES = ("/", "/board/stt", "/board/tts", "/board/s2s", "/compare/stt-stream", "/compare/tts", "/compare/s2s",
         "/bakeoff", "/method", "/alerts")
DOCUMENTS = ("/api/v1/leaderboard", "/api/v1/comparisons", "/api/v1/models", "/api/v1/compare/stt-stream",
             "/api/v1/compare/s2s-conversations", "/api/v1/conversations", "/api/v1/bakeoff")


def _store(tmp_path, marked: bool) -> str:
    url = f"sqlite:///{tmp_path / 'demo.sqlite'}"
    store = open_store(url)
    try:
        store.add(as_board_rows([r for r in ROWS if r.emulator] or ROWS[:50]) + list(ROWS))
    finally:
        store.close()
    if marked:
        demo.mark(url, "test: emulated rows")
    return url


def test_a_store_is_a_demo_store_only_when_marked(tmp_path):
    url = _store(tmp_path, marked=False)
    assert demo.note(url) is None
    demo.refuse_measuring(url)  # an ordinary store takes measurements
    demo.mark(url, "voxwatch demo: 2 ticks")
    assert demo.note(url) == "voxwatch demo: 2 ticks"
    with pytest.raises(StoreError, match="demo store of emulated rows"):
        demo.refuse_measuring(url)
    assert demo.note(f"sqlite:///{tmp_path / 'missing.sqlite'}") is None
    assert not (tmp_path / "missing.sqlite").exists()  # asking creates nothing
    assert demo.note("postgresql://postgres@127.0.0.1:5432/nowhere") is None  # never a Postgres store
    with pytest.raises(StoreError, match="a demo store is a SQLite file"):
        demo.mark("postgresql://postgres@127.0.0.1:5432/nowhere", "no")


def test_emulated_rows_become_the_demo_stores_board_rows_and_nothing_else_changes():
    emulated = [r for r in ROWS if r.emulator]
    assert emulated
    copied = as_board_rows(emulated)
    assert all(not r.emulator for r in copied)
    assert [replace(r, emulator=True) for r in copied] == emulated


def test_the_demo_measures_every_cloud_model_of_the_emulated_vendors():
    registry = Registry.default()
    models = demo_models(registry, ("deepgram", "openai", "xai"))
    ids = {m.id for m in models}
    assert "deepgram/nova-3" in ids and "xai/grok-voice-think-fast-2.0" in ids
    assert not any(registry.standing(m).retired for m in models)
    local = {m.id for m in models if not m.needs_key}  # the local engines, measured here, beside them
    assert {"pocketsphinx/en-us@5.1.1", "faster-whisper/tiny.en@1.2.1", "espeak-ng/en-us@1.52.0"} <= local
    assert all(m.vendor in ("deepgram", "openai", "xai") for m in models if m.needs_key)
    assert not any(registry.is_baseline(m.id) for m in models)


def test_every_page_and_document_of_a_demo_store_carries_the_watermark(tmp_path):
    url = _store(tmp_path, marked=True)
    with TestClient(create_app(url)) as client:
        for path in PAGES:
            page = client.get(path)
            assert page.status_code == 200, path
            assert demo.WATERMARK.split(":")[0] in page.text and 'class="watermark"' in page.text, path
            assert page.headers["x-voxwatch-data"] == "emulated"
            assert "This is a demo store" in page.text and "measured against emulators never appear" not in page.text
        for path in DOCUMENTS:
            doc = client.get(path)
            assert doc.status_code == 200, path
            assert doc.json()["watermark"] == demo.WATERMARK, path
            assert doc.headers["x-voxwatch-data"] == "emulated"
        board = client.get("/api/v1/leaderboard", params={"board": "stt"}).json()
        assert {r["model_id"] for r in board["rows"]} >= {"deepgram/nova-3"}  # the emulated rows are on its boards
        download = client.get("/api/v1/comparisons", params={"format": "csv"})
        assert download.headers["x-voxwatch-data"] == "emulated" and list(csv.reader(io.StringIO(download.text)))


def test_an_ordinary_store_has_no_watermark(tmp_path):
    url = _store(tmp_path, marked=False)
    with TestClient(create_app(url)) as client:
        page = client.get("/board/stt")
        doc = client.get("/api/v1/leaderboard")
    assert 'class="watermark"' not in page.text and "x-voxwatch-data" not in page.headers
    assert "watermark" not in doc.json() and json.loads(doc.text)["rows"]


@pytest.mark.e2e  # `voxwatch demo` in a subprocess: the emulators of every vendor and one short tick (every
# registered cloud model still measured: two ticks of 26 vendors took it past its 600 s bound)
def test_voxwatch_demo_fills_its_own_store_watermarked_and_leaves_the_default_alone(tmp_path):
    url = f"sqlite:///{tmp_path / 'demo.sqlite'}"
    default = f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"
    env = {"VOXWATCH_STORE_URL": default, "VOXWATCH_STORE_SPOOL_DIR": str(tmp_path / "spool"),
           "VOXWATCH_RUN_RECORDINGS_DIR": str(tmp_path / "recordings")}
    shown = run_cli("demo", "--store", url, "--ticks", "1", "--sample-size", "2", "--conversation-turns", "0",
                    env=env).stdout
    assert demo.WATERMARK.split(":")[0] in shown and "deepgram/nova-3" in shown
    assert demo.note(url) is not None and not (tmp_path / "voxwatch.sqlite").exists()  # the default: never written
    store = open_store(url, create=False)
    try:
        rows = list(store.observations())
    finally:
        store.close()
    registry = Registry.default()
    measured = {r.model_id for r in rows}
    assert measured == {m.id for m in demo_models(registry, VENDORS)}  # every registered cloud model, and the local engines
    assert rows and not any(r.emulator for r in rows) and len({r.run_id for r in rows}) == 1
    exported = [json.loads(line) for line in run_cli("export", "--store", url, env=env).stdout.splitlines()]
    assert exported and all(r["emulator"] for r in exported)  # they leave the demo store as an emulator's rows
    doc = json.loads(run_cli("leaderboard", "--format", "json", "--store", url, env=env).stdout)
    assert doc["watermark"] == demo.WATERMARK and doc["rows"]
    refused = run_cli("run", "--store", url, "--models", "pocketsphinx/en-us@5.1.1", check=False, env=env)
    assert refused.returncode == 2 and "demo store of emulated rows" in refused.stderr
    again = run_cli("demo", "--store", default, check=False, env=env)  # the configured store is never the demo's
    assert again.returncode == 2 and "configured store" in again.stderr
