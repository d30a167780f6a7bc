"""One file from a URL onto disk, resumable and verified: what `voxwatch datasets fetch` downloads with.

The bytes stream into `<dest>.part`, hashed as they arrive; a dropped connection or a timeout is
retried with a Range request from where the part file ends (a server that ignores Range sends the
whole file again, and the part starts over). Only a file whose sha256 (and the source's published
md5, when the catalog gives one) matches is renamed to `dest`; a mismatch deletes the part file
and raises naming the file. A part file left by attempts that all failed is kept, so the next
fetch resumes it.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from voxwatch.foundation.integrity import file_sha256


class FetchError(ValueError):
    """A download or a fetched file that cannot be used; the message names the file, in one line."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 30.0  # connect, and each read: a server silent this long is a timeout
    attempts: int = 4  # tries per file (a dropped connection or a timeout each use one)
    backoff_s: float = 0.5  # wait before the next try, times the try's number


@dataclass(frozen=True)
class Wanted:
    url: str
    name: str  # how errors call the file (its name in the catalog entry)
    sha256: str  # "" when not pinned: then the download is only hashed (voxwatch datasets fetch --pin)
    md5: str = ""  # the source's own published checksum, checked as well when given
    size: int | None = None


def _hashers(part: Path) -> tuple["hashlib._Hash", "hashlib._Hash", int]:
    """sha256 and md5 of what the part file already holds, and its length."""
    sha, md5, n = hashlib.sha256(), hashlib.md5(usedforsecurity=False), 0
    if part.is_file():
        with part.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                sha.update(block)
                md5.update(block)
                n += len(block)
    return sha, md5, n


def download(wanted: Wanted, dest: Path, limits: Limits = Limits(), client: httpx.Client | None = None) -> str:
    """dest holding the verified file; returns its sha256. A dest already there with the pinned
    sha256 is not downloaded again."""
    if dest.is_file() and wanted.sha256 and file_sha256(dest) == wanted.sha256:
        return wanted.sha256
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    own = client is None
    client = client or httpx.Client(timeout=httpx.Timeout(limits.timeout_s), follow_redirects=True)
    try:
        sha, md5 = _fetch_part(client, wanted, part, limits)
    finally:
        if own:
            client.close()
    _verify(wanted, part, sha, md5)
    part.replace(dest)
    return sha


def _fetch_part(client: httpx.Client, wanted: Wanted, part: Path, limits: Limits) -> tuple[str, str]:
    for attempt in range(1, limits.attempts + 1):
        sha, md5, have = _hashers(part)
        headers = {"Accept-Encoding": "identity", **({"Range": f"bytes={have}-"} if have else {})}
        try:
            with client.stream("GET", wanted.url, headers=headers) as r:
                if r.status_code == 416 and have:  # the part file is already whole (or longer than the file)
                    return sha.hexdigest(), md5.hexdigest()
                if r.status_code == 404:
                    raise FetchError(f"{wanted.name}: {wanted.url} answered 404 Not Found; the catalog entry's URL "
                                     f"has moved (see docs/DATASETS.md for where it was taken from)")
                if r.status_code not in (200, 206):
                    raise FetchError(f"{wanted.name}: {wanted.url} answered {r.status_code} {r.reason_phrase}")
                mode = "ab" if r.status_code == 206 else "wb"  # 200: the server ignored Range; start over
                if mode == "wb":
                    sha, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
                with part.open(mode) as f:
                    for block in r.iter_raw():  # as they arrive: a cut keeps every byte that came
                        f.write(block)
                        sha.update(block)
                        md5.update(block)
            return sha.hexdigest(), md5.hexdigest()
        except httpx.TimeoutException:
            failure = f"no answer within {limits.timeout_s:g} s"
        except httpx.TransportError as exc:  # refused, reset, or the body cut short
            failure = f"connection failed ({type(exc).__name__})"
        if attempt < limits.attempts:
            time.sleep(limits.backoff_s * attempt)
    raise FetchError(f"{wanted.name}: {wanted.url}: {failure} ({limits.attempts} attempt(s)); "
                     f"the part downloaded is kept, run the fetch again to resume")


def _verify(wanted: Wanted, part: Path, sha: str, md5: str) -> None:
    problem = ""
    if wanted.size is not None and part.stat().st_size != wanted.size:
        problem = f"{part.stat().st_size} bytes, the catalog says {wanted.size}"
    elif wanted.sha256 and sha != wanted.sha256:
        problem = f"sha256 {sha} is not the pinned {wanted.sha256}"
    elif wanted.md5 and md5 != wanted.md5:
        problem = f"md5 {md5} is not the source's published {wanted.md5}"
    if problem:
        part.unlink(missing_ok=True)
        raise FetchError(f"{wanted.name}: checksum mismatch ({problem}); deleted, nothing was written")
