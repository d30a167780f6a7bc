"""A throwaway HTTP server on 127.0.0.1 for the download tests: a handler class served from a daemon
thread until close() (or the end of a `with` block); `stop` is set first, so a handler that waits or drips on it ends at once."""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Loopback:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.stop = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str, auth: str = "") -> str:
        """http://[auth@]127.0.0.1:PORT/path; `auth` is "user:password" to put in the URL."""
        return f"http://{auth + '@' if auth else ''}127.0.0.1:{self.httpd.server_address[1]}{path}"

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "Loopback":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sha256_of(data: bytes) -> str:
    """The hex SHA-256 a catalog entry declares for a served body."""
    return hashlib.sha256(data).hexdigest()


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 (keep-alive, as a download client expects), and no access log on the test's stderr."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass


class FileServer(Loopback):
    """Files by path (the query string included: a listing URL may have one), 404 for any other;
    every path asked for is logged."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.asked: list[str] = []
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                server.asked.append(self.path)
                body = server.files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        super().__init__(Handler)
