"""The phone condition on the wire (stt-starter-phone-mulaw): stored as 8 kHz G.711 mu-law, made
reproducibly from the committed clean clips, its anchors carried, its wire format declared."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from voxwatch.datasets import degrade, mulaw
from voxwatch.foundation.audio import probe, read_pcm16
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.manifest import ManifestError
from voxwatch.datasets.wire import PHONE_MULAW

NAME = "stt-starter-phone-mulaw"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog([bundled_root()])


def test_the_phone_set_is_stored_as_the_mulaw_a_phone_line_carries(catalog: Catalog):
    phone, clean = catalog.load(NAME), catalog.load("stt-starter-clean")
    assert phone.wire == PHONE_MULAW and phone.info.wire == {"encoding": "mulaw", "sample_rate": 8000}
    assert phone.info.condition == "phone-mulaw" and phone.info.sample_rate == 8000
    assert [c.utterance_id for c in phone.clips] == [c.utterance_id for c in clean.clips]
    by_id = {c.id: c for c in clean.clips}
    for clip in phone.clips[:8]:
        source = by_id[clip.utterance_id]
        assert (clip.sample_rate, clip.speech_start, clip.speech_end) == (8000, source.speech_start, source.speech_end)
        path = phone.folder / clip.path
        assert path.read_bytes()[20:22] == (7).to_bytes(2, "little")  # WAVE_FORMAT_MULAW
        assert probe(path).rate == 8000
        x = read_pcm16(clean.folder / source.path)[0].astype(np.float64) / 32767.0
        codes = degrade.phone_line(x).tobytes()
        assert mulaw.wav_codes(path) == codes  # the recipe, reproduced byte for byte from the committed clean clip
        assert mulaw.to_wire(phone.audio(clip).tobytes()) == codes  # what the harness sends is what is stored
        assert abs(clip.duration_s - source.duration_s) < 0.001


def test_an_unknown_wire_format_is_refused_by_name(tmp_path: Path):
    root = tmp_path / "catalog"
    shutil.copytree(bundled_root() / NAME, root / NAME)
    info = root / NAME / "dataset.json"
    record = json.loads(info.read_text())
    record["wire"] = {"encoding": "alaw", "sample_rate": 8000}
    info.write_text(json.dumps(record))
    with pytest.raises(ManifestError, match="alaw"):
        Catalog([root]).load(NAME)
    record["wire"] = None  # 16 kHz PCM declared: the 8 kHz clips no longer fit
    info.write_text(json.dumps(record))
    with pytest.raises(ManifestError, match="8000 Hz, the dataset's clips are 16000 Hz"):
        Catalog([root]).load(NAME)
