"""`voxwatch scenarios list|show|import|run|personas|noise`: the conversation scenarios of the S2S board.

A scenario is named by its name, version and pin (the sha256 of its scenario.json, which pins
every turn's audio); the pin is what a conversation row will record, so `list` shows it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Callable

from voxwatch.boards import listing
from voxwatch.config import Config
from voxwatch.conversations.catalog import ScenarioCatalog, UnknownScenario, bundled_root
from voxwatch.conversations import peer_aiewf, peer_source
from voxwatch.conversations.importer import ScenarioImportError, import_peer, import_scenario
from voxwatch.conversations.noise_library import NoiseError, import_noise, imported_noises
from voxwatch.foundation.persona import PersonaError, find, personas
from voxwatch.foundation.scenario import ExpectedCall, Scenario
from voxwatch.conversations.scenario_file import LoadedScenario, ScenarioError, load
from voxwatch.foundation.audio import AudioError, probe

ConfigOf = Callable[[argparse.Namespace], Config]
ERRORS = (ScenarioError, ScenarioImportError, UnknownScenario, AudioError, PersonaError, NoiseError)
"""The user errors of these commands (voxwatch.cli prints them in one line, exit 2)."""
PIN_SHOWN = 12
LOCAL_CASCADE = "local/cascade-scripted-baseline"
PERSONAS_FILE_HELP = "a TOML ([[persona]] tables) or JSON file of your own personas, besides the bundled ones"


def register(sub: argparse._SubParsersAction, config_of: ConfigOf) -> None:
    """Add the `scenarios` command; config_of reads --config as every other command does."""
    sc = sub.add_parser("scenarios", help="the multi-turn conversation scenarios (bundled and imported)")
    actions = sc.add_subparsers(dest="action", required=True)
    ls = actions.add_parser("list", help="name, version, domain, turns, tools, caller audio and pin of each scenario")
    listing.add_format(ls)
    ls.set_defaults(func=lambda args: cmd_list(args, config_of(args)))
    sh = actions.add_parser("show", help="a scenario's turns with their tags and expected calls")
    sh.add_argument("name", help="the scenario's name (`voxwatch scenarios list`)")
    sh.add_argument("--version", type=int, help="a version (default: the highest)")
    sh.set_defaults(func=lambda args: cmd_show(args, config_of(args)))
    im = actions.add_parser("import", help="check a folder (scenario.json + turn audio) and copy it into "
                                           "[scenarios] dir")
    im.add_argument("path", help="the scenario folder, or a peer's published benchmark (--peer)")
    im.add_argument("--synthesize", action="store_true",
                    help="render turns without audio with the scenario's eSpeak NG voice, and pin them")
    im.add_argument("--peer", choices=("aiewf",), help="PATH is a peer's benchmark layout: aiewf (Daily's aiewf-eval: "
                                                      "an export, clone or bare mirror; found without this flag too)")
    im.add_argument("--benchmark", help="the peer benchmark to import (aiewf: a folder of benchmarks/, "
                                        "e.g. aiwf_medium_context)")
    im.add_argument("--commit", help="the peer's commit an exported folder holds (a clone or mirror says its own)")
    im.add_argument("--repository", default=peer_aiewf.REPOSITORY, help="the peer repository recorded as the source "
                                                                        f"(default {peer_aiewf.REPOSITORY})")
    im.add_argument("--scenario-version", type=int, default=1, help="the imported peer scenario's version (default 1)")
    im.set_defaults(func=lambda args: cmd_import(args, config_of(args)))
    rn = actions.add_parser("run", help="hold a scenario's conversation with a model (S2S, cascade, or the no-key "
                                        "local cascade) and print its turns and the S2S conversation board")
    rn.add_argument("name", nargs="?", default="clinic-desk", help="the scenario (default: clinic-desk)")
    rn.add_argument("--version", type=int, help="a version (default: the highest)")
    rn.add_argument("--model", default=LOCAL_CASCADE, help=f"a registry id on the S2S board (default: {LOCAL_CASCADE})")
    rn.add_argument("--turns", type=int, help="only the first N turns (a trial: the end state is then not checked)")
    rn.add_argument("--repeats", type=int, default=1, help="conversations to hold, for pass^k (default 1)")
    rn.add_argument("--recordings", type=Path, help="a folder for the two-channel call recordings (with --store, "
                                                     "default: [run] recordings_dir)")
    rn.add_argument("--store", metavar="URL", help="keep each conversation with its turns in this store "
                                                   "(sqlite:///PATH or postgresql://...), under a run record, as `voxwatch run` "
                                                   "keeps its conversations (default: nothing is stored)")
    rn.add_argument("--persona", default="default", help="the caller's persona: voice, rate, background noise "
                                                          "(voxwatch scenarios personas; default: the scenario's audio)")
    rn.add_argument("--personas-file", type=Path, help=PERSONAS_FILE_HELP)
    rn.set_defaults(func=lambda args: cmd_run(args, config_of(args)))
    pe = actions.add_parser("personas", help="the callers' personas: voice, rate, background noise and SNR")
    pe.add_argument("--personas-file", type=Path, help=PERSONAS_FILE_HELP)
    listing.add_format(pe)
    pe.set_defaults(func=cmd_personas)
    no = actions.add_parser("noise", help="your own background-noise recordings for personas (pinned by sha256, "
                                          "with their licence)")
    noise_actions = no.add_subparsers(dest="noise_action", required=True)
    ni = noise_actions.add_parser("import", help="copy a recording (WAV, FLAC, OGG) into the noise library")
    ni.add_argument("path", type=Path, help="the recording: a WAV, FLAC or OGG file, at least 1 s long")
    ni.add_argument("--license", required=True, help="the recording's licence (kept with it), e.g. CC-BY-4.0")
    ni.add_argument("--name", help="the name a persona's `noise` gives it (default: from the file name)")
    ni.add_argument("--source", default="", help="where it came from (default: the file name)")
    ni.set_defaults(func=lambda args: cmd_noise_import(args, config_of(args)))
    nl = noise_actions.add_parser("list", help="the imported noises: name, sha256 (a persona's noise_sha256), licence")
    listing.add_format(nl)
    nl.set_defaults(func=lambda args: cmd_noise_list(args, config_of(args)))


def catalog(cfg: Config) -> ScenarioCatalog:
    return ScenarioCatalog([bundled_root(), cfg.scenarios_dir])


def audio_seconds(loaded: LoadedScenario) -> float:
    """The caller's audio, from the WAV headers."""
    total = 0.0
    for turn in loaded.scenario.turns:
        header = probe(loaded.audio_path(turn))
        total += header.frames / header.rate
    return total


def cmd_list(args: argparse.Namespace, cfg: Config) -> int:
    entries = catalog(cfg).entries()
    if not entries and args.format == "table":
        print("no scenarios")
        return 0
    table = []
    for e in entries:
        loaded = load(e.folder, verify_audio=False)
        s = loaded.scenario
        pin = loaded.pin[:PIN_SHOWN] if args.format == "table" else loaded.pin  # a program gets the whole pin
        table.append((s.name, s.version, s.domain, len(s.turns), len(s.tools), round(audio_seconds(loaded), 1), pin,
                      "bundled" if e.bundled else str(e.folder)))
    listing.emit(("name", "version", "domain", "turns", "tools", "audio s", "pin", "source"), table, args.format,
                 wide=args.wide)
    return 0


def _value(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def _call(e: ExpectedCall) -> str:
    args = ", ".join(f"{k}={_value(v)}" + ("*" if k in e.state_args else "") for k, v in e.args.items())
    return f"{e.name}({args})"


def cmd_show(args: argparse.Namespace, cfg: Config) -> int:
    loaded = catalog(cfg).load(args.name, args.version)
    s = loaded.scenario
    print(f"{s.name} version {s.version} ({s.domain}): {s.description}")
    print(f"pin {loaded.pin}; caller voice {s.voice} at {s.sample_rate} Hz; {len(s.turns)} turns, "
          f"{audio_seconds(loaded):.1f} s of caller audio; folder {loaded.folder}")
    tools = [t.name if t.effect is None else f"{t.name} ({t.effect['op']} {t.effect['table']})" for t in s.tools]
    _print_provenance(s)
    print(f"tools: {', '.join(tools)}")
    print(f"knowledge base: {', '.join(d.id for d in s.knowledge_base)}")
    tables = [f"{table} ({len(records)} records)" for table, records in s.expected_end_state.items()]
    print(f"end state: {', '.join(tables) or 'none'}")
    print("(* an argument carried from an earlier turn)")
    for turn in s.turns:
        print(f"\n{turn.id} [{', '.join(turn.tags)}]")
        print(f"  caller: {turn.text}")
        for call in turn.expected_calls:
            print(f"  call:   {_call(call)}")
        print(f"  agent:  {turn.reply}")
        if turn.golden_facts:
            print(f"  facts:  {' | '.join(turn.golden_facts)}")
    return 0


def cmd_run(args: argparse.Namespace, cfg: Config) -> int:
    from voxwatch.conversations.scenario_run import StoreTarget, hold  # imported when needed: the adapters and engines

    if args.turns is not None and args.turns < 1 or args.repeats < 1:
        raise ScenarioError("--turns and --repeats must be at least 1")
    persona = find(args.persona, args.personas_file)
    store = StoreTarget(cfg.store_url, tuple(cfg.spool_dirs), cfg.region) if args.store else None
    recordings = args.recordings or (cfg.recordings_dir if store is not None else None)  # a stored row names its file
    return hold(cfg, catalog(cfg).load(args.name, args.version), args.model, turns=args.turns, repeats=args.repeats,
                recordings=recordings, persona=persona, store=store)


def cmd_personas(args: argparse.Namespace) -> int:
    """Each persona with its identity (what a conversation row records) and what it changes."""
    table = [(p.name, p.identity, p.voice or "(scenario)", p.rate_wpm or "(scenario)", p.noise or "none",
              p.snr_db, p.barge_in_ms, p.pause_ms, p.fillers, p.description) for p in personas(args.personas_file).values()]
    listing.emit(("name", "identity", "voice", "rate wpm", "noise", "snr dB", "barge-in ms", "pause ms", "fillers",
                  "description"), table, args.format, wide=args.wide)
    return 0


def cmd_noise_import(args: argparse.Namespace, cfg: Config) -> int:
    noise, new = import_noise(args.path, cfg.noises_dir, args.license, args.name, args.source)
    what = "imported" if new else "already imported with these exact samples:"
    print(f"{what} noise {noise.name} ({noise.seconds:g} s at {noise.sample_rate} Hz, {noise.license}) into "
          f"{cfg.noises_dir / noise.name}")
    print(f'use it in a persona: noise = "{noise.name}", noise_sha256 = "{noise.sha256}", snr_db = ...')
    return 0


def cmd_noise_list(args: argparse.Namespace, cfg: Config) -> int:
    table = [(n.name, n.sha256, n.seconds, n.sample_rate, n.license, n.source) for n in imported_noises(cfg.noises_dir)]
    listing.emit(("name", "sha256", "seconds", "rate", "license", "source"), table, args.format, wide=args.wide)
    return 0


def _is_peer(args: argparse.Namespace, path: Path) -> bool:
    given = (args.peer, args.benchmark, args.commit)
    return any(v is not None for v in given) or peer_aiewf.is_layout(path) or peer_source.is_bare(path)


def _print_provenance(s: Scenario) -> None:
    """A peer benchmark's source: where, which commit, under which licence (extra.peer)."""
    peer = s.extra.get("peer")
    if isinstance(peer, dict):
        print(f"from {peer.get('repository')} at {str(peer.get('commit'))[:12]}, benchmark {peer.get('benchmark')}, "
              f"licence {peer.get('licence')}")


def cmd_import(args: argparse.Namespace, cfg: Config) -> int:
    path = Path(args.path)
    if _is_peer(args, path):
        if args.synthesize:
            raise ScenarioImportError("--synthesize is for voxwatch scenario folders; a peer benchmark brings its audio")
        done = import_peer(path, cfg.scenarios_dir, catalog(cfg), args.benchmark, args.commit, args.repository,
                           args.scenario_version)
    else:
        done = import_scenario(path, cfg.scenarios_dir, catalog(cfg), synthesize=args.synthesize)
    s = done.loaded.scenario
    _print_provenance(s)
    if done.rendered:
        print(f"synthesized {len(done.rendered)} turn(s) with eSpeak NG voice {s.voice}: {', '.join(done.rendered)}")
    if done.unchanged:
        print(f"{s.name} version {s.version} is already in the catalog with these exact bytes "
              f"(pin {done.loaded.pin[:PIN_SHOWN]}, {done.loaded.folder}); nothing to do")
    else:
        print(f"imported {s.name} version {s.version} ({len(s.turns)} turns, pin {done.loaded.pin[:PIN_SHOWN]}) "
              f"into {done.loaded.folder}")
    return 0

