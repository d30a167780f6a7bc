"""Personas (voxwatch/foundation/persona.py, persona_audio.py): the noise at its SNR measured back over
the speech frames, rendering kept and deterministic, a voice or rate that really changes the
audio, every bad field refused by name, and a conversation held by a noisy caller."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import numpy as np
import pytest
import soundfile as sf
from support.processes import run_cli
from support.contract import REGISTRY

from voxwatch.conversations import persona_audio as rendering
from voxwatch.conversations.catalog import ScenarioCatalog, bundled_root
from voxwatch.foundation.persona import BUNDLED, DEFAULT, Persona, PersonaError, find, load_personas
from voxwatch.conversations.persona_audio import persona_audio, pinned_audio, render_persona
from voxwatch.conversations.runner import ConversationSettings, caller_audio, caller_turn, run_conversation
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.foundation.noises import NOISES, generate
from voxwatch.metrics.snr import snr_db, speech_mask
from voxwatch.metrics.vad import speech_anchors

RATE = 16000


def first_turns(n: int) -> LoadedScenario:
    full = ScenarioCatalog([bundled_root()]).load("clinic-desk")
    return LoadedScenario(replace(full.scenario, turns=full.scenario.turns[:n]), full.folder, full.pin)


@pytest.fixture(scope="module")
def two_turns() -> LoadedScenario:
    return first_turns(2)


def pcm(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<i2").astype(np.float64)


def measured_snr(mixed: np.ndarray, clean: np.ndarray) -> float:
    """The SNR of a mix, measured back: the clean speech's share of the mix (a least-squares gain,
    which absorbs any peak guard) is the speech, the rest the noise; over the clean speech frames."""
    gain = float(np.dot(mixed, clean) / np.dot(clean, clean))
    return snr_db(gain * clean, mixed - gain * clean, speech_mask(clean, RATE))


@pytest.mark.realtime
@pytest.mark.parametrize("kind,target", [("pink", 0.0), ("brown", 10.0), ("hum", 5.0), ("babble", 10.0),
                                         ("babble", 20.0)])
def test_the_noise_is_mixed_at_the_target_snr_over_the_speech_frames(kind, target, two_turns, tmp_path):
    persona = Persona("test-noise", noise=kind, snr_db=target, seed=7)
    mixed = persona_audio(two_turns, persona, tmp_path)
    for i, data in enumerate(mixed):
        clean = pcm(pinned_audio(two_turns, i))
        assert len(data) == clean.size * 2  # the same audio, with noise: not resynthesized
        got = measured_snr(pcm(data), clean)
        assert abs(got - target) < 0.5, (kind, target, got)
        mask = speech_mask(clean, RATE)  # the lead-in and the trailing silence are not speech
        assert not mask[: int(0.3 * RATE)].any() and not mask[-int(0.5 * RATE):].any()


def test_each_noise_is_unit_rms_seeded_and_its_own():
    clips = {kind: generate(kind, RATE * 2, RATE, 11) for kind in NOISES}
    for kind, x in clips.items():
        assert abs(np.sqrt(np.mean(x * x)) - 1.0) < 1e-6, kind
        assert np.array_equal(x, generate(kind, RATE * 2, RATE, 11)), kind
        assert not np.array_equal(x, generate(kind, RATE * 2, RATE, 12)), kind
    spectra = {k: np.abs(np.fft.rfft(x)) ** 2 for k, x in clips.items()}
    f = np.fft.rfftfreq(RATE * 2, 1 / RATE)
    low = {k: s[(f > 20) & (f < 200)].sum() / s.sum() for k, s in spectra.items()}
    assert low["hum"] > 0.9 and low["brown"] > 0.5  # rumble and mains sit low
    assert low["babble"] < 0.2 and low["pink"] < low["brown"]
    power = clips["babble"].reshape(-1, RATE // 50) ** 2  # babble's level comes and goes, as talk does
    frames_db = 10 * np.log10(power.mean(axis=1))
    assert np.percentile(frames_db, 90) - np.percentile(frames_db, 10) > 3.0


def test_the_default_persona_is_the_pinned_audio(two_turns, tmp_path):
    assert persona_audio(two_turns, DEFAULT, tmp_path) == [pinned_audio(two_turns, i) for i in range(2)]
    assert not any(tmp_path.iterdir())  # nothing rendered, nothing kept


def test_a_noisy_rendering_is_deterministic_and_its_seed_matters(two_turns, tmp_path):
    persona = BUNDLED["hum-5db"]
    first = persona_audio(two_turns, persona, tmp_path / "a")
    again = persona_audio(two_turns, persona, tmp_path / "b")  # a fresh cache: computed again
    assert first == again
    other = persona_audio(two_turns, replace(persona, seed=persona.seed + 1), tmp_path / "a")
    assert other != first


def test_a_voice_is_synthesized_once_then_read_back(two_turns, tmp_path, monkeypatch):
    calls = []
    real = rendering.render
    monkeypatch.setattr(rendering, "render", lambda *a, **k: calls.append(a) or real(*a, **k))
    persona = Persona("test-voice", voice="en-gb-x-rp", seed=1)
    first = persona_audio(two_turns, persona, tmp_path)
    assert len(calls) == 2
    assert persona_audio(two_turns, persona, tmp_path) == first and len(calls) == 2  # same bytes, not re-rendered
    kept = [p for p in tmp_path.rglob("*.wav")]
    assert sorted(p.stem for p in kept) == [t.id for t in two_turns.scenario.turns]
    about = json.loads(next(tmp_path.rglob("persona.json")).read_text())
    assert about["identity"] == persona.identity and about["pin"] == two_turns.pin


@pytest.mark.realtime
def test_under_a_noise_each_turn_carries_its_clean_words_anchors(two_turns, tmp_path):
    hum = render_persona(two_turns, BUNDLED["hum-5db"], tmp_path)
    assert hum.anchors == [speech_anchors(pcm(pinned_audio(two_turns, i)).astype("<i2")) for i in range(2)]
    noisy = render_persona(two_turns, BUNDLED["accented-noisy"], tmp_path)  # re-spoken, then mixed
    for turn, anchors in zip(two_turns.scenario.turns, noisy.anchors):
        words = next(tmp_path.rglob(f"{turn.id}.speech.wav"))
        assert anchors == speech_anchors(sf.read(str(words), dtype="int16")[0])
    assert render_persona(two_turns, BUNDLED["fast-quiet"], tmp_path).anchors == [None, None]  # clean: read as sent


def envelope_distance(a: np.ndarray, b: np.ndarray, frames: int = 200) -> float:
    """How differently two renderings of the same words move: the mean absolute difference, in dB,
    of their 10 ms energy envelopes, each stretched to the same number of frames."""
    def env(x: np.ndarray) -> np.ndarray:
        n = RATE // 100
        power = (x[: x.size - x.size % n].reshape(-1, n) ** 2).mean(axis=1)
        db = 10 * np.log10(np.maximum(power, 1e-3))
        return np.interp(np.linspace(0, db.size - 1, frames), np.arange(db.size), db)
    return float(np.mean(np.abs(env(a) - env(b))))


def test_another_voice_or_rate_really_changes_the_audio(tmp_path):
    one = first_turns(1)
    pinned = pcm(pinned_audio(one, 0))
    same = pcm(persona_audio(one, Persona("test-same", voice=one.scenario.voice), tmp_path)[0])
    accent = pcm(persona_audio(one, Persona("test-accent", voice="en-gb-scotland"), tmp_path)[0])
    female = pcm(persona_audio(one, Persona("test-female", voice=f"{one.scenario.voice}+f3"), tmp_path)[0])
    fast = pcm(persona_audio(one, BUNDLED["fast-quiet"], tmp_path)[0])
    # the scenario's own voice, re-rendered: the same words the same way (eSpeak NG's noise aside)
    baseline = envelope_distance(same, pinned)
    assert abs(same.size - pinned.size) < RATE // 50
    for other in (accent, female):
        assert envelope_distance(other, pinned) > 2 * baseline + 1.0, (envelope_distance(other, pinned), baseline)
    assert fast.size < 0.85 * pinned.size  # 200 words a minute against the scenario's 140


@pytest.mark.parametrize("fields,message", [
    ({"name": "Bad Name"}, "name: expected lower-case"),
    ({"voice": "en us!"}, "voice: 'en us!' is not an eSpeak NG voice name"),
    ({"voice": "en-usa"}, "eSpeak NG has no language voice 'en-usa'"),
    ({"voice": "en-us+f33"}, "eSpeak NG has no voice variant 'f33'"),
    ({"rate_wpm": 20}, "rate_wpm: expected words per minute, an integer from 80 to 450; found 20"),
    ({"rate_wpm": 150.5}, "rate_wpm"),
    ({"noise": "bable", "snr_db": 10}, "unknown noise 'bable' (did you mean 'babble'?)"),
    ({"noise": "pink"}, "snr_db: a noise (pink) needs the SNR"),
    ({"snr_db": 10}, "snr_db: an SNR without a noise"),
    ({"noise": "pink", "snr_db": 99}, "snr_db: expected a number of dB from -10 to 40; found 99"),
    ({"noise": "pink", "snr_db": True}, "snr_db: expected a number"),
    ({"seed": -1}, "seed: expected an integer from 0"),
])
def test_a_bad_persona_field_is_refused_by_name(fields, message):
    with pytest.raises(PersonaError) as caught:
        Persona(**{"name": "caller", **fields})
    assert message in str(caught.value)
    assert str(caught.value).startswith("persona ")


def test_personas_load_from_toml_and_json_and_bad_files_are_refused(tmp_path):
    toml = tmp_path / "mine.toml"
    toml.write_text('[[persona]]\nname = "scot-traffic"\nvoice = "en-gb-scotland"\nrate_wpm = 160\n'
                    'noise = "brown"\nsnr_db = 15\nseed = 4\n')
    loaded = load_personas(toml)
    assert loaded["scot-traffic"] == Persona("scot-traffic", "en-gb-scotland", 160, "brown", 15, 4)
    assert find("scot-traffic", toml).identity.startswith("scot-traffic#")
    as_json = tmp_path / "mine.json"
    as_json.write_text(json.dumps([{"name": "caribbean", "voice": "en-029"}]))
    assert load_personas(as_json)["caribbean"].voice == "en-029"
    cases = {
        'persona = [{name = "x", colour = "red"}]\n': "persona[0]: unknown field 'colour'",
        'persona = [{name = "hum-5db", noise = "hum", snr_db = 5}]\n': "the name 'hum-5db' is taken (bundled)",
        'persona = [{name = "a"}, {name = "a"}]\n': "the name 'a' is taken (earlier in the file)",
        'persona = [{voice = "en-us"}]\n': "missing field 'name'",
        'persona = [{name = "a", rate_wpm = 1}]\n': "persona[0]: persona 'a': rate_wpm",
        '[persona\n': "not valid TOML",
        'other = 1\n': "no personas",
    }
    for text, message in cases.items():
        toml.write_text(text)
        with pytest.raises(PersonaError) as caught:
            load_personas(toml)
        assert message in str(caught.value), (text, str(caught.value))
    with pytest.raises(PersonaError, match="unknown persona 'hum-5'.*did you mean 'hum-5db'"):
        find("hum-5")


def test_the_identity_names_what_the_persona_changes():
    assert DEFAULT.identity == "default"  # it changes nothing: the scenario pin names its audio
    base = BUNDLED["accented-noisy"]
    assert base.identity.startswith("accented-noisy#") and len(base.identity.split("#")[1]) == 12
    assert replace(base, description="reworded").identity == base.identity
    changed = {replace(base, snr_db=5.0).identity, replace(base, seed=9).identity,
               replace(base, voice="en-029").identity, replace(base, noise="pink").identity, base.identity}
    assert len(changed) == 5
    assert {"default", "accented-noisy", "fast-quiet", "hum-5db"} <= set(BUNDLED)


@pytest.mark.realtime
def test_a_noisy_caller_holds_a_turn_with_the_local_cascade(tmp_path):
    one = first_turns(1)
    persona = BUNDLED["accented-noisy"]
    model = REGISTRY.resolve("local/cascade-scripted-baseline")
    adapter = REGISTRY.create(model)
    try:
        run = asyncio.run(run_conversation(adapter, model.id, model.vendor, one,
                                           ConversationSettings(persona_cache_dir=tmp_path), persona=persona))
    finally:
        adapter.close()
    assert run.persona == persona.identity
    assert [t.status for t in run.turns] == ["ok"], [t.reason for t in run.turns]
    sent, rendered = run.turns[0].caller_pcm, render_persona(one, persona, tmp_path)
    assert sent == caller_turn(rendered.audio[0], RATE, rendered.anchors[0]) and sent != caller_audio(one, 0)
    # trimmed 100 ms after the clean words' end, as the default persona's turn is after its VAD's
    assert len(sent) // 2 == round((rendered.anchors[0].speech_end + 0.1) * RATE) < len(rendered.audio[0]) // 2
    timing, words = run.turns[0].timing, run.turns[0].caller_anchors
    assert words == rendered.anchors[0] is not None
    # timed against the clean words under the babble, not the VAD of the noisy channel (which hears
    # speech from the first sample to well past the words: over a second longer); each word is read
    # at its chunk's write, which a busy machine's pacer may make a few ms late
    noisy = speech_anchors(np.frombuffer(sent, dtype=np.int16))
    clean_span, noisy_span = words.speech_end - words.speech_start, noisy.speech_end - noisy.speech_start
    assert abs(noisy_span - clean_span) > 0.2
    assert abs((timing.caller_speech_end_s - timing.caller_speech_start_s) - clean_span) < 0.02
    assert run.score.turns[0].verdicts["tool_use_correct"].passed is True


@pytest.mark.realtime
def test_the_cli_lists_the_personas_and_refuses_an_unknown_one():
    listed = run_cli("scenarios", "personas").stdout
    for p in BUNDLED.values():
        assert p.identity in listed
    refused = run_cli("scenarios", "run", "clinic-desk", "--persona", "hum5", check=False)
    assert refused.returncode == 2 and "unknown persona 'hum5'" in refused.stderr
    assert "Traceback" not in refused.stderr
