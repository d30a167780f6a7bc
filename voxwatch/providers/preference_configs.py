"""Model configurations of the preference board: (model, thinking level, voice), as registry data.

registry.toml's `[[preference_options]]` state, per S2S model, the voices and thinking levels its
vendor documents (with where and when that was checked): "none" where the vendor has no thinking
control. Each `[[preference_config]]` picks one of each for a registered S2S model; it is checked
against those options at load, so a configuration the vendor does not offer never reaches a run.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from voxwatch.providers.registry import ModelInfo

NO_THINKING = "none"
_OPTION_FIELDS = {"model": str, "voices": list, "thinking": list, "checked": dt.date, "source": str, "note": str}
_CONFIG_FIELDS = {"model": str, "thinking": str, "voice": str}


@dataclass(frozen=True)
class PreferenceOptions:
    model: str
    voices: tuple[str, ...]
    thinking: tuple[str, ...]
    checked: dt.date
    source: str


@dataclass(frozen=True)
class PreferenceConfig:
    """One configuration a prompt is answered by; `id` is what every stored row names it by."""

    model: str
    thinking: str
    voice: str

    @property
    def id(self) -> str:
        return config_id(self.model, self.thinking, self.voice)

    @property
    def thinking_level(self) -> str | None:
        """What the adapter is asked for (None: the vendor has no thinking control)."""
        return None if self.thinking == NO_THINKING else self.thinking


def config_id(model: str, thinking: str, voice: str) -> str:
    """model|thinking|voice: no registered id holds a '|'."""
    return f"{model}|{thinking}|{voice}"


def _checked(entry: dict[str, Any], kinds: dict[str, type], where: str, error: type[Exception]) -> None:
    unknown = set(entry) - set(kinds)
    if unknown:
        raise error(f"{where}: unknown field(s) {sorted(unknown)}")
    for name, kind in kinds.items():
        if name == "note" and name not in entry:
            continue
        if name not in entry:
            raise error(f"{where}: missing field {name!r}")
        value = entry[name]
        if not isinstance(value, kind) or (kind is str and not value.strip()):
            raise error(f"{where}: {name} must be a non-empty {kind.__name__}, got {value!r}")
        if kind is list and (not value or not all(isinstance(v, str) and v.strip() for v in value)):
            raise error(f"{where}: {name} must be a non-empty list of names, got {value!r}")


def parse(options: list[dict[str, Any]], configs: list[dict[str, Any]], models: dict[str, ModelInfo],
          source: str, error: type[Exception]) -> tuple[dict[str, PreferenceOptions], tuple[PreferenceConfig, ...]]:
    """The options by model and the configurations, each checked: the model registered, on the s2s
    board and not retired, its options stated once, the voice and thinking level among them."""
    by_model: dict[str, PreferenceOptions] = {}
    for i, entry in enumerate(options):
        where = f"{source} preference_options #{i + 1}"
        _checked(entry, _OPTION_FIELDS, where, error)
        model = models.get(entry["model"])
        if model is None or model.board != "s2s":
            raise error(f"{where}: {entry['model']!r} is not a registered model of the s2s board")
        if entry["model"] in by_model:
            raise error(f"{where}: the options of {entry['model']} are stated twice")
        thinking = tuple(entry["thinking"])
        if NO_THINKING in thinking and len(thinking) > 1:
            raise error(f"{where}: thinking is either [\"{NO_THINKING}\"] (no thinking control) or the vendor's levels")
        by_model[entry["model"]] = PreferenceOptions(entry["model"], tuple(entry["voices"]), thinking,
                                                     entry["checked"], entry["source"])
    found: list[PreferenceConfig] = []
    for i, entry in enumerate(configs):
        where = f"{source} preference_config #{i + 1}"
        _checked(entry, _CONFIG_FIELDS, where, error)
        opts = by_model.get(entry["model"])
        if opts is None:
            raise error(f"{where}: {entry['model']!r} has no [[preference_options]] (its documented voices and "
                        "thinking levels)")
        if models[entry["model"]].status == "retired":
            raise error(f"{where}: {entry['model']} is retired")
        if entry["voice"] not in opts.voices:
            raise error(f"{where}: voice {entry['voice']!r} is not one of {entry['model']}'s: {', '.join(opts.voices)}")
        if entry["thinking"] not in opts.thinking:
            raise error(f"{where}: thinking {entry['thinking']!r} is not one of {entry['model']}'s: "
                        f"{', '.join(opts.thinking)}")
        config = PreferenceConfig(entry["model"], entry["thinking"], entry["voice"])
        if config in found:
            raise error(f"{where}: {config.id} is listed twice")
        found.append(config)
    return by_model, tuple(found)
