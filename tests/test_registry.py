import pytest

from voxwatch.providers.registry import Registry, RegistryError

ENTRY = """
[[model]]
id = "acme/voice-2"
board = "stt"
vendor = "acme"
protocol = "stt-stream"
adapter = "x:Y"
status = "active"
region = "us-east"
needs_key = true
exclusions = [{metric = "ttfs_ms", reason = "the final cannot be forced"}]
"""


def test_default_registry_has_the_local_engines_with_versions():
    registry = Registry.default()
    local = {m.id: m.board for m in registry.models.values() if not m.needs_key}
    assert local == {"pocketsphinx/en-us@5.1.1": "stt", "faster-whisper/tiny.en@1.2.1": "stt",
                     "espeak-ng/en-us@1.52.0": "tts"}
    assert all(m.version for m in registry.models.values() if not m.needs_key)
    assert registry.resolve("deepgram/nova-3").needs_key and registry.resolve("cartesia/sonic-3.5").board == "tts"


@pytest.mark.parametrize("alias", ["pocketsphinx/latest", "pocketsphinx/en-us", "espeak-ng/en-us",
                                   "faster-whisper/tiny.en", "espeak-ng/en-us@latest", "deepgram/nova",
                                   "deepgram/latest", "cartesia/sonic"])
def test_floating_aliases_are_refused_with_the_exact_ids(alias):
    with pytest.raises(RegistryError, match="floating alias") as err:
        Registry.default().resolve(alias)
    assert "exact versioned id: " in str(err.value)  # it names the ids to use instead


def test_unknown_version_and_unknown_id_are_refused():
    registry = Registry.default()
    with pytest.raises(RegistryError, match="not registered"):
        registry.resolve("pocketsphinx/en-us@4.0.0")
    with pytest.raises(RegistryError, match="unknown model id"):
        registry.resolve("nobody/model-1")


def test_installed_engine_version_must_match_the_id():
    registry = Registry.default()
    model = registry.resolve("pocketsphinx/en-us@5.1.1")
    adapter = registry.create(model)
    assert adapter.installed_version() == "5.1.1"
    stale = Registry.from_toml(ENTRY.replace("acme/voice-2", "pocketsphinx/en-us@5.0.0").replace(
        'adapter = "x:Y"', 'adapter = "voxwatch.providers.local.pocketsphinx_stt:PocketsphinxSTT"'))
    with pytest.raises(RegistryError, match="5.1.1 is installed"):
        stale.create(stale.resolve("pocketsphinx/en-us@5.0.0"))


def test_registry_data_is_schema_checked():
    registry = Registry.from_toml(ENTRY)
    model = registry.resolve("acme/voice-2")
    assert model.excluded("ttfs_ms").reason == "the final cannot be forced"
    assert model.excluded("first_partial_ms") is None
    with pytest.raises(RegistryError, match="unknown field"):
        Registry.from_toml(ENTRY + 'colour = "red"\n')
    with pytest.raises(RegistryError, match="does not belong on board"):
        Registry.from_toml(ENTRY.replace('board = "stt"', 'board = "tts"'))
    with pytest.raises(RegistryError, match="not an exact versioned id"):
        Registry.from_toml(ENTRY.replace("acme/voice-2", "acme/latest"))
    with pytest.raises(RegistryError, match="duplicate"):
        Registry.from_toml(ENTRY + ENTRY)
    with pytest.raises(RegistryError, match="status"):
        Registry.from_toml(ENTRY.replace('"active"', '"beta"'))


def test_key_status_comes_from_the_environment(monkeypatch):
    model = Registry.from_toml(ENTRY).resolve("acme/voice-2")
    monkeypatch.delenv("VOXWATCH_ACME_API_KEY", raising=False)
    assert not model.key_is_set()
    monkeypatch.setenv("VOXWATCH_ACME_API_KEY", "k-123")
    assert model.key_is_set()
