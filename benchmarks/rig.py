"""The calibration rig shared by `clock_truth` and `soak`: the vendor protocols under test, the
scenarios their loopback emulators inject, and each measured stream's clock error.

**Clock error**: the measured value minus the truth as the emulator actually sent it (its send
stamps, on the machine's shared monotonic clock, come back through a ledger: see
voxwatch/providers/emulators/ledger.py). **vs injected**: the measured value minus the nominal injected
delay, which adds the emulator's own scheduling lateness.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.manifest import Clip, Prompt
from voxwatch.providers.emulators.ledger import AFTER, caller_late_ms, truth_as_sent
from voxwatch.providers.emulators.scenario import S2SScenario, STTScenario, TTSScenario, jitter_ms
from voxwatch.providers.emulators.stt.gladia import GladiaScenario
from voxwatch.foundation.events import Timeline
from voxwatch.providers.keys import Secret, key_variable, vendor_variable
from voxwatch.providers.registry import Registry
from voxwatch.harness.measure import MeasureContext, audio_sent, measure_item
from voxwatch.harness.pacer import chunk_pcm

KEY = "clock-truth-key"
JITTER_MS = 30.0
STT = STTScenario(transcript="thank you for calling", speech_start_s=0.0, speech_end_s=0.0, first_partial_ms=150.0,
                  final_ms=200.0, jitter_ms=JITTER_MS, api_key=KEY)
S2S = S2SScenario(response_ms=350.0, leading_silence_ms=60.0, jitter_ms=JITTER_MS, api_key=KEY)
TTS = {"streaming": TTSScenario(ttfb_ms=120.0, leading_silence_ms=80.0, jitter_ms=JITTER_MS, api_key=KEY),
       "gaming": TTSScenario(ttfb_ms=40.0, leading_silence_ms=100.0, gaming_delay_ms=400.0, jitter_ms=JITTER_MS,
                             api_key=KEY)}


@dataclass(frozen=True)
class Protocol:
    """One vendor protocol under test: its emulator, the model measured through it, for STT how
    the emulator sees the stream's first chunk (the key of its per-stream anchors), and the rig's
    scenario as that vendor's emulator must get it (a plan that takes the rig's 64 streams at once)."""

    name: str
    emulator: str
    model_id: str
    first_chunk: Callable[[bytes], bytes] = lambda chunk: chunk
    scenario: Callable = lambda scenario: scenario


def _gladia_enterprise(scenario: STTScenario) -> GladiaScenario:
    """Gladia's paid plan holds 30 live sessions at once, fewer than the rig's 64; an Enterprise plan's
    limit is set on demand (docs.gladia.io chapters/limits-and-specifications/concurrency)."""
    return GladiaScenario(**vars(scenario), live_concurrency=1000)


def _openai_24k(chunk: bytes) -> bytes:
    from voxwatch.providers.s2s.openai_realtime import Upsampler

    return Upsampler().push(chunk)


PROTOCOLS = {p.name: p for p in (
    Protocol("deepgram", "deepgram", "deepgram/nova-3"),
    Protocol("assemblyai", "assemblyai", "assemblyai/universal-streaming-english"),
    Protocol("speechmatics", "speechmatics", "speechmatics/enhanced-en"),
    Protocol("elevenlabs-scribe", "elevenlabs", "elevenlabs/scribe_v2_realtime"),
    Protocol("openai-realtime-stt", "openai", "openai/gpt-4o-transcribe:realtime", _openai_24k),
    Protocol("openai-batch", "openai", "openai/gpt-4o-transcribe:http"),
    Protocol("cartesia", "cartesia", "cartesia/sonic-3.5"),
    Protocol("deepgram-aura", "deepgram", "deepgram/aura-2-thalia-en"),
    Protocol("elevenlabs-ws", "elevenlabs", "elevenlabs/eleven_flash_v2_5:ws"),
    Protocol("elevenlabs-http", "elevenlabs", "elevenlabs/eleven_flash_v2_5:http"),
    Protocol("openai-tts", "openai", "openai/gpt-4o-mini-tts-2025-12-15"),
    Protocol("openai-realtime-s2s", "openai", "openai/gpt-realtime-2025-08-28", _openai_24k),
    Protocol("gemini-live", "gemini", "gemini/gemini-2.5-flash-native-audio-preview-12-2025"),
    # one vendor of each protocol shape issue 42 brought: gRPC over HTTP/2, an AWS event stream over
    # HTTP/2 (SigV4-signed events), server-sent events, an HTTP POST that opens a WebSocket
    Protocol("google", "google", "google/chirp_3"),
    Protocol("bedrock", "bedrock", "bedrock/amazon.nova-2-sonic-v1:0"),
    Protocol("minimax", "minimax", "minimax/speech-2.8-turbo"),
    Protocol("gladia", "gladia", "gladia/solaria-1", scenario=_gladia_enterprise),
)}


def chosen(parser, value: str, known, what: str) -> list[str]:
    """A `--vendors` / `--protocols` argument: `all`, or a comma-separated list of `known` names
    (argparse's error, naming the known ones, for any other)."""
    names = list(known) if value == "all" else value.split(",")
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown {what}(s) {unknown}; known: {', '.join(known)}")
    return names


class Errors:
    """Per metric: (clock error, error vs injected) pairs, in ms, over the rows published; and how many
    rows the witness excluded as the worker's stall (METHOD "Clock witness"), with the largest
    uncertainty a published row carried."""

    def __init__(self) -> None:
        self.values: dict[str, list[tuple[float, float]]] = {}
        self.rows = 0
        self.stalled = 0
        self.stamps: dict[str, int] = {}
        self.published_uncertainty_ms = 0.0

    def witnessed(self, row) -> bool:
        """Count the row; whether it was published (False: excluded as the worker's stall)."""
        self.rows += 1
        if row.status == "excluded" and (row.reason or "").startswith("measuring worker stalled"):
            self.stalled += 1
            return False
        if row.arrival_stamp:
            self.stamps[row.arrival_stamp] = self.stamps.get(row.arrival_stamp, 0) + 1
        self.published_uncertainty_ms = max(self.published_uncertainty_ms, row.clock_uncertainty_ms or 0.0)
        return True

    @property
    def stalled_share(self) -> float:
        return self.stalled / self.rows if self.rows else 0.0

    def add(self, metric: str, measured: float | None, sent_truth: tuple[float, float], injected_truth: float) -> None:
        """`sent_truth`: the truth from the emulator's stamps before and after its write; a measured
        value between the two is no error of voxwatch's (the write went out somewhere in that span)."""
        if measured is None:  # excluded for this model (registry exclusions)
            return
        low, high = min(sent_truth), max(sent_truth)
        self.values.setdefault(metric, []).append((measured - min(max(measured, low), high), measured - injected_truth))


def summary(pairs: list[tuple[float, float]]) -> dict:
    """Absolute clock error (p50, p99, max) and its signed mean; the same for the error vs injected."""
    clock = np.asarray([p[0] for p in pairs])
    injected = np.asarray([p[1] for p in pairs])
    a, b = np.abs(clock), np.abs(injected)
    return {"n": int(a.size), "p50_ms": round(float(np.percentile(a, 50)), 3),
            "p99_ms": round(float(np.percentile(a, 99)), 3), "max_ms": round(float(a.max()), 3),
            "mean_signed_ms": round(float(clock.mean()), 3),
            "vs_injected": {"p50_ms": round(float(np.percentile(b, 50)), 3),
                            "p99_ms": round(float(np.percentile(b, 99)), 3), "max_ms": round(float(b.max()), 3),
                            "mean_signed_ms": round(float(injected.mean()), 3)}}


def _ctx(timelines: list[Timeline]) -> MeasureContext:
    return MeasureContext(run_id="clock-truth", seed=0, region="bench", timeout_s=30, secrets=(Secret(KEY),),
                          emulator=True, on_timeline=timelines.append)


async def streams(model, adapter, dataset, items) -> tuple[list, list[Timeline]]:
    """Measure the items concurrently; each row with the timeline it was computed from."""
    holders: list[list[Timeline]] = [[] for _ in items]
    rows = await asyncio.gather(*(measure_item(model, adapter, dataset, item, _ctx(held))
                                  for item, held in zip(items, holders)))
    return rows, [held[0] for held in holders]


def _of(sent: dict[tuple[str, str], int], key: str) -> tuple[dict[str, int], dict[str, int]]:
    """One stream's send times from a drained ledger, as stamped before each write and after it
    (ledger.AFTER; a time the emulator worked out has one stamp): what -> ns, twice."""
    before = {what: t for (k, what), t in sent.items() if k == key and not what.endswith(AFTER)}
    after = {**before, **{what[:-len(AFTER)]: t for (k, what), t in sent.items() if k == key and what.endswith(AFTER)}}
    return before, after


def _truth(metric: str, sent: tuple[dict[str, int], dict[str, int]], timeline: Timeline, **anchors) -> tuple[float, float]:
    """The metric's truth as sent, from the stamps before the emulator's writes and after them."""
    return truth_as_sent(metric, sent[0], timeline, **anchors), truth_as_sent(metric, sent[1], timeline, **anchors)


class Rig:
    """One protocol set up for calibration: its model, dataset and scenario; the items of a round
    (unique ledger keys within it); and each measured stream's errors."""

    def __init__(self, registry: Registry, protocol: Protocol) -> None:
        self.protocol = protocol
        self.model = registry.resolve(protocol.model_id)

    def adapter(self, registry: Registry, url: str):
        """The vendor's adapter pointed at its emulator at `url`, with the emulator's key."""
        os.environ[key_variable(self.model.vendor)] = KEY
        os.environ[vendor_variable(self.model.vendor, "BASE_URL")] = url
        return registry.create(self.model)

    def _check(self, item, row) -> None:
        if row.status != "ok":
            raise RuntimeError(f"{self.protocol.name} {item.id}: {row.status}: {row.reason}")


class AudioRig(Rig):
    """STT (streaming or batch) and S2S: clips in, with per-stream anchors and transcripts."""

    def __init__(self, registry: Registry, protocol: Protocol) -> None:
        super().__init__(registry, protocol)
        self.dataset = ds = Catalog([bundled_root()]).load("stt-starter-clean")
        self.clips = clips = sorted(ds.clips, key=lambda c: c.duration_s)
        self.firsts = {c.id: protocol.first_chunk(chunk_pcm(audio_sent(ds, c), c.sample_rate, 20)[0]) for c in clips}
        self.texts = {c.id: f"{STT.transcript} {c.id}" for c in clips}  # unique per stream: the ledger's key
        self.keyed = {c.id: hashlib.sha256(self.firsts[c.id]).hexdigest() for c in clips}
        whole = {c.id: hashlib.sha256(audio_sent(ds, c)).hexdigest() for c in clips}  # a batch request's key
        anchors = tuple((self.keyed[c.id], c.speech_start, c.speech_end) for c in clips)
        if self.model.board == "s2s":
            self.scenario = protocol.scenario(replace(S2S, anchors=anchors))
        else:
            self.scenario = protocol.scenario(replace(
                STT, anchors=anchors, transcripts=tuple((self.keyed[c.id], self.texts[c.id]) for c in clips)
                + tuple((whole[c.id], self.texts[c.id]) for c in clips)))

    @property
    def most_streams(self) -> int:
        """The most concurrent streams with distinct ledger keys: one per clip."""
        return len(self.clips)

    def warm_up(self) -> list[Clip]:
        return self.clips[:2]

    def items(self, level: int, round_: int) -> list[Clip]:
        return [self.clips[(round_ * level + i) % len(self.clips)] for i in range(level)]

    def add(self, errors: Errors, clip: Clip, row, timeline: Timeline, sent: dict[tuple[str, str], int]) -> None:
        if not errors.witnessed(row):
            return
        self._check(clip, row)
        anchors = dict(speech_start_ms=clip.speech_start * 1000, speech_end_ms=clip.speech_end * 1000,
                       sample_rate=clip.sample_rate)

        def setting(metric: str, value: float) -> float:  # the emulator's, from the anchor's write (not its due time)
            return value - caller_late_ms(metric, timeline, **anchors)
        if self.model.protocol == "stt-batch":
            sent_truth = _truth("latency_ms", _of(sent, self.texts[clip.id]), timeline)
            errors.add("latency_ms", row.latency_ms, sent_truth,
                       STT.final_ms + jitter_ms(audio_sent(self.dataset, clip), STT.jitter_ms))
        elif self.model.board == "s2s":
            errors.add("v2v_ms", row.v2v_ms, _truth("v2v_ms", _of(sent, self.keyed[clip.id]), timeline,
                                                    leading_silence_ms=S2S.leading_silence_ms, **anchors),
                       setting("v2v_ms", S2S.truth(self.firsts[clip.id])["v2v_ms"]))
        else:
            truth, mine = STT.truth(self.firsts[clip.id]), _of(sent, self.texts[clip.id])
            for metric in ("first_partial_ms", "ttfs_ms"):
                if getattr(row, metric) is None:  # excluded for this model (registry exclusions)
                    continue
                errors.add(metric, getattr(row, metric), _truth(metric, mine, timeline, **anchors),
                           setting(metric, truth[metric]))


class TTSRig(Rig):
    """TTS under one of the TTS scenarios (`streaming` or `gaming`): prompts in, each text unique."""

    def __init__(self, registry: Registry, protocol: Protocol, name: str) -> None:
        super().__init__(registry, protocol)
        self.name, self.scenario = name, protocol.scenario(TTS[name])
        self.dataset = Catalog([bundled_root()]).load("tts-prompts")

    most_streams = None  # any number: each round's texts are made unique

    def warm_up(self) -> list[Prompt]:
        return list(self.dataset.prompts[:2])

    def items(self, level: int, round_: int) -> list[Prompt]:
        prompts = self.dataset.prompts
        return [Prompt(id=f"s{round_}-{i}", text=f"{prompts[i % len(prompts)].text} ({round_}.{i})", category="bench")
                for i in range(level)]

    def add(self, errors: Errors, prompt: Prompt, row, timeline: Timeline, sent: dict[tuple[str, str], int]) -> None:
        if not errors.witnessed(row):
            return
        self._check(prompt, row)
        truth, mine = self.scenario.truth(prompt.text), _of(sent, prompt.text)
        metric = "ttfa_gaming_ms" if self.name == "gaming" else "ttfa_ms"
        errors.add(metric, row.ttfa_ms, _truth("ttfa_ms", mine, timeline,
                                               leading_silence_ms=self.scenario.leading_silence_ms),
                   truth["ttfa_ms"])
        if self.name == "streaming":
            errors.add("ttfb_ms", row.ttfb_ms, _truth("ttfb_ms", mine, timeline), truth["ttfb_ms"])


def rig(registry: Registry, protocol: Protocol, tts_scenario: str = "streaming") -> Rig:
    """The protocol's rig (a TTS one under `tts_scenario`)."""
    if registry.resolve(protocol.model_id).board == "tts":
        return TTSRig(registry, protocol, tts_scenario)
    return AudioRig(registry, protocol)
