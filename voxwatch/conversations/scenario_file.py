"""A scenario folder on disk: `scenario.json` plus one caller WAV per turn, read into `Scenario`.

Nothing in the file is trusted: every field is checked (type, required, unique ids, the tools an
expected call names and their JSON-schema parameters, matcher syntax, effects, tables, text free
of control characters) and each audio file must stay inside the folder, exist, match its sha256
and be mono 16-bit WAV at the scenario's rate. A problem raises `ScenarioError` naming the file
and the field path, so an author fixes it in one go:
`clinic/scenario.json: turns[3].expected_calls[0].args.date: unknown matcher 'regexp' (...)`.

A scenario's identity is its name, its version and its pin: the sha256 of scenario.json, which
holds every turn audio's sha256, so the pin names the audio as well as the script.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import soundfile as sf

from voxwatch.foundation.audio import AudioError, probe
from voxwatch.foundation.integrity import file_sha256
from voxwatch.foundation.text import control_chars

from voxwatch.foundation.scenario import (MATCHERS, SCENARIO_SCHEMA, Document, ExpectedCall, Scenario, StateEndpoint, Tool,
                                          Turn)

FILE = "scenario.json"
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
TAG = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
EFFECT_OPS = ("insert", "update", "delete")
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,127}$")
STATE_TOKEN_ENV = re.compile(r"^VOXWATCH_AGENT_[A-Z0-9_]{1,100}_TOKEN$")
"""The only variables a scenario's `token_env` may name: a deployed agent's own (docs/CONVERSATIONS.md). A
scenario is shared; naming any other variable (a vendor's API key) would send that secret to its endpoint."""
MAX_STATE_TIMEOUT_S = 120
MIN_RATE, MAX_RATE = 8_000, 48_000


class ScenarioError(ValueError):
    """A scenario file that breaks its schema; the message names the file and the field path."""


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario with where it lives and its pin (the sha256 of its scenario.json)."""

    scenario: Scenario
    folder: Path
    pin: str

    @property
    def identity(self) -> str:
        return f"{self.scenario.name}@v{self.scenario.version}#{self.pin[:12]}"

    def audio_path(self, turn: Turn) -> Path:
        return self.folder / turn.audio


class _Checker:
    """Reads one record, each error prefixed with the file and the field path."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, path: str, message: str) -> ScenarioError:
        return ScenarioError(f"{self.where}: {path}: {message}" if path else f"{self.where}: {message}")

    def obj(self, value: Any, path: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, dict):
            raise self.fail(path, f"expected an object, found {_kind(value)}")
        missing = [k for k in required if k not in value]
        if missing:
            raise self.fail(path, f"missing field {', '.join(repr(k) for k in missing)}")
        unknown = sorted(set(value) - set(required) - set(optional))
        if unknown:
            raise self.fail(path, f"unknown field {', '.join(repr(k) for k in unknown)} "
                                  f"(known: {', '.join(required + optional)})")
        return value

    def text(self, value: Any, path: str, multiline: bool = False, empty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(path, f"expected a string, found {_kind(value)}")
        if not empty and not value.strip():
            raise self.fail(path, "expected a non-empty string")
        bad = control_chars(value.replace("\n", " ").replace("\t", " ") if multiline else value)
        if bad:
            raise self.fail(path, f"holds control characters ({', '.join(bad)})")
        return value

    def pattern(self, value: Any, path: str, regex: re.Pattern, what: str) -> str:
        value = self.text(value, path)
        if not regex.match(value):
            raise self.fail(path, f"{value!r}: expected {what}")
        return value

    def integer(self, value: Any, path: str, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(path, f"expected an integer from {low} to {high}, found {_shown(value)}")
        return value

    def array(self, value: Any, path: str, item: Callable[[Any, str], Any], non_empty: bool = False) -> tuple:
        if not isinstance(value, list):
            raise self.fail(path, f"expected a list, found {_kind(value)}")
        if non_empty and not value:
            raise self.fail(path, "expected at least one item")
        return tuple(item(v, f"{path}[{i}]") for i, v in enumerate(value))

    def unique(self, values: list[str], path: str, what: str) -> None:
        seen: set[str] = set()
        for i, v in enumerate(values):
            if v in seen:
                raise self.fail(f"{path}[{i}]", f"duplicate {what} {v!r}")
            seen.add(v)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, (int, float, str, bool)) or value is None else _kind(value)


def check_matcher(c: _Checker, value: Any, path: str) -> Any:
    """A matcher as MATCHERS describes it: a plain JSON value (exact), or an object with one matcher key."""
    if not isinstance(value, dict):
        return value
    keys = set(value)
    if keys == {"approx", "tolerance"}:
        for key in ("approx", "tolerance"):
            v = value[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise c.fail(f"{path}.{key}", f"expected a number, found {_kind(v)}")
        if value["tolerance"] < 0:
            raise c.fail(f"{path}.tolerance", "expected a number of 0 or more")
        return value
    if len(keys) != 1 or "tolerance" in keys:
        shown = ", ".join(sorted(repr(k) for k in keys)) or "none"
        raise c.fail(path, f"a matcher object has exactly one of {', '.join(MATCHERS)} (with 'tolerance' beside "
                           f"'approx'); found keys {shown}")
    (key, arg), = value.items()
    if key not in MATCHERS:
        raise c.fail(path, f"unknown matcher {key!r} (one of {', '.join(MATCHERS)})")
    if key == "any" and arg is not True:
        raise c.fail(f"{path}.any", "expected true")
    if key == "one_of":
        if not isinstance(arg, list) or not arg:
            raise c.fail(f"{path}.one_of", "expected a non-empty list of values")
    if key == "set" and not isinstance(arg, list):
        raise c.fail(f"{path}.set", f"expected a list, found {_kind(arg)}")
    if key == "approx":
        raise c.fail(path, "approx needs a tolerance")
    if key == "regex":
        c.text(arg, f"{path}.regex")
        try:
            re.compile(arg)
        except re.error as exc:
            raise c.fail(f"{path}.regex", f"does not compile ({exc})") from None
    return value


def _schema(c: _Checker, value: Any, path: str) -> dict[str, Any]:
    """A tool's parameters: a JSON-schema object with named properties; required ones among them."""
    if not isinstance(value, dict):
        raise c.fail(path, f"expected a JSON schema object, found {_kind(value)}")
    if value.get("type") != "object":
        raise c.fail(f"{path}.type", "expected \"object\" (a function's arguments are an object)")
    props = value.get("properties", {})
    if not isinstance(props, dict):
        raise c.fail(f"{path}.properties", f"expected an object, found {_kind(props)}")
    for name, prop in props.items():
        c.pattern(name, f"{path}.properties", ID, "a parameter name of letters, digits, '.', '_' or '-'")
        if not isinstance(prop, dict):
            raise c.fail(f"{path}.properties.{name}", f"expected a JSON schema object, found {_kind(prop)}")
    required = value.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise c.fail(f"{path}.required", "expected a list of parameter names")
    for i, name in enumerate(required):
        if name not in props:
            raise c.fail(f"{path}.required[{i}]", f"{name!r} is not among the properties")
    return value


def _tool(c: _Checker, value: Any, path: str) -> Tool:
    r = c.obj(value, path, ("name", "description", "parameters"), ("effect",))
    name = c.pattern(r["name"], f"{path}.name", ID, "a function name of letters, digits, '.', '_' or '-'")
    params = _schema(c, r["parameters"], f"{path}.parameters")
    effect = r.get("effect")
    if effect is not None:
        e = c.obj(effect, f"{path}.effect", ("op", "table", "key"))
        if e["op"] not in EFFECT_OPS:
            raise c.fail(f"{path}.effect.op", f"unknown op {_shown(e['op'])} (one of {', '.join(EFFECT_OPS)})")
        c.pattern(e["table"], f"{path}.effect.table", ID, "a table name of letters, digits, '.', '_' or '-'")
        key = c.text(e["key"], f"{path}.effect.key")
        if key not in params.get("required", []):
            raise c.fail(f"{path}.effect.key", f"{key!r} must be a required parameter of {name} (it names the record)")
    return Tool(name=name, description=c.text(r["description"], f"{path}.description", multiline=True),
                parameters=params, effect=effect)


def _document(c: _Checker, value: Any, path: str) -> Document:
    r = c.obj(value, path, ("id", "title", "text"))
    return Document(id=c.pattern(r["id"], f"{path}.id", ID, "an id of letters, digits, '.', '_' or '-'"),
                    title=c.text(r["title"], f"{path}.title"), text=c.text(r["text"], f"{path}.text", multiline=True))


def _tables(c: _Checker, value: Any, path: str, matchers: bool) -> dict[str, list[dict[str, Any]]]:
    """table name -> list of records (objects); an expected end state's field values are matchers."""
    if not isinstance(value, dict):
        raise c.fail(path, f"expected an object of tables, found {_kind(value)}")
    for table, records in value.items():
        c.pattern(table, path, ID, "table names of letters, digits, '.', '_' or '-'")
        where = f"{path}.{table}"
        if not isinstance(records, list):
            raise c.fail(where, f"expected a list of records, found {_kind(records)}")
        for i, record in enumerate(records):
            if not isinstance(record, dict):
                raise c.fail(f"{where}[{i}]", f"expected a record (an object), found {_kind(record)}")
            if matchers:
                for field_name, v in record.items():
                    check_matcher(c, v, f"{where}[{i}].{field_name}")
    return value


def _call(c: _Checker, value: Any, path: str, tools: dict[str, Tool]) -> ExpectedCall:
    r = c.obj(value, path, ("name", "args", "result"), ("state_args",))
    name = c.text(r["name"], f"{path}.name")
    tool = tools.get(name)
    if tool is None:
        raise c.fail(f"{path}.name", f"no tool named {name!r} (tools: {', '.join(tools) or 'none'})")
    args = r["args"]
    if not isinstance(args, dict):
        raise c.fail(f"{path}.args", f"expected an object, found {_kind(args)}")
    props = tool.parameters.get("properties", {})
    for arg, matcher in args.items():
        if arg not in props:
            raise c.fail(f"{path}.args.{arg}", f"not a parameter of {name} ({', '.join(props) or 'none'})")
        _fits(c, check_matcher(c, matcher, f"{path}.args.{arg}"), props[arg], f"{path}.args.{arg}")
    state_args = c.array(r.get("state_args", []), f"{path}.state_args", lambda v, p: c.text(v, p))
    for i, arg in enumerate(state_args):
        if arg not in args:
            raise c.fail(f"{path}.state_args[{i}]", f"{arg!r} is not an argument of this expected call")
    return ExpectedCall(name=name, args=args, result=r["result"], state_args=state_args)


_JSON_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                           "boolean": (bool,), "array": (list,), "object": (dict,), "null": (type(None),)}


def _fits(c: _Checker, matcher: Any, prop: dict[str, Any], path: str) -> None:
    """A plain (exact) expected value must be one the parameter's schema allows: its type and enum.
    A value no call can have is an expected call no model can make."""
    if isinstance(matcher, dict):
        return
    kind = prop.get("type")
    allowed = _JSON_TYPES.get(kind, ()) if isinstance(kind, str) else ()
    bad_bool = isinstance(matcher, bool) and kind in ("integer", "number")
    if allowed and (not isinstance(matcher, allowed) or bad_bool):
        raise c.fail(path, f"{_shown(matcher)} is not of the parameter's type {kind!r}")
    if isinstance(prop.get("enum"), list) and matcher not in prop["enum"]:
        raise c.fail(path, f"{_shown(matcher)} is not one of the parameter's enum "
                           f"({', '.join(_shown(v) for v in prop['enum'])})")


def _effect_tables(c: _Checker, tools: tuple[Tool, ...], state: dict[str, list[dict[str, Any]]]) -> None:
    """Each table a tool changes starts in initial_state (as [] if empty), and each of its records
    carries the tool's key once: the simulated backend finds records by that key."""
    for i, tool in enumerate(tools):
        if tool.effect is None:
            continue
        table, key = tool.effect["table"], tool.effect["key"]
        if table not in state:
            raise c.fail(f"tools[{i}].effect.table", f"{table!r} is not a table of initial_state "
                                                     "(add it, as [] if it starts empty)")
        seen: set[str] = set()
        for n, record in enumerate(state[table]):
            value = record.get(key)
            if value is None:
                raise c.fail(f"initial_state.{table}[{n}]", f"no {key!r} (the key of {tool.name})")
            if json.dumps(value, sort_keys=True) in seen:
                raise c.fail(f"initial_state.{table}[{n}].{key}", f"duplicate key {_shown(value)}")
            seen.add(json.dumps(value, sort_keys=True))


def _audio_field(c: _Checker, value: Any, path: str) -> str:
    """A relative path inside the folder, or "" (not rendered yet); the file is checked later."""
    value = c.text(value, path, empty=True)
    given = Path(value)
    if value and (given.is_absolute() or value.startswith(("/", "\\")) or ".." in given.parts or "\\" in value):
        raise c.fail(path, f"{value!r} must be a path relative to the scenario folder, without '..'")
    return value


def _turn(c: _Checker, value: Any, path: str, tools: dict[str, Tool]) -> Turn:
    r = c.obj(value, path, ("id", "text", "audio", "audio_sha256", "reply"),
              ("golden_facts", "expected_calls", "tags"))
    sha = c.text(r["audio_sha256"], f"{path}.audio_sha256", empty=True)
    if sha and not SHA256.match(sha):
        raise c.fail(f"{path}.audio_sha256", "expected 64 lower-case hex digits (or \"\" before the audio is rendered)")
    tags = c.array(r.get("tags", []), f"{path}.tags", lambda v, p: c.pattern(
        v, p, TAG, "a tag of lower-case letters, digits, '_' or '-'"))
    c.unique(list(tags), f"{path}.tags", "tag")
    return Turn(
        id=c.pattern(r["id"], f"{path}.id", ID, "an id of letters, digits, '.', '_' or '-'"),
        text=c.text(r["text"], f"{path}.text"),
        audio=_audio_field(c, r["audio"], f"{path}.audio"),
        audio_sha256=sha,
        reply=c.text(r["reply"], f"{path}.reply"),
        golden_facts=c.array(r.get("golden_facts", []), f"{path}.golden_facts", lambda v, p: c.text(v, p)),
        expected_calls=c.array(r.get("expected_calls", []), f"{path}.expected_calls",
                               lambda v, p: _call(c, v, p, tools)),
        tags=tags)


def _state_endpoint(c: _Checker, value: Any, path: str) -> StateEndpoint:
    """The names of the variables that hold a deployed agent's state URL and token, and how long to wait."""
    r = c.obj(value, path, ("url_env",), ("token_env", "timeout_s"))
    what = "an environment variable's name (upper-case letters, digits, '_')"
    token = r.get("token_env")
    timeout = r.get("timeout_s", 10)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_STATE_TIMEOUT_S:
        raise c.fail(f"{path}.timeout_s", f"expected seconds above 0, at most {MAX_STATE_TIMEOUT_S}, found {_shown(timeout)}")
    return StateEndpoint(c.pattern(r["url_env"], f"{path}.url_env", ENV_NAME, what),
                         None if token is None else c.pattern(
                             token, f"{path}.token_env", STATE_TOKEN_ENV,
                             "the agent's own variable, VOXWATCH_AGENT_<NAME>_TOKEN (no other secret is sent)"),
                         float(timeout))


TOP_REQUIRED = ("schema", "name", "version", "domain", "description", "system_prompt", "voice", "sample_rate",
                "tools", "knowledge_base", "initial_state", "expected_end_state", "turns")


def parse(record: Any, where: str) -> Scenario:
    """The scenario in a decoded scenario.json, every field checked (not the audio files: check_audio)."""
    c = _Checker(where)
    r = c.obj(record, "", TOP_REQUIRED, ("extra", "state_endpoint"))
    if r["schema"] != SCENARIO_SCHEMA:
        raise c.fail("schema", f"unknown schema version {_shown(r['schema'])} (this voxwatch reads {SCENARIO_SCHEMA})")
    tools = c.array(r["tools"], "tools", lambda v, p: _tool(c, v, p))
    c.unique([t.name for t in tools], "tools", "tool name")
    docs = c.array(r["knowledge_base"], "knowledge_base", lambda v, p: _document(c, v, p))
    c.unique([d.id for d in docs], "knowledge_base", "document id")
    by_name = {t.name: t for t in tools}
    turns = c.array(r["turns"], "turns", lambda v, p: _turn(c, v, p, by_name), non_empty=True)
    c.unique([t.id for t in turns], "turns", "turn id")
    c.unique([t.audio for t in turns if t.audio], "turns", "audio path")
    extra = r.get("extra", {})
    if not isinstance(extra, dict):
        raise c.fail("extra", f"expected an object, found {_kind(extra)}")
    initial_state = _tables(c, r["initial_state"], "initial_state", matchers=False)
    _effect_tables(c, tools, initial_state)
    end_state = _tables(c, r["expected_end_state"], "expected_end_state", matchers=True)
    for table in end_state:
        if table not in initial_state:  # a misspelt table would fail every conversation's end state
            raise c.fail(f"expected_end_state.{table}", f"not a table of initial_state ({', '.join(initial_state)})")
    return Scenario(
        name=c.pattern(r["name"], "name", NAME, "lower-case letters, digits, '.', '_' or '-' (at most 64)"),
        version=c.integer(r["version"], "version", 1, 2**31 - 1),
        domain=c.text(r["domain"], "domain"),
        description=c.text(r["description"], "description"),
        system_prompt=c.text(r["system_prompt"], "system_prompt", multiline=True),
        voice=c.text(r["voice"], "voice"),
        sample_rate=c.integer(r["sample_rate"], "sample_rate", MIN_RATE, MAX_RATE),
        tools=tools, knowledge_base=docs,
        initial_state=initial_state,
        expected_end_state=end_state,
        turns=turns, schema=r["schema"], extra=extra,
        state_endpoint=_state_endpoint(c, r["state_endpoint"], "state_endpoint") if "state_endpoint" in r else None)


def where_of(folder: Path) -> str:
    return f"{folder.name}/{FILE}"


def read(folder: Path) -> tuple[Scenario, str]:
    """The scenario.json of a folder, parsed and checked, with its pin; the audio is not read."""
    path = folder / FILE
    where = where_of(folder)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{where}: cannot read ({exc.strerror or exc})") from None
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{where}: not UTF-8 (byte {exc.start + 1})") from None
    except (ValueError, RecursionError) as exc:
        raise ScenarioError(f"{where}: not JSON ({exc})") from None
    return parse(record, where), file_sha256(path)


def check_audio(scenario: Scenario, folder: Path, turns: tuple[Turn, ...] | None = None) -> None:
    """Each turn's audio: inside the folder (no symlink out), present, its sha256, mono 16-bit WAV at the rate."""
    c = _Checker(where_of(folder))
    try:
        root = folder.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise c.fail("", f"cannot resolve the folder ({exc})") from None
    for i, turn in enumerate(scenario.turns):
        if turns is not None and turn not in turns:
            continue
        path = f"turns[{i}].audio"
        if not turn.audio or not turn.audio_sha256:
            raise c.fail(path, "no audio yet (render it: voxwatch scenarios import --synthesize)")
        try:
            resolved = (folder / turn.audio).resolve(strict=True)
        except FileNotFoundError:
            raise c.fail(path, f"{turn.audio}: no such file") from None
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise c.fail(path, f"{turn.audio}: cannot resolve ({exc})") from None
        if not resolved.is_relative_to(root):
            raise c.fail(path, f"{turn.audio}: leads outside the scenario folder")
        if not resolved.is_file():
            raise c.fail(path, f"{turn.audio}: not a file")
        if file_sha256(resolved) != turn.audio_sha256:
            raise c.fail(path, f"{turn.audio}: sha256 does not match audio_sha256; refusing the scenario")
        _check_wav(c, path, resolved, turn.audio, scenario.sample_rate)


def _check_wav(c: _Checker, path: str, file: Path, shown: str, rate: int) -> None:
    try:
        header = probe(file)
        subtype = sf.info(str(file)).subtype
    except (AudioError, sf.LibsndfileError, RuntimeError) as exc:
        raise c.fail(path, f"{shown}: {str(exc).removeprefix(str(file) + ': ')}") from None
    problems = [p for p, bad in ((f"{header.format} (expected WAV)", header.format != "WAV"),
                                 (f"{header.channels} channels (expected mono)", header.channels != 1),
                                 (f"{subtype} (expected PCM_16)", subtype != "PCM_16"),
                                 (f"{header.rate} Hz (expected the scenario's {rate} Hz)", header.rate != rate),
                                 ("truncated", header.missing_bytes > 0)) if bad]
    if problems:
        raise c.fail(path, f"{shown}: {', '.join(problems)}")


def load(folder: Path, verify_audio: bool = True) -> LoadedScenario:
    """A scenario folder, checked; with verify_audio every turn's WAV too (before anything is measured)."""
    scenario, pin = read(folder)
    if verify_audio:
        check_audio(scenario, folder)
    return LoadedScenario(scenario, folder, pin)


def to_record(scenario: Scenario) -> dict[str, Any]:
    """The scenario as scenario.json's object, fields in a reading order (schema first)."""
    def call(e: ExpectedCall) -> dict[str, Any]:
        out = {"name": e.name, "args": e.args, "result": e.result}
        return out | ({"state_args": list(e.state_args)} if e.state_args else {})

    def turn(t: Turn) -> dict[str, Any]:
        return {"id": t.id, "text": t.text, "tags": list(t.tags), "reply": t.reply,
                "golden_facts": list(t.golden_facts), "expected_calls": [call(e) for e in t.expected_calls],
                "audio": t.audio, "audio_sha256": t.audio_sha256}

    s = scenario
    record: dict[str, Any] = {
        "schema": s.schema, "name": s.name, "version": s.version, "domain": s.domain, "description": s.description,
        "voice": s.voice, "sample_rate": s.sample_rate, "system_prompt": s.system_prompt,
        "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters}
                  | ({"effect": t.effect} if t.effect is not None else {}) for t in s.tools],
        "knowledge_base": [{"id": d.id, "title": d.title, "text": d.text} for d in s.knowledge_base],
        "initial_state": s.initial_state, "expected_end_state": s.expected_end_state,
        "turns": [turn(t) for t in s.turns]}
    if s.state_endpoint is not None:
        e = s.state_endpoint
        record["state_endpoint"] = {"url_env": e.url_env, "timeout_s": e.timeout_s} | (
            {"token_env": e.token_env} if e.token_env else {})
    return record | ({"extra": s.extra} if s.extra else {})


def dump(scenario: Scenario, folder: Path) -> str:
    """Write scenario.json (deterministic: same scenario, same bytes) and return its pin."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FILE
    path.write_text(json.dumps(to_record(scenario), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return file_sha256(path)
