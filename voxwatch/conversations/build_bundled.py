"""Render the bundled scenarios' caller audio: `python -m voxwatch.conversations.build_bundled`.

Each scenario.json under voxwatch/conversations/data/ is the hand-written source; this renders the turns
whose audio is missing or no longer matches its pin (every turn with --force) with the scenario's
one eSpeak NG voice (conversations.synthesis), writes audio/<turn id>.wav and the sha256s back
into scenario.json, and checks the result loads. eSpeak NG does not render the same bytes twice,
so the committed files and their sha256s are the reference: a plain run changes nothing once
every turn has its audio.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from voxwatch.conversations.catalog import bundled_root
from voxwatch.conversations.scenario_file import FILE, dump, load, read
from voxwatch.conversations.synthesis import synthesize_missing


def build(folder: Path, force: bool = False) -> tuple[str, list[str], str]:
    scenario, _ = read(folder)
    scenario, rendered = synthesize_missing(scenario, folder, force)
    dump(scenario, folder)
    loaded = load(folder)  # every file checked, as a run would
    return scenario.name, rendered, loaded.pin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=bundled_root())
    parser.add_argument("--force", action="store_true", help="re-render every turn, not only the missing ones")
    args = parser.parse_args()
    for folder in sorted(p for p in args.root.iterdir() if (p / FILE).is_file()):
        name, rendered, pin = build(folder, args.force)
        print(f"{name}: rendered {len(rendered)} turn(s); pin {pin}")


if __name__ == "__main__":
    main()
