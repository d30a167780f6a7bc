"""One file from a URL onto disk, resumable and verified: what `voxwatch datasets fetch` downloads with.

The bytes stream into `<dest>.part`, hashed as they arrive; a dropped connection or a timeout is
retried with a Range request from where the part file ends (a server that ignores Range sends the
whole file again, and the part starts over). Only a file whose sha256 (and the source's published
md5, when the catalog gives one) matches is renamed to `dest`; a mismatch deletes the part file
and raises naming the file. A part file left by attempts that all failed is kept, so the next
fetch resumes it.

A hostile or broken server is bounded: reading stops at the first byte past the declared size (or
MAX_UNDECLARED_BYTES) and the part file is deleted; every attempt together has one deadline
(`Limits.deadline_s`, else `deadline_for(size)`), so a server dripping a byte a second is cut off;
redirects are capped. Every message goes through the one scrubber: a catalog URL may hold a password.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from voxwatch.foundation.integrity import file_sha256
from voxwatch.foundation.redaction import scrub

DEADLINE_FLOOR_S = 120.0  # every download may take this long, however small
MIN_RATE = 100_000  # bytes/s: a download slower than this on average past the floor is cut off
MAX_UNDECLARED_BYTES = 8 << 30  # a file the catalog gives no size for is refused past this
MAX_REDIRECTS = 10


class FetchError(ValueError):
    """A download or a fetched file that cannot be used; the message names the file, in one line."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 30.0  # connect, and each read: a server silent this long is a timeout
    attempts: int = 4  # tries per file (a dropped connection or a timeout each use one)
    backoff_s: float = 0.5  # wait before the next try, times the try's number
    deadline_s: float | None = None  # every attempt at one file together; None: deadline_for(its size)


def deadline_for(size: int | None) -> float:
    """The default overall deadline of one download: a floor, plus the declared size at MIN_RATE
    (a file of no declared size is allowed MAX_UNDECLARED_BYTES at that rate)."""
    return DEADLINE_FLOOR_S + (MAX_UNDECLARED_BYTES if size is None else size) / MIN_RATE


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
    client = client or httpx.Client(timeout=httpx.Timeout(limits.timeout_s), follow_redirects=True,
                                    max_redirects=MAX_REDIRECTS)
    try:
        sha, md5 = _fetch_part(client, wanted, part, limits)
        _verify(wanted, part, sha, md5)
    except FetchError as exc:  # the catalog's URL may carry a password: cut out of every message
        raise FetchError(scrub(str(exc), urls=[wanted.url])) from None
    finally:
        if own:
            client.close()
    part.replace(dest)
    return sha


@dataclass
class _Budget:
    """What one download may still take: bytes (the declared size) and time (the overall deadline)."""

    wanted: Wanted
    limits: Limits
    started: float

    @property
    def max_bytes(self) -> int:
        return MAX_UNDECLARED_BYTES if self.wanted.size is None else self.wanted.size

    @property
    def deadline_s(self) -> float:
        return self.limits.deadline_s if self.limits.deadline_s is not None else deadline_for(self.wanted.size)

    def left_s(self) -> float:
        return self.started + self.deadline_s - time.monotonic()

    def too_large(self, part: Path, at_least: int) -> FetchError:
        """Deletes the part file (not a prefix of the file the catalog describes) and says why."""
        part.unlink(missing_ok=True)
        declared = (f"the catalog's size of {self.wanted.size}" if self.wanted.size is not None
                    else f"{MAX_UNDECLARED_BYTES}, the most a file of no declared size may be")
        return FetchError(f"{self.wanted.name}: {self.wanted.url} sent more than {declared} bytes (at least "
                          f"{at_least}); stopped and deleted the part file, nothing was written")

    def out_of_time(self, have: int) -> FetchError:
        of = f" of {self.wanted.size}" if self.wanted.size is not None else ""
        return FetchError(f"{self.wanted.name}: {self.wanted.url}: not finished within the download deadline of "
                          f"{self.deadline_s:g} s ({have}{of} bytes); the part downloaded is kept, run the fetch "
                          f"again to resume (or raise [datasets] fetch_deadline_s)")


def _fetch_part(client: httpx.Client, wanted: Wanted, part: Path, limits: Limits) -> tuple[str, str]:
    budget = _Budget(wanted, limits, time.monotonic())
    for attempt in range(1, limits.attempts + 1):
        sha, md5, have = _hashers(part)
        if have > budget.max_bytes:  # left by an older voxwatch: not a prefix of the declared file
            part.unlink()
            sha, md5, have = _hashers(part)
        try:
            return _attempt(client, budget, part, (sha, md5, have))
        except httpx.TimeoutException:
            failure = f"no answer within {limits.timeout_s:g} s"
        except httpx.TooManyRedirects:
            raise FetchError(f"{wanted.name}: {wanted.url}: more than {MAX_REDIRECTS} redirects (a redirect loop?); "
                             f"nothing was written") from None
        except httpx.TransportError as exc:  # refused, reset, the body cut short, a redirect to another scheme
            failure = f"connection failed ({type(exc).__name__})"
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # a malformed URL or answer
            raise FetchError(f"{wanted.name}: {wanted.url}: not a usable URL or answer ({type(exc).__name__})") from None
        if budget.left_s() <= 0:
            raise budget.out_of_time(_hashers(part)[2])
        if attempt < limits.attempts:
            time.sleep(max(0.0, min(limits.backoff_s * attempt, budget.left_s())))
    raise FetchError(f"{wanted.name}: {wanted.url}: {failure} ({limits.attempts} attempt(s)); "
                     f"the part downloaded is kept, run the fetch again to resume")


def _attempt(client: httpx.Client, budget: _Budget, part: Path,
             sofar: tuple["hashlib._Hash", "hashlib._Hash", int]) -> tuple[str, str]:
    """One GET of what the part file lacks, appended to it as it arrives; within the budget's bytes and time."""
    sha, md5, have = sofar
    wanted, timeout_s = budget.wanted, max(min(budget.limits.timeout_s, budget.left_s()), 0.001)
    headers = {"Accept-Encoding": "identity", **({"Range": f"bytes={have}-"} if have else {})}
    with client.stream("GET", wanted.url, headers=headers, timeout=timeout_s) as r:
        if r.status_code == 416 and have:  # the part file is already whole (or longer than the file)
            return sha.hexdigest(), md5.hexdigest()
        if r.status_code == 404:
            raise FetchError(f"{wanted.name}: {wanted.url} answered 404 Not Found; the catalog entry's URL "
                             f"has moved (see docs/DATASETS.md for where it was taken from)")
        if r.status_code not in (200, 206):
            raise FetchError(f"{wanted.name}: {wanted.url} answered {r.status_code} {r.reason_phrase}")
        if r.status_code == 200:  # the server ignored Range; start over
            sha, md5, have = hashlib.sha256(), hashlib.md5(usedforsecurity=False), 0
        announced = r.headers.get("Content-Length", "")
        if announced.isdigit() and have + int(announced) > budget.max_bytes:
            raise budget.too_large(part, have + int(announced))
        with part.open("ab" if r.status_code == 206 else "wb") as f:
            for block in r.iter_raw():  # as they arrive: a cut keeps every byte that came
                if have + len(block) > budget.max_bytes:
                    f.close()
                    raise budget.too_large(part, have + len(block))
                f.write(block)
                sha.update(block)
                md5.update(block)
                have += len(block)
                if budget.left_s() <= 0:
                    raise budget.out_of_time(have)
    return sha.hexdigest(), md5.hexdigest()


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
