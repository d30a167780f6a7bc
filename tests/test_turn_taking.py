"""Caller behaviours (METHOD "Caller behaviours"): barge-in stop latency, answered after a barge-in
and premature response inside a mid-turn pause, each measured from a synthetic two-channel call
recording whose truth is known by construction; the personas that carry them, the fillers in their
words and the pause in their audio; a team's own noise recording, imported and mixed at an SNR."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from voxwatch.conversations.catalog import bundled_root
from voxwatch.conversations.noise_library import NoiseError, import_noise, imported_noises, noise_stretch
from voxwatch.conversations.persona_audio import insert_pause, render_persona
from voxwatch.conversations.scenario_file import load
from voxwatch.conversations.scorecards import scorecard_text
from voxwatch.foundation.hesitations import with_fillers
from voxwatch.foundation.persona import BUNDLED, Persona, PersonaError
from voxwatch.metrics.conversation import ConversationScore, TurnBehaviourFacts, TurnScore
from voxwatch.metrics.conversation_aggregate import scorecard
from voxwatch.metrics.conversation_timing import TurnBehaviour, turn_timings
from voxwatch.metrics.snr import snr_db, speech_mask
from voxwatch.metrics.turn_taking import agent_stop, premature_response, talk_end
from voxwatch.metrics.vad import speech_anchors
from voxwatch.web.conversation_views import stat_lines
from voxwatch.store.conversation_rows import TurnRow, conversation_of_record, conversation_record, ConversationRow

RATE = 16000
TONE = 0.3  # the agent: a sharp-edged 220 Hz tone, its edges exact


@pytest.fixture(scope="module")
def clinic():
    return load(bundled_root() / "clinic-desk")


def _words(clinic, index: int) -> tuple[np.ndarray, float, float]:
    """A caller turn's audio, digital silence outside its words (their edges then exact), and its words' start and end."""
    pcm, _ = sf.read(str(clinic.audio_path(clinic.scenario.turns[index])), dtype="int16")
    a = speech_anchors(pcm)
    out = np.zeros_like(pcm)
    lo, hi = round(a.speech_start * RATE), round(a.speech_end * RATE)
    out[lo:hi] = pcm[lo:hi]
    return out, lo / RATE, hi / RATE


def _tone(track: np.ndarray, start_s: float, end_s: float) -> None:
    lo, hi = round(start_s * RATE), round(end_s * RATE)
    track[lo:hi] = TONE * 32767 * np.sin(2 * np.pi * 220 * np.arange(hi - lo) / RATE)


def _recording(n_s: float) -> np.ndarray:
    return np.zeros((round(n_s * RATE), 2))


def _place(rec: np.ndarray, pcm: np.ndarray, at_s: float) -> tuple[float, float]:
    lo = round(at_s * RATE)
    rec[lo:lo + pcm.size, 0] = pcm
    return at_s, at_s + pcm.size / RATE


def test_a_barge_in_is_timed_from_the_callers_first_word_to_the_end_of_the_agents_talk(clinic):
    a, a0, a1 = _words(clinic, 0)
    b, b0, b1 = _words(clinic, 1)
    rec = _recording(30.0)
    span_a = _place(rec, a, 0.0)
    reply_a = a1 + 0.8  # the agent answers 800 ms after the caller's last word ...
    barge = reply_a + 0.3  # ... the caller's next first word 300 ms into that reply ...
    span_b = _place(rec, b, barge - b0)
    _tone(rec[:, 1], reply_a, barge + 0.25)  # ... and the agent stops 250 ms after it
    _tone(rec[:, 1], span_b[0] + b1 + 0.85, span_b[0] + b1 + 1.5)  # then answers turn b, 850 ms after its last word
    rec = rec.astype(np.int16)
    said = [(span_a[0] + a0, span_a[0] + a1), (span_b[0] + b0, span_b[0] + b1)]  # the words on the recording
    barged = turn_timings(rec, [span_a, span_b], said, behaviours=[None, TurnBehaviour(barge_in=True)])
    assert barged[0].v2v_ms == pytest.approx(800, abs=1)  # the reply it talked over is still turn a's
    assert barged[1].barge_in_stop_ms == pytest.approx(250, abs=1)
    assert barged[1].barge_in_answered is True and barged[1].v2v_ms == pytest.approx(850, abs=1)
    assert barged[1].interrupted is False  # the talk it barged into is not an interruption
    plain = turn_timings(rec, [span_a, span_b], said)  # the same recording, read as no barge-in
    assert plain[1].interrupted is True and plain[1].barge_in_stop_ms is None


def test_a_barge_in_stops_at_the_agents_clear_and_the_recording_keeps_what_it_streamed_ahead(clinic):
    """An agent that streamed 60 ms ahead of real time and cleared 250 ms after the caller's first word:
    the recording keeps the 60 ms the network dropped (heard 310 ms), the stop is its clear (250 ms)."""
    a, a0, a1 = _words(clinic, 0)
    b, b0, b1 = _words(clinic, 1)
    rec = _recording(30.0)
    span_a = _place(rec, a, 0.0)
    reply_a = a1 + 0.8
    barge = reply_a + 0.3
    span_b = _place(rec, b, barge - b0)
    _tone(rec[:, 1], reply_a, barge + 0.31)  # every sample received, played on
    _tone(rec[:, 1], span_b[0] + b1 + 0.85, span_b[0] + b1 + 1.5)
    rec = rec.astype(np.int16)
    said = [(span_a[0] + a0, span_a[0] + a1), (span_b[0] + b0, span_b[0] + b1)]
    early = barge - 0.5  # a clear before the caller's first word answered nothing of this barge-in
    cleared = TurnBehaviour(barge_in=True, clears=(early, barge + 0.25, barge + 0.4))
    t = turn_timings(rec, [span_a, span_b], said, behaviours=[None, cleared])[1]
    assert t.barge_in_stop_ms == pytest.approx(250, abs=0.1)  # the clock's clear, not the sample grid
    assert t.barge_in_stop_heard_ms == pytest.approx(310, abs=1)
    assert t.barge_in_answered is True and t.interrupted is False
    late = turn_timings(rec, [span_a, span_b], said, behaviours=[None, TurnBehaviour(True, clears=(barge + 0.5,))])[1]
    assert late.barge_in_stop_ms == late.barge_in_stop_heard_ms == pytest.approx(310, abs=1)  # its audio ran out first
    none = turn_timings(rec, [span_a, span_b], said, behaviours=[None, TurnBehaviour(barge_in=True)])[1]
    assert none.barge_in_stop_ms == none.barge_in_stop_heard_ms  # no clear (raw PCM): it played all it sent


def test_the_agents_stop_is_its_first_clear_from_the_callers_start_unless_its_audio_ran_out_first():
    assert agent_stop(2.0, 1.0, ()) == 2.0
    assert agent_stop(2.0, 1.0, (0.9, 1.5, 1.7)) == 1.5
    assert agent_stop(2.0, 1.0, (1.0,)) == 1.0
    assert agent_stop(2.0, 1.0, (0.5, 2.4)) == 2.0


def test_an_agent_that_never_stops_or_never_answers_is_seen_so(clinic):
    a, a0, a1 = _words(clinic, 0)
    b, b0, b1 = _words(clinic, 1)
    rec = _recording(40.0)
    span_a = _place(rec, a, 0.0)
    barge = a1 + 1.1
    span_b = _place(rec, b, barge - b0)
    _tone(rec[:, 1], a1 + 0.8, span_b[0] + b1 + 2.0)  # talks through the caller's whole turn, then falls silent
    said = [(span_a[0] + a0, span_a[0] + a1), (span_b[0] + b0, span_b[0] + b1)]
    t = turn_timings(rec.astype(np.int16), [span_a, span_b], said, behaviours=[None, TurnBehaviour(barge_in=True)])[1]
    assert t.barge_in_stop_ms == pytest.approx((span_b[0] + b1 + 2.0 - barge) * 1000, abs=1)
    assert t.barge_in_answered is False and t.no_response is True


def test_the_talk_end_is_none_when_the_agent_was_silent_and_bridges_pauses_between_its_words():
    agent = np.zeros(5 * RATE)
    assert talk_end(agent, RATE, RATE) is None
    _tone(agent, 1.0, 1.4)
    _tone(agent, 1.6, 2.0)  # a 200 ms pause between words: one talk
    _tone(agent, 2.5, 3.0)  # 500 ms later: another
    assert talk_end(agent / 32768, RATE, RATE) == pytest.approx(2.0 * RATE, abs=2)


@pytest.mark.parametrize("agent_at, premature", [(0.7, True), (0.98, True), (1.05, False), (-0.2, True)])
def test_premature_response_is_an_agent_onset_inside_the_pause(agent_at, premature):
    """A 1 s pause from 1.0 s: an onset 20 ms before its end still counts (sought 50 ms past it), one
    just after does not, and an agent already talking when the pause starts is inside it."""
    agent = np.zeros(5 * RATE)
    _tone(agent, 1.0 + agent_at, 1.0 + agent_at + 0.6)
    assert premature_response(agent / 32768, RATE, 2 * RATE, RATE) is premature


def test_a_pause_is_read_per_turn_with_its_length(clinic):
    a, a0, a1 = _words(clinic, 0)
    paused, at = insert_pause(a, RATE, 1000)
    assert paused.size == a.size + RATE and not paused[round(at * RATE):round(at * RATE) + RATE].any()
    third = (a1 - a0) / 3
    assert a0 + third - 0.02 <= at <= a1 - third + 0.02  # between two words in the middle third
    rec = _recording(20.0)
    span = _place(rec, paused, 0.0)
    _tone(rec[:, 1], at + 0.8, at + 1.4)  # the agent answers 800 ms into the pause
    said = [(a0, a1 + 1.0)]  # the words, the pause put in among them
    t = turn_timings(rec.astype(np.int16), [span], said, behaviours=[TurnBehaviour(pause=(at, 1.0))])[0]
    assert t.premature is True and t.pause_ms == 1000 and t.interrupted is True
    quiet = _recording(20.0)
    _place(quiet, paused, 0.0)
    _tone(quiet[:, 1], span[1] - 0.5, span[1] + 0.5)  # answers after the caller's turn
    t = turn_timings(quiet.astype(np.int16), [span], said, behaviours=[TurnBehaviour(pause=(at, 1.0))])[0]
    assert t.premature is False


def test_fillers_go_between_words_the_same_way_every_time():
    text = "I need to book a physical for Elena Alvarez next week."
    once = with_fillers(text, 3, 42)
    assert once == with_fillers(text, 3, 42) and once != text
    added = once.split()
    assert len(added) == len(text.split()) + 3 and added[0] == "I"
    assert with_fillers(text, 0, 42) == text and with_fillers("Yes.", 2, 1) == "Yes."


def test_behaviours_are_part_of_a_personas_identity_and_checked():
    assert BUNDLED["hum-5db"].identity == "hum-5db#d3f1295928bd"  # a persona without behaviours keeps its identity
    calm, barging = Persona("p", pause_ms=800), Persona("p", pause_ms=800, barge_in_ms=300)
    assert calm.identity != barging.identity != Persona("p", pause_ms=400).identity
    assert not Persona("p", barge_in_ms=300).unchanged and Persona("p", fillers=1).resynthesized
    for bad, field in [({"barge_in_ms": -1}, "barge_in_ms"), ({"pause_ms": 50}, "pause_ms"),
                       ({"fillers": 9}, "fillers"), ({"fillers": True}, "fillers"),
                       ({"noise": "cafe", "snr_db": 5.0}, "noise"),
                       ({"noise": "cafe", "snr_db": 5.0, "noise_sha256": "abc"}, "noise_sha256"),
                       ({"noise": "hum", "snr_db": 5.0, "noise_sha256": "a" * 64}, "noise")]:
        with pytest.raises(PersonaError, match=f"'p': {field}: "):
            Persona("p", **bad)


def test_an_imported_noise_is_pinned_licensed_and_mixed_at_its_snr(tmp_path, clinic):
    rng = np.random.default_rng(7)
    source = tmp_path / "street.flac"
    sf.write(str(source), 0.05 * rng.standard_normal((3 * 44100, 2)), 44100)
    library = tmp_path / "noises"
    noise, new = import_noise(source, library, "CC-BY-4.0", source="my street")
    assert new and noise.name == "street" and noise.license == "CC-BY-4.0" and noise.seconds == 3.0
    assert import_noise(source, library, "CC-BY-4.0") == (noise, False)  # the same samples again: nothing to do
    assert json.loads((library / "street" / "noise.json").read_text())["sha256"] == noise.sha256
    assert [n.name for n in imported_noises(library)] == ["street"]
    sf.write(str(source), 0.05 * rng.standard_normal(3 * 44100), 44100)
    with pytest.raises(NoiseError, match="already imported with other audio"):
        import_noise(source, library, "CC-BY-4.0")
    with pytest.raises(NoiseError, match="licence"):
        import_noise(source, library, " ", name="other")
    persona = Persona("street-10db", noise="street", noise_sha256=noise.sha256, snr_db=10.0, seed=4)
    rendered = render_persona(clinic, persona, tmp_path / "cache", library)
    clean, _ = sf.read(str(clinic.audio_path(clinic.scenario.turns[0])), dtype="int16")
    mixed = np.frombuffer(rendered.audio[0], dtype="<i2").astype(np.float64)
    speech = clean.astype(np.float64)
    gain = float(np.dot(mixed, speech) / np.dot(speech, speech))  # the speech's share of the mix (absorbs the peak guard)
    assert snr_db(gain * speech, mixed - gain * speech, speech_mask(speech, RATE)) == pytest.approx(10.0, abs=0.05)
    with pytest.raises(PersonaError, match="not the persona's pin"):
        noise_stretch(library, "street", "0" * 64, 100, RATE, 1)


def test_behaviours_are_stored_read_back_and_shown_per_persona():
    turns = tuple(TurnScore(f"t{i}", {}, False, (), (), False, False, 800.0 + i, 0.8,
                            TurnBehaviourFacts(240.0 + i, True, 800.0, i % 2 == 0, 300.0 + i)) for i in range(6))
    card = scorecard([ConversationScore("c1", "s", turns), ConversationScore("c2", "s", turns)])
    assert card.barge_in_stop.n == 12 and card.barge_in_answered.passed == 12 and card.premature.passed == 6
    text = scorecard_text("agent/x", "s", card)
    assert "barge-in stop latency   p50 242 ms" in text and "in a 800 ms mid-turn pause" in text
    assert card.barge_in_stop_heard.n == 12 and "heard (recording)     p50 302 ms" in text
    shown = {line.statistic: line for line in stat_lines(card)}  # the web board's block
    assert shown["barge_in_stop_p50_ms"].value == 242.5 and shown["premature_response"].value == 0.5
    assert shown["barge_in_stop_heard_p50_ms"].value == 302.5
    assert "barge_in_stop_p50_ms" not in {line.statistic for line in stat_lines(scorecard([]))}
    row = TurnRow("c1", 0, "t0", "ok", "", "[]", "[]", "{}", barge_in_stop_ms=250.0, barge_in_answered=True,
                  pause_ms=800.0, premature_response=False, barge_in_stop_heard_ms=310.0)
    conv = ConversationRow(conversation_id="c1", run_id="r", model_id="agent/x", scenario="s", scenario_version=1,
                           scenario_pin="p" * 64, region="local", started_at=0.0, finished_at=1.0, status="ok",
                           reason="", turns=1, failed_turns=0, whole=True, rotations=0, reconnections=0,
                           rotation_reasons="[]", reconnection_reasons="[]")
    record = json.loads(json.dumps(conversation_record(conv, [row])))
    assert conversation_of_record(record)[1] == [row]
    for name in ("barge_in_stop_ms", "barge_in_answered", "pause_ms", "premature_response", "barge_in_stop_heard_ms"):
        del record["turns"][0][name]  # a record spooled before caller behaviours
    back = conversation_of_record(record)[1][0]
    assert back.barge_in_stop_ms is None and back.barge_in_stop_heard_ms is None


def test_a_conversation_page_says_each_turns_behaviour(tmp_path):
    """The per-conversation page states a turn's barge-in (how long the agent kept talking, whether it
    then answered) and a mid-turn pause (whether the agent spoke inside it), from the stored turn row;
    a turn with neither says nothing of them."""
    from starlette.testclient import TestClient

    from voxwatch.metrics import METHOD_VERSION
    from voxwatch.store import open_store
    from voxwatch.web.app import create_app

    conv = ConversationRow(conversation_id="c-behave", run_id="r", model_id="agent/x", scenario="clinic-desk",
                           scenario_version=1, scenario_pin="p" * 64, region="local", started_at=1.0e9,
                           finished_at=1.0e9 + 60, status="ok", reason="", turns=4, failed_turns=0, whole=True,
                           rotations=0, reconnections=0, rotation_reasons="[]", reconnection_reasons="[]",
                           method_version=METHOD_VERSION)
    turns = [TurnRow("c-behave", 0, "t01", "ok", "", "[]", "[]", "{}", barge_in_stop_ms=312.4, barge_in_answered=True,
                     barge_in_stop_heard_ms=371.0),
             TurnRow("c-behave", 1, "t02", "ok", "", "[]", "[]", "{}", pause_ms=800.0, premature_response=True),
             TurnRow("c-behave", 2, "t03", "ok", "", "[]", "[]", "{}", barge_in_stop_ms=2500.0, barge_in_answered=False,
                     pause_ms=400.0, premature_response=False),
             TurnRow("c-behave", 3, "t04", "ok", "", "[]", "[]", "{}")]
    url = f"sqlite:///{tmp_path / 'behave.sqlite'}"
    store = open_store(url)
    try:
        assert store.add_conversation(conv, turns)
    finally:
        store.close()
    page = TestClient(create_app(url)).get("/conversation/c-behave")
    assert page.status_code == 200, page.text[:300]
    sections = [s.replace("&#39;", "'") for s in page.text.split('<section class="turn"')[1:]]
    assert len(sections) == 4 and 'data-field="behaviour"' not in sections[3]
    assert 'data-value="312.4">312 ms</span> after the caller\'s first word' in sections[0]
    assert "answered the turn" in sections[0] and "paused" not in sections[0]
    assert 'heard on the recording: <span data-field="barge_in_stop_heard_ms" data-value="371.0">371 ms' in sections[0]
    assert "heard on the recording" not in sections[2]  # stored before it was: nothing said
    assert 'data-value="800.0">800 ms</span> mid-turn' in sections[1]
    assert "started speaking inside the pause (premature)" in sections[1] and "barged in" not in sections[1]
    assert "never answered it" in sections[2] and "the agent <span data-field=\"premature_response\">waited" in sections[2]
