"""The three stream protocols (STT, TTS, S2S) as small interfaces.

An adapter opens its connection in `connect` (outside every clock except `connect_ms`), then
speaks its vendor's protocol and marks what comes back on the Timeline it was given. The harness
in voxwatch.harness.measure owns pacing (it marks CHUNK_SENT as each write returns), timeouts
and status; voxwatch.metrics owns every number.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Collection, Protocol

from voxwatch.foundation.languages import is_english, primary

from voxwatch.foundation.events import Timeline

if TYPE_CHECKING:
    from voxwatch.datasets.wire import Wire


FAILURE_STATUSES = ("error", "auth_error", "rate_limited", "server_error", "malformed", "disconnected")


class ProviderError(Exception):
    """A provider failed in a way that becomes a failure row (never a latency).

    `status` names the kind of failure (one of FAILURE_STATUSES): a refused key, a rate limit (with
    the server's Retry-After, which the scheduler honours between items, never inside a clock), a
    server error, a message that breaks the protocol, or a connection dropped mid-stream.
    """

    def __init__(self, message: str, status: str = "error", retry_after_s: float | None = None) -> None:
        super().__init__(message)
        if status not in FAILURE_STATUSES:
            raise ValueError(f"unknown failure status {status!r}")
        self.status = status
        self.retry_after_s = retry_after_s


class HarnessFault(Exception):
    """The vendor refused the stream for a fault of voxwatch's own, not the vendor's (for example
    audio that reached it faster than real time: the worker's pacing). The row is `excluded` with
    the reason: not an attempt, so it counts in no rate against the vendor (METHOD)."""


class STTStreamSession(Protocol):
    async def send_audio(self, pcm16: bytes) -> None:
        """Write one chunk of little-endian int16 PCM; return once it is written."""

    async def end_audio(self) -> None:
        """No more audio: force the final where the API allows it, then close the input."""

    async def wait_final(self) -> None:
        """Return once the final transcript has arrived (marked FINAL) or the stream closed."""

    async def aclose(self) -> None: ...


class STTStream(Protocol):
    sample_rate: int

    async def connect(self, timeline: Timeline) -> STTStreamSession: ...


def on_wire(adapter, wire: Wire):
    """The adapter set to send `wire` audio (a dataset's wire format, such as the phone line's 8 kHz
    mu-law), or None when its protocol does not take it as voxwatch speaks it. An adapter that does
    lists the encodings in `wire_encodings` and makes a copy set for one in `on_wire(wire)`: the
    copy's session then takes that encoding's bytes in `send_audio`, and declares it to the vendor
    in the vendor's own terms."""
    if wire.encoding not in getattr(adapter, "wire_encodings", ()):
        return None
    return adapter.on_wire(wire)


def in_language(adapter, language: str):
    """The adapter set for a dataset's `language` (a BCP 47 tag), or None when its model cannot take
    it. An adapter whose vendor takes a language defines `in_language(language)`: a copy that declares
    it to the vendor in the vendor's own terms (see `language_copy`), or None. An adapter without one
    speaks English only (a local English model, an English voice, or a vendor voxwatch has not yet
    checked for other languages): it is refused every other language, never sent one it would mishear."""
    method = getattr(adapter, "in_language", None)
    if method is None:
        return adapter if is_english(language) else None
    return method(language)


def language_copy(adapter, language: str, taken: Collection[str] | None, attribute: str = "language"):
    """A copy of `adapter` with `attribute` set to the language's primary subtag (the ISO 639 code
    vendors' `language` parameters take), or None when it is not in `taken` (None: the vendor
    documents no list, and refuses what it cannot take itself). The adapter itself when it is already
    set for that language (English, almost always): measure_item asks once per item."""
    code = primary(language)
    if taken is not None and code not in taken:
        return None
    if getattr(adapter, attribute, None) == code:
        return adapter
    copied = copy.copy(adapter)
    setattr(copied, attribute, code)
    return copied


def takes_language(adapter, language: str, taken: Collection[str]):
    """The adapter itself when its model takes `language` but its protocol has nothing to declare it
    with (the model is the choice, or it speaks the input's language), else None."""
    return adapter if primary(language) in taken else None


class STTBatch(Protocol):
    sample_rate: int

    async def connect(self, timeline: Timeline) -> "STTBatch":
        """Warm the client (open the HTTP connection, load the model); returns the client to use."""

    async def transcribe(self, pcm16: bytes, timeline: Timeline) -> None:
        """Mark REQUEST_SENT, then RESPONSE and FINAL (with the transcript text)."""


class TTSSession(Protocol):
    async def synthesize(self, text: str) -> None:
        """Mark REQUEST_SENT, one AUDIO event per chunk (with its sample offset), then CLOSED."""

    async def aclose(self) -> None: ...


class TTSStream(Protocol):
    async def connect(self, timeline: Timeline, voice: str | None = None) -> TTSSession: ...


class S2SSession(Protocol):
    async def send_audio(self, pcm16: bytes) -> None: ...

    async def end_audio(self) -> None: ...

    async def wait_response(self) -> None:
        """Return once the model's spoken turn is complete (AUDIO events, then CLOSED)."""

    async def aclose(self) -> None: ...


class S2SStream(Protocol):
    sample_rate: int

    async def connect(self, timeline: Timeline) -> S2SSession: ...
