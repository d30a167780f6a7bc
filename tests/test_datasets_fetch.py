"""`voxwatch datasets fetch` against a real loopback HTTP server serving a miniature LibriSpeech.

The server speaks HTTP/1.1 with Range, and can misbehave on purpose per path: drop the connection
mid-body the first time, answer slower than the fetch timeout, or not have the file (404).
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path
from typing import Iterator

import jiwer
import numpy as np
import pytest
import soundfile as sf
from whisper_normalizer.english import EnglishTextNormalizer

from support.loopback_http import Loopback, QuietHandler, sha256_of
from support.processes import run_cli
from voxwatch.metrics.published import rounded
from voxwatch.foundation.audio import read_pcm16
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.download import FetchError, Limits, Wanted, download

pytestmark = pytest.mark.e2e

PS = "pocketsphinx/en-us@5.1.1"
ROOT = "LibriSpeech/test-clean"
CLIPS = ("u001", "u003", "u008", "u010", "u012", "u015")


class Server(Loopback):
    """A loopback file server: files by path, a behaviour per path, and every request's Range logged."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.behaviour: dict[str, str] = {}  # "drop-once", "slow"
        self.requests: list[tuple[str, str | None]] = []
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                server.requests.append((self.path, self.headers.get("Range")))
                body = server.files.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = 0
                match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
                if match:
                    start = int(match.group(1))
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                how = server.behaviour.get(self.path)
                if how == "slow":
                    server.stop.wait(10)
                if how == "drop-once":
                    server.behaviour.pop(self.path)
                    self.wfile.write(body[start:start + (len(body) - start) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body[start:])

        super().__init__(Handler)


@pytest.fixture
def server() -> Iterator[Server]:
    with Server() as s:
        yield s


def _mini_librispeech() -> tuple[bytes, dict[str, str], dict[str, bytes]]:
    """A LibriSpeech-layout tar.gz of six starter clips as FLAC under two speakers, its
    transcripts by id, and each FLAC's bytes by member path."""
    manifest = [json.loads(line) for line in (bundled_root() / "stt-starter-clean" / "manifest.jsonl").read_text().splitlines()]
    by_id = {m["id"]: m for m in manifest}
    texts, flacs, lines = {}, {}, {}
    for i, cid in enumerate(CLIPS):
        speaker, chapter = ("19", "198") if i % 2 == 0 else ("26", "495")
        uid = f"{speaker}-{chapter}-{i:04d}"
        pcm, rate = read_pcm16(bundled_root() / "stt-starter-clean" / by_id[cid]["path"])
        buf = io.BytesIO()
        sf.write(buf, pcm, rate, format="FLAC", subtype="PCM_16")
        flacs[f"{ROOT}/{speaker}/{chapter}/{uid}.flac"] = buf.getvalue()
        texts[uid] = re.sub(r"[^A-Z0-9' ]", "", by_id[cid]["text"].upper())
        lines.setdefault(f"{ROOT}/{speaker}/{chapter}/{speaker}-{chapter}.trans.txt", []).append(f"{uid} {texts[uid]}")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        members = {**flacs, **{p: ("\n".join(ls) + "\n").encode() for p, ls in lines.items()}}
        for path, data in sorted(members.items()):
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue(), texts, flacs


@pytest.fixture(scope="module")
def mini() -> tuple[bytes, dict[str, str], dict[str, bytes]]:
    return _mini_librispeech()


def _entry(name: str, url: str, sha256: str, member: tuple[str, str] | None = None, degraded: str = '"phonecodec"') -> str:
    members = f'\nmembers = [{{ path = "{member[0]}", sha256 = "{member[1]}" }}]' if member else ""
    return f'''
[[dataset]]
name = "{name}"
description = "a miniature LibriSpeech test-clean served from loopback"
license = "CC-BY-4.0"
citation = "the test's own"
homepage = "http://127.0.0.1/"
language = "en"
speech = "recorded"
layout = "librispeech"
layout_params = {{ root = "{ROOT}/" }}
subset = {{ first = 5 }}
degraded = [{degraded}]
sources = "built by tests/test_datasets_fetch.py"

[[dataset.files]]
name = "mini.tar.gz"
url = "{url}"
sha256 = "{sha256}"{members}
'''


def _env(tmp_path: Path, entries: str, timeout_s: float = 20, attempts: int = 3) -> dict[str, str]:
    (tmp_path / "fetch.toml").write_text(entries)
    return {"VOXWATCH_DATASETS_DIR": str(tmp_path / "catalog"), "VOXWATCH_DATASETS_FETCH_CATALOG": str(tmp_path / "fetch.toml"),
            "VOXWATCH_DATASETS_FETCH_TIMEOUT_S": str(timeout_s), "VOXWATCH_DATASETS_FETCH_ATTEMPTS": str(attempts)}


def _left_behind(catalog: Path) -> list[str]:
    """Every file or folder under the catalog dir (the fetch must leave none on a failure)."""
    return sorted(str(p.relative_to(catalog)) for p in catalog.rglob("*")) if catalog.exists() else []


def test_download_resumes_a_dropped_connection_with_range_and_the_bytes_are_equal(server: Server, tmp_path: Path):
    data = bytes(range(256)) * 4000
    server.files["/blob.bin"] = data
    server.behaviour["/blob.bin"] = "drop-once"
    dest = tmp_path / "blob.bin"
    sha = download(Wanted(server.url("/blob.bin"), "blob.bin", sha256_of(data), size=len(data)), dest,
                   Limits(timeout_s=10, attempts=3, backoff_s=0.05))
    assert sha == sha256_of(data) and dest.read_bytes() == data and not (tmp_path / "blob.bin.part").exists()
    first, second = [r for _, r in server.requests]
    assert first is None and 0 < int(second.removeprefix("bytes=").rstrip("-")) <= len(data) // 2  # resumed, not restarted


def test_a_fetched_set_lands_in_the_catalog_with_its_family_and_runs(server: Server, tmp_path: Path, store_url: str, mini):
    archive, texts, flacs = mini
    server.files["/mini.tar.gz"] = archive
    server.behaviour["/mini.tar.gz"] = "drop-once"
    first_flac = sorted(flacs)[0]
    env = _env(tmp_path, _entry("mini-libri", server.url("/mini.tar.gz"), sha256_of(archive), (first_flac, sha256_of(flacs[first_flac]))))
    listing = run_cli("datasets", "fetch", env=env).stdout
    assert any(line.split()[:3] == ["mini-libri", "CC-BY-4.0", "recorded"] for line in listing.splitlines())
    assert any(line.startswith("librispeech-test-clean-40") for line in listing.splitlines())  # packaged ones too

    out = run_cli("datasets", "fetch", "mini-libri", env=env).stdout
    assert "fetched 5 clips of mini-libri (CC-BY-4.0" in out and "mini-libri-phonecodec" in out
    assert [p for p, _ in server.requests] == ["/mini.tar.gz"] * 2 and server.requests[1][1].startswith("bytes=")
    assert 0 < int(server.requests[1][1].removeprefix("bytes=").rstrip("-")) <= len(archive) // 2  # resumed after the drop

    catalog = Catalog([tmp_path / "catalog"])
    assert catalog.names() == ["mini-libri", "mini-libri-phonecodec"]
    clean, degraded = catalog.load("mini-libri"), catalog.load("mini-libri-phonecodec")  # every sha256 checked
    assert [c.id for c in clean.clips] == sorted(texts)[:5] and all(c.text == texts[c.id] for c in clean.clips)
    assert all(0.2 < c.speech_start < c.speech_end <= c.duration_s for c in clean.clips)
    assert {c.voice for c in clean.clips} == {"19", "26"}
    assert (clean.info.family, clean.info.condition, degraded.info.family, degraded.info.condition) == \
        ("mini-libri", "clean", "mini-libri", "phonecodec")
    assert clean.info.extra["license"] == "CC-BY-4.0" and clean.info.extra["files"][0]["sha256"] == sha256_of(archive)
    assert [c.source_clip for c in degraded.clips] == [f"mini-libri/{c.id}" for c in clean.clips]
    assert not (tmp_path / "catalog" / ".downloads").exists() and not list((tmp_path / "catalog").glob(".mini-libri-*"))

    again = run_cli("datasets", "fetch", "mini-libri", env=env, check=False)
    assert again.returncode == 2 and "already in the catalog" in again.stderr

    run_cli("run", "--datasets", "mini-libri", "--models", PS, "--sample-size", "5", "--store", store_url,
            "--no-progress", env=env)
    rows = [json.loads(line) for line in run_cli("export", "--format", "jsonl", "--store", store_url, env=env).stdout.splitlines()]
    assert len(rows) == 5 and {r["status"] for r in rows} == {"ok"} and {r["dataset"] for r in rows} == {"mini-libri"}
    normalize = EnglishTextNormalizer()
    errors = words = 0
    for r in rows:  # independently of voxwatch.metrics: the normalizer and jiwer on the exported texts
        ref, hyp = " ".join(normalize(r["reference"]).split()), " ".join(normalize(r["hypothesis"] or "").split())
        n = len(ref.split())
        errors += n if not hyp else (lambda o: o.substitutions + o.deletions + o.insertions)(jiwer.process_words(ref, hyp))
        words += n
    board = json.loads(run_cli("leaderboard", "--format", "json", "--store", store_url, env=env).stdout)["rows"]
    mine = [b for b in board if b["model_id"] == PS and b["dataset"] == "mini-libri"]
    assert mine and {b["wer_words"] for b in mine} == {words} and {b["wer_clips"] for b in mine} == {5}
    assert all(b["pooled_wer"] == rounded(errors / words, "fraction") for b in mine)  # published precision


@pytest.mark.parametrize("broken", ["archive", "member"])
def test_a_checksum_mismatch_names_the_file_and_leaves_nothing(server: Server, tmp_path: Path, mini, broken: str):
    archive, _texts, flacs = mini
    server.files["/mini.tar.gz"] = archive
    member = sorted(flacs)[1]
    sha = sha256_of(archive + b"x") if broken == "archive" else sha256_of(archive)
    env = _env(tmp_path, _entry("mini-libri", server.url("/mini.tar.gz"), sha, (member, sha256_of(b"not it") if broken == "member" else sha256_of(flacs[member]))))
    proc = run_cli("datasets", "fetch", "mini-libri", env=env, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "checksum mismatch" in proc.stderr
    assert ("mini.tar.gz: checksum mismatch" in proc.stderr) if broken == "archive" else (f"member {member}" in proc.stderr)
    left = _left_behind(tmp_path / "catalog")
    # a verified download may stay cached for the next try; no dataset, staging folder or part file
    assert all(p.startswith(".downloads") and not p.endswith(".part") for p in left), left
    assert broken == "member" or left == []


def test_a_404_and_a_slow_server_are_one_clear_line(server: Server, tmp_path: Path, mini):
    archive, _texts, _flacs = mini
    env = _env(tmp_path, _entry("gone", server.url("/nowhere.tar.gz"), sha256_of(archive)))
    proc = run_cli("datasets", "fetch", "gone", env=env, check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "mini.tar.gz" in proc.stderr and "404 Not Found" in proc.stderr and "Traceback" not in proc.stderr
    assert _left_behind(tmp_path / "catalog") == []

    server.files["/slow.tar.gz"] = archive
    server.behaviour["/slow.tar.gz"] = "slow"
    env = _env(tmp_path, _entry("slow", server.url("/slow.tar.gz"), sha256_of(archive)), timeout_s=1, attempts=2)
    proc = run_cli("datasets", "fetch", "slow", env=env, check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "mini.tar.gz" in proc.stderr and "no answer within 1 s (2 attempt(s))" in proc.stderr
    assert [p for p, _ in server.requests].count("/slow.tar.gz") == 2
    assert not list((tmp_path / "catalog").glob("slow*"))


def test_an_unpinned_file_is_refused_until_pinned_and_the_pin_is_recorded(server: Server, tmp_path: Path, mini):
    archive, _texts, _flacs = mini
    server.files["/mini.tar.gz"] = archive
    env = _env(tmp_path, _entry("unpinned", server.url("/mini.tar.gz"), "", degraded=""))
    proc = run_cli("datasets", "fetch", "unpinned", env=env, check=False)
    assert proc.returncode == 2 and "no pinned checksum for mini.tar.gz" in proc.stderr
    assert "`voxwatch datasets fetch unpinned --pin` after verifying the source" in proc.stderr
    assert server.requests == [] and _left_behind(tmp_path / "catalog") == []

    out = run_cli("datasets", "fetch", "unpinned", "--pin", env=env).stdout
    assert f"pinned mini.tar.gz sha256 {sha256_of(archive)}" in out and "fetched 5 clips" in out
    assert f'sha256 = "{sha256_of(archive)}"' in (tmp_path / "fetch.toml").read_text()
    listing = run_cli("datasets", "fetch", env=env).stdout
    assert any(line.startswith("unpinned") and "(pinned)" in line for line in listing.splitlines())
    info = json.loads((tmp_path / "catalog" / "unpinned" / "dataset.json").read_text())
    assert info["extra"]["pinned_by_user"] == ["mini.tar.gz"] and info["extra"]["files"][0]["sha256"] == sha256_of(archive)


def test_the_packaged_catalog_is_complete_and_every_librispeech_file_is_pinned():
    from voxwatch.datasets import remote

    entries = remote.load(None)
    assert {"librispeech-test-clean-40", "librispeech-test-other-33", "fleurs-en-us-test-40"} <= set(entries)
    for e in entries.values():
        assert remote.license_ok(e.license) and e.citation and e.sources and e.homepage.startswith("https://")
        assert all(f.url.startswith("https://") for f in e.files) and (e.files or e.layout in remote.PARQUET_LAYOUTS)
    for name in ("librispeech-test-clean-40", "librispeech-test-other-33"):
        assert all(f.sha256 and f.md5 and f.size for f in entries[name].files)


def test_a_bad_fetch_catalog_entry_is_named(tmp_path: Path):
    from voxwatch.datasets import remote

    bad = tmp_path / "fetch.toml"
    bad.write_text(_entry("nc", "https://example.org/x.tar.gz", "").replace("CC-BY-4.0", "CC-BY-NC-4.0"))
    with pytest.raises(FetchError, match=r"fetch.toml: dataset 1 \(nc\): license 'CC-BY-NC-4.0'"):
        remote.load(bad)


def test_the_tsv_layout_and_the_per_speaker_subset():
    from voxwatch.datasets.layouts import choose, utterances

    tsv = "7\t20.wav\tHello, \"world\".\thello world\t_\t100\tMALE\n7\t10.wav\tAgain.\tagain\t_\t90\tFEMALE\n8\t20.wav\tdup\t\t\t\t\nshort\n"
    found = utterances("tsv", {"transcripts": "test.tsv", "audio_dir": "test", "speaker_column": 6}, {"test.tsv": tsv})
    assert [(u.id, u.text, u.audio, u.speaker) for u in found] == [
        ("10", "Again.", "test/10.wav", "FEMALE"), ("20", 'Hello, "world".', "test/20.wav", "MALE")]
    libri = {"a/1/2/1-2.trans.txt": "1-2-0001 B\n1-2-0000 A\n", "a/3/4/3-4.trans.txt": "3-4-0000 C\n"}
    found = utterances("librispeech", {}, libri)
    assert [u.id for u in choose(found, {"per_speaker": 1})] == ["1-2-0000", "3-4-0000"]
    assert [u.audio for u in choose(found, {"ids": ["3-4-0000"]})] == ["a/3/4/3-4-0000.flac"]
    with pytest.raises(FetchError, match="not in the fetched transcripts: 9-9-9"):
        choose(found, {"ids": ["9-9-9"]})
