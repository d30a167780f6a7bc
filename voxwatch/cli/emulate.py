"""`voxwatch emulate`: loopback emulators of every cloud vendor, for trying the whole pipeline
end to end with no key and no network (and for calibration). Never for a leaderboard.

Each vendor's emulator runs in its own process and serves all of that vendor's APIs on one
port. `agent` (asked for by name, never in "all") is the reference agent: a deployed voice agent on
loopback over Twilio Media Streams and raw PCM, with its state endpoint (emulators/agents/reference.py). STT streams get their clip's reference transcript with injected errors (one word in
`ERROR_EVERY` replaced), timed from the clip's own VAD anchors; TTS and S2S audio is spoken by the
local eSpeak NG engine. OpenAI Realtime's emulator answers a spoken question with known answers (the
bundled s2s-questions) by saying its first accepted answer, except every `WRONG_EVERY`-th question,
which it does not answer: an emulated answer accuracy known in advance, as the STT transcripts' WER
is. On the clips without speech (stt-nonspeech) the emulated STT says "Thank you." on every `INVENT_EVERY`-th
clip and nothing on the others: an emulated hallucination known in advance. Rows measured against them
are labelled `emulator` and never reach a board.
"""

from __future__ import annotations

import contextlib
import hashlib
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.resources import files
from typing import Iterator

from voxwatch.conversations.backend import Backend
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.datasets.catalog import Catalog, Dataset
from voxwatch.datasets.manifest import Clip
from voxwatch.metrics.hallucination import NONSPEECH
from voxwatch.providers.agents.line import url_variable
from voxwatch.providers.emulators.agents.reference import PCM, STATE, TWILIO, AgentScenario
from voxwatch.providers.emulators.scenario import S2SScenario, Scenarios, STTScenario, TTSScenario
from voxwatch.providers.emulators.server import serve
from voxwatch.providers.keys import key_variable, vendor_variable
from voxwatch.foundation.frame_rates import Upsampler
from voxwatch.harness.measure import audio_sent
from voxwatch.harness.pacer import chunk_pcm

EMULATOR_KEY = "emulator-key"
ERROR_EVERY = 9
WRONG_EVERY = 4
NO_ANSWER = "I am not sure about that one."
INVENT_EVERY = 3
INVENTED = "Thank you."
VENDORS = ("deepgram", "cartesia", "assemblyai", "speechmatics", "elevenlabs", "openai", "gemini", "qwen", "xai",
           "zhipu", "soniox", "revai", "gladia", "smallest", "inworld",
           "together", "mistral", "groq", "lmnt", "fishaudio", "minimax", "speechify", "murf", "rime",
           "ultravox", "bedrock", "hume", "transcribe", "polly", "azure", "cloudflare", "google", "modulate")


def with_errors(text: str, every: int = ERROR_EVERY) -> str:
    """The reference with every `every`-th word replaced: a transcript with a known WER."""
    words = text.split()
    return " ".join("uh" if (i + 1) % every == 0 else w for i, w in enumerate(words))


def answer_sentence(answers: tuple[str, ...]) -> str:
    """How the emulated S2S model says a question's answer: its first accepted answer in a sentence."""
    return f"The answer is {answers[0]}."


def emulated_reply(answers: tuple[str, ...], index: int, every: int = WRONG_EVERY) -> str:
    """What the emulated S2S model says to the index-th (from 0) spoken question of a set: the answer
    (answer_sentence), or, for every `every`-th question, no answer at all."""
    return NO_ANSWER if (index + 1) % every == 0 else answer_sentence(answers)


def said(clip: Clip, index: int, nonspeech: bool, every: int = INVENT_EVERY) -> str:
    """What the emulated STT transcribes of the index-th (from 0) clip of a dataset: its reference with
    errors (with_errors); on a clip without speech, INVENTED on every `every`-th (the first included),
    else nothing: an emulated hallucination share known in advance."""
    if nonspeech:
        return INVENTED if index % every == 0 else ""
    return with_errors(clip.text)


def stream_keys(ds: Dataset, clip: Clip, chunk_ms: int) -> tuple[tuple[str, ...], str]:
    """How the emulators know a clip: the sha256 of a stream's first chunk as sent (16 kHz) and upsampled
    to 24 kHz (OpenAI Realtime), and of the whole clip (a batch request)."""
    pcm = audio_sent(ds, clip)
    first = chunk_pcm(pcm, clip.sample_rate, chunk_ms)[0]
    return tuple(hashlib.sha256(seen).hexdigest() for seen in (first, Upsampler().push(first))), \
        hashlib.sha256(pcm).hexdigest()


def transcripts_of(ds: Dataset, words: dict[str, str], chunk_ms: int) -> tuple[tuple[str, str], ...]:
    """An STT scenario's per-stream transcripts (STTScenario.transcripts) that make the emulator say
    words[clip id] of each clip of a dataset named there, streamed or sent whole: injected truth."""
    out = []
    for clip in ds.clips:
        if clip.id in words:
            streams, whole = stream_keys(ds, clip, chunk_ms)
            out.extend((digest, words[clip.id]) for digest in (*streams, whole))
    return tuple(out)


def scenarios(catalog: Catalog, chunk_ms: int, key: str = EMULATOR_KEY) -> Scenarios:
    """Default scenarios: per-clip anchors and transcripts for every audio dataset in the catalog (`said`),
    and an emulated reply to each spoken question with known answers."""
    anchors, transcripts, replies = [], [], []
    for name in catalog.names():
        ds = catalog.load(name)
        if ds.info.kind != "audio":
            continue
        for index, clip in enumerate(ds.clips):
            streams, whole = stream_keys(ds, clip, chunk_ms)
            text = said(clip, index, ds.info.condition == NONSPEECH)
            for digest in streams:
                anchors.append((digest, clip.speech_start, clip.speech_end))
                transcripts.append((digest, text))
                if clip.answers:
                    replies.append((digest, emulated_reply(clip.answers, index)))
            transcripts.append((whole, text))
    stt = STTScenario(transcript="hello", speech_start_s=0.2, speech_end_s=1.0, first_partial_ms=180.0,
                      final_ms=260.0, jitter_ms=40.0, api_key=key, anchors=tuple(anchors),
                      transcripts=tuple(transcripts))
    tts = TTSScenario(ttfb_ms=150.0, leading_silence_ms=60.0, jitter_ms=40.0, api_key=key, voice="espeak")
    s2s = S2SScenario(response_ms=450.0, leading_silence_ms=60.0, jitter_ms=40.0, api_key=key, voice="espeak",
                      anchors=tuple(anchors), replies=tuple(replies))
    return Scenarios(stt=stt, tts=tts, s2s=s2s)


STARTING = 4  # emulator processes starting at once: a start is mostly an interpreter's imports, which
# two cores overlap with the others' waits; more at once only queue for the CPU (and near serve's 30 s bound)


@contextlib.contextmanager
def emulators(vendors: list[str], bundle: Scenarios) -> Iterator[dict[str, str]]:
    """Start one emulator process per vendor, STARTING at a time (one after another, two dozen
    vendors took a minute); yields vendor -> base URL. Those started are stopped if one fails."""
    with contextlib.ExitStack() as stack:
        starting = {v: serve(v, bundle) for v in vendors}
        with ThreadPoolExecutor(max_workers=STARTING) as pool:
            started = {v: pool.submit(server.__enter__) for v, server in starting.items()}
        for v, future in started.items():
            if future.exception() is None:
                stack.push(starting[v].__exit__)
        for future in started.values():
            if future.exception() is not None:
                raise future.exception()
        yield {v: future.result() for v, future in started.items()}


def environment(urls: dict[str, str], key: str = EMULATOR_KEY) -> dict[str, str]:
    """The variables that point each vendor's adapter at its emulator (its base URL and key)."""
    out = {}
    for vendor, url in urls.items():
        out[vendor_variable(vendor, "BASE_URL")] = url
        out[key_variable(vendor)] = key
    return out


def exports(urls: dict[str, str], key: str = EMULATOR_KEY) -> list[str]:
    """Shell lines that point each vendor's adapter at its emulator."""
    return [f"export {name}={value}" for name, value in environment(urls, key).items()]


AGENT = "agent"
REFERENCE_AGENTS = "reference_agents.toml"  # the reference agent's registry entries, beside its emulator
STATE_VARIABLE = "VOXWATCH_AGENT_REFERENCE_STATE_URL"


@dataclass(frozen=True)
class AgentOptions:
    """How the reference agent behaves (`voxwatch emulate --vendors agent ...`)."""

    reply_delay_ms: float = 300.0
    end_of_turn_ms: float = 800.0  # the bundled callers pause up to 0.48 s between sentences
    barge_in: bool = True
    voice: str = "espeak"
    barge_in_stop_ms: float = 0.0  # talked over: keep talking this long after the caller's first word
    ahead_ms: float = 0.0  # stream each reply this far ahead of real time (as bot frameworks do)


def agent_scenario(loaded: LoadedScenario, options: AgentOptions = AgentOptions()) -> AgentScenario:
    """The reference agent following `loaded`, its own backend starting at the scenario's initial state."""
    s = loaded.scenario
    return AgentScenario(s, Backend(s.initial_state), options.reply_delay_ms, options.end_of_turn_ms,
                         options.barge_in, options.voice, barge_in_stop_ms=options.barge_in_stop_ms,
                         ahead_ms=options.ahead_ms)


def agent_exports(url: str) -> list[str]:
    """Shell lines that register the reference agent (both transports) and point them at it."""
    registry = files("voxwatch.providers.emulators.agents").joinpath(REFERENCE_AGENTS)
    ws = url.replace("http://", "ws://", 1)
    return [f"export VOXWATCH_REGISTRY_FILES={registry}",
            f"export {url_variable('reference-twilio')}={ws}{TWILIO}",
            f"export {url_variable('reference-pcm')}={ws}{PCM}",
            f"export {STATE_VARIABLE}={url.replace('ws://', 'http://', 1)}{STATE}"]


def _stop(signum, frame) -> None:
    raise KeyboardInterrupt


def serve_forever(catalog: Catalog, vendors: list[str], chunk_ms: int, agent: AgentScenario | None = None) -> None:
    """Serve `vendors` (and the reference agent when given) until Ctrl-C or SIGTERM."""
    with contextlib.ExitStack() as stack:
        urls = stack.enter_context(emulators(vendors, scenarios(catalog, chunk_ms))) if vendors else {}
        lines = exports(urls)
        if agent is not None:
            lines += agent_exports(stack.enter_context(serve(AGENT, agent)))
        for line in lines:
            print(line, flush=True)
        print("# emulators are running; Ctrl-C stops them", flush=True)
        signal.signal(signal.SIGTERM, _stop)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
