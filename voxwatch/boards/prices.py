"""A model's price as every board shows it (CLI table, web pages, API, CSV): its registry list price
made comparable by metrics.price, with its source, the date it was checked, and whether that check
is stale on the registry's day.

Prices attach to a model id, and boards hold no emulator rows (store/series_data.py), so an emulator
row never shows one; a cascade, a local engine or a model whose vendor's price was not found has none.
"""

from __future__ import annotations

from dataclasses import dataclass

from voxwatch.metrics.price import BOARD_FIGURE_UNIT, board_figure
from voxwatch.providers.registry import Registry, RegistryError

FIELDS = ("price", "price_unit", "price_source", "price_checked", "price_stale", "price_list")
"""The price fields of an API or CSV row: the board figure and its unit, where and when the list
price was read, whether that is older than a check is trusted, and the list price as the vendor states it."""


@dataclass(frozen=True)
class ShownPrice:
    figure: float | None  # in `unit`; None where the list unit has no conversion (per 1M audio tokens)
    unit: str
    list_text: str
    source: str
    checked: str  # ISO date
    stale: bool

    def cell(self) -> str:
        """A table cell: "$5.00", "$5.00 (stale)", or the list price where there is no board figure."""
        shown = f"${self.figure:,.2f}" if self.figure is not None else self.list_text
        return shown + (" (stale)" if self.stale else "")

    def fields(self) -> dict:
        return dict(zip(FIELDS, (self.figure, self.unit, self.source, self.checked, self.stale, self.list_text)))


def shown_price(registry: Registry | None, model_id: str) -> ShownPrice | None:
    """The price a board shows for a model, or None (not registered, or no list price recorded)."""
    if registry is None:
        return None
    try:
        info = registry.resolve(model_id)
    except RegistryError:
        return None
    if info.price is None:
        return None
    return ShownPrice(board_figure(info.price, info.board), BOARD_FIGURE_UNIT[info.board], info.price.list_text(),
                      info.price.source, info.price.checked.isoformat(), info.price_stale(registry.day))


def price_fields(registry: Registry | None, model_id: str) -> dict:
    """A row's price fields (FIELDS), all None where the model has no price."""
    shown = shown_price(registry, model_id)
    return shown.fields() if shown else dict.fromkeys(FIELDS)
