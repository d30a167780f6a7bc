"""The rows the dashboard tests run every panel on, written through the store's own write path.

Observations of several boards, models, datasets (a clean and a degraded one sharing utterance ids),
two regions and two method versions, with every kind of status (timeouts, inaudible replies, errors,
rate limits, `excluded` rows that are not attempts), WER parts, emulator rows that must never show,
a dense tick per board with enough values in one hour for a p95 (100) where the others have not,
and a sparse hour under every floor; plus alert and webhook delivery rows. Fixed seeds throughout.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Iterator

import numpy as np
import psycopg
import pytest

from voxwatch.metrics.deadline_wer import DEADLINES_MS, errors_field
from voxwatch.metrics import METHOD_VERSION
from voxwatch.store.conversation_rows import ConversationRow, TurnRow
from voxwatch.foundation.observation import Observation
from voxwatch.store import open_store
from voxwatch.store.connection import connect

from support.conversation_seed import stored_conversation
from support.grafana_query import TimeRange

NOW = time.time()
HOUR, DAY = 3600.0, 86400.0
RANGE = TimeRange(datetime.fromtimestamp(NOW - 3 * DAY, timezone.utc), datetime.fromtimestamp(NOW + 60, timezone.utc),
                  interval_ms=3_600_000)
POCKET, GPT_STT, WHISPER = "pocketsphinx/en-us@5.1.1", "openai/gpt-4o-transcribe:realtime", "openai/whisper-1"
ESPEAK, GPT_S2S = "espeak-ng/en-us@1.52.0", "openai/gpt-realtime-2025-08-28"
EMULATED_ONLY = "deepgram/nova-3"  # measured here only against an emulator: must never show
EMULATOR_LATENCY = 99_999.0  # what the emulator rows of a real model report: would show if they were pooled in
REGIONS = ("eu-west", "us-east")
CLEAN, NOISY, REVERB = "stt-starter-clean", "stt-starter-noise", "stt-starter-reverb"
UTTERANCES = [f"u{i:02d}" for i in range(12)]
INSTRUMENT = "faster-whisper/tiny.en@1.2.1"


def _stt_rows(rng: np.random.Generator) -> list[Observation]:
    rows = []
    for model in (POCKET, GPT_STT):
        for region in REGIONS:
            for dataset, condition, worst in ((CLEAN, "clean", 2), (NOISY, "noise", 5)):
                runs = [("r-new", 1 * HOUR, "3"), ("r-old", 30 * HOUR, "3")]
                if model == POCKET and region == "eu-west" and dataset == CLEAN:
                    runs.append(("r-v2", 2 * DAY, "2"))  # the same series measured under the previous method
                for run, age, method in runs:
                    for i, utt in enumerate(UTTERANCES):
                        status = {0: "timeout", 1: "error"}.get(i, "ok") if run == "r-new" else "ok"
                        ok = status == "ok"
                        errs = rng.integers(0, worst + 1, size=3) if ok else [None] * 3
                        rows.append(Observation(
                            run_id=f"{run}-{region}", model_id=model, dataset=dataset, clip_id=f"{dataset}/{utt}",
                            attempt=1, board="stt", vendor=model.split("/")[0], protocol="stt-stream", region=region,
                            started_at=NOW - age + 60 * i, status=status, reason=None if ok else f"{status} here",
                            condition=condition, family="stt-starter", utterance_id=utt,
                            connect_ms=float(rng.uniform(20, 90)), ttfs_ms=float(rng.uniform(200, 600)) if ok else None,
                            first_partial_ms=float(rng.uniform(80, 300)) if ok else None,
                            substitutions=int(errs[0]) if ok else None, deletions=int(errs[1]) if ok else None,
                            insertions=int(errs[2]) if ok else None,
                            ref_words=int(rng.integers(8, 14)) if ok else None,
                            method_version=method))
    return rows


def _batch_rows(rng: np.random.Generator) -> list[Observation]:
    """A batch STT series per region (rtf, in x real time, beside latencies in ms), a failure per tick."""
    rows = []
    for region in REGIONS:
        for run, age in (("r-new", 3 * HOUR), ("r-old", 26 * HOUR)):
            for i, utt in enumerate(UTTERANCES):
                ok = i != 5
                latency, audio = float(rng.uniform(300, 900)), float(rng.uniform(1500, 4000))
                rows.append(Observation(
                    run_id=f"{run}-{region}", model_id=WHISPER, dataset=CLEAN, clip_id=f"{CLEAN}/{utt}", attempt=1,
                    board="stt", vendor="openai", protocol="stt-batch", region=region,
                    started_at=NOW - age + 60 * i, status="ok" if ok else "server_error",
                    reason=None if ok else "server_error here", condition="clean", family="stt-starter",
                    utterance_id=utt, connect_ms=float(rng.uniform(20, 90)), latency_ms=latency if ok else None,
                    rtf=latency / audio if ok else None, substitutions=int(rng.integers(0, 3)) if ok else None,
                    deletions=0 if ok else None, insertions=0 if ok else None, ref_words=10 if ok else None,
                    method_version="3"))
    return rows


def _tts_and_s2s_rows(rng: np.random.Generator) -> list[Observation]:
    rows = []
    for region in REGIONS:
        for run, age in (("r-new", 1 * HOUR), ("r-old", 30 * HOUR)):
            for i in range(12):
                ttfb, silence, late = rng.uniform(40, 160), rng.uniform(10, 90), rng.choice([0.0, 0.0, 25.0])
                status = "inaudible" if (i == 0 and run == "r-new") else "ok"
                ok = status == "ok"
                rows.append(Observation(
                    run_id=f"{run}-{region}", model_id=ESPEAK, dataset="tts-prompts", clip_id=f"p{i:02d}",
                    attempt=1, board="tts", vendor="espeak-ng", protocol="tts-stream", region=region,
                    started_at=NOW - age + 60 * i, status=status, condition="text", family="tts-prompts",
                    utterance_id=f"p{i:02d}", connect_ms=float(rng.uniform(5, 40)),
                    ttfb_ms=float(ttfb) if ok else None, leading_silence_ms=float(silence) if ok else None,
                    ttfa_ms=float(ttfb + silence + late) if ok else None, substitutions=1 if ok else None,
                    stall_count=int(late > 0) if ok else None, stall_ms=float(late) if ok else None,
                    deletions=0 if ok else None, insertions=0 if ok else None, ref_words=9 if ok else None,
                    instrument_id=INSTRUMENT, method_version="3"))
        for i, utt in enumerate(UTTERANCES):
            rows.append(Observation(
                run_id=f"r-new-{region}", model_id=GPT_S2S, dataset=CLEAN, clip_id=f"{CLEAN}/{utt}", attempt=1,
                board="s2s", vendor="openai", protocol="s2s", region=region, started_at=NOW - 2 * HOUR + 60 * i,
                status="ok", condition="clean", family="stt-starter", utterance_id=utt,
                connect_ms=float(rng.uniform(100, 300)), v2v_ms=float(rng.uniform(500, 900)), method_version="3"))
    return rows


MEDIUM = 45
DENSE_FAILURES = {3: "timeout", 8: "rate_limited", 13: "inaudible", 18: "excluded", 23: "server_error"}
"""The dense ticks' failures: row i of a tick has status DENSE_FAILURES.get(i % 25, "ok")."""


def _dense_rows(rng: np.random.Generator) -> list[Observation]:
    """One tick per board whose first `count` rows fall in one hour bucket, past the p95's floor of ok
    values (utterances retried as further attempts), and whose last MEDIUM rows fall in the next
    hour, past the median's floor but not the p95's; one clip has no reference words."""
    start = np.floor((NOW - 6 * HOUR) / HOUR) * HOUR + 1
    rows = []
    for board, model, dataset, region, protocol, count in (("stt", POCKET, CLEAN, "eu-west", "stt-stream", 150),
                                                           ("tts", ESPEAK, "tts-prompts", "us-east", "tts-stream", 130),
                                                           ("s2s", GPT_S2S, CLEAN, "eu-west", "s2s", 130),
                                                           ("stt", WHISPER, CLEAN, "us-east", "stt-batch", 140)):
        for i in range(count + MEDIUM):
            status = DENSE_FAILURES.get(i % 25, "ok")
            ok, utt = status == "ok", UTTERANCES[i % len(UTTERANCES)]
            words = (0 if i == 1 else int(rng.integers(6, 15))) if ok and board != "s2s" else None
            errs = rng.integers(0, 4, size=3) if words is not None else [None] * 3
            ttfb, silence, latency = rng.uniform(40, 160), rng.uniform(10, 90), rng.gamma(6, 100)
            rows.append(Observation(
                run_id=f"r-dense-{protocol}", model_id=model, dataset=dataset,
                clip_id=f"{dataset}/{utt}", attempt=1 + i // len(UTTERANCES), board=board,
                vendor=model.split("/")[0], protocol=protocol, region=region,
                started_at=start + 3600 * i / count if i < count else start + 3600 + 60 * (i - count),
                status=status, reason=None if ok else f"{status} here", condition="clean" if board != "tts" else "text",
                family="stt-starter" if board != "tts" else "tts-prompts", utterance_id=utt,
                connect_ms=float(rng.uniform(10, 200)) if status != "excluded" else None,
                ttfs_ms=float(rng.gamma(4, 80)) if ok and protocol == "stt-stream" else None,
                first_partial_ms=float(rng.gamma(3, 50)) if ok and protocol == "stt-stream" else None,
                latency_ms=float(latency) if ok and protocol == "stt-batch" else None,
                rtf=float(latency / 2500.0) if ok and protocol == "stt-batch" else None,
                ttfb_ms=float(ttfb) if ok and board == "tts" else None,
                leading_silence_ms=float(silence) if ok and board == "tts" else None,
                ttfa_ms=float(ttfb + silence + (late := rng.choice([0.0, 30.0]))) if ok and board == "tts" else None,
                stall_count=int(late > 0) if ok and board == "tts" else None,
                stall_ms=float(late) if ok and board == "tts" else None,
                v2v_ms=float(rng.gamma(5, 120)) if ok and board == "s2s" else None,
                substitutions=None if errs[0] is None else int(errs[0]),
                deletions=None if errs[1] is None else int(errs[1]),
                insertions=None if errs[2] is None else int(errs[2]) + (2 if words == 0 else 0), ref_words=words,
                instrument_id=INSTRUMENT if board == "tts" else None, method_version="3"))
    return rows


def _nonspeech_rows(rng: np.random.Generator) -> list[Observation]:
    """Clips without speech (METHOD "Hallucination on non-speech"): a streaming STT series per region over two
    ticks of six clips, each with its invented words and no clock, a timeout among them; and a batch one of
    three clips, under the floor."""
    rows = []
    for model, protocol, regions, clips in ((POCKET, "stt-stream", REGIONS, 6), (WHISPER, "stt-batch", REGIONS[:1], 3)):
        for region in regions:
            for run, age in (("r-new", 3 * HOUR), ("r-old", 28 * HOUR)):
                for i in range(clips):
                    status = "timeout" if (run, i) == ("r-new", 5) else "ok"
                    ok = status == "ok"
                    rows.append(Observation(
                        run_id=f"{run}-{region}", model_id=model, dataset="stt-nonspeech", clip_id=f"ns{i}", attempt=1,
                        board="stt", vendor=model.split("/")[0], protocol=protocol, region=region,
                        started_at=NOW - age + 60 * i + 30, status=status, reason=None if ok else "timeout here",
                        condition="nonspeech", family="stt-nonspeech", utterance_id=f"ns{i}", reference="",
                        hypothesis="thank you" if ok else None,
                        invented_words=int(rng.integers(0, 3)) * int(rng.integers(0, 2)) if ok else None,
                        audio_duration_s=2.0 if ok else None, method_version="3"))
    return rows


def _sparse_rows(rng: np.random.Generator) -> list[Observation]:
    """An hour under every floor: an STT series with two ok values of three attempts, a degraded STT
    dataset of three utterances (three pairs with the clean one) and a TTS dataset of three prompts."""
    at = np.floor((NOW - 10 * HOUR) / HOUR) * HOUR + 60
    rows = []
    for dataset, condition, statuses in ((NOISY, "noise", ("ok", "timeout", "ok")), (REVERB, "reverb", ("ok",) * 3)):
        rows += [Observation(
            run_id="r-sparse", model_id=GPT_STT, dataset=dataset, clip_id=f"{dataset}/{utt}", attempt=1, board="stt",
            vendor="openai", protocol="stt-stream", region="us-east", started_at=at + 60 * i, status=status,
            reason=None if status == "ok" else "timeout here", condition=condition, family="stt-starter",
            utterance_id=utt, connect_ms=float(rng.uniform(20, 90)),
            ttfs_ms=float(rng.uniform(200, 600)) if status == "ok" else None,
            substitutions=int(rng.integers(0, 3)) if status == "ok" else None, deletions=0 if status == "ok" else None,
            insertions=0 if status == "ok" else None, ref_words=10 if status == "ok" else None, method_version="3")
            for i, (utt, status) in enumerate(zip(UTTERANCES, statuses))]
    rows += [Observation(
        run_id="r-sparse", model_id=ESPEAK, dataset="tts-prompts-short", clip_id=f"s{i:02d}", attempt=1, board="tts",
        vendor="espeak-ng", protocol="tts-stream", region="eu-west", started_at=at + 60 * i, status="ok",
        condition="text", family="tts-prompts", utterance_id=f"s{i:02d}", connect_ms=float(rng.uniform(5, 40)),
        ttfb_ms=80.0 + i, leading_silence_ms=20.0 + i, ttfa_ms=100.0 + 2 * i, substitutions=0, deletions=0,
        insertions=0, ref_words=7, instrument_id=INSTRUMENT, method_version="3") for i in range(3)]
    return rows

def _emulator_rows() -> list[Observation]:
    rows = []
    for model in (EMULATED_ONLY, POCKET):
        for dataset, condition in ((CLEAN, "clean"), (NOISY, "noise")):
            for i, utt in enumerate(UTTERANCES):
                rows.append(Observation(
                    run_id="r-emulated", model_id=model, dataset=dataset, clip_id=f"{dataset}/{utt}", attempt=1,
                    board="stt", vendor=model.split("/")[0], protocol="stt-stream", region="eu-west",
                    started_at=NOW - 1 * HOUR + 60 * i, status="ok" if i else "error", condition=condition,
                    family="stt-starter", utterance_id=utt, emulator=True, ttfs_ms=EMULATOR_LATENCY,
                    first_partial_ms=EMULATOR_LATENCY, substitutions=40, deletions=0, insertions=0, ref_words=10,
                    method_version="3"))
    return rows


ALERT_COLUMNS = ("key", "kind", "board", "model_id", "metric", "dataset", "region", "method_version", "state",
                 "opened_at", "fired_at", "resolved_at", "last_evaluated_at", "recent_value", "baseline_value",
                 "p_value", "n_recent", "n_baseline", "summary")


def _alert(kind: str, board: str, model: str, metric: str, dataset: str, region: str, state: str, opened: float,
           fired: float | None, resolved: float | None) -> tuple:
    key = "|".join((kind, model, metric, dataset, region))
    return (key, kind, board, model, metric, dataset, region, "3", state, opened, fired, resolved,
            resolved or NOW - 60, 480.0, 300.0, 1e-4, 24, 900, f"{model} {metric} on {dataset} ({region}): {state}")


SEEDED_ALERTS = [
    _alert("latency", "stt", POCKET, "ttfs_ms", CLEAN, "eu-west", "firing", NOW - 5 * HOUR, NOW - 4 * HOUR, None),
    _alert("wer", "stt", GPT_STT, "pooled_wer", NOISY, "us-east", "resolved", NOW - 2 * DAY, NOW - 2 * DAY + HOUR,
           NOW - DAY),
    _alert("error_rate", "tts", ESPEAK, "error_rate", "tts-prompts", "eu-west", "pending", NOW - HOUR, None, None),
    _alert("latency", "stt", POCKET, "first_partial_ms", NOISY, "us-east", "resolved", NOW - 20 * DAY,
           NOW - 20 * DAY + HOUR, NOW - 19 * DAY),  # before the time range
    _alert("latency", "stt", EMULATED_ONLY, "ttfs_ms", CLEAN, "eu-west", "firing", NOW - 3 * HOUR, NOW - 2 * HOUR,
           None),  # an alert on emulator rows (a test that opted in): never on a dashboard
]


def _seed_alerts(conn: psycopg.Connection) -> dict[str, int]:
    ids = {}
    for row in SEEDED_ALERTS:
        (ids[row[0]],) = conn.execute(
            f"INSERT INTO alerts ({', '.join(ALERT_COLUMNS)}) VALUES ({', '.join(['%s'] * len(row))}) RETURNING id",
            row).fetchone()
    deliveries = [(SEEDED_ALERTS[0][0], "firing", "ops-slack", 1, NOW - 4 * HOUR, False, 500, "server error"),
                  (SEEDED_ALERTS[0][0], "firing", "ops-slack", 2, NOW - 4 * HOUR + 30, True, 200, None),
                  (SEEDED_ALERTS[1][0], "resolved", "pager-json", 1, NOW - DAY, True, 204, None),
                  (SEEDED_ALERTS[4][0], "firing", "ops-slack", 1, NOW - 2 * HOUR, True, 200, None)]
    for key, *rest in deliveries:
        conn.execute("INSERT INTO alert_deliveries (alert_id, event, target, attempt, at, ok, status_code, error) "
                     "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", (ids[key], *rest))
    return ids


CASCADE = "local/cascade-scripted-baseline"


def _conversations(rng: np.random.Generator) -> list[tuple[ConversationRow, list[TurnRow]]]:
    """Conversations of two models, two scenarios, two personas and two method versions: an hour with
    enough turns for a V2V p95 (100), hours past the rates' floors but not the p95's, a one-turn trial
    under every floor, one before the time range, and emulated ones that must never show."""
    dense = float(np.floor((NOW - 5 * HOUR) / HOUR) * HOUR)
    plan = [  # (how many, turns, model, scenario, persona, region, start, method, extra)
        (16, 8, GPT_S2S, "clinic-desk", "default", "eu-west", dense + 60, "3", {}),
        (4, 8, GPT_S2S, "clinic-desk", "default", "eu-west", NOW - 30 * HOUR, "3", {}),
        (5, 6, CASCADE, "hotel-desk", "noisy-cafe", "us-east", NOW - 2 * HOUR, "3", {"adherence": 0.7}),
        (1, 1, GPT_S2S, "clinic-desk", "noisy-cafe", "eu-west", NOW - 10 * HOUR, "3",
         {"whole": False, "undecided": 1.0}),
        (3, 8, GPT_S2S, "clinic-desk", "default", "eu-west", NOW - 2 * DAY, "2", {}),
        (2, 8, GPT_S2S, "clinic-desk", "default", "eu-west", NOW - 5 * DAY, "3", {}),  # before the time range
        (3, 6, EMULATED_ONLY, "clinic-desk", "default", "eu-west", NOW - HOUR, "3",
         {"emulator": True, "v2v_ms": 10 * EMULATOR_LATENCY, "adherence": 0.0}),
        (2, 8, GPT_S2S, "clinic-desk", "default", "eu-west", dense + 120, "3",
         {"emulator": True, "v2v_ms": 10 * EMULATOR_LATENCY, "adherence": 0.0}),
    ]
    out = []
    for group, (count, turns, model, scenario, persona, region, start, method, extra) in enumerate(plan):
        for k in range(count):
            out.append(stored_conversation(rng, f"conv-{group}-{k}", model=model, scenario=scenario, persona=persona,
                                           region=region, started_at=start + 200 * k, turns=turns, method=method,
                                           **extra))
    return out


def _paired_rows(rng: np.random.Generator) -> list[Observation]:
    """Three streaming STT models of the current method hearing the same clips at the same 8 ticks of
    the last day (a ranking with pairs): GPT ~150 ms faster than the other two on every clip (its
    pairs shown), pocketsphinx and the third alike (their pair not shown)."""
    rows = []
    for k in range(8):
        for j, utt in enumerate(UTTERANCES[:8]):
            base = 400.0 + 30.0 * j + rng.normal(0, 10)
            for model, shift in ((GPT_STT, -150.0), (POCKET, 0.0), (WHISPER + ":stream", 0.0)):
                value = base + shift + rng.normal(0, 40)
                words = int(rng.integers(6, 15))
                rows.append(Observation(
                    run_id=f"r-paired-{k}", model_id=model, dataset=CLEAN, clip_id=f"{CLEAN}/{utt}", attempt=1,
                    board="stt", vendor=model.split("/")[0], protocol="stt-stream", region="eu-west",
                    started_at=NOW - 20 * HOUR + k * 1800 + j * 10, status="ok", condition="clean",
                    family="stt-starter", utterance_id=utt, connect_ms=float(rng.uniform(10, 200)),
                    ttfs_ms=float(value), first_partial_ms=float(value / 2), substitutions=int(rng.integers(0, 3)),
                    deletions=0, insertions=0, ref_words=words, method_version=METHOD_VERSION, emulator=False))
    return rows


PEER_ANCHOR_LATER_MS = 134.0
"""How much later the peers' end of speech lies than the shared VAD's in the seed (the starter's median)."""
SEEDED_CONVERSATIONS = _conversations(np.random.default_rng(20261130))


def _deadline_errors(rows: list[Observation], rng: np.random.Generator) -> None:
    """The streaming rows' word errors at each deadline after the end of speech (more words missing the
    earlier the deadline), on their own draws; the older run's rows were stored before they were measured."""
    for r in rows:
        if (r.protocol == "stt-stream" and r.status == "ok" and r.ref_words is not None and r.substitutions is not None
                and not r.run_id.startswith("r-old")):
            missing = int(rng.integers(0, r.ref_words + 1))
            for d in DEADLINES_MS:
                setattr(r, errors_field(d), r.substitutions + r.deletions + r.insertions + round(missing * (1 - d / 1000)))


SPARSE_NO_EOT = GPT_STT
"""A streaming model of the seed whose rows carry no end-of-turn figures (its protocol has none)."""


@pytest.fixture(scope="module")
def seeded(postgres_store_url: str) -> Iterator[tuple[str, list[Observation]]]:
    """The store, migrated by `voxwatch db upgrade` and filled through PostgresStore.add, and its rows."""
    rng = np.random.default_rng(20261129)
    rows = _stt_rows(rng) + _batch_rows(rng) + _tts_and_s2s_rows(rng) + _dense_rows(rng) + _sparse_rows(rng) + _emulator_rows()
    rows += _paired_rows(np.random.default_rng(20261204)) + _nonspeech_rows(np.random.default_rng(20261208))
    _deadline_errors(rows, np.random.default_rng(20261208))
    for r in rows:  # the peers' anchor (Silero, padded) falls after the shared VAD's end: a shorter TTFS
        r.ttfs_peer_ms = r.ttfs_ms - PEER_ANCHOR_LATER_MS if r.ttfs_ms is not None else None
    for i, r in enumerate(rows):  # the STT's own end of turn (METHOD "STT end of turn") on the streaming rows
        if r.protocol == "stt-stream" and r.status == "ok" and r.model_id != SPARSE_NO_EOT and r.ttfs_ms is not None:
            r.eot_ms = r.ttfs_ms + 40.0 + i % 7 if i % 11 else None  # a few rows with no end of turn after speech
            r.eot_false_cutoffs = 1 + i % 2 if i % 5 == 0 else 0
    store = open_store(postgres_store_url)
    try:
        assert store.add(rows) == len(rows)
        assert store.refresh_comparisons() > 0  # what each finished tick does for its datasets
        assert all(store.add_conversation(row, turns) for row, turns in SEEDED_CONVERSATIONS)
    finally:
        store.close()
    with connect(postgres_store_url) as conn:
        _seed_alerts(conn)
    yield postgres_store_url, rows

