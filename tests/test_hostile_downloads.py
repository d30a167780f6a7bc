"""`voxwatch datasets fetch` against a malicious HTTP server on loopback: each case a one-line error
(exit 2), disk bounded (the CLI runs under RLIMIT_FSIZE: a write past the bound would fail there
with EFBIG rather than fill the disk), nothing half-written in the catalog or its staging, and the
password of the catalog URL never printed.

The server misbehaves per path: an endless body (with no length, or a lying one), a body dripped a
byte at a time, a redirect loop; it serves archive bombs the tests build.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Iterator

import pytest

from support.loopback_http import Loopback, sha256_of
from support.processes import run_cli
from voxwatch.datasets import remote
from voxwatch.datasets.download import FetchError, Limits, Wanted, download

PASSWORD = "s3cretPW"
MAX_FILE_BYTES = 8 << 20  # no file the CLI writes may pass this (RLIMIT_FSIZE)
ROOT = "LibriSpeech/test-clean/"
DEFAULT_MEMBER_CAP = 64 << 20  # remote.MAX_MEMBER_BYTES


class HostileServer(Loopback):
    """Files by path, and per-path misbehaviour: /endless, /endless-announced, /drip, /loop."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path
                if path == "/loop":
                    self.send_response(302)
                    self.send_header("Location", "/loop")
                    self.end_headers()
                elif path in ("/endless", "/endless-announced"):
                    self.send_response(200)
                    if path == "/endless-announced":
                        self.send_header("Content-Length", str(10 ** 12))
                    self.end_headers()
                    self._stream(b"\0" * (64 << 10), 0.0, 256 << 20)  # to the client's end, or 256 MB
                elif path == "/drip":
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self._stream(b"x", 0.1, 600)  # 60 s at least: far past the test's deadline
                elif path in server.files:
                    body = server.files[path]
                    start = int((re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "") or [0, 0])[1])
                    if start and start >= len(body):
                        self.send_response(416)
                        self.end_headers()
                        return
                    self.send_response(206 if start else 200)
                    self.send_header("Content-Length", str(len(body) - start))
                    self.end_headers()
                    self.wfile.write(body[start:])
                else:
                    self.send_response(404)
                    self.end_headers()

            def _stream(self, block: bytes, pause_s: float, total: int) -> None:
                try:
                    for _ in range(total // len(block)):
                        if server.stop.wait(pause_s):
                            return
                        self.wfile.write(block)
                        self.wfile.flush()
                except OSError:  # the client went away: what the test wants
                    pass

        super().__init__(Handler)

    def url(self, path: str, auth: str = f"reader:{PASSWORD}") -> str:
        return super().url(path, auth)


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with HostileServer() as s:
        yield s


def _entry(name: str, url: str, sha256: str, size: int | None = None, extra: str = "") -> str:
    return f'''
[[dataset]]
name = "{name}"
description = "a hostile case"
license = "CC-BY-4.0"
citation = "tests/test_hostile_downloads.py"
homepage = "http://127.0.0.1/"
language = "en"
speech = "recorded"
layout = "librispeech"
layout_params = {{ root = "{ROOT}" }}
subset = {{ first = 2 }}
sources = "built by tests/test_hostile_downloads.py"

[[dataset.files]]
name = "{name}.tar.gz"
url = "{url}"
sha256 = "{sha256}"{f"{chr(10)}size = {size}" if size is not None else ""}{extra}
'''


def _fetch(tmp_path: Path, entry: str, name: str, **settings: str):
    (tmp_path / "fetch.toml").write_text(entry)
    env = {"VOXWATCH_DATASETS_DIR": str(tmp_path / "catalog"), "VOXWATCH_DATASETS_FETCH_CATALOG": str(tmp_path / "fetch.toml"),
           "VOXWATCH_DATASETS_FETCH_TIMEOUT_S": "5", "VOXWATCH_DATASETS_FETCH_ATTEMPTS": "2", **settings}
    return run_cli("datasets", "fetch", name, env=env, check=False, max_file_bytes=MAX_FILE_BYTES)


def _one_line_error(proc, *expected: str) -> str:
    err = proc.stderr.strip()
    assert proc.returncode == 2 and "Traceback" not in err and len(err.splitlines()) == 1, proc.stderr[-2000:]
    assert PASSWORD not in err and "\x1b" not in err
    assert all(e in err for e in expected), err
    return err


def _left_behind(catalog: Path) -> list[str]:
    return sorted(str(p.relative_to(catalog)) for p in catalog.rglob("*")) if catalog.exists() else []


@pytest.mark.parametrize("path", ["/endless", "/endless-announced"])
def test_an_endless_body_stops_at_the_declared_size_and_its_part_file_is_deleted(server, tmp_path, path):
    proc = _fetch(tmp_path, _entry("endless", server.url(path), sha256_of(b"1000 bytes"), size=1000), "endless")
    _one_line_error(proc, "endless.tar.gz", "more than the catalog's size of 1000 bytes", "reader:***@127.0.0.1")
    assert _left_behind(tmp_path / "catalog") == []  # no part file: not a prefix of the declared file


def test_a_dripping_server_is_cut_off_at_the_overall_deadline_and_the_prefix_kept(server, tmp_path):
    started = time.monotonic()
    proc = _fetch(tmp_path, _entry("drip", server.url("/drip"), sha256_of(b"x" * 1000), size=1000), "drip",
                  VOXWATCH_DATASETS_FETCH_DEADLINE_S="1.5")
    _one_line_error(proc, "drip.tar.gz", "not finished within the download deadline of 1.5 s", "of 1000 bytes")
    assert time.monotonic() - started < 40  # the drip alone lasts 60 s; the timeout (5 s) never fires
    part = tmp_path / "catalog" / ".downloads" / "drip" / "drip.tar.gz.part"
    assert 0 < part.stat().st_size < 1000 and set(part.read_bytes()) == {ord("x")}  # a valid prefix, to resume


def test_a_redirect_loop_is_one_line(server, tmp_path):
    proc = _fetch(tmp_path, _entry("loop", server.url("/loop"), sha256_of(b"")), "loop")
    _one_line_error(proc, "loop.tar.gz", "more than 10 redirects")
    assert _left_behind(tmp_path / "catalog") == []


def test_the_password_in_a_catalog_url_is_scrubbed_from_the_error(server, tmp_path):
    proc = _fetch(tmp_path, _entry("gone", server.url("/gone.tar.gz"), sha256_of(b"")), "gone")
    _one_line_error(proc, "gone.tar.gz", "http://reader:***@127.0.0.1", "404 Not Found")


@pytest.mark.parametrize("url", [f"http://reader:{PASSWORD}@127.0.0.1:port/x", f"http://reader:{PASSWORD}@[::1/x",
                                 f"http://reader:{PASSWORD}@127.0.0.1:1/\x00x", f"http://reader:{PASSWORD}@/x"])
def test_a_malformed_catalog_url_is_one_line_without_its_password(tmp_path, url):
    with pytest.raises(FetchError) as refused:
        download(Wanted(url, "f.bin", "", size=10), tmp_path / "f.bin", Limits(timeout_s=2, attempts=1))
    assert str(refused.value).startswith("f.bin: http://") and PASSWORD not in str(refused.value)
    assert "\n" not in str(refused.value) and not (tmp_path / "f.bin.part").exists()


def _tar_gz(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=1) as tar:
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _bomb(flacs: dict[str, int]) -> bytes:
    """A LibriSpeech-layout archive whose FLACs are runs of zeros of the given sizes (they compress to nothing)."""
    ids = sorted(flacs)
    trans = "".join(f"{i} HELLO\n" for i in ids).encode()
    return _tar_gz({f"{ROOT}1/2/1-2.trans.txt": trans, **{f"{ROOT}1/2/{i}.flac": bytes(n) for i, n in flacs.items()}})


def test_an_archive_bomb_is_refused_at_the_default_member_cap_with_nothing_in_staging(server, tmp_path):
    archive = _bomb({"1-2-0000": DEFAULT_MEMBER_CAP + 1})  # 64 MiB of zeros in ~65 kB
    assert len(archive) < 1 << 20
    server.files["/bomb.tar.gz"] = archive
    proc = _fetch(tmp_path, _entry("bomb", server.url("/bomb.tar.gz"), sha256_of(archive), size=len(archive)), "bomb")
    _one_line_error(proc, "bomb.tar.gz: member LibriSpeech/test-clean/1/2/1-2-0000.flac unpacks to more than "
                          f"max_member_bytes ({DEFAULT_MEMBER_CAP})")
    assert _left_behind(tmp_path / "catalog") == [".downloads", ".downloads/bomb", ".downloads/bomb/bomb.tar.gz"]


def test_the_members_taken_out_of_one_archive_are_capped_in_all_as_the_entry_declares(server, tmp_path):
    archive = _bomb({"1-2-0000": 60_000, "1-2-0001": 60_000})
    server.files["/two.tar.gz"] = archive
    caps = "\nmax_member_bytes = 100000\nmax_unpacked_bytes = 100000"
    proc = _fetch(tmp_path, _entry("two", server.url("/two.tar.gz"), sha256_of(archive), extra=caps), "two")
    _one_line_error(proc, "two.tar.gz: the members taken out unpack to more than max_unpacked_bytes (100000) at "
                          "LibriSpeech/test-clean/1/2/1-2-0001.flac")
    assert not [p for p in _left_behind(tmp_path / "catalog") if not p.startswith(".downloads")]


def test_a_member_longer_than_its_header_says_is_cut_at_the_cap_as_it_is_written():
    from voxwatch.datasets.fetch import _Unpacked

    assert remote.MAX_MEMBER_BYTES == DEFAULT_MEMBER_CAP
    member = tarfile.TarInfo("a.flac")
    member.size = 10  # the header's claim; the stream holds far more
    f = remote.RemoteFile("a.tar.gz", "http://127.0.0.1/a.tar.gz", "", max_member_bytes=100_000)
    written = io.BytesIO()
    with pytest.raises(FetchError, match=r"member a.flac unpacks to more than max_member_bytes \(100000\)"):
        _Unpacked(f).copy(member, io.BytesIO(bytes(5_000_000)), written)
    assert len(written.getvalue()) <= 100_000


def test_a_part_file_longer_than_the_declared_size_is_not_resumed(server, tmp_path):
    body = bytes(range(250)) * 4
    server.files["/f.bin"] = body
    dest = tmp_path / "f.bin"
    (tmp_path / "f.bin.part").write_bytes(body + b"more than the file")  # not a prefix of a 1000-byte file
    sha = download(Wanted(server.url("/f.bin", auth=""), "f.bin", sha256_of(body), size=len(body)), dest,
                   Limits(timeout_s=5, attempts=1))
    assert sha == sha256_of(body) and dest.read_bytes() == body and not (tmp_path / "f.bin.part").exists()


def test_the_default_deadline_grows_with_the_declared_size():
    from voxwatch.datasets.download import DEADLINE_FLOOR_S, MIN_RATE, deadline_for

    assert deadline_for(0) == DEADLINE_FLOOR_S
    assert deadline_for(346_663_984) == pytest.approx(DEADLINE_FLOOR_S + 346_663_984 / MIN_RATE)
    assert deadline_for(None) > deadline_for(1 << 30)


def test_a_password_in_a_catalog_url_is_not_recorded_in_the_datasets_provenance(tmp_path):
    (tmp_path / "fetch.toml").write_text(_entry("cred", f"https://reader:{PASSWORD}@data.example/cred.tar.gz", ""))
    record = remote.load(tmp_path / "fetch.toml")["cred"].record({"cred.tar.gz": "0" * 64})
    assert record["files"][0]["url"] == "https://reader:***@data.example/cred.tar.gz"
    assert PASSWORD not in json.dumps(record)
