"""The hand-written protobuf and gRPC wire (providers/session/grpc_wire.py) against protobuf's own
runtime (the well-known types google.protobuf ships compiled), so the few fields the gRPC adapters
write and read by number are encoded as protoc's code would encode them."""

import base64

import pytest
from google.protobuf import any_pb2, duration_pb2, struct_pb2

from voxwatch.providers.session import grpc_wire as pb


@pytest.mark.parametrize("seconds", [0.0, 7.0, 0.25, 12.5])
def test_a_duration_as_protobuf_writes_and_reads_it(seconds):
    whole = int(seconds)
    theirs = duration_pb2.Duration(seconds=whole, nanos=round((seconds - whole) * 1e9)).SerializeToString()
    assert pb.duration(seconds) == theirs
    assert pb.duration_s(theirs) == pytest.approx(seconds)


def test_fields_strings_and_embedded_messages_match_protobuf():
    value = struct_pb2.Value(string_value="to be or not to be")  # string_value = 3
    assert pb.field(3, "to be or not to be") == value.SerializeToString()
    wrapped = any_pb2.Any(type_url=pb.RETRY_INFO, value=pb.duration(7.0)).SerializeToString()
    assert pb.message(pb.field(1, pb.RETRY_INFO), pb.field(2, pb.duration(7.0))) == wrapped
    fields = pb.decode(wrapped + pb.field(9, 300) + pb.field(9, True))
    assert pb.text(fields, 1) == pb.RETRY_INFO and fields[9] == [300, 1] and pb.first(fields, 9) == 1
    assert pb.decode(pb.field(4, -1))[4] == [2**64 - 1]  # a negative int32: ten bytes, two's complement
    with pytest.raises(ValueError):
        pb.decode(b"\x0a\x05abc")  # a length past the message's end


def test_messages_are_framed_and_cut_anywhere():
    messages = [pb.field(1, "a" * n) for n in (0, 3, 300)]
    body = b"".join(pb.frame(m) for m in messages)
    deframer, out = pb.Deframer(), []
    for at in range(0, len(body), 7):
        out += list(deframer.feed(body[at:at + 7]))
    assert out == messages and not deframer.pending
    with pytest.raises(ValueError):
        list(pb.Deframer().feed(b"\x05\x00\x00\x00\x01x"))  # neither flag gRPC defines


def test_a_status_in_trailers_is_a_failure_with_its_retry_delay():
    retry = pb.message(pb.field(1, pb.RETRY_INFO), pb.field(2, pb.message(pb.field(1, pb.duration(7.0)))))
    status = pb.message(pb.field(1, 8), pb.field(2, "Quota exceeded"), pb.field(3, retry))
    trailers = {"grpc-status": "8", "grpc-message": "Quota%20exceeded",
                "grpc-status-details-bin": base64.b64encode(status).decode().rstrip("=")}
    failure = pb.call_failure(trailers, {}, "Vendor")
    assert failure.status == "rate_limited" and failure.retry_after_s == 7.0 and "Quota exceeded" in str(failure)
    assert pb.call_failure({"grpc-status": "0"}, {}, "Vendor") is None
    assert pb.call_failure({}, {"grpc-status": "16"}, "Vendor").status == "auth_error"  # Trailers-Only
    assert pb.call_failure({}, {}, "Vendor").status == "disconnected"
