import datetime as dt
import re

import pytest

from voxwatch.config import load
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.lifecycle import WARNING_DAYS, current_day
from voxwatch.providers.registry import Registry, RegistryError
from voxwatch.harness.tick import PlanError, load_instrument, plan_tick

VENDOR = """
[[vendor]]
name = "acme"
snapshots = "none"
checked = 2026-11-30
source = "https://acme.example/docs/models"
"""


def entry(model_id: str, board: str, protocol: str, *extra: str) -> str:
    """One [[model]] of the test registries (adapter and checks made up), with extra TOML lines."""
    vendor = model_id.split("/")[0]
    return "\n".join(["", "[[model]]", f'id = "{model_id}"', f'board = "{board}"', f'vendor = "{vendor}"',
                      f'protocol = "{protocol}"', 'adapter = "x:Y"', 'status = "active"', 'region = "us-east"',
                      "needs_key = true", "checked = 2026-11-30", f'source = "https://{vendor}.example/{model_id}"',
                      *extra, ""])


ENTRY = entry("acme/voice-2", "stt", "stt-stream", 'exclusions = [{metric = "ttfs_ms", reason = "the final cannot be forced"}]')

# a vendor that publishes dated snapshots, with a speech-to-speech model, its dated snapshot and a successor
DATED = """
[[vendor]]
name = "dated"
snapshots = "dated"
pattern = '-\\d{4}-\\d{2}-\\d{2}$'
checked = 2026-11-30
source = "https://dated.example/models"
""" + entry("dated/talk-2026-01-02", "s2s", "s2s", "deprecated = 2026-08-01", "shutdown = 2027-01-20",
            'successor = "dated/talk-2"', "session_limit_s = 3600") + entry(
    "dated/talk-2", "s2s", "s2s", 'undated = "its model page lists no dated snapshot"', "session_limit_s = 3600")

SHUTDOWN = dt.date(2027, 1, 20)
OPENAI_REALTIME = "openai/gpt-realtime-2025-08-28"


def acme(*lines: str, entry: str = ENTRY) -> Registry:
    """The one-entry registry with extra lines appended to its model."""
    return Registry.from_toml(VENDOR + entry + "".join(line + "\n" for line in lines))


def test_default_registry_has_the_local_engines_with_versions():
    registry = Registry.default()
    local = {m.id: m.board for m in registry.models.values() if not m.needs_key}
    assert local == {"pocketsphinx/en-us@5.1.1": "stt", "faster-whisper/tiny.en@1.2.1": "stt",
                     "faster-whisper/tiny.en-streaming@1.2.1": "stt",
                     "espeak-ng/en-us@1.52.0": "tts", "local/cascade-scripted-baseline": "s2s"}
    engines = {name for name, v in registry.vendors.items() if v.snapshots == "engine"}
    assert all(m.version for m in registry.models.values() if m.vendor in engines)
    assert registry.resolve("deepgram/nova-3").needs_key
    assert registry.resolve("cartesia/sonic-3.5-2026-05-04").board == "tts"


@pytest.mark.parametrize("alias", ["pocketsphinx/latest", "pocketsphinx/en-us", "espeak-ng/en-us",
                                   "faster-whisper/tiny.en", "espeak-ng/en-us@latest", "deepgram/nova",
                                   "deepgram/latest", "cartesia/sonic"])
def test_floating_aliases_are_refused_with_the_exact_ids(alias):
    with pytest.raises(RegistryError, match="floating alias") as err:
        Registry.default().resolve(alias)
    assert "exact versioned id: " in str(err.value)  # it names the ids to use instead


def test_a_floating_alias_is_never_offered_as_the_exact_id():
    with pytest.raises(RegistryError) as err:
        Registry.default().resolve("cartesia/sonic")
    assert re.search(r"exact versioned id: cartesia/sonic-3\.5-2026-05-04$", str(err.value))  # not the retired alias


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
    engine = ENTRY.replace("acme/voice-2", "pocketsphinx/en-us@5.0.0").replace('vendor = "acme"', 'vendor = "pocketsphinx"')
    stale = Registry.from_toml(VENDOR.replace('"acme"', '"pocketsphinx"').replace('"none"', '"engine"') + engine.replace(
        'adapter = "x:Y"', 'adapter = "voxwatch.providers.local.pocketsphinx_stt:PocketsphinxSTT"'))
    with pytest.raises(RegistryError, match="5.1.1 is installed"):
        stale.create(stale.resolve("pocketsphinx/en-us@5.0.0"))


def test_registry_data_is_schema_checked():
    registry = acme()
    model = registry.resolve("acme/voice-2")
    assert model.excluded("ttfs_ms").reason == "the final cannot be forced"
    assert model.excluded("first_partial_ms") is None
    assert (model.checked, model.source) == (dt.date(2026, 11, 30), "https://acme.example/acme/voice-2")
    with pytest.raises(RegistryError, match="unknown field"):
        acme('colour = "red"')
    with pytest.raises(RegistryError, match="does not belong on board"):
        Registry.from_toml(VENDOR + ENTRY.replace('board = "stt"', 'board = "tts"'))
    with pytest.raises(RegistryError, match="not an exact versioned id"):
        Registry.from_toml(VENDOR + ENTRY.replace("acme/voice-2", "acme/latest"))
    with pytest.raises(RegistryError, match="duplicate id"):
        Registry.from_toml(VENDOR + ENTRY + ENTRY)
    with pytest.raises(RegistryError, match="status"):
        Registry.from_toml(VENDOR + ENTRY.replace('"active"', '"beta"'))
    with pytest.raises(RegistryError, match="unknown table"):
        Registry.from_toml(VENDOR + ENTRY + "[[models]]\nid = 'x'\n")


def test_every_entry_says_when_and_where_it_was_checked():
    for field in ("checked", "source"):
        bare = "\n".join(line for line in ENTRY.splitlines() if not line.startswith(f"{field} ="))
        with pytest.raises(RegistryError, match=rf"missing field\(s\) \['{field}'\]"):
            Registry.from_toml(VENDOR + bare)
    with pytest.raises(RegistryError, match="source must not be empty"):
        Registry.from_toml(VENDOR + ENTRY.replace('source = "https://acme.example/acme/voice-2"', 'source = " "'))


@pytest.mark.parametrize("value", ["2026-11-30T10:00:00", "2026-11-30T10:00:00Z", "10:00:00", '"2026-11-30"', "20261130"])
def test_a_date_field_takes_a_date_and_nothing_else(value):
    with pytest.raises(RegistryError, match=r"checked must be a date \(YYYY-MM-DD, unquoted\)"):
        Registry.from_toml(VENDOR + ENTRY.replace("checked = 2026-11-30", f"checked = {value}"))
    with pytest.raises(RegistryError, match="shutdown must be a date"):
        acme(f"shutdown = {value}")


def test_deprecation_shutdown_and_successor_are_consistent():
    with pytest.raises(RegistryError, match=r"shuts down \(2026-12-01\) before its deprecation was announced \(2027-01-01\)"):
        acme("deprecated = 2027-01-01", "shutdown = 2026-12-01")
    assert acme("deprecated = 2026-12-01", "shutdown = 2026-12-01").resolve("acme/voice-2").shutdown == dt.date(2026, 12, 1)
    with pytest.raises(RegistryError, match="the successor of acme/voice-2, 'acme/voice-3', is not another registered id"):
        acme('successor = "acme/voice-3"')
    with pytest.raises(RegistryError, match="is not another registered id"):
        acme('successor = "acme/voice-2"')


def test_a_session_limit_belongs_to_a_speech_to_speech_entry():
    with pytest.raises(RegistryError, match="session_limit_s is a speech-to-speech session's limit; acme/voice-2 is on the stt board"):
        acme("session_limit_s = 600")
    s2s = ENTRY.replace('board = "stt"', 'board = "s2s"').replace('protocol = "stt-stream"', 'protocol = "s2s"')
    assert acme("session_limit_s = 600", entry=s2s).resolve("acme/voice-2").session_limit_s == 600
    for bad, message in (("0", "must be a positive number of seconds"), ("true", "must be int"), ("60.5", "must be int")):
        with pytest.raises(RegistryError, match=message):
            acme(f"session_limit_s = {bad}", entry=s2s)
    unknown = 'session_limit_unknown = "the vendor documents none"'
    assert acme(unknown, entry=s2s).resolve("acme/voice-2").session_limit_unknown == "the vendor documents none"
    for neither_or_both in ((), ("session_limit_s = 600", unknown)):
        with pytest.raises(RegistryError, match="needs either session_limit_s .* or session_limit_unknown"):
            acme(*neither_or_both, entry=s2s)


def test_every_vendor_states_how_it_versions_its_models():
    with pytest.raises(RegistryError, match="vendor 'acme' of acme/voice-2 has no \\[\\[vendor\\]\\] statement"):
        Registry.from_toml(ENTRY)
    with pytest.raises(RegistryError, match="snapshots must be one of"):
        Registry.from_toml(VENDOR.replace('"none"', '"sometimes"') + ENTRY)
    with pytest.raises(RegistryError, match="a pattern .* goes with snapshots = \"dated\" and only with it"):
        Registry.from_toml(VENDOR.replace('"none"', '"dated"') + ENTRY)
    with pytest.raises(RegistryError, match="not a regular expression"):
        Registry.from_toml(VENDOR.replace('"none"', '"dated"\npattern = "-(\\\\d"') + ENTRY)
    with pytest.raises(RegistryError, match="duplicate vendor"):
        Registry.from_toml(VENDOR + VENDOR + ENTRY)
    with pytest.raises(RegistryError, match="a local engine's id names its installed version"):
        Registry.from_toml(VENDOR.replace('"none"', '"engine"') + ENTRY)


def test_a_floating_id_of_a_vendor_with_dated_snapshots_is_refused_at_load():
    registry = Registry.from_toml(DATED)
    assert registry.resolve("dated/talk-2").undated == "its model page lists no dated snapshot"
    with pytest.raises(RegistryError, match=r"dated/talk-2 is a floating alias: dated publishes dated snapshots .*pin one, "
                                            "or say in `undated` why this model has none"):
        Registry.from_toml(DATED.replace('undated = "its model page lists no dated snapshot"\n', ""))
    with pytest.raises(RegistryError, match="dated/talk-2026-01-02 names a dated snapshot; drop its `undated`"):
        Registry.from_toml(DATED.replace("shutdown = 2027-01-20", 'shutdown = 2027-01-20\nundated = "none"'))
    with pytest.raises(RegistryError, match="`undated` explains a missing dated snapshot; acme publishes none"):
        acme('undated = "no snapshots"')
    # a floating id kept only for its stored rows: declared retired, it can never be measured again
    kept = DATED.replace('undated = "its model page lists no dated snapshot"\n', "").replace(
        'id = "dated/talk-2"\nboard = "s2s"\nvendor = "dated"\nprotocol = "s2s"\nadapter = "x:Y"\nstatus = "active"',
        'id = "dated/talk-2"\nboard = "s2s"\nvendor = "dated"\nprotocol = "s2s"\nadapter = "x:Y"\nstatus = "retired"')
    assert Registry.from_toml(kept).resolve("dated/talk-2").status == "retired"


def test_no_floating_id_remains_in_the_default_registry():
    """Every measurable id of a vendor that publishes dated snapshots names one, or says why it cannot."""
    registry = Registry.default()
    dated = {name: v for name, v in registry.vendors.items() if v.snapshots == "dated"}
    assert {"openai", "cartesia", "gemini"} <= set(dated)
    for m in registry.models.values():
        assert m.vendor in registry.vendors, m.id
        if m.vendor in dated and m.status != "retired":
            assert re.search(dated[m.vendor].pattern, m.vendor_model) or m.undated, m.id
    assert re.search(dated["cartesia"].pattern, "sonic-3.5-2026-05-04") and not re.search(dated["cartesia"].pattern, "sonic-3.5")
    alias = registry.resolve("cartesia/sonic-3.5")  # kept, retired, for its stored rows
    assert alias.status == "retired" and alias.successor == "cartesia/sonic-3.5-2026-05-04"
    assert registry.resolve("openai/gpt-4o-mini-tts-2025-12-15").undated is None  # the dated snapshot, not the alias


def test_the_default_registry_records_its_checks_and_successors():
    registry = Registry.default()
    for m in registry.models.values():
        assert isinstance(m.checked, dt.date) and not isinstance(m.checked, dt.datetime) and m.source, m.id
        assert m.checked <= current_day(), m.id  # a check that happened
        if m.board == "s2s":
            assert m.session_limit_s or m.session_limit_unknown, f"{m.id}: records its vendor's session limit or why none"
    successors = {m.id: m.successor for m in registry.models.values() if m.successor}
    assert successors[OPENAI_REALTIME] == "openai/gpt-realtime-2.1"
    assert successors["openai/whisper-1"] == successors["openai/gpt-4o-transcribe:http"] == "openai/gpt-transcribe:http"
    assert successors["gemini/gemini-2.5-flash-native-audio-preview-12-2025"] == "gemini/gemini-3.8-live"
    for new in ("openai/gpt-realtime-2", "openai/gpt-realtime-2.1", "openai/gpt-realtime-2.1-mini"):
        assert registry.resolve(new).session_limit_s == 3600
    assert registry.resolve("gemini/gemini-3.8-live").session_limit_s == 600


# --- the lifecycle: retired from the shutdown date, warned before --------------------------------------


def test_a_model_is_retired_from_its_shutdown_date_and_warned_about_before():
    model = Registry.from_toml(DATED).resolve("dated/talk-2026-01-02")
    quiet = model.standing(SHUTDOWN - dt.timedelta(days=WARNING_DAYS + 1))
    assert (quiet.status, quiet.notice, quiet.label) == ("active", None, "active")
    warned = model.standing(SHUTDOWN - dt.timedelta(days=WARNING_DAYS))
    assert (warned.status, warned.notice) == ("active", "retiring 2027-01-20; successor dated/talk-2")
    assert warned.label == "active, retiring 2027-01-20" and not warned.retired
    assert model.standing(SHUTDOWN - dt.timedelta(days=1)).label == "active, retiring 2027-01-20"
    for day in (SHUTDOWN, SHUTDOWN + dt.timedelta(days=400)):
        gone = model.standing(day)
        assert gone.retired and gone.notice == "retired 2027-01-20; successor dated/talk-2" and gone.label == "retired 2027-01-20"
    assert model.status == "active"  # the declared status is untouched: the day decides
    declared = acme().resolve("acme/voice-2")
    assert declared.standing(dt.date(2030, 1, 1)).status == "active"  # no shutdown: never retires by date


def test_the_day_is_injectable(monkeypatch):
    monkeypatch.setenv("VOXWATCH_TODAY", "2027-01-20")
    assert Registry.default().day == SHUTDOWN
    assert Registry.default().standing(Registry.default().resolve(OPENAI_REALTIME)).retired
    assert Registry.default(today=dt.date(2026, 12, 1)).day == dt.date(2026, 12, 1)  # given beats the variable
    monkeypatch.setenv("VOXWATCH_TODAY", "next tuesday")
    with pytest.raises(RegistryError, match=r"VOXWATCH_TODAY must be a date \(YYYY-MM-DD\), got 'next tuesday'"):
        Registry.default().day
    monkeypatch.delenv("VOXWATCH_TODAY")
    assert Registry.default().day == dt.datetime.now(dt.timezone.utc).date()


def _plan(registry: Registry, models: list[str]):
    config = load(environ={})
    return plan_tick(config, registry, Catalog([bundled_root()]), models=models, sample_size=2, seed=1)


def test_a_retired_model_is_never_scheduled_and_a_retiring_one_is_warned_about(monkeypatch):
    for vendor in ("OPENAI", "CARTESIA"):
        monkeypatch.setenv(f"VOXWATCH_{vendor}_API_KEY", "k-test")
    models = [OPENAI_REALTIME, "openai/whisper-1", "cartesia/sonic-3.5", "cartesia/sonic-3.5-2026-05-04"]
    before = _plan(Registry.default(today=dt.date(2026, 11, 1)), models)
    assert {t.model.id for t in before.tasks} == {OPENAI_REALTIME, "openai/whisper-1", "cartesia/sonic-3.5-2026-05-04"}
    assert before.skipped == ["skipped cartesia/sonic-3.5: retired; successor cartesia/sonic-3.5-2026-05-04"]
    assert before.warnings == ["warning: openai/gpt-realtime-2025-08-28 is retiring 2027-01-20; successor openai/gpt-realtime-2.1"]
    after = _plan(Registry.default(today=SHUTDOWN), models)
    assert {t.model.id for t in after.tasks} == {"openai/whisper-1", "cartesia/sonic-3.5-2026-05-04"}
    assert f"skipped {OPENAI_REALTIME}: retired 2027-01-20; successor openai/gpt-realtime-2.1" in after.skipped
    assert after.warnings == ["warning: openai/whisper-1 is retiring 2027-02-26; successor openai/gpt-transcribe:http"]
    # the retired model stays registered (its stored rows keep their registry entry) but never runs
    assert Registry.default(today=SHUTDOWN).resolve(OPENAI_REALTIME).id == OPENAI_REALTIME


def test_a_retired_instrument_is_refused_with_its_successor(monkeypatch):
    monkeypatch.setenv("VOXWATCH_OPENAI_API_KEY", "k-test")
    config = load(environ={"VOXWATCH_BOARDS_TTS_INSTRUMENT": "openai/whisper-1"})
    with pytest.raises(PlanError, match="instrument openai/whisper-1 is retired 2027-02-26; successor openai/gpt-transcribe:http"):
        load_instrument(config, Registry.default(today=dt.date(2027, 2, 26)))


def test_key_status_comes_from_the_environment(monkeypatch):
    model = acme().resolve("acme/voice-2")
    monkeypatch.delenv("VOXWATCH_ACME_API_KEY", raising=False)
    assert not model.key_is_set()
    monkeypatch.setenv("VOXWATCH_ACME_API_KEY", "k-123")
    assert model.key_is_set()
