"""Confirmation bursts (docs/ALERTS.md "Confirmation bursts"): when a sequential rule turns pending,
the series' panel is measured again at once, so a pending alert is confirmed or cleared by a fresh
observation within minutes instead of at the next tick. Bounded, because each burst costs clips."""

from __future__ import annotations

from voxwatch.config import Alerts


def allowed(alert_bursts: int, day_bursts: int, rules: Alerts) -> bool:
    """Another burst for a pending alert that had `alert_bursts` already, on a series that had
    `day_bursts` this UTC day: at most bursts_per_alert and bursts_per_day."""
    return alert_bursts < rules.bursts_per_alert and day_bursts < rules.bursts_per_day


def cost(panel_clips: int, price_per_clip: float | None) -> str:
    """What one burst costs, in words: its clips, and money where a price is known (the registry
    records none today, so normally clips only)."""
    money = "no price in the registry" if price_per_clip is None else f"~${panel_clips * price_per_clip:.4f}"
    return f"{panel_clips} extra clips ({money})"
