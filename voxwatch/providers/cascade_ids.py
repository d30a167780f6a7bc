"""Cascade ids: `cascade/<stt id>+<llm>+<tts id>`, one speech-to-speech configuration per id.

A cascade is built from ids the registry already has, so it is not listed in registry.toml: the
STT and the TTS must be registered (and not retired), and `<llm>` is `<vendor>/<model>` of an
OpenAI-compatible chat endpoint (reached through VOXWATCH_<VENDOR>_BASE_URL and _API_KEY, as every
adapter; OpenAI's own URL is known) or `scripted-baseline`, the deterministic agent that follows
the scenario's script (scripted_responder.py: a baseline, never a model). The chat model's name
obeys its vendor's versioning rule as a registered id does: a vendor that publishes dated
snapshots must be pinned to one, so a cascade's series never silently changes model.

Example: `cascade/deepgram/nova-3+openai/gpt-4.1-mini-2025-04-14+cartesia/sonic-3.5-2026-05-04`.
No component id may hold a "+" (none does).
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from voxwatch.providers.keys import Secret, api_key
from voxwatch.providers.registry import _FLOATING, _ID, ModelInfo, RegistryError

if TYPE_CHECKING:
    from voxwatch.providers.registry import Registry

PREFIX = "cascade/"
SCRIPTED = "scripted-baseline"
ADAPTER = "voxwatch.providers.s2s.cascade:Cascade"
RANK = {"active": 0, "early-access": 1, "retired": 2}


@dataclasses.dataclass(frozen=True)
class CascadeInfo(ModelInfo):
    """A cascade's registry entry, made from its components' (its keys are theirs)."""

    stt: ModelInfo | None = None
    llm: str = SCRIPTED
    tts: ModelInfo | None = None

    @property
    def version(self) -> str | None:
        return None  # its components' ids carry theirs; the '@' in them is not the cascade's

    @property
    def vendor_model(self) -> str:
        return self.id[len(PREFIX):]

    @property
    def llm_vendor(self) -> str | None:
        return None if self.llm == SCRIPTED else self.llm.split("/", 1)[0]

    def key_is_set(self) -> bool:
        return (self.stt.key_is_set() and self.tts.key_is_set()
                and (self.llm_vendor is None or api_key(self.llm_vendor) is not None))

    def secrets(self) -> tuple[Secret | None, ...]:
        """Every key the cascade uses, for the scrubber (the runner's list is per vendor)."""
        vendors = [m.vendor for m in (self.stt, self.tts) if m.needs_key] + [v for v in [self.llm_vendor] if v]
        return tuple(api_key(v) for v in vendors)


def is_cascade(model_id: str) -> bool:
    return model_id.startswith(PREFIX)


def _check_llm(llm: str, registry: "Registry") -> None:
    if llm == SCRIPTED:
        return
    if not _ID.match(llm) or "@" in llm or _FLOATING.search(llm):
        raise RegistryError(f"{llm!r} is not an exact chat model id (<vendor>/<model>, versioned)")
    vendor, model = llm.split("/", 1)
    info = registry.vendors.get(vendor)
    if info is not None and info.snapshots == "dated" and not re.search(info.pattern or "", model):
        raise RegistryError(f"{llm!r} is a floating alias: {vendor} publishes dated snapshots (a name matching "
                            f"{info.pattern!r}); pin one")


def resolve_cascade(model_id: str, registry: "Registry") -> CascadeInfo:
    """The entry of a cascade id, checked against the registry; RegistryError when it is not one."""
    parts = model_id[len(PREFIX):].split("+")
    if len(parts) != 3:
        raise RegistryError(f"{model_id!r}: a cascade id is cascade/<stt id>+<llm>+<tts id>")
    stt, llm, tts = registry.resolve(parts[0]), parts[1], registry.resolve(parts[2])
    if stt.board != "stt" or tts.board != "tts":
        raise RegistryError(f"{model_id!r}: {stt.id} must be an STT and {tts.id} a TTS")
    _check_llm(llm, registry)
    status = max((stt.status, tts.status), key=RANK.__getitem__)
    local = llm == SCRIPTED and stt.region == tts.region == "local"
    return CascadeInfo(
        id=model_id, board="s2s", vendor="cascade", protocol="s2s", adapter=ADAPTER, status=status,
        region="local" if local else "vendor", needs_key=llm != SCRIPTED or stt.needs_key or tts.needs_key,
        voice=tts.voice, exclusions=(), checked=min(d for d in (stt.checked, tts.checked) if d),
        source=f"composed of {stt.id}, {llm} and {tts.id}",
        shutdown=min((d for d in (stt.shutdown, tts.shutdown) if d), default=None),
        session_limit_unknown="a cascade keeps the conversation as its chat history; it has no session to expire",
        baseline=llm == SCRIPTED, stt=stt, llm=llm, tts=tts)
