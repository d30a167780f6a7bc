"""A store for the comparison pages (tests/test_web_compare.py): at least four models on every
comparison board, each measured on two datasets at several ticks, so the pooled figures have
intervals, the ranks have paired comparisons and the frontier has models on and off it; plus what
must never show (an emulator's rows, a superseded method's, a model missing a dataset of the use
case listed as left out), and four models' conversations (one persona) with an emulated one.

The figures the pages must show are computed here from the rows alone: each series' rows on the
use case's datasets concatenated (clips named by dataset) and summarized by metrics.series, the
definition the pages call through metrics.use_case.
"""

from __future__ import annotations

import zlib

import time
from dataclasses import replace

import numpy as np

from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.deadline_wer import DEADLINES_MS, errors_field
from voxwatch.metrics.paired import compare
from voxwatch.metrics.ranking import comparable, rank_text, ranks
from voxwatch.metrics.series import MetricRow, series_rows
from voxwatch.metrics.specs import for_protocol
from voxwatch.store import open_store
from voxwatch.store.series_data import group

from support.conversation_seed import stored_conversation

NOW = time.time()
DAY = 86400.0
INSTRUMENT = "faster-whisper/tiny.en@1.2.1"
TICKS, CLIPS = 6, 8
STT = {"clean": ("stt-starter-clean", "clean", "en"), "noise": ("stt-starter-noise", "noise", "en")}
TTS = {"a": ("tts-prompts", "text", "en"), "b": ("tts-prompts-long", "text", "en")}
# board, protocol, datasets, {model: (base latency ms, error probability per word, or S2S mean MOS)}
BOARDS = {
    "stt-stream": ("stt", "stt-stream", STT, {
        "deepgram/nova-3": (250.0, 0.04), "assemblyai/universal-streaming-english": (320.0, 0.02),
        "speechmatics/standard-en": (400.0, 0.06), "openai/gpt-4o-transcribe:realtime": (500.0, 0.015)}),
    "stt-batch": ("stt", "stt-batch", STT, {
        "faster-whisper/tiny.en@1.2.1": (300.0, 0.08), "openai/gpt-4o-transcribe:http": (700.0, 0.02),
        "openai/whisper-1": (900.0, 0.03), "openai/gpt-transcribe:http": (650.0, 0.05)}),
    "tts": ("tts", "tts-stream", TTS, {
        "espeak-ng/en-us@1.52.0": (60.0, 0.10), "cartesia/sonic-3.5": (150.0, 0.02),
        "deepgram/aura-2-thalia-en": (200.0, 0.07), "elevenlabs/eleven_flash_v2_5:ws": (260.0, 0.01)}),
    "s2s": ("s2s", "s2s", STT, {
        "openai/gpt-realtime-2025-08-28": (700.0, 3.4), "openai/gpt-realtime-2.1-mini": (600.0, 3.0),
        "gemini/gemini-3.8-live": (800.0, 3.8), "xai/grok-voice-think-fast-2.0": (900.0, 3.1)}),
}
DEADLINE_BOARDS = {f"stt-stream-at-{d}ms": BOARDS["stt-stream"] for d in DEADLINES_MS}
"""The streaming STT boards ranked on WER at a deadline: the same rows as stt-stream's (not seeded again)."""
SEEDED = tuple(BOARDS)
BOARDS = {**BOARDS, **DEADLINE_BOARDS}
LATE_SHARE = {"deepgram/nova-3": 0.05, "assemblyai/universal-streaming-english": 0.5,
              "speechmatics/standard-en": 0.2, "openai/gpt-4o-transcribe:realtime": 0.8}
"""Each streaming STT model's share of a clip's words not yet in its transcript at 0 ms after the end of speech
(falling to none by 1000 ms): its rows' errors_at_<D>ms."""
S2S_ANSWERED = {"openai/gpt-realtime-2025-08-28": 0.85, "openai/gpt-realtime-2.1-mini": 0.6,
                "gemini/gemini-3.8-live": 0.9, "xai/grok-voice-think-fast-2.0": 0.7}
"""Each S2S model's chance of answering a spoken question right (its rows' answer_correct)."""
HALF_MEASURED = ("tts", "openai/gpt-4o-mini-tts-2025-12-15")  # measured on one of the two prompt sets: left out
EMULATOR_MS = 98765.4  # an emulator row's latency: a page showing it has let one through
CONVERSATION_MODELS = {"openai/gpt-realtime-2025-08-28": (700.0, 0.85), "openai/gpt-realtime-2.1-mini": (600.0, 0.7),
                       "gemini/gemini-3.8-live": (800.0, 0.9), "xai/grok-voice-think-fast-2.0": (750.0, 0.4)}
PERSONA = "default"


def _row(rng: np.random.Generator, board: str, protocol: str, model: str, dataset: tuple[str, str, str], tick: int,
         clip: int, base: float, accuracy: float, method: str = METHOD_VERSION, emulator: bool = False) -> Observation:
    name, condition, language = dataset
    status = "timeout" if rng.random() < 0.04 else "ok"
    row = Observation(run_id=f"run-{tick}", model_id=model, dataset=name, clip_id=f"clip{clip}", attempt=1,
                      board=board, vendor=model.split("/")[0], protocol=protocol, region="us-east",
                      started_at=NOW - (0.5 + tick * 2.0 + clip * 0.001) * DAY, status=status, condition=condition,
                      language=language, method_version=method, emulator=emulator,
                      instrument_id=INSTRUMENT if board == "tts" else None)
    if status != "ok":
        return row
    shift = 80.0 if condition == "noise" else 0.0
    values = {m.name: (EMULATOR_MS if emulator else max(1.0, base + shift + 40.0 * rng.standard_normal()))
              for m in for_protocol(protocol, headline_only=True) if m.name != "ttfs_peer_ms"}
    if "ttfs_ms" in values:  # the peers' anchor lies after the shared VAD's end: no draw of its own
        values["ttfs_peer_ms"] = values["ttfs_ms"] - 134.0
    if "rtf" in values:
        values["rtf"] = float(rng.uniform(0.05, 0.3))
    values["connect_ms"] = float(rng.uniform(20, 60))
    row = replace(row, **values)
    if board == "s2s":  # whether it answered, drawn apart from rng (the other draws stay)
        answered = zlib.crc32(f"{model}|{name}|{tick}|{clip}|answer".encode()) % 1000 / 1000 < S2S_ANSWERED.get(model, 0.5)
        return replace(row, quality_mos=float(np.clip(accuracy + 0.3 * rng.standard_normal(), 1.0, 5.0)),
                       answer_correct=answered)
    words = int(rng.integers(8, 16))
    errors = int(rng.binomial(words, min(0.9, accuracy * (2.0 if condition == "noise" else 1.0))))
    row = replace(row, substitutions=errors, deletions=0, insertions=0, ref_words=words)
    if protocol == "stt-stream":  # the transcript at each deadline, drawn apart from rng (the other draws stay)
        spread = zlib.crc32(f"{model}|{name}|{tick}|{clip}|deadline".encode()) % 1000 / 1000
        row = replace(row, **{errors_field(d): min(words, errors + round(words * LATE_SHARE.get(model, 0.0) * spread
                                                                          * (1 - d / 1000)))
                              for d in DEADLINES_MS})
    if board == "tts":  # a voice's speech quality beside its intelligibility, drawn apart from rng (the other draws stay)
        spread = zlib.crc32(f"{model}|{name}|{tick}|{clip}".encode()) % 1000 / 1000
        row = replace(row, quality_mos=2.0 + (base % 7) / 7 + spread, quality_instrument="dnsmos-p835@seed")
    return row


def seeded_rows() -> list[Observation]:
    rng = np.random.default_rng(20261205)
    rows = []
    for compare_id in SEEDED:
        board, protocol, datasets, models = BOARDS[compare_id]
        for model, (base, accuracy) in models.items():
            for dataset in datasets.values():
                rows += [_row(rng, board, protocol, model, dataset, t, c, base, accuracy)
                         for t in range(TICKS) for c in range(CLIPS)]
        first_model, first_data = next(iter(models)), next(iter(datasets.values()))
        rows += [_row(rng, board, protocol, first_model, first_data, t, c, 5.0, 0.0, emulator=True)
                 for t in range(2) for c in range(CLIPS)]  # fast and perfect, but an emulator: never shown
        rows += [_row(rng, board, protocol, "acme/superseded-" + board, first_data, t, c, 10.0, 0.0,
                      method=str(int(METHOD_VERSION) - 1)) for t in range(3) for c in range(CLIPS)]
    board, protocol, datasets, _ = BOARDS[HALF_MEASURED[0]]
    rows += [_row(rng, board, protocol, HALF_MEASURED[1], datasets["a"], t, c, 120.0, 0.03)
             for t in range(TICKS) for c in range(CLIPS)]
    return rows


ROWS = seeded_rows()


def _pooled(compare_id: str, datasets: tuple[str, ...], use_case: str) -> list[Observation]:
    """The rows of the models measured on every dataset of the use case, current method, no emulator,
    each as one series on the use case: dataset replaced by the use case, clips named by dataset."""
    board, protocol, _, _ = BOARDS[compare_id]
    kept = [r for r in ROWS if r.board == board and r.protocol == protocol and r.dataset in datasets
            and r.method_version == METHOD_VERSION and not r.emulator]
    complete = {m for m in {r.model_id for r in kept} if {r.dataset for r in kept if r.model_id == m} == set(datasets)}
    return [replace(r, dataset=use_case, clip_id=f"{r.dataset}/{r.clip_id}") for r in kept if r.model_id in complete]


def expected(compare_id: str, datasets: tuple[str, ...], use_case: str) -> dict[str, MetricRow]:
    """Each model's headline-latency row over the use case, from the rows alone."""
    protocol = BOARDS[compare_id][1]
    rows = [m for key, data in group(_pooled(compare_id, datasets, use_case)).items() for m in series_rows(key, data)]
    return {m.model_id: m for m in rows if m.metric == for_protocol(protocol, True)[0].name}


def expected_ranks(compare_id: str, datasets: tuple[str, ...], use_case: str) -> dict[str, str | None]:
    """Each model's rank over the use case: metrics.paired's comparisons of the pooled series, then
    metrics.ranking's ranks, as a board's per dataset."""
    series = group(_pooled(compare_id, datasets, use_case))
    rows = [m for key, data in series.items() for m in series_rows(key, data)]
    ranked = ranks(rows, METHOD_VERSION, compare(series, comparable(rows, METHOD_VERSION)))
    return {key.model_id: rank_text(rank) for key, rank in ranked.items()}


def conversations() -> list:
    rng = np.random.default_rng(7)
    found = []
    for model, (v2v, adherence) in CONVERSATION_MODELS.items():
        for i in range(3):
            found.append(stored_conversation(rng, f"cmp-{model.split('/')[1]}-{i}", model=model, scenario="clinic-desk",
                                             persona=PERSONA, region="us-east", started_at=NOW - (i + 1) * DAY,
                                             turns=8, adherence=adherence, v2v_ms=v2v, method=METHOD_VERSION,
                                             quality=3.0 + adherence))
    found.append(stored_conversation(rng, "cmp-emulated", model="openai/gpt-realtime-2025-08-28",
                                     scenario="clinic-desk", persona=PERSONA, region="us-east", started_at=NOW - DAY,
                                     turns=8, v2v_ms=EMULATOR_MS, method=METHOD_VERSION, emulator=True))
    return found


def add_conversations(url: str) -> None:
    store = open_store(url)
    try:
        for row, turns in conversations():
            assert store.add_conversation(row, turns)
    finally:
        store.close()


