"""The witness on every clock (METHOD "Clock witness"): a worker's own stall is excluded with its
length, never published as the vendor's latency; a stall the kernel's receive stamp saw through is
published, with the latency the emulator actually sent.

Each case measures through the real path (adapter -> measure_item -> metrics/) against a loopback
emulator and blocks the worker's event loop on purpose inside the timed window.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
import sys
import time

import pytest

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation import kernel_time
from voxwatch.foundation.events import CHUNK_SENT, FINAL, REQUEST_SENT, Timeline
from voxwatch.harness.measure import MeasureContext, audio_sent, measure_item
from voxwatch.harness.pacer import chunk_pcm
from voxwatch.metrics.witness import (STALL_BOUND_MS, audio_witness, caller_turn_witness, chunk_at, chunk_written_by,
                                      witness_of)
from voxwatch.providers.emulators.ledger import Ledger
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario
from voxwatch.providers.emulators.server import serve
from voxwatch.providers.keys import Secret, key_variable, vendor_variable
from voxwatch.providers.registry import Registry
from voxwatch.foundation.events import Event

pytestmark = pytest.mark.realtime
KEY = "witness-test-key"
REGISTRY = Registry.default()
STALL_S = 0.4
STALLED = re.compile(r"^measuring worker stalled (\d+(?:\.\d)?) ms")
LINUX = sys.platform.startswith("linux")


@pytest.fixture(autouse=True)
def _held_to_the_method(method_bound: float) -> float:
    return method_bound


def _stall_on(kind: str, seconds: float, nth: int = 1):
    """A MeasureContext hook: block the event loop for `seconds` just after the `nth` event of `kind` is
    marked (a blocking call inside the loop, as a CPU-bound scorer or a descheduled worker would)."""

    def on_timeline(timeline: Timeline) -> None:
        mark, seen = timeline.mark, []

        def marked(k: str, *args, **kwargs):
            event = mark(k, *args, **kwargs)
            if k == kind:
                seen.append(event)
                if len(seen) == nth:
                    asyncio.get_running_loop().call_soon(time.sleep, seconds)
            return event

        timeline.mark = marked

    return on_timeline


def _ctx(on_timeline=None) -> MeasureContext:
    return MeasureContext(run_id="witness", seed=0, region="test", timeout_s=30, secrets=(Secret(KEY),),
                          emulator=True, on_timeline=on_timeline)


def _adapter(monkeypatch, model, url: str):
    monkeypatch.setenv(key_variable(model.vendor), KEY)
    monkeypatch.setenv(vendor_variable(model.vendor, "BASE_URL"), url)
    return REGISTRY.create(model)


def _measure(model, adapter, dataset, item, on_timeline=None):
    return asyncio.run(measure_item(model, adapter, dataset, item, _ctx(on_timeline)))


def test_a_stall_over_a_burst_of_audio_excludes_the_row_with_its_length(monkeypatch):
    """Cartesia's audio comes in while the loop is blocked: the chunks pile up in the socket, the kernel
    keeps only the last one's time, and nothing tells when the first came within the stall."""
    model = REGISTRY.resolve("cartesia/sonic-3.5")
    prompts = Catalog([bundled_root()]).load("tts-prompts")
    scenario = TTSScenario(ttfb_ms=120.0, leading_silence_ms=80.0, api_key=KEY)
    with serve("cartesia", scenario) as url:
        adapter = _adapter(monkeypatch, model, url)
        # unstalled, a row is published (on a busy machine the worker's own stalls may still exclude one
        # or two: the witness is right about them, and they are short)
        calm = [_measure(model, adapter, prompts, prompts.prompts[i]) for i in range(3)]
        stalled = _measure(model, adapter, prompts, prompts.prompts[3], _stall_on(REQUEST_SENT, STALL_S))
    assert any(row.status == "ok" and row.clock_uncertainty_ms <= STALL_BOUND_MS for row in calm), \
        [(row.status, row.reason) for row in calm]
    assert all(row.status == "ok" or row.clock_uncertainty_ms < 100 for row in calm)
    assert stalled.status == "excluded", (stalled.status, stalled.reason, stalled.ttfa_ms)
    found = STALLED.match(stalled.reason)
    assert found, stalled.reason
    # blocked from the request to 400 ms after it; the audio came from 120 ms on: unseen for 280-400 ms
    assert STALL_S * 1000 - 120 - 40 <= float(found.group(1)) <= STALL_S * 1000 + 250, stalled.reason
    assert stalled.clock_uncertainty_ms == pytest.approx(float(found.group(1)), abs=1)
    assert stalled.ttfa_ms is None and stalled.ttfb_ms is None  # no latency published


def _stt(monkeypatch, on_timeline, user_stamps: bool):
    """Deepgram's final, sent 200 ms after the caller's last word, arriving while the loop is blocked
    from the last chunk written; with the send time the emulator recorded for it."""
    if user_stamps:
        monkeypatch.setattr(kernel_time, "enable", lambda transport: False)
    model = REGISTRY.resolve("deepgram/nova-3")
    clips = Catalog([bundled_root()]).load("stt-starter-clean")
    clip = min(clips.clips, key=lambda c: c.duration_s)
    scenario = STTScenario(transcript="thank you for calling", speech_start_s=clip.speech_start,
                           speech_end_s=clip.speech_end, final_ms=200.0, first_partial_ms=150.0, api_key=KEY)
    ledger = Ledger()
    holder: list[Timeline] = []

    def seen(timeline: Timeline) -> None:
        holder.append(timeline)
        if on_timeline is not None:
            on_timeline(timeline)

    with serve("deepgram", scenario, ledger=ledger) as url:
        row = _measure(model, _adapter(monkeypatch, model, url), clips, clip, seen)
        sent = ledger.drain()
    return row, holder[0], sent, clip


def _last_chunk(clip) -> int:
    return len(chunk_pcm(b"\0" * (len(audio_sent(Catalog([bundled_root()]).load("stt-starter-clean"), clip))),
                         clip.sample_rate, 20))


def test_a_stall_over_a_user_stamped_final_excludes_the_row(monkeypatch):
    """Without the kernel's stamp (another platform), the final is stamped when the loop gets to it."""
    clip = min(Catalog([bundled_root()]).load("stt-starter-clean").clips, key=lambda c: c.duration_s)
    row, timeline, _, _ = _stt(monkeypatch, _stall_on(CHUNK_SENT, STALL_S, nth=_last_chunk(clip)), user_stamps=True)
    assert row.status == "excluded", (row.status, row.reason, row.ttfs_ms)
    assert STALLED.match(row.reason), row.reason
    assert row.ttfs_ms is None and row.clock_uncertainty_ms > STALL_BOUND_MS
    assert row.arrival_stamp == "user"


@pytest.mark.skipif(not LINUX, reason="the kernel's receive stamp is Linux's SO_TIMESTAMPNS")
def test_the_kernel_stamp_sees_through_the_stall(monkeypatch):
    """The same stall with the kernel's stamp: the final is stamped when its bytes came, within loopback
    transit of the emulator's send, not when the blocked loop got to it 400 ms later. (Whether the row is
    then published depends on what else came in the same read: the witness cannot date bytes that
    came before the read's last, and says how long it was not watching.)"""
    clip = min(Catalog([bundled_root()]).load("stt-starter-clean").clips, key=lambda c: c.duration_s)
    row, timeline, sent, clip = _stt(monkeypatch, _stall_on(CHUNK_SENT, STALL_S, nth=_last_chunk(clip)),
                                     user_stamps=False)
    final = [e for e in timeline.of(FINAL) if (e.text or "").strip()][-1]
    sent_at = [t for (key, what), t in sent.items() if what == "final"][0]
    assert final.stamp == "kernel"
    assert 0 <= (final.t_ns - sent_at) / 1e6 < 5, (final.t_ns - sent_at) / 1e6  # not 400 ms late
    if row.status == "ok":
        assert row.clock_uncertainty_ms <= STALL_BOUND_MS and row.arrival_stamp == "kernel"
    else:
        assert STALLED.match(row.reason) and row.ttfs_ms is None, row.reason


def test_the_witness_is_the_longest_blind_time_of_the_events_read():
    events = [Event("chunk_sent", 0, blind_ns=30_000, n_samples=320), Event("final", 10, blind_ns=7_000_000,
                                                                             stamp="kernel"),
              Event("partial", 5, blind_ns=None, stamp="user")]
    w = witness_of(events)
    assert w.uncertainty_ms == 7.0 and w.arrival_stamp == "user" and w.stalled
    assert re.match(r"measuring worker stalled 7.0 ms around a timed event \(bound 2 ms\)", w.reason)
    assert not replace(w, bound_ms=10.0).stalled  # a worker's own bound ([run] stall_bound_ms)
    assert witness_of([events[0]]).uncertainty_ms == pytest.approx(0.03) and not witness_of([events[0]]).stalled
    assert witness_of([]).uncertainty_ms is None and not witness_of([]).stalled
    chunks = [Event("chunk_sent", i, n_samples=320) for i in range(3)]
    assert chunk_at(chunks, 0) is chunks[0] and chunk_at(chunks, 320) is chunks[1] and chunk_at(chunks, 10_000) is chunks[2]



def test_a_turns_witness_reads_the_chunk_of_the_last_word_and_the_reply_by_its_onset():
    timeline = Timeline()
    for i in range(5):  # chunks written at 0, 20, ... 80 ms; the one at 40 ms took 6 ms
        timeline.mark(CHUNK_SENT, at_ns=i * 20_000_000, n_samples=320, blind_ns=6_000_000 if i == 2 else 10_000)
    timeline.mark("audio", at_ns=300_000_000, n_samples=480, sample_offset=0, blind_ns=0, stamp="kernel")
    timeline.mark("audio", at_ns=900_000_000, n_samples=480, sample_offset=480, blind_ns=9_000_000, stamp="kernel")
    assert chunk_written_by(timeline.of(CHUNK_SENT), 45_000_000).t_ns == 40_000_000
    # the last word in the late chunk: its write is blind 6 ms, the reply (heard by 400 ms) exact
    late = caller_turn_witness(timeline, 45_000_000, 400_000_000)
    assert late.uncertainty_ms == 6.0 and late.stalled and late.arrival_stamp == "kernel"
    # the last word in the chunk at 60 ms: 0.01 ms; the audio after the onset is not read
    calm = caller_turn_witness(timeline, 65_000_000, 400_000_000)
    assert calm.uncertainty_ms == pytest.approx(0.01) and not calm.stalled


def test_only_the_chunks_that_held_the_playout_back_carry_their_blind_time_into_ttfa():
    """Playout: sample s of chunk k is heard at max over i <= k of (arrival_i - offset_i) + s. A burst of
    silence read late (blind 9 ms) at 100 ms, then the speech at 400 ms, read exactly: the onset waits for
    the speech chunk, so the silence's blind time moves nothing. Blind the speech chunk instead, and the
    onset could have been heard that much earlier."""
    def stream(speech_blind_ns: int) -> Timeline:
        timeline = Timeline()
        timeline.mark(REQUEST_SENT, at_ns=0, blind_ns=20_000)
        for i in range(3):  # 3 x 20 ms of silence at 24 kHz, in one late read
            timeline.mark("audio", at_ns=100_000_000, n_samples=480, sample_offset=480 * i, sample_rate=24_000,
                          blind_ns=9_000_000 if i < 2 else 0, stamp="kernel")
        timeline.mark("audio", at_ns=400_000_000, n_samples=480, sample_offset=1440, sample_rate=24_000,
                      blind_ns=speech_blind_ns, stamp="kernel")
        timeline.mark("audio", at_ns=401_000_000, n_samples=480, sample_offset=1920, sample_rate=24_000,
                      blind_ns=7_000_000, stamp="kernel")  # after the onset: read by nothing
        return timeline

    calm = stream(0)
    heard = 400_000_000 + 1_000_000  # 1 ms into the speech chunk
    w = audio_witness(calm, calm.first(REQUEST_SENT), heard)
    assert w.uncertainty_ms == pytest.approx(0.02) and not w.stalled and w.arrival_stamp == "kernel"
    blind = stream(3_000_000)
    w = audio_witness(blind, blind.first(REQUEST_SENT), heard)
    assert w.uncertainty_ms == pytest.approx(3.0) and w.stalled
    # the old rule (the longest blind time of every chunk by the onset) would have excluded the calm stream
    assert witness_of(calm.of("audio")[:4]).uncertainty_ms == 9.0
