"""AWS's event-stream framing and Signature Version 4 (providers/session/aws_event_stream.py) against
byte-level vectors AWS publishes, not against themselves:

- framing: the official Transcribe streaming SDK's unit-test vectors, awslabs/amazon-transcribe-
  streaming-sdk tests/unit/test_eventstream.py @7eae6ca02aad56ce5865910cb9715ac77bc2adeb (2023-06-15);
- event signing: that file's TestEventSigner (signing name "signing-name", region "region-name",
  credentials foo/bar, 2020-07-23T22:39:55.029943Z, payload b"message" after b"prior");
- request signing: AWS's Signature Version 4 test suite, get-vanilla and get-utf8 (as in awslabs/
  aws-crt-python test/test_auth.py, "copied from aws-c-auth/tests/aws-sig-v4-test-suite"), and that
  file's signed-body case (POST "hello" with x-amz-content-sha256 and content-length).
"""

import datetime as dt
import uuid

import pytest

from voxwatch.providers.session.aws_event_stream import (Credentials, Decoder, EventSigner, EventStreamError, encode,
                                                         sign_request)

# (encoded, headers, payload): the SDK's POSITIVE_CASES and SERIALIZATION_CASES
DECODES = [
    (b"\x00\x00\x00\x10\x00\x00\x00\x00\x05\xc2H\xeb}\x98\xc8\xff", {}, b""),
    (b"\x00\x00\x00\x17\x00\x00\x00\x07)\x86\x01X\x04byte\x02\xff\xc2\xf8i\xdc", {"byte": -1}, b""),
    (b"\x00\x00\x00\x19\x00\x00\x00\tq\x0e\x92>\x05short\x03\xff\xff\xb2|\xb6\xcc", {"short": -1}, b""),
    (b"\x00\x00\x00\x1d\x00\x00\x00\r\x83\xe3\xf0\xe7\x07integer\x04\xff\xff\xff\xff\x8b\x8e\x12\xeb", {"integer": -1}, b""),
    (b"\x00\x00\x00\x1e\x00\x00\x00\x0e]J\xdb\x8d\x04long\x05\xff\xff\xff\xff\xff\xff\xff\xffK\xc22\xda", {"long": -1}, b""),
    (b"\x00\x00\x00\x1d\x00\x00\x00\x00\xfdR\x8cZ{'foo':'bar'}\xc3e96", {}, b"{'foo':'bar'}"),
    (b"\x00\x00\x00=\x00\x00\x00 \x07\xfd\x83\x96\x0ccontent-type\x07\x00\x10application/json{'foo':'bar'}\x8d\x9c\x08\xb1",
     {"content-type": "application/json"}, b"{'foo':'bar'}"),
    (b"\x00\x00\x00\x62\x00\x00\x00\x52\x03\xb5\xcb\x9c"
     b"\x010\x00\x011\x01\x012\x02\x02\x013\x03\x00\x03"
     b"\x014\x04\x00\x00\x00\x04\x015\x05\x00\x00\x00\x00\x00\x00\x00\x05"
     b"\x016\x06\x00\x05bytes\x017\x07\x00\x04utf8"
     b"\x018\x08\x00\x00\x00\x00\x00\x00\x00\x08\x019\x090123456789abcdef"
     b"\x63\x35\x36\x71",
     {"0": True, "1": False, "2": 2, "3": 3, "4": 4, "5": 5, "6": b"bytes", "7": "utf8",
      "8": dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=8),
      "9": uuid.UUID(bytes=b"0123456789abcdef")}, b""),
    (b"\x00\x00\x00\x52\x00\x00\x00\x42\xbf\x23\x63\x7e"
     b"\x0d:message-type\x07\x00\x05error" b"\x0b:error-code\x07\x00\x04code" b"\x0e:error-message\x07\x00\x07message"
     b"\x6b\x6c\xea\x3d",
     {":message-type": "error", ":error-code": "code", ":error-message": "message"}, b""),
]

# (encoded, headers, payload) that encode() must produce byte for byte (the SDK's SERIALIZATION_CASES
# whose header types a Python value names: bool, a 32-bit integer, bytes, str, datetime, UUID)
ENCODES = [
    (b"\x00\x00\x00\x10\x00\x00\x00\x00\x05\xc2H\xeb}\x98\xc8\xff", {}, b""),
    (b"\x00\x00\x00\x1c\x00\x00\x00\x00\xc02\xa5\xeatest payload\x076E\xf9", {}, b"test payload"),
    (b"\x00\x00\x00\x16\x00\x00\x00\x06c\xe1\x18~\x04true\x00\xf1\xe7\xbc\xd7", {"true": True}, b""),
    (b"\x00\x00\x00\x17\x00\x00\x00\x07)\x86\x01X\x05false\x01R1~\xf4", {"false": False}, b""),
    (b"\x00\x00\x00\x1d\x00\x00\x00\r\x83\xe3\xf0\xe7\x07integer\x04\xff\xff\xff\xff\x8b\x8e\x12\xeb", {"integer": -1}, b""),
    (b"\x00\x00\x00\x1d\x00\x00\x00\r\x83\xe3\xf0\xe7\x05bytes\x06\x00\x04\xde\xad\xbe\xef\x9a\xabK ",
     {"bytes": b"\xde\xad\xbe\xef"}, b""),
    (b"\x00\x00\x00 \x00\x00\x00\x10\xb9T\xe0\t\x06string\x07\x00\x06foobarL\xc53(", {"string": "foobar"}, b""),
    (b"\x00\x00\x00#\x00\x00\x00\x13g\xfd\xcbc\ttimestamp\x08\x00\x00\x01r\xee\xbc'\xa6\xd4D^\x11",
     {"timestamp": dt.datetime(2020, 6, 26, 3, 46, 47, 846000, tzinfo=dt.timezone.utc)}, b""),
    (b"\x00\x00\x00&\x00\x00\x00\x16\xdfw\xb0\x9c\x04uuid\t\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef"
     b"\xb1g\xd4{", {"uuid": uuid.UUID("deadbeef-dead-beef-dead-beefdeadbeef")}, b""),
]

# the SDK's NEGATIVE_CASES: a wrong length, a corrupted payload or header, a header length past the end, a duplicate
BROKEN = [
    b"\x01\x00\x00\x1d\x00\x00\x00\x00\xfdR\x8cZ{'foo':'bar'}\xc3e96",
    b"\x00\x00\x00\x1d\x00\x00\x00\x00\xfdR\x8cZ{'foo':'bar'\x8d\xc3e96",
    b"\x00\x00\x00=\x00\x00\x00 \x07\xfd\x83\x96\x0ccontent+type\x07\x00\x10application/json{'foo':'bar'}\x8d\x9c\x08\xb1",
    b"\x00\x00\x00=\xFF\x00\x01\x02\x07\xfd\x83\x96\x0ccontent-type\x07\x00\x10application/json{'foo':'bar'}\x8d\x9c\x08\xb1",
    b"\x00\x00\x00\x24\x00\x00\x00\x14\x4b\xb9\x82\xd0\x04test\x04asdf\x04test\x04asdf\xf3\xf4\x75\x63",
]


def _decode(data: bytes) -> list:
    decoder = Decoder()
    decoder.feed(data)
    return list(decoder)


@pytest.mark.parametrize("encoded, headers, payload", DECODES)
def test_the_sdks_messages_decode(encoded, headers, payload):
    [message] = _decode(encoded)
    assert message.headers == headers and message.payload == payload


def test_messages_split_anywhere_and_run_together_decode_in_order():
    stream = b"".join(e for e, _, _ in DECODES)
    decoder, got = Decoder(), []
    for i in range(0, len(stream), 7):
        decoder.feed(stream[i:i + 7])
        got += list(decoder)
    assert [(m.headers, m.payload) for m in got] == [(h, p) for _, h, p in DECODES] and decoder.pending == 0


@pytest.mark.parametrize("encoded, headers, payload", ENCODES)
def test_messages_encode_as_the_sdk_does(encoded, headers, payload):
    assert encode(headers, payload) == encoded


@pytest.mark.parametrize("encoded", BROKEN)
def test_a_corrupted_message_is_refused(encoded):
    with pytest.raises(EventStreamError):
        _decode(encoded)


def test_an_event_is_signed_as_the_sdk_signs_it():
    signer = EventSigner(Credentials("foo", "bar"), "region-name", "signing-name", b"prior".hex())
    now = dt.datetime(2020, 7, 23, 22, 39, 55, 29943, tzinfo=dt.timezone.utc)
    [outer] = _decode(signer.sign(b"message", now))
    assert outer.payload == b"message"
    assert outer.headers[":date"] == dt.datetime(2020, 7, 23, 22, 39, 55, 29000, tzinfo=dt.timezone.utc)
    expected = b"\x0e\xf5n\xbf\x8cW\x0b>\xf3\xdc\x9fA\x99^\xd17\xcd\x86\x9c\xdb\xa0Y\x18\x88+\x9b\x10p{n$e"
    assert outer.headers[":chunk-signature"] == expected and signer.prior == expected  # the chain goes on from it
    verifier = EventSigner(Credentials("foo", "bar"), "region-name", "signing-name", b"prior".hex())
    assert verifier.verify(outer, b"prior") == expected
    with pytest.raises(EventStreamError):
        verifier.verify(outer, b"another prior")


SUITE = dict(credentials=Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"), region="us-east-1",
             service="service", now=dt.datetime(2015, 8, 30, 12, 36, 0, tzinfo=dt.timezone.utc))
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.mark.parametrize("path, signature", [
    ("/", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),  # get-vanilla
    ("/\u1234", "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),  # get-utf8
])
def test_requests_are_signed_as_the_sigv4_test_suite_signs_them(path, signature):
    signed = sign_request("GET", path, "", {"Host": "example.amazonaws.com"}, EMPTY_SHA256, **SUITE)
    assert signed.headers["x-amz-date"] == "20150830T123600Z"
    assert signed.headers["authorization"] == ("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                                               f"aws4_request, SignedHeaders=host;x-amz-date, Signature={signature}")


def test_a_signed_body_header_is_signed_too():
    hello = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    signed = sign_request("POST", "/", "", {"Host": "example.amazonaws.com", "Content-Length": "5",
                                           "X-Amz-Content-Sha256": hello}, hello, **SUITE)
    assert signed.headers["authorization"].endswith(
        "SignedHeaders=content-length;host;x-amz-content-sha256;x-amz-date, "
        "Signature=8e17c5b22b7bb28da47f44b08691c087a0993d0965bfab053376360790d44d6c")
