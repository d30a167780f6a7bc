"""How numbers read on the pages: one place, so every table rounds the same way.

Latencies in ms to 0.1 ms, real-time factors to 0.001, rates to 0.1 %, WER to 0.01 % (a WER
difference of a tenth of a point is worth seeing). The API and downloads carry full precision.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from urllib.parse import quote, urlencode

from markupsafe import Markup, escape

from voxwatch.web.conversation_views import conversation_url, recording_url
from voxwatch.web.views import LABELS, UNITS, metric_head
from voxwatch.metrics.published import signed

NA = "n/a"


def value(v: float | None, metric: str) -> str:
    if v is None:
        return NA
    return f"{v:.3f}" if UNITS.get(metric) == "x" else f"{v:.1f}"


def interval(ci: tuple[float, float] | None, metric: str) -> str:
    return NA if ci is None else f"[{value(ci[0], metric)}, {value(ci[1], metric)}]"


def pct(v: float | None, digits: int = 1) -> str:
    return NA if v is None else f"{100 * v:.{digits}f}%"


def wer(v: float | None) -> str:
    return pct(v, 2)


def wer_interval(ci: tuple[float, float] | None) -> str:
    return NA if ci is None else f"[{wer(ci[0])}, {wer(ci[1])}]"


def points(v: float | None) -> str:
    """A difference in percentage points (degraded minus clean WER), signed, to 0.01."""
    return NA if v is None else f"{signed(v, 2)} pp"


def points_interval(ci: tuple[float, float] | None) -> str:
    return NA if ci is None else f"[{signed(ci[0], 2)}, {signed(ci[1], 2)}]"


def signed_ms(v: float | None) -> str:
    return NA if v is None else f"{signed(v, 1)} ms"


def rate_interval(ci: tuple[float, float] | None) -> str:
    return NA if ci is None else f"[{pct(ci[0])}, {pct(ci[1])}]"


def stat(v: float | None, statistic: str) -> str:
    """A conversation board statistic: V2V and the silence gap in ms, pass^k as a chance, speech quality
    as a MOS, the rest rates."""
    if v is None:
        return NA
    if statistic == "quality_mos":
        return mos(v)
    if statistic.startswith(("v2v_", "barge_in_stop_")):
        return f"{value(v, 'v2v_ms')} ms"
    if statistic == "silence_gap_s":
        return f"{v * 1000:.1f} ms"
    return f"{v:.2f}" if statistic.startswith("pass_hat_") else pct(v)


def mos(v: float | None) -> str:
    """A speech quality score on the 1-5 scale, to 0.01 (as the TTS and S2S boards show it)."""
    return NA if v is None else f"{v:.2f}"


def stat_interval(ci: tuple[float, float] | None, statistic: str) -> str:
    return NA if ci is None else f"[{stat(ci[0], statistic)}, {stat(ci[1], statistic)}]"


def verdict(passed: bool | None) -> str:
    return {True: "pass", False: "fail"}.get(passed, "undecided")


def mark(flag: bool | None, yes: str) -> str:
    """A turn's measured yes/no fact: the word when it happened, 'no' when not, '-' when not measured."""
    return "-" if flag is None else yes if flag else "no"


def when(ts: float | None) -> str:
    return "-" if ts is None else datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def age(seconds: float) -> str:
    """An age in words at the coarsest sensible unit: '40 s', '12 min', '5 h', '3 days'."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def alert_value(v: float | None, kind: str) -> str:
    """An alert's recent or baseline figure: a median in ms, a pooled WER, or a rate."""
    if v is None:
        return NA
    if kind == "latency":
        return f"{v:.1f} ms"
    return wer(v) if kind == "wer" else pct(v)


def p_value(p: float | None) -> str:
    return NA if p is None else f"{p:.2g}"


def model_url(model_id: str, **query: str | None) -> str:
    """The model page; the id's '/', ':' and '@' stay as they are (the route takes the rest of the path)."""
    params = {k: v for k, v in query.items() if v}
    return "/model/" + quote(model_id, safe="/:@") + (f"?{urlencode(params)}" if params else "")


def model_name(model_id: str) -> Markup:
    """A model id that a narrow column may break after its '/' and ':' (not inside a word)."""
    return Markup(re.sub(r"([/:@])", r"\1<wbr>", str(escape(model_id))))


def history_url(model_id: str) -> str:
    return "/api/v1/models/" + quote(model_id, safe="/:@") + "/history"


def hours_page_url(model_id: str, **query: str | None) -> str:
    """A model's hour-of-day heat map (the route before the model page's takes the id's rest of the path)."""
    params = {k: v for k, v in query.items() if v}
    return "/model/" + quote(model_id, safe="/:@") + "/hours" + (f"?{urlencode(params)}" if params else "")


def hours_url(model_id: str, **query: str | None) -> str:
    """The API's hours document of a model (?format=csv: its CSV)."""
    params = {k: v for k, v in query.items() if v}
    return "/api/v1/models/" + quote(model_id, safe="/:@") + "/hours" + (f"?{urlencode(params)}" if params else "")


def query(**params: str | None) -> str:
    """A query string of the non-empty parameters (links that keep the page's filters)."""
    kept = {k: v for k, v in params.items() if v}
    return "?" + urlencode(kept) if kept else "?"


def metric_label(metric: str) -> str:
    return LABELS.get(metric, metric)


FILTERS = {"metric_label": metric_label, "metric_head": metric_head, "points": points, "points_interval": points_interval, "signed_ms": signed_ms, "value": value, "interval": interval, "pct": pct, "wer": wer, "wer_interval": wer_interval, "rate_interval": rate_interval, "when": when, "age": age,
           "alert_value": alert_value, "p_value": p_value, "stat": stat, "stat_interval": stat_interval,
           "verdict": verdict, "mark": mark, "model_name": model_name, "mos": mos}
GLOBALS = {"model_url": model_url, "history_url": history_url, "hours_url": hours_url, "hours_page_url": hours_page_url, "query": query, "conversation_url": conversation_url,
           "recording_url": recording_url}
