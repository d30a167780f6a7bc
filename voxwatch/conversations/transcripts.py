"""What the agent said: each reply of an agent that does not report its own words (a deployed agent
behind an audio-only line, an S2S model that sent audio without its transcript), transcribed after the
call by one fixed, versioned instrument ([boards.s2s] reply_transcriber; METHOD "Conversations"), so
that its words are scored as every other agent's are. It runs once the call is over, off every clock
(the runner calls it under `on_the_clock.scoring()`), as the speech quality instrument does."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable

import numpy as np

from voxwatch.foundation.audio import resample
from voxwatch.foundation.conversation import WORDS
from voxwatch.metrics.timeline import collect_audio

if TYPE_CHECKING:
    from voxwatch.conversations.runner import ConversationRun, TurnRun

INSTRUMENT_RATE = 16000  # what the instrument hears: the reply resampled from its wire rate


def needs_words(turn: "TurnRun", blind: tuple[str, ...]) -> bool:
    """Whether a turn's reply is transcribed: its model did not report its words (a failed turn: the
    session's agent does not), or reported none although it sent audio. A turn ended `malformed` is
    not: what it sent broke the line's bounds (docs/CONVERSATIONS.md "Bounds"), a hostile input the
    instrument is never loaded for, not a reply."""
    if turn.status == "malformed":
        return False
    if turn.model is None:
        return WORDS in blind
    if WORDS in turn.model.unreported:
        return True
    return not turn.model.transcript and bool(collect_audio(turn.timeline.events).samples.size)


async def transcribe_replies(run: "ConversationRun", transcriber: Callable[[np.ndarray], str],
                             instrument: str) -> None:
    """Transcribe every reply that needs it (needs_words) with `transcriber` (float32 16 kHz -> text),
    stored on its turn with the instrument's id. A turn with no reply audio has no words ("" without
    asking the instrument); an instrument that fails leaves the turn's words unreported, with its error."""
    for turn in run.turns:
        if not needs_words(turn, run.unreported):
            continue
        reply = collect_audio(turn.timeline.events)
        try:
            text = ""
            if reply.samples.size:
                audio = resample(reply.samples, reply.sample_rate, INSTRUMENT_RATE).astype(np.float32)
                text = await asyncio.to_thread(transcriber, audio)
        except Exception as exc:  # noqa: BLE001 - the instrument's failure is never the agent's
            turn.transcript_error = f"{instrument}: {type(exc).__name__}: {exc}"
            continue
        turn.transcript, turn.transcript_instrument = text.strip(), instrument
