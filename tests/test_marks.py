"""boards.marks, the one definition of what a line says beside its model (issue #40 part 3): a
baseline, preliminary figures, the registry's lifecycle status on its day, an emulated line, and a
conversation line judged on fewer dimensions than the others on its table."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from voxwatch.boards.marks import FIELDS, NOT_JUDGED, ROW_FIELDS, Marks, judged_dimensions, model_marks, not_judged
from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.metrics.conversation_aggregate import Rate
from voxwatch.providers.registry import Registry

DAY = dt.date(2026, 12, 15)
RETIRING = "openai/gpt-realtime-2025-08-28"  # shutdown 2027-01-20 in the package registry: 36 days after DAY
RETIRED = "cartesia/sonic-3.5"  # declared retired


def test_a_models_marks_are_the_registrys_on_its_day():
    registry = Registry.default(today=DAY, files=[])
    baseline = model_marks(registry, "local/cascade-scripted-baseline")
    assert baseline.baseline and baseline.status == "active" and baseline.notice is None
    retiring = model_marks(registry, RETIRING, "only 2 conversations so far")
    assert (retiring.status, retiring.notice) == ("active", "retiring 2027-01-20; successor openai/gpt-realtime-2.1")
    assert retiring.words == ("preliminary", "retiring 2027-01-20")
    assert model_marks(registry, RETIRED).retired and model_marks(registry, RETIRED).words == ("retired",)
    gone = model_marks(Registry.default(today=dt.date(2027, 1, 20), files=[]), RETIRING)
    assert gone.retired and gone.notice.startswith("retired 2027-01-20")  # on its shutdown day
    unknown = model_marks(registry, "acme/never-registered")
    assert (unknown.baseline, unknown.status, unknown.notice) == (False, None, None)
    assert model_marks(None, RETIRING) == Marks()  # no registry: nothing known of the model


def test_the_fields_every_reader_publishes():
    m = model_marks(Registry.default(today=DAY, files=[]), RETIRING, "few", not_judged=("tool_use_correct",))
    assert tuple(m.fields()) == FIELDS
    assert m.fields() == {"baseline": False, "preliminary": True, "preliminary_reason": "few", "status": "active",
                          "notice": "retiring 2027-01-20; successor openai/gpt-realtime-2.1"}
    assert m.fields(judged=True)[NOT_JUDGED] == ["tool_use_correct"]
    assert tuple(m.row_fields()) == ROW_FIELDS and list(m.row_fields().values()) == list(m.fields().values())
    assert Marks.of(m.fields(judged=True)) == m  # a page reading the API's line shows the same marks
    assert Marks.of({**m.fields(), "loopback": True}).emulated


def _rates(decided: dict[str, int]) -> dict[str, Rate]:
    return {d: Rate(1.0 if decided.get(d) else None, decided.get(d, 0), decided.get(d, 0), None) for d in DIMENSIONS}


def test_a_line_judged_on_fewer_dimensions_than_its_table_says_which():
    """The bake-off's reference agent was judged on turn-taking alone (its tool use has no verdict)
    beside vendors judged on tool use too: its 6/6 is not their 6/18."""
    judged = {"reference": judged_dimensions(_rates({"turn_taking": 6})),
              "vendor": judged_dimensions(_rates({"turn_taking": 6, "tool_use_correct": 6, "kb_grounding": 6})),
              "other": judged_dimensions(_rates({"turn_taking": 6, "tool_use_correct": 3}))}
    missing = not_judged(judged)
    assert missing == {"reference": ("tool_use_correct", "kb_grounding"), "vendor": (), "other": ("kb_grounding",)}
    words = model_marks(None, "agent/reference", not_judged=missing["reference"]).words
    assert words == ("judged on fewer dimensions: not on tool_use_correct, kb_grounding",)
    assert not_judged({"alone": frozenset({"turn_taking"})}) == {"alone": ()}  # alone on its table: nothing to compare


def test_decided_dimensions_are_the_dimensions_a_lines_rates_decided():
    """metrics.conversation_aggregate.decided_dimensions (the comparison page's count-only reading) names
    the dimensions whose rates have n > 0, as judged_dimensions(dimension_rates(...)) does."""
    from voxwatch.conversations.records import score_of
    from voxwatch.metrics.conversation_aggregate import decided_dimensions, dimension_rates

    from support.compare_seed import conversations

    by_model: dict[str, list] = {}
    for row, turns in conversations():
        by_model.setdefault(row.model_id, []).append(score_of(row, turns))
    first = sorted(by_model)[0]  # judged on turn-taking only, as a reference agent is
    by_model[first] = [replace(c, turns=[replace(t, verdicts={d: v for d, v in t.verdicts.items() if d == "turn_taking"})
                                         for t in c.turns]) for c in by_model[first]]
    found = {m: decided_dimensions(s) for m, s in by_model.items()}
    assert found == {m: judged_dimensions(dimension_rates(s)) for m, s in by_model.items()}
    assert found[first] == {"turn_taking"} and len(set(found.values())) > 1
