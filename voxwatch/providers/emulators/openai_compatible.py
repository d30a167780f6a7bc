"""What the emulators of OpenAI-compatible HTTP APIs share (OpenAI's own, Groq's): an OpenAI-style error
body, a multipart form's fields, a JSON request's body, a JSON answer sent at its time on the emulator
clock (a batch transcription's); a speech endpoint's chunked audio is streamed.TimedBody.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
import wave
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import http_refusal


def error_body(message: str, kind: str = "invalid_request_error", code: str | None = None) -> dict:
    return {"message": message, "type": kind, "param": None, "code": code}


def json_error(status: int, message: str, kind: str = "invalid_request_error", code: str | None = None) -> JSONResponse:
    return JSONResponse({"error": error_body(message, kind, code)}, status_code=status)


def refuse(scenario, headers, bad_key: str) -> Response | None:
    """The answer to a request this emulator refuses before reading it, else None: an API it was given
    no scenario for (404), a key other than the scenario's (401, `bad_key` the vendor's message, code
    `invalid_api_key`), or the scenario's handshake fault (faults.http_refusal)."""
    if scenario is None:
        return json_error(404, "this emulator does not serve that API", code="not_found")
    if headers.get("authorization") != f"Bearer {scenario.api_key}":
        return json_error(401, bad_key, code="invalid_api_key")
    return http_refusal(scenario.fault)


def form_fields(content_type: str, body: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body (name -> raw value)."""
    boundary = next((p.split("=", 1)[1].strip().strip('"') for p in content_type.split(";")
                     if p.strip().startswith("boundary=")), None)
    if not content_type.startswith("multipart/form-data") or not boundary:
        raise ValueError("expected multipart/form-data")
    fields: dict[str, bytes] = {}
    for part in body.split(b"--" + boundary.encode())[1:]:
        if part.startswith(b"--"):
            break
        head, _, value = part.partition(b"\r\n\r\n")
        disposition = next((line for line in head.decode("latin-1").split("\r\n")
                            if line.lower().startswith("content-disposition")), "")
        name = next((p.split("=", 1)[1].strip().strip('"') for p in disposition.split(";")
                     if p.strip().startswith("name=")), None)
        if name is not None:
            fields[name] = value[:-2] if value.endswith(b"\r\n") else value
    return fields


async def json_body(request: Request) -> tuple[Response | None, dict, int]:
    """(a 400 or None, the JSON object the request carries, when its body arrived)."""
    body = await request.body()
    arrived = time.perf_counter_ns()
    try:
        req = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return json_error(400, f"could not read the request: {type(exc).__name__}"), {}, arrived
    if not isinstance(req, dict):
        return json_error(400, "could not read the request: not a JSON object"), {}, arrived
    return None, req, arrived


@dataclass(frozen=True)
class AudioForm:
    """A transcription request's multipart form: its text fields, the file's bytes and samples (mono
    16-bit WAV), their length in seconds, and when the body arrived."""

    values: dict[str, str]
    file: bytes
    pcm: bytes
    seconds: float
    arrived: int


async def audio_form(scenario, request: Request, bad_key: str) -> tuple[Response | None, AudioForm | None]:
    """(a refusal (`refuse`) or a 400, or None; the form) of a transcription request: `file` a mono
    16-bit WAV, `model` given."""
    refused = refuse(scenario, request.headers, bad_key)
    if refused is not None:
        return refused, None
    body = await request.body()
    arrived = time.perf_counter_ns()
    try:
        fields = form_fields(request.headers.get("content-type", ""), body)
        with wave.open(io.BytesIO(fields["file"])) as w:
            if w.getnchannels() != 1 or w.getsampwidth() != 2:
                raise ValueError("expected mono 16-bit PCM")
            pcm = w.readframes(w.getnframes())
            seconds = w.getnframes() / w.getframerate()
        values = {name: value.decode() for name, value in fields.items() if name != "file"}
        if "model" not in values:
            raise KeyError("model")
    except (KeyError, ValueError, EOFError, wave.Error, UnicodeDecodeError) as exc:
        return json_error(400, f"could not read the request: {exc}"), None
    return None, AudioForm(values, fields["file"], pcm, seconds, arrived)


class TimedJSON(Response):
    """A JSON body sent at an absolute time on the emulator clock, or the fault it calls for."""

    def __init__(self, at_ns: int, body: bytes, fault: str | None, on_send) -> None:
        self.at_ns, self.payload, self.fault, self.on_send = at_ns, body, fault, on_send
        self.background = None

    async def __call__(self, scope, receive, send) -> None:
        await sleep_until(self.at_ns)
        if self.fault == "no_final":
            await asyncio.Event().wait()  # never answers; the client gives up
        body = b'{"text": ' if self.fault == "malformed" else self.payload
        self.on_send()  # recorded as the head is written
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        if self.fault == "disconnect":
            await send({"type": "http.response.body", "body": body[:4], "more_body": True})
            return  # uvicorn closes the connection on an unfinished response
        await send({"type": "http.response.body", "body": body})
