"""Contract tests: the Cloudflare Workers AI speech recognition adapter (batch REST,
`@cf/openai/whisper-large-v3-turbo`) against its loopback emulator, over real sockets: the latency
is the processing time over a reused connection, every fault is its row, and the request and the
envelope Cloudflare's documentation quotes are replayed (the curl into the emulator, the envelope
through the adapter).

A batch request is not paced: nothing here waits in real time but the emulated processing time.
"""

from __future__ import annotations

import contextlib
import shlex

import httpx
import pytest
from support.contract import (KEY, STT_FAULTS, failure_rows_test, measure, point, replayed, serve, stt_batch_clock_test,
                              switched_emulator)

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.audio import wav_bytes
from voxwatch.harness.measure import audio_sent
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.emulators.stt.cloudflare import DOC_ASR_CURL, CloudflareScenario
from voxwatch.providers.stt.cloudflare import EMULATOR_ACCOUNT, run_path

pytestmark = pytest.mark.realtime

MODEL = "cloudflare/whisper-large-v3-turbo"


@pytest.fixture(scope="module")
def data():
    clean = Catalog([bundled_root()]).load("stt-starter-clean")
    return clean, next(c for c in clean.clips if c.id == "u039")


def _stt(clip, **kw) -> STTScenario:
    return STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                       api_key=KEY, **kw)


emulator = switched_emulator("cloudflare", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0,
                                                       api_key=KEY))


@pytest.fixture(autouse=True)
def no_account(monkeypatch):
    """The emulator's account, not one the environment names."""
    monkeypatch.delenv("VOXWATCH_CLOUDFLARE_ACCOUNT_ID", raising=False)


def _over_http_1_1(streams, clip) -> None:
    assert all(s.row.http_version == "HTTP/1.1" for s in streams)


test_latency_is_the_processing_time_over_a_reused_connection = stt_batch_clock_test(MODEL, 280.0, check=_over_http_1_1)
test_failures_become_rows = failure_rows_test(MODEL, STT_FAULTS, final_ms=10.0)


def test_a_wrong_key_is_the_documented_error_envelope(monkeypatch, data, emulator):
    clean, clip = data
    emulator.use(monkeypatch, _stt(clip))
    refused = httpx.post(emulator.url + run_path(EMULATOR_ACCOUNT, "@cf/openai/whisper-large-v3-turbo"),
                         headers={"Authorization": "Bearer not-the-key"}, json={"audio": ""})
    assert refused.status_code == 401 and refused.json()["success"] is False and refused.json()["errors"]
    monkeypatch.setenv("VOXWATCH_CLOUDFLARE_API_KEY", "not-the-key")
    row = measure(MODEL, clean, clip)
    assert row.status == "auth_error" and "401" in row.reason


@contextlib.contextmanager
def _ledgered(scenario):
    ledger = Ledger()
    with server.serve("cloudflare", scenario, ledger=ledger) as url:
        yield url, ledger


def test_the_documented_curl_and_envelope(monkeypatch, data):
    """The speech models' curl example, sent as quoted (the audio as the raw body, to `@cf/openai/whisper`),
    gets the documented envelope with a transcript; the adapter's own request is the JSON the turbo
    model's schema asks for; and the envelope the REST guide quotes verbatim (a text-generation
    result, no `text`) is no transcript to the adapter: a malformed row, never a wrong hypothesis."""
    clean, clip = data
    words = shlex.split(DOC_ASR_CURL.replace("\\\n", " "))
    assert words[words.index("-X") + 1] == "POST" and words[words.index("-H") + 1].startswith("Authorization: Bearer ")
    assert words[words.index("--data-binary") + 1].startswith("@")  # a file's bytes, as they are
    wav = wav_bytes(audio_sent(clean, clip), clip.sample_rate)
    with _ledgered(_stt(clip, final_ms=5.0)) as (url, ledger):
        quoted = httpx.post(url + run_path("0123abcd", "@cf/openai/whisper"), content=wav,
                            headers={"Authorization": f"Bearer {KEY}",
                                     "Content-Type": "application/x-www-form-urlencoded"})  # curl's default for -d
        point(monkeypatch, "cloudflare", url)
        row = measure(MODEL, clean, clip)
        records = ledger.drain()
    envelope = quoted.json()
    assert quoted.status_code == 200 and envelope["success"] is True and envelope["errors"] == envelope["messages"] == []
    assert envelope["result"]["text"] == clip.text and envelope["result"]["word_count"] == len(clip.text.split())
    assert row.status == "ok" and row.hypothesis == clip.text
    doc, ours = seen(records, "run")
    assert doc == {"model": "@cf/openai/whisper", "account": "0123abcd", "json": False, "seconds": doc["seconds"]}
    assert ours == {"model": "@cf/openai/whisper-large-v3-turbo", "account": EMULATOR_ACCOUNT, "json": True,
                    "seconds": doc["seconds"]}
    with serve("cloudflare", CloudflareScenario(_stt(clip, final_ms=5.0), replay_docs=True)) as url:
        point(monkeypatch, "cloudflare", url)
        replayed = measure(MODEL, clean, clip)
    assert replayed.status == "malformed" and replayed.hypothesis is None, (replayed.status, replayed.reason)
