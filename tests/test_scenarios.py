"""Scenarios as data: the bundled scenarios, the loader's checks, the catalog and `voxwatch scenarios`."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import soundfile as sf

from support.processes import run_cli
from voxwatch.conversations.catalog import ScenarioCatalog, UnknownScenario, bundled_root
from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.conversations.scenario_file import FILE, ScenarioError, dump, load, parse, read
from voxwatch.conversations.build_bundled import build
from voxwatch.conversations.synthesis import LEAD_S, TRAIL_S, render
from voxwatch.foundation.audio import TARGET_RMS_DBFS, rms_dbfs
from voxwatch.foundation.integrity import file_sha256
from voxwatch.metrics.wer import normalize

BUNDLED = ("airline-changes", "clinic-desk")
CLINIC = bundled_root() / "clinic-desk"


def _record() -> dict[str, Any]:
    return json.loads((CLINIC / FILE).read_text())


# ---------------------------------------------------------------- the bundled scenarios

@pytest.fixture(scope="module")
def bundled():
    catalog = ScenarioCatalog([bundled_root()])
    return {name: catalog.load(name) for name in BUNDLED}  # every WAV's sha256, format and rate checked


def test_the_bundled_scenarios_load_with_their_pins(bundled):
    assert [e.name for e in ScenarioCatalog([bundled_root()]).entries()] == list(BUNDLED)
    for name, loaded in bundled.items():
        assert loaded.scenario.name == name
        assert loaded.pin == file_sha256(loaded.folder / FILE)
        assert loaded.identity.startswith(f"{name}@v{loaded.scenario.version}#{loaded.pin[:12]}")
    assert len({loaded.scenario.domain for loaded in bundled.values()}) == len(BUNDLED)


def test_the_bundled_scenarios_are_long_and_cover_every_category(bundled):
    for loaded in bundled.values():
        s = loaded.scenario
        assert len(s.turns) >= 15
        assert 4 <= len(s.knowledge_base) <= 8
        tags = {tag for turn in s.turns for tag in turn.tags}
        assert {"state_tracking", "ambiguity_handling", "correction", "kb", "trap", "basic"} <= tags
        assert set(DIMENSIONS) >= {d for turn in s.turns for d in turn.in_scope()}
        assert sum(bool(turn.expected_calls) for turn in s.turns) >= 8
        assert {"update", "delete"} <= {t.effect["op"] for t in s.tools if t.effect}
    assert any(t.effect and t.effect["op"] == "insert" for loaded in bundled.values() for t in loaded.scenario.tools)


def test_every_expected_call_names_a_tool_with_those_parameters(bundled):
    for loaded in bundled.values():
        s = loaded.scenario
        for turn in s.turns:
            for call in turn.expected_calls:
                tool = s.tool(call.name)
                assert tool is not None, (turn.id, call.name)
                assert set(call.args) <= set(tool.parameters["properties"]), (turn.id, call.name)
                assert set(tool.parameters["required"]) <= set(call.args), (turn.id, call.name)


def test_each_reply_holds_its_golden_facts_as_the_scoring_normalizes_them(bundled):
    """The scripted baseline says `reply`; it must pass its own turn's golden-fact check."""
    for loaded in bundled.values():
        for turn in loaded.scenario.turns:
            reply = f" {normalize(turn.reply)} "
            for fact in turn.golden_facts:
                assert normalize(fact) and f" {normalize(fact)} " in reply, (loaded.scenario.name, turn.id, fact)


def test_the_caller_audio_is_short_mono_speech_per_turn(bundled):
    total_bytes = 0
    for loaded in bundled.values():
        for turn in loaded.scenario.turns:
            data, rate = sf.read(loaded.audio_path(turn), dtype="int16")
            assert data.ndim == 1 and rate == loaded.scenario.sample_rate == 16000
            assert 1.0 < data.size / rate < 12.0, (turn.id, data.size / rate)
            assert np.abs(data).max() > 3000  # speech, loudness-normalised, not silence
            total_bytes += (loaded.folder / turn.audio).stat().st_size
    assert total_bytes < 12 * 2**20


def test_a_rendered_turn_has_its_silences_and_loudness():
    x = render("Can you move it to Friday?", "en-us", 16000, seed=7)
    lead, trail = int(LEAD_S * 16000), int(TRAIL_S * 16000)
    assert np.abs(x[:lead]).max() < 0.005 and np.abs(x[-trail:]).max() < 0.005  # the -72 dBFS floor only
    assert np.abs(x[lead:-trail]).max() > 0.1
    assert rms_dbfs(x) == pytest.approx(TARGET_RMS_DBFS, abs=1.5)


def test_build_renders_only_what_is_missing(tmp_path: Path):
    folder = _copy_clinic(tmp_path)
    _rewrite(folder, _set("turns[3].audio_sha256", ""))
    before = {p.name: p.read_bytes() for p in (folder / "audio").iterdir()}
    name, rendered, pin = build(folder)
    assert (name, rendered) == ("clinic-desk", ["t04"])
    after = {p.name: p.read_bytes() for p in (folder / "audio").iterdir()}
    assert {n for n in before if before[n] != after[n]} <= {"t04.wav"}
    assert load(folder).pin == pin
    assert build(folder) == (name, [], pin)  # once every turn has its audio, nothing changes


def test_dump_round_trips_to_the_same_bytes(tmp_path: Path, bundled):
    for loaded in bundled.values():
        out = tmp_path / loaded.scenario.name
        assert dump(loaded.scenario, out) == loaded.pin  # the committed file is the canonical serialisation
        assert read(out)[0] == loaded.scenario


# ---------------------------------------------------------------- malformed scenario.json


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """A mutation: set (or with value DELETE, remove) the field at a dotted path with [i] indexes."""
    def apply(record: dict) -> None:
        parts = [int(p) if p.isdigit() else p for p in path.replace("[", ".").replace("]", "").split(".")]
        target = record
        for p in parts[:-1]:
            target = target[p]
        if value is DELETE:
            del target[parts[-1]]
        else:
            target[parts[-1]] = value
    return apply


DELETE = object()


def _tool_named(record: dict, name: str) -> dict:
    return next(t for t in record["tools"] if t["name"] == name)


def _rename_tool(record: dict) -> None:
    _tool_named(record, "find_patient")["name"] = "lookup_patient"


def _duplicate_turn(record: dict) -> None:
    record["turns"][4]["id"] = record["turns"][3]["id"]


def _duplicate_tool(record: dict) -> None:
    record["tools"].append(copy.deepcopy(record["tools"][0]))


MALFORMED = [
    ("every field missing", lambda r: r.clear(), ": missing field 'schema', 'name'"),
    ("unknown schema", _set("schema", 2), "schema: unknown schema version 2 (this voxwatch reads 1)"),
    ("missing turns", _set("turns", DELETE), ": missing field 'turns'"),
    ("unknown top field", _set("colour", "red"), ": unknown field 'colour'"),
    ("bad name", _set("name", "Clinic Desk"), "name: 'Clinic Desk': expected lower-case letters"),
    ("version zero", _set("version", 0), "version: expected an integer from 1 to"),
    ("version a string", _set("version", "1"), "version: expected an integer from 1 to 2147483647, found '1'"),
    ("rate too low", _set("sample_rate", 4000), "sample_rate: expected an integer from 8000 to 48000"),
    ("no turns", _set("turns", []), "turns: expected at least one item"),
    ("turns not a list", _set("turns", {}), "turns: expected a list, found an object"),
    ("duplicate turn id", _duplicate_turn, "turns[4]: duplicate turn id 't04'"),
    ("duplicate tool", _duplicate_tool, "tools[6]: duplicate tool name 'find_patient'"),
    ("call of no tool", _rename_tool, "turns[0].expected_calls[0].name: no tool named 'find_patient'"),
    ("arg not a parameter", _set("turns[1].expected_calls[0].args.doctor", "dr-shah"),
     "turns[1].expected_calls[0].args.doctor: not a parameter of check_availability (provider, date)"),
    ("unknown matcher", _set("turns[1].expected_calls[0].args.date", {"regexp": "2026-06-1."}),
     "turns[1].expected_calls[0].args.date: unknown matcher 'regexp' (one of exact, any, one_of, regex, approx, set)"),
    ("two matcher keys", _set("turns[1].expected_calls[0].args.date", {"regex": "x", "any": True}),
     "args.date: a matcher object has exactly one of"),
    ("bad regex", _set("turns[2].expected_calls[0].args.reason", {"regex": "(physical"}),
     "turns[2].expected_calls[0].args.reason.regex: does not compile"),
    ("approx without tolerance", _set("turns[1].expected_calls[0].args.date", {"approx": 3}),
     "args.date: approx needs a tolerance"),
    ("negative tolerance", _set("turns[1].expected_calls[0].args.date", {"approx": 3, "tolerance": -1}),
     "args.date.tolerance: expected a number of 0 or more"),
    ("any not true", _set("turns[1].expected_calls[0].args.date", {"any": 1}), "args.date.any: expected true"),
    ("empty one_of", _set("turns[1].expected_calls[0].args.date", {"one_of": []}),
     "args.date.one_of: expected a non-empty list of values"),
    ("set not a list", _set("turns[1].expected_calls[0].args.date", {"set": "a"}),
     "args.date.set: expected a list, found a string"),
    ("state arg not an arg", _set("turns[2].expected_calls[0].state_args", ["provider"]),
     "turns[2].expected_calls[0].state_args[0]: 'provider' is not an argument of this expected call"),
    ("tag not a string", _set("turns[0].tags", ["basic", 3]), "turns[0].tags[1]: expected a string, found a number"),
    ("tag with a space", _set("turns[0].tags", ["state tracking"]), "turns[0].tags[0]: 'state tracking': expected a tag"),
    ("unknown effect op", _set("tools[2].effect.op", "upsert"),
     "tools[2].effect.op: unknown op 'upsert' (one of insert, update, delete)"),
    ("effect key not a parameter", _set("tools[2].effect.key", "appointment_id"),
     "tools[2].effect.key: 'appointment_id' must be a required parameter of book_appointment"),
    ("effect without table", _set("tools[4].effect", {"op": "delete", "key": "patient_id"}),
     "tools[4].effect: missing field 'table'"),
    ("parameters not an object schema", _set("tools[0].parameters.type", "array"),
     "tools[0].parameters.type: expected \"object\""),
    ("required not a property", _set("tools[0].parameters.required", ["last_name", "ssn"]),
     "tools[0].parameters.required[1]: 'ssn' is not among the properties"),
    ("table not a list", _set("initial_state.patients", {"P-1001": {}}),
     "initial_state.patients: expected a list of records, found an object"),
    ("record not an object", _set("expected_end_state.appointments", [["P-1002"]]),
     "expected_end_state.appointments[0]: expected a record (an object), found a list"),
    ("end-state matcher", _set("expected_end_state.appointments[0].reason", {"like": "%sports%"}),
     "expected_end_state.appointments[0].reason: unknown matcher 'like'"),
    ("control character", _set("turns[5].text", "Let's do 8:30.\x00"), "turns[5].text: holds control characters (\\x00)"),
    ("newline in a reply", _set("turns[5].reply", "Done.\nBye."), "turns[5].reply: holds control characters (\\n)"),
    ("empty reply", _set("turns[5].reply", "  "), "turns[5].reply: expected a non-empty string"),
    ("golden fact not a string", _set("turns[5].golden_facts", [12]),
     "turns[5].golden_facts[0]: expected a string, found a number"),
    ("audio escapes", _set("turns[0].audio", "../other/t01.wav"),
     "turns[0].audio: '../other/t01.wav' must be a path relative to the scenario folder, without '..'"),
    ("audio absolute", _set("turns[0].audio", "/etc/passwd"), "turns[0].audio: '/etc/passwd' must be a path relative"),
    ("bad sha", _set("turns[0].audio_sha256", "abc"), "turns[0].audio_sha256: expected 64 lower-case hex digits"),
    ("unknown turn field", _set("turns[0].speaker", "mom"), "turns[0]: unknown field 'speaker'"),
    ("duplicate document", _set("knowledge_base[1].id", "hours"), "knowledge_base[1]: duplicate document id 'hours'"),
    ("exact value of the wrong type", _set("turns[1].expected_calls[0].args.date", 20260611),
     "turns[1].expected_calls[0].args.date: 20260611 is not of the parameter's type 'string'"),
    ("exact value outside the enum", _set("turns[1].expected_calls[0].args.provider", "dr-who"),
     "args.provider: 'dr-who' is not one of the parameter's enum ('dr-shah', 'dr-lee')"),
    ("effect on a table not in the initial state", _set("initial_state.appointments", DELETE),
     "tools[2].effect.table: 'appointments' is not a table of initial_state (add it, as [] if it starts empty)"),
    ("record without its key", _set("initial_state.patients[1].patient_id", DELETE),
     "initial_state.patients[1]: no 'patient_id' (the key of update_contact)"),
    ("duplicate key", _set("initial_state.patients[2].patient_id", "P-1001"),
     "initial_state.patients[2].patient_id: duplicate key 'P-1001'"),
    ("end-state table not in the initial state", lambda r: r["expected_end_state"].update(apointments=[]),
     "expected_end_state.apointments: not a table of initial_state (patients, appointments)"),
    ("multi-line kb is fine but NUL is not", _set("knowledge_base[0].text", "Open\n9-5\x07"),
     "knowledge_base[0].text: holds control characters (\\x07)"),
]


@pytest.mark.parametrize("mutate,expected", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_a_malformed_scenario_is_refused_with_the_file_and_field(mutate, expected):
    record = _record()
    mutate(record)
    with pytest.raises(ScenarioError) as err:
        parse(record, "clinic/scenario.json")
    message = str(err.value)
    assert message.startswith("clinic/scenario.json: ") and "\n" not in message
    assert expected in message


def test_the_unmutated_record_parses_and_multiline_prompts_are_allowed():
    record = _record()
    assert "\n" in record["system_prompt"]
    assert parse(record, "clinic/scenario.json").name == "clinic-desk"


# ---------------------------------------------------------------- audio files


def _copy_clinic(tmp_path: Path, name: str = "clinic") -> Path:
    folder = tmp_path / name
    shutil.copytree(CLINIC, folder)
    return folder


def _rewrite(folder: Path, change: Callable[[dict], None]) -> None:
    record = json.loads((folder / FILE).read_text())
    change(record)
    (folder / FILE).write_text(json.dumps(record))


def test_a_changed_audio_file_is_refused(tmp_path: Path):
    folder = _copy_clinic(tmp_path)
    wav = folder / "audio" / "t07.wav"
    data = bytearray(wav.read_bytes())
    data[-2] ^= 0x01
    wav.write_bytes(bytes(data))
    with pytest.raises(ScenarioError, match=r"^clinic/scenario.json: turns\[6\].audio: audio/t07.wav: sha256 does "
                                            r"not match audio_sha256"):
        load(folder)
    assert read(folder)[0].name == "clinic-desk"  # the text alone still reads (list shows it)


def test_a_symlink_out_of_the_folder_is_refused(tmp_path: Path):
    folder = _copy_clinic(tmp_path)
    outside = tmp_path / "elsewhere.wav"
    shutil.copyfile(folder / "audio" / "t01.wav", outside)
    (folder / "audio" / "t01.wav").unlink()
    (folder / "audio" / "t01.wav").symlink_to(outside)
    with pytest.raises(ScenarioError, match=r"turns\[0\].audio: audio/t01.wav: leads outside the scenario folder"):
        load(folder)


def _write_wav(path: Path, channels: int, rate: int, subtype: str) -> str:
    x = (np.sin(np.arange(rate) * 0.05) * 0.3)[:, None].repeat(channels, axis=1)
    sf.write(str(path), x, rate, subtype=subtype, format="WAV")
    return file_sha256(path)


@pytest.mark.parametrize("channels,rate,subtype,expected", [
    (2, 16000, "PCM_16", "2 channels (expected mono)"),
    (1, 22050, "PCM_16", "22050 Hz (expected the scenario's 16000 Hz)"),
    (1, 16000, "PCM_24", "PCM_24 (expected PCM_16)"),
])
def test_audio_in_the_wrong_format_is_refused(tmp_path: Path, channels, rate, subtype, expected):
    folder = _copy_clinic(tmp_path)
    sha = _write_wav(folder / "audio" / "t02.wav", channels, rate, subtype)
    _rewrite(folder, _set("turns[1].audio_sha256", sha))
    with pytest.raises(ScenarioError, match=r"turns\[1\].audio: audio/t02.wav: ") as err:
        load(folder)
    assert expected in str(err.value)


def test_missing_audio_is_named(tmp_path: Path):
    folder = _copy_clinic(tmp_path)
    (folder / "audio" / "t03.wav").unlink()
    with pytest.raises(ScenarioError, match=r"turns\[2\].audio: audio/t03.wav: no such file"):
        load(folder)


def test_the_catalog_names_an_unknown_scenario(tmp_path: Path):
    catalog = ScenarioCatalog([bundled_root(), tmp_path / "none"])
    with pytest.raises(UnknownScenario, match="unknown scenario 'hotel'"):
        catalog.find("hotel")
    with pytest.raises(UnknownScenario, match="unknown scenario 'clinic-desk' version 9"):
        catalog.find("clinic-desk", 9)


# ---------------------------------------------------------------- the CLI


def _env(tmp_path: Path) -> dict[str, str]:
    return {"VOXWATCH_SCENARIOS_DIR": str(tmp_path / "user-scenarios")}


def _table(out: str) -> dict[tuple[str, str], list[str]]:
    """`scenarios list --wide`: a row a line, each cell whole (a folder path is not wrapped)."""
    lines = out.splitlines()
    assert lines[0].split()[:7] == ["name", "version", "domain", "turns", "tools", "audio", "s"]
    return {(row.split()[0], row.split()[1]): row.split() for row in lines[1:]}


@pytest.mark.e2e
def test_list_show_and_import_round_trip(tmp_path: Path):
    env = _env(tmp_path)
    listed = _table(run_cli("scenarios", "list", "--wide", env=env).stdout)
    assert set(listed) == {("airline-changes", "1"), ("clinic-desk", "1")}
    pin = file_sha256(CLINIC / FILE)
    assert pin[:12] in listed[("clinic-desk", "1")]

    source = _copy_clinic(tmp_path, "my-clinic")
    _rewrite(source, _set("version", 2))
    out = run_cli("scenarios", "import", str(source), env=env).stdout
    assert "imported clinic-desk version 2 (19 turns" in out
    listed = _table(run_cli("scenarios", "list", "--wide", env=env).stdout)
    assert ("clinic-desk", "2") in listed and listed[("clinic-desk", "2")][-1].endswith("clinic-desk-v2")
    assert file_sha256(source / FILE)[:12] in listed[("clinic-desk", "2")]

    shown = run_cli("scenarios", "show", "clinic-desk", env=env).stdout  # the highest version
    assert shown.startswith("clinic-desk version 2 (healthcare scheduling)")
    assert "t11 [ambiguity_handling]" in shown
    assert 'call:   check_availability(provider="dr-lee", date="2026-06-12"*)' in shown
    assert "clinic-desk version 1 " in run_cli("scenarios", "show", "clinic-desk", "--version", "1", env=env).stdout

    again = run_cli("scenarios", "import", str(source), env=env).stdout
    assert "already in the catalog with these exact bytes" in again

    _rewrite(source, _set("description", "Something else."))
    refused = run_cli("scenarios", "import", str(source), env=env, check=False)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1
    assert "a different scenario 'clinic-desk' version 2 is already in the catalog" in refused.stderr

    bundled_clash = _copy_clinic(tmp_path, "clash")
    _rewrite(bundled_clash, _set("description", "Not the bundled one."))
    proc = run_cli("scenarios", "import", str(bundled_clash), env=env, check=False)
    assert proc.returncode == 2 and "version 1 is already in the catalog" in proc.stderr


@pytest.mark.e2e
def test_import_refuses_bad_audio_and_leaves_nothing(tmp_path: Path):
    env = _env(tmp_path)
    source = _copy_clinic(tmp_path, "tampered")
    _rewrite(source, _set("version", 3))
    (source / "audio" / "t05.wav").write_bytes((source / "audio" / "t06.wav").read_bytes())
    proc = run_cli("scenarios", "import", str(source), env=env, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("voxwatch: error: tampered/scenario.json: turns[4].audio: audio/t05.wav: sha256 "
                                   "does not match audio_sha256; refusing the scenario")
    user = tmp_path / "user-scenarios"
    assert not user.exists() or not any(user.iterdir())

    escape = _copy_clinic(tmp_path, "escape")
    _rewrite(escape, _set("turns[0].audio", "../tampered/audio/t01.wav"))
    proc = run_cli("scenarios", "import", str(escape), env=env, check=False)
    assert proc.returncode == 2 and "turns[0].audio: '../tampered/audio/t01.wav' must be a path relative" in proc.stderr

    assert "unknown scenario 'nope'" in run_cli("scenarios", "show", "nope", env=env, check=False).stderr


@pytest.mark.e2e
def test_a_broken_user_scenario_is_one_line_and_a_staging_folder_is_skipped(tmp_path: Path):
    env = _env(tmp_path)
    user = tmp_path / "user-scenarios"
    staging = _copy_clinic(user, ".clinic-desk-x1")  # an import under way: not in the catalog
    _rewrite(staging, _set("version", 7))
    assert ("clinic-desk", "7") not in _table(run_cli("scenarios", "list", "--wide", env=env).stdout)
    broken = _copy_clinic(user, "broken-v1")
    _rewrite(broken, _set("turns[2].tags", "basic"))
    proc = run_cli("scenarios", "list", env=env, check=False)
    assert proc.returncode == 2
    assert proc.stderr == "voxwatch: error: broken-v1/scenario.json: turns[2].tags: expected a list, found a string\n"
    missing = run_cli("scenarios", "import", str(tmp_path / "nowhere"), env=env, check=False)
    assert missing.returncode == 2 and "nowhere: no scenario.json in this folder" in missing.stderr


@pytest.mark.e2e
def test_import_with_synthesize_renders_the_missing_turns(tmp_path: Path):
    env = _env(tmp_path)
    source = tmp_path / "small"
    record = _record()
    record.update(name="small-desk", turns=record["turns"][:3])
    record["turns"][1].update(audio="", audio_sha256="")
    source.mkdir()
    (source / FILE).write_text(json.dumps(record))
    shutil.copytree(CLINIC / "audio", source / "audio")
    (source / "audio" / "t02.wav").unlink()

    proc = run_cli("scenarios", "import", str(source), env=env, check=False)
    assert proc.returncode == 2 and "turns[1].audio: no audio yet" in proc.stderr

    out = run_cli("scenarios", "import", str(source), "--synthesize", env=env).stdout
    assert "synthesized 1 turn(s) with eSpeak NG voice en-us: t02" in out
    imported = ScenarioCatalog([tmp_path / "user-scenarios"]).load("small-desk")  # every file checked
    t02 = imported.scenario.turns[1]
    assert t02.audio == "audio/t02.wav" and t02.audio_sha256 == file_sha256(imported.folder / t02.audio)
    assert imported.scenario.extra["synthesis"]["voice"] == "en-us"
    assert imported.scenario.turns[0].audio_sha256 == record["turns"][0]["audio_sha256"]
    assert not (source / "audio" / "t02.wav").exists()  # the source folder is never written
