"""The gRPC wire for vendors whose published .proto files voxwatch follows without generated code:
protocol buffer fields written and read by number, and gRPC's length-prefixed messages.

Why by hand: a vendor's messages need a handful of fields each (numbers cited in its adapter), and
generated modules would pin a protoc version and a copy of the vendor's protos; google.protobuf's
runtime without them reads no field by name either. The encoding is the protobuf spec's
(protobuf.dev/programming-guides/encoding: varint, 64-bit, length-delimited and 32-bit wire types;
a repeated or embedded field is the same field number again), the framing gRPC's
(grpc/grpc doc/PROTOCOL-HTTP2.md: each message a 1-byte compressed flag, a 4-byte big-endian length,
the message; the call's status in the `grpc-status` / `grpc-message` trailers, or in the response
head of a Trailers-Only answer).
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import AsyncIterator, Iterable, Mapping
from urllib.parse import unquote

from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.endpoints import http_failure
from voxwatch.providers.session.grpc_status import OK, UNKNOWN, grpc_failure

VARINT, I64, LEN, I32 = 0, 1, 2, 5
MAX_MESSAGE = 4 * 1024 * 1024  # gRPC's default receive limit: a longer prefix is a broken stream
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1  # negative int32/int64 values are written as 10-byte two's complement
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def field(number: int, value: int | bool | str | bytes) -> bytes:
    """One field: an int or bool as a varint, a str (UTF-8) or bytes (an embedded message too) length-delimited."""
    if isinstance(value, (bool, int)):
        return varint(number << 3 | VARINT) + varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | LEN) + varint(len(data)) + data


def float_field(number: int, value: float) -> bytes:
    """A `float` field (32-bit, little-endian)."""
    return varint(number << 3 | I32) + struct.pack("<f", value)


def message(*fields: bytes | None) -> bytes:
    """The fields, in order, leaving out the None ones (proto3 leaves out unset fields)."""
    return b"".join(f for f in fields if f)


def _varint_at(data: bytes, at: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("a varint runs past the message")
        byte = data[at]
        n |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return n, at


def decode(data: bytes) -> dict[int, list[int | bytes]]:
    """Every field of a message by number, each occurrence in order (varints as ints, 32/64-bit values
    as their raw bytes, length-delimited ones as bytes); a message that breaks the encoding: ValueError."""
    out: dict[int, list[int | bytes]] = {}
    at = 0
    while at < len(data):
        key, at = _varint_at(data, at)
        number, kind = key >> 3, key & 7
        if kind == VARINT:
            value, at = _varint_at(data, at)
        elif kind in (I64, I32):
            size = 8 if kind == I64 else 4
            value, at = data[at:at + size], at + size
        elif kind == LEN:
            size, at = _varint_at(data, at)
            value, at = data[at:at + size], at + size
        else:
            raise ValueError(f"wire type {kind} is not one protobuf writes")
        if number == 0 or at > len(data):
            raise ValueError("a field runs past the message")
        out.setdefault(number, []).append(value)
    return out


def first(fields: Mapping[int, list], number: int, default=None):
    """A singular field's value (the last occurrence wins, as the spec says), or `default`."""
    values = fields.get(number)
    return values[-1] if values else default


def text(fields: Mapping[int, list], number: int) -> str:
    return bytes(first(fields, number, b"")).decode()


def float32(fields: Mapping[int, list], number: int) -> float:
    raw = first(fields, number)
    return struct.unpack("<f", raw)[0] if raw else 0.0


def duration_s(data: bytes | None) -> float:
    """A google.protobuf.Duration (seconds = 1, nanos = 2) in seconds."""
    if not data:
        return 0.0
    fields = decode(data)
    return first(fields, 1, 0) + first(fields, 2, 0) / 1e9


def duration(seconds: float) -> bytes:
    whole = int(seconds)
    return message(field(1, whole) if whole else None, field(2, round((seconds - whole) * 1e9)) if seconds != whole else None)


def frame(data: bytes) -> bytes:
    """One gRPC message, uncompressed."""
    return b"\x00" + struct.pack(">I", len(data)) + data


class Deframer:
    """A gRPC response body in pieces of any size -> its whole messages."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> Iterable[bytes]:
        self._buffer += data
        while len(self._buffer) >= 5:
            flag, size = self._buffer[0], struct.unpack(">I", self._buffer[1:5])[0]
            if flag not in (0, 1) or size > MAX_MESSAGE:
                raise ValueError("not a gRPC message prefix")
            if flag == 1:
                raise ValueError("a compressed message where none was accepted")
            if len(self._buffer) < 5 + size:
                return
            data, self._buffer = bytes(self._buffer[5:5 + size]), self._buffer[5 + size:]
            yield data

    @property
    def pending(self) -> bool:
        """Bytes of a message still incomplete (at the body's end: a cut-off message)."""
        return bool(self._buffer)


def call_status(headers: Mapping[str, str]) -> tuple[int, str] | None:
    """The call's (grpc-status, grpc-message) from trailers or a Trailers-Only head; None if absent."""
    if "grpc-status" not in headers:
        return None
    try:
        code = int(headers["grpc-status"])
    except ValueError:
        code = UNKNOWN
    return code, unquote(headers.get("grpc-message", ""))


def retry_delay_s(details: bytes) -> float | None:
    """The RetryInfo delay in a google.rpc.Status (`grpc-status-details-bin`: code 1, message 2, details
    3 as Any {type_url 1, value 2}; google/rpc/error_details.proto RetryInfo {retry_delay 1}), or None."""
    try:
        for detail in decode(details).get(3, []):
            any_ = decode(detail)
            if text(any_, 1) == RETRY_INFO:
                return duration_s(first(decode(first(any_, 2, b"")), 1))
    except (ValueError, TypeError, UnicodeDecodeError):
        return None
    return None


def request_headers(token: str, *extra: tuple[str, str]) -> list[tuple[str, str]]:
    """A gRPC call's request headers (PROTOCOL-HTTP2.md) with an OAuth2 bearer token."""
    return [("content-type", "application/grpc"), ("te", "trailers"), ("authorization", f"Bearer {token}"), *extra]


def call_failure(trailers: Mapping[str, str], head: Mapping[str, str], vendor: str) -> ProviderError | None:
    """The call's end as a failure, None for OK: its status from the trailers or a Trailers-Only head,
    with a RESOURCE_EXHAUSTED's RetryInfo delay as the wait; no status at all is a call cut off."""
    status = call_status(trailers) or call_status(head)
    if status is None:
        return ProviderError(f"{vendor} ended the call without a status", "disconnected")
    code, message_text = status
    if code == OK:
        return None
    failure = grpc_failure(vendor, code, message_text)
    details = trailers.get("grpc-status-details-bin") or head.get("grpc-status-details-bin")
    if details:
        try:  # binary metadata is base64, padding optional (PROTOCOL-HTTP2.md)
            failure.retry_after_s = retry_delay_s(base64.b64decode(details + "=" * (-len(details) % 4)))
        except (binascii.Error, ValueError):
            pass
    return failure


async def responses(call, vendor: str) -> AsyncIterator[tuple[bytes, int]]:
    """A call's response messages (on an h2_duplex.H2Duplex) with the stamp of the read that completed
    each, to the call's end; then its status: a refused HTTP request, a failure status, a message cut
    off (ValueError, which the adapter calls malformed) or no status at all raise."""
    status, head = await call.head()
    if status != 200:
        raise http_failure(status, head, vendor)
    deframer = Deframer()
    async for data, at in call.received():
        for response in deframer.feed(data):
            yield response, at
    if deframer.pending:
        raise ValueError("the call ended inside a message")
    failure = call_failure(call.trailers, head, vendor)
    if failure is not None:
        raise failure
