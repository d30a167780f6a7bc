"""A Hugging Face dataset published as parquet shards: which shards hold a split, their rows, their audio.

The Hub lists a dataset repository's files at `/api/datasets/<repo>?blobs=true` ("siblings": each
file's `rfilename`, `size` and, for a file kept in LFS, `lfs.sha256`): the source's own published
size and sha256 of every shard, which the download is checked against. A `datasets` push lays a
config's splits out as `data/<split>-NNNNN-of-MMMMM.parquet` (a non-default config under
`<config>/`), and an audio column is the `datasets` Audio struct `{bytes, path}`: the original
file's bytes and its name (voxwatch tells WAV from FLAC by the bytes). pyarrow reads them; it is imported when a shard is read, so the CLI
does not pay for it elsewhere.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

from voxwatch.datasets.download import FetchError

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
MAX_LISTING_BYTES = 32 << 20  # a repository listing is JSON of its file names: far less than this


@dataclass(frozen=True)
class Shard:
    rel: str  # its path in the repository, e.g. data/<split>-00000-of-00001.parquet
    sha256: str  # the listing's lfs sha256
    size: int

    @property
    def name(self) -> str:
        """Its name in the download cache and in errors: the path with '/' as '__', as Coval's cache names it."""
        return self.rel.replace("/", "__")

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem


@dataclass(frozen=True)
class Row:
    """One row of a split, as selection reads it (the audio is read later, for the chosen rows only)."""

    shard: Shard
    index: int  # its row within the shard
    transcript: str  # stripped
    duration: float  # the source's duration column; 0.0 when missing or not a number
    audio_hash_id: str

    @property
    def source_name(self) -> str:
        """`<shard stem>-<row>`: the name Coval's build gives the row's audio."""
        return f"{self.shard.stem}-{self.index}"


def read_listing(path: Path, where: str) -> list[dict[str, Any]]:
    """The siblings of a repository listing file."""
    if path.stat().st_size > MAX_LISTING_BYTES:
        raise FetchError(f"{where}: the repository listing is over {MAX_LISTING_BYTES} bytes; not a listing")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise FetchError(f"{where}: the repository listing is not JSON") from None
    siblings = data.get("siblings") if isinstance(data, dict) else None
    if not isinstance(siblings, list):
        raise FetchError(f"{where}: the repository listing has no file list (siblings)")
    return [s for s in siblings if isinstance(s, dict) and isinstance(s.get("rfilename"), str)]


def split_shards(siblings: list[dict[str, Any]], config: str, split: str, where: str) -> list[Shard]:
    """The split's parquet shards in the config's folder, sorted by path, each with its published
    sha256 and size (a shard the listing gives neither for is refused: nothing would vouch for it)."""
    parquet = sorted((s for s in siblings if s["rfilename"].endswith(".parquet")), key=lambda s: s["rfilename"])
    in_config = [s for s in parquet if s["rfilename"].startswith(f"{config}/") or f"/{config}/" in s["rfilename"]]
    if not in_config and config == "default":  # a single-config repository: data/
        in_config = [s for s in parquet if s["rfilename"].startswith("data/")]
    found = []
    for s in in_config:
        rel = s["rfilename"]
        if not PurePosixPath(rel).name.startswith(f"{split}-"):
            continue
        lfs = s.get("lfs") if isinstance(s.get("lfs"), dict) else {}
        sha, size = lfs.get("sha256", ""), lfs.get("size", s.get("size"))
        if not (isinstance(sha, str) and _SHA256.match(sha)) or not isinstance(size, int) or isinstance(size, bool):
            raise FetchError(f"{where}: {rel}: the repository listing gives no sha256 and size for it; refused")
        found.append(Shard(rel, sha, size))
    if not found:
        raise FetchError(f"{where}: the repository listing has no parquet shard of split {split} (config {config})")
    return found


def _pyarrow():
    import pyarrow.parquet as pq

    return pq


def _unreadable(shard: Shard, exc: Exception) -> FetchError:
    return FetchError(f"{shard.name}: not a readable parquet shard ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})")


def rows(shard: Shard, path: Path, text: str, duration: str, audio_hash: str) -> list[Row]:
    """The shard's rows, metadata columns only (cheap: the audio column is not read)."""
    pq = _pyarrow()
    try:
        table = pq.read_table(path, columns=[text, duration, audio_hash])
    except Exception as exc:  # pyarrow's ArrowInvalid, ArrowKeyError (a missing column), OSError
        raise _unreadable(shard, exc) from None
    out = []
    for i, r in enumerate(table.to_pylist()):
        try:
            seconds = float(r[duration])
        except (TypeError, ValueError):
            seconds = 0.0
        out.append(Row(shard, i, str(r[text] or "").strip(), seconds, str(r[audio_hash] or "")))
    return out


def audio(shard: Shard, path: Path, column: str, wanted: set[int]) -> Iterator[tuple[int, bytes, str]]:
    """(row, the audio file's bytes, its suffix) for each wanted row, read a batch at a time."""
    pq = _pyarrow()
    at = 0
    try:
        for batch in pq.ParquetFile(path).iter_batches(columns=[column], batch_size=64):
            cells = batch.column(0).to_pylist()
            for i, cell in enumerate(cells, at):
                if i in wanted:
                    yield i, *_audio_cell(shard, i, cell)
            at += len(cells)
    except FetchError:
        raise
    except Exception as exc:
        raise _unreadable(shard, exc) from None


def _audio_cell(shard: Shard, row: int, cell: Any) -> tuple[bytes, str]:
    """The audio file's bytes and its suffix, told by its first bytes (the struct's `path` may be absent,
    or name a file of another type: Coval's build names every one .wav)."""
    data = cell.get("bytes") if isinstance(cell, dict) else cell
    if not isinstance(data, bytes) or not data:
        raise FetchError(f"{shard.name}: row {row} holds no audio bytes")
    suffix = next((s for magic, s in _MAGIC if data.startswith(magic)), None)
    if suffix is None:
        raise FetchError(f"{shard.name}: row {row}: the audio is neither WAV nor FLAC (it starts {data[:4]!r}); "
                         f"voxwatch imports WAV or FLAC")
    return data, suffix


_MAGIC = ((b"RIFF", ".wav"), (b"RF64", ".wav"), (b"fLaC", ".flac"))
