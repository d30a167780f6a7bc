"""One reading of a gRPC status code, for vendors that report failures with one (in an error message
over WebSocket or JSON, as Inworld's `status.code`, or in a gRPC trailer): its code -> the row status.

A gRPC code is read through the HTTP status it corresponds to, as google.rpc.Code documents the
pair for each (googleapis/googleapis google/rpc/code.proto), and that HTTP status through
`endpoints.http_status`, so a refused key, a quota, a server fault or a refused request means the
same row status whichever way the vendor said it.
"""

from __future__ import annotations

from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.endpoints import http_status

OK = 0
HTTP_OF = {
    1: 499,  # CANCELLED: "Client Closed Request"
    2: 500,  # UNKNOWN
    3: 400,  # INVALID_ARGUMENT
    4: 504,  # DEADLINE_EXCEEDED
    5: 404,  # NOT_FOUND
    6: 409,  # ALREADY_EXISTS
    7: 403,  # PERMISSION_DENIED
    8: 429,  # RESOURCE_EXHAUSTED
    9: 400,  # FAILED_PRECONDITION
    10: 409,  # ABORTED
    11: 400,  # OUT_OF_RANGE
    12: 501,  # UNIMPLEMENTED
    13: 500,  # INTERNAL
    14: 503,  # UNAVAILABLE
    15: 500,  # DATA_LOSS
    16: 401,  # UNAUTHENTICATED
}
"""google/rpc/code.proto: each canonical code and its HTTP mapping."""


def grpc_row_status(code: int) -> str:
    """The row status of a failure reported with this gRPC code (an unknown code: UNKNOWN's)."""
    return http_status(HTTP_OF.get(code, 500))


def grpc_failure(vendor: str, code: int, message: str = "") -> ProviderError:
    """A failure the vendor reported with gRPC status `code` and its message (cut short)."""
    return ProviderError(f"{vendor} error: status {code}{': ' + message[:300] if message else ''}",
                         grpc_row_status(code))


UNKNOWN = 2


def status_failure(vendor: str, status, default: int = OK) -> ProviderError | None:
    """The failure a google.rpc.Status in JSON reports (`{"code", "message", "details"}`; proto3 JSON
    leaves out a zero code, so a status without one has `default`), or an error given as bare text;
    None when there is none (absent, or OK)."""
    if status is None:
        return None
    if not isinstance(status, dict):
        return ProviderError(f"{vendor} error: {str(status)[:300]}")
    code = int(status.get("code", default))
    return None if code == OK else grpc_failure(vendor, code, str(status.get("message") or ""))
