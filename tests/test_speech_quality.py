"""Speech quality (METHOD "Speech quality"): the DNSMOS P.835 instrument from the speechmos wheel, its
weights checked by sha256, a TTS row's score, both stores keeping it (migration 16 on Postgres) and
the board, the API and the CSV publishing the metric's mean of the stored rows."""

import asyncio
import csv
import io
import re
import shutil
import time
from dataclasses import replace
from pathlib import Path

import httpx
import numpy as np
import pytest

from voxwatch.boards import comparisons as board_comparisons
from voxwatch.boards import leaderboard
from voxwatch.datasets import degrade
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.audio import normalize_loudness, resample
from voxwatch.foundation.observation import Observation
from voxwatch.harness.measure import MeasureContext, measure_item
from voxwatch.harness.tick import speech_quality
from voxwatch.metrics.series import MIN_N
from voxwatch.providers.local.dnsmos_quality import INSTRUMENT_ID, DnsmosQuality, ModelIntegrityError, model_path
from voxwatch.providers.local.espeak_engine import EspeakEngine
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.store.layout import CONTEXT_FIELDS, digest_of
from voxwatch.metrics.published import rounded
from voxwatch.store.migrations import columns

from support.postgres import fresh_postgres
from support.processes import run_cli
from support.web_seed import seeded_store, serving

REGISTRY = Registry.default()
TTS = REGISTRY.resolve("espeak-ng/en-us@1.52.0")
SENTENCE = "Please send the package to forty two Maple Avenue before noon on Friday."


def _espeak16k(text: str = SENTENCE) -> np.ndarray:
    engine = EspeakEngine.get()
    return normalize_loudness(resample(engine.render(text, "en-us", 170) / 32768.0, engine.sample_rate, degrade.RATE))


def test_the_instrument_scores_clean_speech_above_the_same_speech_under_heavy_noise():
    clean = _espeak16k()
    noisy = degrade.noise(clean, 0.0, clean.size / degrade.RATE, np.random.default_rng(3), snr_db=0.0).audio
    instrument = DnsmosQuality.get()
    clean_mos, noisy_mos = instrument.score(clean), instrument.score(noisy)
    assert 1.0 <= noisy_mos < clean_mos - 0.5 and clean_mos <= 5.0, (clean_mos, noisy_mos)
    assert DnsmosQuality().score(clean) == clean_mos  # deterministic: the same audio, the same score


def test_the_same_audio_is_scored_once_and_kept_scores_are_bounded(monkeypatch):
    """A pure function of its input, so a process keeps its scores by the audio's digest (SCORES_KEPT)."""
    from voxwatch.providers.local import dnsmos_quality

    instrument, clean = DnsmosQuality(), _espeak16k()
    runs = []
    session_run = instrument._session.run
    monkeypatch.setattr(instrument, "_session", type("Counted", (), {
        "run": staticmethod(lambda *a, **k: runs.append(1) or session_run(*a, **k))})())
    first = instrument.score(clean)
    windows = len(runs)
    assert instrument.score(clean.copy()) == first and len(runs) == windows  # kept: no window scored again
    louder = clean * 0.5
    assert instrument.score(louder) != first and len(runs) == 2 * windows  # other audio is scored
    monkeypatch.setattr(dnsmos_quality, "SCORES_KEPT", 1)
    instrument.score(clean[:16000])
    assert list(instrument._scored) == [dnsmos_quality.hashlib.blake2b(
        clean[:16000].astype(np.float32).tobytes(), digest_size=16).digest()]


def test_a_corrupt_weights_file_is_refused_by_its_sha256(tmp_path: Path):
    corrupt = tmp_path / "sig_bak_ovr.onnx"
    shutil.copyfile(model_path(), corrupt)
    with corrupt.open("r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ModelIntegrityError) as refused:
        DnsmosQuality(corrupt)
    message = str(refused.value)
    assert "\n" not in message and str(corrupt) in message and "does not match" in message
    # in the harness: the row is measured, unscored, and says why (an instrument error, not the provider's)
    prompts = Catalog([bundled_root()]).load("tts-prompts")
    ctx = MeasureContext(run_id="r", seed=1, region="test", timeout_s=30.0, quality=lambda a: DnsmosQuality(corrupt).score(a))
    row = asyncio.run(measure_item(TTS, REGISTRY.create(TTS), prompts, prompts.prompts[0], ctx))
    assert row.status == "ok" and row.quality_mos is None and row.quality_instrument == INSTRUMENT_ID
    assert row.instrument_error.startswith(f"{INSTRUMENT_ID}: ModelIntegrityError") and "does not match" in row.instrument_error


def test_a_tts_row_carries_the_speech_quality_of_its_synthesized_audio():
    prompts = Catalog([bundled_root()]).load("tts-prompts")
    heard: list[np.ndarray] = []

    def instrument(audio16k: np.ndarray) -> float:
        heard.append(audio16k)
        return speech_quality(audio16k)

    ctx = MeasureContext(run_id="r", seed=1, region="test", timeout_s=30.0, quality=instrument)
    row = asyncio.run(measure_item(TTS, REGISTRY.create(TTS), prompts, prompts.prompts[0], ctx))
    assert row.status == "ok" and row.quality_instrument == INSTRUMENT_ID and row.instrument_error is None
    assert len(heard) == 1 and heard[0].size / 16000 == pytest.approx(row.audio_duration_s, abs=0.05)  # once, all of it
    assert row.quality_mos == DnsmosQuality.get().score(heard[0]) and 1.0 < row.quality_mos < 5.0
    unscored = asyncio.run(measure_item(TTS, REGISTRY.create(TTS), prompts, prompts.prompts[0],
                                        MeasureContext(run_id="r", seed=1, region="test", timeout_s=30.0)))
    assert (unscored.quality_mos, unscored.quality_instrument) == (None, None)


@pytest.mark.realtime
def test_an_s2s_row_carries_the_speech_quality_of_the_models_reply(tmp_path: Path):
    """The single-turn S2S harness on the local cascade (real engines): the reply it spoke is scored, once."""
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    model = REGISTRY.resolve("local/cascade-scripted-baseline")
    heard: list[np.ndarray] = []

    def instrument(audio16k: np.ndarray) -> float:
        heard.append(audio16k)
        return speech_quality(audio16k)

    ctx = MeasureContext(run_id="s2s", seed=1, region="local", timeout_s=60, recordings_dir=tmp_path, quality=instrument)
    row = asyncio.run(measure_item(model, REGISTRY.create(model), ds, ds.clips[0], ctx))
    assert row.status == "ok" and row.v2v_ms is not None, row.reason
    assert len(heard) == 1 and heard[0].size / 16000 == pytest.approx(row.audio_duration_s, abs=0.05)
    assert row.quality_instrument == INSTRUMENT_ID and row.quality_mos == DnsmosQuality.get().score(heard[0])


def _rows() -> list[Observation]:
    now = time.time()
    out = []
    for i in range(12):
        out.append(Observation(
            run_id=f"r{i % 3}", model_id="espeak-ng/en-us@1.52.0", dataset="tts-prompts", clip_id=f"p{i % 6}",
            attempt=1 + i // 6, board="tts", vendor="espeak-ng", protocol="tts-stream", region="local",
            started_at=now - 60 * i, status="ok", ttfa_ms=80.0 + i, ttfb_ms=60.0 + i, leading_silence_ms=5.0,
            connect_ms=1.0, method_version="9", instrument_id="faster-whisper/tiny.en@1.2.1",
            quality_mos=2.0 + 0.1 * i + 0.05 * (i % 2), quality_instrument=INSTRUMENT_ID))
    out.append(replace(out[0], clip_id="t", status="timeout", ttfa_ms=None, ttfb_ms=None, quality_mos=None))
    out.append(replace(out[1], clip_id="u", quality_mos=None, quality_instrument=INSTRUMENT_ID,
                       instrument_error="instrument unavailable"))
    return out


def _direct(rows: list[Observation]) -> float:
    """The metric's definition on the stored rows: the mean score of the ok rows that have one."""
    scored = [r.quality_mos for r in rows if r.status == "ok" and r.quality_mos is not None]
    assert len(scored) >= MIN_N
    return sum(scored) / len(scored)


def _check(store) -> None:
    stored = list(store.observations())
    assert {(r.clip_id, r.attempt): (r.quality_mos, r.quality_instrument) for r in stored} == \
        {(r.clip_id, r.attempt): (r.quality_mos, r.quality_instrument) for r in _rows()}
    board = leaderboard.from_store(store, "30d")
    assert board and all(r.quality_mos == pytest.approx(_direct(stored)) and r.quality_clips == 12 for r in board)
    low, high = board[0].quality_mos_ci
    assert 1.0 <= low < board[0].quality_mos < high
    table = leaderboard.format_table(board, "30d", comparisons=board_comparisons.from_store(store, "30d"))
    assert "speech quality MOS [95% CI]" in table and f"{_direct(stored):.2f} [{low:.2f}, {high:.2f}] (12 clips)" in table


def test_the_store_keeps_a_rows_speech_quality_sqlite(store_url: str):
    assert _direct(_rows()) == pytest.approx(2.0 + 0.1 * 5.5 + 0.05 * 0.5)  # hand count over the 12 scored rows
    store = open_store(store_url)
    store.add(_rows())
    _check(store)
    store.close()


def test_the_store_keeps_a_rows_speech_quality_postgres(postgres_store_url: str):
    store = open_store(postgres_store_url)
    store.add(_rows())
    _check(store)
    store.close()


def test_migration_16_adds_the_columns_and_keeps_each_stored_context_one_entry():
    with fresh_postgres() as url:
        store = open_store(url)
        store.add(_rows()[:1])
        conn = store.connection()
        # the store as migration 15 left it: no quality columns, contexts digested without the new field
        conn.execute("DROP VIEW observations CASCADE")
        conn.execute("ALTER TABLE obs_facts DROP COLUMN quality_mos")
        conn.execute("ALTER TABLE obs_contexts DROP COLUMN quality_instrument")
        old = digest_of(tuple(f for f in CONTEXT_FIELDS if f != "quality_instrument"), "o",
                        {**dict(columns(Observation))})
        conn.execute(f"UPDATE obs_contexts AS c SET digest = {old} FROM obs_contexts o WHERE o.ref = c.ref")
        conn.execute("DELETE FROM schema_migrations WHERE version = 16")
        store.close()
        again = open_store(url)
        assert again.migrated == [16]
        again.add([replace(_rows()[2], quality_instrument=None, quality_mos=None)])  # the same context as the first row
        assert again.connection().execute("SELECT count(*) FROM obs_contexts").fetchone()[0] == 1
        again.add(_rows()[3:4])  # a scored row: its instrument is a new context
        back = {r.clip_id: (r.quality_mos, r.quality_instrument) for r in again.observations()}
        assert back["p3"] == (_rows()[3].quality_mos, INSTRUMENT_ID) and back["p2"] == (None, None)
        again.close()
        assert "schema up to date" in run_cli("db", "upgrade", "--store", url).stdout


@pytest.mark.e2e
def test_the_board_the_api_and_the_csv_show_the_metrics_speech_quality(tmp_path: Path):
    rows = _rows()
    expected = _direct(rows)
    with seeded_store(rows) as url, serving(url, tmp_path / "serve.log") as base:
        api = httpx.get(f"{base}/api/v1/leaderboard", params={"board": "tts"}).json()["rows"]
        page = httpx.get(f"{base}/board/tts").text
        table = list(csv.DictReader(io.StringIO(httpx.get(f"{base}/board/tts", params={"format": "csv"}).text)))
    assert api and all(r["quality_mos"] == rounded(expected, "fraction") and r["quality_clips"] == 12 for r in api)
    assert table and all(float(r["quality_mos"]) == pytest.approx(expected) for r in table)
    low, high = api[0]["quality_mos_ci"]
    assert [rounded(float(r["quality_mos_ci_low"]), "fraction") for r in table] == [low] * len(table)  # API: published
    shown = re.findall(r'data-field="quality_mos" data-value="([^"]+)">([\d.]+)<br><small>12 clips', page)
    assert len(shown) == 1 and float(shown[0][0]) == pytest.approx(expected) and shown[0][1] == f"{expected:.2f}"
    assert f'data-field="quality_mos_ci" class="ci">[{low:.2f}, {high:.2f}]' in page
