"""Shared by the vendor contract tests: measure an adapter against its emulator, and what each
injected fault must become.

The tests check definitions, never precision (how late voxwatch reads a message is
benchmarks/clock_truth.py's claim, at 1 to 64 streams, on an idle machine). Every check is one that
no scheduling delay can reach and a wrong definition always does, on a busy 2-core machine too:

- never early: a clock can read late (a process held off the CPU reads later) but never early, so
  every stream's value is at least the truth as the emulator actually sent it (its send ledger, on
  the machine's shared monotonic clock), less EARLY_MS for the call recording's sample grid. A
  definition that misses a leading silence, or starts a clock at the wrong message, reads early.
- the best stream on time: a clock stamped at the wrong message or read, or a definition that adds
  what it should not, is off in every stream; scheduling delays some. So the best stream must be
  within CLOCK_BEST_MS of the truth as sent and within RIG_MS of the injected truth (which adds the
  emulator's own lateness). When any stream shows the processes held off the CPU, three more
  streams are measured, so the best is drawn from outside that window too.

The first stream through fresh code paths runs slower, so each contract discards one warm-up stream.
Fault tests give the item a long timeout except where the timeout is the fault under test
(`fault_timeout_s`): a refusal that a busy machine delays must still be a refusal.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple

import pytest

from voxwatch.datasets.catalog import Catalog, Dataset, bundled_root
from voxwatch.datasets.manifest import Clip
from voxwatch.foundation.observation import Observation
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.faults import HANDSHAKE, RETRY_AFTER_S
from voxwatch.providers.emulators.ledger import Ledger, caller_late_ms, seen, truth_as_sent
from voxwatch.providers.emulators.scenario import S2SScenario, Scenarios, STTScenario, TTSScenario
from voxwatch.foundation.events import AUDIO, FINAL, PARTIAL, RESPONSE, Timeline
from voxwatch.providers.keys import Secret, key_variable, vendor_variable
from voxwatch.providers.registry import Registry
from voxwatch.harness.measure import CLOCK_FIELDS, MeasureContext, audio_sent, measure_item
from voxwatch.harness import pacer
from voxwatch.harness.pacer import chunk_pcm

REGISTRY = Registry.default()
KEY = "emulator-key-0123456789"

# emulator fault -> the row status it must produce
EXPECTED_STATUS = {
    "unauthorized": "auth_error",
    "forbidden": "auth_error",
    "rate_limited": "rate_limited",
    "server_error": "server_error",
    "bad_request": "error",
    "malformed": "malformed",
    "disconnect": "disconnected",
    "no_final": "timeout",
    "inaudible": "inaudible",
}


CLOCK_BEST_MS = 40.0  # the best stream, measured vs sent: a loaded machine's CPU queue (best of six streams
# 25 ms late at load 8 on 2 cores); a leading silence counted twice is 60 ms+, in every stream
HELD_OFF_MS = 2.0  # a message this late from send to arrival: the processes were held off the CPU (idle: ~0.1 ms)
EARLY_MS = 1.0  # the call recording places audio on a sample grid; a socket clock never reads early
RIG_MS = 60.0  # the best stream, measured vs injected: adds the emulator's own lateness (48 ms at load 8);
# a clock started at the connection, not the request, is off by the whole wait between them

_ledgers: list[Ledger] = []  # the send ledgers of the emulators now serving


@contextlib.contextmanager
def serve(kind: str, scenario, switch: server.Switch | None = None) -> Iterator[str]:
    """An emulator with its send ledger, which `measure` reads after each stream (`switch`: see `switched`)."""
    ledger = Ledger()
    with server.serve(kind, scenario, ledger=ledger, switch=switch) as url:
        _ledgers.append(ledger)
        try:
            yield url
        finally:
            _ledgers.remove(ledger)


def emulator_fixture(vendor: str):
    """A pytest fixture for one vendor's emulator: call it with a scenario (or a bundle of them) to
    serve it and point the vendor's adapters at it with the test key."""

    @pytest.fixture
    def start(monkeypatch) -> Iterator[Callable]:
        with contextlib.ExitStack() as stack:
            def serving(scenario) -> None:
                point(monkeypatch, vendor, stack.enter_context(serve(vendor, scenario)))
            yield serving

    return start


def point(monkeypatch, vendor: str, url: str) -> None:
    """Point a vendor's adapters at `url`, with the test key."""
    monkeypatch.setenv(vendor_variable(vendor, "BASE_URL"), url)
    monkeypatch.setenv(key_variable(vendor), KEY)


@dataclass
class Switched:
    """One emulator process serving many scenarios: `use` switches its scenario (starting a process
    for each case takes seconds, on a busy machine several) and points the vendor's adapters at it."""

    vendor: str
    url: str
    switch: server.Switch
    first: Any = None  # the scenario it first served: a bundle (Scenarios) keeps serving its other boards

    def point(self, monkeypatch) -> None:
        """Point the vendor's adapters at this emulator, with the test key, serving what it serves."""
        point(monkeypatch, self.vendor, self.url)

    def use(self, monkeypatch, scenario) -> None:
        """Serve `scenario` to the connections opened from now on, the adapters pointed here."""
        self.switch.use(scenario)
        self.point(monkeypatch)

    def use_board(self, monkeypatch, board: str, scenario) -> None:
        """`use` one board's scenario: in place of that board's in the bundle first served (a vendor
        whose one host serves several boards keeps serving the others), or alone."""
        self.use(monkeypatch, dataclasses.replace(self.first, **{board: scenario})
                 if isinstance(self.first, Scenarios) else scenario)


@contextlib.contextmanager
def switched(vendor: str, scenario) -> Iterator[Switched]:
    """One emulator process of `vendor` for many cases, first serving `scenario`, with its send
    ledger (so `measure` reads its streams as it reads `serve`'s)."""
    switch = server.Switch()
    with serve(vendor, scenario, switch=switch) as url:
        yield Switched(vendor, url, switch, scenario)


def switched_emulator(vendor: str, scenario):
    """A module-scoped pytest fixture: a Switched emulator of `vendor` for a whole test file, first
    serving `scenario`; each test calls `use(monkeypatch, its_scenario)`."""

    @pytest.fixture(scope="module")
    def start() -> Iterator[Switched]:
        with switched(vendor, scenario) as emulator:
            yield emulator

    return start


def shortest() -> tuple[Dataset, Clip, Dataset, object]:
    """The quick items of a contract: the shortest clean clip over a second (u039) and the shortest prompt."""
    catalog = Catalog([bundled_root()])
    clean, prompts = catalog.load("stt-starter-clean"), catalog.load("tts-prompts")
    return clean, next(c for c in clean.clips if c.id == "u039"), prompts, min(prompts.prompts, key=lambda p: len(p.text))


async def replayed(monkeypatch, vendor: str, replay, run: Callable, timeout_s: float = 10.0) -> None:
    """Serve a documented exchange (emulators/replay.py) on loopback, point `vendor`'s adapters at it
    and run `run()`, the adapter's side, within `timeout_s`."""
    import websockets

    async with websockets.serve(replay.handle, "127.0.0.1", 0) as listening:
        point(monkeypatch, vendor, f"ws://127.0.0.1:{listening.sockets[0].getsockname()[1]}")
        await asyncio.wait_for(run(), timeout_s)


@functools.cache
def starter_clean() -> tuple[Dataset, dict[str, Clip]]:
    """The bundled stt-starter-clean dataset and its clips by id (loaded once a process)."""
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return ds, {c.id: c for c in ds.clips}


def stt_scenario(clip, **kw) -> STTScenario:
    """A streaming STT scenario timed from this clip's own speech anchors, saying its reference."""
    return STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                       api_key=KEY, **kw)


@dataclass
class Stream:
    """One measured stream: its row, the timeline it was computed from, and what the emulator sent when."""

    row: Observation
    timeline: Timeline
    sent: dict[str, int]  # first_partial, final, first_audio, first_speech -> ns


def _sent() -> dict[str, int]:
    out: dict[str, int] = {}
    for ledger in _ledgers:
        for (_, what), t in ledger.drain().items():
            out.setdefault(what, t)
    return out


def measure_stream(model_id: str, dataset, item, **ctx) -> Stream:
    model = REGISTRY.resolve(model_id)
    adapter = REGISTRY.create(model)
    timelines: list[Timeline] = []
    options = dict(run_id="r", seed=1, region="test", timeout_s=10, secrets=(Secret(KEY),), emulator=True,
                   on_timeline=timelines.append)
    _sent()  # anything left over from before this stream
    row = asyncio.run(measure_item(model, adapter, dataset, item, MeasureContext(**{**options, **ctx})))
    return Stream(row, timelines[0], _sent())


def measure(model_id: str, dataset, item, **ctx) -> Observation:
    return measure_stream(model_id, dataset, item, **ctx).row


# a ledger record -> the event whose arrival stamp is that message's (the batch final: the response)
_ARRIVAL = {"first_partial": (PARTIAL,), "final": (FINAL, RESPONSE), "first_audio": (AUDIO,)}


def transit_ms(stream: Stream) -> float | None:
    """The stream's largest send-to-arrival time of a recorded message (ms): the clock's raw error,
    before any metric definition; None when nothing recorded was received."""
    gaps = []
    for what, sent in stream.sent.items():
        event = next((e for kind in _ARRIVAL.get(what, ()) if (e := stream.timeline.first(kind))), None)
        if event is not None:
            gaps.append((event.t_ns - sent) / 1e6)
    return max(gaps, default=None)


def measure_three(model_id: str, dataset, item, **ctx) -> list[Stream]:
    """One warm-up stream (discarded), then three measured ones; three more when any of them shows
    the processes held off the CPU (a message that took over HELD_OFF_MS from send to arrival),
    so the checks see streams from outside that window too."""
    streams = [measure_stream(model_id, dataset, item, **ctx) for _ in range(4)][1:]
    if any((transit_ms(s) or 0.0) > HELD_OFF_MS for s in streams):
        streams += [measure_stream(model_id, dataset, item, **ctx) for _ in range(3)]
    return streams


def rows(streams: list[Stream]) -> list[Observation]:
    return [s.row for s in streams]


def assert_on_clock(streams: list[Stream], metric: str, injected: float, *, clip=None,
                    leading_silence_ms: float = 0.0) -> None:
    """`metric` of every stream equals the truth as sent (the clock) and the injected truth (the definition).

    `clip`: its VAD anchors, for metrics measured from the caller's speech; `leading_silence_ms`:
    the silence the emulator sent before its speech, for the playout model.
    """
    anchors = {} if clip is None else dict(speech_start_ms=clip.speech_start * 1000, speech_end_ms=clip.speech_end * 1000,
                                           sample_rate=clip.sample_rate)
    measured = [getattr(s.row, metric) for s in streams]
    assert all(s.row.status == "ok" for s in streams), [(s.row.status, s.row.reason) for s in streams]
    assert all(v is not None for v in measured), (metric, measured)
    sent = [truth_as_sent(metric, s.sent, s.timeline, leading_silence_ms=leading_silence_ms, **anchors) for s in streams]
    late = [v - t for v, t in zip(measured, sent)]
    # a clock from the caller's words runs from the write of the chunk that carried them, the emulator's
    # setting from its first chunk's arrival plus the clip's anchor: a late caller chunk (shift) moves the first only
    shift = [caller_late_ms(metric, s.timeline, **anchors) for s in streams]
    heard = [injected - d for d in shift]
    vs_injected = [v - t for v, t in zip(measured, heard)]
    report = dict(metric=metric, measured=measured, sent=sent, injected=heard, caller_late_ms=shift)
    assert all(x >= -EARLY_MS for x in late), report  # a clock reads late, never early
    assert min(late) <= CLOCK_BEST_MS and min(abs(x) for x in vs_injected) <= RIG_MS, report  # the best stream on time


NO_FINAL_TIMEOUT_S = 0.5  # the wait for a final that never comes: any wait ends in the same timeout row


def fault_timeout_s(fault: str) -> float:
    """The item timeout of a fault test: short where a timeout is the fault (the row can only come
    late, and a longer wait checks nothing more), long elsewhere, where the fault ends the item long
    before it (a refusal that a busy machine delays must still be a refusal)."""
    return NO_FINAL_TIMEOUT_S if fault == "no_final" else 30.0


def assert_failure_row(row: Observation, fault: str) -> None:
    """The row an injected fault must give: its status, a reason, no clock, and never the key."""
    assert row.status == EXPECTED_STATUS[fault], (fault, row.status, row.reason)
    assert row.reason and KEY not in row.reason
    assert all(getattr(row, name) is None for name in CLOCK_FIELDS if name != "connect_ms" or fault in HANDSHAKE)
    if fault == "rate_limited":
        assert row.retry_after_s == RETRY_AFTER_S
    assert KEY not in repr(row)


class CallerTurn(NamedTuple):
    """A caller turn for the S2S contracts: the dataset, the clip and its first paced chunk (the
    chunk an S2S emulator keys the stream's truth on when the adapter sends it as it is)."""

    dataset: Dataset
    clip: Clip
    first: bytes

    def anchors(self) -> tuple[tuple[str, float, float], ...]:
        """The clip's speech anchors keyed by the sha256 of its first chunk (S2SScenario.anchors)."""
        return ((hashlib.sha256(self.first).hexdigest(), self.clip.speech_start, self.clip.speech_end),)


@functools.cache
def caller_turn(dataset: str = "stt-starter-clean", clip_id: str = "u040", chunk_ms: int = 20) -> CallerTurn:
    ds = Catalog([bundled_root()]).load(dataset)
    clip = next(c for c in ds.clips if c.id == clip_id)
    return CallerTurn(ds, clip, chunk_pcm(audio_sent(ds, clip), clip.sample_rate, chunk_ms)[0])


def s2s_scenario(clip, first: bytes, **kw) -> S2SScenario:
    """An S2S scenario that times its reply from this clip's speech end, for the stream whose first
    chunk (as the emulator sees it) is `first`."""
    return S2SScenario(api_key=KEY, anchors=CallerTurn(None, clip, first).anchors(), speech_end_s=0.0, **kw)


# --- TTS contracts: what every TTS vendor's file checks the same way ---

STT_FAULTS = ["unauthorized", "forbidden", "rate_limited", "server_error", "bad_request", "malformed", "disconnect",
              "no_final"]  # every shared fault a streaming STT protocol can meet
TTS_FAULTS = ["unauthorized", "forbidden", "rate_limited", "server_error", "bad_request", "malformed", "disconnect",
              "no_final", "inaudible"]  # every shared fault a TTS protocol can meet (close codes: test_failure_kinds)


S2S_FAULTS = TTS_FAULTS  # the same nine: an S2S reply is audio, as a TTS stream is


TTS_SCENARIOS = {  # the two clock cases of every TTS contract: audio as it streams, and silence sent early
    "streaming": dict(ttfb_ms=90.0, leading_silence_ms=60.0, speech_ms=200.0),
    "gaming": dict(ttfb_ms=40.0, leading_silence_ms=100.0, gaming_delay_ms=300.0, speech_ms=200.0),  # speech late
}


@functools.cache
def tts_prompts() -> tuple[Dataset, object]:
    """The bundled TTS prompts and the shortest of them (the stream that takes least time)."""
    ds = Catalog([bundled_root()]).load("tts-prompts")
    return ds, min(ds.prompts, key=lambda p: len(p.text))


def assert_tts_on_clock(streams: list[Stream], scenario, text: str) -> None:
    """A TTS stream's clock: TTFB and TTFA (through the leading silence) on the injected truth, the
    leading silence and the audio's duration as sent (the audio counted once), on an emulator."""
    truth = scenario.truth(text)
    assert_on_clock(streams, "ttfb_ms", truth["ttfb_ms"])
    assert all(r.leading_silence_ms == pytest.approx(truth["leading_silence_ms"], abs=1.0) for r in rows(streams))
    assert_on_clock(streams, "ttfa_ms", truth["ttfa_ms"], leading_silence_ms=scenario.leading_silence_ms)
    duration_s = (scenario.leading_silence_ms + scenario.speech_ms) / 1000
    assert all(r.audio_duration_s == pytest.approx(duration_s, abs=0.001) for r in rows(streams))
    assert all(r.connect_ms is not None and r.emulator for r in rows(streams))


def synthesize(model_id: str, *texts: str) -> Timeline:
    """Synthesis straight through a TTS adapter (connect, synthesize each of `texts` in turn on the one
    session, close, as the harness drives it) and its timeline: for replaying a vendor's cited
    sequence, whose few samples of audio are too short for the harness to measure."""
    model = REGISTRY.resolve(model_id)

    async def run() -> Timeline:
        adapter, timeline = REGISTRY.create(model), Timeline()
        try:
            session = await adapter.connect(timeline, model.voice)
            try:
                for text in texts:
                    await session.synthesize(text)
            finally:
                await session.aclose()
        finally:
            if hasattr(adapter, "aclose"):
                await adapter.aclose()
        return timeline

    return asyncio.run(run())


def spoken(monkeypatch, model_id: str, scenario, texts: list[str], noted: str = "tts") -> tuple[Timeline, list[Any]]:
    """`synthesize` of `texts` against `model_id`'s vendor emulator serving `scenario`: the session's
    timeline and what the emulator noted receiving (its `saw(..., noted, ...)` details)."""
    vendor, ledger = REGISTRY.resolve(model_id).vendor, Ledger()
    with server.serve(vendor, scenario, ledger=ledger) as url:
        point(monkeypatch, vendor, url)
        timeline = synthesize(model_id, *texts)
        return timeline, seen(ledger.drain(), noted)


# --- the shared test shapes: a vendor file declares its row of each, and keeps beside it only its own
# tests (its documented sequence replayed, its own faults and quirks). Each shape returns a test
# function; assigned to a `test_...` name in the vendor file, it is collected there under that name.
# Every shape asks for the vendor file's `emulator` fixture (`switched_emulator`): one process a file.

Scenario = Callable[[Any], Any]  # a board's scenario -> what the vendor's emulator serves (its own scenario type)
Check = Callable[..., None]  # the vendor's own checks on the measured streams


def _serve(emulator: Switched, monkeypatch, model_id: str, scenario, serves: Scenario | None = None) -> None:
    """Serve the model's board `scenario`: as `serves` makes it, or in the emulator's bundle."""
    if serves is not None:
        emulator.use(monkeypatch, serves(scenario))
    else:
        emulator.use_board(monkeypatch, REGISTRY.resolve(model_id).board, scenario)


def _fault_item(model_id: str) -> tuple[Dataset, Any, Any]:
    """A fault case's item and the board's plain scenario for it (the fault is added): the shortest
    clean clip, the shortest prompt, or the S2S caller's turn."""
    board = REGISTRY.resolve(model_id).board
    if board == "tts":
        ds, prompt = tts_prompts()
        return ds, prompt, TTSScenario(ttfb_ms=20.0, api_key=KEY)
    if board == "s2s":
        turn = caller_turn()
        return turn.dataset, turn.clip, s2s_scenario(turn.clip, turn.first, response_ms=400.0)
    ds, clips = starter_clean()
    return ds, clips["u039"], stt_scenario(clips["u039"], first_partial_ms=10.0)


def one_port(stt: STTScenario | None = None, tts: TTSScenario | None = None) -> Scenarios:
    """A vendor whose one host serves both STT and TTS (Inworld, Smallest, Cartesia): both served by one
    process on one port, the board not under test with its plain scenario."""
    _, clips = starter_clean()
    return Scenarios(stt=stt or stt_scenario(clips["u039"], first_partial_ms=60.0, final_ms=100.0),
                     tts=tts or TTSScenario(ttfb_ms=20.0, api_key=KEY))


def unpace(monkeypatch) -> None:
    """Audio as fast as the socket takes it (the harness's pacer waits for no deadline), for a test
    that times nothing: a fault ends the item whenever the audio arrives."""

    async def no_wait(deadline_ns, clock=None) -> None:
        await asyncio.sleep(0)

    monkeypatch.setattr(pacer, "sleep_until", no_wait)


def the_one_final(streams: list[Stream], clip) -> None:
    """A `check`: the stream's one final is the whole transcript (nothing split, nothing repeated)."""
    assert all([e.text for e in s.timeline.of(FINAL)] == [clip.text] for s in streams)


def events_signed(more_than: int) -> Check:
    """A `check` for a stream of AWS event-stream events: the emulator checked every input event's
    chained signature (over `more_than` of them) through to the signed end of input, in every stream."""

    def check(streams: list[Stream], *_) -> None:
        ended = [json.loads(k) for s in streams for k in s.sent if k.startswith("{")]
        assert len(ended) == len(streams), ended
        assert all(e["signatures"] == "verified" and e["events"] > more_than for e in ended), ended

    return check


def failure_rows_test(model_id: str, faults, serves: Scenario | None = None,
                      closes: dict[str, tuple[str, str]] | None = None, **plain):
    """Every shared fault in `faults` injected into the board's plain scenario (`serves` wraps it as
    the vendor's emulator takes it) gives its row (assert_failure_row). `closes`: a close the
    vendor's protocol reads its own way ("close:<code>") -> the row's status and what its reason
    says. `plain`: fields of the plain scenario the vendor's file sets otherwise."""
    closes = closes or {}

    @pytest.mark.parametrize("fault", [*faults, *closes])
    def test(monkeypatch, emulator, fault):
        ds, what, scenario = _fault_item(model_id)
        unpace(monkeypatch)  # a caller's audio (STT, S2S) is not what a fault test checks
        _serve(emulator, monkeypatch, model_id, dataclasses.replace(scenario, fault=fault, **plain), serves)
        row = measure(model_id, ds, what, timeout_s=fault_timeout_s(fault))
        if fault in closes:
            status, said = closes[fault]
            assert row.status == status and said in row.reason and KEY not in repr(row), (row.status, row.reason)
            assert all(getattr(row, name) is None for name in CLOCK_FIELDS if name != "connect_ms")
        else:
            assert_failure_row(row, fault)

    return test


def stt_clock_test(model_id: str, first_partial_ms: float = 180.0, final_ms: float = 240.0, clip_id: str = "u040",
                   serves: Scenario | None = None, check: Check | None = None):
    """A streaming STT contract's clock: first partial and TTFS equal the injected truth, from the
    clip's own speech anchors; the hypothesis reads back whole (no word wrong), with its connection
    time, on an emulator. `check(streams, clip)`: what the vendor's protocol adds."""

    def test(monkeypatch, emulator):
        ds, clips = starter_clean()
        clip = clips[clip_id]
        scenario = stt_scenario(clip, first_partial_ms=first_partial_ms, final_ms=final_ms)
        _serve(emulator, monkeypatch, model_id, scenario, serves)
        streams = measure_three(model_id, ds, clip)
        assert_on_clock(streams, "first_partial_ms", first_partial_ms, clip=clip)
        assert_on_clock(streams, "ttfs_ms", final_ms, clip=clip)
        assert all(r.hypothesis == clip.text and r.substitutions == r.deletions == r.insertions == 0
                   and r.connect_ms is not None and r.emulator for r in rows(streams))
        if check is not None:
            check(streams, clip)

    return test


def stt_early_final_test(model_id: str, final_ms: float = -60.0, clip_id: str = "u039", serves: Scenario | None = None,
                         check: Check | None = None):
    """A final that came before the caller's audio ended stays the final: TTFS is negative, on the
    injected truth, and the end of the audio (whatever the vendor's end message) waits for no other."""

    def test(monkeypatch, emulator):
        ds, clips = starter_clean()
        clip = clips[clip_id]
        _serve(emulator, monkeypatch, model_id, stt_scenario(clip, final_ms=final_ms), serves)
        streams = measure_three(model_id, ds, clip)
        assert_on_clock(streams, "ttfs_ms", final_ms, clip=clip)
        assert all(r.hypothesis == clip.text for r in rows(streams))
        if check is not None:
            check(streams, clip)

    return test


def stt_batch_clock_test(model_id: str, final_ms: float, clip_id: str = "u039", check: Check | None = None):
    """A batch STT contract's clock: the latency (the request's processing time, timed over a reused
    connection) equals the injected truth, and the transcript reads back whole (no word wrong)."""

    def test(monkeypatch, emulator):
        ds, clips = starter_clean()
        clip = clips[clip_id]
        _serve(emulator, monkeypatch, model_id, stt_scenario(clip, final_ms=final_ms))
        streams = measure_three(model_id, ds, clip)
        assert_on_clock(streams, "latency_ms", final_ms)
        assert all(r.hypothesis == clip.text and r.substitutions == r.deletions == r.insertions == 0
                   and r.connection_reused is True and r.emulator for r in rows(streams))
        if check is not None:
            check(streams, clip)

    return test


def tts_clock_test(model_id: str, voice: str | None, serves: Scenario | None = None, check: Check | None = None,
                   scenario: Callable[..., Any] = TTSScenario, **fields):
    """A TTS contract's clock in both TTS_SCENARIOS (audio as it streams; silence sent early):
    assert_tts_on_clock, in the model's voice. `scenario(**kw)`: the vendor's own scenario type;
    `fields`: what the vendor's file adds to both (a jitter, say); `check(streams, scenario)`: what
    the vendor's protocol adds."""

    @pytest.mark.parametrize("case", sorted(TTS_SCENARIOS))
    def test(monkeypatch, emulator, case):
        made = scenario(api_key=KEY, **{**TTS_SCENARIOS[case], **fields})
        ds, prompt = tts_prompts()
        _serve(emulator, monkeypatch, model_id, made, serves)
        streams = measure_three(model_id, ds, prompt)
        assert_tts_on_clock(streams, made, prompt.text)
        assert voice is None or all(r.voice == voice for r in rows(streams))
        if check is not None:
            check(streams, made)

    return test


def s2s_clock_test(model_id: str, response_ms: float, scenario: Callable[..., Any] = S2SScenario,
                   check: Check | None = None):
    """An S2S contract's clock: V2V, measured back from the call recording, equals the injected truth
    (the reply `response_ms` + jitter after the caller's speech end, through a 60 ms leading silence),
    and the reply's audio is counted once. `check(streams, scenario)`: what the vendor's protocol adds."""

    def test(monkeypatch, emulator, tmp_path):
        turn = caller_turn()
        made = scenario(api_key=KEY, anchors=turn.anchors(), speech_end_s=0.0, response_ms=response_ms,
                        leading_silence_ms=60.0, jitter_ms=30.0)
        _serve(emulator, monkeypatch, model_id, made)
        streams = measure_three(model_id, turn.dataset, turn.clip, recordings_dir=tmp_path)
        assert_on_clock(streams, "v2v_ms", made.truth(turn.first)["v2v_ms"], clip=turn.clip,
                        leading_silence_ms=made.leading_silence_ms)
        assert all(r.audio_duration_s == pytest.approx((60.0 + made.speech_ms) / 1000, abs=0.001)
                   and r.connect_ms is not None and r.emulator for r in rows(streams))
        if check is not None:
            check(streams, made)

    return test
