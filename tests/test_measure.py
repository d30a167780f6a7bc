"""The harness envelope: every failure becomes a row with a status and a reason, never a latency.

The providers here are test doubles that speak the STT/TTS protocols and fail on purpose; the
real engines are covered in test_local_engines and test_run_cli.
"""

import asyncio

import numpy as np
import pytest

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.base import ProviderError
from voxwatch.foundation.events import AUDIO, CLOSED, REQUEST_SENT
from voxwatch.providers.keys import Secret
from voxwatch.providers.registry import Registry
from voxwatch.harness.measure import CLOCK_FIELDS, MeasureContext, measure_item

PLANTED = "sk-planted-0123456789abcdefXYZ"
REGISTRY = Registry.default()
STT = REGISTRY.resolve("pocketsphinx/en-us@5.1.1")
TTS = REGISTRY.resolve("espeak-ng/en-us@1.52.0")


@pytest.fixture(scope="module")
def clip_and_set():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return ds, min(ds.clips, key=lambda c: c.duration_s)


class _Session:
    def __init__(self, fail_on_send: bool) -> None:
        self.fail_on_send = fail_on_send

    async def send_audio(self, pcm16: bytes) -> None:
        if self.fail_on_send:
            raise ProviderError(f"401 Unauthorized: invalid key {PLANTED}")

    async def end_audio(self) -> None:
        return None

    async def wait_final(self) -> None:
        await asyncio.sleep(3600)  # never answers

    async def aclose(self) -> None:
        return None


class BrokenSTT:
    sample_rate = 16000

    def __init__(self, fail_on_send: bool) -> None:
        self.fail_on_send = fail_on_send

    async def connect(self, timeline):
        return _Session(self.fail_on_send)




class _QuietSession:
    def __init__(self, timeline) -> None:
        self.timeline = timeline

    async def synthesize(self, text: str) -> None:
        self.timeline.mark(REQUEST_SENT)
        quiet = (np.sin(np.arange(4800) / 5.0) * 100).astype("<i2")  # about -53 dBFS
        self.timeline.mark(AUDIO, sample_offset=0, n_samples=4800, sample_rate=24000, audio=quiet.tobytes())
        self.timeline.mark(CLOSED)

    async def aclose(self) -> None:
        return None


class QuietTTSAdapter:
    async def connect(self, timeline, voice=None):
        return _QuietSession(timeline)


def _ctx(**kw) -> MeasureContext:
    return MeasureContext(run_id="r", seed=1, region="test", timeout_s=0.5, secrets=(Secret(PLANTED),), **kw)


def _no_clocks(row) -> bool:
    return all(getattr(row, name) is None for name in CLOCK_FIELDS)


def test_a_provider_error_is_an_error_row_without_the_key(clip_and_set):
    ds, clip = clip_and_set
    row = asyncio.run(measure_item(STT, BrokenSTT(fail_on_send=True), ds, clip, _ctx()))
    assert row.status == "error" and "401 Unauthorized" in row.reason
    assert PLANTED not in row.reason and "***" in row.reason
    assert _no_clocks(row)


@pytest.mark.realtime
def test_no_final_within_the_limit_is_a_timeout_row(clip_and_set):
    ds, clip = clip_and_set
    row = asyncio.run(measure_item(STT, BrokenSTT(fail_on_send=False), ds, clip, _ctx()))
    assert row.status == "timeout" and "0.5 s" in row.reason
    assert _no_clocks(row) and row.hypothesis is None


def test_inaudible_audio_is_its_own_failure_with_levels():
    prompts = Catalog([bundled_root()]).load("tts-prompts")
    row = asyncio.run(measure_item(TTS, QuietTTSAdapter(), prompts, prompts.prompts[0], _ctx()))
    assert row.status == "inaudible"
    assert "peak" in row.reason and "dBFS" in row.reason
    assert _no_clocks(row)


def test_an_instrument_failure_is_not_a_provider_failure():
    prompts = Catalog([bundled_root()]).load("tts-prompts")

    def broken_instrument(audio):
        raise RuntimeError("instrument down")

    adapter = REGISTRY.create(TTS)
    row = asyncio.run(measure_item(TTS, adapter, prompts, prompts.prompts[0],
                                   _ctx(instrument=broken_instrument, instrument_id="x/y@1")))
    assert row.status == "ok" and row.ttfa_ms is not None and row.ttfa_ms >= row.ttfb_ms
    assert row.instrument_error == "RuntimeError: instrument down" and row.ref_words is None
