"""Where a cloud adapter connects: the vendor's URL, or an override such as a loopback emulator.

`VOXWATCH_<VENDOR>_BASE_URL` points a vendor at another server without touching adapter code;
rows measured against a loopback address are labelled `emulator` and never reach a leaderboard.
"""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import urlsplit


def base_url_variable(vendor: str) -> str:
    return "VOXWATCH_" + re.sub(r"[^A-Z0-9]", "_", vendor.upper()) + "_BASE_URL"


def base_url(vendor: str, default: str) -> str:
    return os.environ.get(base_url_variable(vendor), "").strip().rstrip("/") or default


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
