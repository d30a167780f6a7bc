"""The bundled catalog, integrity checks, degraded conditions and sampling parity."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from voxwatch.datasets import degrade
from voxwatch.foundation.audio import read_pcm16
from voxwatch.datasets.catalog import Catalog, IntegrityError, bundled_root
from voxwatch.datasets.manifest import ManifestError
from voxwatch.datasets.sampling import draw
from voxwatch.metrics.vad import speech_anchors

FAMILY = ["clean", "clipping", "farfield", "noisegap", "phonecodec", "noise"]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog([bundled_root()])


def test_the_starter_family_is_complete_and_verified(catalog: Catalog):
    clean = catalog.load("stt-starter-clean")
    assert len(clean.clips) >= 60
    assert len({c.voice for c in clean.clips}) >= 3
    ids = [c.utterance_id for c in clean.clips]
    for condition in FAMILY[1:]:
        ds = catalog.load(f"stt-starter-{condition}")
        assert [c.utterance_id for c in ds.clips] == ids
        assert ds.info.transform["name"] == condition and ds.info.family == clean.info.family
        assert all(c.source_clip == f"stt-starter-clean/{c.utterance_id}" for c in ds.clips)


def test_clean_clips_are_catalog_format_with_true_anchors(catalog: Catalog):
    clean = catalog.load("stt-starter-clean")
    for clip in clean.clips[:12]:
        pcm, rate = read_pcm16(clean.folder / clip.path)
        assert rate == 16000 and clip.sample_rate == 16000
        x = pcm / 32768.0
        rms_db = 20 * np.log10(np.sqrt(np.mean(x * x)))
        peak_db = 20 * np.log10(np.abs(x).max())
        # -20 dBFS RMS, or less where the peak guard held the peak at -1 dBFS
        assert rms_db == pytest.approx(-20.0, abs=0.05) or (rms_db < -20 and peak_db == pytest.approx(-1.0, abs=0.05))
        assert 0.2 < clip.speech_start < clip.speech_end < clip.duration_s
        # the manifest's anchors are the shared VAD's on the stored file
        anchors = speech_anchors(pcm)
        assert (anchors.speech_start, anchors.speech_end) == (clip.speech_start, clip.speech_end)


def test_tts_prompts(catalog: Catalog):
    prompts = catalog.load("tts-prompts").prompts
    categories = [p.category for p in prompts]
    assert len(prompts) == 35 and categories.count("passage") == 5
    assert {"order_tracking", "appointments", "account_verification", "tech_support"} <= set(categories)


def _copy_dataset(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "catalog"
    shutil.copytree(bundled_root() / name, root / name)
    return root


def test_a_tampered_clip_aborts_with_its_name(tmp_path: Path):
    root = _copy_dataset(tmp_path, "stt-starter-phonecodec")
    victim = root / "stt-starter-phonecodec" / "clips" / "u007.wav"
    data = bytearray(victim.read_bytes())
    data[-10] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match="u007.wav"):
        Catalog([root]).load("stt-starter-phonecodec")


def test_a_missing_clip_and_a_broken_manifest_are_named(tmp_path: Path):
    root = _copy_dataset(tmp_path, "stt-starter-clean")
    folder = root / "stt-starter-clean"
    (folder / "clips" / "u003.wav").unlink()
    with pytest.raises(IntegrityError, match="u003.wav: missing"):
        Catalog([root]).load("stt-starter-clean")
    lines = (folder / "manifest.jsonl").read_text().splitlines()
    lines[4] = lines[4][:-5]
    (folder / "manifest.jsonl").write_text("\n".join(lines))
    with pytest.raises(ManifestError, match=r"manifest.jsonl:5"):
        Catalog([root]).load("stt-starter-clean")
    record = json.loads(lines[0])
    record["colour"] = "red"
    (folder / "manifest.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(ManifestError, match=r"manifest.jsonl:1: unknown field"):
        Catalog([root]).load("stt-starter-clean")


def test_transforms_are_deterministic_and_do_what_they_say(catalog: Catalog):
    clean = catalog.load("stt-starter-clean")
    clip = clean.clips[10]
    x = clean.audio(clip) / 32767.0
    for name in degrade.TRANSFORMS:
        a = degrade.apply(name, x, clip.speech_start, clip.speech_end, clip.utterance_id)
        b = degrade.apply(name, x, clip.speech_start, clip.speech_end, clip.utterance_id)
        assert np.array_equal(a.audio, b.audio), name
    gap = degrade.apply("noisegap", x, clip.speech_start, clip.speech_end, clip.utterance_id)
    assert gap.audio.size == x.size + 8000 and gap.speech_end == pytest.approx(clip.speech_end + 0.5)
    phone = degrade.apply("phonecodec", x, clip.speech_start, clip.speech_end, clip.utterance_id).audio
    spectrum = np.abs(np.fft.rfft(phone)) ** 2
    freqs = np.fft.rfftfreq(phone.size, 1 / 16000)
    assert spectrum[freqs > 4200].sum() / spectrum.sum() < 0.001  # nothing above the 8 kHz codec's band
    rng = np.random.default_rng(0)
    noisy = degrade.noise(x, clip.speech_start, clip.speech_end, rng, snr_db=10.0).audio
    clipped = degrade.apply("clipping", x, clip.speech_start, clip.speech_end, clip.utterance_id).audio
    assert np.mean(np.abs(clipped) >= np.abs(clipped).max() * 0.999) > 0.01  # flat tops
    assert not np.allclose(noisy, x)


def test_sampling_is_seeded_and_covers_everything_when_asked():
    ids = [f"u{i:03d}" for i in range(64)]
    assert draw(7, "fam", ids, 10) == draw(7, "fam", ids, 10)
    assert draw(7, "fam", ids, 10) != draw(8, "fam", ids, 10)
    assert len(set(draw(7, "fam", ids, 10))) == 10
    assert draw(7, "fam", ids, 1000) == sorted(ids)
