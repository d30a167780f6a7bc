"""A peer's published benchmark imported and held whole: `python -m benchmarks.peer_import
--source PATH [--benchmark aiwf_medium_context] [--vendors openai,gemini]`.

PATH is Daily's aiewf-eval as published (a bare mirror, a clone, or an export with --commit). The
benchmark is imported with `voxwatch scenarios import`'s code (voxwatch/conversations/peer_aiewf.py)
into a temporary scenarios folder, imported again (the same bytes: nothing changes), and then held
in one conversation per vendor against its S2S emulator, whose scripted agent makes every turn's
expected calls and says its reply (benchmarks/conversation_truth.py's agent, unperturbed). Every
turn must come back ok with tool use, golden facts and turn-taking passing: what a perfect agent
scores on the imported scenario, so a mapping rule no agent can satisfy shows here. Without PATH
nothing is measured (the peer's files are not part of voxwatch): `--quick` instead imports the small
benchmark in aiewf-eval's layout that tests/test_scenario_peer_import.py builds (3 short turns,
tests/support/aiewf_layout.py; spoken by eSpeak NG) and holds it against the OpenAI Realtime emulator
alone: the same code path in seconds.

Last line: one JSON object with `import_target_met` and `turns_target_met`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from benchmarks.conversation_truth import MODELS, converse, script
from voxwatch.conversations.catalog import ScenarioCatalog
from voxwatch.conversations.importer import import_peer
from voxwatch.providers.registry import Registry

CODE_DIMENSIONS = ("tool_use_correct", "kb_grounding", "turn_taking")


def failures(run) -> list[str]:
    """Each turn that is not ok, or whose code-decided dimension does not pass."""
    out = [f"{t.turn_id}: {t.status} ({t.reason})" for t in run.turns if t.status != "ok"]
    for t in run.score.turns:
        for dim in CODE_DIMENSIONS:
            v = t.verdicts.get(dim)
            if v is not None and v.passed is False:
                out.append(f"{t.turn_id} {dim}: {v.rule}: {v.reason}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, help="aiewf-eval: a bare mirror, clone or export")
    parser.add_argument("--benchmark", default="aiwf_medium_context")
    parser.add_argument("--commit", help="for an exported folder: the peer's commit")
    parser.add_argument("--vendors", default=",".join(MODELS))
    parser.add_argument("--quick", action="store_true",
                        help="no --source: the tests' small aiewf-eval layout, against the OpenAI emulator (seconds)")
    args = parser.parse_args()
    if (args.source is None) == (not args.quick):
        parser.error("give --source PATH (aiewf-eval as published), or --quick (the tests' small layout)")
    registry = Registry.default()
    with tempfile.TemporaryDirectory(prefix="peer-import-") as tmp:
        if args.quick:  # the tests' fixture: importable from a checkout (python -m benchmarks.peer_import)
            from tests.support.aiewf_layout import BENCH, COMMIT, aiewf_layout

            args.source, args.benchmark, args.commit = aiewf_layout(Path(tmp) / "aiewf", speech=True), BENCH, COMMIT
            args.vendors = "openai"
        root = Path(tmp) / "scenarios"
        root.mkdir()
        started = time.perf_counter()
        done = import_peer(args.source, root, ScenarioCatalog([root]), args.benchmark, args.commit)
        import_s = time.perf_counter() - started
        again = import_peer(args.source, root, ScenarioCatalog([root]), args.benchmark, args.commit)
        loaded = done.loaded
        peer = loaded.scenario.extra["peer"]
        print(f"imported {loaded.identity}: {len(loaded.scenario.turns)} turns in {import_s:.1f} s from "
              f"{peer['repository']} at {peer['commit'][:12]} ({peer['licence']}); again: "
              f"{'unchanged' if again.unchanged else 'CHANGED'}")
        print(f"{'vendor':<8} {'turns':>5} {'ok':>3} {'failures':>8} {'wall s':>7}")
        runs, all_failed = [], []
        for vendor in args.vendors.split(","):
            started = time.perf_counter()
            run = converse(registry, vendor, loaded, script(vendor, loaded, None))
            wall = time.perf_counter() - started
            failed = failures(run)
            all_failed += [f"{vendor} {f}" for f in failed]
            ok = sum(t.status == "ok" for t in run.turns)
            print(f"{vendor:<8} {len(run.turns):>5} {ok:>3} {len(failed):>8} {wall:7.1f}")
            for f in failed:
                print(f"  {f}")
            runs.append({"vendor": vendor, "turns": len(run.turns), "ok_turns": ok, "failures": failed,
                         "wall_s": round(wall, 1)})
    print(json.dumps({"benchmark": "peer_import", "scenario": loaded.identity, "commit": peer["commit"],
                      "import_target_met": again.unchanged and len(loaded.scenario.turns) > 0,
                      "turns_target_met": bool(runs) and not all_failed
                      and all(r["ok_turns"] == r["turns"] == len(loaded.scenario.turns) for r in runs),
                      "import_s": round(import_s, 2), "runs": runs}))


if __name__ == "__main__":
    main()
