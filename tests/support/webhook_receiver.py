"""A real HTTP server on 127.0.0.1 that takes webhook POSTs, for the alert tests: it keeps every body it
got, with the time it arrived, and answers each path with a scripted sequence of status codes."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator


@dataclass(frozen=True)
class Received:
    path: str
    body: dict
    at: float  # time.time() as it arrived
    status: int  # what the receiver answered


class Receiver:
    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.received: list[Received] = []
        self._script: dict[str, list[int]] = {}
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def answer(self, path: str, *statuses: int) -> None:
        """Answer the next POSTs to path with these statuses in turn, then 200."""
        with self._lock:
            self._script[path] = list(statuses)

    def bodies(self, path: str, ok_only: bool = True) -> list[dict]:
        with self._lock:
            return [r.body for r in self.received if r.path == path and (r.status == 200 or not ok_only)]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """Block until at least `count` POSTs have arrived (any status)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                assert left > 0, f"the receiver got {len(self.received)} POSTs, expected {count}"
                self._arrived.wait(left)
            return list(self.received)

    def _take(self, path: str, body: dict) -> int:
        with self._arrived:
            script = self._script.get(path) or []
            status = script.pop(0) if script else 200
            self.received.append(Received(path, body, time.time(), status))
            self._arrived.notify_all()
            return status


@contextlib.contextmanager
def receiver() -> Iterator[Receiver]:
    box: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
            status = box[0]._take(self.path, body)
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args) -> None:  # keep the test output to the tests
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    box.append(Receiver(server))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box[0]
    finally:
        server.shutdown()
        server.server_close()
