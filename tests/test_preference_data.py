"""The preference board's data (docs/PREFERENCE.md): prompt sets (the bundled one, synthesized and
labelled so; a malformed field named; import whole or not at all), the model configurations in
the registry (checked against each model's documented voices and thinking levels), the rubrics."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.processes import run_cli

from voxwatch.preference.prompt_catalog import BUNDLED, PromptCatalog, bundled_root, import_prompt_set
from voxwatch.preference.prompts import CONDITIONS, PromptSetError, load_prompt_set
from voxwatch.foundation.rubrics import GATED, RUBRICS, RatingError, asked, check_rating
from voxwatch.providers.registry import Registry, RegistryError

pytestmark = pytest.mark.e2e


def test_the_bundled_set_is_pinned_labelled_synthesized_and_spans_conditions():
    ps = PromptCatalog([bundled_root()]).load(BUNDLED)  # every audio file's sha256 checked
    assert ps.info.synthesized and "SYNTHESIZED" in ps.info.description and "SYNTHESIZED" in ps.info.label
    assert len(ps.prompts) == 12
    assert {p.condition for p in ps.prompts} == set(CONDITIONS)
    assert len({p.category for p in ps.prompts}) >= 4 and len({p.difficulty for p in ps.prompts}) >= 3
    assert all(p.reply for p in ps.prompts)  # the scripted baseline has something to say to each
    for p in ps.prompts:
        if p.condition != "clean":
            assert p.source in {q.id for q in ps.prompts} and p.transform["name"]


def copy_set(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    shutil.copytree(bundled_root() / BUNDLED, folder)
    info = json.loads((folder / "promptset.json").read_text())
    (folder / "promptset.json").write_text(json.dumps({**info, "name": "mine"}))
    return folder


def rewrite_first(folder: Path, **changes) -> None:
    lines = (folder / "prompts.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first.update(changes)
    first = {k: v for k, v in first.items() if v is not None}
    (folder / "prompts.jsonl").write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")


@pytest.mark.parametrize("changes, message", [
    ({"difficulty": "L9"}, "difficulty must be one of L1"),
    ({"condition": "underwater"}, "condition must be one of clean"),
    ({"tags": "needs_reasoning"}, "tags must be a list"),
    ({"sha256": "0" * 64}, "its sha256 does not match"),
    ({"sha256": "abc"}, "sha256 must be 64"),
    ({"audio": "../p01.wav"}, "without '..'"),
    ({"category": ""}, "category must be a non-empty string"),
    ({"text": None}, "text must be a non-empty string"),
    ({"colour": "red"}, "unknown field(s) ['colour']"),
])
def test_a_malformed_field_is_named_with_its_file_and_line(tmp_path, changes, message):
    folder = copy_set(tmp_path)
    rewrite_first(folder, **changes)
    with pytest.raises(PromptSetError) as err:
        load_prompt_set(folder)
    assert message in str(err.value) and "prompts.jsonl:1" in str(err.value)


def test_import_is_whole_or_nothing_and_idempotent(tmp_path):
    dest = tmp_path / "var"
    catalog = PromptCatalog([bundled_root(), dest])
    bad = copy_set(tmp_path)
    rewrite_first(bad, difficulty="L0")
    with pytest.raises(PromptSetError):
        import_prompt_set(bad, dest, catalog)
    assert not dest.exists() or not any(dest.iterdir())  # nothing half-imported
    good = copy_set(tmp_path / "again")
    done = import_prompt_set(good, dest, catalog)
    assert not done.unchanged and catalog.load("mine").pin == done.prompt_set.pin
    assert import_prompt_set(good, dest, catalog).unchanged
    rewrite_first(good, category="other")
    with pytest.raises(PromptSetError, match="a different prompt set 'mine'"):
        import_prompt_set(good, dest, catalog)


def test_prompts_list_says_the_bundled_set_is_synthesized():
    out = run_cli("preference", "prompts", "list").stdout
    assert BUNDLED in out and "SYNTHESIZED" in out


def test_registry_configurations_are_checked_against_the_documented_options():
    registry = Registry.default()
    configs = registry.preference_configs
    local = [c for c in configs if not registry.models[c.model].needs_key]
    assert len(local) >= 2 and len({c.voice for c in local}) >= 2
    assert any(c.model.startswith("openai/") for c in configs) and any(c.model.startswith("gemini/") for c in configs)
    for c in configs:
        options = registry.preference_options[c.model]
        assert c.voice in options.voices and c.thinking in options.thinking
        assert registry.models[c.model].board == "s2s"
    text = (Path(__file__).parents[1] / "voxwatch" / "providers" / "registry.toml").read_text()
    for bad, message in [('thinking = "none"\nvoice = "marin"', "voice 'nobody' is not one of"),
                         ('thinking = "high"\nvoice', "thinking 'ultra' is not one of")]:
        assert bad in text
        broken = text.replace(bad, bad.replace("marin", "nobody").replace("high", "ultra"), 1)
        with pytest.raises(RegistryError, match=message):
            Registry.from_toml(broken)
    with pytest.raises(RegistryError, match="not a registered model of the s2s board"):
        Registry.from_toml(text.replace('model = "openai/gpt-realtime-2"\nvoices',
                                        'model = "openai/whisper-1"\nvoices', 1))


def test_rubrics_twelve_three_gated_never_zeroed_out_of_their_gate():
    assert len(RUBRICS) == 12 and {r.gate for r in GATED} == {"needs_reasoning", "degraded", "multilingual"}
    assert [r.name for r in asked((), "clean")] == [r.name for r in RUBRICS if r.gate is None]
    assert {r.name for r in asked(("needs_reasoning",), "far-field")} >= {"reasoning", "noise_robustness"}
    check_rating("reasoning", 3, ("needs_reasoning",), "clean")
    for rubric, cmos, tags, condition in [("reasoning", 0, (), "clean"), ("overall", 4, (), "clean"),
                                          ("overall", True, (), "clean"), ("overall", 1.5, (), "clean"),
                                          ("loudness", 1, (), "clean")]:
        with pytest.raises(RatingError):
            check_rating(rubric, cmos, tags, condition)
