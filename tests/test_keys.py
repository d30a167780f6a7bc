import logging

from voxwatch.providers.keys import Secret, api_key, key_variable, scrub

PLANTED = "sk-planted-0123456789abcdefXYZ"


def test_keys_come_from_the_environment_by_vendor(monkeypatch):
    monkeypatch.setenv("VOXWATCH_ELEVEN_LABS_API_KEY", PLANTED)
    assert key_variable("eleven-labs") == "VOXWATCH_ELEVEN_LABS_API_KEY"
    assert api_key("eleven-labs").reveal() == PLANTED
    monkeypatch.setenv("VOXWATCH_ACME_API_KEY", "  ")
    assert api_key("acme") is None


def test_a_secret_never_prints(caplog):
    secret = Secret(PLANTED)
    logging.getLogger("t").warning("using %s and %r and %s", secret, secret, f"{secret}")
    assert PLANTED not in caplog.text and PLANTED not in repr([secret]) and PLANTED not in str({"k": secret})
    assert scrub(f"401 Unauthorized for key {PLANTED}", [secret, None]) == "401 Unauthorized for key ***"
