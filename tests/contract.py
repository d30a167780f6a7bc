"""Shared by the vendor contract tests: measure an adapter against its emulator, and what each
injected fault must become.

On this shared 2-core VM a process can be held off the CPU for a few milliseconds, sometimes
for several streams in a row, and the first stream through fresh code paths runs slower. So each
contract discards one warm-up stream, measures three, and holds their median to 5 ms and every
stream to 15 ms; the 1-2 ms accuracy targets are measured, with their full error distribution,
by benchmarks/clock_truth.py.
"""

from __future__ import annotations

import asyncio
import statistics

from voxwatch.observation import Observation
from voxwatch.providers.emulators.faults import RETRY_AFTER_S
from voxwatch.providers.keys import Secret
from voxwatch.providers.registry import Registry
from voxwatch.workers.measure import CLOCK_FIELDS, MeasureContext, measure_item

REGISTRY = Registry.default()
KEY = "emulator-key-0123456789"

# emulator fault -> the row status it must produce
EXPECTED_STATUS = {
    "unauthorized": "auth_error",
    "forbidden": "auth_error",
    "rate_limited": "rate_limited",
    "server_error": "server_error",
    "malformed": "malformed",
    "disconnect": "disconnected",
    "no_final": "timeout",
    "inaudible": "inaudible",
}


def within(values: list[float], truth: float, median_ms: float = 5.0, worst_ms: float = 15.0) -> bool:
    errors = [abs(v - truth) for v in values]
    return statistics.median(errors) <= median_ms and max(errors) <= worst_ms


def measure(model_id: str, dataset, item, **ctx) -> Observation:
    model = REGISTRY.resolve(model_id)
    adapter = REGISTRY.create(model)
    options = dict(run_id="r", seed=1, region="test", timeout_s=10, secrets=(Secret(KEY),), emulator=True)
    return asyncio.run(measure_item(model, adapter, dataset, item, MeasureContext(**{**options, **ctx})))


def measure_three(model_id: str, dataset, item, **ctx) -> list[Observation]:
    """One warm-up stream (discarded), then three measured ones."""
    return [measure(model_id, dataset, item, **ctx) for _ in range(4)][1:]


def assert_failure_row(row: Observation, fault: str) -> None:
    """The row an injected fault must give: its status, a reason, no clock, and never the key."""
    assert row.status == EXPECTED_STATUS[fault], (fault, row.status, row.reason)
    assert row.reason and KEY not in row.reason
    assert all(getattr(row, name) is None for name in CLOCK_FIELDS if name != "connect_ms" or fault in (
        "unauthorized", "forbidden", "rate_limited", "server_error"))
    if fault == "rate_limited":
        assert row.retry_after_s == RETRY_AFTER_S
    assert KEY not in repr(row)
