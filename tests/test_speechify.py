"""Contract tests: the Speechify adapter (HTTP streaming, `POST /v1/audio/stream`) against its loopback
emulator, over real sockets; the metrics equal the injected truth (tolerances: contract.py), every
fault gives its row, and the SDK's own wire fixtures (the request body, the refusals) go through the
adapter.
"""

import asyncio

import pytest
from support.contract import (KEY, REGISTRY, TTS_FAULTS, failure_rows_test, measure, switched_emulator,
                              tts_clock_test)

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.harness.measure import MeasureContext, measure_item
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.tts.speechify import DOCUMENTED_REFUSALS, DOCUMENTED_REQUEST, SpeechifyScenario
from voxwatch.providers.keys import Secret, key_variable, vendor_variable
from voxwatch.providers.session.endpoints import http_status

pytestmark = pytest.mark.realtime

MODEL = "speechify/simba-3.2"


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


emulator = switched_emulator("speechify", TTSScenario(api_key=KEY))


def _over_http_1_1(streams, scenario) -> None:
    assert all(s.row.http_version == "HTTP/1.1" for s in streams)


test_ttfa_with_its_components = tts_clock_test(MODEL, "geffen_32", check=_over_http_1_1)
test_failures_become_rows = failure_rows_test(MODEL, TTS_FAULTS)


@pytest.mark.parametrize("status", sorted(DOCUMENTED_REFUSALS))
def test_the_sdks_documented_refusals_become_their_rows(emulator, prompts, status, monkeypatch):
    """Each status and body of the SDK's wire fixtures, verbatim, through the adapter: the row the
    shared HTTP map names, the body never taken for audio."""
    emulator.use(monkeypatch, SpeechifyScenario(TTSScenario(api_key=KEY), documented_refusal=status))
    row = measure(MODEL, prompts, prompts.prompts[0])
    assert row.status == http_status(status) and f"HTTP {status}" in row.reason, (row.status, row.reason)
    assert row.ttfb_ms is None and row.retry_after_s is None  # the fixture's 429 carries no Retry-After


def test_the_request_is_the_sdk_fixtures_shape(prompts, monkeypatch):
    """What the adapter sends is the wire fixture's request (input, model, voice_id), plus the pcm
    format; the fixture's own body is answered with audio when it asks for pcm."""
    ledger = Ledger()
    with server.serve("speechify", TTSScenario(api_key=KEY), ledger=ledger) as url:
        monkeypatch.setenv(vendor_variable("speechify", "BASE_URL"), url)
        monkeypatch.setenv(key_variable("speechify"), KEY)
        row = measure(MODEL, prompts, prompts.prompts[1])
        (sent,) = seen(ledger.drain(), "request")
    assert row.status == "ok", row.reason
    assert set(sent["body"]) == {*DOCUMENTED_REQUEST, "output_format"} and sent["body"]["output_format"] == "pcm_24000"
    assert sent["body"]["model"] == DOCUMENTED_REQUEST["model"] and sent["body"]["voice_id"] == DOCUMENTED_REQUEST["voice_id"]
    assert sent["body"]["input"] == prompts.prompts[1].text and sent["accept"] == "audio/pcm"


def test_streams_over_the_accounts_concurrency_are_refused_with_retry_after(emulator, prompts, monkeypatch):
    """The free plan's one stream at a time: a second request while the first is under way gets 429
    with Retry-After, a rate-limit row (never a slow TTFA)."""
    emulator.use(monkeypatch, SpeechifyScenario(TTSScenario(ttfb_ms=300.0, api_key=KEY), concurrency=1))
    model = REGISTRY.resolve(MODEL)
    ctx = MeasureContext(run_id="r", seed=1, region="test", timeout_s=10, secrets=(Secret(KEY),), emulator=True)

    async def both():
        first = asyncio.create_task(measure_item(model, REGISTRY.create(model), prompts, prompts.prompts[0], ctx))
        await asyncio.sleep(0.15)  # the first is waiting for its audio
        second = await measure_item(model, REGISTRY.create(model), prompts, prompts.prompts[1], ctx)
        return await first, second

    first, second = asyncio.run(both())
    assert first.status == "ok", first.reason
    assert second.status == "rate_limited" and second.retry_after_s == 1.0 and second.ttfa_ms is None
