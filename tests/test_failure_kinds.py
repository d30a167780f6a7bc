"""Every failure status the shared maps can give is reached, for every cloud adapter, from its
vendor's emulator.

There is one reading of a WebSocket close code (voxwatch/providers/session/close_codes.py: RFC 6455 plus the
overrides a vendor documents) and one of an HTTP status (endpoints.http_status). For each cloud
adapter this drives its emulator's handshake faults and its session-ending faults (`disconnect`,
and `close:<code>` for a code of each status the close map gives that vendor, and every code the
vendor overrides), checks that each row got the status the map names, and that together they
reach every status the maps can produce for that protocol. The faults that do not come from the
maps (`malformed`, `no_final`, `inaudible`) have each vendor's own contract tests.

It is fast because every fault fails at once (the handshake, or the first message of the session),
one emulator process per vendor switches scenarios between streams instead of starting again, and
the vendors run side by side on one event loop (statuses do not depend on timing).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from support.contract import KEY
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.observation import STATUSES
from voxwatch.providers.session.close_codes import OTHER, RFC6455, VENDOR, status_of, statuses, vendor_key
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.faults import HANDSHAKE, UNSENDABLE, close
from voxwatch.providers.emulators.scenario import S2SScenario, Scenarios, STTScenario, TTSScenario
from voxwatch.providers.session.endpoints import HTTP_STATUSES, http_status
from voxwatch.providers.keys import Secret, key_variable, vendor_variable
from voxwatch.providers.registry import Registry
from voxwatch.harness.measure import MeasureContext, measure_item

REGISTRY = Registry.default()
CLOUD = [m for m in sorted(REGISTRY.models.values(), key=lambda m: m.id)
         if m.needs_key and not REGISTRY.standing(m).retired]
ADAPTERS = {m.adapter: m for m in reversed(CLOUD)}  # one model per adapter (the first by id)
STARTING = 3  # emulators starting at once: vendors whose emulator is up run their streams meanwhile
HTTP = {"voxwatch.providers.stt.openai_batch:OpenAIBatchSTT", "voxwatch.providers.tts.openai:OpenAITTS",
        "voxwatch.providers.tts.elevenlabs:ElevenLabsHTTPTTS", "voxwatch.providers.stt.groq:GroqBatchSTT",
        "voxwatch.providers.tts.groq:GroqTTS", "voxwatch.providers.tts.fishaudio:FishAudioTTS",
        "voxwatch.providers.tts.minimax:MiniMaxTTS", "voxwatch.providers.tts.speechify:SpeechifyTTS",
        "voxwatch.providers.s2s.nova_sonic:NovaSonicS2S"}
HTTP |= {"voxwatch.providers.stt.transcribe:TranscribeSTT", "voxwatch.providers.tts.polly:PollyTTS"}
HTTP |= {"voxwatch.providers.tts.azure:AzureTTS", "voxwatch.providers.stt.cloudflare:CloudflareSTT",
         "voxwatch.providers.tts.gemini:GeminiTTS"}
HTTP |= {"voxwatch.providers.stt.google:GoogleSTT", "voxwatch.providers.tts.google:GoogleTTS"}


def test_the_maps_speak_the_projects_statuses():
    failures = set(STATUSES) - {"ok"}
    assert {*RFC6455.values(), OTHER, *HTTP_STATUSES} <= failures
    assert all(set(codes.values()) <= failures for codes in VENDOR.values())
    assert set(VENDOR) <= {m.vendor for m in CLOUD}  # an override names a vendor the registry has
    assert all(vendor_key(m.vendor) == m.vendor for m in CLOUD)
    assert status_of("AssemblyAI", 1013) == status_of("Gemini", 1013) == "server_error"  # they once disagreed


def _codes(vendor: str) -> list[int]:
    """A close code of each status the map gives this vendor (the lowest the RFC table has), and every
    code the vendor overrides."""
    overrides = VENDOR.get(vendor, {})
    by_status: dict[str, int] = {}
    for code in sorted(RFC6455):
        if code not in UNSENDABLE and code not in overrides:
            by_status.setdefault(status_of(vendor, code), code)
    by_status.setdefault(OTHER, 4999)
    return sorted({*by_status.values(), *overrides})


def _faults(adapter: str, vendor: str) -> list[tuple[str, str]]:
    """(fault, the status the maps name for it) for one adapter."""
    out = [(fault, http_status(int(status))) for fault, (status, _, _) in HANDSHAKE.items()]
    if adapter not in HTTP:
        out.append(("disconnect", status_of(vendor, None)))
        out += [(close(code), status_of(vendor, code)) for code in _codes(vendor)]
    return out


def _with_fault(scenario: Scenarios, fault: str | None) -> Scenarios:
    return Scenarios(**{board: replace(getattr(scenario, board), fault=fault) for board in ("stt", "tts", "s2s")})


async def _drive(vendor: str, models: list, scenario: Scenarios, start, monkeypatch, audio, prompts) -> list:
    """Start the vendor's emulator (`start`: in a thread, a few at a time), then each fault of each of
    its adapters, one stream at a time: (adapter, fault, expected, row)."""
    switch = server.Switch()
    url = await start(server.serve(vendor, scenario, switch=switch))
    monkeypatch.setenv(vendor_variable(vendor, "BASE_URL"), url)  # read when an adapter is made
    monkeypatch.setenv(key_variable(vendor), KEY)
    out = []
    for model in models:
        dataset, item = prompts if model.protocol == "tts-stream" else audio
        for fault, expected in _faults(model.adapter, vendor):
            await asyncio.to_thread(switch.use, _with_fault(scenario, fault))
            context = MeasureContext(run_id="kinds", seed=1, region="test", timeout_s=3, secrets=(Secret(KEY),),
                                     emulator=True)
            row = await measure_item(model, REGISTRY.create(model), dataset, item, context)
            out.append((model.adapter, fault, expected, row))
    return out


@pytest.mark.realtime
def test_every_status_of_the_maps_is_reached_from_every_protocols_emulator(monkeypatch):
    assert set(ADAPTERS) >= HTTP
    catalog = Catalog([bundled_root()])
    clean = catalog.load("stt-starter-clean")
    clip = min(clean.clips, key=lambda c: c.speech_end)  # the shortest turn: S2S faults come after it
    prompts = catalog.load("tts-prompts")
    audio, text = (clean, clip), (prompts, min(prompts.prompts, key=lambda p: len(p.text)))
    scenario = Scenarios(
        stt=STTScenario(transcript=clip.text, speech_start_s=0.0, speech_end_s=clip.speech_end, first_partial_ms=10.0,
                        final_ms=50.0, api_key=KEY),
        tts=TTSScenario(ttfb_ms=10.0, leading_silence_ms=20.0, api_key=KEY),
        s2s=S2SScenario(response_ms=10.0, speech_end_s=0.0, api_key=KEY))
    by_vendor: dict[str, list] = defaultdict(list)
    for model in ADAPTERS.values():
        by_vendor[model.vendor].append(model)
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(STARTING) as starting:
        async def start(emulator) -> str:  # each emulator process takes seconds to import on a busy machine
            return await asyncio.get_running_loop().run_in_executor(starting, stack.enter_context, emulator)

        async def everything():
            longest_first = sorted(by_vendor.items(), key=lambda v: -sum(len(_faults(m.adapter, v[0])) for m in v[1]))
            return await asyncio.gather(*(_drive(v, ms, scenario, start, monkeypatch, audio, text)
                                          for v, ms in longest_first))

        results = [r for rows in asyncio.run(everything()) for r in rows]
    wrong = [(adapter, fault, expected, row.status, row.reason) for adapter, fault, expected, row in results
             if row.status != expected]
    assert not wrong, "\n".join(map(str, wrong))
    assert all(KEY not in row.reason for *_, row in results)
    for adapter, model in ADAPTERS.items():
        reached = {row.status for a, _, _, row in results if a == adapter}
        can = set(HTTP_STATUSES) | (set() if adapter in HTTP else statuses(model.vendor))
        assert can <= reached, (adapter, sorted(can - reached))
