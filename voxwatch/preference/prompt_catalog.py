"""Every prompt set voxwatch knows (bundled, then imported under [preference] prompts_dir), and
`voxwatch preference prompts import DIR`.

As for scenarios (voxwatch/conversations/importer.py): the set is checked whole (every field, every audio
file's sha256 and format) before anything is copied; only promptset.json, prompts.jsonl and the
prompts' audio are copied, into a dot folder moved into place once it loads, so a bad set leaves
nothing half-imported. The same bytes again change nothing; another set under a name the catalog
holds is refused.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from voxwatch.datasets.importer import staged

from voxwatch.preference.prompts import INFO, MANIFEST, PromptSet, PromptSetError, load_prompt_set

BUNDLED = "preference-starter"


class UnknownPromptSet(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def bundled_root() -> Path:
    return Path(str(files("voxwatch.preference").joinpath("data")))


@dataclass(frozen=True)
class Entry:
    name: str
    folder: Path
    bundled: bool


class PromptCatalog:
    def __init__(self, roots: list[Path]) -> None:
        """roots in order of precedence (bundled first): a name found twice keeps the first; a root
        that does not exist yet (nothing imported) holds none."""
        self.roots = list(roots)

    def entries(self) -> list[Entry]:
        found: dict[str, Entry] = {}
        bundled = bundled_root().resolve()
        for root in (r for r in self.roots if r.is_dir()):
            for folder in sorted(p for p in root.iterdir() if not p.name.startswith(".") and (p / INFO).is_file()):
                found.setdefault(folder.name, Entry(folder.name, folder, root.resolve() == bundled))
        return sorted(found.values(), key=lambda e: e.name)

    def load(self, name: str, verify: bool = True) -> PromptSet:
        entry = next((e for e in self.entries() if e.name == name), None)
        if entry is None:
            raise UnknownPromptSet(f"unknown prompt set {name!r}; `voxwatch preference prompts list` shows them")
        loaded = load_prompt_set(entry.folder, verify)
        if loaded.name != name:
            raise PromptSetError(f"{entry.folder / INFO}: name {loaded.name!r} does not match its folder {name!r}")
        return loaded


@dataclass(frozen=True)
class Imported:
    prompt_set: PromptSet
    unchanged: bool  # the catalog already held these exact bytes


def import_prompt_set(source: Path, dest_root: Path, catalog: PromptCatalog) -> Imported:
    if not (source / INFO).is_file():
        raise PromptSetError(f"{source}: no {INFO} in this folder")
    checked = load_prompt_set(source)
    same = next((e for e in catalog.entries() if e.name == checked.name), None)
    if same is not None:
        held = load_prompt_set(same.folder, verify=False)
        if held.pin == checked.pin:
            return Imported(held, unchanged=True)
        raise PromptSetError(f"a different prompt set {checked.name!r} is already in the catalog ({same.folder}, "
                             f"pin {held.pin[:12]}; this one {checked.pin[:12]}); give it another name")
    final = dest_root / checked.name
    if final.exists() or final.is_symlink():
        raise PromptSetError(f"{final} already exists (not a prompt set voxwatch knows); remove it")
    with staged(dest_root, checked.name, "preference", PromptSetError) as work:
        for name in (INFO, MANIFEST):
            shutil.copyfile(source / name, work / name)
        for prompt in checked.prompts:
            (work / prompt.audio).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile((source / prompt.audio).resolve(), work / prompt.audio)
        load_prompt_set(work)
        work.rename(final)
    return Imported(load_prompt_set(final, verify=False), unchanged=False)
