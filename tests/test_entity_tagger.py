"""The entity tagger (METHOD "Entity accuracy", "Tagging"): each rule's positive and negative cases,
determinism, agreement with the starter's hand tags and with a hand count of Coval's 30 TTS prompts,
the bundled tts-coval-v1's tags, and imports that get tags and an entity error rate."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from voxwatch.datasets.build_coval import HAND_TAGS, NAME as COVAL
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.entity_tags import NOTE_KEY, TagCount, filled
from voxwatch.datasets.manifest import Clip, read_records
from voxwatch.datasets.provenance import lookup
from voxwatch.datasets.starter_texts import STT_ENTITIES, STT_UTTERANCES
from voxwatch.metrics.entities import ENTITY_TYPES, entity_errors
from voxwatch.metrics.entity_tagger import RULES, TAGGER_ID, tag
from voxwatch.metrics.series import entity_error_rate

TAGGED_TYPES = {r.type for r in RULES}
"""What the tagger finds: every entity type but names and addresses."""


@pytest.mark.parametrize("text, found", [
    # email
    ("Write to jane.doe+bills@example.co.uk today.", [("email", "jane.doe+bills@example.co.uk")]),
    ("Send it at 5 @ home.", [("number", "5")]),
    # id: upper-case letters and digits, hyphens between
    ("Order #ORD-24589 via 1Z999AA1234567890.", [("id", "ORD-24589"), ("id", "1Z999AA1234567890")]),
    ("The Wi-Fi, a UPS box, the 50-person team.", [("number", "50")]),
    # phone
    ("Call (555) 123-4567 or +1 555.123.4567.", [("phone", "(555) 123-4567"), ("phone", "+1 555.123.4567")]),
    ("Within 24-48 hours, code 123-4567.", [("number", "24"), ("number", "48"), ("number", "123"), ("number", "4567")]),
    # amount
    ("A $1,247.50 transfer, then $149 and 20 dollars.", [("amount", "$1,247.50"), ("amount", "$149"),
                                                         ("amount", "20 dollars")]),
    ("I was charged forty five dollars and twenty cents.", [("amount", "forty five dollars and twenty cents")]),
    ("Twelve people paid.", []),
    # time
    ("Between 2:30 PM and 4:45 p.m., or 9 AM.", [("time", "2:30 PM"), ("time", "4:45 p.m."), ("time", "9 AM")]),
    ("At half past ten or five this evening, noon and two.", [("time", "half past ten"),
                                                              ("time", "five this evening"),
                                                              ("time", "noon"), ("time", "two")]),
    ("Friday morning at nine?", [("date", "Friday"), ("time", "nine")]),
    ("At one point we had two of them.", []),
    # date
    ("Tuesday, March 5th, then December 20th through 24th.", [("date", "Tuesday, March 5th"),
                                                              ("date", "December 20th"), ("date", "24th")]),
    ("Monday the second, the fourteenth of March, on the twenty first.", [
        ("date", "Monday the second"), ("date", "fourteenth of March"), ("date", "twenty first")]),
    ("Paid 12/03/2026, due 2026-12-31.", [("date", "12/03/2026"), ("date", "2026-12-31")]),
    ("May I help? It was the first time this month, tomorrow maybe.", []),
    # numbers
    ("Update 12.4.1, 250 MB, 87% and 8 minutes.", [("number", "12.4.1"), ("number", "250"), ("number", "87%"),
                                                    ("number", "8")]),
    ("My order number is four five two seven one.", [("number", "four five two seven one")]),
    ("The last four digits, twenty minutes.", []),
])
def test_each_rule_finds_its_entities_and_no_other(text: str, found: list[tuple[str, str]]):
    assert [(t.type, t.text) for t in tag(text)] == found
    assert all(text[t.start:t.end] == t.text for t in tag(text))


def test_the_tagger_is_deterministic_and_every_type_is_one_a_manifest_takes():
    texts = [t for _u, _c, t in STT_UTTERANCES] + [p.text for p in _coval().prompts]
    first = [tag(t) for t in texts]
    assert [tag(t) for t in reversed(texts)][::-1] == first  # a text's tags depend on it alone
    assert TAGGED_TYPES <= set(ENTITY_TYPES) and TAGGED_TYPES.isdisjoint({"name", "address"})
    assert TAGGER_ID.startswith("voxwatch.metrics.entity_tagger ")


def agreement(hand: list[tuple[str, str, str]], texts: dict[str, str]) -> tuple[list, list, int]:
    """(hand tags the tagger missed, tagger tags not hand-tagged, tags agreed): a tagger span agrees
    with a hand span of its type that it overlaps, each hand span used once."""
    missed, agreed = list(hand), 0
    extra = []
    for item, text in texts.items():
        for t in tag(text):
            match = next((h for h in missed if h[0] == item and h[1] == t.type and _overlap(text, h[2], t)), None)
            if match is None:
                extra.append((item, t.type, t.text))
            else:
                missed.remove(match)
                agreed += 1
    return missed, extra, agreed


def _overlap(text: str, span: str, t) -> bool:
    start = text.index(span)
    return start < t.end and t.start < start + len(span)


def test_the_starters_hand_tags_agree():
    """The 64 starter utterances' hand tags (32 of the tagger's types, 16 names and addresses)."""
    texts = {u: text for u, _c, text in STT_UTTERANCES}
    hand = [(u, kind, span) for u, tags in STT_ENTITIES.items() for kind, span in tags if kind in TAGGED_TYPES]
    missed, extra, agreed = agreement(hand, texts)
    precision, recall = agreed / (agreed + len(extra)), agreed / len(hand)
    assert (agreed, len(hand)) == (31, 32) and precision == 1.0 and recall >= 0.95
    assert missed == [("u015", "date", "tomorrow")]  # relative days are not tagged (METHOD "Tagging")


COVAL_HAND_COUNT: dict[str, list[tuple[str, str]]] = {
    "A1": [("id", "ORD-24589"), ("id", "1Z999AA1234567890"), ("time", "2:30 PM"), ("time", "4:45 PM")],
    "A2": [("amount", "$347.89"), ("date", "Friday")],
    "A3": [("number", "24"), ("number", "48")],
    "A4": [("name", "Garcia"), ("name", "Peterson"), ("date", "Tuesday, March 5th"), ("time", "10:30 AM")],
    "A5": [("time", "11:15 AM"), ("date", "Wednesday"), ("time", "2:45 PM"), ("date", "Thursday")],
    "A6": [("number", "10")],
    "A7": [("number", "30")],
    "A8": [("number", "12.4.1"), ("number", "250"), ("number", "8")],
    "A9": [("id", "E-1047")],
    "A10": [("number", "4"), ("number", "8429")],
    "A11": [],
    "A12": [("number", "2"), ("address", "Chicago"), ("address", "Illinois"), ("time", "11:30 PM")],
    "A13": [("name", "David"), ("number", "5"), ("amount", "$29.99")],
    "A14": [("number", "30%"), ("date", "Sunday")],
    "A15": [("date", "January 15th")],
    "A16": [("amount", "$187.50")],
    "A17": [("amount", "$24.99"), ("date", "January 22nd")],
    "A18": [("amount", "$67.50")],
    "A19": [("number", "20"), ("number", "25%")],
    "A20": [("number", "50"), ("amount", "$149")],
    "A21": [("number", "20%"), ("amount", "$359.88")],
    "A22": [("number", "1"), ("number", "10")],
    "A23": [],
    "A24": [("name", "Martinez"), ("number", "48")],
    "A25": [("date", "December 20th"), ("date", "24th"), ("number", "3")],
    "A26": [("number", "24")],
    "A27": [("name", "Lisa Chen")],
    "A28": [("amount", "$1,247.50"), ("number", "5691"), ("time", "2:15 PM")],
    "A29": [("name", "O'Connor"), ("number", "20"), ("time", "9 AM"), ("time", "noon")],
    "A30": [("number", "87%"), ("time", "3:42 AM")],
}
"""Every entity of Coval's 30 prompts, counted by reading them (relative days, "tomorrow", are not
entities, as in the starter's tags): 62, of which 8 names and places."""


def _coval():
    return Catalog([bundled_root()]).load(COVAL)


def test_the_tagger_agrees_with_a_hand_count_of_covals_prompts():
    texts = {p.id: p.text for p in _coval().prompts}
    assert set(texts) == set(COVAL_HAND_COUNT)
    hand = [(i, kind, span) for i, tags in COVAL_HAND_COUNT.items() for kind, span in tags]
    missed, extra, agreed = agreement(hand, texts)
    assert (len(hand), agreed, extra) == (62, 54, [])  # precision 1.0
    assert all(kind in {"name", "address"} for _i, kind, _s in missed)  # recall 1.0 on the tagger's types
    for i, text in texts.items():  # the same spans, not only overlapping ones
        assert [(t.type, t.text) for t in tag(text)] == [e for e in COVAL_HAND_COUNT[i] if e[0] in TAGGED_TYPES]


def test_the_bundled_coval_set_carries_the_hand_count_and_says_who_tagged():
    ds = _coval()
    assert {p.id: Counter((e["type"], e["text"]) for e in p.entities or ()) for p in ds.prompts} == {
        i: Counter(tags) for i, tags in COVAL_HAND_COUNT.items()}
    note = ds.info.extra[NOTE_KEY]
    assert note == {"tagger": TAGGER_ID, "items_tagged_by_tagger": 27, "items_tagged_by_hand": len(HAND_TAGS)}
    source = ds.info.extra["source"]
    assert source["license"] == "Apache-2.0" and source["repository"].endswith("coval-ai/benchmarks")
    assert "Apache License" in (ds.folder / "NOTICE").read_text()
    told = lookup(Catalog([bundled_root()]), COVAL).text  # what a board's "about the data" says
    assert told.endswith(f"entity tags: 27 items by {TAGGER_ID}, {len(HAND_TAGS)} by hand")


ESPEAK_WHISPER_TINY = {
    'A1': 'Your order has sure the 24,500 ADI ship to my UPS tracking 1,500 ADI, 800,500, 34,500, 67,800 ADI and will arrive between 230 PM and 445 PM tomorrow.',
    'A2': "There's a site delay with your $347.8i order, but we expect it to ship by Friday afternoon.",
    'A3': 'Order status update. Your items are out in quality check and should ship within 24-48 hours.',
    'A4': 'Hi MS, Garcia, your appointment with Dr. Beakerson is scheduled for Tuesday, March 5th at 10.30am.',
    'A5': 'I can rescue you to 1150 m on Wednesday, or let me check, 245 m on Thursday.',
    'A6': 'Please arrive 10 minutes early and bring your insurance card and the photo ID.',
    'A7': "Let's fix your Wi-Fi and plug your router for a 10-30 seconds. And wait for the green light.",
    'A8': 'Your device is now loading up Net version 12.41, about 250 MB remaining, roughly 8 minutes left.',
    'A9': "I'm seeing every code in 1,047 here, which usually means actually let me guide you from the solution.",
    'A10': 'For security, please confirm the last four digits of the Card Ending in 8,429 news for your recent purchase.',
    'A11': 'I need to verify your account. Well, suddenly I decode with him on file. Please take your time.',
    'A12': 'We detected two unusual login attempts from Chicago, Illinois yesterday around 11 30 pm.',
    'A13': 'Hi David, your premium subscription will be in 5 days at $20.99. What you like to continue our next Lorerunner option.',
    'A14': 'Based on your purchase history, you might like our flash sale 30% off electronic through Sunday.',
    'A15': "I know this you haven't logged in since January 15th, is there anything we can help you with?",
    'A16': 'your invoice shows a balance of $1.87.50, including the monthly fee plus tax.',
    'A17': 'The Nautler 24.9 charges for the premium support package activated on January 22nd.',
    'A18': 'Your log of payment $67.50 failed due to an expired card. Would you like to update your payment method?',
    'A19': 'Thanks for your interest in our software. Company your size typically see 20-nashed 25% efficiency gains.',
    'A20': "For a 50% team, I'd recommend our business plan at $149 per month rather than basic.",
    'A21': "Great timing. We're offering 20% off annual plans. At same, you'll not look $359.88 for the first year.",
    'A22': 'On a scale of 1 to 10, how would you rate your current gain level?',
    'A23': 'Have you taken any medications today? Please include prescription drugs and overcome the counter-items.',
    'A24': "your symptoms sound manageable, but I'd recommend seeing Dr. Martinez within 48 hours to be saved.",
    'A25': 'The O-R-P-T-O request for December 20th through 24th has been approved at three business days.',
    'A26': 'Password reset complete your temporary password was sent to your email. Please change it within 24 hours.',
    'A27': 'I teach it about your printer issue has been assigned to technician Lisa Chen.',
    'A28': 'Your wire transfer another 1,247.50 to account 10,500,691 was processed at 2.15 pm.',
    'A29': "Hi Mr. O'Connor, I'm calling him out to your consultation. Are you available for 20 minutes that we high-end him and do?",
    'A30': 'System alert, your server usage did 87% at 3.42 am, but it smacked a normal level now.',
}
"""What Whisper tiny.en (faster-whisper 1.2.1, the TTS instrument) heard of eSpeak NG en-us reading
each prompt (`voxwatch run --board tts --datasets tts-coval-v1 --models espeak-ng/en-us@1.52.0`)."""

HEARD_WRONG = {
    "A1": ["ORD-24589", "1Z999AA1234567890"], "A2": ["$347.89"], "A4": ["Peterson"], "A5": ["11:15 AM", "2:45 PM"],
    "A8": ["12.4.1"], "A9": ["E-1047"], "A13": ["$29.99"], "A16": ["$187.50"], "A17": ["$24.99"], "A28": ["5691"],
    "A29": ["9 AM", "noon"],
}
"""The entities each transcript got wrong, counted by reading it beside its prompt ("1150 m" is not
11:15 AM; "12.41" is not version 12.4.1; "the 24,500 ADI" is not ORD-24589)."""


def test_covals_entity_error_rate_is_the_hand_count():
    prompts = {p.id: p for p in _coval().prompts}
    missed, total = [], []
    for i, heard in ESPEAK_WHISPER_TINY.items():
        entities = prompts[i].entities or ()
        counted = entity_errors(entities, heard)
        assert counted.missed == len(HEARD_WRONG.get(i, [])), (i, heard)
        missed.append(counted.missed)
        total.append(counted.total)
    assert (sum(missed), sum(total)) == (14, 62)
    assert entity_error_rate(missed, total) == sum(len(v) for v in HEARD_WRONG.values()) / 62


@pytest.fixture
def vox(cli, tmp_path: Path):
    env = {"VOXWATCH_DATASETS_DIR": str(tmp_path / "catalog")}
    return lambda *argv: cli(*argv, env=env)


def test_imported_prompts_get_tags_and_an_entity_error_rate(vox, tmp_path: Path):
    prompts = ["Your order ORD-7731 ships Friday.", "It costs $12.50 at 3:15 PM.", "Thank you for calling.",
               "Call 555-201-9876 by March 3rd.", "Reply to help@example.com within 24 hours.",
               "Your code is E-42 and your balance $7."]
    (tmp_path / "mine.txt").write_text("\n".join(prompts) + "\n")
    code, out, err = vox("datasets", "import-text", str(tmp_path / "mine.txt"), "--name", "mine")
    assert code == 0, err
    assert "entities: 10 in 5 prompts" in out
    ds = Catalog([tmp_path / "catalog"]).load("mine")
    assert [len(p.entities or ()) for p in ds.prompts] == [2, 2, 0, 2, 2, 2]
    assert ds.info.extra[NOTE_KEY] == {"tagger": TAGGER_ID, "items_tagged_by_tagger": 5, "items_tagged_by_hand": 0}
    heard = {ds.prompts[0].id: "your order O R D 7 7 3 1 ships friday", ds.prompts[1].id: "it costs 12.50 at 3.15 pm",
             ds.prompts[3].id: "call 555 201 9876 by march 3", ds.prompts[4].id: "reply to help at example dot com within 24",
             ds.prompts[5].id: "your code is e 40 and your balance $7"}  # "hours" dropped costs nothing; E-42 is wrong
    counted = [entity_errors(p.entities, heard[p.id]) for p in ds.prompts if p.entities]
    assert entity_error_rate([c.missed for c in counted], [c.total for c in counted]) == 1 / 10


def test_hand_tags_win_over_the_tagger(vox, tmp_path: Path):
    lines = [{"id": "a", "text": "Order 4527 is late.", "entities": [{"type": "id", "text": "4527"}]},
             {"id": "b", "text": "Call at 9 AM.", "entities": []},  # its author says: none
             {"id": "c", "text": "Call at 9 AM."}]
    (tmp_path / "mine.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert vox("datasets", "import-text", str(tmp_path / "mine.jsonl"), "--name", "mine")[0] == 0
    ds = Catalog([tmp_path / "catalog"]).load("mine")
    assert [p.entities for p in ds.prompts] == [({"type": "id", "text": "4527"},), (),
                                                ({"type": "time", "text": "9 AM"},)]
    assert ds.info.extra[NOTE_KEY]["items_tagged_by_hand"] == 1


def test_imported_audio_gets_tags_where_its_manifest_has_none(vox, tmp_path: Path):
    starter = bundled_root() / "stt-starter-clean"
    clips = {c.id: c for c in read_records(starter / "manifest.jsonl", Clip)}
    source = tmp_path / "mine"
    source.mkdir()
    lines = [{"id": "u001", "path": "u001.wav", "text": clips["u001"].text},  # untagged: the tagger's
             {"id": "u031", "path": "u031.wav", "text": clips["u031"].text, "entities": []}]  # hand: none
    for line in lines:
        shutil.copyfile(starter / clips[line["id"]].path, source / line["path"])
    (source / "manifest.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, err = vox("datasets", "import", str(source), "--name", "mine")
    assert code == 0 and "entities: 1 in 1 clips" in out, err
    ds = Catalog([tmp_path / "catalog"]).load("mine")
    assert [c.entities for c in ds.clips] == [({"type": "number", "text": "four five two seven one"},), ()]
    assert ds.info.extra[NOTE_KEY]["items_tagged_by_tagger"] == 1


def test_a_long_run_of_number_words_is_read_once():
    """A prompt of the longest kind made of spelled numbers: each word is matched one way only (a
    pattern that could split "twenty one" two ways took 9 s at 220 characters, doubling per word)."""
    text = ("twenty one " * 181).strip()  # 2,000 characters, MAX_PROMPT_CHARS
    assert tag(text) == [] and [t.text for t in tag(text + " dollars")] == [text + " dollars"]


def test_only_english_items_get_the_taggers_tags():
    """Its spelled-number, month and weekday rules are English: another language's items keep their own."""
    count = TagCount()
    assert filled(None, "Su pedido 4527 llega el martes.", "es", count) is None
    assert filled(None, "Your order 4527 arrives Tuesday.", "en-GB", count) == (
        {"type": "number", "text": "4527"}, {"type": "date", "text": "Tuesday"})
    assert (count.tagger, count.hand) == (1, 0)
