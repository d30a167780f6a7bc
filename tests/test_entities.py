"""Entity accuracy (METHOD "Entity accuracy"): hand counts on tagged examples, and the manifests' tags."""

import json
from pathlib import Path

import pytest

from voxwatch.datasets.build_starter import retag
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.manifest import Clip, ManifestError, read_records
from voxwatch.datasets.starter_texts import STT_ENTITIES, STT_UTTERANCES
from voxwatch.metrics.entities import canonical_tokens, entity_errors


def _e(kind: str, text: str) -> dict:
    return {"type": kind, "text": text}


ORDER = [_e("number", "four five two seven one")]


@pytest.mark.parametrize("hypothesis, missed", [
    ("My order number is 4 5 2 7 1.", 0),  # the example: five WER errors, no entity missed
    ("My order number is four five two seven one.", 0),
    ("my order number is 45271", 0),
    ("My order number is 4 5 2 7 7.", 1),  # one wrong digit: the number is wrong
    ("My order number is 4 5 2 7.", 1),  # one digit short
    ("", 1),
])
def test_a_digit_sequence_is_found_however_it_is_written(hypothesis: str, missed: int):
    assert entity_errors(ORDER, hypothesis).missed == missed
    assert entity_errors(ORDER, hypothesis).total == 1


@pytest.mark.parametrize("hypothesis", ["it was $12.50", "twelve dollars fifty", "twelve fifty", "12.50 dollars"])
def test_an_amount_agrees_with_its_spoken_forms(hypothesis: str):
    assert entity_errors([_e("amount", "twelve dollars and fifty cents")], hypothesis).missed == 0


def test_amounts_ordinals_and_names_hand_counted():
    entities = [_e("amount", "forty five dollars and twenty cents"), _e("date", "fourteenth of March"),
                _e("name", "Maria Gonzalez"), _e("name", "S M I T H")]
    # $45.20 found; "March 14th" is the date; the name is missing; the spelled name found as one word
    assert entity_errors(entities, "I paid $45.20 on March 14th, I'm Maria Gonzales, Smith").missed == 1
    # all four missed: wrong cents, wrong day, no name, another name
    assert entity_errors(entities, "I paid $45.30 on March 15th, I'm Mary, Smyth").missed == 4
    # case and punctuation do not matter: all four found
    assert entity_errors(entities, "45 DOLLARS AND 20 CENTS. THE 14TH OF MARCH. MARIA GONZALEZ. S-M-I-T-H?").missed == 0


def test_canonical_tokens_join_digits_and_spelled_letters():
    assert canonical_tokens("4 5 2 7 1") == canonical_tokens("four five two seven one") == ["45271"]
    assert canonical_tokens("S M I T H") == ["smith"]
    assert canonical_tokens("$12.00") == canonical_tokens("twelve dollars") == ["12"]


def test_every_starter_entity_is_found_in_its_own_reference():
    texts = {u: t for u, _, t in STT_UTTERANCES}
    for uid, tagged in STT_ENTITIES.items():
        assert entity_errors([_e(k, s) for k, s in tagged], texts[uid]).missed == 0, uid


def test_the_bundled_manifests_carry_the_tags():
    catalog = Catalog([bundled_root()])
    for name in [n for n in catalog.names() if n.startswith("stt-starter-")]:
        clips = catalog.load(name, verify=False).clips
        tagged = {c.utterance_id: [(e["type"], e["text"]) for e in c.entities] for c in clips if c.entities}
        assert tagged == {u: list(t) for u, t in STT_ENTITIES.items()}, name


def test_retag_changes_only_the_tags(tmp_path: Path):
    root = tmp_path / "data"
    for folder in bundled_root().glob("stt-starter-*"):
        (root / folder.name).mkdir(parents=True)
        (root / folder.name / "manifest.jsonl").write_bytes((folder / "manifest.jsonl").read_bytes())
    assert retag(root) == 0  # the committed manifests are up to date
    path = root / "stt-starter-clean" / "manifest.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    del records[0]["entities"]
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    assert retag(root) == 1
    assert path.read_bytes() == (bundled_root() / "stt-starter-clean" / "manifest.jsonl").read_bytes()


@pytest.mark.parametrize("entities, message", [
    ([{"type": "number", "text": "12345"}], "is not a span of the reference text"),
    ([{"type": "colour", "text": "four"}], "type 'colour' is not one of"),
    ([{"type": "number"}], 'exactly "type" and "text"'),
    ({"type": "number", "text": "four"}, "expected a list"),
])
def test_a_bad_entity_is_refused_naming_the_line(tmp_path: Path, entities, message: str):
    record = {"id": "a", "utterance_id": "a", "text": "four five", "path": "clips/a.wav", "sha256": "0" * 64,
              "duration_s": 1.0, "sample_rate": 16000, "speech_start": 0.1, "speech_end": 0.9, "entities": entities}
    path = tmp_path / "manifest.jsonl"
    path.write_text("\n" + json.dumps(record) + "\n")
    with pytest.raises(ManifestError, match=message) as caught:
        read_records(path, Clip)
    assert f"{path}:2: entities" in str(caught.value)


@pytest.mark.parametrize("entity, hypothesis, missed", [
    (_e("id", "ORD-24589"), "order O R D 2 4 5 8 9 shipped", 0),  # its characters, "O" as zero
    (_e("id", "E-1047"), "error code E dash 1047", 0),
    (_e("id", "E-1047"), "the 1047", 1),  # "the" ends in e: characters count only within whole tokens
    (_e("id", "ORD-24589"), "your order 24,500 shipped", 1),
    (_e("phone", "(555) 123-4567"), "call 555 123 4567", 0),  # the area code counts though the normalizer drops asides
    (_e("phone", "555-123-4567"), "call 555 123 4576", 1),
    (_e("email", "jane.doe@example.com"), "jane dot doe at example dot com", 0),
    (_e("email", "jane.doe@example.com"), "jane doe at example dot org", 1),
    (_e("number", "48"), "within 24-48 hours", 0),  # a range is read "24 to 48"
    (_e("number", "25%"), "20 to 25 percent", 0),
    (_e("number", "12.4.1"), "version 12.4.1", 0),
    (_e("number", "12.4.1"), "version 12.41", 1),  # a version's dots count
])
def test_phones_ids_emails_ranges_and_versions_hand_counted(entity: dict, hypothesis: str, missed: int):
    assert entity_errors([entity], hypothesis).missed == missed
