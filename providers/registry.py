"""The model registry: exact versioned ids as data (registry.toml), checked at load.

A floating alias ("latest", or an id without the version its vendor uses) is refused with an
error naming the exact ids it could mean, so a leaderboard series never silently changes model.
Each vendor states whether it publishes dated snapshots; where it does, an id that names none is
refused at load unless the entry says why that model has none, so a floating id cannot come back.
Every entry carries the date and source of its last check against the vendor; its shutdown date
retires it on the day (providers/lifecycle.py).
"""

from __future__ import annotations

import datetime as dt
import importlib
import re
import tomllib
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from . import preference_configs
from .keys import api_key
from .lifecycle import LifecycleError, Standing, current_day, standing

BOARDS = ("stt", "tts", "s2s")
PROTOCOLS = {"stt-stream": "stt", "stt-batch": "stt", "tts-stream": "tts", "s2s": "s2s"}
STATUSES = ("active", "early-access", "retired")
SNAPSHOTS = ("dated", "none", "engine")
"""A vendor's versioning: dated snapshots (an id must name one), none (its model names carry their
version), or a local engine (the id carries the installed version after '@')."""
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
    undated: str | None = None  # why this id names no dated snapshot although its vendor publishes them
    session_limit_unknown: str | None = None  # S2S: why no session limit is recorded (the vendor documents none)
    description: str | None = None  # what the entry is, where its id cannot say (a baseline that is no model)

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

    def standing(self, day: dt.date) -> Standing:
        """Its status on `day`: retired from its shutdown date, with a warning in the weeks before."""
        return standing(self.status, self.shutdown, self.successor, day)


@dataclass(frozen=True)
class VendorInfo:
    """What the registry checked of a vendor's versioning, and where."""
    name: str
    snapshots: str
    checked: dt.date
    source: str
    pattern: str | None = None  # dated: how a dated snapshot ends (a regex searched in the model name)
    note: str | None = None


_FIELDS = {"id": str, "board": str, "vendor": str, "protocol": str, "adapter": str, "status": str,
           "region": str, "needs_key": bool, "voice": str, "exclusions": list,
           "checked": dt.date, "source": str, "deprecated": dt.date, "shutdown": dt.date, "successor": str,
           "session_limit_s": int, "undated": str, "session_limit_unknown": str, "description": str}
_OPTIONAL = {"voice", "exclusions", "deprecated", "shutdown", "successor", "session_limit_s", "undated",
             "session_limit_unknown", "description"}
_REQUIRED = set(_FIELDS) - _OPTIONAL
_VENDOR_FIELDS = {"name": str, "snapshots": str, "checked": dt.date, "source": str, "pattern": str, "note": str}
_VENDOR_REQUIRED = {"name", "snapshots", "checked", "source"}


def _typed(entry: dict[str, Any], kinds: dict[str, type], required: set[str], where: str) -> None:
    """Known fields only, the required ones present, each of its type (a date is a date, not a datetime)."""
    unknown = set(entry) - set(kinds)
    if unknown:
        raise RegistryError(f"{where}: unknown field(s) {sorted(unknown)}")
    missing = required - set(entry)
    if missing:
        raise RegistryError(f"{where}: missing field(s) {sorted(missing)}")
    for name, kind in kinds.items():
        if name not in entry:
            continue
        value = entry[name]
        if kind is dt.date and not (isinstance(value, dt.date) and not isinstance(value, dt.datetime)):
            raise RegistryError(f"{where}: {name} must be a date (YYYY-MM-DD, unquoted), got {value!r}")
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):  # TOML true is no number
            raise RegistryError(f"{where}: {name} must be {kind.__name__}, got {value!r}")
        if kind is str and not value.strip():
            raise RegistryError(f"{where}: {name} must not be empty")


def _parse(entry: dict[str, Any], where: str) -> ModelInfo:
    _typed(entry, _FIELDS, _REQUIRED, where)
    mid = entry["id"]
    if not _ID.match(mid) or _FLOATING.search(mid):
        raise RegistryError(f"{where}: id {mid!r} is not an exact versioned id")
    if entry["protocol"] not in PROTOCOLS or PROTOCOLS[entry["protocol"]] != entry["board"]:
        raise RegistryError(f"{where}: protocol {entry['protocol']!r} does not belong on board {entry['board']!r}")
    if entry["status"] not in STATUSES:
        raise RegistryError(f"{where}: status must be one of {STATUSES}, got {entry['status']!r}")
    deprecated, shutdown = entry.get("deprecated"), entry.get("shutdown")
    if deprecated and shutdown and shutdown < deprecated:
        raise RegistryError(f"{where}: {mid} shuts down ({shutdown}) before its deprecation was announced ({deprecated})")
    limit = entry.get("session_limit_s")
    if limit is not None and entry["board"] != "s2s":
        raise RegistryError(f"{where}: session_limit_s is a speech-to-speech session's limit; {mid} is on the "
                            f"{entry['board']} board")
    if limit is not None and limit <= 0:
        raise RegistryError(f"{where}: session_limit_s must be a positive number of seconds, got {limit}")
    unknown = entry.get("session_limit_unknown")
    if entry["board"] == "s2s" and (limit is None) == (unknown is None):
        raise RegistryError(f"{where}: {mid} needs either session_limit_s (the vendor's longest session, which "
                            "conversations rotate before) or session_limit_unknown (why the vendor documents none)")
    exclusions = []
    for ex in entry.get("exclusions", []):
        if set(ex) != {"metric", "reason"}:
            raise RegistryError(f"{where}: each exclusion needs exactly metric and reason, got {ex!r}")
        exclusions.append(Exclusion(ex["metric"], ex["reason"]))
    return ModelInfo(mid, entry["board"], entry["vendor"], entry["protocol"], entry["adapter"], entry["status"],
                     entry["region"], entry["needs_key"], entry.get("voice"), tuple(exclusions),
                     checked=entry["checked"], source=entry["source"], deprecated=deprecated, shutdown=shutdown,
                     successor=entry.get("successor"), session_limit_s=limit, undated=entry.get("undated"),
                     session_limit_unknown=unknown, description=entry.get("description"))


def _parse_vendor(entry: dict[str, Any], where: str) -> VendorInfo:
    _typed(entry, _VENDOR_FIELDS, _VENDOR_REQUIRED, where)
    if entry["snapshots"] not in SNAPSHOTS:
        raise RegistryError(f"{where}: snapshots must be one of {SNAPSHOTS}, got {entry['snapshots']!r}")
    if (entry["snapshots"] == "dated") != ("pattern" in entry):
        raise RegistryError(f"{where}: a pattern (how a dated snapshot's name ends) goes with snapshots = \"dated\" "
                            "and only with it")
    if "pattern" in entry:
        try:
            re.compile(entry["pattern"])
        except re.error as exc:
            raise RegistryError(f"{where}: pattern {entry['pattern']!r} is not a regular expression ({exc})") from None
    return VendorInfo(entry["name"], entry["snapshots"], entry["checked"], entry["source"], entry.get("pattern"),
                      entry.get("note"))


def _versioning_error(m: ModelInfo, vendor: VendorInfo | None) -> str | None:
    """Why an id breaks its vendor's versioning rule, or None: a dated vendor's ids name a snapshot."""
    if vendor is None:
        return (f"vendor {m.vendor!r} of {m.id} has no [[vendor]] statement (whether it publishes dated "
                "snapshots, checked when and where)")
    if m.undated is not None and vendor.snapshots != "dated":
        return f"{m.id}: `undated` explains a missing dated snapshot; {m.vendor} publishes none"
    if vendor.snapshots == "engine" and m.version is None:
        return f"{m.id}: a local engine's id names its installed version after '@'"
    if vendor.snapshots != "dated":
        return None
    dated = re.search(vendor.pattern or "", m.vendor_model) is not None
    if dated and m.undated is not None:
        return f"{m.id} names a dated snapshot; drop its `undated`"
    if not dated and m.undated is None and m.status != "retired":
        return (f"{m.id} is a floating alias: {m.vendor} publishes dated snapshots (a name matching "
                f"{vendor.pattern!r}); pin one, or say in `undated` why this model has none")
    return None


class Registry:
    def __init__(self, models: list[ModelInfo], vendors: list[VendorInfo] | None = None,
                 today: dt.date | None = None) -> None:
        self.models = {m.id: m for m in models}
        self.vendors = {v.name: v for v in vendors or []}
        self._today = today
        self.preference_options: dict[str, preference_configs.PreferenceOptions] = {}
        self.preference_configs: tuple[preference_configs.PreferenceConfig, ...] = ()  # the preference board's

    @property
    def day(self) -> dt.date:
        """The day statuses are read on: the one given, else VOXWATCH_TODAY, else today (UTC)."""
        if self._today is not None:
            return self._today
        try:
            return current_day()
        except LifecycleError as exc:
            raise RegistryError(str(exc)) from None

    def standing(self, model: ModelInfo) -> Standing:
        return model.standing(self.day)

    @classmethod
    def from_toml(cls, text: str, source: str = "registry.toml", today: dt.date | None = None) -> "Registry":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise RegistryError(f"{source}: {exc}") from None
        unknown = set(data) - {"model", "vendor", "preference_options", "preference_config"}
        if unknown:
            raise RegistryError(f"{source}: unknown table(s) {sorted(unknown)}; the file holds [[vendor]], [[model]], "
                                "[[preference_options]] and [[preference_config]]")
        models = [_parse(e, f"{source} model #{i + 1}") for i, e in enumerate(data.get("model", []))]
        vendors = [_parse_vendor(e, f"{source} vendor #{i + 1}") for i, e in enumerate(data.get("vendor", []))]
        for kind, names in (("id", [m.id for m in models]), ("vendor", [v.name for v in vendors])):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise RegistryError(f"{source}: duplicate {kind}(s) {dupes}")
        by_vendor = {v.name: v for v in vendors}
        ids = {m.id for m in models}
        for m in models:
            problem = _versioning_error(m, by_vendor.get(m.vendor))
            if problem:
                raise RegistryError(f"{source}: {problem}")
            if m.successor is not None and (m.successor not in ids or m.successor == m.id):
                raise RegistryError(f"{source}: the successor of {m.id}, {m.successor!r}, is not another registered id")
        registry = cls(models, vendors, today)
        registry.preference_options, registry.preference_configs = preference_configs.parse(
            data.get("preference_options", []), data.get("preference_config", []), registry.models, source,
            RegistryError)
        return registry

    @classmethod
    def default(cls, today: dt.date | None = None) -> "Registry":
        return cls.from_toml(files("voxwatch.providers").joinpath("registry.toml").read_text(), "registry.toml", today)

    def resolve(self, model_id: str) -> ModelInfo:
        """The exact model for an id; floating aliases and unknown ids raise RegistryError. A cascade id
        (cascade_ids.py) is made from the registered ids it names."""
        if model_id in self.models:
            return self.models[model_id]
        from .cascade_ids import is_cascade, resolve_cascade  # it builds on this module

        if is_cascade(model_id):
            return resolve_cascade(model_id, self)
        base = model_id.split("@")[0]
        candidates = sorted(m for m, info in self.models.items() if m.startswith(base) and info.status != "retired")
        if "@" in model_id and candidates and not _FLOATING.search(model_id):
            raise RegistryError(f"{model_id!r}: that version is not registered; registered: {', '.join(candidates)}")
        if _FLOATING.search(model_id) or candidates:
            vendor = model_id.split("/", 1)[0]
            exact = candidates or sorted(m for m, info in self.models.items()
                                         if m.startswith(vendor + "/") and info.status != "retired")
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
