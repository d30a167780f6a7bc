"""Run an emulator in its own process on 127.0.0.1, as a remote service would be: `with serve(...) as url`.

An emulator is either a `websockets` handler (`handle` + `process_request`), an ASGI app (`app()`,
served by uvicorn) for vendors whose HTTP and WebSocket endpoints share one host, or an asyncio
protocol for each connection (`connection()`) for what uvicorn does not speak (HTTP/2).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import multiprocessing
import socket
import threading
from typing import Iterator

from voxwatch.providers.emulators.ledger import Ledger

# kind -> "module:Class" under voxwatch.providers.emulators, imported in the emulator's process. One
# emulator a vendor, serving all of its APIs on one port as the vendor serves them on one host, in the
# folder of the vendor's main board (Deepgram's also speaks Aura TTS, ElevenLabs' also Scribe STT,
# OpenAI's also batch and Realtime transcription, speech and chat completions).
EMULATORS = {
    "assemblyai": "stt.assemblyai:AssemblyAIEmulator",
    "deepgram": "stt.deepgram:DeepgramEmulator",
    "speechmatics": "stt.speechmatics:SpeechmaticsEmulator",
    "soniox": "stt.soniox:SonioxEmulator",
    "revai": "stt.revai:RevAIEmulator",
    "gladia": "stt.gladia:GladiaEmulator",
    "smallest": "stt.smallest:SmallestEmulator",
    "together": "stt.together:TogetherEmulator",
    "mistral": "stt.mistral:MistralEmulator",
    "groq": "stt.groq:GroqEmulator",
    "cartesia": "tts.cartesia:CartesiaEmulator",
    "elevenlabs": "tts.elevenlabs:ElevenLabsEmulator",
    "inworld": "tts.inworld:InworldEmulator",
    "fishaudio": "tts.fishaudio:FishAudioEmulator",
    "lmnt": "tts.lmnt:LMNTEmulator",
    "minimax": "tts.minimax:MiniMaxEmulator",
    "gradium": "tts.gradium:GradiumEmulator",
    "gemini": "s2s.gemini:GeminiLiveEmulator",
    "openai": "s2s.openai:OpenAIEmulator",
    "qwen": "s2s.qwen:QwenOmniEmulator",
    "ultravox": "s2s.ultravox:UltravoxEmulator",
    "bedrock": "s2s.nova_sonic:NovaSonicEmulator",
    "xai": "s2s.xai:XAIVoiceAgentEmulator",
    "zhipu": "s2s.zhipu:ZhipuRealtimeEmulator",
    "speechify": "tts.speechify:SpeechifyEmulator",
    "murf": "tts.murf:MurfEmulator",
    "rime": "tts.rime:RimeEmulator",
    "transcribe": "stt.transcribe:TranscribeEmulator",
    "polly": "tts.polly:PollyEmulator",
    "google": "stt.google:GoogleEmulator",
    "modulate": "stt.modulate:ModulateEmulator",
    "agent": "agents.reference:ReferenceAgent",  # a team's deployed agent, not a vendor (cli/emulate.py serves it apart)
    "hume": "tts.hume:HumeEmulator",
    "azure": "stt.azure:AzureEmulator",  # issue 42 (i42-v2): Azure AI Speech STT (WebSocket) and TTS (REST) on one port
    "cloudflare": "stt.cloudflare:CloudflareEmulator",  # issue 42 (i42-v2): Workers AI speech recognition (REST)
}


def emulator_class(kind: str):
    try:
        module, name = EMULATORS[kind].split(":")
    except KeyError:
        raise ValueError(f"no emulator {kind!r}; known: {', '.join(sorted(EMULATORS))}") from None
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


class _Serving:
    """The emulator a server answers with; `switch` replaces it whole (a new scenario, say other
    faults), and connections opened from then on get the new one."""

    def __init__(self, kind: str, scenario, with_ledger: bool) -> None:
        self.kind, self.with_ledger = kind, with_ledger
        self.switch(scenario)

    def switch(self, scenario) -> None:
        emulator = emulator_class(self.kind)(scenario)
        emulator.ledger = [] if self.with_ledger else None  # calibration only: see ledger.py
        self.app = emulator.app() if hasattr(emulator, "app") else None
        self.current = emulator

    async def asgi(self, scope, receive, send) -> None:
        await self.app(scope, receive, send)

    def process_request(self, connection, request):
        return self.current.process_request(connection, request)

    async def handle(self, ws) -> None:
        await self.current.handle(ws)

    def connection(self):
        return self.current.connection()


def _answer(serving: _Serving, conn) -> None:
    """Answer the testing process (a thread that sleeps in recv() until asked): the send records
    (Ledger), or a new scenario to serve (Switch)."""
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if isinstance(request, tuple) and request[0] == "scenario":
            serving.switch(request[1])
            conn.send("ok")
            continue
        records, serving.current.ledger = serving.current.ledger, []
        conn.send(records)


def _run(kind: str, scenario, conn, with_ledger: bool) -> None:
    serving = _Serving(kind, scenario, with_ledger)
    if hasattr(serving.current, "connection"):
        async def protocol() -> None:
            server = await asyncio.get_running_loop().create_server(serving.connection, "127.0.0.1", 0)
            conn.send(("http", server.sockets[0].getsockname()[1]))
            threading.Thread(target=_answer, args=(serving, conn), daemon=True).start()
            await asyncio.Future()

        asyncio.run(protocol())
        return
    if serving.app is not None:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY only on IPPROTO_TCP sockets
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(256)  # connections queue until uvicorn accepts them
        conn.send(("http", sock.getsockname()[1]))
        threading.Thread(target=_answer, args=(serving, conn), daemon=True).start()
        from voxwatch.providers.emulators.stamped_h11 import StampedH11Protocol

        server = uvicorn.Server(uvicorn.Config(serving.asgi, log_level="warning", http=StampedH11Protocol,
                                               ws="websockets-sansio", interface="asgi3",
                                               ws_max_size=2**26, ws_per_message_deflate=False, lifespan="off"))
        server.run(sockets=[sock])
        return

    import websockets

    async def main() -> None:
        async with websockets.serve(serving.handle, "127.0.0.1", 0, process_request=serving.process_request,
                                    max_size=None, compression=None) as server:
            conn.send(("ws", server.sockets[0].getsockname()[1]))
            threading.Thread(target=_answer, args=(serving, conn), daemon=True).start()
            await asyncio.Future()

    asyncio.run(main())


STARTUP_S = 180.0
"""How long a live emulator process may take to listen: a spawn imports the package afresh, which took over
90 s beside CI's four test workers, two CPU-bound processes and the other vendors' emulators on 2 cores (a
test then failed for the machine). A process that dies is said at once, with its exit code."""


class _ExitedBeforeListening(RuntimeError):
    pass


def _await_listening(kind: str, process, parent) -> None:
    """Wait for the emulator's first message (its address): at most STARTUP_S, and no longer than it lives."""
    waited = 0.0
    while not parent.poll(1.0):
        waited += 1.0
        if not process.is_alive():
            raise _ExitedBeforeListening(f"the {kind} emulator exited before listening (exit code {process.exitcode})")
        if waited >= STARTUP_S:
            raise RuntimeError(f"the {kind} emulator did not start within {STARTUP_S:g} s")


def _started(ctx, kind: str, scenario, with_ledger: bool):
    """The emulator's process, listening, and the pipe to it. A spawn that dies before it listens, with
    nothing said (exit code 255, once, beside CI's load), is started once more; an emulator that
    cannot start dies again and is said with its exit code."""
    try:
        return _start_once(ctx, kind, scenario, with_ledger)
    except _ExitedBeforeListening:
        return _start_once(ctx, kind, scenario, with_ledger)


def _start_once(ctx, kind: str, scenario, with_ledger: bool):
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_run, args=(kind, scenario, child, with_ledger), name=f"{kind}-emulator", daemon=True)
    process.start()
    try:
        _await_listening(kind, process, parent)
    except BaseException:
        process.kill()  # reaped, whether it died or is still starting
        process.join(5)
        raise
    return process, parent


class Switch:
    """The testing side of a scenario switch: pass to `serve(..., switch=Switch())`, then `use(scenario)`
    between streams (one emulator process drives many faults; starting one per fault is seconds each)."""

    def __init__(self) -> None:
        self._conn = None  # set by serve(): the pipe to the emulator process

    def use(self, scenario) -> None:
        """Serve `scenario` to the connections opened from now on (returns once the emulator has it)."""
        if self._conn is None:
            raise RuntimeError("this switch is not attached to a running emulator")
        self._conn.send(("scenario", scenario))
        self._conn.recv()


@contextlib.contextmanager
def serve(kind: str, scenario, ledger: Ledger | None = None, switch: Switch | None = None) -> Iterator[str]:
    """Yield the emulator's base URL (ws:// or http://127.0.0.1:PORT); the process is stopped on exit.

    `ledger`: a Ledger that can then fetch the emulator's send times (calibration). `switch`: a
    Switch that can then change the scenario served. They share one pipe: use one at a time.
    """
    process, parent = _started(multiprocessing.get_context("spawn"), kind, scenario, ledger is not None)
    try:
        scheme, port = parent.recv()
        for user in (ledger, switch):
            if user is not None:
                user._conn = parent
        yield f"{scheme}://127.0.0.1:{port}"
    finally:
        process.kill()
        process.join(5)
