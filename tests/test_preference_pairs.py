"""Rating pairs (docs/PREFERENCE.md): a balanced incomplete design (every configuration meets every
other about equally often and is on every prompt), position balanced, seeded; gold pairs planted
with their expected answers and their broken audio pinned."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from voxwatch.foundation.audio import read_pcm16, write_wav
from voxwatch.foundation.integrity import file_sha256
from voxwatch.preference.design import assign, meetings
from voxwatch.preference.pairs import PairSettings, PairsError, plan_pairs
from voxwatch.store.preference_rows import GOLD_BROKEN, GOLD_IDENTICAL, OutputRow


@pytest.mark.parametrize("configs, per_prompt, prompts", [(10, 5, 12), (19, 10, 24), (4, 2, 12), (5, 3, 12)])
def test_every_configuration_meets_every_other_about_equally_and_is_on_every_prompt(configs, per_prompt, prompts):
    names = [f"c{i:02d}" for i in range(configs)]
    available = {f"p{j:02d}": names for j in range(prompts)}
    planned = assign(available, per_prompt, seed=3)
    assert len(planned) == prompts * per_prompt
    met = meetings(planned)
    counts = [met[pair] for pair in itertools.combinations(names, 2)]
    assert min(counts) >= 1 and max(counts) - min(counts) <= 2  # roughly equal rates
    if prompts * per_prompt >= len(counts):
        assert min(counts) >= (prompts * per_prompt) // len(counts) - 1
    for prompt in available:
        on = {c for p in planned if p.prompt_id == prompt for c in (p.config_a, p.config_b)}
        assert on == set(names)  # each configuration on every prompt
    as_a = Counter(p.config_a for p in planned)
    first = Counter(p.config_a if p.shown_first == "a" else p.config_b for p in planned)
    assert max(as_a.values()) - min(as_a.values()) <= 2 and max(first.values()) - min(first.values()) <= 2
    assert assign(available, per_prompt, seed=3) == planned  # seeded: reproducible
    assert assign(available, per_prompt, seed=4) != planned


def outputs_on_disk(tmp_path, configs=4, prompts=6) -> list[OutputRow]:
    rows, n = [], 0
    for j in range(prompts):
        for i in range(configs):
            n += 1
            relative = f"set/c{i}/p{j}.wav"
            write_wav(tmp_path / relative, 0.1 * np.sin(np.arange(8000) * (i + 1) / 10.0), 16000)
            rows.append(OutputRow(n, "set", f"p{j}", f"c{i}", f"m{i}", "none", "v", "ok", "", 0.0, relative,
                                  file_sha256(tmp_path / relative), 0.5))
    rows.append(OutputRow(n + 1, "set", "p0", "c9", "m9", "none", "v", "timeout", "no reply", 0.0))  # never paired
    return rows


def test_gold_pairs_are_planted_with_their_expected_answers(tmp_path):
    outputs = outputs_on_disk(tmp_path)
    rows = plan_pairs(outputs, PairSettings(per_prompt=2, gold_share=0.25, seed=1), tmp_path, now=1.0)
    regular = [r for r in rows if not r.gold]
    gold = [r for r in rows if r.gold]
    assert len(regular) == 12 and len(gold) == 4  # a quarter of all pairs
    assert "c9" not in {c for r in rows for c in (r.config_a, r.config_b)}  # a failed output is never rated
    identical = [r for r in gold if r.gold == GOLD_IDENTICAL]
    broken = [r for r in gold if r.gold == GOLD_BROKEN]
    assert identical and broken
    for r in identical:
        assert r.output_a == r.output_b and r.config_a == r.config_b and r.expected_cmos == 0
    kinds = set()
    for r in broken:
        assert r.expected_cmos == (3 if r.broken_side == "b" else -3) and r.config_a != r.config_b
        path = tmp_path / r.broken_audio_path
        assert file_sha256(path) == r.broken_audio_sha256
        pcm, _ = read_pcm16(path)
        replaced = next(o for o in outputs if o.output_id == (r.output_a if r.broken_side == "a" else r.output_b))
        assert pcm.size == read_pcm16(tmp_path / replaced.audio_path)[0].size  # the same length as what it replaces
        kinds.add("silence" if not pcm.any() else "clipped-noise")
        if pcm.any():
            assert np.mean(np.abs(pcm) >= 0.89 * 32767) > 0.3  # hard-clipped
    assert kinds == {"silence", "clipped-noise"}
    again = plan_pairs(outputs, PairSettings(per_prompt=2, gold_share=0.25, seed=1), tmp_path, now=1.0)
    assert [(r.prompt_id, r.config_a, r.config_b, r.shown_first, r.gold) for r in again] == \
        [(r.prompt_id, r.config_a, r.config_b, r.shown_first, r.gold) for r in rows]
    with pytest.raises(PairsError):
        plan_pairs(outputs, PairSettings(per_prompt=2, gold_share=1.0, seed=1), tmp_path)
