"""The model registry: exact versioned ids as data (registry.toml), checked at load.

A floating alias ("latest", or an id without the version its vendor uses) is refused with an
error naming the exact ids it could mean, so a leaderboard series never silently changes model.
"""

from __future__ import annotations

import datetime as dt
import importlib
import re
import tomllib
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from .keys import api_key

BOARDS = ("stt", "tts", "s2s")
PROTOCOLS = {"stt-stream": "stt", "stt-batch": "stt", "tts-stream": "tts", "s2s": "s2s"}
STATUSES = ("active", "early-access", "retired")
# "<vendor>/<model>[:<transport>][@<engine version>]"; the transport tells apart one model served
# over two APIs (a realtime WebSocket and a batch HTTP endpoint, say)
_ID = re.compile(r"^[a-z0-9][a-z0-9.-]*/[A-Za-z0-9][A-Za-z0-9._-]*(:[a-z0-9-]+)?(@[0-9][A-Za-z0-9.+-]*)?$")
_FLOATING = re.compile(r"(^|[-_.:@/])latest$|^[^/]+/(default|stable|current)$", re.IGNORECASE)


class RegistryError(ValueError):
    """An id that is unknown, floating, or a registry file that breaks its schema."""


@dataclass(frozen=True)
class Exclusion:
    metric: str
    reason: str


@dataclass(frozen=True)
class ModelInfo:
    id: str
    board: str
    vendor: str
    protocol: str
    adapter: str
    status: str
    region: str
    needs_key: bool
    voice: str | None
    exclusions: tuple[Exclusion, ...]
    checked: dt.date | None = None  # when the id was last checked against the vendor's own docs or SDK
    source: str | None = None  # where: the vendor's documentation page or SDK source checked
    deprecated: dt.date | None = None  # the vendor announced the deprecation on this date
    shutdown: dt.date | None = None  # the vendor stops serving the id on this date
    successor: str | None = None  # the id the vendor names as its replacement
    session_limit_s: int | None = None  # S2S: the longest session the vendor allows (conversations rotate before it)

    @property
    def version(self) -> str | None:
        return self.id.split("@", 1)[1] if "@" in self.id else None

    @property
    def vendor_model(self) -> str:
        """The model name the vendor's API takes (the id without vendor, transport or version)."""
        return self.id.split("/", 1)[1].split("@", 1)[0].split(":", 1)[0]

    def excluded(self, metric: str) -> Exclusion | None:
        return next((e for e in self.exclusions if e.metric == metric), None)

    def key_is_set(self) -> bool:
        return not self.needs_key or api_key(self.vendor) is not None


_FIELDS = {"id": str, "board": str, "vendor": str, "protocol": str, "adapter": str, "status": str,
           "region": str, "needs_key": bool, "voice": str, "exclusions": list,
           "checked": dt.date, "source": str, "deprecated": dt.date, "shutdown": dt.date, "successor": str,
           "session_limit_s": int}
_OPTIONAL = {"voice", "exclusions", "checked", "source", "deprecated", "shutdown", "successor", "session_limit_s"}
_REQUIRED = set(_FIELDS) - _OPTIONAL


def _parse(entry: dict[str, Any], where: str) -> ModelInfo:
    unknown = set(entry) - set(_FIELDS)
    if unknown:
        raise RegistryError(f"{where}: unknown field(s) {sorted(unknown)}")
    missing = _REQUIRED - set(entry)
    if missing:
        raise RegistryError(f"{where}: missing field(s) {sorted(missing)}")
    for name, kind in _FIELDS.items():
        if name in entry and not isinstance(entry[name], kind):
            raise RegistryError(f"{where}: {name} must be {kind.__name__}, got {entry[name]!r}")
    mid = entry["id"]
    if not _ID.match(mid) or _FLOATING.search(mid):
        raise RegistryError(f"{where}: id {mid!r} is not an exact versioned id")
    if entry["protocol"] not in PROTOCOLS or PROTOCOLS[entry["protocol"]] != entry["board"]:
        raise RegistryError(f"{where}: protocol {entry['protocol']!r} does not belong on board {entry['board']!r}")
    if entry["status"] not in STATUSES:
        raise RegistryError(f"{where}: status must be one of {STATUSES}, got {entry['status']!r}")
    exclusions = []
    for ex in entry.get("exclusions", []):
        if set(ex) != {"metric", "reason"}:
            raise RegistryError(f"{where}: each exclusion needs exactly metric and reason, got {ex!r}")
        exclusions.append(Exclusion(ex["metric"], ex["reason"]))
    return ModelInfo(mid, entry["board"], entry["vendor"], entry["protocol"], entry["adapter"], entry["status"],
                     entry["region"], entry["needs_key"], entry.get("voice"), tuple(exclusions),
                     checked=entry.get("checked"), source=entry.get("source"), deprecated=entry.get("deprecated"),
                     shutdown=entry.get("shutdown"), successor=entry.get("successor"),
                     session_limit_s=entry.get("session_limit_s"))


class Registry:
    def __init__(self, models: list[ModelInfo]) -> None:
        self.models = {m.id: m for m in models}

    @classmethod
    def from_toml(cls, text: str, source: str = "registry.toml") -> "Registry":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise RegistryError(f"{source}: {exc}") from None
        entries = data.get("model", [])
        models = [_parse(e, f"{source} model #{i + 1}") for i, e in enumerate(entries)]
        ids = [m.id for m in models]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise RegistryError(f"{source}: duplicate id(s) {dupes}")
        return cls(models)

    @classmethod
    def default(cls) -> "Registry":
        return cls.from_toml(files("voxwatch.providers").joinpath("registry.toml").read_text(), "registry.toml")

    def resolve(self, model_id: str) -> ModelInfo:
        """The exact model for an id; floating aliases and unknown ids raise RegistryError."""
        if model_id in self.models:
            return self.models[model_id]
        base = model_id.split("@")[0]
        candidates = sorted(m for m in self.models if m.startswith(base))
        if "@" in model_id and candidates and not _FLOATING.search(model_id):
            raise RegistryError(f"{model_id!r}: that version is not registered; registered: {', '.join(candidates)}")
        if _FLOATING.search(model_id) or candidates:
            vendor = model_id.split("/", 1)[0]
            exact = candidates or sorted(m for m in self.models if m.startswith(vendor + "/"))
            hint = f"; use an exact versioned id: {', '.join(exact)}" if exact else ""
            raise RegistryError(f"{model_id!r} is a floating alias, not an exact versioned model id{hint}")
        raise RegistryError(f"unknown model id {model_id!r}; `voxwatch providers list` shows the registered ids")

    def create(self, model: ModelInfo, region: str | None = None) -> Any:
        """Instantiate the adapter; a local engine must be the version its id names. An adapter that
        picks the vendor's endpoint by the worker's region (`per_region = True`) is given `region`."""
        module_name, _, class_name = model.adapter.partition(":")
        adapter_cls = getattr(importlib.import_module(module_name), class_name)
        installed = getattr(adapter_cls, "installed_version", None)
        if installed is not None and model.version is not None and installed() != model.version:
            raise RegistryError(f"{model.id} names version {model.version}, but {installed()} is installed")
        if region is not None and getattr(adapter_cls, "per_region", False):
            return adapter_cls(model, region=region)
        return adapter_cls(model)
