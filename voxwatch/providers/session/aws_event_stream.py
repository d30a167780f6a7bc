"""AWS's binary event stream (`application/vnd.amazon.eventstream`) and Signature Version 4, for the
adapters of AWS's streaming APIs (Bedrock's bidirectional stream, Transcribe streaming), written from
AWS's documentation because botocore is not a dependency. Facts followed:

- Framing (AWS Transcribe Developer Guide "Setting up a streaming transcription", event stream
  encoding: docs.aws.amazon.com/transcribe/latest/dg/event-stream.html; awsdocs/amazon-transcribe-
  developer-guide doc_source/streaming-setting-up.md @24720afa; and Lex V2's
  docs.aws.amazon.com/lexv2/latest/dg/event-stream-encoding.html): a message is a prelude (total length
  and headers length, big-endian uint32 each), the prelude's CRC32, the headers, the payload, and the
  CRC32 of everything before it. A header is its name's length (uint8), the name (UTF-8), a type byte
  and the value: 0 true, 1 false, 2 byte, 3 short, 4 integer, 5 long (signed, big-endian), 6 byte
  array and 7 string (uint16 length first), 8 timestamp (int64 milliseconds since the epoch), 9 UUID
  (16 bytes). Headers are at most 128 KiB, a payload at most 16 MiB (the official SDK's limits,
  awslabs/amazon-transcribe-streaming-sdk amazon_transcribe/eventstream.py @7eae6ca0).
- Signature Version 4 (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html):
  the canonical request (method, the URI-encoded path, the sorted query, the lower-cased sorted headers
  signed, their names, the payload's hash), the string to sign ("AWS4-HMAC-SHA256", the time, the
  scope <date>/<region>/<service>/aws4_request, the canonical request's SHA-256), and the key derived
  by HMAC-SHA256 from "AWS4" + secret through the date, region, service and "aws4_request".
- Event signing (the Transcribe guide's "Signing event stream messages"; the SDK's EventSigner): each
  event's encoded bytes become the payload of an outer message whose headers are `:date` (timestamp)
  and `:chunk-signature` (the 32-byte HMAC) over "AWS4-HMAC-SHA256-PAYLOAD", the time, the scope, the
  prior signature (hex: the request's for the first event), the SHA-256 of the encoded `:date` header
  and the SHA-256 of the event. Each signature chains into the next; the end of input is an empty
  payload signed the same way.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import struct
import uuid
import zlib
from dataclasses import dataclass
from typing import Iterator, Union
from urllib.parse import quote

PRELUDE = 12  # total length, headers length, prelude CRC
OVERHEAD = PRELUDE + 4  # and the message CRC
MAX_HEADERS = 128 * 1024
MAX_PAYLOAD = 16 * 1024 * 1024
MAX_HEADER_VALUE = 2**15 - 1

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
HeaderValue = Union[bool, int, bytes, str, dt.datetime, uuid.UUID]


class EventStreamError(ValueError):
    """Bytes that are not a valid event-stream message (a ValueError: adapters read it as malformed)."""


def _crc(data: bytes, value: int = 0) -> int:
    return zlib.crc32(data, value) & 0xFFFFFFFF


def _encode_value(value: HeaderValue) -> bytes:
    if isinstance(value, bool):
        return bytes([0 if value else 1])
    if isinstance(value, int):
        return b"\x04" + struct.pack(">i", value)  # an integer header is a 32-bit integer
    if isinstance(value, (bytes, str)):
        data = value.encode("utf-8") if isinstance(value, str) else value
        if len(data) > MAX_HEADER_VALUE:
            raise EventStreamError(f"a header value is {len(data)} bytes; at most {MAX_HEADER_VALUE}")
        return bytes([7 if isinstance(value, str) else 6]) + struct.pack(">H", len(data)) + data
    if isinstance(value, dt.datetime):
        return b"\x08" + struct.pack(">q", (value - EPOCH) // dt.timedelta(milliseconds=1))
    if isinstance(value, uuid.UUID):
        return b"\x09" + value.bytes
    raise EventStreamError(f"no event-stream header type for {type(value).__name__}")


def encode_headers(headers: dict[str, HeaderValue]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        raw = name.encode("utf-8")
        out += bytes([len(raw)]) + raw + _encode_value(value)
    return bytes(out)


def encode(headers: dict[str, HeaderValue], payload: bytes = b"") -> bytes:
    """One message: prelude, prelude CRC, headers, payload, message CRC."""
    head = encode_headers(headers)
    if len(head) > MAX_HEADERS or len(payload) > MAX_PAYLOAD:
        raise EventStreamError("headers or payload too long for one event-stream message")
    prelude = struct.pack(">II", OVERHEAD + len(head) + len(payload), len(head))
    body = prelude + struct.pack(">I", _crc(prelude)) + head + payload
    return body + struct.pack(">I", _crc(body))


@dataclass(frozen=True)
class Message:
    headers: dict[str, HeaderValue]
    payload: bytes


def _decode_headers(data: bytes) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    i = 0
    try:
        while i < len(data):
            n = data[i]
            name = data[i + 1:i + 1 + n].decode("utf-8")
            kind, i = data[i + 1 + n], i + 2 + n
            if kind in (0, 1):
                value: HeaderValue = kind == 0
            elif kind in (2, 3, 4, 5):
                fmt, size = {2: (">b", 1), 3: (">h", 2), 4: (">i", 4), 5: (">q", 8)}[kind]
                value, i = struct.unpack_from(fmt, data, i)[0], i + size
            elif kind in (6, 7):
                (size,), i = struct.unpack_from(">H", data, i), i + 2
                raw = data[i:i + size]
                if len(raw) != size:
                    raise EventStreamError("a header value runs past the headers")
                value, i = (raw.decode("utf-8") if kind == 7 else bytes(raw)), i + size
            elif kind == 8:
                (ms,), i = struct.unpack_from(">q", data, i), i + 8
                value = EPOCH + dt.timedelta(milliseconds=ms)
            elif kind == 9:
                if len(data) < i + 16:
                    raise EventStreamError("a UUID header runs past the headers")
                value, i = uuid.UUID(bytes=bytes(data[i:i + 16])), i + 16
            else:
                raise EventStreamError(f"unknown header type {kind}")
            if name in headers:
                raise EventStreamError(f"header {name!r} appears twice")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise EventStreamError(f"unreadable headers ({type(exc).__name__})") from None
    return headers


class Decoder:
    """Feed it the bytes of a stream as they come; iterate it for each complete message (CRCs checked)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def __iter__(self) -> Iterator[Message]:
        while len(self._buffer) >= PRELUDE:
            total, head_len, prelude_crc = struct.unpack_from(">III", self._buffer)
            if _crc(bytes(self._buffer[:8])) != prelude_crc:
                raise EventStreamError("the prelude's CRC does not match")
            if head_len > MAX_HEADERS or total - OVERHEAD - head_len > MAX_PAYLOAD or total < OVERHEAD + head_len:
                raise EventStreamError(f"impossible lengths (total {total}, headers {head_len})")
            if len(self._buffer) < total:
                return
            message = bytes(self._buffer[:total])
            del self._buffer[:total]
            if _crc(message[:-4]) != struct.unpack(">I", message[-4:])[0]:
                raise EventStreamError("the message's CRC does not match")
            yield Message(_decode_headers(message[PRELUDE:PRELUDE + head_len]), message[PRELUDE + head_len:-4])

    @property
    def pending(self) -> int:
        """Bytes of an incomplete message held back."""
        return len(self._buffer)


# --- Signature Version 4 ---

ALGORITHM = "AWS4-HMAC-SHA256"
STREAMING_EVENTS = "STREAMING-AWS4-HMAC-SHA256-EVENTS"  # the payload hash of an event-stream request


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    secret_access_key: str
    session_token: str | None = None


def key_credentials(key: str) -> Credentials:
    """Credentials from a voxwatch key variable, `<access key id>:<secret access key>[:<session token>]`
    (one variable per AWS service's vendor); a key without a colon is a secret alone."""
    if ":" not in key:
        return Credentials("", key)
    access, _, rest = key.partition(":")
    secret, _, token = rest.partition(":")
    return Credentials(access, secret, token or None)


def _hmac(key: bytes, text: str | bytes) -> bytes:
    return hmac.new(key, text.encode("utf-8") if isinstance(text, str) else text, hashlib.sha256).digest()


def amz_date(now: dt.datetime) -> str:
    return now.astimezone(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = _hmac(("AWS4" + secret).encode("utf-8"), date)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return key


def _canonical_query(query: str) -> str:
    pairs = []
    for part in filter(None, query.split("&")):
        name, _, value = part.partition("=")
        pairs.append((quote(name, safe="-_.~"), quote(value, safe="-_.~")))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


@dataclass(frozen=True)
class Signed:
    """The headers a signed request adds (x-amz-date, authorization, any security token) and its
    signature (hex), which seeds the signatures of the events sent in its body."""

    headers: dict[str, str]
    signature: str


def sign_request(method: str, path: str, query: str, headers: dict[str, str], payload_hash: str,
                 credentials: Credentials, region: str, service: str, now: dt.datetime) -> Signed:
    """Sign a request whose `headers` (host included) are all signed. `path` is the path as sent (already
    percent-encoded); the canonical URI encodes it once more, as SigV4 asks of every service but S3."""
    stamp = amz_date(now)
    signed = {k.lower(): " ".join(str(v).split()) for k, v in headers.items()}
    signed["x-amz-date"] = stamp
    if credentials.session_token:
        signed["x-amz-security-token"] = credentials.session_token
    names = sorted(signed)
    canonical = "\n".join([method.upper(), quote(path or "/", safe="/-_.~"), _canonical_query(query),
                           "".join(f"{n}:{signed[n]}\n" for n in names), ";".join(names), payload_hash])
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join([ALGORITHM, stamp, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
    signature = _hmac(signing_key(credentials.secret_access_key, stamp[:8], region, service), to_sign).hex()
    added = {"x-amz-date": stamp, "authorization": f"{ALGORITHM} Credential={credentials.access_key_id}/{scope}, "
                                                   f"SignedHeaders={';'.join(names)}, Signature={signature}"}
    if credentials.session_token:
        added["x-amz-security-token"] = credentials.session_token
    return Signed(added, signature)


class EventSigner:
    """Signs each event of a request body in a chain, from the request's own signature."""

    def __init__(self, credentials: Credentials, region: str, service: str, request_signature: str) -> None:
        self.credentials, self.region, self.service = credentials, region, service
        self.prior = bytes.fromhex(request_signature)

    def signature(self, payload: bytes, now: dt.datetime, prior: bytes) -> tuple[dict[str, HeaderValue], bytes]:
        """(the outer message's headers, the signature) of `payload` at `now` after `prior`."""
        now = now.astimezone(dt.timezone.utc).replace(microsecond=now.microsecond // 1000 * 1000)
        stamp = amz_date(now)
        headers: dict[str, HeaderValue] = {":date": now}
        to_sign = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", stamp, f"{stamp[:8]}/{self.region}/{self.service}/aws4_request",
                             prior.hex(), hashlib.sha256(encode_headers(headers)).hexdigest(),
                             hashlib.sha256(payload).hexdigest()])
        key = signing_key(self.credentials.secret_access_key, stamp[:8], self.region, self.service)
        return headers, _hmac(key, to_sign)

    def sign(self, payload: bytes, now: dt.datetime) -> bytes:
        """The outer message carrying `payload` (an encoded event, or b"" to end the input), signed."""
        headers, signature = self.signature(payload, now, self.prior)
        self.prior = signature
        return encode({**headers, ":chunk-signature": signature}, payload)

    def verify(self, message: Message, prior: bytes) -> bytes:
        """For a server: the signature `message` must carry after `prior`; raises when it does not."""
        date = message.headers.get(":date")
        if not isinstance(date, dt.datetime):
            raise EventStreamError("a signed event has no :date")
        _, expected = self.signature(message.payload, date, prior)
        if not hmac.compare_digest(expected, bytes(message.headers.get(":chunk-signature", b""))):
            raise EventStreamError("the event's :chunk-signature does not match")
        return expected
