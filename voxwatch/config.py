"""Configuration: one TOML file over the packaged default, then VOXWATCH_<SECTION>_<KEY> overrides.

The schema below is the whole configuration; an unknown key, a wrong type or a bad value is an
error that names the key and the problem. API keys are not configuration: see providers.keys.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Callable, Mapping

from voxwatch.foundation.text import control_chars

from voxwatch.foundation.redaction import redact_url
from voxwatch.foundation.server_url import server_url_problem, webhook_url_problem
from voxwatch.foundation.store_url import EXPECTED, store_kind

BOARDS = ("stt", "tts", "s2s")
MAX_INT = 2**31 - 1  # counts, minutes and seconds: past this a scheduler or a timer overflows
MAX_SECONDS = 1e9  # about 31 years: any longer wait is a mistake (asyncio cannot schedule inf)


class ConfigError(ValueError):
    pass


def _nonnegative_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError("must be an integer >= 0")
    return v


def _positive_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= MAX_INT:
        raise ValueError(f"expected a positive integer (at most {MAX_INT})")
    return v


def _turns(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_INT:
        raise ValueError("expected 0 (every turn of the scenario) or a positive number of turns")
    return v


def _seed(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not -1 <= v < 2**63:
        raise ValueError("expected -1 (fresh seed per run) or a non-negative integer below 2^63 (it is stored)")
    return v


def _positive_float(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= MAX_SECONDS:  # False for nan
        raise ValueError(f"expected a positive finite number (at most {MAX_SECONDS:g})")
    return float(v)


def _clock_nice(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not -20 <= v <= 0:
        raise ValueError("expected a nice value from -20 (the most raised) to 0 (left alone)")
    return v


def _bound_ms(v: Any) -> float | None:
    """Unset (the method's bound), or a positive number of milliseconds (a string from the environment)."""
    if v is None:
        return None
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise ValueError("expected a positive number of milliseconds") from None
    return _positive_float(v)


def _nonnegative_float(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_SECONDS:  # False for nan
        raise ValueError(f"expected a finite number >= 0 (at most {MAX_SECONDS:g})")
    return float(v)


def _text(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError("expected a non-empty string")
    if control_chars(v):
        raise ValueError("expected text without control characters")
    return v


def _text_or_empty(v: Any) -> str:
    """A folder, or "" for the default the key's comment names."""
    return v if v == "" else _text(v)


def _store_url(v: Any) -> str:
    v = _text(v)
    if store_kind(v) is None:
        raise ValueError(f"expected {EXPECTED}")
    return v


def _broker_url(v: Any) -> str:
    v = _text(v)
    if not v.startswith(("redis://", "rediss://")):
        raise ValueError("expected redis://host:port/db or rediss://host:port/db")
    return v


def _name_part(v: Any) -> str:
    v = _text(v)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", v):
        raise ValueError("expected letters, digits, '.', '_' or '-' (it names a queue)")
    return v


def _regions(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list):
        raise ValueError("expected a list of region names")
    return tuple(_name_part(x) for x in v)


def _time_zones(v: Any) -> tuple[tuple[str, str], ...]:
    """Each region's IANA time zone, as "region=Area/City" (the hour-of-day views read its local hours
    in it; a region with none is read in UTC). Checked against the zone database now, not at a page."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(v, list):
        raise ValueError('expected a list of "region=Area/City" (an IANA time zone)')
    out: dict[str, str] = {}
    for item in v:
        region, sep, zone = _text(item).partition("=")
        if not sep:
            raise ValueError(f'{item!r}: expected "region=Area/City" (an IANA time zone)')
        region, zone = _name_part(region.strip()), zone.strip()
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{region}: {zone!r} is not an IANA time zone (e.g. Europe/Dublin)") from None
        if region in out:
            raise ValueError(f"{region}: given twice")
        out[region] = zone
    return tuple(sorted(out.items()))


def _names(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x.strip() for x in v):
        raise ValueError("expected a list of strings")
    return tuple(v)


def _personas(v: Any) -> tuple[str, ...]:
    """Bundled persona names (voxwatch/foundation/persona.py; `voxwatch scenarios personas` lists them)."""
    from voxwatch.foundation.persona import PersonaError, find

    names = _names(v)
    if not names:
        raise ValueError('expected at least one persona (["default"]: the scenario\'s own audio)')
    if len(set(names)) != len(names):
        raise ValueError("a persona named twice (each is one conversation per model and scenario)")
    for name in names:
        try:
            find(name)
        except PersonaError as exc:
            raise ValueError(str(exc)) from None
    return names


def _fraction(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:  # False for nan
        raise ValueError("expected a number between 0 and 1")
    return float(v)


def _samples(v: Any) -> int:
    from voxwatch.metrics.series import MIN_N

    if isinstance(v, bool) or not isinstance(v, int) or not MIN_N <= v <= MAX_INT:
        raise ValueError(f"expected an integer of at least {MIN_N} (METHOD: statistics are n/a below {MIN_N})")
    return v


def _flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


WEBHOOK_FORMATS = ("slack", "json")


@dataclass(frozen=True)
class Webhook:
    """Where alert notifications go. The URL is a secret (a Slack URL is its own credential), so the
    config names only the environment variable that holds it; rows and logs carry the name."""
    name: str
    format: str  # slack: {"text": ...}; json: the alert's fields
    url_env: str


def _webhooks(v: Any) -> tuple[Webhook, ...]:
    """[[alerts.webhooks]] tables (name, format, url_env), or "name:format:URL_ENV" strings (the
    environment's comma-separated form). Never echoes what it was given: it could hold a URL."""
    if not isinstance(v, list):
        raise ValueError("expected a list of webhooks")
    hooks = []
    for i, item in enumerate(v, 1):
        if isinstance(item, str) and item.count(":") == 2:
            item = dict(zip(("name", "format", "url_env"), item.split(":")))
        if not isinstance(item, dict) or set(item) != {"name", "format", "url_env"}:
            raise ValueError(f"webhook {i}: expected exactly name, format and url_env (the name of the environment "
                             f"variable holding the URL; the URL itself never goes in the config)")
        if not isinstance(item["name"], str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", item["name"]):
            raise ValueError(f"webhook {i}: name: expected letters, digits, '.', '_' or '-'")
        if item["format"] not in WEBHOOK_FORMATS:
            raise ValueError(f"webhook {i} ({item['name']}): format: expected one of {', '.join(WEBHOOK_FORMATS)}")
        if not isinstance(item["url_env"], str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", item["url_env"]):
            raise ValueError(f"webhook {i} ({item['name']}): url_env: expected an environment variable name")
        hooks.append(Webhook(item["name"], item["format"], item["url_env"]))
    if len({h.name for h in hooks}) != len(hooks):
        raise ValueError("webhook names must be unique (deliveries are recorded by name)")
    return tuple(hooks)


@dataclass(frozen=True)
class Alerts:
    """Regression alerts (docs/ALERTS.md): the windows, the rules' thresholds, the lifecycle, webhooks."""
    evaluate_every_minutes: int = 15
    recent_hours: float = 6.0
    baseline_days: float = 30.0
    min_recent: int = 20
    min_baseline: int = 50
    min_paired_utterances: int = 10
    p_value: float = 0.01
    wer_p_value: float = 0.001  # WER's own level: its materiality is ~2 standard errors (docs/ALERTS.md)
    latency_increase_pct: float = 20.0
    latency_increase_ms: float = 50.0
    wer_increase_points: float = 2.0
    rate_increase_points: float = 10.0
    # conversations (S2S board): judged per conversation, so their own minimums and materiality
    min_recent_conversations: int = 5
    min_baseline_conversations: int = 10
    adherence_drop_points: float = 10.0
    # the sentinel panel's sequential rules (docs/ALERTS.md "Sequential rules"); CUSUM units are
    # the baseline's robust sd of one observation (one tick or burst)
    latency_allowance: float = 1.0
    latency_pending_at: float = 1.25
    latency_fire_at: float = 5.0
    wer_allowance: float = 0.75
    wer_pending_at: float = 1.5
    wer_fire_at: float = 7.0
    increment_cap: float = 2.5
    hour_window: int = 3
    outage_share: float = 0.5
    min_baseline_observations: int = 48
    bursts_per_alert: int = 10
    bursts_per_day: int = 20
    fire_after: int = 2
    resolve_after: int = 2
    include_emulator: bool = False
    webhooks: tuple[Webhook, ...] = ()
    delivery_attempts: int = 3
    delivery_backoff_s: float = 1.0
    delivery_timeout_s: float = 10.0


_BOARD_KEYS: dict[str, Callable[[Any], Any]] = {"models": _names, "datasets": _names}
SCHEMA: dict[str, dict[str, Callable[[Any], Any]]] = {
    "worker": {"region": _name_part},
    "store": {"url": _store_url, "spool_dir": _text, "spool_fallback_dir": _text_or_empty},
    "run": {"sample_size": _positive_int, "panel_size": _nonnegative_int, "seed": _seed, "timeout_s": _positive_float, "chunk_ms": _positive_int,
            "concurrency": _positive_int, "stall_bound_ms": _bound_ms, "clock_nice": _clock_nice,
            "eot_wait_s": _nonnegative_float,
            "max_retry_after_s": _positive_float, "backoff_s": _positive_float, "recordings_dir": _text,
            "reconcile_after_s": _positive_float, "reconcile_every_s": _positive_float},
    "schedule": {"every_minutes": _positive_int, "regions": _regions, "time_zones": _time_zones},
    "broker": {"url": _broker_url, "queue_prefix": _name_part, "visibility_timeout_s": _positive_int,
               "soft_time_limit_s": _positive_int, "time_limit_s": _positive_int,
               "conversation_soft_time_limit_s": _positive_int, "conversation_time_limit_s": _positive_int},
    "datasets": {"dir": _text, "fetch_catalog": _text, "fetch_timeout_s": _positive_float, "fetch_attempts": _positive_int,
                 "fetch_deadline_s": _nonnegative_float},
    "scenarios": {"dir": _text, "noises_dir": _text},
    "preference": {"prompts_dir": _text, "outputs_dir": _text, "gold_pass_share": _fraction,
                   "gold_min_answers": _positive_int},
    "registry": {"files": _names},
    "boards.stt": dict(_BOARD_KEYS),
    "boards.tts": {**_BOARD_KEYS, "instrument": _text},
    "boards.s2s": {**_BOARD_KEYS, "conversation_models": _names, "scenarios": _names, "conversation_turns": _turns,
                   "personas": _personas, "conversation_every_minutes": _positive_int, "reply_transcriber": _text},
    "alerts": {"evaluate_every_minutes": _positive_int, "recent_hours": _positive_float,
               "baseline_days": _positive_float, "min_recent": _samples, "min_baseline": _samples,
               "min_paired_utterances": _positive_int,
               "p_value": _fraction, "wer_p_value": _fraction, "latency_increase_pct": _positive_float, "latency_increase_ms": _positive_float,
               "wer_increase_points": _positive_float, "rate_increase_points": _positive_float,
               "min_recent_conversations": _samples, "min_baseline_conversations": _samples,
               "adherence_drop_points": _positive_float, "fire_after": _positive_int, "resolve_after": _positive_int, "include_emulator": _flag,
               "webhooks": _webhooks, "delivery_attempts": _positive_int, "delivery_backoff_s": _positive_float,
               "delivery_timeout_s": _positive_float,
               "latency_allowance": _positive_float, "latency_pending_at": _positive_float,
               "latency_fire_at": _positive_float, "wer_allowance": _positive_float, "wer_pending_at": _positive_float,
               "wer_fire_at": _positive_float, "increment_cap": _positive_float, "hour_window": _nonnegative_int, "outage_share": _fraction,
               "min_baseline_observations": _positive_int, "bursts_per_alert": _nonnegative_int,
               "bursts_per_day": _nonnegative_int},
}


@dataclass(frozen=True)
class Board:
    models: tuple[str, ...]
    datasets: tuple[str, ...]
    # the S2S board's multi-turn conversations (`voxwatch run`): models, scenarios, and how many of
    # each scenario's first turns to hold (0: every turn; a trial's end state is not checked)
    conversation_models: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()
    conversation_turns: int = 0
    personas: tuple[str, ...] = ("default",)  # each its own conversation per model and scenario, never pooled
    conversation_every_minutes: int = 60  # distributed mode: beat plans the conversations this often
    # the fixed STT that transcribes, after the call, the replies of an agent that does not report its words
    reply_transcriber: str = "faster-whisper/tiny.en@1.2.1"


@dataclass(frozen=True)
class Broker:
    """Distributed mode: the Redis broker, queue names and the limits that make redelivery safe."""
    url: str = "redis://127.0.0.1:6379/0"
    queue_prefix: str = "voxwatch"
    visibility_timeout_s: int = 3600  # an unacknowledged task goes back to its queue after this
    soft_time_limit_s: int = 540  # a measure task past this ends as a timeout row
    time_limit_s: int = 600  # the worker process is killed past this (the row is still written)
    # a converse task holds a whole scenario (a 19-turn one takes ~5 min on the local cascade)
    conversation_soft_time_limit_s: int = 1500
    conversation_time_limit_s: int = 1560


@dataclass(frozen=True)
class Config:
    region: str
    store_url: str
    sample_size: int
    seed: int
    timeout_s: float
    chunk_ms: int
    max_retry_after_s: float
    default_backoff_s: float
    recordings_dir: Path
    every_minutes: int
    datasets_dir: Path
    spool_dir: Path
    boards: dict[str, Board]
    tts_instrument: str
    source: str
    broker: Broker = Broker()
    schedule_regions: tuple[str, ...] = ()  # regions beat plans for; empty means [worker] region
    region_zones: tuple[tuple[str, str], ...] = ()  # (region, IANA time zone); a region not named is read in UTC
    alerts: Alerts = Alerts()
    panel_size: int = 24  # the sentinel panel: utterances per family every tick measures beside its draw
    reconcile_after_s: float = 7200.0  # a run still short of rows this long after its start is finished from them
    reconcile_every_s: float = 60.0  # beat sends the reconciler this often (voxwatch.workers.reconcile)
    concurrency: int = 1  # `voxwatch run`: measurements at once, at most (fewer while the worker stalls: harness.backpressure)
    clock_nice: int = -10  # the measuring thread's priority while on the clock (foundation.priority); 0: left alone
    stall_bound_ms: float | None = None  # the clock witness: a row less sure of its clocks is excluded; None: METHOD's
    eot_wait_s: float = 0.0  # a caller stays on the line this long for an STT's own end of turn (METHOD "STT end of turn")
    scenarios_dir: Path = Path("var/scenarios")  # where `voxwatch scenarios import` writes
    noises_dir: Path = Path("var/noises")  # where `voxwatch scenarios noise import` writes
    preference_prompts_dir: Path = Path("var/preference/prompts")  # where `voxwatch preference prompts import` writes
    preference_outputs_dir: Path = Path("var/preference/outputs")  # the outputs' and gold pairs' audio
    preference_gold_pass_share: float = 0.8  # a rater passing fewer of their gold pairs is careless (preference/gold.py)
    preference_gold_min_answers: int = 2  # ... when they answered at least this many
    registry_files: tuple[Path, ...] = ()  # the user's registry files, merged over the package's (absolute)
    fetch_catalog: Path = Path("var/fetch-catalog.toml")  # your fetch entries and --pin records (voxwatch/datasets/remote.py)
    fetch_timeout_s: float = 30.0  # `voxwatch datasets fetch`: a server silent this long is a timeout
    fetch_attempts: int = 4  # ... tries per file, each resuming where the last stopped
    fetch_deadline_s: float = 0.0  # ... every try at one file together; 0: from its size (datasets.download.deadline_for)
    spool_fallback_dir: Path | None = None  # where rows go when spool_dir cannot take them; None: spool_dirs says

    def with_store(self, url: str) -> "Config":
        try:
            _store_url(url)
        except ValueError as exc:
            raise ConfigError(f"--store: {exc}") from None
        return replace(self, store_url=url)

    @property
    def spool_dirs(self) -> tuple[Path, ...]:
        """Where rows the store refuses go, in order: spool_dir, then the fallback for when its disk is
        full (by default a folder of this store's own under the system's temporary folder, so one
        store's rows are never drained into another)."""
        fallback = self.spool_fallback_dir
        if fallback is None:
            store = hashlib.sha256(redact_url(self.store_url).encode()).hexdigest()[:12]
            fallback = Path(tempfile.gettempdir()) / "voxwatch-spool" / store
        return (self.spool_dir,) if fallback == self.spool_dir else (self.spool_dir, fallback)


def _flatten(data: dict[str, Any], source: str) -> dict[str, dict[str, Any]]:
    sections: dict[str, dict[str, Any]] = {}
    for name, value in data.items():
        if name == "boards" and isinstance(value, dict):
            for board, keys in value.items():
                sections[f"boards.{board}"] = keys
        else:
            sections[name] = value
    for name, keys in sections.items():
        if name not in SCHEMA:
            raise ConfigError(f"{source}: unknown section [{name}]; known: {', '.join(f'[{s}]' for s in SCHEMA)}")
        if not isinstance(keys, dict):
            raise ConfigError(f"{source}: [{name}] must be a table")
        for key in keys:
            if key not in SCHEMA[name]:
                raise ConfigError(f"{source}: [{name}] unknown key {key!r}; known: {', '.join(SCHEMA[name])}")
    return sections


def _env_value(raw: str, current: Any) -> Any:
    if isinstance(current, bool):
        return {"true": True, "false": False}.get(raw.strip().lower(), raw)
    if isinstance(current, (list, tuple)):
        return [x.strip() for x in raw.split(",") if x.strip()]
    if isinstance(current, int):
        try:
            return int(raw)
        except ValueError:
            return raw
    if isinstance(current, float):
        try:
            return float(raw)
        except ValueError:
            return raw
    return raw


def env_name(section: str, key: str) -> str:
    return "VOXWATCH_" + section.replace(".", "_").upper() + "_" + key.upper()


OTHER_VARIABLES = (
    "VOXWATCH_CONFIG", "VOXWATCH_TODAY", "VOXWATCH_GRAFANA_TOKEN", "VOXWATCH_SPEECH_DIR", "VOXWATCH_TEST_POSTGRES",
    "VOXWATCH_OPERATOR_TOKEN",  # voxwatch.web.operator: opens the raw ratings' export on the web
    # docker compose's (.env.example): read by compose and the Grafana container, harmless here
    "VOXWATCH_PG_READER", "VOXWATCH_PG_READER_PASSWORD", "VOXWATCH_PG_HOST", "VOXWATCH_PG_PORT", "VOXWATCH_PG_DATABASE",
    "VOXWATCH_PG_SSLMODE", "VOXWATCH_PG_WEB", "VOXWATCH_PG_WEB_PASSWORD", "VOXWATCH_BIND", "VOXWATCH_WEB_PORT", "VOXWATCH_SLACK_WEBHOOK_URL",
    "VOXWATCH_WORKER_CONCURRENCY",  # compose's `worker --concurrency`; run_worker sets it for workers.host_pressure
    "VOXWATCH_ALERTS_WEBHOOK_URL",
    # the conversation judge (voxwatch.conversations.judge): any OpenAI-compatible chat endpoint
    "VOXWATCH_JUDGE_BASE_URL", "VOXWATCH_JUDGE_MODEL", "VOXWATCH_JUDGE_API_KEY",
)
"""Every VOXWATCH_* variable voxwatch or its deployment reads besides the config keys' own and the
vendors' (VENDOR_VARIABLE); a new one must be added here, or every command refuses to start."""
VENDOR_VARIABLE = re.compile(r"VOXWATCH_[A-Z0-9_]+_(API_KEY|BASE_URL)|VOXWATCH_AGENT_[A-Z0-9_]+_(URL|TOKEN)")
"""providers.keys.vendor_variable: a vendor's key and base URL (any vendor, registered or a test's); a
deployed agent's address and token, and its state endpoint's (providers/agents/line.py)."""


def _server_url_variables(env: Mapping[str, str]) -> None:
    """A server address set in the environment (VOXWATCH_<VENDOR>_BASE_URL, the judge's) obeys the rule a
    registry file's base_url does (foundation.server_url); the message never quotes it."""
    for var in sorted(v for v in env if v.startswith("VOXWATCH_") and v.endswith("_BASE_URL")):
        problem = server_url_problem(env[var].strip().rstrip("/")) if env[var].strip() else None
        if problem:
            raise ConfigError(f"environment {var}: {problem}")


def _webhook_url_variables(env: Mapping[str, str], hooks: tuple[Webhook, ...]) -> None:
    """A webhook's URL, when its variable is set, is an http(s) URL with a host: a mistake shows when the
    configuration is read, not when an alert fires. (A process that delivers nothing, the web app, has
    none; `voxwatch alerts evaluate` requires them: require_webhook_urls.) The message names the variable only."""
    for hook in hooks:
        problem = webhook_url_problem(env[hook.url_env]) if hook.url_env in env else None
        if problem:
            raise ConfigError(f"[alerts] webhooks: {hook.name}: the environment variable {hook.url_env} (this "
                              f"webhook's URL) {problem}")


def require_webhook_urls(hooks: tuple[Webhook, ...], env: Mapping[str, str]) -> None:
    """For a command that delivers alerts: every webhook's variable is set (load() checked the values)."""
    for hook in hooks:
        if hook.url_env not in env:
            raise ConfigError(f"[alerts] webhooks: {hook.name}: the environment variable {hook.url_env} (this "
                              "webhook's URL) is not set")


def _unknown_variables(env: Mapping[str, str], allowed: set[str]) -> None:
    """A VOXWATCH_* variable nobody reads is a misspelling whose value would be silently ignored."""
    known = {env_name(name, key) for name, keys in SCHEMA.items() for key in keys} | set(OTHER_VARIABLES) | allowed
    for var in sorted(env):
        if var.startswith("VOXWATCH_") and var not in known and not VENDOR_VARIABLE.fullmatch(var):
            near = difflib.get_close_matches(var, sorted(known), n=1, cutoff=0.8)
            hint = f"did you mean {near[0]}? " if near else ""
            raise ConfigError(f"environment {var}: unknown variable ({hint}a config key [section] key is set as "
                              f"VOXWATCH_<SECTION>_<KEY>; docs/OPERATIONS.md, Configuration)")


def _read_toml(path: str | Path) -> dict[str, Any]:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config ({exc.strerror})") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 (line {line}); TOML files are UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML (nested deeper than a parser can read)") from None


@cache
def _defaults() -> dict[str, dict[str, Any]]:
    return _flatten(tomllib.loads(files("voxwatch").joinpath("default.toml").read_text(encoding="utf-8")), "default.toml")


def check_text(section: str, key: str, text: str) -> Any:
    """A value given as text (a command-line option) through the key's one check, read as its
    environment variable would be: `--seed` is checked exactly as [run] seed. ValueError if bad."""
    return SCHEMA[section][key](_env_value(text, _defaults()[section][key]))


def load(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """The default, overlaid by the file (path, $VOXWATCH_CONFIG or ./voxwatch.toml), then the environment."""
    env = os.environ if environ is None else environ
    merged = {name: dict(keys) for name, keys in _defaults().items()}
    chosen = _chosen(path, env)
    source = str(chosen) if chosen else "default.toml"
    where: dict[tuple[str, str], str] = {}  # where each value not from default.toml came from
    if chosen:
        for name, keys in _flatten(_read_toml(chosen), source).items():
            merged.setdefault(name, {}).update(keys)
            where.update({(name, key): source for key in keys})
    for name, keys in SCHEMA.items():
        for key in keys:
            var = env_name(name, key)
            if var in env:
                merged.setdefault(name, {})[key] = _env_value(env[var], merged.get(name, {}).get(key))
                where[(name, key)] = f"environment {var}"
    values: dict[str, dict[str, Any]] = {}
    for name, keys in SCHEMA.items():
        values[name] = {}
        for key, check in keys.items():
            raw = merged.get(name, {}).get(key)
            try:
                values[name][key] = check(raw)
            except ValueError as exc:
                shown = redact_url(raw) if key == "url" and isinstance(raw, str) else raw  # a URL may hold a password
                if key == "webhooks":  # may hold a webhook URL: the message says what is wrong without it
                    raise ConfigError(f"{where.get((name, key), source)}: [{name}] {key}: {exc}") from None
                raise ConfigError(f"{where.get((name, key), source)}: [{name}] {key} = {shown!r}: {exc}") from None
    _unknown_variables(env, {hook.url_env for hook in values["alerts"]["webhooks"]})
    _server_url_variables(env)
    _webhook_url_variables(env, values["alerts"]["webhooks"])
    return Config(
        region=values["worker"]["region"],
        store_url=values["store"]["url"],
        sample_size=values["run"]["sample_size"],
        seed=values["run"]["seed"],
        timeout_s=values["run"]["timeout_s"],
        chunk_ms=values["run"]["chunk_ms"],
        concurrency=values["run"]["concurrency"],
        stall_bound_ms=values["run"]["stall_bound_ms"],
        eot_wait_s=values["run"]["eot_wait_s"],
        clock_nice=values["run"]["clock_nice"],
        max_retry_after_s=values["run"]["max_retry_after_s"],
        default_backoff_s=values["run"]["backoff_s"],
        recordings_dir=Path(values["run"]["recordings_dir"]),
        every_minutes=values["schedule"]["every_minutes"],
        datasets_dir=Path(values["datasets"]["dir"]),
        spool_dir=Path(values["store"]["spool_dir"]),
        spool_fallback_dir=Path(values["store"]["spool_fallback_dir"]) if values["store"]["spool_fallback_dir"] else None,
        boards={b: Board(**{k: values[f"boards.{b}"][k] for k in _BOARD_FIELDS if k in values[f"boards.{b}"]})
                for b in BOARDS},
        tts_instrument=values["boards.tts"]["instrument"],
        source=source,
        broker=_broker(values["broker"], [where[("broker", k)] for k in _BROKER_LIMITS if ("broker", k) in where]),
        schedule_regions=values["schedule"]["regions"],
        region_zones=values["schedule"]["time_zones"],
        alerts=Alerts(**values["alerts"]),
        panel_size=values["run"].get("panel_size", 24),
        reconcile_after_s=values["run"]["reconcile_after_s"],
        reconcile_every_s=values["run"]["reconcile_every_s"],
        scenarios_dir=Path(values["scenarios"]["dir"]),
        noises_dir=Path(values["scenarios"]["noises_dir"]),
        preference_prompts_dir=Path(values["preference"]["prompts_dir"]),
        preference_outputs_dir=Path(values["preference"]["outputs_dir"]),
        preference_gold_pass_share=values["preference"]["gold_pass_share"],
        preference_gold_min_answers=values["preference"]["gold_min_answers"],
        registry_files=_registry_paths(values["registry"]["files"], where.get(("registry", "files"), source)),
        fetch_catalog=Path(values["datasets"]["fetch_catalog"]),
        fetch_timeout_s=values["datasets"]["fetch_timeout_s"],
        fetch_attempts=values["datasets"]["fetch_attempts"],
        fetch_deadline_s=values["datasets"]["fetch_deadline_s"],
    )


def _chosen(path: str | Path | None, env: Mapping[str, str]) -> str | Path | None:
    """The config file: the one given, else $VOXWATCH_CONFIG, else ./voxwatch.toml if there is one."""
    return path or env.get("VOXWATCH_CONFIG") or ("voxwatch.toml" if Path("voxwatch.toml").is_file() else None)


def _registry_paths(names: tuple[str, ...], origin: str) -> tuple[Path, ...]:
    """[registry] files as absolute paths: relative to the config file that names them, or to the working
    directory when the environment does (so a worker started elsewhere reads the same files)."""
    base = Path.cwd() if origin.startswith("environment ") or origin == "default.toml" else Path(origin).parent
    return tuple((base / Path(name).expanduser()).resolve() for name in names)


def registry_files(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The user registry files alone, as `load` reads them (VOXWATCH_REGISTRY_FILES, else the config
    file's [registry] files), for `Registry.default()`, which has no configuration in hand: the
    rest of the configuration is not checked here."""
    env = os.environ if environ is None else environ
    var = env_name("registry", "files")
    if var in env:
        origin, raw = f"environment {var}", _env_value(env[var], [])
    else:
        chosen = _chosen(path, env)
        if not chosen:
            return ()
        origin, raw = str(chosen), _read_toml(chosen).get("registry", {})
    try:
        return _registry_paths(_names(raw.get("files", []) if isinstance(raw, dict) else raw), origin)
    except (ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{origin}: [registry] files: {exc}") from None


_BOARD_FIELDS = ("models", "datasets", "conversation_models", "scenarios", "conversation_turns", "personas",
                 "conversation_every_minutes", "reply_transcriber")
_BROKER_LIMITS = ("soft_time_limit_s", "time_limit_s", "visibility_timeout_s", "conversation_soft_time_limit_s",
                  "conversation_time_limit_s")


def _broker(values: dict[str, Any], origins: list[str]) -> Broker:
    """The broker section; a task must end before Redis would hand it to another worker. An error
    names where the limits were set (the file, the environment variables), not default.toml."""
    broker = Broker(**values)
    if not broker.soft_time_limit_s < broker.time_limit_s < broker.visibility_timeout_s:
        raise ConfigError(f"{', '.join(dict.fromkeys(origins)) or 'default.toml'}: [broker] needs soft_time_limit_s < "
                          f"time_limit_s < visibility_timeout_s (got {broker.soft_time_limit_s}, {broker.time_limit_s}, "
                          f"{broker.visibility_timeout_s}): a task still running when its visibility timeout ends is "
                          "measured twice")
    if not broker.conversation_soft_time_limit_s < broker.conversation_time_limit_s < broker.visibility_timeout_s:
        raise ConfigError(f"{', '.join(dict.fromkeys(origins)) or 'default.toml'}: [broker] needs "
                          f"conversation_soft_time_limit_s < conversation_time_limit_s < visibility_timeout_s (got "
                          f"{broker.conversation_soft_time_limit_s}, {broker.conversation_time_limit_s}, "
                          f"{broker.visibility_timeout_s}): a conversation still running when its visibility timeout "
                          "ends is held twice")
    return broker
