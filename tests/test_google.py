"""Contract tests: the Google Cloud Speech-to-Text v2 (StreamingRecognize) and Text-to-Speech
(StreamingSynthesize) adapters against their loopback emulator, over real gRPC calls on HTTP/2 (messages by
field number, grpc-status trailers). The metrics equal the injected truth (tolerances: contract.py), every
fault is its row through the call's status, the requests the adapters send are the ones the protos and the
official sample describe, and the proto's own seven-response example is replayed through the STT adapter.
"""

import asyncio
import json

import pytest
from support.contract import (KEY, STT_FAULTS, TTS_FAULTS, failure_rows_test, measure, starter_clean, stt_clock_test,
                              stt_scenario, switched_emulator, tts_clock_test)

from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario
from voxwatch.providers.emulators.stt.google import DOCUMENTED, DOCUMENTED_TRANSCRIPT, GoogleSTTScenario
from voxwatch.providers.session import grpc_wire as pb
from voxwatch.providers.session.h2_duplex import H2Duplex
from voxwatch.providers.stt.google import config_request, location_of, project_and_token, results
from voxwatch.providers.tts.google import PATH
from voxwatch.providers.tts.google import config_request as tts_config

pytestmark = pytest.mark.realtime

STT, TTS = "google/chirp_3", "google/chirp-3-hd"
emulator = switched_emulator("google", Scenarios(stt=STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0,
                                                               api_key=KEY), tts=TTSScenario(api_key=KEY)))


def _seen(streams, field: str) -> list[dict]:
    """The details the emulator noted (ledger.saw) that have `field`, over the streams."""
    notes = (json.loads(k) for s in streams for k in s.sent if k.startswith("{"))
    return [n for n in notes if field in n]


def test_the_first_requests_follow_the_protos():
    """StreamingRecognizeRequest {recognizer 3, streaming_config 6 {config 1 {explicit_decoding_config 8,
    model 9, language_codes 10}, streaming_features 2 {interim_results 2}}}; StreamingSynthesizeRequest
    {streaming_config 1 {voice 1 {language_code 1, name 2}, streaming_audio_config 4 {PCM 7, 24000}}}."""
    first = pb.decode(config_request("projects/p/locations/us/recognizers/_", "chirp_3", "en-US", 16000))
    assert pb.text(first, 3) == "projects/p/locations/us/recognizers/_" and 5 not in first
    streaming = pb.decode(pb.first(first, 6))
    config = pb.decode(pb.first(streaming, 1))
    assert pb.text(config, 9) == "chirp_3" and pb.text(config, 10) == "en-US"
    decoding = pb.decode(pb.first(config, 8))
    assert [pb.first(decoding, n) for n in (1, 2, 3)] == [1, 16000, 1]
    assert pb.first(pb.decode(pb.first(streaming, 2)), 2) == 1
    synth = pb.decode(pb.first(pb.decode(tts_config("en-US-Chirp3-HD-Charon")), 1))
    voice, audio = pb.decode(pb.first(synth, 1)), pb.decode(pb.first(synth, 4))
    assert (pb.text(voice, 1), pb.text(voice, 2)) == ("en-US", "en-US-Chirp3-HD-Charon")
    assert (pb.first(audio, 1), pb.first(audio, 2)) == (7, 24000)
    assert location_of("https://eu-speech.googleapis.com") == "eu" and location_of("https://speech.googleapis.com") == "global"
    assert project_and_token("my-project:ya29.token") == ("my-project", "ya29.token")
    assert project_and_token("ya29.token", emulator=True) == ("voxwatch-emulator", "ya29.token")


def _the_recognizer_config(streams, clip) -> None:
    assert _seen(streams, "recognizer")[-1] == {
        "recognizer": "projects/voxwatch-emulator/locations/us/recognizers/_", "model": "chirp_3",
        "language_codes": ["en-US"], "sample_rate_hertz": 16000, "interim_results": True}


test_stt_partials_and_final_on_the_clock = stt_clock_test(STT, clip_id="u039", check=_the_recognizer_config)
test_stt_failures_become_rows = failure_rows_test(STT, STT_FAULTS, first_partial_ms=20.0, final_ms=50.0)


def test_the_protos_documented_responses_replayed_through_the_adapter(emulator, monkeypatch, unpaced):
    """cloud_speech.proto's example: interims split into a stable and an unstable part, two finals with a
    second alternative each; the adapter joins each response's interims and keeps the finals' top
    alternatives: "to be or not to be that is the question", as the comment says."""
    ds, clips = starter_clean()
    clip = clips["u039"]
    emulator.use(monkeypatch, Scenarios(stt=GoogleSTTScenario(**vars(stt_scenario(clip, first_partial_ms=20.0,
                                                                                  partial_every_ms=10.0)),
                                                            documented=True)))
    row = measure(STT, ds, clip)
    assert row.status == "ok" and row.hypothesis == DOCUMENTED_TRANSCRIPT, (row.status, row.reason, row.hypothesis)
    assert row.first_partial_ms is not None and row.ttfs_ms is not None


def test_a_response_with_a_final_and_interims_reads_in_order():
    assert results(DOCUMENTED[2]) == [(False, "to be"), (False, " or not to be")]
    assert results(DOCUMENTED[3]) == [(True, "to be or not to be")]  # the top alternative only


def _the_voice_config(streams, scenario) -> None:
    assert _seen(streams, "voice")[-1] == {"voice": "en-US-Chirp3-HD-Charon", "language_code": "en-US",
                                           "sample_rate_hertz": 24000}


test_tts_ttfa_with_its_components = tts_clock_test(TTS, "en-US-Chirp3-HD-Charon", check=_the_voice_config)
test_tts_failures_become_rows = failure_rows_test(TTS, TTS_FAULTS, leading_silence_ms=20.0)


def test_the_official_streaming_samples_requests_are_served():
    """python-docs-samples streaming_tts_quickstart.py: a config with only the voice (no audio config: 24 kHz
    PCM by default), four text inputs, the half-close; audio for each input, then status OK."""

    texts = ["Hello there. ", "How are you ", "today? It's ", "such nice weather outside."]
    voice = pb.message(pb.field(1, "en-US"), pb.field(2, "en-US-Chirp3-HD-Charon"))
    requests = [pb.message(pb.field(1, pb.message(pb.field(1, voice))))]
    requests += [pb.message(pb.field(2, pb.message(pb.field(1, t)))) for t in texts]
    ledger = Ledger()
    with server.serve("google", Scenarios(tts=TTSScenario(api_key=KEY, ttfb_ms=10.0, speech_ms=40.0)),
                      ledger=ledger) as url:
        async def call():
            duplex = await H2Duplex.open(url + PATH, pb.request_headers(KEY), "Google")
            for r in requests:
                await duplex.send(pb.frame(r))
            await duplex.end()
            audio = [pb.first(pb.decode(m), 1) async for m, _ in pb.responses(duplex, "Google")]
            await duplex.aclose()
            return audio

        audio = asyncio.run(call())
        records = ledger.drain()
    assert seen(records, "input") == texts
    assert seen(records, "synthesis_config") == [{"voice": "en-US-Chirp3-HD-Charon", "language_code": "en-US",
                                                  "sample_rate_hertz": 24000}]
    assert len(audio) >= 4 and all(len(a) % 2 == 0 for a in audio)


def test_the_emulator_refuses_what_the_protos_forbid(emulator, monkeypatch):
    """INVALID_ARGUMENT, in the trailers of a call that began: a model the location does not serve, a second
    config, audio over 15 KB, a voice that is not Chirp 3 HD; UNIMPLEMENTED for a method it does not have."""
    from voxwatch.providers.stt.google import PATH as RECOGNIZE

    emulator.use(monkeypatch, Scenarios(stt=STTScenario(transcript="a", speech_start_s=0.0, speech_end_s=0.1,
                                                        api_key=KEY), tts=TTSScenario(api_key=KEY)))
    recognizer = "projects/p/locations/us/recognizers/_"
    cases = [(RECOGNIZE, [config_request(recognizer, "chirp_1", "en-US", 16000)]),
             (RECOGNIZE, [config_request("projects/p/locations/us-central1/recognizers/_", "chirp_3", "en-US", 16000)]),
             (RECOGNIZE, [config_request(recognizer, "chirp_3", "en-US", 16000)] * 2),
             (RECOGNIZE, [config_request(recognizer, "chirp_3", "en-US", 16000), pb.field(5, b"\0" * (15 * 1024 + 2))]),
             (PATH, [tts_config("en-US-Neural2-A")]),
             ("/google.cloud.speech.v2.Speech/Recognize", [])]

    async def call(path, requests):
        duplex = await H2Duplex.open(emulator.url + path, pb.request_headers(KEY), "Google")
        try:
            for r in requests:
                await duplex.send(pb.frame(r))
            await duplex.end()
            with pytest.raises(Exception) as failed:
                async for _ in pb.responses(duplex, "Google"):
                    pass
            return str(failed.value)
        finally:
            await duplex.aclose()

    reasons = [asyncio.run(call(path, requests)) for path, requests in cases]
    assert all("status 3" in r for r in reasons[:5]) and "status 12" in reasons[5], reasons
