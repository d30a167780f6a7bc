"""A board whose charts are hard to draw (tests/test_web_charts.py): five streaming STT models within
257-301 ms and one at 1,400 ms, some priced and some not (so a chart of the priced ones alone would
number them apart from the table), one a baseline, one retiring, one measured at too few ticks.

The models are a made-up vendor's, registered by a user registry file (REGISTRY, written where the
test says and named by VOXWATCH_REGISTRY_FILES), so their prices, lifecycle and baseline are the
test's own and not the package registry's.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from voxwatch.foundation.observation import Observation
from voxwatch.metrics import METHOD_VERSION

NOW = time.time()
DAY = 86400.0
TODAY = "2026-12-15"
DATASET = ("stt-starter-clean", "clean", "en")
TICKS, CLIPS = 6, 8
MODELS = {  # id: (latency ms around, word error probability, ticks measured)
    "acme/stream-alpha": (257.0, 0.05, TICKS), "acme/stream-bravo": (266.0, 0.04, TICKS),
    "acme/stream-charlie": (275.0, 0.06, TICKS), "acme/stream-delta": (288.0, 0.05, TICKS),
    "acme/stream-echo-with-a-long-name-for-the-legend": (301.0, 0.03, 3),
    "acme/stream-slow": (1400.0, 0.02, TICKS)}
OUTLIER = "acme/stream-slow"
PRICED = {"acme/stream-bravo": 0.004, "acme/stream-delta": 0.006, OUTLIER: 0.002}
BASELINE = "acme/stream-charlie"
RETIRING = ("acme/stream-delta", "2027-01-20")
PRELIMINARY = "acme/stream-echo-with-a-long-name-for-the-legend"


def registry_text() -> str:
    """The user registry file that registers the models (a vendor of no dated snapshots)."""
    out = ['[[vendor]]\nname = "acme"\nsnapshots = "none"\nchecked = 2026-12-01\n'
           'source = "tests/support/chart_seed.py: a made-up vendor"\n']
    for model in MODELS:
        out.append(f'[[model]]\nid = "{model}"\nboard = "stt"\nvendor = "acme"\nprotocol = "stt-stream"\n'
                   'adapter = "voxwatch.providers.local.pocketsphinx_stt:PocketsphinxSTT"\nstatus = "active"\n'
                   'region = "us-east"\nneeds_key = true\nexclusions = []\nchecked = 2026-12-01\n'
                   'source = "tests/support/chart_seed.py"\n'
                   + ("baseline = true\n" if model == BASELINE else "")
                   + (f"shutdown = {RETIRING[1]}\n" if model == RETIRING[0] else "")
                   + (f'price_usd = {PRICED[model]}\nprice_unit = "audio_minute"\n'
                      'price_source = "tests/support/chart_seed.py"\nprice_checked = 2026-12-01\n'
                      if model in PRICED else ""))
    return "\n".join(out)


def write_registry(folder: Path) -> Path:
    path = folder / "acme-registry.toml"
    path.write_text(registry_text())
    return path


def rows() -> list[Observation]:
    """Every model's rows on one dataset: each tick's clips, the latency around its figure."""
    rng = np.random.default_rng(40)
    name, condition, language = DATASET
    out = []
    for model, (base, wer, ticks) in MODELS.items():
        for tick in range(ticks):
            for clip in range(CLIPS):
                words = int(rng.integers(8, 16))
                out.append(Observation(
                    run_id=f"run-{tick}", model_id=model, dataset=name, clip_id=f"clip{clip}", attempt=1,
                    board="stt", vendor="acme", protocol="stt-stream", region="us-east",
                    started_at=NOW - (0.5 + tick * 2.0 + clip * 0.001) * DAY, status="ok", condition=condition,
                    language=language, method_version=METHOD_VERSION,
                    ttfs_ms=max(1.0, base + 6.0 * rng.standard_normal()), ttfs_peer_ms=base - 100.0,
                    first_partial_ms=120.0 + 10.0 * rng.standard_normal(), connect_ms=float(rng.uniform(20, 60)),
                    substitutions=int(rng.binomial(words, wer)), deletions=0, insertions=0, ref_words=words))
    return out
