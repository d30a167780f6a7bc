"""Where a dataset's material came from, in words a board can print: synthesized or recorded speech,
or text prompts. Read from the dataset's own `dataset.json` (its recipe, kind and transform), so a
page states what its numbers were measured on without anyone keeping a second list.

The bundled starter recipe synthesizes every clip with eSpeak NG (voxwatch/datasets/build_starter.py): a
starter set is synthesized speech, its degraded sets that speech through a transform. The bundled
recorded set (voxwatch/datasets/build_recorded.py) is human recordings, its degraded sets the same transforms. Audio that
`voxwatch datasets import` brought in is someone's recording (the importer cannot tell a recording
from a synthesis, so the page says "imported" and names no more).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from voxwatch.foundation.languages import is_english
from voxwatch.metrics.wer import scorer_for

from voxwatch.datasets.catalog import Catalog
from voxwatch.datasets.entity_tags import described
from voxwatch.datasets.manifest import DatasetInfo, ManifestError, read_info

STARTER_RECIPE = "voxwatch.datasets.build_starter"
"""The bundled recipe's name (its version follows): every clip it makes is eSpeak NG speech."""
QUESTIONS_RECIPE = "voxwatch.datasets.build_questions"
"""The bundled spoken questions' recipe (voxwatch/datasets/build_questions.py): eSpeak NG speech too."""
RECORDED_RECIPE = "voxwatch.datasets.build_recorded"
"""The bundled recorded set's recipe (voxwatch/datasets/build_recorded.py): human recordings from registry
packages, each clip's source and licence in its manifest line."""
IMPORT_RECIPE = "voxwatch datasets import"
FETCH_RECIPE = "voxwatch datasets fetch"
"""A public set `voxwatch datasets fetch` built (voxwatch/datasets/fetch.py): its dataset.json says whether the
speech is recorded, and its license and homepage."""


ORIGINS = {"synthesized": "synthesized speech (eSpeak NG), not recordings", "recorded": "recorded human speech",
           "imported": "imported audio",
           "text": "text prompts", "unknown": "data of unknown provenance"}
"""Each origin in words, for a page's one-line summary."""


@dataclass(frozen=True)
class Provenance:
    dataset: str
    origin: str  # "synthesized", "recorded", "imported", "text" or "unknown"
    condition: str | None
    text: str  # one sentence for the page
    family: str | None = None  # the clean dataset and its degraded conditions share it (dataset.json)
    language: str | None = None  # the dataset's (None when unknown): its board section says it when not English
    error_rate: str = "WER"  # "CER" where the language is scored by characters (METHOD "WER")

    @property
    def language_note(self) -> str | None:
        """The language in words for a heading, when it is not English: "es", "ja, scored as CER"."""
        if self.language is None or is_english(self.language):
            return None
        return self.language + (f", scored as {self.error_rate}" if self.error_rate != "WER" else "")


def describe(info: DatasetInfo) -> Provenance:
    """A catalogued dataset's provenance (from its recipe, kind and transform), family, language and
    who wrote its entity tags (datasets.entity_tags)."""
    told = _described(info)
    tags = described(info.extra)
    return replace(told, family=info.family or None, language=info.language,
                   error_rate=scorer_for(info.language).error_rate_label,
                   text=f"{told.text}; {tags}" if tags else told.text)


def _described(info: DatasetInfo) -> Provenance:
    if info.kind == "text":
        return Provenance(info.name, "text", info.condition, f"{info.name}: text prompts, {info.description}")
    if info.recipe.startswith((STARTER_RECIPE, QUESTIONS_RECIPE)):
        through = f", through the {info.transform['name']} transform" if info.transform else ""
        return Provenance(info.name, "synthesized", info.condition,
                          f"{info.name}: synthesized speech (eSpeak NG, not recorded){through}")
    if info.recipe.startswith(RECORDED_RECIPE):
        through = f", through the {info.transform['name']} transform" if info.transform else ""
        licence = f" ({info.extra['license']})" if info.extra.get("license") else ""
        return Provenance(info.name, "recorded", info.condition,
                          f"{info.name}: recorded human speech{licence}{through}")
    if info.recipe.startswith(FETCH_RECIPE):
        through = f", through the {info.transform['name']} transform" if info.transform else ""
        recorded = info.extra.get("speech") == "recorded"
        source = ", ".join(str(info.extra[k]) for k in ("license", "homepage") if info.extra.get(k))
        return Provenance(info.name, "recorded" if recorded else "unknown", info.condition,
                          f"{info.name}: {'recorded human speech' if recorded else 'fetched audio'}, "
                          f"{info.description}{through}" + (f" ({source})" if source else ""))
    if info.recipe == IMPORT_RECIPE:
        return Provenance(info.name, "imported", info.condition, f"{info.name}: imported audio ({info.description})")
    return Provenance(info.name, "unknown", info.condition, f"{info.name}: {info.description} (recipe {info.recipe})")


def lookup(catalog: Catalog, name: str) -> Provenance:
    """The provenance of a dataset by name; "unknown" when this server's catalog lacks it or cannot read it."""
    folder = catalog.folders().get(name)
    if folder is None:
        return Provenance(name, "unknown", None, f"{name}: not in this server's dataset catalog; provenance unknown")
    try:
        return describe(read_info(folder))
    except ManifestError:
        return Provenance(name, "unknown", None, f"{name}: its dataset.json cannot be read; provenance unknown")


def families(catalog: Catalog) -> dict[str, dict[str, str | None]]:
    """Each family of the catalog's readable datasets: its datasets and their conditions, by name."""
    out: dict[str, dict[str, str | None]] = {}
    for name, folder in sorted(catalog.folders().items()):
        try:
            info = read_info(folder)
        except ManifestError:
            continue
        if info.family:
            out.setdefault(info.family, {})[name] = info.condition
    return out
