from pathlib import Path

import pytest

from voxwatch.config import ConfigError, load


def test_the_packaged_default_is_the_embedded_setup():
    cfg = load(environ={})
    assert cfg.store_url == "sqlite:///var/voxwatch.sqlite"
    assert cfg.region == "local" and cfg.sample_size == 10
    assert "pocketsphinx/en-us@5.1.1" in cfg.boards["stt"].models
    assert cfg.boards["stt"].datasets == ("stt-recorded-clean", "stt-recorded-phonecodec", "stt-nonspeech")
    assert cfg.boards["tts"].datasets == ("tts-prompts", "tts-empty")


def test_a_file_overrides_only_what_it_names(tmp_path: Path):
    path = tmp_path / "v.toml"
    path.write_text('[run]\nsample_size = 4\n[boards.stt]\ndatasets = ["stt-starter-noise"]\n')
    cfg = load(path, environ={})
    assert cfg.sample_size == 4 and cfg.boards["stt"].datasets == ("stt-starter-noise",)
    assert cfg.boards["stt"].models == load(environ={}).boards["stt"].models
    assert cfg.source == str(path)


def test_environment_overrides_every_key(tmp_path: Path):
    cfg = load(environ={"VOXWATCH_WORKER_REGION": "eu-west", "VOXWATCH_RUN_SAMPLE_SIZE": "25",
                        "VOXWATCH_STORE_URL": f"sqlite:///{tmp_path}/x.sqlite",
                        "VOXWATCH_BOARDS_STT_MODELS": "pocketsphinx/en-us@5.1.1"})
    assert cfg.region == "eu-west" and cfg.sample_size == 25
    assert cfg.boards["stt"].models == ("pocketsphinx/en-us@5.1.1",)


@pytest.mark.parametrize("text, message", [
    ("[run]\nsample_sise = 3\n", r"\[run\] unknown key 'sample_sise'"),
    ("[runn]\n", r"unknown section \[runn\]"),
    ('[run]\nsample_size = "ten"\n', r"\[run\] sample_size = 'ten': expected a positive integer"),
    ("[run]\nsample_size = 0\n", r"\[run\] sample_size = 0: expected a positive integer"),
    ('[store]\nurl = "mysql://x"\n', r"\[store\] url = 'mysql://x': expected sqlite"),
    ("[boards.stt]\nmodels = 3\n", r"\[boards.stt\] models = 3: expected a list of strings"),
    ("[run\n", r"not valid TOML"),
])
def test_a_bad_file_names_the_key_and_the_problem(tmp_path: Path, text: str, message: str):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as err:
        load(path, environ={})
    assert str(path) in str(err.value)


def test_a_bad_environment_value_names_the_variable():
    with pytest.raises(ConfigError, match="VOXWATCH_RUN_SEED"):
        load(environ={"VOXWATCH_RUN_SEED": "-7"})


def test_a_missing_file_is_a_clear_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load(tmp_path / "nope.toml", environ={})
