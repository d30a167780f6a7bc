"""Contract tests: the Speechmatics real-time adapter against its loopback emulator, over real
sockets; the metrics computed from its events equal the injected truth (tolerances: contract.py).

The emulator finalizes a long transcript in two segments (one mid-speech, one `final_ms` after the
end of speech), so these tests also hold the adapter to Speechmatics' per-segment finals: the
hypothesis is the joined segments and TTFS the last segment's final.
"""

import pytest
from support.contract import KEY, fault_timeout_s, REGISTRY, assert_failure_row, assert_on_clock, measure, measure_three, serve

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators.scenario import STTScenario

MODEL = "speechmatics/enhanced-en"


@pytest.fixture(scope="module")
def clean():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return ds, next(c for c in ds.clips if c.id == "u049")


def _env(monkeypatch, url: str) -> None:
    monkeypatch.setenv("VOXWATCH_SPEECHMATICS_BASE_URL", url)
    monkeypatch.setenv("VOXWATCH_SPEECHMATICS_API_KEY", KEY)


@pytest.mark.realtime
def test_partials_segment_finals_and_the_forced_end_of_utterance(monkeypatch, clean):
    ds, clip = clean
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           first_partial_ms=180.0, final_ms=240.0, api_key=KEY)
    with serve("speechmatics", scenario) as url:
        _env(monkeypatch, url)
        streams = measure_three(MODEL, ds, clip)
    assert_on_clock(streams, "first_partial_ms", 180.0, clip=clip)
    assert_on_clock(streams, "ttfs_ms", 240.0, clip=clip)
    row = streams[0].row
    assert row.hypothesis == clip.text and row.substitutions == row.deletions == row.insertions == 0
    assert row.connect_ms is not None and row.emulator


@pytest.mark.realtime
@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final"])
def test_failures_become_rows(monkeypatch, clean, fault):
    ds, clip = clean
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           api_key=KEY, fault=fault)
    with serve("speechmatics", scenario) as url:
        _env(monkeypatch, url)
        row = measure(MODEL, ds, clip, timeout_s=fault_timeout_s(fault))
    assert_failure_row(row, fault)


@pytest.mark.parametrize("region, host", [
    ("eu-west", "eu.rt.speechmatics.com"), ("europe-west1", "eu.rt.speechmatics.com"), ("EU", "eu.rt.speechmatics.com"),
    ("us-east-1", "us.rt.speechmatics.com"), ("us", "us.rt.speechmatics.com"),
    ("ap-southeast", "global.rt.speechmatics.com"), ("local", "global.rt.speechmatics.com"),
    ("user-lab", "global.rt.speechmatics.com"), (None, "global.rt.speechmatics.com"),
])
def test_the_endpoint_follows_the_worker_region(monkeypatch, region, host):
    """Documented Realtime hosts only: EU1 / US1 for workers in Europe / the US, else global (the nearest)."""
    from voxwatch.providers.stt.speechmatics import SpeechmaticsSTT
    from voxwatch.harness.tick import create_adapter

    monkeypatch.delenv("VOXWATCH_SPEECHMATICS_BASE_URL", raising=False)
    model = REGISTRY.resolve(MODEL)
    assert create_adapter(REGISTRY, model, region).url == f"wss://{host}"  # the worker's path to the adapter
    assert SpeechmaticsSTT(model, region).url == f"wss://{host}"


def test_the_base_url_overrides_the_region_choice(monkeypatch):
    monkeypatch.setenv("VOXWATCH_SPEECHMATICS_BASE_URL", "wss://global.rt.speechmatics.com/")
    adapter = REGISTRY.create(REGISTRY.resolve(MODEL), "eu-west")
    assert adapter.url == "wss://global.rt.speechmatics.com" and not adapter.emulator
