"""List prices in the registry (issue #31, "Price"): read from a user file under the registry's checks,
made comparable by metrics.price (docs/METHOD.md "Price"), stale after CHECK_MAX_AGE_DAYS, and the
money a confirmation burst costs; never a price for a model reached on an emulator."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest

from support.processes import run_cli
from test_registry import VENDOR
from test_user_registry import model
from voxwatch.alerts.bursts import EMULATOR, NO_PRICE, clip_price, cost, price_per_clip
from voxwatch.boards import leaderboard
from voxwatch.boards.prices import shown_price
from voxwatch.datasets.manifest import Clip, Prompt
from voxwatch.metrics.price import Price, board_figure
from voxwatch.providers.lifecycle import CHECK_MAX_AGE_DAYS
from voxwatch.providers.registry import Registry, RegistryError

ACME = VENDOR  # test_registry's vendor statement: "acme", snapshots = "none"
PRICED = ('price_usd = 0.0125', 'price_unit = "audio_minute"', 'price_source = "https://acme.example/pricing"',
          "price_checked = 2026-06-01")


def _registry(tmp_path: Path, text: str, today: dt.date | None = None) -> Registry:
    path = tmp_path / "my-models.toml"
    path.write_text(text)
    return Registry.default(today=today, files=[path])


def _refusal(tmp_path: Path, text: str) -> str:
    with pytest.raises(RegistryError) as exc:
        _registry(tmp_path, text)
    return str(exc.value)


def _stt(*price: str) -> str:
    return ACME + model("acme/ears-2", 'adapter = "voxwatch.providers.stt.openai_batch:OpenAIBatchSTT"', *price)


@pytest.mark.parametrize("fields, problem", [
    (('price_usd = -0.01', *PRICED[1:]), "price_usd must not be negative, got -0.01"),
    (('price_usd = "cheap"', *PRICED[1:]), "price_usd must be a number of US dollars, got 'cheap'"),
    (('price_usd = true', *PRICED[1:]), "price_usd must be a number of US dollars, got True"),
    ((PRICED[0], 'price_unit = "audio_second"', *PRICED[2:]), "price_unit must be one of"),
    ((PRICED[0], 'price_unit = "1m_characters"', *PRICED[2:]),
     "price_unit '1m_characters' does not fit the stt board"),
    (PRICED[:2], "a price needs price_source, price_checked too"),
    ((*PRICED, "price_output_usd = 0.02"), "price_output_usd is an S2S model's output price"),
    ((PRICED[0], PRICED[1], PRICED[2], 'price_checked = "2026-06-01"'), "price_checked must be a date"),
])
def test_the_registry_refuses_a_bad_price_in_one_line_naming_file_and_model(tmp_path: Path, fields, problem):
    message = _refusal(tmp_path, _stt(*fields))
    assert problem in message and "\n" not in message
    assert str(tmp_path / "my-models.toml") in message
    assert "acme/ears-2" in message or "model #1" in message  # the entry: its id, or its place where no id is read


def test_an_s2s_price_needs_its_output_price_and_a_tts_price_its_characters(tmp_path: Path):
    s2s = ACME + model("acme/talk-1", 'adapter = "voxwatch.providers.s2s.openai_realtime:OpenAIRealtimeS2S"',
                       "session_limit_s = 600", 'price_usd = 3.0', 'price_unit = "audio_hour"', *PRICED[2:],
                       protocol="s2s", board="s2s")
    assert "needs price_output_usd" in _refusal(tmp_path, s2s)
    tts = ACME + model("acme/voice-1", 'adapter = "voxwatch.providers.tts.openai:OpenAITTS"', 'voice = "v"',
                       *PRICED, protocol="tts-stream", board="tts")
    assert "does not fit the tts board" in _refusal(tmp_path, tts)


def test_a_bad_price_stops_the_cli_with_one_line_and_exit_2(tmp_path: Path):
    path = tmp_path / "my-models.toml"
    path.write_text(_stt('price_usd = -1', *PRICED[1:]))
    proc = run_cli("providers", "list", env={"VOXWATCH_REGISTRY_FILES": str(path)}, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "acme/ears-2" in lines[0] and "must not be negative" in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("price, board, figure", [
    (Price(0.006, "audio_minute", "s", dt.date(2026, 12, 1)), "stt", 6.0),  # $ per 1,000 audio minutes
    (Price(0.36, "audio_hour", "s", dt.date(2026, 12, 1)), "stt", 6.0),
    (Price(50.0, "1m_characters", "s", dt.date(2026, 12, 1)), "tts", 50.0),
    (Price(3.0, "audio_hour", "s", dt.date(2026, 12, 1), 6.0), "s2s", 4.5),  # half an hour in, half out
    (Price(0.05, "audio_minute", "s", dt.date(2026, 12, 1), 0.1), "s2s", 4.5),
    (Price(10.0, "1m_audio_tokens", "s", dt.date(2026, 12, 1), 20.0), "s2s", None),  # no stated token rate
])
def test_the_board_figure_is_the_methods_definition(price, board, figure):
    assert board_figure(price, board) == pytest.approx(figure) if figure is not None else board_figure(price, board) is None


def test_a_price_is_stale_after_the_check_age_and_the_boards_say_so(tmp_path: Path):
    checked = dt.date(2026, 6, 1)
    fresh_day, stale_day = checked + dt.timedelta(days=CHECK_MAX_AGE_DAYS), checked + dt.timedelta(days=CHECK_MAX_AGE_DAYS + 1)
    for day, stale in ((fresh_day, False), (stale_day, True)):
        registry = _registry(tmp_path, _stt(*PRICED), today=day)
        shown = shown_price(registry, "acme/ears-2")
        assert shown is not None and shown.stale is stale and shown.figure == pytest.approx(12.5)
        assert shown.checked == "2026-06-01" and shown.cell() == "$12.50" + (" (stale)" if stale else "")


def test_the_package_prices_are_sourced_and_local_engines_and_cascades_have_none():
    registry = Registry.default(files=[])
    priced = {m.id: m.price for m in registry.models.values() if m.price is not None}
    assert {"openai/whisper-1", "openai/gpt-realtime-2.1-mini", "elevenlabs/eleven_flash_v2_5:ws"} <= set(priced)
    for price in priced.values():
        assert price.source.strip() and price.checked <= registry.day
    assert not any(m.price for m in registry.models.values() if m.region == "local")
    for model_id, price in priced.items():  # a rate copied from Coval's data keeps the vendor's page first
        assert price.source.startswith("https://"), model_id
        if "Coval" in price.source:
            assert "coval-ai/benchmarks" in price.source and price.checked.isoformat() in price.source, model_id
    assert shown_price(registry, "cascade/local/x") is None


def _clip(seconds: float) -> Clip:
    return Clip(id="c1", utterance_id="u1", text="hello there", path="c1.wav", sha256="0" * 64, duration_s=seconds,
                sample_rate=16000, speech_start=0.2, speech_end=seconds - 0.2)


def test_a_bursts_price_per_clip_is_the_price_per_audio_hour_times_the_clip(tmp_path: Path, monkeypatch):
    registry = _registry(tmp_path, _stt(*PRICED))
    ears = registry.resolve("acme/ears-2")
    assert clip_price(ears, _clip(6.0)) == pytest.approx(0.0125 * 6.0 / 60)
    per_clip, why = price_per_clip([(ears, _clip(6.0)), (ears, _clip(12.0))])
    assert per_clip == pytest.approx(0.0125 * 9.0 / 60) and why == ""
    assert cost(10, per_clip) == f"10 extra clips (~${10 * per_clip:.4f})"
    flash = registry.resolve("elevenlabs/eleven_flash_v2_5:ws")
    assert clip_price(flash, Prompt("p1", "x" * 200, "short")) == pytest.approx(50.0 * 200 / 1e6)
    assert price_per_clip([(registry.resolve("pocketsphinx/en-us@5.1.1"), _clip(6.0))]) == (None, NO_PRICE)


def test_a_burst_against_an_emulator_never_has_a_price(tmp_path: Path, monkeypatch):
    registry = _registry(tmp_path, _stt(*PRICED))
    monkeypatch.setenv("VOXWATCH_ACME_BASE_URL", "http://127.0.0.1:8123")
    per_clip, why = price_per_clip([(registry.resolve("acme/ears-2"), _clip(6.0))])
    assert per_clip is None and why == EMULATOR
    assert "$" not in cost(10, per_clip, why)


def test_the_cli_table_has_a_price_column_and_its_legend():
    assert leaderboard.TABLE_HEADER[-1] == "price"
    assert "USD per 1,000 audio minutes" in leaderboard.price_legend("stt")
    assert f"checked over {CHECK_MAX_AGE_DAYS} days ago" in leaderboard.price_legend("tts")


def _listed(args: tuple[str, ...], env: dict[str, str]) -> dict[str, list[str]]:
    """`voxwatch providers list` rows by id: each row's cells as the table prints them (split at two spaces)."""
    out = run_cli("providers", "list", *args, env=env).stdout
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("id "))
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[start:lines.index("", start)]]
    return {cells[0]: dict(zip(rows[0], cells)) for cells in rows[1:] if len(cells) == len(rows[0])}


def test_providers_list_shows_each_list_price_with_its_unit_staleness_and_source(tmp_path: Path):
    path = tmp_path / "my-models.toml"
    path.write_text(_stt(*PRICED) + model("acme/ears-1", 'adapter = "voxwatch.providers.stt.openai_batch:OpenAIBatchSTT"'))
    fresh_day = (dt.date(2026, 6, 1) + dt.timedelta(days=CHECK_MAX_AGE_DAYS)).isoformat()
    env = {"VOXWATCH_REGISTRY_FILES": str(path), "VOXWATCH_TODAY": fresh_day}
    fitted = _listed((), env)
    assert fitted["acme/ears-2"]["price"] == "$0.0125/min"
    assert fitted["acme/ears-1"]["price"] == "-"  # no price found: the cell says none, never a guess
    assert fitted["pocketsphinx/en-us@5.1.1"]["price"] == "none: local"
    assert fitted["openai/whisper-1"]["price"] == "$0.006/min"
    assert fitted["elevenlabs/eleven_flash_v2_5:ws"]["price"] == "$50/1M chars"
    wide = _listed(("--wide",), env)
    assert wide["acme/ears-2"]["price checked"] == "2026-06-01" and wide["acme/ears-1"]["price checked"] == "-"
    out = run_cli("providers", "list", env=env).stdout
    assert re.search(r"^  acme/ears-2 +2026-06-01 +https://acme\.example/pricing$", out, re.M)  # the source, listed below

    stale_day = (dt.date(2026, 6, 1) + dt.timedelta(days=CHECK_MAX_AGE_DAYS + 1)).isoformat()
    stale_env = {**env, "VOXWATCH_TODAY": stale_day}
    assert _listed(("--wide",), stale_env)["acme/ears-2"]["price"] == "$0.0125/min (stale)"
    rows = {r["id"]: r for r in json.loads(run_cli("providers", "list", "--format", "json", env=stale_env).stdout)}
    ears = rows["acme/ears-2"]
    assert (ears["price usd"], ears["price unit"], ears["price stale"], ears["price source"], ears["price checked"]) == \
        (0.0125, "audio_minute", True, "https://acme.example/pricing", "2026-06-01")
    assert rows["openai/gpt-realtime-2.1-mini"]["price output usd"] == 20.0
    assert rows["acme/ears-1"]["price usd"] is None and rows["acme/ears-1"]["price"] is None


def test_a_short_price_names_its_unit_and_an_s2s_price_both_directions():
    checked = dt.date(2026, 12, 1)
    assert Price(0.36, "audio_hour", "s", checked).short_text() == "$0.36/hour"
    assert Price(10.0, "1m_audio_tokens", "s", checked, 20.0).short_text() == "$10 in, $20 out/1M tokens"
