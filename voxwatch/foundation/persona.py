"""Personas: who calls, and from where (CONVERSATIONS.md "Personas"; METHOD "Conversations").

A persona is a condition of a conversation, never pooled with another: the caller's eSpeak NG
voice (its language and accent, with an optional `+variant` for the speaker, e.g.
`en-gb-scotland+f3`), the speaking rate, and a background noise the project generates
(voxwatch/foundation/noises.py) or the team recorded (imported, pinned by its sha256:
voxwatch/conversations/noise_library.py) mixed at an SNR over the speech frames (voxwatch/metrics/snr.py). A persona with no
voice, no rate and no noise is the scenario's own pinned audio (`default`); no voice or no rate
keeps the scenario's.

A persona may also behave (METHOD "Caller behaviours"): `barge_in_ms` starts each turn after the
first while the agent is still answering the one before, that long after its reply became
audible; `pause_ms` puts a silence of that length in the middle of each turn (between words);
`fillers` puts that many hesitations ("um", "uh", a repeated word) into each turn's words, which
re-speaks them. Each behaviour is part of the persona's identity, so a barging caller is never
pooled with a patient one.

A persona's identity is its name and the sha256 prefix of what it changes (not its name or
description; `default`, which changes nothing, is its name alone), stored on each conversation row: two runs of "accented-noisy" compare only when
the persona also sounded the same.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from voxwatch.foundation.noises import NOISES
from voxwatch.foundation.text import near_names

NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
VOICE = re.compile(r"^[A-Za-z0-9-]{2,40}(\+[A-Za-z0-9_ -]{1,40})?$")
MIN_WPM, MAX_WPM = 80, 450  # eSpeak NG's speaking-rate range
MIN_SNR, MAX_SNR = -10.0, 40.0
MAX_SEED = 2**32 - 1
MAX_BARGE_IN_MS = 10_000
MIN_PAUSE_MS, MAX_PAUSE_MS = 100, 5_000
MAX_FILLERS = 5
BEHAVIOURS = ("barge_in_ms", "pause_ms", "fillers", "noise_sha256")  # in the identity only when set: older ones hold
SHA256 = re.compile(r"^[0-9a-f]{64}$")
IDENTITY_PREFIX = 12
RECIPE = "voxwatch.foundation.persona v1"  # bump when a rendering changes for the same fields


class PersonaError(ValueError):
    """A persona field that cannot be used; the message names the persona and the field."""


@dataclass(frozen=True)
class Persona:
    name: str
    voice: str | None = None  # an eSpeak NG voice; None: the scenario's
    rate_wpm: int | None = None  # None: the scenario's rate
    noise: str | None = None  # a kind of datasets.noises.NOISES; None: no background
    snr_db: float | None = None  # speech over noise, over the speech frames; required with noise
    seed: int = 0  # draws the noise (with the scenario pin and the turn id)
    description: str = ""
    barge_in_ms: int | None = None  # start each later turn this long after the agent's reply is audible
    pause_ms: int | None = None  # a silence this long in the middle of each turn
    fillers: int = 0  # hesitations per turn ("um", "uh", a repeated word), re-spoken
    noise_sha256: str | None = None  # an imported noise recording's pin (`noise` then names it)

    def __post_init__(self) -> None:
        validate(self)

    @property
    def resynthesized(self) -> bool:
        """Does it speak the words itself (another voice or rate) rather than use the pinned audio?"""
        return self.voice is not None or self.rate_wpm is not None or self.fillers > 0

    @property
    def unchanged(self) -> bool:
        """Neither its audio nor its behaviour differs from the scenario's own caller."""
        return not self.resynthesized and self.noise is None and self.pause_ms is None and self.barge_in_ms is None

    def fields_record(self) -> dict[str, Any]:
        """What the persona changes: the rendering's and the behaviour's inputs (the identity's and the
        cache's); a behaviour left unset is left out, so a persona without one keeps its identity."""
        record: dict[str, Any] = {"voice": self.voice, "rate_wpm": self.rate_wpm, "noise": self.noise,
                                  "snr_db": None if self.snr_db is None else float(self.snr_db), "seed": self.seed}
        for name in BEHAVIOURS:
            if getattr(self, name):
                record[name] = getattr(self, name)
        return record

    @property
    def digest(self) -> str:
        text = json.dumps({"recipe": RECIPE, **self.fields_record()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def identity(self) -> str:
        """name#sha256 prefix; an unchanged persona is its name alone (the scenario pin names its audio)."""
        return self.name if self.unchanged else f"{self.name}#{self.digest[:IDENTITY_PREFIX]}"

    def summary(self) -> str:
        parts = [f"voice {self.voice or '(scenario)'}", f"rate {self.rate_wpm or '(scenario)'}"]
        imported = f" (imported, sha256 {self.noise_sha256[:12]})" if self.noise_sha256 else ""
        parts.append(f"{self.noise}{imported} at {self.snr_db:g} dB SNR" if self.noise else "no noise")
        if self.barge_in_ms is not None:
            parts.append(f"barges in {self.barge_in_ms} ms into each reply")
        if self.pause_ms is not None:
            parts.append(f"pauses {self.pause_ms} ms mid-turn")
        if self.fillers:
            parts.append(f"{self.fillers} filler(s) per turn")
        return ", ".join(parts)


def _fail(persona: Any, field: str, message: str) -> PersonaError:
    return PersonaError(f"persona {getattr(persona, 'name', '?')!r}: {field}: {message}")


def validate(p: Persona) -> None:
    """Every field checked, each error naming the persona and the field and saying what would do."""
    if not isinstance(p.name, str) or not NAME.match(p.name):
        raise PersonaError(f"persona {p.name!r}: name: expected lower-case letters, digits, '.', '_' or '-' "
                           "(at most 64)")
    if p.voice is not None:
        if not isinstance(p.voice, str) or not VOICE.match(p.voice):
            raise _fail(p, "voice", f"{p.voice!r} is not an eSpeak NG voice name (e.g. en-us, en-gb-x-rp, "
                                    "en-029, en-gb-scotland+f3)")
        check_voice(p)
    if p.rate_wpm is not None and (isinstance(p.rate_wpm, bool) or not isinstance(p.rate_wpm, int)
                                   or not MIN_WPM <= p.rate_wpm <= MAX_WPM):
        raise _fail(p, "rate_wpm", f"expected words per minute, an integer from {MIN_WPM} to {MAX_WPM}; "
                                   f"found {p.rate_wpm!r}")
    if p.noise_sha256 is not None and (not isinstance(p.noise_sha256, str) or not SHA256.match(p.noise_sha256)):
        raise _fail(p, "noise_sha256", "expected the imported noise's sha256, 64 lower-case hex digits "
                                       "(voxwatch scenarios noise list)")
    if p.noise_sha256 is not None and (not isinstance(p.noise, str) or p.noise in NOISES or not NAME.match(p.noise)):
        raise _fail(p, "noise", f"noise_sha256 pins an imported noise: set noise to its name, not {p.noise!r}")
    if p.noise is not None and p.noise_sha256 is None and (not isinstance(p.noise, str) or p.noise not in NOISES):
        near = near_names(str(p.noise), NOISES, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise _fail(p, "noise", f"unknown noise {p.noise!r}{hint}; one of {', '.join(NOISES)}, or an imported "
                                "noise's name with its noise_sha256")
    if p.noise is not None and p.snr_db is None:
        raise _fail(p, "snr_db", f"a noise ({p.noise}) needs the SNR to mix it at, in dB")
    if p.noise is None and p.snr_db is not None:
        raise _fail(p, "snr_db", "an SNR without a noise: set noise too, or drop snr_db")
    if p.snr_db is not None and (isinstance(p.snr_db, bool) or not isinstance(p.snr_db, (int, float))
                                 or not MIN_SNR <= p.snr_db <= MAX_SNR):
        raise _fail(p, "snr_db", f"expected a number of dB from {MIN_SNR:g} to {MAX_SNR:g}; found {p.snr_db!r}")
    if isinstance(p.seed, bool) or not isinstance(p.seed, int) or not 0 <= p.seed <= MAX_SEED:
        raise _fail(p, "seed", f"expected an integer from 0 to {MAX_SEED}; found {p.seed!r}")
    if not isinstance(p.description, str):
        raise _fail(p, "description", "expected a string")
    _check_int(p, "barge_in_ms", p.barge_in_ms, 0, MAX_BARGE_IN_MS, "milliseconds into the agent's reply")
    _check_int(p, "pause_ms", p.pause_ms, MIN_PAUSE_MS, MAX_PAUSE_MS, "milliseconds of silence mid-turn")
    _check_int(p, "fillers", p.fillers, 0, MAX_FILLERS, "hesitations per turn", optional=False)


def _check_int(p: Persona, field: str, value: Any, low: int, high: int, what: str, optional: bool = True) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(p, field, f"expected {what}, an integer from {low} to {high}; found {value!r}")


@lru_cache(maxsize=1)
def espeak_voices() -> tuple[frozenset[str], frozenset[str]]:
    """(languages, variants) that eSpeak NG's data directory holds, lower-cased: checked without
    loading the library, so a typo is refused before any audio is rendered."""
    import espeakng_loader

    data = Path(espeakng_loader.get_data_path())
    languages = frozenset(p.name.lower() for p in (data / "lang").rglob("*") if p.is_file())
    variants = frozenset(p.name.lower() for p in (data / "voices" / "!v").iterdir() if p.is_file())
    return languages, variants


def check_voice(p: Persona) -> None:
    language, _, variant = p.voice.partition("+")
    languages, variants = espeak_voices()
    if language.lower() not in languages:
        near = near_names(language.lower(), languages)
        hint = f"; close: {', '.join(near)}" if near else ""
        raise _fail(p, "voice", f"eSpeak NG has no language voice {language!r}{hint}")
    if variant and variant.lower() not in variants:
        near = near_names(variant.lower(), variants)
        hint = f"; close: {', '.join(near)}" if near else ""
        raise _fail(p, "voice", f"eSpeak NG has no voice variant {variant!r}{hint}")


DEFAULT = Persona("default", description="the scenario's own pinned caller audio, unchanged")
BUNDLED: dict[str, Persona] = {p.name: p for p in (
    DEFAULT,
    Persona("accented-noisy", voice="en-gb-scotland", noise="babble", snr_db=10.0, seed=1,
            description="a Scottish English caller in a cafe: 8-talker babble at 10 dB SNR"),
    Persona("fast-quiet", rate_wpm=200, description="the scenario's voice speaking fast (200 wpm), no noise"),
    Persona("hum-5db", noise="hum", snr_db=5.0, seed=2,
            description="the scenario's audio over 50 Hz mains hum at 5 dB SNR"),
    Persona("barge-in", barge_in_ms=300,
            description="the scenario's audio, each later turn's first word 300 ms into the agent's reply"),
    *(Persona(f"pause-{ms}", pause_ms=ms, description=f"the scenario's audio with a {ms} ms pause mid-turn: "
              "with the other pause lengths, the agent's end-of-turn trade-off")
      for ms in (400, 800, 1200)),
    Persona("hesitant", fillers=2, seed=3,
            description="the scenario's voice with two hesitations per turn (um, uh, a repeated word), re-spoken"),
)}

_KNOWN = tuple(f.name for f in fields(Persona))


def from_record(record: Any, where: str) -> Persona:
    """A persona from a decoded file entry; unknown keys and wrong types refused, naming the entry."""
    if not isinstance(record, dict):
        raise PersonaError(f"{where}: expected a table/object of persona fields, found {type(record).__name__}")
    unknown = sorted(set(record) - set(_KNOWN))
    if unknown:
        raise PersonaError(f"{where}: unknown field {', '.join(map(repr, unknown))} (known: {', '.join(_KNOWN)})")
    if "name" not in record:
        raise PersonaError(f"{where}: missing field 'name'")
    try:
        return Persona(**record)
    except PersonaError as exc:
        raise PersonaError(f"{where}: {exc}") from None


def load_personas(path: Path) -> dict[str, Persona]:
    """User personas from a TOML file (`[[persona]]` tables) or a JSON file (a list, or
    `{"personas": [...]}`); a name already taken (bundled or earlier in the file) is refused."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PersonaError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        if path.suffix.lower() == ".toml":
            data = tomllib.loads(raw.decode("utf-8"))
            entries, key = data.get("persona", []), "persona"
        else:
            data = json.loads(raw.decode("utf-8"))
            entries, key = (data.get("personas", []) if isinstance(data, dict) else data), "personas"
    except (UnicodeDecodeError, ValueError) as exc:  # tomllib.TOMLDecodeError and JSONDecodeError are ValueErrors
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise PersonaError(f"{path}: not valid {kind} ({exc})") from None
    if not isinstance(entries, list) or not entries:
        raise PersonaError(f"{path}: no personas (expected a non-empty list under {key!r})")
    out: dict[str, Persona] = {}
    for i, record in enumerate(entries):
        persona = from_record(record, f"{path}: {key}[{i}]")
        if persona.name in BUNDLED or persona.name in out:
            raise PersonaError(f"{path}: {key}[{i}]: the name {persona.name!r} is taken "
                               f"({'bundled' if persona.name in BUNDLED else 'earlier in the file'})")
        out[persona.name] = persona
    return out


def personas(path: Path | None = None) -> dict[str, Persona]:
    """The bundled personas, then the user's from `path`."""
    return {**BUNDLED, **(load_personas(path) if path is not None else {})}


def find(name: str, path: Path | None = None) -> Persona:
    known = personas(path)
    if name not in known:
        near = near_names(name, known, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise PersonaError(f"unknown persona {name!r}{hint}; known: {', '.join(known)}")
    return known[name]


def as_record(p: Persona) -> dict[str, Any]:
    return asdict(p)
