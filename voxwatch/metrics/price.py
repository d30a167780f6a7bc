"""List prices made comparable across a board (docs/METHOD.md "Price"): one figure per model, in one
unit per board, from the vendor's list price in the unit the vendor prices in.

A price is registry metadata, not a measurement: it changes no measured definition (no method
version). STT is shown as USD per 1,000 audio minutes (as Artificial Analysis shows it), TTS as USD
per 1M characters, S2S as USD per hour of conversation: half an hour of the caller's audio in and
half an hour of the model's audio out. A price per 1M audio tokens has no board figure: how many
tokens an hour of audio is billed as is the vendor's, and voxwatch states no rate it has not
measured.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

UNITS = {"audio_hour": "audio hour", "audio_minute": "audio minute", "1m_characters": "1M characters",
         "1m_audio_tokens": "1M audio tokens"}
"""The units a list price may be given in (registry `price_unit`), and how each reads."""
SHORT_UNITS = {"audio_hour": "hour", "audio_minute": "min", "1m_characters": "1M chars", "1m_audio_tokens": "1M tokens"}
"""Each unit as a narrow table cell reads it (`voxwatch providers list`, whose legend says they are of audio)."""
BOARD_UNITS = {"stt": ("audio_hour", "audio_minute"), "tts": ("1m_characters",),
               "s2s": ("audio_hour", "audio_minute", "1m_audio_tokens")}
"""Which units fit which board: speech in is priced by its duration, text in by its characters."""
BOARD_FIGURE_UNIT = {"stt": "USD per 1,000 audio minutes", "tts": "USD per 1M characters",
                     "s2s": "USD per hour of conversation"}
CONVERSATION_INPUT_SHARE = 0.5
"""An hour of conversation: this share of it is the caller's audio in, the rest the model's audio out."""
_PER_HOUR = {"audio_hour": 1.0, "audio_minute": 60.0}


@dataclass(frozen=True)
class Price:
    """A model's list price as its vendor publishes it: USD per `unit` (S2S: of input audio, and
    `output_usd` per unit of output audio), where it was read and when."""
    usd: float
    unit: str
    source: str
    checked: dt.date
    output_usd: float | None = None

    def list_text(self) -> str:
        """The list price as the vendor states it: "$0.006 per audio minute", "$10 in / $20 out per 1M audio tokens"."""
        amount = f"${self.usd:g}" if self.output_usd is None else f"${self.usd:g} in / ${self.output_usd:g} out"
        return f"{amount} per {UNITS[self.unit]}"

    def short_text(self) -> str:
        """The list price in a narrow cell: "$0.006/min", "$50/1M chars", "$10 in, $20 out/1M tokens"."""
        amount = f"${self.usd:g}" if self.output_usd is None else f"${self.usd:g} in, ${self.output_usd:g} out"
        return f"{amount}/{SHORT_UNITS[self.unit]}"


def problem(board: str, usd: object, unit: object, output_usd: object) -> str | None:
    """Why a price does not hold for a model of `board`, or None: a number >= 0 in a unit that fits
    the board; an S2S price has its output price too, no other board's has one."""
    for name, value in (("price_usd", usd), ("price_output_usd", output_usd)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            return f"{name} must be a number of US dollars, got {value!r}"
        if value < 0:
            return f"{name} must not be negative, got {value!r}"
    if unit not in UNITS:
        return f"price_unit must be one of {tuple(UNITS)}, got {unit!r}"
    if unit not in BOARD_UNITS[board]:
        return f"price_unit {unit!r} does not fit the {board} board (one of {BOARD_UNITS[board]})"
    if board == "s2s" and output_usd is None:
        return "an S2S price needs price_output_usd (per unit of output audio) beside price_usd (input)"
    if board != "s2s" and output_usd is not None:
        return f"price_output_usd is an S2S model's output price; this model is on the {board} board"
    return None


def board_figure(price: Price, board: str) -> float | None:
    """The price in its board's unit (BOARD_FIGURE_UNIT), or None where the list unit has no conversion."""
    if board == "tts":
        return price.usd
    if price.unit not in _PER_HOUR:
        return None
    per_hour = _PER_HOUR[price.unit]
    if board == "stt":
        return price.usd * per_hour * 1000 / 60
    share = CONVERSATION_INPUT_SHARE
    return per_hour * (share * price.usd + (1 - share) * (price.output_usd or 0.0))


def per_audio_second(price: Price) -> float | None:
    """USD per second of input audio (STT): what one clip costs is this times its duration."""
    return price.usd * _PER_HOUR[price.unit] / 3600 if price.unit in _PER_HOUR and price.output_usd is None else None


def per_character(price: Price) -> float | None:
    """USD per character of input text (TTS)."""
    return price.usd / 1e6 if price.unit == "1m_characters" else None


def is_stale(checked: dt.date, day: dt.date, max_age_days: int) -> bool:
    """A check older than `max_age_days` on `day` is stale: the vendor may have changed it since."""
    return (day - checked).days > max_age_days
