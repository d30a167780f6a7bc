"""Your own data, fully: a family built from your recordings (--degrade, recorded conditions paired by
utterance), per-clip metadata carried to the stored rows, and text-only prompts for the TTS board.

Imports run in-process (`voxwatch.cli.main`, the installed command's parser and handlers) on real
speech: the bundled starter clips, which the VAD finds speech in. Runs are real subprocesses on the
local engines, kept to two clips."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from support.processes import run_cli
from voxwatch.datasets import degrade
from voxwatch.foundation.audio import read_pcm16, to_pcm16
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.manifest import Clip, read_records
from voxwatch.datasets.text_import import MAX_PROMPT_CHARS, text_id

STARTER = bundled_root() / "stt-starter-clean"
NOISY = bundled_root() / "stt-starter-noise"  # the same utterances, heard in noise: a "car" recording
PS = "pocketsphinx/en-us@5.1.1"
ESPEAK = "espeak-ng/en-us@1.52.0"


def _starter(uid: str, folder: Path = STARTER) -> Clip:
    return next(c for c in read_records(folder / "manifest.jsonl", Clip) if c.id == uid)


def _source(folder: Path, lines: list[dict]) -> Path:
    """A user's folder: each line's audio copied from a starter clip ("from": [set folder, id]), and its manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for line in lines:
        line = dict(line)
        src, uid = line.pop("from", (STARTER, line["id"]))
        name = f"{src.name}-{uid}.wav"
        shutil.copyfile(src / _starter(uid, src).path, folder / name)
        out.append({"path": name, "text": _starter(uid).text, **line})
    (folder / "manifest.jsonl").write_text("".join(json.dumps(o) + "\n" for o in out))
    return folder


@pytest.fixture
def vox(cli, tmp_path: Path):
    """`voxwatch ARGS` in-process (conftest's cli) with the datasets folder tmp_path/catalog."""
    env = {"VOXWATCH_DATASETS_DIR": str(tmp_path / "catalog")}
    return lambda *argv: cli(*argv, env=env)


def _refused(result: tuple[int, str, str], *phrases: str) -> str:
    code, _out, err = result
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert all(p in err for p in phrases), (err, phrases)
    return err


def _catalog_left(tmp_path: Path) -> list[str]:
    """Every entry of the datasets folder, dot folders (an import's staging) included."""
    catalog = tmp_path / "catalog"
    return sorted(p.name for p in catalog.iterdir()) if catalog.is_dir() else []


def test_degrade_all_builds_the_family_of_an_imported_folder(vox, tmp_path: Path):
    source = _source(tmp_path / "mine", [{"id": "u001", "speaker": "ann", "accent": "Scottish"},
                                         {"id": "u002", "speaker": "bo", "accent": "Nigerian"}])
    code, out, err = vox("datasets", "import", str(source), "--name", "mine", "--degrade", "all")
    assert code == 0, err
    names = ["mine"] + [f"mine-{t}" for t in degrade.TRANSFORMS]
    assert _catalog_left(tmp_path) == sorted(names)  # the staging folder is gone
    assert f"measure it with: voxwatch run --datasets {','.join(names)}" in out
    catalog = Catalog([tmp_path / "catalog"])
    clean = catalog.load("mine")  # every file's sha256 checked
    assert (clean.info.family, clean.info.condition, clean.info.transform) == ("mine", "clean", None)
    assert [(c.utterance_id, c.voice, c.accent) for c in clean.clips] == [("u001", "ann", "Scottish"),
                                                                        ("u002", "bo", "Nigerian")]
    clean_pcm = {c.utterance_id: read_pcm16(clean.folder / c.path)[0] for c in clean.clips}
    for t, (_func, params) in degrade.TRANSFORMS.items():
        ds = catalog.load(f"mine-{t}")
        assert (ds.info.family, ds.info.condition, ds.info.transform["name"]) == ("mine", t, t)
        assert ds.info.transform["params"] == {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}
        for c, ref in zip(ds.clips, clean.clips):
            assert (c.utterance_id, c.text, c.voice, c.accent) == (ref.utterance_id, ref.text, ref.voice, ref.accent)
            assert c.source_clip == f"mine/{ref.id}" and c.transform == ds.info.transform
            # the stored audio is the transform of the stored clean clip, as `datasets fetch` makes it
            want = degrade.apply(t, clean_pcm[c.utterance_id] / 32767.0, ref.speech_start, ref.speech_end, c.utterance_id)
            np.testing.assert_array_equal(read_pcm16(ds.folder / c.path)[0], to_pcm16(want.audio))
            assert c.speech_start == round(want.speech_start, 3) and c.speech_end == round(want.speech_end, 3)
    code, out, _ = vox("datasets", "list", "--format", "json")
    listed = {d["name"]: d for d in json.loads(out)}
    assert {(n, listed[n]["family"], listed[n]["condition"], listed[n]["kind"], listed[n]["language"], listed[n]["items"])
            for n in names} == {(n, "mine", "clean" if n == "mine" else n[5:], "audio", "en", 2) for n in names}
    # a second import of a name the family holds is refused, the family untouched
    _refused(vox("datasets", "import", str(source), "--name", "mine", "--degrade", "noise"), "already exists")
    assert _catalog_left(tmp_path) == sorted(names)


def test_a_plain_import_is_one_dataset_of_condition_imported(vox, tmp_path: Path):
    source = _source(tmp_path / "mine", [{"id": "u003"}])
    assert vox("datasets", "import", str(source), "--name", "plain")[0] == 0
    info = Catalog([tmp_path / "catalog"]).load("plain").info
    assert (info.family, info.condition) == ("plain", "imported") and _catalog_left(tmp_path) == ["plain"]


@pytest.mark.parametrize("value, phrase", [("nosie", "'nosie'"), ("noise,reverb", "'reverb'"), (",", "unknown transform"),
                                           ("phone-mulaw", "'phone-mulaw'")])
def test_an_unknown_transform_is_refused_naming_the_allowed_ones(value, phrase, vox, tmp_path: Path):
    source = _source(tmp_path / "mine", [{"id": "u001"}])
    err = _refused(vox("datasets", "import", str(source), "--name", "mine", "--degrade", value), phrase)
    assert all(t in err for t in degrade.TRANSFORMS)
    assert _catalog_left(tmp_path) == []


CAR = [{"id": "u001", "condition": "clean"}, {"id": "u002", "condition": "clean"},
       {"id": "u001-car", "utterance": "u001", "condition": "car", "from": (NOISY, "u001"), "accent": "Welsh"},
       {"id": "u002", "condition": "car", "from": (NOISY, "u002")}]


def test_recorded_conditions_are_one_family_paired_by_utterance(vox, tmp_path: Path):
    code, out, err = vox("datasets", "import", str(_source(tmp_path / "mine", CAR)), "--name", "mine")
    assert code == 0, err
    assert "family mine: mine (clean, 2 clips), mine-car (car, 2 clips)" in out
    catalog = Catalog([tmp_path / "catalog"])
    clean, car = catalog.load("mine"), catalog.load("mine-car")
    assert [(d.info.family, d.info.condition, d.info.transform) for d in (clean, car)] == [("mine", "clean", None),
                                                                                            ("mine", "car", None)]
    assert [c.id for c in car.clips] == ["u001-car", "u002"]
    assert [c.utterance_id for c in car.clips] == [c.utterance_id for c in clean.clips] == ["u001", "u002"]
    assert [c.text for c in car.clips] == [c.text for c in clean.clips]
    assert car.clips[0].accent == "Welsh" and clean.clips[0].accent is None
    assert all(c.source_clip is None for c in car.clips)  # recorded, not derived


def test_recorded_conditions_and_degrade_together(vox, tmp_path: Path):
    source = _source(tmp_path / "mine", CAR)
    assert vox("datasets", "import", str(source), "--name", "mine", "--degrade", "noise,clipping")[0] == 0
    assert _catalog_left(tmp_path) == ["mine", "mine-car", "mine-clipping", "mine-noise"]
    noise = Catalog([tmp_path / "catalog"]).load("mine-noise")
    assert [c.source_clip for c in noise.clips] == ["mine/u001", "mine/u002"]  # the clean condition, only
    # a recorded condition named as a transform --degrade builds is refused
    _refused(vox("datasets", "import", str(_source(tmp_path / "other", [*CAR[:2], {**CAR[3], "condition": "noise"}])),
                 "--name", "other", "--degrade", "noise"), "condition(s) noise", "--degrade")
    assert _catalog_left(tmp_path) == ["mine", "mine-car", "mine-clipping", "mine-noise"]


@pytest.mark.parametrize("lines, phrases", [
    ([CAR[0], {**CAR[3], "text": "My order number is four five two."}],
     (":2: utterance 'u002' (car) has no clean",)),
    ([*CAR[:2], {**CAR[3], "text": "Something else entirely."}],
     (":3: utterance 'u002' (car) has text 'Something else entirely.'", "line 2 (clean)")),
    ([{**CAR[0], "condition": "quiet"}, CAR[2]], ("no line has condition 'clean'", "reference")),
    ([CAR[0], {"id": "u002"}], (":2: no condition, but line 1 names one",)),
    ([*CAR[:2], CAR[3], {**CAR[3], "id": "u002-again", "utterance": "u002"}], (":4: duplicate utterance in condition car",)),
    ([CAR[0], {**CAR[2], "condition": "In Car"}], ("condition 'In Car'",)),
    ([CAR[0], {**CAR[2], "condition": "c" * 33}], ("1-32 lower-case",)),
    ([CAR[0], {**CAR[2], "utterance": 7}], ("utterance must be a string",)),
    ([{**CAR[0], "accent": "a\x1bb"}], ("accent holds control characters",)),
    ([{**CAR[0], "accent": "x" * 129}], ("accent is 129 characters long",)),
    ([{**CAR[0], "entities": [{"type": "number", "text": "nine nine"}]}], ("entities[0]", "not a span")),
    ([{**CAR[0], "entities": [{"type": "colour", "text": "order"}]}], ("entities[0]", "'colour'")),
], ids=["no-clean-recording", "texts-differ", "no-clean-condition", "mixed", "twice", "bad-name", "long-name",
        "utterance-not-string", "accent-control", "accent-long", "entity-not-a-span", "entity-type"])
def test_bad_families_and_metadata_are_refused_naming_the_lines(lines, phrases, vox, tmp_path: Path):
    _refused(vox("datasets", "import", str(_source(tmp_path / "mine", lines)), "--name", "mine"), *phrases)
    assert _catalog_left(tmp_path) == []


def test_a_condition_making_a_too_long_name_is_refused(vox, tmp_path: Path):
    source = _source(tmp_path / "mine", [CAR[0], {**CAR[2], "condition": "c" * 32}])
    _refused(vox("datasets", "import", str(source), "--name", "m" * 40), "dataset name", "up to 64")
    assert _catalog_left(tmp_path) == []


def test_entities_are_kept(vox, tmp_path: Path):
    entities = [{"type": "number", "text": "four five two seven one"}]
    source = _source(tmp_path / "mine", [{"id": "u001", "entities": entities}])
    assert vox("datasets", "import", str(source), "--name", "mine", "--degrade", "noise")[0] == 0
    catalog = Catalog([tmp_path / "catalog"])
    assert [c.entities for c in catalog.load("mine").clips + catalog.load("mine-noise").clips] == [tuple(entities)] * 2


def test_a_clip_failing_midway_leaves_nothing_written(vox, tmp_path: Path):
    source = _source(tmp_path / "mine", [*CAR[:3], {**CAR[3], "path": "silence.wav"}])
    import soundfile as sf
    sf.write(source / "silence.wav", np.zeros(16000), 16000)  # the VAD finds no speech: the last car clip fails
    err = _refused(vox("datasets", "import", str(source), "--name", "mine", "--degrade", "all"), "silence.wav", "no speech")
    assert "mine" in err and _catalog_left(tmp_path) == []  # no dataset, no staging folder


@pytest.mark.e2e
def test_the_rows_carry_the_clips_speaker_and_accent_and_pair_the_family(vox, tmp_path: Path, store_url: str):
    source = _source(tmp_path / "mine", [{**CAR[0], "speaker": "ann", "accent": "Scottish"},
                                         {**CAR[2], "speaker": "ann", "accent": "Scottish"}])
    assert vox("datasets", "import", str(source), "--name", "mine")[0] == 0
    env = {"VOXWATCH_DATASETS_DIR": str(tmp_path / "catalog")}
    run_cli("run", "--datasets", "mine,mine-car", "--models", PS, "--sample-size", "1", "--store", store_url,
            "--no-progress", env=env)
    rows = [json.loads(l) for l in run_cli("export", "--format", "jsonl", "--store", store_url).stdout.splitlines()]
    assert sorted((r["dataset"], r["condition"], r["family"], r["clip_id"], r["utterance_id"]) for r in rows) == [
        ("mine", "clean", "mine", "u001", "u001"), ("mine-car", "car", "mine", "u001-car", "u001")]
    assert {(r["status"], r["speaker"], r["accent"]) for r in rows} == {("ok", "ann", "Scottish")}


@pytest.mark.e2e
def test_text_import_then_a_tts_run_row(vox, tmp_path: Path, store_url: str):
    path = tmp_path / "prompts.txt"
    path.write_bytes("\ufeffYour order 4527 has shipped.\r\n\r\n  Thank you for calling on Friday.  \n".encode())
    code, out, err = vox("datasets", "import-text", str(path), "--name", "my-prompts")
    assert code == 0, err
    ds = Catalog([tmp_path / "catalog"]).load("my-prompts")
    assert (ds.info.kind, ds.info.family, ds.info.condition) == ("text", "my-prompts", "text")
    assert [(p.id, p.text, p.category) for p in ds.prompts] == [
        (text_id("Your order 4527 has shipped."), "Your order 4527 has shipped.", "prompt"),
        (text_id("Thank you for calling on Friday."), "Thank you for calling on Friday.", "prompt")]
    assert [p.entities for p in ds.prompts] == [({"type": "number", "text": "4527"},),
                                                ({"type": "date", "text": "Friday"},)]  # the entity tagger's
    env = {"VOXWATCH_DATASETS_DIR": str(tmp_path / "catalog")}
    run_cli("run", "--board", "tts", "--datasets", "my-prompts", "--models", ESPEAK, "--sample-size", "1",
            "--store", store_url, "--no-progress", env=env)
    (row,) = [json.loads(l) for l in run_cli("export", "--format", "jsonl", "--store", store_url).stdout.splitlines()]
    assert (row["board"], row["dataset"], row["condition"], row["status"]) == ("tts", "my-prompts", "text", "ok")
    assert row["clip_id"] in {p.id for p in ds.prompts} and row["ttfa_ms"] > 0 and row["ref_words"] > 0
    assert row["entities_total"] == 1 and row["entities_missed"] in (0, 1)  # scored on the instrument's transcript


def test_a_txt_prompts_id_follows_its_text_not_its_line(vox, tmp_path: Path):
    (tmp_path / "a.txt").write_text("One.\nTwo.\n")
    (tmp_path / "b.txt").write_text("Zero.\nTwo.\nOne.\n")
    assert vox("datasets", "import-text", str(tmp_path / "a.txt"), "--name", "a")[0] == 0
    assert vox("datasets", "import-text", str(tmp_path / "b.txt"), "--name", "b")[0] == 0
    catalog = Catalog([tmp_path / "catalog"])
    a, b = ({p.text: p.id for p in catalog.load(n).prompts} for n in ("a", "b"))
    assert a["One."] == b["One."] and a["Two."] == b["Two."] and len(set(b.values())) == 3


def test_a_jsonl_prompt_file_keeps_ids_and_categories(vox, tmp_path: Path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "greet", "text": "Hello there.", "category": "greeting"}) + "\n\n"
                    + json.dumps({"id": "bye", "text": "Goodbye."}) + "\n")
    assert vox("datasets", "import-text", str(path), "--name", "p")[0] == 0
    prompts = Catalog([tmp_path / "catalog"]).load("p").prompts
    assert [(p.id, p.text, p.category) for p in prompts] == [("greet", "Hello there.", "greeting"),
                                                            ("bye", "Goodbye.", "prompt")]


def _jsonl(*records) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


@pytest.mark.parametrize("name, data, phrases", [
    ("p.txt", b"fine\nbad \x07 bell\n", (":2: text holds control characters", "\\x07")),
    ("p.txt", b"fine\ncaf\xe9\n", (":2: not UTF-8",)),
    ("p.txt", b"same\nother\n same \n", (":3: the same text as line 1",)),
    ("p.txt", b"ok\n" + b"x" * (MAX_PROMPT_CHARS + 1) + b"\n", (":2: text is 2001 characters long",)),
    ("p.txt", b"\n \n\t\n", ("no prompts",)),
    ("p.jsonl", _jsonl({"id": "a", "text": "  "}), (":1: missing or empty text",)),
    ("p.jsonl", _jsonl({"id": "a", "text": "x"}, {"id": "a", "text": "y"}), (":2: the same id as line 1",)),
    ("p.jsonl", _jsonl({"id": "a\x00", "text": "x"}), (":1: id holds control characters",)),
    ("p.jsonl", _jsonl({"id": "a", "text": "x", "voice": "v"}), ("unknown field(s) ['voice']",)),
    ("p.jsonl", _jsonl({"id": "a", "text": "x", "category": "Big Cat"}), ("category 'Big Cat'",)),
    ("p.jsonl", _jsonl({"id": "x" * 129, "text": "x"}), ("at most 128",)),
    ("p.jsonl", b'{"id": "a", "text": "x"\n', (":1: not JSON",)),
    ("p.csv", b"a,b\n", ("expected a .txt",)),
], ids=["control", "not-utf8", "duplicate-text", "overlong", "empty", "jsonl-empty-text", "duplicate-id", "nul-id",
        "unknown-field", "bad-category", "long-id", "not-json", "suffix"])
def test_hostile_prompt_files_are_refused_in_one_line(name, data, phrases, vox, tmp_path: Path):
    path = tmp_path / name
    path.write_bytes(data)
    _refused(vox("datasets", "import-text", str(path), "--name", "p"), str(path), *phrases)
    assert _catalog_left(tmp_path) == []


def test_text_import_refuses_a_taken_name_and_a_missing_file(vox, tmp_path: Path):
    _refused(vox("datasets", "import-text", str(tmp_path / "none.txt"), "--name", "p"), "no such file")
    (tmp_path / "p.txt").write_text("Hello.\n")
    _refused(vox("datasets", "import-text", str(tmp_path / "p.txt"), "--name", "tts-prompts"), "already exists")
    _refused(vox("datasets", "import-text", str(tmp_path / "p.txt"), "--name", "../up"), "dataset name")
    assert _catalog_left(tmp_path) == []


def test_the_docs_example_manifest_imports_as_documented(vox, tmp_path: Path):
    doc = (Path(__file__).resolve().parents[1] / "docs" / "DATASETS.md").read_text()
    example = doc.split("A manifest with conditions:\n\n```\n", 1)[1].split("```", 1)[0]
    source = tmp_path / "mine"
    for line in example.splitlines():
        path = source / json.loads(line)["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(STARTER / _starter("u001").path, path)
    (source / "manifest.jsonl").write_text(example)
    assert vox("datasets", "import", str(source), "--name", "calls")[0] == 0
    catalog = Catalog([tmp_path / "catalog"])
    clean, car = catalog.load("calls"), catalog.load("calls-car")
    assert [(c.id, c.utterance_id, c.voice, c.accent) for c in clean.clips + car.clips] == [
        ("q1", "q1", "ann", "Scottish"), ("c1", "q1", "ann", "Scottish")]
    assert (clean.info.condition, car.info.condition, car.info.family) == ("clean", "car", "calls")
