"""One reading of a WebSocket close for every adapter: its code -> the row's status.

An adapter decides *whether* a close ended the session early (a close after the last result is
the normal end); this module decides what kind of failure it was, so a code means the same for
every vendor unless that vendor documents otherwise.

The defaults read RFC 6455 section 7.4.1 and the IANA WebSocket close code registry (1012-1015)
with the statuses of docs/METHOD.md ("A failure is a row"), the way `endpoints.http_failure` reads
HTTP statuses: the server's own fault or overload is `server_error` (1011 as a 500, 1013 "Try
Again Later" as a 503, 1014 as a 502), a close that just ends the stream is `disconnected`, a
refusal of what the client sent is `error` (with the vendor's reason). No RFC code means "rate
limited" or "bad key"; a vendor's own code does only where its documentation says so, and each
such override below cites the page.
"""

from __future__ import annotations

import re
from typing import Iterable

import websockets

from voxwatch.providers.base import HarnessFault, ProviderError
from voxwatch.providers.keys import Secret, scrub

ABNORMAL = 1006  # no close frame: the connection dropped
RFC6455 = {
    1000: "disconnected",  # Normal Closure: the server ended the session before the turn was complete
    1001: "disconnected",  # Going Away: server going down, or the session's time limit
    1002: "error",  # Protocol Error: the server says what it received broke WebSocket
    1003: "error",  # Unsupported Data: the server refused a kind of data
    1005: "disconnected",  # No Status Received: a close frame without a code
    ABNORMAL: "disconnected",  # Abnormal Closure: dropped without a close frame
    1007: "error",  # Invalid frame payload data: the server refused a message's content
    1008: "error",  # Policy Violation
    1009: "error",  # Message Too Big
    1010: "error",  # Mandatory Extension (a client's code)
    1011: "server_error",  # Internal Error: as HTTP 500
    1012: "server_error",  # Service Restart (IANA)
    1013: "server_error",  # Try Again Later (IANA): a temporary condition of the server, as HTTP 503
    1014: "server_error",  # Bad Gateway (IANA): as HTTP 502
    1015: "disconnected",  # TLS handshake failure (never sent in a frame)
}
OTHER = "error"  # any other code (application codes 3000-4999 included): "anything else", with the reason

# registry vendor id -> {code: status}, each from the vendor's documentation
VENDOR: dict[str, dict[int, str]] = {
    "assemblyai": {
        # assemblyai.com/docs/api-reference/real-time ("Close and error codes") and the SDK's
        # StreamingErrorType (AssemblyAI/assemblyai-node-sdk src/utils/errors/streaming.ts): 4001 "Not Authorized"
        4001: "auth_error",
        # assemblyai.com/docs/speech-to-text/universal-streaming/common-session-errors-and-closures:
        # 1008 "Unauthorized Connection: Missing Authorization header" (or "...: <reason>", an account issue)
        1008: "auth_error",
        # assemblyai.com/docs/streaming/common-session-errors-and-closures: 3009 "Unauthorized Connection:
        # Too many concurrent sessions", the real-time concurrency limit
        3009: "rate_limited",
        # assemblyai.com/docs/api-reference/real-time: 4102 "This account has exceeded the number of allowed streams"
        4102: "rate_limited",
        # assemblyai.com/docs/streaming/common-session-errors-and-closures: 3005 "Session Cancelled: An error
        # occurred", an unknown server error
        3005: "server_error",
        # assemblyai.com/docs/api-reference/real-time: 4029 "Client sent audio too fast"; the harness paces
        # in real time, so it is the worker's fault, not the vendor's (METHOD: `excluded`, no attempt)
        4029: "excluded",
    },
    "speechmatics": {
        # docs.speechmatics.com/api-ref/realtime-transcription-websocket ("Client Retry": 4005 quota_exceeded,
        # 4013 job_error, 1011 internal_error) with the Error types of speechmatics/docs spec/realtime.yaml:
        # quota_exceeded "Maximum number of concurrent connections allowed for the contract has been reached"
        4005: "rate_limited",
        # job_error "Unable to do any work on this job, the server might have timed out etc."
        4013: "server_error",
    },
    "revai": {
        # docs.rev.ai/api/streaming/requests ("Access token"): "If access_token is invalid or the query
        # parameter is not present, the WebSocket connection will be closed with code 4001"
        4001: "auth_error",
        # docs.rev.ai/api/streaming/requests ("Content type"): an invalid or missing content_type is
        # closed with 4002, a refusal of the request
        4002: "error",
        # docs.rev.ai/api/streaming/responses: 4013 "If Rev AI currently does not have the capacity to
        # handle the request", the server's temporary condition (as HTTP 503)
        4013: "server_error",
    },
    "smallest": {
        # smallest-inc/smallest-ai-documentation fern/apis/waves/asyncapi/stt-live-ws.yaml @ 004cd61c,
        # ErrorEvent: "WebSocket close `1008` - concurrency limit reached (org has too many open WS sessions)"
        1008: "rate_limited",
    },
}
# why a close is the harness's own fault (status "excluded"): the row's reason says it
HARNESS_FAULTS = {("assemblyai", 4029): "the worker sent audio faster than real time (a pacing fault of the "
                                         "harness, not counted against the vendor)"}


def vendor_key(vendor: str) -> str:
    """The registry vendor id of a vendor as an adapter names it ("AssemblyAI", "Qwen-Omni-Realtime"
    -> "assemblyai", "qwen"): its first word, lower case."""
    match = re.match(r"[a-z0-9]+", vendor.lower())
    return match.group(0) if match else ""


def status_of(vendor: str, code: int | None) -> str:
    """The row status of a close with this code from this vendor; None (no close seen) is a drop."""
    code = ABNORMAL if code is None else code
    return VENDOR.get(vendor_key(vendor), {}).get(code) or RFC6455.get(code, OTHER)


def statuses(vendor: str) -> set[str]:
    """Every status a close from this vendor can be given."""
    return {*RFC6455.values(), OTHER, *VENDOR.get(vendor_key(vendor), {}).values()}


def close_code(exc: websockets.ConnectionClosed) -> int:
    """The close code the server sent, or 1006 when the connection dropped without a close frame."""
    return exc.rcvd.code if exc.rcvd is not None else ABNORMAL


def closed(vendor: str, close: websockets.ConnectionClosed | int | None, during: str = "mid-stream", *,
           note: str = "", secrets: Iterable[Secret | None] = ()) -> ProviderError | HarnessFault:
    """The failure of a session the server closed early (`close`: the exception, or the socket's close
    code when it ended without one), by kind, with the server's reason (keys cut out)."""
    if isinstance(close, websockets.ConnectionClosed):
        code, reason = close_code(close), close.rcvd.reason if close.rcvd is not None else ""
    else:
        code, reason = (ABNORMAL if close is None else close), ""
    reason = scrub(reason, list(secrets))[:200]
    text = f"{vendor} closed the connection{' ' + during if during else ''} (code {code}{': ' + reason if reason else ''}){note}"
    status = status_of(vendor, code)
    if status == "excluded":
        return HarnessFault(f"{text}: {HARNESS_FAULTS[(vendor_key(vendor), code)]}")
    return ProviderError(text, status)
