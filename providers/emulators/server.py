"""Run an emulator in its own process on 127.0.0.1, as a remote service would be: `with serve(...) as url`.

An emulator is either a `websockets` handler (`handle` + `process_request`) or an ASGI app
(`app()`, served by uvicorn) for vendors whose HTTP and WebSocket endpoints share one host.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import multiprocessing
import socket
import threading
from typing import Iterator

from .ledger import Ledger

# kind -> "module:Class" under voxwatch.providers.emulators, imported in the emulator's process
EMULATORS = {
    "deepgram": "deepgram:DeepgramEmulator",
    "cartesia": "cartesia:CartesiaEmulator",
    "assemblyai": "assemblyai:AssemblyAIEmulator",
    "speechmatics": "speechmatics:SpeechmaticsEmulator",
    "elevenlabs": "elevenlabs:ElevenLabsEmulator",
    "openai": "openai:OpenAIEmulator",
    "gemini": "gemini:GeminiLiveEmulator",
    "qwen": "qwen:QwenOmniEmulator",
    "xai": "xai:XAIVoiceAgentEmulator",
    "zhipu": "zhipu:ZhipuRealtimeEmulator",
}


def emulator_class(kind: str):
    try:
        module, name = EMULATORS[kind].split(":")
    except KeyError:
        raise ValueError(f"no emulator {kind!r}; known: {', '.join(sorted(EMULATORS))}") from None
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def _answer_ledger(emulator, conn) -> None:
    """Hand over the send records on request (a thread that sleeps in recv() until asked)."""
    while True:
        try:
            conn.recv()
        except EOFError:
            return
        records, emulator.ledger = emulator.ledger, []
        conn.send(records)


def _run(kind: str, scenario, conn, with_ledger: bool) -> None:
    emulator = emulator_class(kind)(scenario)
    emulator.ledger = [] if with_ledger else None  # calibration only: see ledger.py
    if hasattr(emulator, "app"):
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY only on IPPROTO_TCP sockets
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(256)  # connections queue until uvicorn accepts them
        conn.send(("http", sock.getsockname()[1]))
        if with_ledger:
            threading.Thread(target=_answer_ledger, args=(emulator, conn), daemon=True).start()
        from .stamped_h11 import StampedH11Protocol

        server = uvicorn.Server(uvicorn.Config(emulator.app(), log_level="warning", http=StampedH11Protocol,
                                               ws="websockets-sansio",
                                               ws_max_size=2**26, ws_per_message_deflate=False, lifespan="off"))
        server.run(sockets=[sock])
        return

    import websockets

    async def main() -> None:
        async with websockets.serve(emulator.handle, "127.0.0.1", 0, process_request=emulator.process_request,
                                    max_size=None, compression=None) as server:
            conn.send(("ws", server.sockets[0].getsockname()[1]))
            if with_ledger:
                threading.Thread(target=_answer_ledger, args=(emulator, conn), daemon=True).start()
            await asyncio.Future()

    asyncio.run(main())


@contextlib.contextmanager
def serve(kind: str, scenario, ledger: Ledger | None = None) -> Iterator[str]:
    """Yield the emulator's base URL (ws:// or http://127.0.0.1:PORT); the process is stopped on exit.

    `ledger`: a Ledger that can then fetch the emulator's send times (calibration).
    """
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_run, args=(kind, scenario, child, ledger is not None), name=f"{kind}-emulator", daemon=True)
    process.start()
    try:
        if not parent.poll(30):
            raise RuntimeError(f"the {kind} emulator did not start")
        scheme, port = parent.recv()
        if ledger is not None:
            ledger._conn = parent
        yield f"{scheme}://127.0.0.1:{port}"
    finally:
        process.kill()
        process.join(5)
