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
from typing import Iterator

# kind -> "module:Class" under voxwatch.providers.emulators, imported in the emulator's process
EMULATORS = {
    "deepgram": "deepgram:DeepgramEmulator",
    "cartesia": "cartesia:CartesiaEmulator",
    "assemblyai": "assemblyai:AssemblyAIEmulator",
    "speechmatics": "speechmatics:SpeechmaticsEmulator",
    "elevenlabs": "elevenlabs:ElevenLabsEmulator",
    "openai": "openai:OpenAIEmulator",
    "gemini": "gemini:GeminiLiveEmulator",
}


def emulator_class(kind: str):
    try:
        module, name = EMULATORS[kind].split(":")
    except KeyError:
        raise ValueError(f"no emulator {kind!r}; known: {', '.join(sorted(EMULATORS))}") from None
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def _run(kind: str, scenario, conn, ledger) -> None:
    emulator = emulator_class(kind)(scenario)
    emulator.ledger = ledger  # calibration only: see ledger.py
    if hasattr(emulator, "app"):
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY only on IPPROTO_TCP sockets
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(256)  # connections queue until uvicorn accepts them
        conn.send(("http", sock.getsockname()[1]))
        server = uvicorn.Server(uvicorn.Config(emulator.app(), log_level="warning", ws="websockets-sansio",
                                               ws_max_size=2**26, ws_per_message_deflate=False, lifespan="off"))
        server.run(sockets=[sock])
        return

    import websockets

    async def main() -> None:
        async with websockets.serve(emulator.handle, "127.0.0.1", 0, process_request=emulator.process_request,
                                    max_size=None, compression=None) as server:
            conn.send(("ws", server.sockets[0].getsockname()[1]))
            await asyncio.Future()

    asyncio.run(main())


@contextlib.contextmanager
def serve(kind: str, scenario, ledger=None) -> Iterator[str]:
    """Yield the emulator's base URL (ws:// or http://127.0.0.1:PORT); the process is stopped on exit.

    `ledger`: a multiprocessing queue (from `ledger_queue()`) that receives the emulator's send times.
    """
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_run, args=(kind, scenario, child, ledger), name=f"{kind}-emulator", daemon=True)
    process.start()
    try:
        if not parent.poll(30):
            raise RuntimeError(f"the {kind} emulator did not start")
        scheme, port = parent.recv()
        yield f"{scheme}://127.0.0.1:{port}"
    finally:
        process.kill()
        process.join(5)


def ledger_queue():
    """A queue an emulator process can write its send times to (see ledger.py)."""
    return multiprocessing.get_context("spawn").Queue()
