"""What the WebSocket adapters share around a session: its set-up before t0, and the envelope
around the reader of the vendor's messages (what a malformed message, a dropped socket or a clean
close means, and how the reader's end is marked), written once so it reads the same for every vendor."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Awaitable, Callable, Sequence, TypeVar

import websockets

from voxwatch.foundation.events import CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.base import HarnessFault, ProviderError
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.stamped import received

T = TypeVar("T")

MALFORMED: tuple[type[Exception], ...] = (ValueError, KeyError, IndexError, TypeError, AttributeError)
"""What reading a message that breaks a vendor's protocol raises: bad JSON, UTF-8 or base64 (ValueError,
which JSONDecodeError, UnicodeDecodeError and binascii.Error are), a missing field or item (KeyError,
IndexError), a field of the wrong type (TypeError, AttributeError). Every reader calls these malformed."""


def malformed(vendor: str, exc: BaseException) -> ProviderError:
    """The failure of a message from `vendor` that broke its protocol, named by what it raised."""
    return ProviderError(f"malformed message from {vendor} ({type(exc).__name__})", "malformed")


async def settle(ws, setup: Awaitable[T]) -> T:
    """Run `setup` on a fresh socket; when it fails, close the socket (a ProviderError) or abort it
    (cancelled: the harness timed the set-up out, and there is no close handshake to wait for)."""
    try:
        return await setup
    except ProviderError:
        await ws.close()
        raise
    except BaseException:
        ws.transport.abort()
        raise


def decode_event(message: str | bytes) -> dict:
    """One server event of an OpenAI-style realtime API (OpenAI, xAI, Qwen, Zhipu): a JSON object
    with a string `type`; anything else raises (ValueError / TypeError), which callers call malformed."""
    data = json.loads(message)
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise TypeError("a server event is a JSON object with a type")
    return data


async def until_ready(ws, vendor: str, ready: Callable[[Any], T | None], stage: str = "during set-up",
                      send: str | None = None, decode: Callable[[str | bytes], Any] = json.loads) -> T:
    """A session's set-up (before t0): send `send` (the vendor's set-up message, if any), then read the
    messages, each decoded, until `ready(message)` gives something, which is returned (`ready` raises
    the vendor's refusal). A message that breaks the protocol is malformed; a close before the session
    is ready is a failure by its close, at `stage`."""
    stream = received(ws)  # keeps the connection's arrival stamps in step with its messages
    try:
        if send is not None:
            await ws.send(send)
        async for message, _ in stream:
            got = ready(decode(message))
            if got is not None:
                return got
        raise closed(vendor, ws.close_code, stage)
    except MALFORMED as exc:
        raise malformed(vendor, exc) from None
    except websockets.ConnectionClosed as exc:
        raise closed(vendor, exc, stage) from None
    finally:
        await stream.aclose()


async def update_session(ws, session: dict, vendor: str, error_of: Callable[[dict], ProviderError]) -> None:
    """The OpenAI-style realtime set-up (OpenAI Realtime, Zhipu GLM-Realtime): wait for
    `session.created`, send `session.update`, wait for `session.updated`; an `error` event refuses it."""
    stream = received(ws)  # keeps the connection's arrival stamps in step with its messages
    try:
        async for message, _ in stream:
            data = decode_event(message)
            kind = data["type"]
            if kind == "error":
                raise error_of(data)
            if kind == "session.created":
                await ws.send(json.dumps({"type": "session.update", "session": session}))
            elif kind == "session.updated":
                return
        raise closed(vendor, ws.close_code, "during set-up")
    except (ValueError, KeyError, TypeError) as exc:  # bad JSON or UTF-8, a missing type, not an object
        raise malformed(vendor, exc) from None
    except websockets.ConnectionClosed as exc:
        raise closed(vendor, exc, "during set-up") from None
    finally:
        await stream.aclose()


class Reader:
    """The envelope around a reader of a vendor's messages. The adapter's `_read` holds the vendor's
    protocol and nothing else; what ends it is read here, the same for every vendor: a malformed
    message (MALFORMED), an error the protocol raised (a ProviderError), a socket that closed with
    an error (`_dropped`, by kind), or a clean close. `vendor` names the vendor in the messages."""

    vendor: str
    ws: Any  # the session's StampedConnection
    timeline: Timeline

    async def _read(self) -> None:
        """Read the vendor's messages until the exchange is over; raise to fail it."""
        raise NotImplementedError

    async def _messages(self) -> AsyncIterator[tuple[Any, int]]:
        """The vendor's text messages decoded from JSON, each with its arrival stamp (binary frames,
        which carry no JSON, are skipped); a message that is not JSON raises ValueError (malformed)."""
        async for message, at in received(self.ws):
            if not isinstance(message, bytes):
                yield json.loads(message), at

    def _dropped(self, exc: websockets.ConnectionClosed) -> ProviderError | HarnessFault:
        """The failure of a socket that closed with an error while `_read` read it (close_codes)."""
        return closed(self.vendor, exc)

    async def _read_through(self) -> ProviderError | HarnessFault | None:
        """Run `_read`; the failure that ended it, or None when it ended normally (or the socket
        closed cleanly)."""
        try:
            await self._read()
        except MALFORMED as exc:
            return malformed(self.vendor, exc)
        except ProviderError as exc:  # the vendor's own error message, as `_read` named it
            return exc
        except websockets.ConnectionClosedError as exc:
            return self._dropped(exc)
        except websockets.ConnectionClosed:
            pass  # closed cleanly: what that means before the exchange was over is `_read`'s to say
        return None

    async def _read_reply(self) -> None:
        """`_read` in the caller's own task (a TTS reply, read within `synthesize` and so within the
        harness's timeout), its failure raised there."""
        failure = await self._read_through()
        if failure is not None:
            raise failure

    async def _request_reply(self, messages: Sequence[str], sent: int | None = None) -> None:
        """A TTS request and its reply: write `messages`, REQUEST_SENT marked once the first `sent` of
        them are written (all by default: the one the clock starts at is the vendor's to say), then
        `_read_reply` and CLOSED. A socket the server has closed fails with its close (close_codes)."""
        sent = len(messages) if sent is None else sent
        try:
            for i, message in enumerate(messages, 1):
                await self.ws.send(message)
                if i == sent:
                    self.timeline.mark(REQUEST_SENT)
        except websockets.ConnectionClosed as exc:
            raise closed(self.vendor, exc) from None
        await self._read_reply()
        self.timeline.mark(CLOSED)


class ReaderSession(Reader):
    """A session whose one reader task (`_receive`, started here) runs `_read` in the envelope and
    sets `_done` when it ends, with `_error` the failure if any (`_fail`); `_reader_ended` marks its
    end. Subclasses set their own state (the timeline first) before calling this __init__;
    `start=False` leaves the task to `_start_reader` (a session whose set-up reads the first
    messages itself)."""

    close_wait_s = 1.0
    timeline: Timeline

    def __init__(self, ws, start: bool = True) -> None:
        self.ws = ws
        self._done = asyncio.Event()
        self._error: ProviderError | HarnessFault | None = None
        self._reader: asyncio.Task | None = None
        if start:
            self._start_reader()

    def _start_reader(self) -> None:
        """Start the reader task: at construction, or once the session's own set-up has read the
        messages that come first."""
        self._reader = asyncio.create_task(self._receive())

    async def _receive(self) -> None:
        """The reader task: `_read` in the envelope; however it ends, `_reader_ended`, then `_done`."""
        try:
            failure = await self._read_through()
            if failure is not None:
                self._fail(failure)
        finally:
            self._reader_ended()
            self._done.set()

    def _fail(self, error: ProviderError | HarnessFault) -> None:
        """The reader failed with `error`: it becomes the session's."""
        self._error = error

    def _reader_ended(self) -> None:
        """The reader is ending (`_error` set if it failed): the stream is CLOSED on its timeline."""
        self.timeline.mark(CLOSED)

    async def _send(self, message: bytes | str) -> None:
        """Send one message. Once the vendor has closed the session, fail with the reader's failure
        (given a moment to see the close too: the vendor's own error message, read first, says why),
        else the close's own, by kind (`_dropped`)."""
        try:
            await self.ws.send(message)
        except websockets.ConnectionClosed as exc:
            try:
                await asyncio.wait_for(self._done.wait(), self.close_wait_s)
            except asyncio.TimeoutError:
                pass
            raise self._error or self._dropped(exc) from None

    async def _send_event(self, event: dict) -> None:
        """Send a client event as JSON (`_send`)."""
        await self._send(json.dumps(event))

    async def _close_socket(self) -> None:
        """Close the socket; abort it when the reader failed: nothing reads it any more, so the vendor's
        messages can fill its queue until the close handshake waits out its timeout (10 s)."""
        if self._error is not None:
            self.ws.transport.abort()
        else:
            await self.ws.close()

    async def _end_and_close(self, end: Callable[[], Awaitable[None]], wait_s: float = 2.0) -> None:
        """A session's aclose for a vendor that ends a stream by a message and then closes it itself:
        send the end (`end()`, unless the reader has already ended), give the vendor `wait_s` to send
        what remains and close, then close the socket (`_close_socket`) and stop the reader. Whatever
        the end or the wait meets is the reader's to report, not the close's."""
        try:
            if not self._done.is_set():
                await end()
            await asyncio.wait_for(asyncio.shield(self._reader), wait_s)
        except (ProviderError, HarnessFault, websockets.ConnectionClosed, asyncio.TimeoutError):
            pass
        await self._close_socket()
        self._reader.cancel()

    async def _wait(self) -> None:
        await self._done.wait()
        if self._error is not None:
            raise self._error

    async def _wait_for(self, event: asyncio.Event) -> None:
        """Return once `event` is set or the reader has ended, raising the reader's failure if any:
        a forced end of turn is answered by the vendor's own event, or by a closed stream."""
        waiters = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(self._done.wait())]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        """Close the socket, giving the reader a moment to see the close."""
        await self.ws.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), self.close_wait_s)
        except asyncio.TimeoutError:
            self._reader.cancel()
