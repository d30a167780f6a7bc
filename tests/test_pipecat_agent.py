"""A real bot framework as the agent: a Pipecat bot (tests/support/pipecat_bot.py: Pipecat's own
FastAPI WebSocket transport, Twilio Media Streams serializer and Silero VAD, no voxwatch code) holds
the bundled clinic-desk's first turns with voxwatch as its phone line (docs/CONVERSATIONS.md "A
Pipecat bot"). Pipecat runs in its own process on its own pinned environment (`make test` puts
it in .venv/pipecat-site: its pins conflict with voxwatch's), as a team's deployed bot does."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voxwatch.conversations.catalog import ScenarioCatalog, bundled_root
from voxwatch.conversations.hold import first_turns
from voxwatch.conversations.runner import run_conversation
from voxwatch.foundation.events import CLEARED
from voxwatch.foundation.persona import Persona
from voxwatch.providers.agents.line import url_variable
from voxwatch.providers.registry import Registry

pytestmark = pytest.mark.realtime

REPO = Path(__file__).resolve().parents[1]
BOT = REPO / "tests" / "support" / "pipecat_bot.py"
SITE_VARIABLE = "VOXWATCH_PIPECAT_SITE"  # where Pipecat is installed (default: the venv's pipecat-site, `make test`)
STARTUP_S = 180.0  # Pipecat's imports (numba, onnxruntime) on a busy 2-core machine
CLIP_S = 2.5  # the bot's reply: the first seconds of a bundled caller turn (speech, so its onset is audible)
ENTRY = """[[model]]
id = "agent/pipecat-bot"
description = "a Pipecat bot (tests/support/pipecat_bot.py): TwilioFrameSerializer, Silero VAD, a fixed reply"
board = "s2s"
vendor = "agent"
protocol = "s2s"
transport = "twilio-media-streams"
status = "active"
region = "local"
needs_key = false
exclusions = []
checked = 2026-12-07
source = "tests/support/pipecat_bot.py"
session_limit_unknown = "the bot keeps a call open as long as the caller stays"
"""


def _site() -> Path:
    site = Path(os.environ.get(SITE_VARIABLE) or Path(sys.prefix) / "pipecat-site")
    if not (site / "pipecat").is_dir():
        pytest.skip(f"Pipecat is not installed at {site}: `make test` puts it there (or set {SITE_VARIABLE})")
    return site


@pytest.fixture(scope="module")
def bot(tmp_path_factory):
    """The Pipecat bot on loopback, answering with a CLIP_S clip; yields its ws:// URL."""
    site = _site()
    folder = tmp_path_factory.mktemp("pipecat")
    pcm, rate = sf.read(str(bundled_root() / "clinic-desk" / "audio" / "t03.wav"), dtype="int16")
    sf.write(str(folder / "reply.wav"), pcm[: int(CLIP_S * rate)], rate, subtype="PCM_16")
    log = open(folder / "bot.log", "w")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VOXWATCH_", "TWILIO_"))}
    env["PYTHONPATH"] = str(site)  # Pipecat's environment only: nothing of voxwatch's on the agent side
    proc = subprocess.Popen([sys.executable, str(BOT), "--clip", str(folder / "reply.wav")], env=env,
                            stdout=subprocess.PIPE, stderr=log, text=True, cwd=folder)
    try:
        line = proc.stdout.readline()  # "listening <port>", once bound (the imports come first)
        assert line.startswith("listening "), f"the bot said {line!r}: {(folder / 'bot.log').read_text()[-2000:]}"
        port = int(line.split()[1])
        deadline = time.monotonic() + STARTUP_S
        while not _accepts(port):  # bound, then uvicorn starts serving
            assert proc.poll() is None and time.monotonic() < deadline, (folder / "bot.log").read_text()[-2000:]
            time.sleep(0.2)
        yield f"ws://127.0.0.1:{port}/ws", folder / "bot.log"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _accepts(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_pipecat_bot_holds_a_bundled_scenario_and_stops_at_its_clear_when_talked_over(bot, tmp_path, monkeypatch):
    """Two calls at once: the scenario's own caller, every turn answered with V2V measured; and a caller
    barging in 300 ms into each reply, which Pipecat's VAD hears, its pipeline interrupts and its
    serializer clears: the stop is the clear, the recording (which keeps the audio Pipecat streamed
    ahead of real time) hears it stop no earlier."""
    url, log = bot
    (tmp_path / "agents.toml").write_text(ENTRY)
    monkeypatch.setenv(url_variable("pipecat-bot"), url)
    registry = Registry.default(files=[tmp_path / "agents.toml"])
    model = registry.resolve("agent/pipecat-bot")
    loaded, whole = first_turns(ScenarioCatalog([bundled_root()]).load("clinic-desk"), 3)
    assert not whole

    async def calls():
        return await asyncio.gather(*(run_conversation(registry.create(model), model.id, model.vendor, loaded,
                                                       whole=False, persona=persona)
                                      for persona in (None, Persona("barger", barge_in_ms=300))))

    plain, barged = asyncio.run(calls())
    for run in (plain, barged):
        assert run.status == "ok", run.reason
        assert [t.status for t in run.turns] == ["ok"] * 3, ([t.reason for t in run.turns], log.read_text()[-2000:])
        for turn in run.turns:
            assert turn.timing is not None and turn.timing.v2v_ms is not None and turn.timing.v2v_ms > 0, turn.timing
            assert turn.timing.no_response is False
    assert [t.barge_in for t in barged.turns] == [False, True, True]
    for turn in barged.turns[1:]:
        t = turn.timing
        assert turn.timeline.of(CLEARED), "Pipecat's serializer sends `clear` on an interruption"
        assert t.barge_in_stop_ms is not None and t.barge_in_answered is True, t
        assert 0 < t.barge_in_stop_ms <= t.barge_in_stop_heard_ms < CLIP_S * 1000, t
    assert not any(turn.timeline.of(CLEARED) for turn in plain.turns)  # nobody talked over it
    assert np.isfinite([t.timing.v2v_ms for t in plain.turns]).all()
