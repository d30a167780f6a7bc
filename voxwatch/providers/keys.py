"""API keys come from the environment only, as VOXWATCH_<VENDOR>_API_KEY, and never print."""

from __future__ import annotations

import os
import re

from voxwatch.foundation.redaction import MASK
from voxwatch.foundation.redaction import scrub as _scrub


class Secret:
    """A key that cannot leak through repr, str, f-strings or logging."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret('{MASK}')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return MASK


def vendor_variable(vendor: str, suffix: str) -> str:
    """VOXWATCH_<VENDOR>_<SUFFIX>: where per-vendor settings live in the environment."""
    return "VOXWATCH_" + re.sub(r"[^A-Z0-9]", "_", vendor.upper()) + "_" + suffix


def key_variable(vendor: str) -> str:
    return vendor_variable(vendor, "API_KEY")


def api_key(vendor: str) -> Secret | None:
    value = os.environ.get(key_variable(vendor), "").strip()
    return Secret(value) if value else None


def agent_name(model_id: str) -> str:
    """`agent/<name>` -> `<name>`: what a deployed agent's environment variables are named by."""
    return model_id.split("/", 1)[1].split(":", 1)[0].split("@", 1)[0]


def agent_token(name: str) -> Secret | None:
    """A deployed agent's optional bearer token (VOXWATCH_AGENT_<NAME>_TOKEN), for the id agent/<name>."""
    value = os.environ.get(vendor_variable(f"agent_{name}", "TOKEN"), "").strip()
    return Secret(value) if value else None


def scrub(text: str, secrets: list[Secret | None]) -> str:
    """Remove every secret's value from text bound for a log, a row or a page (the one scrubber's work)."""
    return _scrub(text, secrets=secrets)


SECRET_VARIABLE = re.compile(r"VOXWATCH_[A-Z0-9_]+_(API_KEY|TOKEN|PASSWORD)")
"""The environment variables whose values are secrets: every vendor's key (and the judge's), every deployed
agent's token and its state endpoint's, the Grafana and operator tokens, the store roles' passwords."""


def configured_secrets(environ=None) -> tuple[Secret, ...]:
    """Every secret configured in the environment (SECRET_VARIABLE), to cut out of a reason that may echo
    something an agent or its endpoint sent back: whichever key it names, none is stored."""
    env = os.environ if environ is None else environ
    return tuple(Secret(v.strip()) for k, v in sorted(env.items()) if SECRET_VARIABLE.fullmatch(k) and v.strip())


def model_secrets(model) -> tuple[Secret, ...]:
    """Every key a model's measurements use, to scrub from whatever is kept: the vendor's, or one
    per part of a cascade (its `secrets()`); none for a model that needs no key."""
    own = getattr(model, "secrets", None)
    if own is not None:
        found = own()
    else:
        found = (api_key(model.vendor),) if model.needs_key else ()
        if getattr(model, "transport", None) is not None:  # a deployed agent's token (providers/agents/line.py)
            found += (agent_token(agent_name(model.id)),)
    return tuple(s for s in found if s is not None)
