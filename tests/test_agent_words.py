"""What a deployed agent said: its replies transcribed after the call by the fixed instrument (the local
Whisper), stored per turn with the instrument's id, and scored. A beep bot (the reference agent on
loopback answering every turn with a tone) has no words, so it fails every words dimension; the
reference agent's eSpeak replies, which its script knows, are transcribed and their WER measured."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

import pytest

from support.reference_agent import FAST, booking_trial, reference_agent
from voxwatch.conversations.hold import first_turns, reply_transcription
from voxwatch.conversations.records import rows_of, score_of
from voxwatch.conversations.runner import ConversationSettings, run_conversation
from voxwatch.metrics.conversation import NOT_SPEECH, RULE_NO_SPEECH, RULE_UNREPORTED
from voxwatch.metrics.conversation_aggregate import scorecard
from voxwatch.metrics.wer import normalize
from voxwatch.providers.agents.line import url_variable
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store

pytestmark = pytest.mark.realtime

REFERENCE = Path(str(files("voxwatch.providers.emulators.agents").joinpath("reference_agents.toml")))
WHISPER = "faster-whisper/tiny.en@1.2.1"


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    return booking_trial(tmp_path_factory.mktemp("scenarios") / "clinic-booking")


def _held(loaded, url: str, transport: str, monkeypatch, whole: bool = True):
    registry = Registry.default(files=[REFERENCE])
    monkeypatch.setenv(url_variable(f"reference-{transport}"), url.replace("http://", "ws://", 1) + f"/{transport}")
    model = registry.resolve(f"agent/reference-{transport}")
    settings = ConversationSettings(**reply_transcription(registry, model, WHISPER))
    assert settings.scripted_replies  # the reference agent is a baseline: it says its script's replies
    return asyncio.run(run_conversation(registry.create(model), model.id, model.vendor, loaded, settings, whole=whole))


def test_a_beep_bot_fails_every_words_dimension_and_its_adherence(trial, monkeypatch):
    with reference_agent(trial, FAST) as url:  # a 600 ms tone for every reply
        run = _held(trial, url, "twilio", monkeypatch)
    assert [t.status for t in run.turns] == ["ok"] * 3, [t.reason for t in run.turns]
    assert all(t.transcript == "" and t.transcript_instrument == WHISPER for t in run.turns)
    for score in run.score.turns:
        for dim in ("instruction_following", "kb_grounding"):
            assert (score.verdicts[dim].passed, score.verdicts[dim].reason, score.verdicts[dim].rule) == \
                (False, NOT_SPEECH, RULE_NO_SPEECH)
        assert score.verdicts["tool_use_correct"].rule == RULE_UNREPORTED  # its calls stay its own
        assert score.verdicts["turn_taking"].passed is True  # it answered in turn: that alone passes nothing
        judged = {d: v.passed for d, v in score.verdicts.items() if d not in ("turn_taking", "tool_use_correct")}
        assert set(judged.values()) == {False}  # a tagged turn's state and ambiguity too: only words decide them
        assert score.transcript_instrument == WHISPER and score.transcript_ref_words is None  # no words: no WER
    card = scorecard([run.score])
    assert (card.dimensions["instruction_following"].passed, card.dimensions["instruction_following"].n) == (0, 3)
    assert (card.dimensions["kb_grounding"].passed, card.dimensions["kb_grounding"].n) == (0, 3)
    assert card.dimensions["tool_use_correct"].n == 0
    assert card.adherence.passed == 3 and card.adherence.n >= 9  # turn-taking's three passes, every other item failed
    assert card.transcription.turns == 0 and card.transcription.wer is None


def test_the_reference_agents_spoken_replies_are_transcribed_stored_and_their_wer_measured(trial, monkeypatch,
                                                                                          tmp_path):
    one, whole = first_turns(trial, 2)
    with reference_agent(trial, replace(FAST, voice="espeak")) as url:
        run = _held(one, url, "pcm", monkeypatch, whole=whole)
    assert [t.status for t in run.turns] == ["ok"] * 2, [t.reason for t in run.turns]
    row, turns = rows_of(run, one, run_id="r1", region="eu", started_at=1.0, finished_at=2.0, whole=whole)
    store = open_store(f"sqlite:///{tmp_path / 'words.db'}")
    try:
        store.add_conversation(row, turns)
        (_, stored), = store.conversations()
    finally:
        store.close()
    for turn, script in zip(stored, one.scenario.turns):
        assert turn.transcript_instrument == WHISPER
        assert turn.model_transcript and turn.model_transcript == run.turns[turn.turn_index].transcript
        assert turn.transcript_ref_words == len(normalize(script.reply).split())  # the script's words
        assert 0 <= turn.transcript_errors < turn.transcript_ref_words  # heard, and mostly right
        assert turn.instruction_following is None  # words, and no judge: undecided, never guessed
    card = scorecard([score_of(row, stored)])
    assert card.transcription.turns == 2 and card.transcription.instruments == (WHISPER,)
    assert card.transcription.wer is not None and card.transcription.wer < 0.5
    assert card.transcription.words == sum(t.transcript_ref_words for t in stored)
