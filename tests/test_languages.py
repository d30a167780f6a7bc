"""Languages (METHOD "WER", v7): a dataset's language picks its normalizer and unit, reaches every
adapter that takes one (and refuses the models that cannot), and boards never pool two languages."""

from __future__ import annotations

import asyncio
import json
import shutil

import httpx
import pytest
from support.contract import KEY, REGISTRY

from voxwatch.boards import leaderboard
from voxwatch.store.comparisons import compute
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.importer import DatasetImportError, import_dataset
from voxwatch.datasets.manifest import ManifestError, read_info
from voxwatch.datasets.provenance import lookup
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.entities import entity_errors
from voxwatch.metrics.wer import (BASIC_NAME, CHARACTERS_NAME, NORMALIZER_NAME, WordErrors, normalize, pooled_wer,
                                  scorer_for, word_errors)
from voxwatch.foundation.observation import Observation
from voxwatch.providers.base import in_language
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario
from voxwatch.providers.keys import Secret, key_variable, vendor_variable
from voxwatch.harness.measure import MeasureContext, measure_item

SPANISH = "¿Dónde está la estación de tren?"
HEARD = "donde esta la estacion de tren"  # what a model that drops accents would write


def test_english_keeps_whispers_english_normalizer():
    for tag in ("en", "en-GB", "EN_us", None, ""):
        assert scorer_for(tag).normalizer == NORMALIZER_NAME and scorer_for(tag).unit == "word"
    assert word_errors("Yes, that's right.", "yes that is right", "en-GB") == WordErrors(0, 0, 0, 4)


def test_other_languages_use_the_basic_normalizer_which_keeps_accents():
    assert normalize("¡Hola, señor García! (risas)", "es") == "hola señor garcía"
    assert normalize("L'élève a dit « bonjour ».", "fr-CA") == "l élève a dit bonjour"
    assert scorer_for("es-MX").normalizer == BASIC_NAME == scorer_for("fr").normalizer
    # an accent is spelling: dónde/donde, está/esta, estación/estacion are three substitutions of six words
    assert word_errors(SPANISH, HEARD, "es") == WordErrors(3, 0, 0, 6)
    # the English normalizer would have stripped them (a different, wrong, count for Spanish)
    assert word_errors(SPANISH, HEARD, "en") != word_errors(SPANISH, HEARD, "es")


def test_languages_without_spaces_are_scored_by_characters():
    assert scorer_for("zh-Hans").normalizer == CHARACTERS_NAME and scorer_for("ja").error_rate_label == "CER"
    # 今天天气很好 against 今天天器好: 气 -> 器 substituted, 很 deleted, of 6 characters
    assert word_errors("今天天气很好。", "今天天器好", "zh") == WordErrors(1, 1, 0, 6)
    # 東京に行きます against 東京へ行きます です: に -> へ, and two inserted characters, of 7
    assert word_errors("東京に行きます", "東京へ 行きますです", "ja") == WordErrors(1, 0, 2, 7)
    assert pooled_wer([word_errors("今天天气很好。", "今天天器好", "zh"),
                       word_errors("東京に行きます", "東京に行きます", "ja")]) == pytest.approx(2 / 13)


def test_entities_in_another_language_do_not_crash_and_count_by_its_tokens():
    assert entity_errors([{"type": "name", "text": "García"}], "el señor garcía llamó", "es").missed == 0
    assert entity_errors([{"type": "name", "text": "東京"}], "東京です", "ja").missed == 0
    assert entity_errors([{"type": "name", "text": "東京"}], "京都です", "ja").missed == 1


def test_a_bad_language_tag_is_refused_clearly(tmp_path):
    with pytest.raises(ValueError, match="not a BCP 47 tag"):
        scorer_for("1234")
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "dataset.json").write_text(json.dumps({"name": "bad", "kind": "text", "family": "bad", "condition": "text",
                                                     "description": "", "recipe": "test", "language": "Spanish!"}))
    with pytest.raises(ManifestError, match="'Spanish!' is not a BCP 47 tag"):
        read_info(folder)
    with pytest.raises(DatasetImportError, match="--language: language 'espanol 1'"):
        import_dataset(tmp_path, "x", tmp_path / "out", [], language="espanol 1")


@pytest.fixture(scope="module")
def spanish(tmp_path_factory):
    """A one-clip Spanish dataset, imported as a user would: a starter clip's audio with a Spanish reference."""
    starter = Catalog([bundled_root()]).load("stt-starter-clean")
    clip = starter.clips[0]
    source = tmp_path_factory.mktemp("source")
    shutil.copy(starter.folder / clip.path, source / "a.wav")
    (source / "manifest.jsonl").write_text(json.dumps({"id": "es1", "path": "a.wav", "text": SPANISH}) + "\n")
    root = tmp_path_factory.mktemp("catalog")
    import_dataset(source, "stt-es", root, [], language="es")
    ds = Catalog([root]).load("stt-es")
    return ds, ds.clips[0]


def _measure(model_id: str, dataset, item):
    model = REGISTRY.resolve(model_id)
    ctx = MeasureContext(run_id="r", seed=1, region="test", timeout_s=10, secrets=(Secret(KEY),), emulator=True)
    return asyncio.run(measure_item(model, REGISTRY.create(model), dataset, item, ctx))


@pytest.mark.realtime
def test_a_spanish_dataset_is_declared_to_deepgram_and_scored_with_its_normalizer(monkeypatch, spanish):
    ds, clip = spanish
    assert ds.info.language == "es"
    scenario = STTScenario(transcript=HEARD, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           first_partial_ms=150.0, final_ms=200.0, api_key=KEY)
    ledger = Ledger()
    with server.serve("deepgram", scenario, ledger=ledger) as url:
        monkeypatch.setenv(vendor_variable("deepgram", "BASE_URL"), url)
        monkeypatch.setenv(key_variable("deepgram"), KEY)
        row = _measure("deepgram/nova-3", ds, clip)
        streams = seen(ledger.drain(), "listen")
    assert row.status == "ok", row.reason
    assert [s["language"] for s in streams] == ["es"]
    assert (row.language, row.normalizer, row.method_version) == ("es", BASIC_NAME, METHOD_VERSION)
    assert (row.substitutions, row.deletions, row.insertions, row.ref_words) == (3, 0, 0, 6)


def test_an_english_only_model_gets_an_excluded_row_with_the_reason(spanish):
    ds, clip = spanish
    row = _measure("faster-whisper/tiny.en@1.2.1", ds, clip)
    assert row.status == "excluded" and row.language == "es"
    assert "faster-whisper/tiny.en@1.2.1 does not take es" in row.reason and "stt-es" in row.reason
    assert row.latency_ms is None and row.ref_words is None


def test_each_adapter_takes_the_languages_its_vendor_documents():
    def takes(model_id: str, language: str) -> bool:
        return in_language(REGISTRY.create(REGISTRY.resolve(model_id)), language) is not None

    assert takes("deepgram/nova-3", "es") and not takes("deepgram/nova-3", "sw")
    assert takes("assemblyai/universal-streaming-multilingual", "pt-BR")
    assert not takes("assemblyai/universal-streaming-english", "es")
    assert takes("speechmatics/enhanced-en", "en-GB") and not takes("speechmatics/enhanced-en", "fr")
    assert not takes("deepgram/aura-2-thalia-en", "es") and takes("deepgram/aura-2-thalia-en", "en")
    assert not takes("pocketsphinx/en-us@5.1.1", "de")
    assert takes("openai/whisper-1", "yue") and not takes("openai/whisper-1", "xx")
    gemini = "gemini/gemini-2.5-flash-native-audio-preview-12-2025"
    assert takes(gemini, "es-US") and not takes(gemini, "sw")
    assert not takes("openai/gpt-realtime-2.1", "es")  # an S2S vendor not yet checked for other languages
    adapter = in_language(REGISTRY.create(REGISTRY.resolve("openai/whisper-1")), "es-419")
    assert adapter._form()["language"] == "es"


def _spanish_prompts(tmp_path):
    folder = tmp_path / "tts-es"
    folder.mkdir()
    (folder / "dataset.json").write_text(json.dumps({
        "name": "tts-es", "kind": "text", "family": "tts-es", "condition": "text", "description": "two prompts",
        "recipe": "test", "language": "es"}))
    (folder / "manifest.jsonl").write_text(json.dumps({"id": "p1", "text": "Su pedido llega el jueves.",
                                                       "category": "order"}) + "\n")
    return Catalog([tmp_path]).load("tts-es")


def test_espeak_speaks_a_spanish_prompt_set_and_the_english_instrument_does_not_score_it(tmp_path):
    ds = _spanish_prompts(tmp_path)
    model = REGISTRY.resolve("espeak-ng/en-us@1.52.0")
    heard = []
    ctx = MeasureContext(run_id="r", seed=1, region="local", timeout_s=20, instrument=lambda a: heard.append(a) or "x",
                         instrument_id="faster-whisper/tiny.en@1.2.1")
    row = asyncio.run(measure_item(model, REGISTRY.create(model), ds, ds.prompts[0], ctx))
    assert row.status == "ok", row.reason
    assert row.voice == "es" and row.ttfa_ms is not None
    assert heard == [] and row.ref_words is None and row.substitutions is None
    assert "hears English only" in row.instrument_error and "es speech is not scored" in row.instrument_error


@pytest.mark.realtime
def test_elevenlabs_tts_sends_language_code_and_its_emulator_checks_it(monkeypatch, tmp_path):
    ds = _spanish_prompts(tmp_path)
    with server.serve("elevenlabs", TTSScenario(api_key=KEY)) as url:
        monkeypatch.setenv(vendor_variable("elevenlabs", "BASE_URL"), url)
        monkeypatch.setenv(key_variable("elevenlabs"), KEY)
        row = _measure("elevenlabs/eleven_flash_v2_5:http", ds, ds.prompts[0])
        refused = httpx.post(f"{url}/v1/text-to-speech/v/stream?output_format=pcm_24000", headers={"xi-api-key": KEY},
                             json={"text": "Habari", "model_id": "eleven_flash_v2_5", "language_code": "sw"})
    assert row.status == "ok" and row.language == "es", row.reason
    assert refused.status_code == 400 and refused.json()["detail"]["status"] == "unsupported_language"


def _rows(dataset: str, language: str, errors: int, words: int) -> list[Observation]:
    return [Observation(run_id=f"t{i}", model_id="deepgram/nova-3", dataset=dataset, clip_id=f"c{i}", attempt=1,
                        board="stt", vendor="deepgram", protocol="stt-stream", region="us", started_at=1e9 + i,
                        status="ok", language=language, method_version=METHOD_VERSION, ttfs_ms=300.0 + i,
                        substitutions=errors, deletions=0, insertions=0, ref_words=words, emulator=False)
            for i in range(6)]


def test_two_datasets_of_different_languages_are_never_pooled():
    stored = _rows("stt-en", "en", 1, 10) + _rows("stt-ja", "ja", 3, 10)
    rows = leaderboard.build(stored)
    wer = {r.dataset: r.pooled_wer for r in rows if r.metric == "ttfs_ms"}
    assert wer == {"stt-en": pytest.approx(0.1), "stt-ja": pytest.approx(0.3)}  # pooled: 0.2, never shown
    text = leaderboard.format_table(rows, "30d", comparisons=compute(stored), languages={"stt-en": "en", "stt-ja": "ja"})
    assert "stt-ja, streaming STT: ranked by ttfs_ms, paired on the same clips [language ja, scored as CER]" in text
    assert "(60 characters)" in text and "(60 words)" in text
    assert "stt-en, streaming STT: ranked by ttfs_ms, paired on the same clips\n" in text + "\n"


def test_the_board_heading_names_a_non_english_language_from_the_catalog(spanish):
    ds, _ = spanish
    found = lookup(Catalog([ds.folder.parent]), "stt-es")
    assert (found.language, found.error_rate, found.language_note) == ("es", "WER", "es")
    assert lookup(Catalog([bundled_root()]), "stt-starter-clean").language_note is None


def test_an_adapter_set_for_a_language_shares_its_warm_client_and_english_needs_no_copy():
    """measure_item sets the adapter for the dataset's language on every item: a copy must share the
    adapter's warmed HTTP client (one connection for the run), and English (every adapter's default)
    is the adapter itself."""
    adapter = REGISTRY.create(REGISTRY.resolve("elevenlabs/eleven_flash_v2_5:http"))
    assert in_language(adapter, "en") is adapter and in_language(adapter, "en-GB") is adapter
    spanish = in_language(adapter, "es")
    assert spanish is not adapter and spanish.language == "es" and spanish._clients is adapter._clients
