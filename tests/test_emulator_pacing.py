"""emulators/speech.py `paced`: a TTS reply's chunks on the scenario's schedule, its ledger records,
and the stream faults committed where every WebSocket TTS emulator commits them."""

import asyncio
import time

import pytest

from voxwatch.providers.emulators.faults import close
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.speech import paced


class _Socket:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.closed: int | None = None

    async def send(self, message: str) -> None:
        self.sent.append(message)

    async def close(self, code: int, reason: str = "") -> None:
        self.closed = code


class _Emulator:
    def __init__(self) -> None:
        self.ledger: list = []


def _run(scenario: TTSScenario, n: int = 5, first_speech: int = 2):
    emulator, ws = _Emulator(), _Socket()

    async def reply() -> list[tuple[int, int]]:
        arrived = time.perf_counter_ns()
        return [(i, time.perf_counter_ns() - arrived)
                async for i in paced(emulator, ws, scenario, "hi", n, first_speech, arrived, "{broken")]

    return asyncio.run(reply()), ws, {what: t for _, what, t in emulator.ledger}


def test_each_chunk_when_due_with_its_records():
    due, ws, records = _run(TTSScenario(ttfb_ms=30.0, send_every_ms=5.0))
    assert [i for i, _ in due] == [0, 1, 2, 3, 4] and ws.sent == []
    assert all(t >= (30 + 5 * i) * 1e6 for i, t in due)  # each when due, never early
    assert {"first_audio", "first_speech"} <= set(records)
    assert records["first_speech"] > records["first_audio"]


def test_malformed_goes_before_the_second_chunk():
    due, ws, _ = _run(TTSScenario(ttfb_ms=1.0, fault="malformed"))
    assert [i for i, _ in due] == [0, 1, 2, 3, 4] and ws.sent == ["{broken"]


@pytest.mark.parametrize("fault, code", [(close(1011), 1011), (close(4999), 4999)])
def test_a_close_ends_the_reply_at_the_third_chunk(fault, code):
    due, ws, _ = _run(TTSScenario(ttfb_ms=1.0, fault=fault))
    assert [i for i, _ in due] == [0, 1] and ws.closed == code
