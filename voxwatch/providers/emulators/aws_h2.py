"""What the emulators of AWS's APIs share (Bedrock's bidirectional stream, Transcribe streaming, Polly):
the Signature Version 4 check of the request that opens a call. Their HTTP/2 server (prior knowledge,
no TLS) is every HTTP/2 emulator's, emulators/h2_server.py.

The signature check follows the same facts as providers/session/aws_event_stream.py: the request's
`Authorization` names the access key, the scope `<date>/<region>/<service>/aws4_request`, the signed
headers and the signature, which the server recomputes from the headers as received. A refused request is
AWS's answer to one: 403 with `x-amzn-ErrorType` UnrecognizedClientException (an unknown key) or
InvalidSignatureException (a signature that does not match) and a JSON `message`.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from voxwatch.providers.session.aws_event_stream import ALGORITHM, STREAMING_EVENTS, Credentials, sign_request


@dataclass(frozen=True)
class Verified:
    """A request whose signature checked out: its credentials, region and signature (the seed of its events')."""

    credentials: Credentials
    region: str
    prior: bytes


def verify_request(headers: dict[str, str], service: str, api_key: str) -> Verified | tuple[int, str, str]:
    """The request's SigV4 checked against `api_key` (`<access key id>:<secret>`), or the refusal
    (status, x-amzn-ErrorType, message)."""
    auth = re.match(ALGORITHM + r" Credential=([^/]*)/(\d{8})/([a-z0-9-]+)/" + re.escape(service)
                    + r"/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$",
                    headers.get("authorization", ""))
    access, _, secret = api_key.partition(":") if ":" in api_key else ("", "", api_key)
    if auth is None or (access and auth.group(1) != access):
        return 403, "UnrecognizedClientException", "The security token included in the request is invalid."
    credentials, region = Credentials(auth.group(1), secret), auth.group(3)
    try:
        now = dt.datetime.strptime(headers["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.timezone.utc)
        signed = {n: (headers[n] if n != "host" else headers.get(":authority", headers.get("host", "")))
                  for n in auth.group(4).split(";") if n != "x-amz-date"}
    except (KeyError, ValueError):
        return 403, "InvalidSignatureException", "The request signature is incomplete."
    path, _, query = headers.get(":path", "").partition("?")
    mine = sign_request("POST", path, query, signed, headers.get("x-amz-content-sha256", STREAMING_EVENTS),
                        credentials, region, service, now)
    if mine.signature != auth.group(5):
        return 403, "InvalidSignatureException", ("The request signature we calculated does not match the "
                                                  "signature you provided.")
    return Verified(credentials, region, bytes.fromhex(mine.signature))

