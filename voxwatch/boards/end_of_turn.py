"""The STT board's end-of-turn trade-off (METHOD "STT end of turn"): per streaming model and dataset,
the share of clips the STT cut off mid-turn beside the latency its end of turn adds at the real end.

Every figure is a MetricRow field that metrics.series.eot_figures computed; this module only picks
the series (one line each, the streaming STT series) and words them. A model whose protocol has no
end of turn (the registry's `end_of_turn` false) says so, never a blank.
"""

from __future__ import annotations

from dataclasses import dataclass

from voxwatch.metrics.series import MetricRow
from voxwatch.providers.registry import Registry

NO_EVENTS = "no end-of-turn events"
HEADER = ("dataset", "region", "model", "false cut-offs [95% CI]", "eot p50 [95% CI]", "eot p95", "clips")


@dataclass(frozen=True)
class EotLine:
    """One streaming series' end-of-turn figures as a reader shows them (`emits` False: NO_EVENTS)."""
    row: MetricRow
    emits: bool


def eot_lines(rows: list[MetricRow], registry: Registry | None) -> list[EotLine]:
    """The streaming STT series of `rows` (each once, in board order: dataset, region, model), when any
    of them is of a model with end-of-turn events; else none (a board with no such model has no table)."""
    seen: dict[tuple, MetricRow] = {}
    for r in rows:
        if r.board == "stt" and r.protocol == "stt-stream":
            seen.setdefault((r.dataset, r.region, r.model_id, r.method_version), r)
    lines = [EotLine(r, r.eot_clips > 0 or _registered(registry, r.model_id)) for _, r in sorted(seen.items())]
    return lines if any(line.emits for line in lines) else []


def _registered(registry: Registry | None, model_id: str) -> bool:
    return registry is not None and model_id in registry.models and registry.models[model_id].end_of_turn


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def _interval(ci: tuple[float, float] | None, scale: float = 1.0, places: int = 0) -> str:
    return "" if ci is None else f" [{ci[0] * scale:.{places}f}, {ci[1] * scale:.{places}f}]"


def cells(line: EotLine) -> tuple[str, ...]:
    """One line of the table (HEADER's columns)."""
    r = line.row
    if not line.emits:
        return (r.dataset, r.region, r.model_id, NO_EVENTS, "", "", "")
    share = "n/a" if r.eot_false_cutoff_share is None else \
        f"{100 * r.eot_false_cutoff_share:.1f}%" + _interval(r.eot_false_cutoff_share_ci, 100, 1)
    return (r.dataset, r.region, r.model_id, share, _ms(r.eot_p50) + _interval(r.eot_p50_ci), _ms(r.eot_p95),
            str(r.eot_clips))


LEGEND = ("  end of turn: the STT's own end-of-turn events (METHOD \"STT end of turn\"): false cut-offs are the clips "
          "it ended the turn in while the caller was still speaking (the noisegap datasets hold a 0.5 s mid-turn "
          "pause); eot is ms from the end of speech to its end of turn: fewer cut-offs usually cost latency")
