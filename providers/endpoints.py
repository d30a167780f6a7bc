"""Where and how a cloud adapter connects: the vendor's URL (or an override such as a loopback
emulator), its key, and one translation of a refused WebSocket handshake.

`VOXWATCH_<VENDOR>_BASE_URL` points a vendor at another server without touching adapter code;
rows measured against a loopback address are labelled `emulator` and never reach a leaderboard.
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

import websockets

from .base import ProviderError
from .keys import Secret, api_key, vendor_variable


def base_url(vendor: str, default: str) -> str:
    return os.environ.get(vendor_variable(vendor, "BASE_URL"), "").strip().rstrip("/") or default


def require_key(vendor: str) -> Secret:
    key = api_key(vendor)
    if key is None:
        raise ProviderError("no API key")
    return key


async def open_websocket(url: str, headers: dict[str, str], vendor: str):
    """A WebSocket with the vendor's auth headers; a refused handshake becomes a ProviderError."""
    try:
        return await websockets.connect(url, max_size=None, compression=None, additional_headers=headers)
    except websockets.InvalidStatus as exc:
        raise ProviderError(f"{vendor} refused the connection: HTTP {exc.response.status_code}") from None


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
