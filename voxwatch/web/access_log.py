"""`voxwatch serve --access-log`: uvicorn's line per request, with a rater's token masked.

A rater's link (/rate/<token>/...) is their credential; the access log would otherwise write it on
every request they make. uvicorn's access record carries the path as its third argument (client,
method, path, HTTP version, status), so a filter on the access handler masks it there.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from uvicorn.config import LOGGING_CONFIG

from voxwatch.web.rating import logged_path

PATH_ARG = 2  # uvicorn.protocols: (client_addr, method, full_path, http_version, status_code)


class MaskedTokens(logging.Filter):
    """Rewrites an access record's path as rating.logged_path shows it; passes every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) > PATH_ARG and isinstance(args[PATH_ARG], str):
            record.args = args[:PATH_ARG] + (logged_path(args[PATH_ARG]),) + args[PATH_ARG + 1:]
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's own logging config with MaskedTokens on its access handler."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["rater_tokens"] = {"()": MaskedTokens}
    config["handlers"]["access"]["filters"] = ["rater_tokens"]
    return config
