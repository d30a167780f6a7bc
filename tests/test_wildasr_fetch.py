"""Coval's WildASR sets from the packaged fetch catalog, served by a loopback server in the source's own
layout: the Hub's listing (`/api/datasets/bosonai/WildASR?blobs=true`, each file's lfs sha256 and
size), parquet shards at `/datasets/bosonai/WildASR/resolve/main/data/<split>-NNNNN-of-MMMMM.parquet`
with the columns audio (the `datasets` Audio struct {bytes, path}), transcript, duration and
audio_hash_id. The shards are small and made here; every row's audio is a real WAV of speech.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import soundfile as sf

from support.loopback_http import FileServer
from support.processes import cli_in_process
from voxwatch.boards.use_cases import use_case_of
from voxwatch.datasets import remote
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.download import FetchError, Limits
from voxwatch.datasets.fetch import fetch

REPO = "/datasets/bosonai/WildASR/resolve/main/"
LISTING = "/api/datasets/bosonai/WildASR?blobs=true"
SPLIT = "environment_degradation__en__fleurs_{}_en"
A, Z, M, B = "the cat sat on the mat", "zebras run across the plain", "my order number is four five", "big boats float in harbors"
AMBIGUOUS, NOISY, NO_REVERB = "an ambiguous clean sentence here", "noise gap too long for band", "reverb missing for this one"
WAVS = sorted((bundled_root() / "stt-starter-clean" / "clips").glob("*.wav"))


def _silence() -> bytes:
    out = io.BytesIO()
    sf.write(out, np.zeros(48000, dtype=np.int16), 16000, format="WAV", subtype="PCM_16")
    return out.getvalue()


def _shard(rows: list[tuple[str, float, str]], own: dict[str, bytes] | None = None) -> bytes:
    """A parquet shard as `datasets` writes one: each row (transcript, duration, audio_hash_id) with a WAV
    of speech (or, for a hash in `own`, those bytes)."""
    audio = [{"bytes": (own or {}).get(h) or WAVS[i % len(WAVS)].read_bytes(), "path": f"{h[:8]}.wav"}
             for i, (_t, _d, h) in enumerate(rows)]
    table = pa.table({"audio": pa.array(audio, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                      "transcript": [t for t, _d, _h in rows], "duration": [d for _t, d, _h in rows],
                      "audio_hash_id": [h for _t, _d, h in rows]})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def _draws(variant: str, texts: list[str], n: int, seconds: dict[tuple[str, int], float] | None = None) -> list:
    return [(t, (seconds or {}).get((t, k), 5.0), f"{variant}-{t}-{k}") for t in texts for k in range(n)]


def _source() -> dict[str, bytes]:
    """Shard path -> bytes. Clean order (ordinals): A 0, 'two words' 1, Z 2, AMBIGUOUS 3, M 4, NOISY 5, NO_REVERB 6, B 7."""
    survivors = [A, Z, M, NOISY, NO_REVERB, B]
    far = _draws("far", survivors, 3, {(M, 1): 20.0})  # M's rotation point (4 % 3 = 1) runs long: the next draw
    far.insert(1, (A, 5.0, "far-" + A + "-1"))  # a duplicate row (the same hash): not a condition of its own
    return {
        f"data/{SPLIT.format('clean')}-00000-of-00002.parquet": _shard(
            [(A, 4.0, "clean-a"), ("two words", 4.0, "clean-2w"), (Z, 4.0, "clean-z"), (AMBIGUOUS, 4.0, "clean-amb1"),
             (A, 4.0, "clean-a")]),
        f"data/{SPLIT.format('clean')}-00001-of-00002.parquet": _shard(
            [(AMBIGUOUS, 4.0, "clean-amb2"), (M, 4.0, "clean-m"), (NOISY, 4.0, "clean-n"), (NO_REVERB, 4.0, "clean-r"),
             (B, 4.0, "clean-b")]),
        f"data/{SPLIT.format('clipping')}-00000-of-00001.parquet": _shard(_draws("clip", survivors, 1)),
        f"data/{SPLIT.format('far_field')}-00000-of-00001.parquet": _shard(far),
        f"data/{SPLIT.format('noise_gap')}-00000-of-00001.parquet": _shard(
            _draws("gap", survivors, 2, {(NOISY, 0): 16.0, (NOISY, 1): 1.5})),
        f"data/{SPLIT.format('phone_codec')}-00000-of-00001.parquet": _shard(_draws("phone", survivors, 2)),
        f"data/{SPLIT.format('reverberation')}-00000-of-00001.parquet": _shard(_draws("rev", [A, Z, M, NOISY, B], 1),
                                                                       {"rev-" + A + "-0": _silence()}),
        "data/demographic_shift__en__demographic_accent_en-00000-of-00001.parquet": _shard(
            [(A, 3.0, "ff-acc"), (A, 3.0, "aa-acc"), (A, 3.0, "ff-acc"), (Z, 1.0, "bb-acc"), ("too short", 3.0, "cc-acc"),
             (M, 3.0, "dd-acc")]),
    }


def _listing(shards: dict[str, bytes], lie: dict[str, bytes] | None = None) -> bytes:
    """The Hub's repository listing with blobs: each file's size and lfs sha256 (of `lie`'s bytes where given)."""
    siblings = [{"rfilename": ".gitattributes", "size": 2}, {"rfilename": "README.md", "size": 9}]
    for rel, data in sorted(shards.items()):
        vouched = (lie or {}).get(rel, data)
        siblings.append({"rfilename": rel, "size": len(vouched), "blobId": "0" * 40,
                         "lfs": {"sha256": hashlib.sha256(vouched).hexdigest(), "size": len(vouched), "pointerSize": 134}})
    return json.dumps({"id": "bosonai/WildASR", "siblings": siblings}).encode()


def _covals_ids() -> dict[str, list[str]]:
    """What Coval's manifests would list for this source, worked out by hand: each set's audio_hash_id in id
    order (B 0001, M 0002, A 0003, Z 0004 by transcript; a condition by ordinal mod its count, past a long draw)."""
    by = {"clipping": ("clip", 0, 0, 0, 0), "farfield": ("far", 1, 2, 0, 2), "noisegap": ("gap", 1, 0, 0, 0),
          "phonecodec": ("phone", 1, 0, 0, 0), "reverb": ("rev", 0, 0, 0, 0)}
    sets = {f"stt-wildasr-{c}": [f"{v}-{t}-{k}" for t, k in zip((B, M, A, Z), ks)] for c, (v, *ks) in by.items()}
    return {"stt-wildasr-clean": ["clean-b", "clean-m", "clean-a", "clean-z"], **sets,
            "stt-wildasr-accent": ["aa-acc", "dd-acc", "ff-acc"]}


def _entry(folder: Path, name: str, ids: dict[str, list[str]], server_url: str) -> remote.RemoteEntry:
    """The packaged entry, word for word, but for Coval's ids: this source's, in a file beside a user's catalog."""
    (folder / "ids.json").write_text(json.dumps({"sets": ids}))
    (folder / "fetch.toml").write_text("#" + remote.packaged_catalog().read_text().split("# Coval's WildASR sets")[1]
                                       .replace('coval_ids = "coval-wildasr-ids.json"', 'coval_ids = "ids.json"'))
    return remote.load(folder / "fetch.toml")[name].mirrored(server_url)


@pytest.fixture(scope="module")
def source() -> dict[str, bytes]:
    return _source()


@pytest.fixture
def server(source: dict[str, bytes]) -> Iterator[FileServer]:
    with FileServer({LISTING: _listing(source), **{REPO + rel: data for rel, data in source.items()}}) as s:
        yield s


def test_the_wildasr_family_fetches_from_its_source_layout_and_keeps_covals_ids(server: FileServer, tmp_path: Path):
    entry = _entry(tmp_path, "stt-wildasr", _covals_ids(), server.url("/"))  # the packaged entry but for its ids file
    assert entry.layout_params["listing"] == server.url(LISTING) and entry.license == remote.load(None)["stt-wildasr"].license
    env = {"VOXWATCH_DATASETS_DIR": str(tmp_path / "catalog"), "VOXWATCH_DATASETS_FETCH_CATALOG": str(tmp_path / "fetch.toml")}
    out = cli_in_process("datasets", "fetch", "stt-wildasr", "--mirror", server.url("/"), env=env).stdout
    names = ["stt-wildasr-clean", "stt-wildasr-clipping", "stt-wildasr-farfield", "stt-wildasr-noisegap",
             "stt-wildasr-phonecodec", "stt-wildasr-reverb"]
    assert f"fetched 4 clips of stt-wildasr (Apache-2.0 AND CC-BY-4.0; cite: Boson AI: WildASR" in out and \
        f"as {', '.join(names)} into {tmp_path / 'catalog'}" in out
    assert "stt-wildasr-reverb: left out 1 clip(s) the VAD found no speech in: 0003" in out.splitlines()
    assert f"measure it with: voxwatch run --datasets {','.join(names)}" in out.splitlines()
    again = cli_in_process("datasets", "fetch", "stt-wildasr-clean", "--mirror", server.url("/"), env=env)
    assert again.returncode == 2 and "'stt-wildasr-clean' is built with the rest of its family by `voxwatch datasets fetch " \
        "stt-wildasr`" in again.stderr
    assert server.asked[0] == LISTING and all(p.startswith(REPO + "data/environment_degradation__") for p in server.asked[1:])
    assert len(server.asked) == 8  # the listing and the family's seven shards; not the accent split's
    catalog = Catalog([tmp_path / "catalog"])
    assert catalog.names() == names
    sets = {n: catalog.load(n) for n in names}  # every clip's sha256 checked against the file voxwatch wrote
    every = [("0001", "0001", B), ("0002", "0002", M), ("0003", "0003", A), ("0004", "0004", Z)]
    for n, ds in sets.items():
        # ids in transcript order, as Coval numbers them; dropped: 'two words', AMBIGUOUS, NOISY, NO_REVERB;
        # reverb's A (0003) is silence: left out of that set alone, its id named in dataset.json
        silent = ["0003"] if n == "stt-wildasr-reverb" else []
        assert [(c.id, c.utterance_id, c.text) for c in ds.clips] == [e for e in every if e[0] not in silent]
        assert ds.info.extra.get("no_speech", []) == silent
        assert (ds.info.family, ds.info.condition, ds.info.language) == ("stt-wildasr", n.removeprefix("stt-wildasr-"), "en")
        assert ds.info.extra["license"] == "Apache-2.0 AND CC-BY-4.0" and ds.info.extra["speech"] == "recorded"
        assert ds.info.extra["coval_manifest"].endswith(f"manifests/{n}.json")
    assert [use_case_of(ds.info.condition, "en")[0] for ds in sets.values()] == [
        "clean", "clipped", "far-field", "noisy", "phone", "reverberant"]
    rows = {n: ds.info.extra["source_rows"] for n, ds in sets.items()}
    clean_stem = f"data__{SPLIT.format('clean')}"
    assert rows["stt-wildasr-clean"]["0002"] == {"row": f"{clean_stem}-00001-of-00002-1", "audio_hash_id": "clean-m",
                                                 "condition_idx": 0, "condition_count": 1}
    far = rows["stt-wildasr-farfield"]
    assert (far["0003"]["audio_hash_id"], far["0003"]["condition_count"]) == ("far-" + A + "-0", 3)  # the duplicate dropped
    assert (far["0002"]["audio_hash_id"], far["0002"]["condition_idx"]) == ("far-" + M + "-2", 2)  # past the long draw
    assert far["0001"]["audio_hash_id"] == "far-" + B + "-1" and rows["stt-wildasr-noisegap"]["0001"]["condition_idx"] == 1
    files = sets["stt-wildasr-clean"].info.extra["files"]
    assert len(files) == 7 and all(f["url"].startswith(server.url(REPO)) and len(f["sha256"]) == 64 for f in files)
    assert not (tmp_path / "catalog" / ".downloads").exists() and not list((tmp_path / "catalog").glob(".stt-wildasr*"))


def test_the_accent_set_is_every_distinct_recording_in_hash_order(server: FileServer, tmp_path: Path):
    entry = _entry(tmp_path, "stt-wildasr-accent", _covals_ids(), server.url("/"))
    done = fetch(entry, tmp_path / "catalog", [], Limits(timeout_s=10, attempts=2, backoff_s=0.05))
    ds = Catalog([tmp_path / "catalog"]).load("stt-wildasr-accent")
    assert [f.name for f in done.folders] == ["stt-wildasr-accent"] and (ds.info.family, ds.info.condition) == (
        "stt-wildasr-accent", "accent")
    assert use_case_of(ds.info.condition, "en")[0] == "accented"  # the comparison pages' accented use case
    # A read twice (aa, ff; ff's repeat dropped), Z too short (1 s), 'too short' under 3 words: by hash aa, dd, ff
    assert [(c.id, c.text, ds.info.extra["source_rows"][c.id]["audio_hash_id"]) for c in ds.clips] == [
        ("0001", A, "aa-acc"), ("0002", M, "dd-acc"), ("0003", A, "ff-acc")]


@pytest.mark.parametrize("broken", ["sha256", "not parquet", "mp3"])
def test_a_corrupt_shard_is_one_line_and_nothing_is_written(source: dict[str, bytes], tmp_path: Path, broken: str):
    rel = f"data/{SPLIT.format('phone_codec')}-00000-of-00001.parquet"
    served = dict(source)
    served[rel] = {"not parquet": b"PAR1 not a parquet file PAR1", "sha256": source[rel][:-9] + b"corrupted",
                   "mp3": _shard(_draws("phone", [A, Z, M, NOISY, NO_REVERB, B], 2), {f"phone-{M}-0": b"ID3\x04" + bytes(400)})}[broken]
    lie = {rel: source[rel]} if broken == "sha256" else None  # the listing vouches for the real bytes
    with FileServer({LISTING: _listing(served, lie), **{REPO + r: d for r, d in served.items()}}) as s:
        _entry(tmp_path, "stt-wildasr", _covals_ids(), s.url("/"))  # this source's ids, in the user's fetch catalog
        env = {"VOXWATCH_DATASETS_DIR": str(tmp_path / "catalog"), "VOXWATCH_DATASETS_FETCH_ATTEMPTS": "1",
               "VOXWATCH_DATASETS_FETCH_CATALOG": str(tmp_path / "fetch.toml")}
        proc = cli_in_process("datasets", "fetch", "stt-wildasr", "--mirror", s.url("/"), env=env)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    shard = rel.replace("/", "__")
    assert {"sha256": f"{shard}: checksum mismatch", "not parquet": f"{shard}: not a readable parquet shard",
            "mp3": f"{shard}: row 4: the audio is neither WAV nor FLAC (it starts b'ID3\\x04'); voxwatch imports WAV or FLAC"
            }[broken] in proc.stderr
    left = sorted(str(p.relative_to(tmp_path / "catalog")) for p in (tmp_path / "catalog").rglob("*"))
    # verified shards may stay cached for the next try; no dataset, staging folder, listing or part file
    assert left and all(p.startswith(".downloads") and p.endswith((".parquet", "stt-wildasr", ".downloads")) for p in left), left
    assert broken != "sha256" or f".downloads/stt-wildasr/{shard}" not in left  # the mismatched shard is deleted


def test_a_selection_that_is_not_covals_is_refused_and_nothing_is_written(server: FileServer, tmp_path: Path):
    ids = _covals_ids()
    ids["stt-wildasr-farfield"][1] = "far-" + M + "-1"  # the long draw: what a rule without the band check would pick
    entry = _entry(tmp_path, "stt-wildasr", ids, server.url("/"))
    with pytest.raises(FetchError, match=r"^stt-wildasr-farfield: the selection is not Coval's \(4 clips, Coval's manifest 4; "
                                         r"first difference at clip 0002\): the source has changed"):
        fetch(entry, tmp_path / "catalog", [], Limits(timeout_s=10, attempts=2, backoff_s=0.05))
    assert not [p for p in (tmp_path / "catalog").rglob("*") if not p.name.endswith(".parquet")
                and p.name not in (".downloads", "stt-wildasr")]  # the verified shards stay cached, nothing else


def test_the_packaged_coval_ids_are_covals_manifests():
    ids = json.loads((remote.packaged_catalog().parent / "coval-wildasr-ids.json").read_text())
    assert {n: len(v) for n, v in ids["sets"].items()} == {**{f"stt-wildasr-{c}": 284 for c in (
        "clean", "clipping", "farfield", "noisegap", "phonecodec", "reverb")}, "stt-wildasr-accent": 845}
    assert ids["sets"]["stt-wildasr-accent"] == sorted(ids["sets"]["stt-wildasr-accent"])  # Coval numbers them in hash order
    entries = remote.load(None)
    assert {e.layout_params["coval_ids"] for e in (entries["stt-wildasr"], entries["stt-wildasr-accent"])} == {
        str(remote.packaged_catalog().parent / "coval-wildasr-ids.json")}


def test_a_wildasr_entry_is_checked_like_any_other(tmp_path: Path):
    raw = "#" + remote.packaged_catalog().read_text().split("# Coval's WildASR sets")[1]
    bad = tmp_path / "fetch.toml"
    bad.write_text(raw.replace('splits = { accent = "demographic_shift__en__demographic_accent_en" }',
                               'splits = { accent = "a", more = "b" }'))
    with pytest.raises(FetchError, match=r"dataset 2 \(stt-wildasr-accent\): splits: the family needs a clean split; "
                                         r"the accent set one split"):
        remote.load(bad)
    bad.write_text(raw.replace('license = "Apache-2.0"', 'license = "Apache-2.0 AND CC-BY-NC-4.0"'))
    with pytest.raises(FetchError, match=r"license 'Apache-2.0 AND CC-BY-NC-4.0' is not one voxwatch fetches"):
        remote.load(bad)


def test_a_shard_the_listing_does_not_vouch_for_is_refused():
    from voxwatch.datasets.hf_parquet import split_shards

    clean = f"data/{SPLIT.format('clean')}-00000-of-00001.parquet"
    listing = [{"rfilename": clean, "size": 10}, {"rfilename": f"data/{SPLIT.format('clipping')}-00000-of-00001.parquet",
                                                "size": 10, "lfs": {"sha256": "a" * 64, "size": 10}}]
    with pytest.raises(FetchError, match=rf"^wild: {clean}: the repository listing gives no sha256 and size for it; refused$"):
        split_shards(listing, "default", SPLIT.format("clean"), "wild")
    assert [s.rel for s in split_shards(listing, "default", SPLIT.format("clipping"), "wild")] == [listing[1]["rfilename"]]
    with pytest.raises(FetchError, match=r"has no parquet shard of split environment_degradation__en__fleurs_clean_e "):
        split_shards(listing, "default", SPLIT.format("clean")[:-1], "wild")  # a prefix of a split is not the split
