"""Webhook notifications of alerts firing and resolving, with retries; every attempt is recorded.

A webhook's URL is a secret (a Slack incoming-webhook URL is its own credential): it is read from
the environment variable the config names, and never stored, logged or shown. Deliveries are
recorded under the webhook's name, and an error message has the URL cut out of it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Mapping
import httpx
import psycopg

from voxwatch.config import Alerts, Webhook
from voxwatch.foundation.redaction import scrub

from voxwatch.alerts import store
from voxwatch.alerts.store import Alert

if TYPE_CHECKING:
    from voxwatch.alerts.evaluate import Transition

log = logging.getLogger(__name__)
RETRY_STATUS = frozenset({429}) | frozenset(range(500, 600))


@dataclass(frozen=True)
class Delivery:
    """How one notification to one webhook ended."""
    alert_id: int
    event: str
    target: str
    attempts: int
    ok: bool
    status_code: int | None
    error: str | None


def payload(webhook: Webhook, event: str, alert: Alert) -> dict:
    """slack: {"text": one line} (Slack's incoming webhooks, and the many tools that take its shape);
    json: {"event": ..., "alert": every column of the alert row}."""
    if webhook.format == "slack":
        return {"text": f"[{event.upper()}] {alert.summary}"}
    record = asdict(alert)
    record.pop("streak")  # lifecycle bookkeeping, not a fact about the alert
    return {"event": event, "alert": record}


def deliver(conn: psycopg.Connection, transitions: list[Transition], rules: Alerts,
            environ: Mapping[str, str]) -> list[Delivery]:
    """Send each transition to every configured webhook."""
    if not transitions or not rules.webhooks:
        return []
    out = []
    with httpx.Client(timeout=rules.delivery_timeout_s) as client:
        for t in transitions:
            for hook in rules.webhooks:
                out.append(_send(conn, client, hook, t.event, t.alert, rules, environ.get(hook.url_env, "").strip()))
    return out


def _send(conn: psycopg.Connection, client: httpx.Client, hook: Webhook, event: str, alert: Alert, rules: Alerts,
          url: str) -> Delivery:
    """Up to delivery_attempts tries, backing off on a connection error, a timeout, 429 or 5xx."""
    body = payload(hook, event, alert)
    attempt, status, error = 0, None, None
    while attempt < rules.delivery_attempts:
        attempt += 1
        status, error, retry = None, None, False
        if not url:
            error = f"the environment variable {hook.url_env} (this webhook's URL) is not set"
        else:
            try:
                status = client.post(url, json=body).status_code
                retry = status in RETRY_STATUS
                if not 200 <= status < 300:
                    error = f"HTTP {status}"
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:  # a malformed URL: no retry can help
                error = f"{type(exc).__name__}: {_without(str(exc), url)}"
            except httpx.TransportError as exc:  # refused, reset, timed out: perhaps transient
                error, retry = f"{type(exc).__name__}: {_without(str(exc), url)}", True
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {_without(str(exc), url)}"
        store.record_delivery(conn, alert.id, event, hook.name, attempt, time.time(), error is None, status, error)
        if error is None:
            log.info("alert %d %s: delivered to webhook %s (attempt %d)", alert.id, event, hook.name, attempt)
            return Delivery(alert.id, event, hook.name, attempt, True, status, None)
        log.warning("alert %d %s: webhook %s attempt %d failed: %s", alert.id, event, hook.name, attempt, error)
        if not retry:
            break
        if attempt < rules.delivery_attempts:
            time.sleep(rules.delivery_backoff_s * 2 ** (attempt - 1))
    return Delivery(alert.id, event, hook.name, attempt, False, status, error)


def _without(text: str, url: str) -> str:
    """The text with the URL, and each part of it that could carry its secret, cut out (httpx's
    messages do not quote the URL today; this keeps it so if one ever does)."""
    return scrub(text, opaque_urls=[url])[:300]
