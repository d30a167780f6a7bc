"""`voxwatch scenarios import PATH`: bring a scenario folder into the user's scenarios folder.

The folder's scenario.json is checked field by field and every turn's audio (inside the folder,
its sha256, mono 16-bit WAV at the scenario's rate) before anything is copied; with
`synthesize`, turns without audio are rendered with the scenario's eSpeak NG voice and pinned.
Only scenario.json and the turns' audio files are copied, into a temporary folder that is moved
into place once it loads: a bad scenario leaves nothing half-imported. A scenario is named by
its name and version: importing the same bytes again changes nothing, while a different
scenario under a name and version the catalog already holds is refused (bump its version).

A peer's published benchmark (aiewf-eval's layout, peer_aiewf) is converted into a scenario
folder in a temporary folder first and then imported the same way.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from voxwatch.datasets.importer import staged

from voxwatch.conversations.catalog import ScenarioCatalog
from voxwatch.conversations.scenario_file import FILE, LoadedScenario, check_audio, dump, load, read
from voxwatch.conversations.synthesis import synthesize_missing
from voxwatch.conversations import peer_aiewf, peer_source
from voxwatch.conversations.peer_literals import PeerFileError


class ScenarioImportError(ValueError):
    pass


@dataclass(frozen=True)
class Imported:
    loaded: LoadedScenario
    rendered: tuple[str, ...]  # turn ids synthesized on import
    unchanged: bool  # the catalog already held these exact bytes


def import_scenario(source: Path, dest_root: Path, catalog: ScenarioCatalog, synthesize: bool = False) -> Imported:
    if not (source / FILE).is_file():
        raise ScenarioImportError(f"{source}: no {FILE} in this folder")
    scenario, pin = read(source)
    missing = tuple(t for t in scenario.turns if not (t.audio and t.audio_sha256 and (source / t.audio).exists()))
    if missing and not synthesize:
        check_audio(scenario, source, missing[:1])  # says which turn has no audio, and how to render it
    present = tuple(t for t in scenario.turns if t not in missing)
    check_audio(scenario, source, present)
    with staged(dest_root, scenario.name, "scenarios", ScenarioImportError) as work:
        shutil.copyfile(source / FILE, work / FILE)
        for turn in present:
            (work / turn.audio).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile((source / turn.audio).resolve(), work / turn.audio)
        rendered: list[str] = []
        if missing:
            try:
                scenario, rendered = synthesize_missing(scenario, work)
            except ValueError as exc:
                raise ScenarioImportError(str(exc)) from None
            dump(scenario, work)
        loaded = load(work)
        same = [e for e in catalog.entries() if (e.name, e.version) == (scenario.name, scenario.version)]
        if same and same[0].pin == loaded.pin:
            shutil.rmtree(work, ignore_errors=True)
            return Imported(load(same[0].folder), tuple(rendered), unchanged=True)
        if same:
            raise ScenarioImportError(
                f"a different scenario {scenario.name!r} version {scenario.version} is already in the catalog "
                f"({same[0].folder}, pin {same[0].pin[:12]}; this one {loaded.pin[:12]}); give it a new version")
        final = dest_root / f"{scenario.name}-v{scenario.version}"
        if final.exists() or final.is_symlink():
            raise ScenarioImportError(f"{final} already exists (not a scenario voxwatch knows); remove it")
        work.rename(final)
        return Imported(LoadedScenario(loaded.scenario, final, loaded.pin), tuple(rendered), unchanged=False)


def import_peer(source: Path, dest_root: Path, catalog: ScenarioCatalog, benchmark: str | None,
                commit: str | None = None, repository: str = peer_aiewf.REPOSITORY, version: int = 1) -> Imported:
    """An aiewf-eval benchmark (an exported folder, a clone or a bare mirror) converted and imported:
    its files parsed (never run), its audio resampled and pinned, then import_scenario's checks."""
    try:
        with tempfile.TemporaryDirectory(prefix="voxwatch-peer-") as tmp:
            root = source
            if peer_source.is_bare(source):
                if benchmark is None:
                    raise PeerFileError(f"{source}: a git mirror; name the benchmark with --benchmark")
                commit = peer_source.commit_of(source, commit)
                root = peer_source.export_bare(source, commit, benchmark, Path(tmp) / "peer")
            elif not peer_aiewf.is_layout(source):
                raise PeerFileError(f"{source}: not an aiewf-eval layout (no benchmarks/_shared/turns.py, nor a "
                                    "benchmark folder with config.py beside _shared/)")
            peer_aiewf.find_root(root, benchmark)  # a layout problem is said before a missing commit
            converted = peer_aiewf.convert(root, benchmark, peer_source.commit_of(root, commit), repository, version)
            folder = Path(tmp) / converted.scenario.name  # errors name it: aiewf-<benchmark>/scenario.json
            peer_aiewf.write_folder(converted, folder)
            return import_scenario(folder, dest_root, catalog)
    except PeerFileError as exc:
        raise ScenarioImportError(str(exc)) from None
