"""The operator's token: what opens operator data on the web (the raw preference ratings).

Raw ratings say who rated what, each pair's configurations and which pairs are gold: shown to a
rater they would unblind the study (docs/PREFERENCE.md), so they are never public. The export is
served only to a request carrying `Authorization: Bearer <token>` where the token is the server's
VOXWATCH_OPERATOR_TOKEN; without one configured it is not served at all (the CLI's `preference
ratings export` stays the operator's way). The token is compared in constant time and never logged.
"""

from __future__ import annotations

import hmac
import os
from typing import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request

TOKEN_VARIABLE = "VOXWATCH_OPERATOR_TOKEN"
NOT_SERVED = ("The ratings export is operator data and this server has no operator token "
              f"({TOKEN_VARIABLE}); use `voxwatch preference ratings export`.")
REFUSED = "The ratings export needs this server's operator token: Authorization: Bearer <token>."


def token_from(env: Mapping[str, str] = os.environ) -> str | None:
    """The configured operator token, or None (unset or blank: operator data is not served)."""
    return env.get(TOKEN_VARIABLE, "").strip() or None


def require(request: Request) -> None:
    """Passes for a request bearing the operator token; else 404 (none configured) or 401."""
    expected: str | None = request.app.state.operator_token
    if expected is None:
        raise HTTPException(404, NOT_SERVED)
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected.encode()):
        raise HTTPException(401, REFUSED, headers={"WWW-Authenticate": 'Bearer realm="voxwatch operator"'})
