"""The fetch catalog: public, redistributable speech sets `voxwatch datasets fetch NAME` can download.

An entry is data (voxwatch/datasets/remote/catalog.toml, and the user's own file, [datasets] fetch_catalog,
whose entries replace packaged ones of the same name): what the set is, its license, citation and
homepage, the files with their URLs and pinned checksums, how its transcripts are laid out, which
utterances to take, and which degraded conditions to build. The user's file also holds the
[[pin]] records `fetch --pin` appends: the sha256 of a first download of a file the catalog could
not pin, applied only where the entry's own sha256 is empty.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field, replace
from datetime import date
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from voxwatch.datasets import degrade
from voxwatch.datasets.download import FetchError
from voxwatch.foundation.redaction import redact_url

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
PARQUET_LAYOUTS = ("wildasr-family", "wildasr-accent")  # Hugging Face parquet shards, listed by the Hub (datasets.parquet_fetch)
LAYOUTS = ("librispeech", "tsv") + PARQUET_LAYOUTS
LICENSES = ("CC-BY-4.0", "CC0-1.0", "CC-BY-SA-4.0", "Apache-2.0")  # redistributable, commercial use allowed
_PARQUET_PARAMS = {"listing", "resolve", "config", "splits"}  # splits: condition -> the source's split name
_PARQUET_OPTIONAL = {"coval_ids"}  # a JSON file beside the catalog: Coval's ids, checked against the selection
_SHA256 = re.compile(r"^([0-9a-f]{64})?$")
_MD5 = re.compile(r"^([0-9a-f]{32})?$")
_CONDITION = re.compile(r"^[a-z0-9]{1,32}$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MAX_MEMBER_BYTES = 64 << 20  # an archive member taken out (a clip or a transcript): 10 minutes of 48 kHz WAV fit
MAX_UNPACKED_BYTES = 4 << 30  # everything taken out of one archive together


@dataclass(frozen=True)
class RemoteFile:
    name: str  # the file's name in the download cache and in errors
    url: str
    sha256: str  # "" when no published checksum was found: fetch refuses it unless --pin
    md5: str = ""  # the source's own published md5, checked too when given
    size: int | None = None
    members: dict[str, str] = field(default_factory=dict)  # archive member path -> its pinned sha256, checked when taken out
    max_member_bytes: int = MAX_MEMBER_BYTES  # an archive: the most one member taken out may unpack to
    max_unpacked_bytes: int = MAX_UNPACKED_BYTES  # ... and all of them together

    @property
    def is_archive(self) -> bool:
        return self.name.endswith(ARCHIVE_SUFFIXES)


@dataclass(frozen=True)
class RemoteEntry:
    name: str
    description: str
    license: str  # SPDX
    citation: str
    homepage: str
    language: str
    speech: str  # "recorded" or "synthesized"
    layout: str  # how utterances are read: LAYOUTS
    files: tuple[RemoteFile, ...]
    subset: dict[str, Any]  # {"first": N} by sorted id, {"per_speaker": N}, or {"ids": [...]}
    sources: str  # where the URLs and checksums were taken from
    layout_params: dict[str, Any] = field(default_factory=dict)
    degraded: tuple[str, ...] = ()
    pinned_by_user: tuple[str, ...] = ()  # files whose sha256 came from a [[pin]] record

    def mirrored(self, base: str) -> "RemoteEntry":
        """The entry with every URL's scheme and host replaced by `base`'s (a mirror, or a test's
        loopback server, that serves the source's paths): its files and a parquet layout's listing."""
        swap = lambda url: _rebased(url, base)  # noqa: E731
        params = dict(self.layout_params)
        for key in ("listing", "resolve"):
            if key in params:
                params[key] = swap(params[key])
        return replace(self, files=tuple(replace(f, url=swap(f.url)) for f in self.files), layout_params=params)

    def record(self, verified: dict[str, str]) -> dict[str, Any]:
        """What dataset.json keeps of where the set came from: each file's verified sha256, and
        which of them only a user's pin vouches for (this fetch's --pin included)."""
        return {"license": self.license, "citation": self.citation, "homepage": self.homepage,
                "language": self.language, "speech": self.speech, "subset": self.subset,
                "files": [{"name": f.name, "url": redact_url(f.url), "sha256": verified[f.name]} for f in self.files],
                "pinned_by_user": [f.name for f in self.files if f.name in self.pinned_by_user or not f.sha256]}


def _rebased(url: str, base: str) -> str:
    parts, mirror = urlsplit(url), urlsplit(base)
    if mirror.scheme not in ("http", "https") or not mirror.netloc:
        raise FetchError(f"--mirror {redact_url(base)}: expected http(s)://HOST[:PORT]")
    return urlunsplit((mirror.scheme, mirror.netloc, mirror.path.rstrip("/") + parts.path, parts.query, ""))


def license_ok(expression: str) -> bool:
    """An SPDX id voxwatch fetches, or several joined by AND (a set under one license whose audio is another's)."""
    return all(part in LICENSES for part in expression.split(" AND "))


def built_names(entry: RemoteEntry) -> list[str]:
    """The datasets a fetch of the entry makes: NAME and NAME-<transform>; for the WildASR family, Coval's
    names NAME-<condition>; for a single split, NAME."""
    if entry.layout == "wildasr-family":
        return [f"{entry.name}-{condition}" for condition in entry.layout_params["splits"]]
    return [entry.name] + [f"{entry.name}-{t}" for t in entry.degraded]


def packaged_catalog() -> Path:
    return Path(str(files("voxwatch.datasets").joinpath("remote", "catalog.toml")))


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FetchError(f"{path}: cannot read the fetch catalog ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise FetchError(f"{path}: not a valid fetch catalog ({exc})") from None
    except RecursionError:
        raise FetchError(f"{path}: not a valid fetch catalog (nested deeper than a parser can read)") from None


_ENTRY_KEYS = {"name", "description", "license", "citation", "homepage", "language", "speech", "layout",
               "files", "subset", "sources", "layout_params", "degraded"}
_FILE_KEYS = {"name", "url", "sha256", "md5", "size", "members", "max_member_bytes", "max_unpacked_bytes"}


def _entry(raw: Any, where: str, folder: Path) -> RemoteEntry:
    if not isinstance(raw, dict):
        raise FetchError(f"{where}: expected a table")
    unknown, missing = set(raw) - _ENTRY_KEYS, (_ENTRY_KEYS - {"layout_params", "degraded", "files"}) - set(raw)
    if unknown or missing:
        raise FetchError(f"{where}: " + "; ".join(p for p in (
            f"unknown key(s) {sorted(unknown)}" if unknown else "", f"missing key(s) {sorted(missing)}" if missing else "") if p))
    where = f"{where} ({raw['name']})"
    if not isinstance(raw["license"], str) or not license_ok(raw["license"]):
        raise FetchError(f"{where}: license {raw['license']!r} is not one voxwatch fetches ({', '.join(LICENSES)})")
    if raw["layout"] not in LAYOUTS:
        raise FetchError(f"{where}: layout {raw['layout']!r}: expected one of {', '.join(LAYOUTS)}")
    if raw["speech"] not in ("recorded", "synthesized"):
        raise FetchError(f"{where}: speech: expected recorded or synthesized")
    if raw["layout"] in PARQUET_LAYOUTS:
        return _parquet_entry(raw, where, folder)
    subset = raw["subset"]
    counted = isinstance(subset, dict) and len(subset) == 1 and next(iter(subset)) in ("first", "per_speaker")
    if not (counted and isinstance(next(iter(subset.values())), int) and next(iter(subset.values())) > 0
            or isinstance(subset, dict) and set(subset) == {"ids"} and isinstance(subset["ids"], list) and subset["ids"]):
        raise FetchError(f"{where}: subset: expected {{first = N}}, {{per_speaker = N}} or {{ids = [...]}}")
    bad = [t for t in raw.get("degraded", []) if t not in degrade.TRANSFORMS]
    if bad:
        raise FetchError(f"{where}: degraded: unknown transform(s) {bad}; known: {', '.join(degrade.TRANSFORMS)}")
    files_ = tuple(_file(f, f"{where} file {i}") for i, f in enumerate(raw.get("files", []), 1))
    if not files_ or len({f.name for f in files_}) != len(files_):
        raise FetchError(f"{where}: files: expected at least one, with unique names")
    return RemoteEntry(name=raw["name"], description=raw["description"], license=raw["license"], citation=raw["citation"],
                       homepage=raw["homepage"], language=raw["language"], speech=raw["speech"], layout=raw["layout"],
                       files=files_, subset=subset, sources=raw["sources"], layout_params=dict(raw.get("layout_params", {})),
                       degraded=tuple(raw.get("degraded", ())))


def _parquet_entry(raw: dict[str, Any], where: str, folder: Path) -> RemoteEntry:
    """A parquet layout's entry: its shards are the Hub listing's (each checked against the sha256 and
    size published there), so it names the listing and the split of each condition, not files."""
    params = raw.get("layout_params", {})
    if not isinstance(params, dict) or not _PARQUET_PARAMS <= set(params) <= _PARQUET_PARAMS | _PARQUET_OPTIONAL \
            or not isinstance(params["splits"], dict) \
            or not params["splits"] or not all(isinstance(v, str) and v for v in params["splits"].values()):
        raise FetchError(f"{where}: layout_params: expected listing, resolve, config, splits = {{CONDITION = SPLIT, ...}} "
                         f"and optionally coval_ids")
    params = dict(params)
    if "coval_ids" in params:  # named relative to the catalog file that names it
        if not isinstance(params["coval_ids"], str) or not _FILE_NAME.match(params["coval_ids"]):
            raise FetchError(f"{where}: layout_params.coval_ids: a file name beside the catalog")
        params["coval_ids"] = str(folder / params["coval_ids"])
    if raw["layout"] == "wildasr-family" and "clean" not in params["splits"] or \
            raw["layout"] == "wildasr-accent" and len(params["splits"]) != 1:
        raise FetchError(f"{where}: splits: the family needs a clean split; the accent set one split")
    bad = [c for c in params["splits"] if not _CONDITION.match(c)]
    if bad or raw.get("degraded") or raw.get("files") or raw["subset"] != {"rule": "coval"}:
        raise FetchError(f"{where}: a {raw['layout']} entry has conditions of 1-32 lower-case letters or digits, no degraded "
                         f"list and no files (the listing names them), and subset = {{ rule = \"coval\" }}")
    for key in ("listing", "resolve"):
        if not str(params[key]).startswith(("https://", "http://")):
            raise FetchError(f"{where}: layout_params.{key} must be http(s)")
    return RemoteEntry(name=raw["name"], description=raw["description"], license=raw["license"], citation=raw["citation"],
                       homepage=raw["homepage"], language=raw["language"], speech=raw["speech"], layout=raw["layout"],
                       files=(), subset=raw["subset"], sources=raw["sources"], layout_params=dict(params))


def _file(raw: Any, where: str) -> RemoteFile:
    if not isinstance(raw, dict) or set(raw) - _FILE_KEYS or not {"name", "url", "sha256"} <= set(raw):
        raise FetchError(f"{where}: expected name, url, sha256 and optionally md5, size, members, max_member_bytes, "
                         "max_unpacked_bytes")
    if not _FILE_NAME.match(raw["name"]):
        raise FetchError(f"{where}: name {raw['name']!r}: letters, digits, '.', '_' or '-'")
    if not _SHA256.match(raw["sha256"]) or not _MD5.match(raw.get("md5", "")):
        raise FetchError(f"{where} ({raw['name']}): sha256 is 64 lower-case hex digits (or \"\" when unknown), md5 32")
    if not str(raw["url"]).startswith(("https://", "http://")):
        raise FetchError(f"{where} ({raw['name']}): url must be http(s)")
    members = {m.get("path"): m.get("sha256") for m in raw.get("members", []) if isinstance(m, dict)}
    if len(members) != len(raw.get("members", [])) or not all(
            isinstance(p, str) and isinstance(h, str) and h and _SHA256.match(h) for p, h in members.items()):
        raise FetchError(f"{where} ({raw['name']}): members: each a distinct {{path, sha256}}")
    counts = {k: raw[k] for k in ("size", "max_member_bytes", "max_unpacked_bytes") if k in raw}
    bad = [k for k, v in counts.items() if isinstance(v, bool) or not isinstance(v, int) or v <= 0]
    if bad:
        raise FetchError(f"{where} ({raw['name']}): {', '.join(bad)}: a positive number of bytes")
    return RemoteFile(raw["name"], raw["url"], raw["sha256"], raw.get("md5", ""), raw.get("size"), members,
                      raw.get("max_member_bytes", MAX_MEMBER_BYTES), raw.get("max_unpacked_bytes", MAX_UNPACKED_BYTES))


def load(user_file: Path | None) -> dict[str, RemoteEntry]:
    """The packaged entries, replaced by the user's of the same name, with the user's pins applied."""
    entries: dict[str, RemoteEntry] = {}
    pins: dict[tuple[str, str], str] = {}
    sources = [packaged_catalog()] + ([user_file] if user_file is not None and user_file.is_file() else [])
    for path in sources:
        data = _read(path)
        for i, raw in enumerate(data.get("dataset", []), 1):
            entry = _entry(raw, f"{path}: dataset {i}", path.parent)
            entries[entry.name] = entry
        for i, pin in enumerate(data.get("pin", []), 1):
            if not isinstance(pin, dict) or not {"dataset", "file", "sha256"} <= set(pin) or not _SHA256.match(pin["sha256"]):
                raise FetchError(f"{path}: pin {i}: expected dataset, file and sha256")
            pins[(pin["dataset"], pin["file"])] = pin["sha256"]
    return {name: _pinned(entry, pins) for name, entry in entries.items()}


def _pinned(entry: RemoteEntry, pins: dict[tuple[str, str], str]) -> RemoteEntry:
    used = [f.name for f in entry.files if not f.sha256 and (entry.name, f.name) in pins]
    if not used:
        return entry
    new = tuple(replace(f, sha256=pins[(entry.name, f.name)]) if f.name in used else f for f in entry.files)
    return replace(entry, files=new, pinned_by_user=tuple(used))


def append_pin(user_file: Path, dataset: str, file: RemoteFile, sha256: str) -> None:
    """A [[pin]] record at the end of the user's catalog file (made if missing); never rewrites it."""
    user_file.parent.mkdir(parents=True, exist_ok=True)
    new = not user_file.is_file()
    with user_file.open("a", encoding="utf-8") as f:
        if new:
            f.write("# Your fetch catalog: [[dataset]] entries of your own, and the [[pin]] records\n"
                    "# `voxwatch datasets fetch NAME --pin` appends (docs/DATASETS.md).\n")
        f.write(f"\n[[pin]]\ndataset = {json.dumps(dataset)}\nfile = {json.dumps(file.name)}\nsha256 = {json.dumps(sha256)}\n"
                f"url = {json.dumps(file.url)}\npinned = {date.today().isoformat()}\n"
                f'md5_checked = {"true" if file.md5 else "false"}\n')
