"""`voxwatch preference pairs`: the rating pairs of a prompt set's stored outputs, gold ones planted.

The design (design.py) pairs the ok outputs of each prompt. A share of gold pairs is added to flag
careless raters (ITU-T P.808's gold questions): `identical` shows one output on both sides (the
right answer is 0), `broken` replaces one side of a pair with clearly broken audio of the same
length, silence or hard-clipped noise, written under outputs_dir/gold/ (the right answer: the
other side much better, +-3). A gold pair is recorded as gold with its expected CMOS, and a
rating page cannot tell it from another. Seeded: the same outputs and seed give the same pairs;
a design already stored is refused rather than stored twice.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxwatch.foundation.audio import read_pcm16, write_wav
from voxwatch.datasets.manifest import file_stem
from voxwatch.foundation.integrity import file_sha256

from voxwatch.preference.design import Planned, assign
from voxwatch.preference.generate import resolve_audio
from voxwatch.store.preference_rows import GOLD_BROKEN, GOLD_IDENTICAL, OutputRow, PairRow
from voxwatch.foundation.rubrics import CMOS_MAX

BROKEN_KINDS = ("silence", "clipped-noise")


class PairsError(ValueError):
    pass


@dataclass(frozen=True)
class PairSettings:
    per_prompt: int
    gold_share: float
    seed: int

    def design(self, prompt_set: str) -> str:
        return f"{prompt_set}:seed{self.seed}:n{self.per_prompt}:gold{self.gold_share:g}"


def broken_audio(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Clearly broken audio of n samples: silence, or white noise driven into hard clipping."""
    if kind == "silence":
        return np.zeros(n)
    return np.clip(rng.standard_normal(n) * 2.0, -1.0, 1.0) * 0.9


def _available(outputs: list[OutputRow]) -> dict[str, dict[str, OutputRow]]:
    by_prompt: dict[str, dict[str, OutputRow]] = defaultdict(dict)
    for o in outputs:
        if o.status == "ok" and o.audio_path:
            by_prompt[o.prompt_id][o.config_id] = o
    return by_prompt


def plan_pairs(outputs: list[OutputRow], settings: PairSettings, outputs_dir: Path, now: float | None = None) -> list[PairRow]:
    """The design's pairs and its gold pairs (broken audio written under outputs_dir), in shown order."""
    if settings.per_prompt < 1 or not 0 <= settings.gold_share < 1:
        raise PairsError("--per-prompt must be at least 1 and --gold-share in [0, 1)")
    if not outputs:
        raise PairsError("no outputs stored for this prompt set; run `voxwatch preference generate` first")
    by_prompt = _available(outputs)
    prompt_set = outputs[0].prompt_set
    design = settings.design(prompt_set)
    now = time.time() if now is None else now
    planned = assign({p: sorted(c) for p, c in by_prompt.items() if len(c) >= 2}, settings.per_prompt, settings.seed)
    if not planned:
        raise PairsError("no prompt has ok outputs of two configurations to compare")
    rows = [_pair(design, prompt_set, p, by_prompt[p.prompt_id], now) for p in planned]
    rng = random.Random(settings.seed)
    gold = round(settings.gold_share * len(rows) / (1 - settings.gold_share))
    for i in range(gold):
        base = rows[rng.randrange(len(planned))]
        if i % 2 == 0:
            chosen = by_prompt[base.prompt_id][rng.choice([base.config_a, base.config_b])]
            rows.append(PairRow(None, design, prompt_set, base.prompt_id, chosen.output_id, chosen.output_id,
                                chosen.config_id, chosen.config_id, rng.choice("ab"), now, GOLD_IDENTICAL, 0))
            continue
        side = rng.choice("ab")
        replaced = by_prompt[base.prompt_id][base.config_a if side == "a" else base.config_b]
        kind = BROKEN_KINDS[(i // 2) % len(BROKEN_KINDS)]
        relative = f"gold/{file_stem(design)}/{i:04d}-{kind}.wav"
        pcm, rate = read_pcm16(resolve_audio(outputs_dir, replaced.audio_path))
        write_wav(outputs_dir / relative, broken_audio(kind, pcm.size, np.random.default_rng(settings.seed * 7919 + i)), rate)
        rows.append(PairRow(None, design, prompt_set, base.prompt_id, base.output_a, base.output_b, base.config_a,
                            base.config_b, rng.choice("ab"), now, GOLD_BROKEN, CMOS_MAX if side == "b" else -CMOS_MAX,
                            side, relative, file_sha256(outputs_dir / relative)))
    order = list(range(len(rows)))
    rng.shuffle(order)  # gold pairs are not all at the end
    return [rows[i] for i in order]


def _pair(design: str, prompt_set: str, p: Planned, outputs: dict[str, OutputRow], now: float) -> PairRow:
    return PairRow(None, design, prompt_set, p.prompt_id, outputs[p.config_a].output_id, outputs[p.config_b].output_id,
                   p.config_a, p.config_b, p.shown_first, now)


def make_pairs(store, prompt_set: str, settings: PairSettings, outputs_dir: Path) -> list[PairRow]:
    """Plan the pairs of a prompt set's stored outputs and store them (refused when the design exists)."""
    design = settings.design(prompt_set)
    existing = store.preference_pairs(design)
    if existing:
        raise PairsError(f"design {design} is already stored ({len(existing)} pairs); choose another --seed")
    rows = plan_pairs(store.preference_outputs(prompt_set), settings, outputs_dir)
    for row, pair_id in zip(rows, store.add_pairs(rows)):
        row.pair_id = pair_id
    return rows
