"""benchmarks/clock_truth.py at its smallest over one vendor of each protocol shape issue 42 brought
(gRPC, an AWS event stream on HTTP/2, server-sent events, an HTTP POST then a WebSocket): each emulator
serves the rig's scenario (its per-stream anchors keyed by the first chunk, its jitter) and records
its sends in the ledger, so every metric has rows compared with what was sent. The figures' precision
is the benchmark's business on an idle machine; here only what a wrong key or anchor would break."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHAPES = {"google": ("first_partial_ms", "ttfs_ms"), "bedrock": ("v2v_ms",),
          "minimax": ("ttfa_ms", "ttfb_ms", "ttfa_gaming_ms"), "gladia": ("first_partial_ms", "ttfs_ms")}
ANCHOR_MS = 100.0  # vs injected, p50: the emulator's lateness on a busy machine; a stream that missed its
# anchors (keyed by its first chunk) is off by the clip's speech start or end, 0.3 s and more


@pytest.mark.e2e
def test_each_new_protocol_shape_is_calibrated_against_its_sends():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.clock_truth", "--vendors", ",".join(SHAPES),
                           "--streams", "3", "--levels", "1"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    results, stalled = out["results"]["1"], out["stalled"]["1"]
    for vendor, metrics in SHAPES.items():
        published = stalled[vendor]["rows"] - stalled[vendor]["excluded"]
        assert published > 0, (vendor, stalled[vendor])
        for metric in metrics:  # a stream whose sends the ledger lacks would have failed the run (KeyError)
            s = results[f"{vendor}/{metric}"]
            assert s["n"] > 0 and s["vs_injected"]["p50_ms"] < ANCHOR_MS, (vendor, metric, s)
