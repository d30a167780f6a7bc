"""A gRPC status code reads as the HTTP status google.rpc.Code pairs it with, through the one HTTP reading."""

import pytest

from voxwatch.foundation.observation import STATUSES
from voxwatch.providers.session.endpoints import http_status
from voxwatch.providers.session.grpc_status import HTTP_OF, grpc_failure, grpc_row_status


@pytest.mark.parametrize("code,status", [(16, "auth_error"), (7, "auth_error"), (8, "rate_limited"),
                                         (13, "server_error"), (14, "server_error"), (4, "server_error"),
                                         (3, "error"), (5, "error"), (1, "error"), (99, "server_error")])
def test_each_code_reads_as_its_http_status(code, status):
    assert grpc_row_status(code) == status


def test_every_canonical_code_is_mapped_to_a_project_status():
    assert sorted(HTTP_OF) == list(range(1, 17))
    assert {http_status(h) for h in HTTP_OF.values()} <= set(STATUSES) - {"ok"}


def test_the_failure_names_the_vendor_code_and_message():
    error = grpc_failure("Inworld", 8, "quota exceeded " + "x" * 500)
    assert error.status == "rate_limited" and str(error).startswith("Inworld error: status 8: quota exceeded")
    assert len(str(error)) < 340


def test_a_json_status_reports_a_failure_only_when_its_code_is_not_ok():
    from voxwatch.providers.session.grpc_status import UNKNOWN, status_failure

    assert status_failure("Inworld", None) is None
    assert status_failure("Inworld", {"code": 0, "message": "", "details": []}) is None
    assert status_failure("Inworld", {"message": ""}) is None  # proto3 JSON leaves out a zero code
    assert status_failure("Inworld", {"message": "boom"}, UNKNOWN).status == "server_error"
    assert status_failure("Inworld", {"code": 16, "message": "bad key"}).status == "auth_error"
    assert status_failure("Inworld", "Invalid or expired API key").status == "error"
