"""The call is answered at once: as the phone network does, voxwatch sends `connected` and `start` as
soon as the agent's WebSocket opens (issue 43). Measured where the agent would: a loopback agent that
stamps when its handshake completed and when `connected` arrived, called by `voxwatch scenarios run`
in a fresh process, so a cost paid on first use (an import, a filter's design) is on the clock as it
is on a user's first call."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest
from websockets.asyncio.server import serve

from support.processes import run_cli
from voxwatch.providers.agents.line import url_variable

REFERENCE = Path(str(files("voxwatch.providers.emulators.agents").joinpath("reference_agents.toml")))
ANSWERED_WITHIN_MS = 50


class StampingAgent:
    """A Twilio Media Streams agent on loopback that records, per call, the nanoseconds from its
    handshake's completion to the arrival of `connected` and of `start`, then hangs up."""

    def __init__(self) -> None:
        self.calls: list[dict[str, int | str]] = []
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),), daemon=True)
        self._stop: asyncio.Future | None = None
        self.port = 0

    async def _handler(self, ws) -> None:
        opened = time.perf_counter_ns()  # the handler runs once the handshake's response is sent
        call: dict[str, int | str] = {}
        for _ in range(2):
            data = json.loads(await ws.recv())
            call[data["event"]] = time.perf_counter_ns() - opened
            if data["event"] == "start":
                call["encoding"] = data["start"]["mediaFormat"]["encoding"]
        self.calls.append(call)
        await ws.close()

    async def _serve(self) -> None:
        self._stop = self._loop.create_future()
        async with serve(self._handler, "127.0.0.1", 0) as server:
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            await self._stop

    def __enter__(self) -> "StampingAgent":
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(lambda: self._stop.done() or self._stop.set_result(None))
        self._thread.join(10)


@pytest.mark.e2e  # voxwatch in a subprocess, as a user runs it
def test_a_fresh_process_sends_connected_and_start_within_50_ms_of_the_handshake(tmp_path):
    with StampingAgent() as agent:
        run_cli("scenarios", "run", "clinic-desk", "--model", "agent/reference-twilio", "--turns", "1",
                env={"VOXWATCH_REGISTRY_FILES": str(REFERENCE),
                     url_variable("reference-twilio"): f"ws://127.0.0.1:{agent.port}/twilio"}, check=False)
    assert agent.calls, "voxwatch never called the agent"
    first = agent.calls[0]  # the process's first call: whatever is made on first use is made here
    assert set(first) == {"connected", "start", "encoding"} and first["encoding"] == "audio/x-mulaw"
    assert first["connected"] < first["start"]
    assert first["connected"] < ANSWERED_WITHIN_MS * 1_000_000, (
        f"connected came {first['connected'] / 1e6:.1f} ms after the handshake (every call: "
        f"{[round(c['connected'] / 1e6, 1) for c in agent.calls]} ms)")
    assert first["start"] < ANSWERED_WITHIN_MS * 1_000_000


def test_the_phone_lines_filter_is_scipys_firwin_designed_without_scipy():
    from scipy.signal import firwin

    from voxwatch.foundation.frame_rates import Halver, lowpass_fir

    assert np.allclose(Halver.FIR, firwin(Halver.TAPS, 3400, fs=16000), rtol=0, atol=1e-15)
    assert np.allclose(lowpass_fir(101, 2000, 8000), firwin(101, 2000, fs=8000), rtol=0, atol=1e-15)
    assert not Halver.FIR.flags.writeable  # shared by every line

