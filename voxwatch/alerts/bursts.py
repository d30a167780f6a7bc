"""Confirmation bursts (docs/ALERTS.md "Confirmation bursts"): when a sequential rule turns pending,
the series' panel is measured again at once, so a pending alert is confirmed or cleared by a fresh
observation within minutes instead of at the next tick. Bounded, because each burst costs clips,
and money where the registry records the model's list price (metrics/price.py)."""

from __future__ import annotations

from typing import Iterable

from voxwatch.config import Alerts
from voxwatch.datasets.manifest import Clip, Prompt
from voxwatch.metrics.price import per_audio_second, per_character
from voxwatch.providers.session.endpoints import base_url, is_loopback
from voxwatch.providers.registry import ModelInfo

NO_PRICE = "no price in the registry"
EMULATOR = "an emulator: no list price applies"


def allowed(alert_bursts: int, day_bursts: int, rules: Alerts) -> bool:
    """Another burst for a pending alert that had `alert_bursts` already, on a series that had
    `day_bursts` this UTC day: at most bursts_per_alert and bursts_per_day."""
    return alert_bursts < rules.bursts_per_alert and day_bursts < rules.bursts_per_day


def serves_emulator(model: ModelInfo) -> bool:
    """The model's vendor is reached on a loopback address here (VOXWATCH_<VENDOR>_BASE_URL, or its
    registered server): its rows are emulator rows, and a burst of them costs no money."""
    return is_loopback(base_url(model.vendor, model.base_url or ""))


def clip_price(model: ModelInfo, item: Clip | Prompt) -> float | None:
    """What measuring one item costs at the model's list price: an STT clip its price per audio hour
    times the clip's duration, a TTS prompt its price per character times the prompt's characters;
    None without a price, or for S2S (the reply's length, billed too, is not known before)."""
    if model.price is None or model.board == "s2s":
        return None
    if isinstance(item, Clip) and model.board == "stt":
        per_s = per_audio_second(model.price)
        return None if per_s is None else per_s * item.duration_s
    if isinstance(item, Prompt) and model.board == "tts":
        per_char = per_character(model.price)
        return None if per_char is None else per_char * len(item.text)
    return None


def price_per_clip(items: Iterable[tuple[ModelInfo, Clip | Prompt]]) -> tuple[float | None, str]:
    """A burst's mean price per clip over its planned (model, item) pairs, or None with the reason."""
    prices = []
    for model, item in items:
        if serves_emulator(model):
            return None, EMULATOR
        price = clip_price(model, item)
        if price is None:
            return None, NO_PRICE
        prices.append(price)
    return (sum(prices) / len(prices), "") if prices else (None, NO_PRICE)


def cost(panel_clips: int, price_per_clip: float | None, why_none: str = NO_PRICE) -> str:
    """What one burst costs, in words: its clips, and money where a price is known (why_none where not)."""
    money = why_none if price_per_clip is None else f"~${panel_clips * price_per_clip:.4f}"
    return f"{panel_clips} extra clips ({money})"
