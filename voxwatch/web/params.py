"""Query parameters checked against their allowed values: bad input is a 400 that says what is allowed."""

from __future__ import annotations

from typing import Iterable

from starlette.exceptions import HTTPException
from starlette.requests import Request


def choice(request: Request, name: str, allowed: Iterable[str], default: str | None) -> str | None:
    """The parameter's value if it is one of `allowed`; `default` when it is absent or empty."""
    value = request.query_params.get(name) or default
    options = list(allowed)
    if value is not None and value not in options:
        raise HTTPException(400, f"{name} must be one of {', '.join(options)}; got {value!r}")
    return value


def text(request: Request, name: str) -> str | None:
    return request.query_params.get(name) or None
