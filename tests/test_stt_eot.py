"""The STT's own end of turn (METHOD "STT end of turn"): the definitions in metrics/end_of_turn.py on
hand-made timelines, and, against the emulators over real sockets, the stored eot_ms within 2 ms of the
injected truth as the emulator sent it, an injected mid-speech end of turn counted as a false cut-off,
and a model whose protocol has no end of turn storing none."""

import numpy as np
import pytest
from support.contract import KEY, measure_stream, shortest, stt_scenario, switched_emulator

from voxwatch.foundation.events import CHUNK_SENT, END_OF_TURN, FINAL, Timeline
from voxwatch.metrics.as_sent import sent_at_ns
from voxwatch.metrics.clustered import design
from voxwatch.metrics.end_of_turn import end_of_turn
from voxwatch.metrics.series import MIN_ATTEMPTS, SeriesData, eot_figures, percentile
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.registry import Registry

RATE = 16000
MS = 1_000_000


def _timeline(eots_ms: list[float], late_chunk: int | None = None) -> Timeline:
    """2 s of 20 ms chunks written on time from t = 0 (chunk `late_chunk` and the rest 30 ms late),
    with end-of-turn events at the given ms."""
    timeline = Timeline(clock=lambda: 0)
    for k in range(100):
        late = 30 * MS if late_chunk is not None and k >= late_chunk else 0
        timeline.mark(CHUNK_SENT, at_ns=k * 20 * MS + late, n_samples=320, deadline_ns=k * 20 * MS)
    for t in eots_ms:
        timeline.mark(END_OF_TURN, at_ns=int(t * MS))
    return timeline


def test_eot_latency_is_the_first_end_of_turn_after_the_end_of_speech_write():
    got = end_of_turn(_timeline([1900.0, 1650.0]), 0.5, 1.5, sample_rate=RATE)
    assert got.eot_ms == pytest.approx(150.0) and got.false_cutoffs == 0


def test_an_end_of_turn_inside_the_speech_is_a_false_cutoff_and_before_it_is_neither():
    got = end_of_turn(_timeline([100.0, 800.0, 1000.0, 1499.0, 1500.0]), 0.5, 1.5, sample_rate=RATE)
    assert got.false_cutoffs == 3  # 800, 1000, 1499: from the speech start's write up to its end's
    assert got.eot_ms == pytest.approx(0.0)  # at the end of speech's write: not a cut-off, latency 0


def test_the_anchor_moves_with_a_late_chunk_never_the_vendors_latency():
    """The end of speech (1.5 s) rides on chunk 75; written 30 ms late, the anchor is 30 ms later."""
    got = end_of_turn(_timeline([1700.0], late_chunk=70), 0.5, 1.5, sample_rate=RATE)
    assert got.eot_ms == pytest.approx(170.0)
    assert end_of_turn(_timeline([1510.0], late_chunk=70), 0.5, 1.5, sample_rate=RATE).false_cutoffs == 1


def test_no_end_of_turn_gives_no_latency_and_no_cutoffs():
    got = end_of_turn(_timeline([]), 0.5, 1.5, sample_rate=RATE)
    assert got.eot_ms is None and got.false_cutoffs == 0
    with pytest.raises(ValueError):
        end_of_turn(Timeline(), 0.5, 1.5, sample_rate=RATE)


def _figures(statuses, utterances, ticks, eot, cutoffs) -> dict:
    data = SeriesData(statuses=statuses, utterances=utterances, ticks=ticks, values={}, errors=[], words=[], eot=eot,
                      cutoffs=cutoffs)
    return eot_figures(np.asarray(statuses, dtype=object), data, design(utterance=utterances, tick=ticks))


def test_the_series_figures_count_scored_ok_rows_and_cluster_their_intervals():
    rng = np.random.default_rng(1)
    n = 60
    utterances, ticks = [f"u{i % 10}" for i in range(n)], [f"t{i // 10}" for i in range(n)]
    eot = list(rng.normal(400, 50, n))
    cutoffs = [1 if i % 4 == 0 else 0 for i in range(n)]
    statuses = ["ok"] * n
    statuses[1], cutoffs[2], eot[3] = "timeout", None, None  # a failed row, an unscored row, no end of turn
    s = _figures(statuses, utterances, ticks, eot, cutoffs)
    scored = [i for i in range(n) if statuses[i] == "ok" and cutoffs[i] is not None]
    assert s["eot_clips"] == len(scored) == n - 2
    timed = [eot[i] for i in scored if eot[i] is not None]
    assert s["eot_p50"] == pytest.approx(percentile(np.array(timed), 50))
    assert s["eot_false_cutoffs"] == sum(cutoffs[i] for i in scored)
    assert s["eot_false_cutoff_share"] == pytest.approx(sum(cutoffs[i] > 0 for i in scored) / len(scored))
    low, high = s["eot_false_cutoff_share_ci"]
    assert 0 <= low < s["eot_false_cutoff_share"] < high <= 1
    assert s["eot_p50_ci"][0] <= s["eot_p50"] <= s["eot_p50_ci"][1]
    few = _figures(["ok"] * (MIN_ATTEMPTS - 1), ["u"] * 4, ["t"] * 4, [1.0] * 4, [0] * 4)
    assert few["eot_false_cutoff_share"] is None and few["eot_p50"] is None and few["eot_clips"] == 4
    assert _figures(["ok"] * 3, ["u"] * 3, ["t"] * 3, [], []) == {}  # no end-of-turn column: no figures


def test_the_registry_says_which_models_emit_end_of_turn_events():
    registry = Registry.default()
    emits = {m.id for m in registry.models.values() if m.end_of_turn}
    assert {"deepgram/flux-general-en", "assemblyai/universal-streaming-english", "speechmatics/enhanced-en",
            "deepgram/nova-3"} <= emits
    assert all(registry.resolve(m).protocol == "stt-stream" for m in emits)
    assert not registry.resolve("soniox/stt-rt-v6").end_of_turn  # endpoint detection is not asked for


# --- against the emulators ---------------------------------------------------------------------------

flux = switched_emulator("deepgram", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY))
speechmatics = switched_emulator("speechmatics", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0,
                                                             api_key=KEY))
assemblyai = switched_emulator("assemblyai", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0,
                                                         api_key=KEY))

WAIT_S = 2.0  # the caller stays on the line this long for the end of turn
CASES = {  # model -> the emulator fixture's name, and the end of turn's delay injected (ms after the end of speech)
    "deepgram/flux-general-en": ("flux", 260.0),
    "deepgram/nova-3": ("flux", 230.0),  # the same Deepgram emulator: speech_final is the end of turn
    "speechmatics/enhanced-en": ("speechmatics", 420.0),
    "assemblyai/universal-streaming-english": ("assemblyai", 310.0),
}


def _eot_truth_ms(stream, clip) -> float:
    """The end of turn as the emulator sent it, from the end of speech's write (the metric's anchor)."""
    end = sent_at_ns(stream.timeline, clip.speech_end * clip.sample_rate, clip.sample_rate)
    return (stream.sent["end_of_turn"] - end) / 1e6


@pytest.mark.realtime
@pytest.mark.parametrize("model_id", list(CASES))
def test_stored_eot_is_the_injected_end_of_turn_as_sent(request, monkeypatch, model_id):
    name, delay = CASES[model_id]
    emulator = request.getfixturevalue(name)
    ds, clip, _, _ = shortest()
    eot = {"eot_ms": delay} if name == "speechmatics" else {"final_ms": delay}
    emulator.use(monkeypatch, stt_scenario(clip, first_partial_ms=120.0, **{"final_ms": 200.0, **eot}))
    stream = measure_stream(model_id, ds, clip, eot_wait_s=WAIT_S)
    row = stream.row
    assert row.status == "ok", row.reason
    assert row.eot_false_cutoffs == 0
    assert abs(row.eot_ms - _eot_truth_ms(stream, clip)) <= 2.0
    assert abs(row.eot_ms - delay) < 60.0  # and near the setting: the truth read is this stream's
    assert row.hypothesis == clip.text


@pytest.mark.realtime
@pytest.mark.parametrize("model_id", ["deepgram/flux-general-en", "speechmatics/enhanced-en"])
def test_an_injected_mid_speech_end_of_turn_is_a_false_cutoff(request, monkeypatch, model_id):
    name = CASES[model_id][0]
    emulator = request.getfixturevalue(name)
    ds, clip, _, _ = shortest()
    middle = (clip.speech_start + clip.speech_end) / 2
    before = clip.speech_start / 2  # in the leading silence: neither a cut-off nor the end of turn
    emulator.use(monkeypatch, stt_scenario(clip, first_partial_ms=60.0, final_ms=240.0, cutoffs_s=(before, middle)))
    stream = measure_stream(model_id, ds, clip, eot_wait_s=WAIT_S)
    assert stream.row.status == "ok", stream.row.reason
    assert stream.row.eot_false_cutoffs == 1
    assert {"cutoff:1", "cutoff:2"} <= set(stream.sent)
    assert len(stream.timeline.of(END_OF_TURN)) == 3 and stream.row.eot_ms is not None
    assert stream.row.hypothesis == clip.text  # the words after a cut-off make the next turn, none twice


@pytest.mark.realtime
def test_without_the_wait_the_forced_end_is_no_end_of_turn(monkeypatch, flux):
    """The caller ends the stream 100 ms after the speech (ForceEndTurn): Flux's EndOfTurn then says
    `manual`, not the model's own, and the row has no end-of-turn latency."""
    ds, clip, _, _ = shortest()
    flux.use(monkeypatch, stt_scenario(clip, first_partial_ms=60.0, final_ms=300.0))
    stream = measure_stream("deepgram/flux-general-en", ds, clip)
    assert stream.row.status == "ok" and stream.timeline.of(FINAL)
    assert stream.row.eot_ms is None and stream.row.eot_false_cutoffs == 0
    assert not stream.timeline.of(END_OF_TURN)


soniox = switched_emulator("soniox", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY))


@pytest.mark.realtime
def test_a_model_without_end_of_turn_events_stores_none(monkeypatch, soniox):
    """Soniox's protocol has `<end>`, but endpoint detection is not asked for: the registry says the model
    emits none, and its rows leave both fields empty (the board says so, not a blank), however long the
    caller would wait."""
    ds, clip, _, _ = shortest()
    soniox.use(monkeypatch, stt_scenario(clip, first_partial_ms=60.0, final_ms=200.0))
    stream = measure_stream("soniox/stt-rt-v6", ds, clip, eot_wait_s=WAIT_S)
    assert stream.row.status == "ok", stream.row.reason
    assert stream.row.eot_ms is None and stream.row.eot_false_cutoffs is None
    assert stream.row.ttfs_ms is not None
