"""Every scenario voxwatch knows: the bundled ones, then the imported ones under [scenarios] dir.

As for datasets (voxwatch/datasets/catalog.py): bundled scenarios live inside the package, imported ones
in the configured folder (default ./var/scenarios). A scenario is named by its name and version;
without a version the highest one is meant. Loading one checks every audio file's sha256.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from voxwatch.conversations.scenario_file import FILE, LoadedScenario, load, read


class UnknownScenario(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Entry:
    name: str
    version: int
    folder: Path
    pin: str
    bundled: bool


def bundled_root() -> Path:
    return Path(str(files("voxwatch.conversations").joinpath("data")))


class ScenarioCatalog:
    def __init__(self, roots: list[Path]) -> None:
        """roots in order of precedence (bundled first): a name and version found twice keeps the first."""
        self.roots = [r for r in roots if r.is_dir()]

    def entries(self) -> list[Entry]:
        """Every scenario folder, its scenario.json checked (a broken one raises ScenarioError); a dot
        folder is an import under way (conversations.importer) and is skipped."""
        found: dict[tuple[str, int], Entry] = {}
        bundled = bundled_root().resolve()
        for root in self.roots:
            for folder in sorted(p for p in root.iterdir() if not p.name.startswith(".") and (p / FILE).is_file()):
                scenario, pin = read(folder)
                entry = Entry(scenario.name, scenario.version, folder, pin, root.resolve() == bundled)
                found.setdefault((entry.name, entry.version), entry)
        return sorted(found.values(), key=lambda e: (e.name, e.version))

    def names(self) -> list[str]:
        return sorted({e.name for e in self.entries()})

    def find(self, name: str, version: int | None = None) -> Entry:
        matching = [e for e in self.entries() if e.name == name and (version is None or e.version == version)]
        if not matching:
            what = f"{name!r}" + (f" version {version}" if version is not None else "")
            raise UnknownScenario(f"unknown scenario {what}; `voxwatch scenarios list` shows the catalog")
        return max(matching, key=lambda e: e.version)

    def load_pinned(self, name: str, pin: str) -> LoadedScenario:
        """The scenario a planner chose, by name and pin (a worker must hold the same turns and audio)."""
        entry = next((e for e in self.entries() if e.name == name and e.pin == pin), None)
        if entry is None:
            raise UnknownScenario(f"no scenario {name!r} with pin {pin[:12]} here (another version or copy of it?); "
                                  "`voxwatch scenarios list` shows the catalog")
        return load(entry.folder, verify_audio=True)

    def load(self, name: str, version: int | None = None, verify: bool = True) -> LoadedScenario:
        return load(self.find(name, version).folder, verify_audio=verify)
