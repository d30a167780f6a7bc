"""Measuring one item: acquire -> measure -> observation. The harness owns the envelope.

`measure_item` is the one public entry used by `voxwatch run`, the Celery task and the
benchmarks. It opens the provider connection outside every clock (timed as `connect_ms`), paces
or sends the input, waits with a timeout, hands the timeline to voxwatch.metrics, and turns any
failure into a row with a status and a reason, never a latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Awaitable, Callable, Sequence

import numpy as np
import websockets

from voxwatch import __version__
from voxwatch.foundation import kernel_time
from voxwatch.foundation.clock import busy_poll, gc_paused, on_the_clock
from voxwatch.foundation.audio import resample
from voxwatch.datasets.catalog import Dataset
from voxwatch.datasets.manifest import Clip, Prompt, file_stem
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.onset import ONSET_VERSION, levels
from voxwatch.metrics.as_sent import sent_at_ns
from voxwatch.metrics.end_of_turn import end_of_turn
from voxwatch.metrics.peer_anchor import peer_speech_end
from voxwatch.metrics.stalls import playout_stalls
from voxwatch.metrics.text_stream import (STREAMED_TEXT_CONDITION, cancel_latency, reply_audible, schedule_seed,
                                          streamed_text_ttfa, text_schedule)
from voxwatch.metrics.timeline import (TTSMetrics, batch_metrics, collect_audio, connect_ms, pacing_error_ms,
                                       stt_stream_metrics, tts_metrics)
from voxwatch.metrics.v2v import call_recording, caller_speech_end_s, v2v_from_recording, write_recording
from voxwatch.metrics.vad import VAD_NAME, VAD_PARAMS, VAD_VERSION, SpeechAnchors
from voxwatch.metrics.answers import answer_correct
from voxwatch.metrics.deadline_wer import SEGMENT, errors_at_deadlines, errors_field
from voxwatch.metrics.hallucination import EMPTY_PROMPT, NONSPEECH, audible_ms, invented_words
from voxwatch.metrics.entities import entity_errors
from voxwatch.metrics.wer import scorer_for, word_errors
from voxwatch.metrics.witness import Witness, audio_witness, batch_witness, caller_turn_witness, stt_stream_witness
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.text import safe_text
from voxwatch.foundation.languages import is_english
from voxwatch.providers.base import HarnessFault, ProviderError, in_language, on_wire
from voxwatch.providers.session.close_codes import closed
from voxwatch.foundation.events import (AUDIO, CHUNK_SENT, CONNECT_START, CONNECTED, END_OF_TURN, FINAL, REQUEST_SENT,
                                        RESPONSE, Clock, Timeline)
from voxwatch.providers.keys import Secret, scrub
from voxwatch.providers.local.dnsmos_quality import INSTRUMENT_ID as QUALITY_INSTRUMENT
from voxwatch.providers.registry import ModelInfo

from voxwatch.harness.pacer import paced_send, paced_silence

TRIM_AFTER_SPEECH_S = 0.1
CLOCK_FIELDS = ("connect_ms", "ttfs_ms", "ttfs_peer_ms", "first_partial_ms", "first_partial_from_t0_ms", "latency_ms",
                "rtf", "ttfa_ms", "ttfb_ms", "leading_silence_ms", "synthesis_ms", "v2v_ms", "pacing_error_ms",
                "stall_count", "stall_ms", "eot_ms", "eot_false_cutoffs", "ttfa_first_text_ms", "ttfa_last_text_ms",
                "cancel_ms", "cancel_end")


class Inaudible(Exception):
    """Synthesized audio with no audible onset."""


class Stalled(HarnessFault):
    """The worker could not observe around a timed event for longer than the witness's bound: its own
    stall, not the provider's latency (excluded: not an attempt, in no rate against the vendor)."""


def _witnessed(row: Observation, witness: Witness, ctx: MeasureContext) -> None:
    """The row's clock witness; a stall over the bound excludes the row (METHOD "Clock witness")."""
    witness = replace(witness, bound_ms=ctx.stall_bound_ms)
    row.clock_uncertainty_ms = None if witness.uncertainty_ms is None else round(witness.uncertainty_ms, 3)
    row.arrival_stamp = witness.arrival_stamp
    if witness.stalled:
        raise Stalled(witness.reason)


@dataclass(frozen=True)
class MeasureContext:
    run_id: str
    seed: int
    region: str
    attempt: int = 1
    timeout_s: float = 30.0
    chunk_ms: int = 20
    instrument: Callable[[np.ndarray], str] | None = None  # float32 16 kHz -> transcript
    instrument_id: str | None = None
    quality: Callable[[np.ndarray], float] | None = None  # float32 16 kHz -> speech quality MOS (TTS, S2S replies)
    secrets: tuple[Secret | None, ...] = ()
    clock: Clock = time.perf_counter_ns
    emulator: bool = False
    recordings_dir: Path | None = None  # S2S call recordings; a temporary file when None
    on_timeline: Callable[[Timeline], None] | None = None  # calibration: sees each timeline as it is made
    stall_bound_ms: float | None = None  # the clock witness's bound ([run] stall_bound_ms); None: the method's
    # a streaming STT that emits end-of-turn events: how long the caller stays on the line in silence after the
    # clip, until the STT's own end of turn (METHOD "STT end of turn"); 0: it ends the stream as every caller does
    eot_wait_s: float = 0.0


def _timeline(ctx: MeasureContext) -> Timeline:
    timeline = Timeline(ctx.clock)
    if ctx.on_timeline is not None:
        ctx.on_timeline(timeline)  # it fills in as the measurement runs
    return timeline


async def _connect(connecting, timeline: Timeline, row: Observation, ctx: MeasureContext):
    """Open and warm the provider connection, outside every clock but connect_ms."""
    timeline.mark(CONNECT_START)
    session = await asyncio.wait_for(connecting, ctx.timeout_s)
    timeline.mark(CONNECTED)
    row.connect_ms = connect_ms(timeline)
    return session


def _base_row(model: ModelInfo, dataset: Dataset, item: Clip | Prompt, ctx: MeasureContext) -> Observation:
    clip = item if isinstance(item, Clip) else None
    scoring = scorer_for(dataset.info.language)
    return Observation(
        run_id=ctx.run_id, model_id=model.id, dataset=dataset.name, clip_id=item.id, attempt=ctx.attempt,
        board=model.board, vendor=model.vendor, protocol=model.protocol, region=ctx.region,
        started_at=time.time(), status="ok", condition=dataset.info.condition, family=dataset.info.family,
        utterance_id=clip.utterance_id if clip else item.id, voice=model.voice if model.board == "tts" else None,
        language=dataset.info.language, speaker=clip.voice if clip else None, accent=clip.accent if clip else None,
        dataset_manifest_sha256=dataset.manifest_sha256, seed=ctx.seed, emulator=ctx.emulator,
        reference=item.text, method_version=METHOD_VERSION, runner_version=__version__,
        normalizer=scoring.normalizer, normalizer_version=scoring.normalizer_version, vad=VAD_NAME, vad_version=VAD_VERSION,
        vad_params=json.dumps(VAD_PARAMS.as_record(), sort_keys=True), onset_version=ONSET_VERSION,
    )


COLD_LATENCIES = ("latency_ms", "rtf", "ttfb_ms", "ttfa_ms", "leading_silence_ms", "synthesis_ms")


def _http_facts(row: Observation, timeline: Timeline) -> None:
    """Record the HTTP version and connection reuse; a latency timed over a cold connection stays null."""
    response = next((e for e in timeline.of(RESPONSE) if e.http_version is not None), None)
    if response is None:
        return
    row.http_version, row.connection_reused = response.http_version, response.connection_reused
    if response.connection_reused is False:
        for name in COLD_LATENCIES:
            setattr(row, name, None)
        row.reason = "timed over a cold connection (it includes connection set-up); latency not recorded"


def _score(row: Observation, reference: str, hypothesis: str, entities: Sequence[dict] | None = None) -> None:
    """WER parts (and, for a tagged clip, entity counts) of the hypothesis as it will be stored: made
    safe first (voxwatch.foundation.text), so the stored words are the scored ones."""
    hypothesis = safe_text(hypothesis) if hypothesis else hypothesis
    parts = word_errors(reference, hypothesis, row.language)
    row.hypothesis = hypothesis
    row.substitutions, row.deletions, row.insertions, row.ref_words = (
        parts.substitutions, parts.deletions, parts.insertions, parts.ref_words)
    if entities is not None:
        counted = entity_errors(entities, hypothesis, row.language)
        row.entities_total, row.entities_missed = counted.total, counted.missed


def _score_nonspeech(row: Observation, timeline: Timeline, seconds: float) -> None:
    """A clip without speech (METHOD "Hallucination on non-speech"): its transcript (every final's words,
    as WER reads a stream's or a batch reply's) and the words it holds after the WER normalizer, over
    the seconds heard. No clock is kept, nor WER: there is no speech to time or to score against."""
    text = " ".join((e.text or "").strip() for e in timeline.of(FINAL) if (e.text or "").strip())
    row.hypothesis = safe_text(text)
    row.invented_words = invented_words(row.hypothesis, row.language)
    row.audio_duration_s = round(seconds, 4)
    for name in CLOCK_FIELDS:
        setattr(row, name, None)


def _sent_samples(clip: Clip) -> int:
    """A caller speaks the clip up to 100 ms after the end of speech (METHOD "Shared VAD anchors")."""
    return int(round((clip.speech_end + TRIM_AFTER_SPEECH_S) * clip.sample_rate))


_PEER_ENDS: dict[str, float | None] = {}


def peer_end(dataset: Dataset, clip: Clip) -> float | None:
    """The clip's end of speech on the peers' anchor (metrics.peer_anchor), computed once per clip's
    bytes after its first stream (the timed part is over): 10-80 ms of CPU a clip."""
    if clip.sha256 not in _PEER_ENDS:
        if len(_PEER_ENDS) >= 100_000:
            _PEER_ENDS.clear()
        _PEER_ENDS[clip.sha256] = peer_speech_end(dataset.audio(clip), clip.sample_rate)
    return _PEER_ENDS[clip.sha256]


def audio_sent(dataset: Dataset, clip: Clip) -> bytes:
    """What a caller sends, as int16 PCM: the clip trimmed to 100 ms after the end of speech."""
    return dataset.audio(clip)[:_sent_samples(clip)].tobytes()


async def _caller_turn(adapter, dataset: Dataset, clip: Clip, row: Observation, ctx: MeasureContext,
                       wait, stays_s: float = 0.0) -> tuple[bytes, Timeline]:
    """What a caller does (STT stream and S2S alike): connect, speak the clip in real time, end the
    turn, then wait (`wait(session)`) for the provider's answer within the time limit. A dataset with
    a wire format (the phone line's mu-law) is sent in it; the PCM is returned either way. `stays_s`:
    before it ends the turn, the caller stays on the line in silence up to that long, until the STT's
    own end of turn after the end of speech (END_OF_TURN)."""
    pcm = audio_sent(dataset, clip)
    wire = dataset.wire
    sent, bytes_per_sample = (pcm, 2) if wire is None else \
        (dataset.wire_bytes(clip)[:_sent_samples(clip) * wire.bytes_per_sample], wire.bytes_per_sample)
    timeline = _timeline(ctx)
    session = await _connect(adapter.connect(timeline), timeline, row, ctx)
    try:
        await paced_send(session, sent, clip.sample_rate, ctx.chunk_ms, timeline, bytes_per_sample)
        if stays_s > 0:
            spoken = sent_at_ns(timeline, clip.speech_end * clip.sample_rate, clip.sample_rate)
            await paced_silence(session, timeline, clip.sample_rate, ctx.chunk_ms, b"\xff" if wire else b"\x00\x00",
                                stays_s, lambda: any(e.t_ns >= spoken for e in timeline.of(END_OF_TURN)))
        row.pacing_error_ms = pacing_error_ms(timeline)
        await session.end_audio()
        await asyncio.wait_for(wait(session), ctx.timeout_s)
    finally:
        timeline.settle()  # the kernel's send times, read before the connection closes
        await session.aclose()
    return pcm, timeline


async def _stt_stream(adapter, model: ModelInfo, dataset: Dataset, clip: Clip, row: Observation,
                      ctx: MeasureContext) -> After:
    pcm, timeline = await _caller_turn(adapter, dataset, clip, row, ctx, lambda session: session.wait_final(),
                                       ctx.eot_wait_s if model.end_of_turn else 0.0)

    async def compute() -> None:
        if dataset.info.condition == NONSPEECH:
            return _score_nonspeech(row, timeline, len(pcm) / 2 / clip.sample_rate)
        m = stt_stream_metrics(timeline, clip.speech_start, clip.speech_end, peer_end(dataset, clip),
                               sample_rate=clip.sample_rate)
        if m.ttfs_ms is None:
            raise asyncio.TimeoutError("the stream closed without a final transcript")
        _witnessed(row, stt_stream_witness(timeline, clip.sample_rate, clip.speech_start, clip.speech_end), ctx)
        row.ttfs_ms, row.first_partial_ms, row.first_partial_from_t0_ms = (m.ttfs_ms, m.first_partial_ms,
                                                                           m.first_partial_from_t0_ms)
        row.ttfs_peer_ms = m.ttfs_peer_ms
        if model.end_of_turn:
            turn = end_of_turn(timeline, clip.speech_start, clip.speech_end, sample_rate=clip.sample_rate)
            row.eot_ms, row.eot_false_cutoffs = turn.eot_ms, turn.false_cutoffs
        _score(row, clip.text, m.hypothesis, clip.entities)
        _score_deadlines(row, timeline, clip, getattr(adapter, "partial_scope", SEGMENT))
    return compute


def _score_deadlines(row: Observation, timeline: Timeline, clip: Clip, partial_scope: str) -> None:
    """The word errors of the transcript as it stood at each deadline after the end of speech (TTFS's
    anchor), scored as the final is (METHOD "WER at the deadline")."""
    parts = errors_at_deadlines(timeline, clip.speech_end, clip.text, row.language, sample_rate=clip.sample_rate,
                                partial_scope=partial_scope)
    for deadline, errors in parts.items():
        setattr(row, errors_field(deadline), errors.errors)


async def _stt_batch(adapter, model: ModelInfo, dataset: Dataset, clip: Clip, row: Observation,
                     ctx: MeasureContext) -> After:
    pcm = audio_sent(dataset, clip)
    timeline = _timeline(ctx)
    client = await _connect(adapter.connect(timeline), timeline, row, ctx)
    await asyncio.wait_for(client.transcribe(pcm, timeline), ctx.timeout_s)
    timeline.settle()

    async def compute() -> None:
        if dataset.info.condition == NONSPEECH:
            return _score_nonspeech(row, timeline, len(pcm) / 2 / clip.sample_rate)
        m = batch_metrics(timeline, len(pcm) / 2 / clip.sample_rate)
        _witnessed(row, batch_witness(timeline), ctx)
        row.latency_ms, row.rtf = m.latency_ms, m.rtf
        _http_facts(row, timeline)
        _score(row, clip.text, m.hypothesis, clip.entities)
    return compute


async def _tts(adapter, model: ModelInfo, dataset: Dataset, prompt: Prompt, row: Observation,
               ctx: MeasureContext) -> After:
    timeline = _timeline(ctx)
    streamed = dataset.info.condition == STREAMED_TEXT_CONDITION
    session = await _connect(adapter.connect(timeline, model.voice), timeline, row, ctx)
    empty = dataset.info.condition == EMPTY_PROMPT
    try:
        if streamed:
            pieces = [(p.text, p.at_ms) for p in text_schedule(prompt.text, schedule_seed(prompt.id))]
            await asyncio.wait_for(session.synthesize_streamed(pieces, lambda: reply_audible(timeline)), ctx.timeout_s)
        else:
            await asyncio.wait_for(session.synthesize(prompt.text), ctx.timeout_s)
    except ProviderError as exc:
        if not (empty and exc.status == "error"):
            raise
        refused = exc  # a clean refusal of an empty prompt is a fine answer to it (METHOD "Hallucination on non-speech")
    else:
        refused = None
    finally:
        timeline.settle()
        await session.aclose()

    async def compute() -> None:
        if empty:
            return _score_empty_prompt(row, timeline, refused, ctx)
        m = tts_metrics(timeline)
        row.ttfb_ms, row.synthesis_ms, row.audio_duration_s = m.ttfb_ms, m.synthesis_ms, m.audio_duration_s
        stream = m.stream
        if m.ttfa_ms is None:
            lv = levels(stream.samples)
            raise Inaudible(f"no audible onset (peak {lv.peak_dbfs:.1f} dBFS, RMS {lv.rms_dbfs:.1f} dBFS)")
        row.ttfa_ms, row.leading_silence_ms = m.ttfa_ms, m.leading_silence_ms
        asked = timeline.first(REQUEST_SENT)
        _witnessed(row, audio_witness(timeline, asked, asked.t_ns + m.ttfa_ms * 1e6), ctx)
        _http_facts(row, timeline)
        if streamed:  # the reply was cancelled once audible: no stalls, quality or WER of a cut-off reply
            _streamed_text(row, timeline, m)
            return
        stalls = playout_stalls(stream, m.onset)
        row.stall_count, row.stall_ms = stalls.count, stalls.total_ms
        await _score_quality(row, stream.samples, stream.sample_rate, ctx)
        text = await _instrument_transcript(row, stream.samples, stream.sample_rate, ctx, "WER")
        if text is not None:
            _score(row, prompt.text, text, prompt.entities)
    return compute


def _score_empty_prompt(row: Observation, timeline: Timeline, refused: ProviderError | None,
                        ctx: MeasureContext) -> None:
    """An empty or whitespace-only prompt (METHOD "Hallucination on non-speech"): the ms of audible audio
    the model sent for it, 0 when it sent none or refused the prompt with a clean error (said in the
    row's reason); no clock is kept, nor WER or speech quality."""
    for name in CLOCK_FIELDS:
        setattr(row, name, None)
    if refused is not None:
        row.invented_audio_ms = 0.0
        row.reason = scrub(f"refused the empty prompt: {refused}", list(ctx.secrets))[:500]
        return
    stream = collect_audio(timeline.of(AUDIO))
    row.audio_duration_s = stream.samples.size / stream.sample_rate if stream.samples.size else 0.0
    row.invented_audio_ms = round(audible_ms(stream.samples, stream.sample_rate), 1)


def _streamed_text(row: Observation, timeline: Timeline, m: TTSMetrics) -> None:
    """A streamed-text row's TTFA from its first and last piece, and its cancel latency (metrics.text_stream)."""
    ttfa = streamed_text_ttfa(timeline, m.stream, m.onset)
    row.ttfa_first_text_ms, row.ttfa_last_text_ms = ttfa.ttfa_first_text_ms, ttfa.ttfa_last_text_ms
    cancel = cancel_latency(timeline)
    if cancel is not None:
        row.cancel_ms, row.cancel_end = cancel.cancel_ms, cancel.cancel_end


async def _instrument_transcript(row: Observation, samples: np.ndarray, rate: int, ctx: MeasureContext,
                                 scored: str) -> str | None:
    """What the fixed instrument heard in audio a model sent (a TTS synthesis, an S2S reply), off the
    clock; None when the context has no instrument, or with the row's instrument_error saying why
    (`scored`, null, names what goes unscored): an instrument failure is not a provider failure."""
    if ctx.instrument is None:
        return None
    row.instrument_id = ctx.instrument_id
    if not is_english(row.language):  # the instrument's callable takes audio only: it hears English
        _instrument_failed(row, f"the intelligibility instrument {ctx.instrument_id} hears English only; "
                                f"{row.language} speech is not scored ({scored} null)")
        return None
    try:
        audio16k = resample(samples, rate, 16000).astype(np.float32)
        return await asyncio.to_thread(ctx.instrument, audio16k)
    except Exception as exc:
        _instrument_failed(row, f"{type(exc).__name__}: {exc}")
        return None


def _instrument_failed(row: Observation, why: str) -> None:
    """Add an instrument's failure to the row's (speech quality's may already be there: both are kept)."""
    row.instrument_error = f"{row.instrument_error}; {why}" if row.instrument_error else why


@dataclass(frozen=True)
class QualityScore:
    """What the speech quality instrument said of some audio: its score, or why there is none."""
    mos: float | None
    instrument: str
    error: str | None = None


async def score_quality(samples: np.ndarray, rate: int, quality: Callable[[np.ndarray], float]) -> QualityScore:
    """The speech quality of the audio a model sent (METHOD "Speech quality"): a single turn's row and a
    conversation's turn alike, off the clock (in a thread); a failure of the instrument is its error,
    never a provider failure."""
    try:
        audio16k = resample(samples, rate, 16000).astype(np.float32)
        return QualityScore(float(await asyncio.to_thread(quality, audio16k)), QUALITY_INSTRUMENT)
    except Exception as exc:
        return QualityScore(None, QUALITY_INSTRUMENT, f"{QUALITY_INSTRUMENT}: {type(exc).__name__}: {exc}")


async def _score_quality(row: Observation, samples: np.ndarray, rate: int, ctx: MeasureContext) -> None:
    """A row's speech quality, once per row, when the context scores it."""
    if ctx.quality is None:
        return
    scored = await score_quality(samples, rate, ctx.quality)
    row.quality_instrument, row.quality_mos = scored.instrument, scored.mos
    row.instrument_error = row.instrument_error or scored.error


def _record_and_measure(path: Path, timeline: Timeline, pcm: bytes, clip: Clip):
    """Write the two-channel call recording, then measure V2V back from the file (METHOD), from the
    caller's last word (the clip's shared VAD anchor) at the write of the chunk that carried it."""
    write_recording(path, call_recording(timeline, pcm, clip.sample_rate))
    return v2v_from_recording(path, caller_speech_end_s(timeline, pcm, SpeechAnchors(clip.speech_start,
                                                                                     clip.speech_end)))


async def _s2s(adapter, model: ModelInfo, dataset: Dataset, clip: Clip, row: Observation, ctx: MeasureContext) -> After:
    """One spoken turn: the clip paced in real time, the model's reply captured into the call recording."""
    pcm, timeline = await _caller_turn(adapter, dataset, clip, row, ctx, lambda session: session.wait_response())
    reply = collect_audio(timeline.events)
    if reply.samples.size == 0:
        raise Inaudible("the model sent no audio")
    row.audio_duration_s = reply.samples.size / reply.sample_rate

    async def record() -> None:
        with contextlib.ExitStack() as stack:
            folder = ctx.recordings_dir / ctx.run_id / row.model_id.replace("/", "_") if ctx.recordings_dir else \
                Path(stack.enter_context(tempfile.TemporaryDirectory()))
            path = folder / f"{row.dataset}-{file_stem(clip.id)}.wav"  # an id may hold "/" or ".."
            # in a thread as well: the loop still serves other calls' sockets
            v = await asyncio.to_thread(_record_and_measure, path, timeline, pcm, clip)
        if v.v2v_ms is None:
            lv = levels(reply.samples)
            raise Inaudible(f"the model never spoke after the caller's last word (peak {lv.peak_dbfs:.1f} dBFS)")
        zero = timeline.of(CHUNK_SENT)[0].t_ns  # the recording's clock starts at the first chunk's write
        _witnessed(row, caller_turn_witness(timeline, zero + v.caller_speech_end_s * 1e9,
                                            zero + v.model_onset_s * 1e9), ctx)
        row.v2v_ms = v.v2v_ms
        await _score_quality(row, reply.samples, reply.sample_rate, ctx)
        if clip.answers:
            await _score_answer(row, clip.answers, reply.samples, reply.sample_rate, ctx)
    return record


async def _score_answer(row: Observation, answers: Sequence[str], samples: np.ndarray, rate: int,
                        ctx: MeasureContext) -> None:
    """A spoken question's reply heard by the instrument and checked for the answer (metrics.answers):
    its transcript stored as the row's hypothesis (made safe, as a clip's is)."""
    text = await _instrument_transcript(row, samples, rate, ctx, "answer")
    if text is not None:
        row.hypothesis = safe_text(text)
        row.answer_correct = answer_correct(answers, row.hypothesis, row.language)


After = Callable[[], Awaitable[None]]
"""What a harness leaves to do once its clocks have stopped: computing the row from the timeline,
scoring, recording. It times nothing, so it waits until no other measurement of the worker is on
the clock (voxwatch.foundation.clock.on_the_clock) and delays none of their stamps."""

HARNESSES = {"stt-stream": _stt_stream, "stt-batch": _stt_batch, "tts-stream": _tts, "s2s": _s2s}


def failure_of(exc: Exception, vendor: str, timed_out: str) -> tuple[str, str]:
    """The one reading of a failed measurement (a single turn or a conversation's turn): its status
    and reason; `timed_out` is the reason of a timeout that gave none."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timeout", str(exc) or timed_out
    if isinstance(exc, Inaudible):
        return "inaudible", str(exc)
    if isinstance(exc, ProviderError):
        return exc.status, str(exc)
    if isinstance(exc, HarnessFault):  # ours, not the vendor's: not an attempt
        return "excluded", str(exc)
    if isinstance(exc, websockets.ConnectionClosed):  # an adapter that let the close through: the one reading of its code
        error = closed(vendor, exc)
        return ("excluded" if isinstance(error, HarnessFault) else error.status), str(error)
    return "error", f"{type(exc).__name__}: {exc}"


def _fail(row: Observation, status: str, reason: str, ctx: MeasureContext) -> Observation:
    row.status, row.reason = status, scrub(reason, list(ctx.secrets))[:500]
    for name in CLOCK_FIELDS:
        setattr(row, name, None)
    return row


def failed_observation(model: ModelInfo, dataset: Dataset, item: Clip | Prompt, ctx: MeasureContext,
                       status: str, reason: str) -> Observation:
    """A row for an item that could not be measured at all (for example, no adapter)."""
    return _fail(_base_row(model, dataset, item, ctx), status, reason, ctx)


async def measure_item(model: ModelInfo, adapter, dataset: Dataset, item: Clip | Prompt,
                       ctx: MeasureContext) -> Observation:
    """One observation for one item; every failure becomes a row with a status and a reason."""
    row = _base_row(model, dataset, item, ctx)
    try:
        harness = HARNESSES.get(model.protocol)
        if harness is None:
            return _fail(row, "excluded", f"protocol {model.protocol} has no harness yet", ctx)
        if dataset.info.condition == STREAMED_TEXT_CONDITION and not model.streamed_text:
            return _fail(row, "excluded", f"{model.id} is not fed streamed text here (its registry entry does not "
                                          f"say streamed_text); {dataset.name} is streamed text", ctx)
        if isinstance(item, Clip) and dataset.wire is not None:
            adapter = on_wire(adapter, dataset.wire)
            if adapter is None:
                return _fail(row, "excluded", f"{model.id}'s protocol does not take {dataset.wire.label} audio "
                                              f"as voxwatch speaks it; {dataset.name} is sent only as {dataset.wire.label}",
                             ctx)
        adapter = in_language(adapter, dataset.info.language)
        if adapter is None:
            return _fail(row, "excluded", f"{model.id} does not take {dataset.info.language} as voxwatch speaks it; "
                                          f"{dataset.name} is in {dataset.info.language}", ctx)
        row.voice = getattr(adapter, "language_voice", None) or row.voice  # a TTS voice chosen by language
        # a local engine needs the CPU a busy poll would take, and its events come from threads; where the
        # kernel stamps arrivals, the loop sleeps in the kernel instead: woken as bytes come, it takes the
        # CPU back at once on a busy machine, where a busy poll is one more CPU-bound process to queue behind
        async with busy_poll if model.region != "local" and not kernel_time.AVAILABLE else contextlib.nullcontext():
            with gc_paused, on_the_clock:
                after = await harness(adapter, model, dataset, item, row, ctx)
        with on_the_clock.scoring():
            await on_the_clock.quiet(ctx.timeout_s)
            await after()
    except Exception as exc:  # every failure becomes a row: its status and reason (failure_of)
        if isinstance(exc, ProviderError):
            row.retry_after_s = exc.retry_after_s
        return _fail(row, *failure_of(exc, model.vendor, f"no result within {ctx.timeout_s:g} s"), ctx)
    for metric in ("ttfs_ms", "first_partial_ms", "first_partial_from_t0_ms", "ttfa_ms", "latency_ms"):
        exclusion = model.excluded(metric)
        if exclusion is not None:
            setattr(row, metric, None)
    return row
