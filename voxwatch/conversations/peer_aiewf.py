"""A peer's published benchmark, Daily's aiewf-eval, converted into a voxwatch scenario folder.

aiewf-eval (MIT) publishes each benchmark as Python data: `benchmarks/_shared/turns.py`,
`benchmarks/_shared/tools.py`, the caller's WAVs in `benchmarks/_shared/audio/`, and per benchmark
`config.py`, `prompts/system.py` and `data/knowledge_base.txt`. The files are parsed, never run
(peer_literals). The mapping (docs/SCENARIOS.md "Peer benchmarks: aiewf-eval") is stated once, here:

- a turn: `input` -> text; `golden_text` -> reply (markdown emphasis `**`/`__` removed, whitespace
  runs as one space); golden facts -> FACT_RULE; `required_function_call` -> one expected call whose
  every given argument is matched by ARGS_RULE, its result the turn's `function_call_response` (or
  DEFAULT_RESULT); tags `tool_call` or `no_tool_call`; `audio_file` -> AUDIO_RULE.
- tools: each `FunctionSchema(name=, description=, properties=, required=)` listed in
  `ToolsSchemaForTest = ToolsSchema(standard_tools=[...])`, in that order; none changes a backend.
- the system prompt: `system_instruction`'s string terms joined, the knowledge-base loader's call
  left out (voxwatch gives the knowledge base after the prompt); the knowledge base: one document,
  the whole file (the format does not cap a document's size).
- provenance: the peer's repository, commit, benchmark, paths, licence and each WAV's own sha256
  in `extra.peer`.
"""

from __future__ import annotations

import ast
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from voxwatch.foundation.integrity import file_sha256
from voxwatch.foundation.audio import CATALOG_RATE, AudioError, read_pcm16, resample, write_wav
from voxwatch.foundation.scenario import SCENARIO_SCHEMA, Document, ExpectedCall, Scenario, Tool, Turn

from voxwatch.conversations.peer_literals import Module, PeerFileError, call_keywords, name_list, parse, string_sum
from voxwatch.conversations.scenario_file import dump

PEER = "aiewf"
REPOSITORY = "https://github.com/kwindla/aiewf-eval"
SHARED = Path("benchmarks/_shared")
AUDIO_DIR = SHARED / "audio"
TURN_FIELDS = ("input", "golden_text", "required_function_call", "audio_file")
TURN_OPTIONAL = ("function_call_response",)
DEFAULT_RESULT: dict[str, Any] = {"status": "success"}
"""A required call without a `function_call_response` is answered as the peer answers the others."""
AUDIO_RULE = ("the file name of `audio_file` (its folder dropped: the published turns say turns_audio/ or "
              "nothing) in benchmarks/_shared/audio/, resampled to 16 kHz when recorded at another rate")
FACT_RULE = "clock times, month-and-day dates and whole numbers of two or more digits in golden_text, in order, once"
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_FACTS = re.compile(r"\b\d{1,2}:\d{2}\s?[AaPp]\.?[Mm]\b\.?|\b\d{1,2}\s?[AaPp]\.?[Mm]\b\.?"
                    rf"|\b(?:{_MONTHS})\s\d{{1,2}}(?:st|nd|rd|th)?\b|(?<![\d.,:])\d{{2,}}(?![\d:]|\.\d)")
_EMPHASIS = re.compile(r"\*\*|__")


@dataclass(frozen=True)
class Converted:
    """A scenario and, per turn, the peer's WAV it is made of."""

    scenario: Scenario
    audio: dict[str, Path]  # turn id -> the peer's file


FREE_TEXT_WORDS = 4
ARGS_RULE = (f"every argument given is an exact matcher, but a string of {FREE_TEXT_WORDS} or more words (free text: "
             "a suggestion, an issue description) is {\"any\": true}: the call must carry it, its wording is the "
             "model's own (a judge reads its meaning)")


def args_of(args: dict[str, Any]) -> dict[str, Any]:
    """The peer's arguments as matchers (ARGS_RULE): a name, an id or a choice is matched exactly (strings
    case- and whitespace-insensitively); free text only for being there."""
    return {k: {"any": True} if isinstance(v, str) and len(v.split()) >= FREE_TEXT_WORDS else v
            for k, v in args.items()}


def reply_of(golden_text: str) -> str:
    """The golden text as a spoken reply: markdown emphasis dropped, whitespace runs as one space."""
    return " ".join(_EMPHASIS.sub("", golden_text).split())


def facts_of(golden_text: str) -> tuple[str, ...]:
    """FACT_RULE: what a correct spoken reply cannot leave out, found by pattern, not judged."""
    found: list[str] = []
    for m in _FACTS.finditer(reply_of(golden_text)):
        fact = m.group().rstrip(".")
        if fact not in found:
            found.append(fact)
    return tuple(found)


def find_root(path: Path, benchmark: str | None) -> tuple[Path, str]:
    """The peer's root (the folder holding benchmarks/) and the benchmark: PATH is the root (then
    --benchmark names it) or a benchmark folder beside benchmarks/_shared (its name is the benchmark)."""
    if (path / SHARED / "turns.py").is_file():
        found = sorted(p.name for p in (path / "benchmarks").iterdir() if (p / "config.py").is_file())
        if benchmark is None:
            raise PeerFileError(f"{path}: an aiewf-eval layout; name the benchmark with --benchmark "
                                f"({', '.join(found) or 'none found'})")
        if benchmark not in found:
            raise PeerFileError(f"{path}: no benchmark {benchmark!r} in benchmarks/ ({', '.join(found) or 'none'})")
        return path, benchmark
    if (path / "config.py").is_file() and (path.parent / "_shared" / "turns.py").is_file():
        if benchmark not in (None, path.name):
            raise PeerFileError(f"{path}: this is benchmark {path.name!r}, not {benchmark!r}")
        return path.parent.parent, path.name
    raise PeerFileError(f"{path}: not an aiewf-eval layout (no benchmarks/_shared/turns.py, nor a benchmark "
                        "folder with config.py beside _shared/)")


def is_layout(path: Path) -> bool:
    """Whether PATH looks like the aiewf-eval layout (and not a voxwatch scenario folder)."""
    return (path / SHARED / "turns.py").is_file() or (
        (path / "config.py").is_file() and (path.parent / "_shared" / "turns.py").is_file())


def _turns(m: Module) -> list[dict[str, Any]]:
    turns = m.literal("turns")
    if not isinstance(turns, list) or not turns:
        raise m.fail(m.expr("turns"), "turns is not a non-empty list")
    for i, t in enumerate(turns):
        if not isinstance(t, dict):
            raise m.fail(m.expr("turns"), f"turns[{i}] is not a dict")
        missing = [k for k in TURN_FIELDS if k not in t]
        unknown = sorted(set(t) - set(TURN_FIELDS) - set(TURN_OPTIONAL))
        if missing or unknown:
            raise m.fail(m.expr("turns"), f"turns[{i}]: " + (f"missing {', '.join(missing)}" if missing else
                                                             f"unmapped field(s) {', '.join(unknown)}"))
        for k in ("input", "golden_text", "audio_file"):
            if not isinstance(t[k], str) or not t[k].strip():
                raise m.fail(m.expr("turns"), f"turns[{i}].{k} is not a non-empty string")
        call = t["required_function_call"]
        if call is not None and not (isinstance(call, dict) and set(call) == {"name", "args"}
                                     and isinstance(call["name"], str) and isinstance(call["args"], dict)):
            raise m.fail(m.expr("turns"), f"turns[{i}].required_function_call is neither None nor {{name, args}}")
        if call is None and "function_call_response" in t:
            raise m.fail(m.expr("turns"), f"turns[{i}] has a function_call_response but no required_function_call")
    return turns


def _tools(m: Module) -> tuple[Tool, ...]:
    node = m.expr("ToolsSchemaForTest")
    if not (isinstance(node, ast.Call) and len(node.keywords) == 1 and node.keywords[0].arg == "standard_tools"):
        raise m.fail(node, "ToolsSchemaForTest is not ToolsSchema(standard_tools=[...])")
    tools = []
    for name in name_list(m, node.keywords[0].value, "ToolsSchemaForTest.standard_tools"):
        kw = call_keywords(m, m.expr(name), "FunctionSchema", name)
        props, required = kw.get("properties") or {}, kw.get("required") or []
        if not isinstance(kw.get("name"), str) or not isinstance(kw.get("description"), str):
            raise m.fail(m.expr(name), f"{name}: FunctionSchema needs a string name and description")
        tools.append(Tool(name=kw["name"], description=kw["description"],
                          parameters={"type": "object", "properties": props, "required": required}))
    return tuple(tools)


def _system_prompt(m: Module) -> str:
    """system_instruction's string terms; its one call (the knowledge-base loader) is left out."""
    terms = string_sum(m, m.expr("system_instruction"), "system_instruction")
    calls = [t for t in terms if isinstance(t, ast.Call)]
    if len(calls) > 1 or any(c.args or c.keywords or not isinstance(c.func, ast.Name) for c in calls):
        raise m.fail(m.expr("system_instruction"), "system_instruction holds calls other than one knowledge-base "
                                                   "loader without arguments")
    return "".join(t for t in terms if isinstance(t, str)).strip()


def _config(m: Module) -> tuple[str, str]:
    body = m.classes.get("BenchmarkConfig")
    if body is None:
        raise m.fail(None, "no class BenchmarkConfig")
    values = {}
    for key in ("name", "description"):
        if key not in body:
            raise m.fail(None, f"BenchmarkConfig has no {key}")
        values[key] = ast.literal_eval(body[key]) if isinstance(body[key], ast.Constant) else None
        if not isinstance(values[key], str):
            raise m.fail(body[key], f"BenchmarkConfig.{key} is not a string literal")
    return values["name"], values["description"]


def licence_of(root: Path) -> tuple[str, str]:
    """(licence, where it was read): LICENSE's first line, else the first line of README's License section."""
    for name in ("LICENSE", "LICENSE.md", "LICENSE.txt"):
        if (root / name).is_file():
            lines = [ln.strip() for ln in (root / name).read_text(encoding="utf-8", errors="replace").splitlines()]
            return next((ln for ln in lines if ln), ""), name
    readme = root / "README.md"
    if readme.is_file():
        text = readme.read_text(encoding="utf-8", errors="replace")
        m = re.search(r"^#+\s*Licen[cs]e\s*\n+\s*(\S[^\n]*)", text, re.MULTILINE | re.IGNORECASE)
        if m:
            return m.group(1).strip(), "README.md (License section)"
    raise PeerFileError(f"{root}: no licence found (LICENSE, or a License section in README.md); "
                        "a peer benchmark is imported with its licence")


def _audio_file(root: Path, given: str, i: int) -> Path:
    name = Path(given.replace("\\", "/")).name
    path = root / AUDIO_DIR / name
    if not name.endswith(".wav") or not path.is_file():
        raise PeerFileError(f"{SHARED / 'turns.py'}: turns[{i}].audio_file {given!r}: no {AUDIO_DIR / name} "
                            f"({AUDIO_RULE})")
    return path


def convert(path: Path, benchmark: str | None, commit: str, repository: str = REPOSITORY,
            version: int = 1) -> Converted:
    """The benchmark as a scenario (its audio not yet written: write_folder), every file checked."""
    root, benchmark = find_root(path, benchmark)
    bench = Path("benchmarks") / benchmark
    turns_m = parse(root / SHARED / "turns.py", str(SHARED / "turns.py"))
    tools_m = parse(root / SHARED / "tools.py", str(SHARED / "tools.py"))
    system_m = parse(root / bench / "prompts" / "system.py", str(bench / "prompts" / "system.py"))
    config_name, description = _config(parse(root / bench / "config.py", str(bench / "config.py")))
    kb_path = root / bench / "data" / "knowledge_base.txt"
    try:
        kb = kb_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PeerFileError(f"{bench / 'data' / 'knowledge_base.txt'}: cannot read ({exc})") from None
    licence, licence_source = licence_of(root)
    peer_turns, tools = _turns(turns_m), _tools(tools_m)
    audio, turns, audio_meta = {}, [], {}
    for i, t in enumerate(peer_turns):
        tid = f"turn_{i:03d}"
        audio[tid] = _audio_file(root, t["audio_file"], i)
        call = t["required_function_call"]
        calls = () if call is None else (ExpectedCall(name=call["name"], args=args_of(call["args"]),
                                                      result=t.get("function_call_response", DEFAULT_RESULT)),)
        turns.append(Turn(id=tid, text=" ".join(t["input"].split()), audio=f"audio/{tid}.wav", audio_sha256="",
                          reply=reply_of(t["golden_text"]), golden_facts=facts_of(t["golden_text"]),
                          expected_calls=calls, tags=("tool_call",) if calls else ("no_tool_call",)))
        audio_meta[tid] = {"file": str(audio[tid].relative_to(root)), "sha256": file_sha256(audio[tid])}
    used = {p.name for p in audio.values()}
    title = next((ln.lstrip("#").strip() for ln in kb.splitlines() if ln.startswith("#")), "knowledge_base.txt")
    peer = {"name": "aiewf-eval", "repository": repository, "commit": commit, "benchmark": config_name,
            "licence": licence, "licence_source": licence_source,
            "paths": [str(SHARED / "turns.py"), str(SHARED / "tools.py"), str(AUDIO_DIR),
                      str(bench / "config.py"), str(bench / "prompts" / "system.py"),
                      str(bench / "data" / "knowledge_base.txt")],
            "rules": {"audio": AUDIO_RULE, "golden_facts": FACT_RULE,
                      "arguments": ARGS_RULE},
            "audio": audio_meta,
            "unused_audio": sorted(p.name for p in (root / AUDIO_DIR).glob("*.wav") if p.name not in used)}
    scenario = Scenario(
        name=f"{PEER}-{benchmark}".lower(), version=version, domain="event assistant (aiewf-eval peer benchmark)",
        description=f"{description} (aiewf-eval {config_name} at {commit[:12]}, {licence} licence, imported as published)",
        system_prompt=_system_prompt(system_m), voice="recorded", sample_rate=CATALOG_RATE, tools=tools,
        knowledge_base=(Document(id="knowledge_base", title=title, text=kb.strip("\n")),),
        initial_state={}, expected_end_state={}, turns=tuple(turns), schema=SCENARIO_SCHEMA,
        extra={"peer": peer})
    return Converted(scenario, audio)


def write_audio(source: Path, dest: Path, rate: int) -> str:
    """The peer's WAV at the scenario's rate: its bytes as they are when already mono 16-bit at
    `rate`, else resampled (scipy polyphase); the written file's sha256."""
    try:
        pcm, got = read_pcm16(source)
    except AudioError as exc:
        raise PeerFileError(str(exc)) from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    info = sf.info(str(source))
    if got == rate and (info.format, info.subtype) == ("WAV", "PCM_16"):
        shutil.copyfile(source, dest)
    else:
        write_wav(dest, np.clip(resample(pcm / 32768.0, got, rate), -1.0, 1.0), rate)
    return file_sha256(dest)


def write_folder(converted: Converted, folder: Path) -> Scenario:
    """scenario.json and audio/turn_NNN.wav in `folder` (a staging folder), each turn pinned."""
    s = converted.scenario
    turns = tuple(replace(t, audio_sha256=write_audio(converted.audio[t.id], folder / t.audio, s.sample_rate))
                  for t in s.turns)
    scenario = replace(s, turns=turns)
    dump(scenario, folder)
    return scenario
