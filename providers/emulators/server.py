"""Run an emulator in its own process on 127.0.0.1, as a remote service would be: `with serve(...) as url`."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
from typing import Iterator

import websockets

from .cartesia import CartesiaEmulator
from .deepgram import DeepgramEmulator
from .scenario import STTScenario, TTSScenario

EMULATORS = {"deepgram": DeepgramEmulator, "cartesia": CartesiaEmulator}


def _run(kind: str, scenario, conn) -> None:
    emulator = EMULATORS[kind](scenario)

    async def main() -> None:
        async with websockets.serve(emulator.handle, "127.0.0.1", 0, process_request=emulator.process_request,
                                    max_size=None, compression=None) as server:
            conn.send(server.sockets[0].getsockname()[1])
            await asyncio.Future()

    asyncio.run(main())


@contextlib.contextmanager
def serve(kind: str, scenario: STTScenario | TTSScenario) -> Iterator[str]:
    """Yield the emulator's base URL (ws://127.0.0.1:PORT); the process is stopped on exit."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_run, args=(kind, scenario, child), name=f"{kind}-emulator", daemon=True)
    process.start()
    try:
        if not parent.poll(30):
            raise RuntimeError(f"the {kind} emulator did not start")
        yield f"ws://127.0.0.1:{parent.recv()}"
    finally:
        process.kill()
        process.join(5)
