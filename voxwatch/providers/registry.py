"""The model registry: exact versioned ids as data (registry.toml), checked at load.

A floating alias ("latest", or an id without the version its vendor uses) is refused with an
error naming the exact ids it could mean, so a leaderboard series never silently changes model.
Each vendor states whether it publishes dated snapshots; where it does, an id that names none is
refused at load unless the entry says why that model has none, so a floating id cannot come back.
Every entry carries the date and source of its last check against the vendor; its shutdown date
retires it on the day (voxwatch/providers/lifecycle.py).

Users add entries in files of the same format ([registry] files, providers/user_registry.py): they are
merged over the package's by `from_layers`, under the same checks; replacing an entry takes an
explicit `override = true`, and every entry remembers the file it came from (`origin`).
"""

from __future__ import annotations

import datetime as dt
import importlib
import re
import tomllib
from dataclasses import dataclass, replace
from importlib.resources import files
from pathlib import Path
from typing import Any, Sequence

from voxwatch.foundation.server_url import HTTP, server_url_problem
from voxwatch.foundation.text import control_chars
from voxwatch.metrics import price as prices
from voxwatch.metrics.price import Price
from voxwatch.providers import preference_configs
from voxwatch.providers.keys import api_key, key_variable
from voxwatch.providers.lifecycle import CHECK_MAX_AGE_DAYS, LifecycleError, Standing, current_day, standing
from voxwatch.foundation.text import did_you_mean

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
PACKAGE = "registry.toml"
"""The origin of the package's own entries (a user file's entries carry its path)."""
FAMILIES = {"openai-compatible": {"stt-batch": "voxwatch.providers.stt.openai_batch:OpenAIBatchSTT",
                                  "tts-stream": "voxwatch.providers.tts.openai:OpenAITTS"}}
"""The protocol families a vendor may `speak` (a self-hosted server): the adapter that measures each
protocol of the family, pointed at the vendor's base_url."""
_TABLES = ("vendor", "model", "preference_options", "preference_config")
AGENT_VENDOR = "agent"
TRANSPORTS = {"twilio-media-streams": "voxwatch.providers.agents.twilio:TwilioAgent",
              "pcm-ws": "voxwatch.providers.agents.pcm_ws:PcmAgent"}
"""How a team's own deployed agent (vendor "agent") is reached: the adapter of each transport."""
PCM_RATES = (8000, 16000, 24000)
"""The sample rates a pcm-ws agent may state (the line converts the caller's 16 kHz to each)."""


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
    origin: str = PACKAGE  # the registry file the entry came from: the package's, or a user file's path
    base_url: str | None = None  # its vendor's registered server (a vendor that speaks a protocol family)
    price: Price | None = None  # its vendor's list price, where one was found (metrics/price.py)
    baseline: bool = False  # a reference voxwatch built (a script, no model): labelled "baseline" wherever it shows
    transport: str | None = None  # a deployed agent's (vendor "agent"): TRANSPORTS
    sample_rate: int | None = None  # a pcm-ws agent's audio rate, both ways
    end_of_turn: bool = False  # a streaming STT whose adapter stamps the vendor's own end-of-turn events (METHOD "STT end of turn")
    streamed_text: bool = False  # a streaming TTS whose adapter can be fed streamed text and cancel (METHOD "TTS: streamed text and cancel")

    def price_stale(self, day: dt.date) -> bool:
        """Its price was checked longer ago than a check is trusted (CHECK_MAX_AGE_DAYS)."""
        return self.price is not None and prices.is_stale(self.price.checked, day, CHECK_MAX_AGE_DAYS)

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
    speaks: str | None = None  # a protocol family (FAMILIES) its own server speaks, at base_url
    base_url: str | None = None
    key_env: str | None = None  # its key's variable, or "" for a server that takes none (None: the default name)
    origin: str = PACKAGE


_FIELDS = {"id": str, "board": str, "vendor": str, "protocol": str, "adapter": str, "status": str,
           "region": str, "needs_key": bool, "voice": str, "exclusions": list,
           "checked": dt.date, "source": str, "deprecated": dt.date, "shutdown": dt.date, "successor": str,
           "session_limit_s": int, "undated": str, "session_limit_unknown": str, "description": str,
           "price_usd": object, "price_output_usd": object, "price_unit": str, "price_source": str,
           "price_checked": dt.date, "baseline": bool, "transport": str, "sample_rate": int,
           "end_of_turn": bool, "streamed_text": bool}  # a price's numbers are checked by metrics.price.problem
_PRICE = ("price_usd", "price_output_usd", "price_unit", "price_source", "price_checked")
_OPTIONAL = {"voice", "exclusions", "deprecated", "shutdown", "successor", "session_limit_s", "undated",
             "session_limit_unknown", "description", "baseline", "transport", "sample_rate", "end_of_turn", "streamed_text",
             *_PRICE}
_REQUIRED = set(_FIELDS) - _OPTIONAL
_VENDOR_FIELDS = {"name": str, "snapshots": str, "checked": dt.date, "source": str, "pattern": str, "note": str,
                  "speaks": str, "base_url": str, "key_env": str}
_MAY_BE_EMPTY = {"key_env"}  # "" says the vendor's server takes no key
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
        if kind is str and not value.strip() and name not in _MAY_BE_EMPTY:
            raise RegistryError(f"{where}: {name} must not be empty")
        if kind is str and control_chars(value):  # listed and sent as they are: a terminal or a header would obey it
            raise RegistryError(f"{where}: {name} holds control character(s) {', '.join(control_chars(value))}")


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
    if entry.get("end_of_turn") and entry["protocol"] != "stt-stream":
        raise RegistryError(f"{where}: end_of_turn is a streaming STT's; {mid} is {entry['protocol']}")
    if entry.get("streamed_text") and entry["protocol"] != "tts-stream":
        raise RegistryError(f"{where}: streamed_text is a streaming TTS's; {mid} is {entry['protocol']}")
    exclusions = []
    for ex in entry.get("exclusions", []):
        if set(ex) != {"metric", "reason"}:
            raise RegistryError(f"{where}: each exclusion needs exactly metric and reason, got {ex!r}")
        exclusions.append(Exclusion(ex["metric"], ex["reason"]))
    return ModelInfo(mid, entry["board"], entry["vendor"], entry["protocol"], entry["adapter"], entry["status"],
                     entry["region"], entry["needs_key"], entry.get("voice"), tuple(exclusions),
                     checked=entry["checked"], source=entry["source"], deprecated=deprecated, shutdown=shutdown,
                     successor=entry.get("successor"), session_limit_s=limit, undated=entry.get("undated"),
                     session_limit_unknown=unknown, description=entry.get("description"),
                     price=_price(entry, f"{where} ({mid})"), baseline=entry.get("baseline", False),
                     transport=entry.get("transport"), sample_rate=entry.get("sample_rate"),
                     end_of_turn=entry.get("end_of_turn", False), streamed_text=entry.get("streamed_text", False))


def _price(entry: dict[str, Any], where: str) -> Price | None:
    """A model's list price: all of price_usd, price_unit, price_source and price_checked (and an S2S
    model's price_output_usd), or none of them; a number >= 0 in a unit that fits its board."""
    given = [name for name in _PRICE if name in entry]
    if not given:
        return None
    missing = [n for n in ("price_usd", "price_unit", "price_source", "price_checked") if n not in entry]
    if missing:
        raise RegistryError(f"{where}: a price needs {', '.join(missing)} too (or no price field at all)")
    bad = prices.problem(entry["board"], entry["price_usd"], entry["price_unit"], entry.get("price_output_usd"))
    if bad:
        raise RegistryError(f"{where}: {bad}")
    output = entry.get("price_output_usd")
    return Price(float(entry["price_usd"]), entry["price_unit"], entry["price_source"], entry["price_checked"],
                 None if output is None else float(output))


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
    _check_server(entry, where)
    return VendorInfo(entry["name"], entry["snapshots"], entry["checked"], entry["source"], entry.get("pattern"),
                      entry.get("note"), entry.get("speaks"), entry.get("base_url", "").rstrip("/") or None,
                      entry.get("key_env"))


def _check_server(entry: dict[str, Any], where: str) -> None:
    """A vendor's own server: the family it speaks goes with its base_url (an http(s) address that holds
    no credentials: it is shown and stored), and its key obeys the key rule (voxwatch/providers/keys.py)."""
    if ("speaks" in entry) != ("base_url" in entry):
        raise RegistryError(f"{where}: speaks (the protocol family its server speaks) and base_url (where that "
                            "server is) go together")
    if "speaks" in entry and entry["speaks"] not in FAMILIES:
        raise RegistryError(f"{where}: speaks must be one of {tuple(FAMILIES)}, got {entry['speaks']!r}")
    problem = server_url_problem(entry["base_url"], HTTP) if "base_url" in entry else None
    if problem:
        raise RegistryError(f"{where}: base_url {problem}")
    key_env = entry.get("key_env")
    if key_env is not None and key_env not in ("", key_variable(entry["name"])):
        raise RegistryError(f"{where}: key_env {key_env!r}: API keys come from the environment only, as "
                            f"VOXWATCH_<VENDOR>_API_KEY; vendor {entry['name']!r} reads "
                            f"{key_variable(entry['name'])} (or key_env = \"\" for a server that takes no key)")


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


def _key_error(m: ModelInfo, vendor: VendorInfo | None) -> str | None:
    if vendor is not None and vendor.key_env == "" and m.needs_key:
        return (f"{m.id} says needs_key = true, but its vendor {m.vendor!r} says key_env = \"\" (a server that "
                "takes no key)")
    return None


def _tables(text: str, source: str) -> dict[str, Any]:
    """A registry file's tables, or an error naming the file."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{source}: {exc}") from None
    except RecursionError:
        raise RegistryError(f"{source}: nested deeper than a TOML parser can read; not a registry file") from None
    unknown = set(data) - set(_TABLES)
    if unknown:
        raise RegistryError(f"{source}: unknown table(s) {sorted(unknown)}; the file holds [[vendor]], [[model]], "
                            "[[preference_options]] and [[preference_config]]")
    for table in _TABLES:
        if table in data and not (isinstance(data[table], list) and all(isinstance(e, dict) for e in data[table])):
            raise RegistryError(f"{source}: {table} must be an array of tables ([[{table}]])")
    return data


def _entries(data: dict[str, Any], table: str, source: str) -> list[tuple[dict[str, Any], str, bool]]:
    """Each entry of a table with where it is ("<file> model #3") and whether it says `override = true`."""
    out = []
    for i, entry in enumerate(data.get(table, [])):
        where, entry = f"{source} {table} #{i + 1}", dict(entry)
        override = entry.pop("override", False)
        if not isinstance(override, bool):
            raise RegistryError(f"{where}: override must be true or false, got {override!r}")
        out.append((entry, where, override))
    return out


def _no_duplicates(source: str, kind: str, names: list[str]) -> None:
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise RegistryError(f"{source}: duplicate {kind}(s) {dupes}")


def _merge(found: dict[str, Any], wheres: dict[str, str], name: str, item: Any, where: str, override: bool,
           kind: str) -> None:
    """Add an entry, or replace an earlier file's only when it says so: no entry silently shadows another."""
    if name in found and not override:
        raise RegistryError(f"{where}: {kind} {name!r} is already registered ({wheres[name]}); set override = true "
                            "in this entry to replace that one")
    if name not in found and override:
        raise RegistryError(f"{where}: override = true, but no earlier registry file registers {kind} {name!r}")
    found[name], wheres[name] = item, where


def _with_transport(entry: dict[str, Any], where: str) -> dict[str, Any]:
    """A deployed agent (vendor "agent") names its transport, which picks its adapter (it may leave
    `adapter` out); a pcm-ws agent states its sample rate; no other model has either."""
    agent, transport, rate = entry.get("vendor") == AGENT_VENDOR, entry.get("transport"), entry.get("sample_rate")
    if not agent and (transport is not None or rate is not None):
        raise RegistryError(f"{where}: transport and sample_rate are a deployed agent's (vendor {AGENT_VENDOR!r})")
    if not agent:
        return entry
    if transport not in TRANSPORTS:
        raise RegistryError(f"{where}: a deployed agent needs transport, one of {', '.join(TRANSPORTS)}; got "
                            f"{transport!r}")
    if (transport == "pcm-ws") != (rate is not None):
        raise RegistryError(f"{where}: sample_rate (the PCM's rate, one of {PCM_RATES}) goes with transport "
                            "\"pcm-ws\" and only with it")
    if rate is not None and rate not in PCM_RATES:
        raise RegistryError(f"{where}: sample_rate must be one of {PCM_RATES}, got {rate!r}")
    if entry.setdefault("adapter", TRANSPORTS[transport]) != TRANSPORTS[transport]:
        raise RegistryError(f"{where}: a {transport} agent's adapter is {TRANSPORTS[transport]} (leave adapter "
                            f"out), not {entry['adapter']!r}")
    return entry


def _with_adapter(entry: dict[str, Any], vendors: dict[str, VendorInfo], where: str) -> dict[str, Any]:
    """A model of a vendor that speaks a protocol family is measured by that family's adapter: it may
    leave `adapter` out, and may not name another (that one would not use the vendor's base_url)."""
    entry = _with_transport(entry, where)
    name = entry.get("vendor")
    vendor = vendors.get(name) if isinstance(name, str) else None  # a wrong type is _typed's to report
    if vendor is None or vendor.speaks is None:
        return entry
    adapters = FAMILIES[vendor.speaks]
    adapter = adapters.get(entry.get("protocol"))
    if adapter is None:
        raise RegistryError(f"{where}: vendor {vendor.name!r} speaks {vendor.speaks}, which voxwatch measures over "
                            f"{', '.join(adapters)}; protocol {entry.get('protocol')!r} is not one of them")
    if entry.setdefault("adapter", adapter) != adapter:
        raise RegistryError(f"{where}: vendor {vendor.name!r} speaks {vendor.speaks}: its {entry['protocol']} "
                            f"adapter is {adapter} (leave adapter out), not {entry['adapter']!r}")
    return entry


def _package_text() -> str:
    return files("voxwatch.providers").joinpath(PACKAGE).read_text()


def _user_text(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
        raise RegistryError(f"{path}: cannot read this registry file ({reason}), named in [registry] files or "
                            "VOXWATCH_REGISTRY_FILES") from None


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
    def from_toml(cls, text: str, source: str = PACKAGE, today: dt.date | None = None) -> "Registry":
        return cls.from_layers([(source, _tables(text, source))], today)

    @classmethod
    def from_layers(cls, layers: Sequence[tuple[str, dict[str, Any]]], today: dt.date | None = None) -> "Registry":
        """The entries of each (origin, tables), in order, merged (a later file adds ids and vendors, and
        replaces one only where its entry says `override = true`), then checked together."""
        vendors: dict[str, VendorInfo] = {}
        vendor_where: dict[str, str] = {}
        for source, data in layers:
            found = [(_parse_vendor(e, w), w, o) for e, w, o in _entries(data, "vendor", source)]
            _no_duplicates(source, "vendor", [v.name for v, _, _ in found])
            for v, where, override in found:
                _merge(vendors, vendor_where, v.name, replace(v, origin=source), where, override, "vendor")
        models: dict[str, ModelInfo] = {}
        model_where: dict[str, str] = {}
        for source, data in layers:
            found = [(_parse(_with_adapter(e, vendors, w), w), w, o) for e, w, o in _entries(data, "model", source)]
            _no_duplicates(source, "id", [m.id for m, _, _ in found])
            for m, where, override in found:
                vendor = vendors.get(m.vendor)
                m = replace(m, origin=source, base_url=vendor.base_url if vendor else None)
                _merge(models, model_where, m.id, m, where, override, "id")
        for m in models.values():
            problem = _versioning_error(m, vendors.get(m.vendor)) or _key_error(m, vendors.get(m.vendor))
            if problem:
                raise RegistryError(f"{m.origin}: {problem}")
            if m.successor is not None and (m.successor not in models or m.successor == m.id):
                raise RegistryError(f"{m.origin}: the successor of {m.id}, {m.successor!r}, is not another "
                                    "registered id")
        registry = cls(list(models.values()), list(vendors.values()), today)
        (source, data), *users = layers
        for user, tables in users:
            if set(tables) & {"preference_options", "preference_config"}:
                raise RegistryError(f"{user}: [[preference_options]] and [[preference_config]] are the package "
                                    "registry's (the preference board's); a user file adds vendors and models")
        registry.preference_options, registry.preference_configs = preference_configs.parse(
            data.get("preference_options", []), data.get("preference_config", []), registry.models, source,
            RegistryError)
        return registry

    @classmethod
    def default(cls, today: dt.date | None = None, files: Sequence[Path] | None = None) -> "Registry":
        """The package's registry with the user's files over it: `files`, else those the configuration
        names ([registry] files or VOXWATCH_REGISTRY_FILES; voxwatch.config.registry_files)."""
        if files is None:
            from voxwatch.config import registry_files  # the configuration reads this module's errors

            files = registry_files()
        package = (PACKAGE, _tables(_package_text(), PACKAGE))
        return cls.from_layers([package, *((str(path), _tables(_user_text(path), str(path))) for path in files)],
                               today)

    def is_baseline(self, model_id: str) -> bool:
        """Whether an id is one of voxwatch's baselines (a script, not a model: ModelInfo.baseline);
        False for an id the registry cannot resolve."""
        try:
            return self.resolve(model_id).baseline
        except RegistryError:
            return False

    def resolve(self, model_id: str) -> ModelInfo:
        """The exact model for an id; floating aliases and unknown ids raise RegistryError. A cascade id
        (cascade_ids.py) is made from the registered ids it names."""
        if model_id in self.models:
            return self.models[model_id]
        from voxwatch.providers.cascade_ids import is_cascade, resolve_cascade  # it builds on this module

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
        raise RegistryError(f"unknown model id {model_id!r}{did_you_mean(model_id, self.models)} "
                            "(`voxwatch providers list` shows the registered ids)")

    @staticmethod
    def adapter_class(model: ModelInfo) -> type:
        """The class named by the model's `adapter` ("module:Class"), imported: what it can do is
        known before one is made (ImportError or AttributeError when the name is wrong)."""
        module_name, _, class_name = model.adapter.partition(":")
        return getattr(importlib.import_module(module_name), class_name)

    def create(self, model: ModelInfo, region: str | None = None) -> Any:
        """Instantiate the adapter; a local engine must be the version its id names. An adapter that
        picks the vendor's endpoint by the worker's region (`per_region = True`) is given `region`."""
        adapter_cls = self.adapter_class(model)
        installed = getattr(adapter_cls, "installed_version", None)
        if installed is not None and model.version is not None and installed() != model.version:
            raise RegistryError(f"{model.id} names version {model.version}, but {installed()} is installed")
        if region is not None and getattr(adapter_cls, "per_region", False):
            return adapter_cls(model, region=region)
        return adapter_cls(model)
