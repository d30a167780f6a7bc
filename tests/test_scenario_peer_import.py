"""`voxwatch scenarios import` of a peer's published benchmark (aiewf-eval's layout), by its stated mapping.

The peer's files are never committed here: each test builds a small benchmark in aiewf-eval's
source layout (turns.py, tools.py, config.py, prompts/system.py, data/knowledge_base.txt,
generated WAVs at 24 and 16 kHz, a README with its License section) in a temporary folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import soundfile as sf

from support.aiewf_layout import BENCH, COMMIT, KB, SYSTEM, TOOLS, aiewf_layout
from support.processes import cli_in_process
from voxwatch.conversations.peer_aiewf import DEFAULT_RESULT, args_of, facts_of, reply_of
from voxwatch.conversations.scenario_file import load
from voxwatch.foundation.integrity import file_sha256


def _import(tmp_path: Path, *args: str):
    env = {"VOXWATCH_SCENARIOS_DIR": str(tmp_path / "user-scenarios")}
    return cli_in_process("scenarios", "import", *args, env=env)


def _nothing_imported(tmp_path: Path) -> bool:
    user = tmp_path / "user-scenarios"
    return not user.exists() or not [p for p in user.iterdir() if not p.name.startswith(".")]


def test_the_aiewf_layout_imports_by_the_stated_mapping(tmp_path: Path):
    root = aiewf_layout(tmp_path / "aiewf")
    done = _import(tmp_path, str(root), "--benchmark", BENCH, "--commit", COMMIT)
    assert done.returncode == 0, done.stderr
    assert "imported aiewf-tiny_context version 1 (3 turns" in done.stdout
    assert "licence MIT" in done.stdout and COMMIT[:12] in done.stdout
    loaded = load(tmp_path / "user-scenarios" / "aiewf-tiny_context-v1")
    s = loaded.scenario
    first, second, last = s.turns

    assert first.text == "When is lunch?" and first.tags == ("no_tool_call",) and first.expected_calls == ()
    assert first.reply == "Lunch is from 12:00 PM to 1:00 PM in the Grand Hall on June 4th."
    assert first.golden_facts == ("12:00 PM", "1:00 PM", "June 4th")
    assert second.golden_facts == ("941249",) and second.tags == ("tool_call",)
    (call,) = second.expected_calls
    assert (call.name, call.args, call.result) == ("submit_dietary_request",
                                                   {"name": "Ada Byron", "dietary_preference": "vegan"},
                                                   {"status": "queued"})
    assert last.expected_calls[0].args == {} and last.expected_calls[0].result == DEFAULT_RESULT

    assert [t.name for t in s.tools] == ["submit_dietary_request", "end_session"]
    assert s.tools[0].parameters["required"] == ["name", "dietary_preference"] and s.tools[1].effect is None
    (doc,) = s.knowledge_base
    assert doc.text == KB.strip("\n") and doc.title == "Tiny Fair 2025"  # the file kept whole, one document
    assert s.system_prompt.startswith("Today is June 2, 2025.") and s.system_prompt.endswith("when asked.")
    assert "Grand Hall" not in s.system_prompt  # the knowledge base is given once, after the prompt

    peer = s.extra["peer"]
    assert (peer["commit"], peer["licence"], peer["benchmark"]) == (COMMIT, "MIT", BENCH)
    assert peer["repository"] == "https://github.com/kwindla/aiewf-eval"
    assert "benchmarks/_shared/turns.py" in peer["paths"] and peer["unused_audio"] == ["turn_001-short-yes.wav"]
    shared = root / "benchmarks" / "_shared" / "audio"
    assert peer["audio"]["turn_001"] == {"file": "benchmarks/_shared/audio/turn_001.wav",
                                         "sha256": file_sha256(shared / "turn_001.wav")}
    # at the scenario's rate already: the peer's bytes; at 24 kHz: resampled to 16 kHz
    assert second.audio_sha256 == file_sha256(shared / "turn_001.wav")
    resampled = sf.info(str(loaded.audio_path(first)))
    assert (resampled.samplerate, resampled.frames) == (16_000, 9_600)

    shown = cli_in_process("scenarios", "show", "aiewf-tiny_context",
                           env={"VOXWATCH_SCENARIOS_DIR": str(tmp_path / "user-scenarios")}).stdout
    assert f"from https://github.com/kwindla/aiewf-eval at {COMMIT[:12]}, benchmark tiny_context, licence MIT" in shown
    assert 'call:   submit_dietary_request(name="Ada Byron", dietary_preference="vegan")' in shown

    again = _import(tmp_path, str(root / "benchmarks" / BENCH), "--commit", COMMIT)  # the benchmark folder
    assert again.returncode == 0 and "already in the catalog with these exact bytes" in again.stdout


def test_a_clone_and_its_bare_mirror_give_their_commit_and_the_same_scenario(tmp_path: Path):
    root = aiewf_layout(tmp_path / "clone")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-qm", "bench"], check=True)
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--bare", str(root), str(tmp_path / "mirror")], check=True)

    done = _import(tmp_path, str(tmp_path / "mirror"), "--benchmark", BENCH)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "user-scenarios" / "aiewf-tiny_context-v1" / "scenario.json").read_text()
                      )["extra"]["peer"]["commit"] == head
    from_clone = _import(tmp_path, str(root), "--benchmark", BENCH)
    assert "already in the catalog with these exact bytes" in from_clone.stdout


MARKER = "ran.marker"


@pytest.mark.parametrize("key, text, expected", [
    ("turns", "import pathlib\nturns = [pathlib.Path({marker!r}).write_text('ran')]\n",
     "benchmarks/_shared/turns.py:2: turns is not a plain literal"),
    ("turns", "open({marker!r}, 'w').write('ran')\nturns = []\n",
     "benchmarks/_shared/turns.py:1: a statement at module level that is not an import, a definition or an"),
    ("tools", TOOLS.replace('properties={}', 'properties=__import__("pathlib").Path({marker!r}).write_text("r")'),
     "benchmarks/_shared/tools.py:4: end_session_function.properties is not a plain literal"),
    ("system", SYSTEM.replace("_load_knowledge_base() +", "_load_knowledge_base() + open({marker!r}, 'w').read() +"),
     "holds calls other than one knowledge-base loader"),
])
def test_python_that_is_not_plain_data_is_refused_without_running_it(tmp_path: Path, key, text, expected):
    marker = tmp_path / MARKER
    root = aiewf_layout(tmp_path / "aiewf", **{key: text.replace("{marker!r}", repr(str(marker)))})
    done = _import(tmp_path, str(root), "--benchmark", BENCH, "--commit", COMMIT)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert expected in done.stderr
    assert not marker.exists()
    assert _nothing_imported(tmp_path)


def _unknown_tool(root: Path) -> None:
    path = root / "benchmarks" / "_shared" / "turns.py"
    path.write_text(path.read_text().replace("'end_session', 'args'", "'hang_up', 'args'"))


@pytest.mark.parametrize("args, change, expected", [
    ((), None, "an aiewf-eval layout; name the benchmark with --benchmark (tiny_context)"),
    (("--benchmark", "nope"), None, "no benchmark 'nope' in benchmarks/ (tiny_context)"),
    (("--benchmark", BENCH, "--commit", "abc"), None, "--commit 'abc': expected the 40 hex digits"),
    (("--benchmark", BENCH), None, "not a git checkout, so its commit is unknown; pass --commit"),
    (("--benchmark", BENCH, "--commit", COMMIT), lambda r: (r / "README.md").unlink(), "no licence found"),
    (("--benchmark", BENCH, "--commit", COMMIT),
     lambda r: (r / "benchmarks" / "_shared" / "audio" / "turn_002.wav").unlink(),
     "turns[2].audio_file 'turns_audio/turn_002.wav': no benchmarks/_shared/audio/turn_002.wav"),
    (("--benchmark", BENCH, "--commit", COMMIT), _unknown_tool,
     "aiewf-tiny_context/scenario.json: turns[2].expected_calls[0].name: no tool named 'hang_up'"),
    (("--peer", "aiewf"), lambda r: shutil.rmtree(r / "benchmarks"), "not an aiewf-eval layout"),
    (("--benchmark", BENCH, "--commit", COMMIT, "--synthesize"), None, "--synthesize is for voxwatch scenario folders"),
])
def test_a_bad_layout_is_one_line_and_imports_nothing(tmp_path: Path, args, change, expected):
    root = aiewf_layout(tmp_path / "aiewf")
    if change is not None:
        change(root)
    done = _import(tmp_path, str(root), *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert expected in done.stderr
    assert _nothing_imported(tmp_path)


def test_the_reply_and_fact_rules():
    text = 'First, at **10:40 AM**, "Gemini 2.5,"\n\nthen 7 PM on June 3rd: 19 tracks, session 936902 (2025).'
    assert reply_of(text) == 'First, at 10:40 AM, "Gemini 2.5," then 7 PM on June 3rd: 19 tracks, session 936902 (2025).'
    assert facts_of(text) == ("10:40 AM", "7 PM", "June 3rd", "19", "936902", "2025")
    assert facts_of("Yes, you can. Is there anything else?") == ()
    # a name, an id, a choice exactly; free text (four words or more) only for being there
    assert args_of({"name": "Jennifer Smith", "session_id": "936902", "dietary_preference": "vegan",
                    "suggestion_text": "A session about open telemetry tracing."}) == \
        {"name": "Jennifer Smith", "session_id": "936902", "dietary_preference": "vegan", "suggestion_text": {"any": True}}
