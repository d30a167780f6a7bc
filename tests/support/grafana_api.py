"""A stand-in for the Grafana HTTP API endpoints `voxwatch dashboards push` calls, for tests.

Grafana itself cannot run on the test machines. This serves, with Grafana's documented request and
response shapes (HTTP API: Folder, Dashboard), exactly what grafana-client sends for a push:
GET /api/folders/:uid, POST /api/folders, GET /api/dashboards/uid/:uid and POST /api/dashboards/db.
Every request needs `Authorization: Bearer <token>` (401 otherwise, as Grafana answers a bad
service account token). A dashboard is kept by uid; POST /api/dashboards/db creates it (version 1)
or, for a known uid, refuses it unless `overwrite` is true (412) and otherwise replaces it with the
version incremented.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


@dataclass
class GrafanaState:
    token: str
    folders: dict[str, dict] = field(default_factory=dict)
    dashboards: dict[str, dict] = field(default_factory=dict)  # uid -> {"dashboard", "meta"}
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path) of every authorised request
    next_id: int = 1


class _Handler(BaseHTTPRequestHandler):
    state: GrafanaState
    lock: threading.Lock

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        if self.headers.get("Authorization") != f"Bearer {self.state.token}":
            self._send(401, {"message": "invalid API key", "traceID": ""})
            return False
        self.state.requests.append((self.command, self.path))
        return True

    def _body(self) -> dict | None:
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send(400, {"message": "bad request data"})
            return None
        return body

    def do_GET(self) -> None:
        if not self._authorised():
            return
        with self.lock:
            if m := re.fullmatch(r"/api/folders/([^/?]+)", self.path):
                folder = self.state.folders.get(m.group(1))
                self._send(200, folder) if folder else self._send(404, {"message": "folder not found"})
            elif m := re.fullmatch(r"/api/dashboards/uid/([^/?]+)", self.path):
                found = self.state.dashboards.get(m.group(1))
                self._send(200, found) if found else self._send(404, {"message": "Dashboard not found"})
            else:
                self._send(404, {"message": "Not found"})

    def do_POST(self) -> None:
        if not self._authorised():
            return
        body = self._body()
        if body is None:
            return
        with self.lock:
            if self.path == "/api/folders":
                self._create_folder(body)
            elif self.path == "/api/dashboards/db":
                self._save_dashboard(body)
            else:
                self._send(404, {"message": "Not found"})

    def _create_folder(self, body: dict) -> None:
        uid, title = body.get("uid"), body.get("title")
        if not title:
            self._send(400, {"message": "folder title cannot be empty"})
        elif uid in self.state.folders:
            self._send(409, {"message": "a folder with the same uid already exists"})
        else:
            folder = {"id": self.state.next_id, "uid": uid, "title": title, "version": 1,
                      "url": f"/dashboards/f/{uid}/{slug(title)}"}
            self.state.next_id += 1
            self.state.folders[uid] = folder
            self._send(200, folder)

    def _save_dashboard(self, body: dict) -> None:
        dash, folder_uid = body.get("dashboard"), body.get("folderUid", "")
        if not isinstance(dash, dict) or not dash.get("title"):
            self._send(400, {"message": "Dashboard title cannot be empty", "status": "empty-name"})
            return
        if folder_uid and folder_uid not in self.state.folders:
            self._send(400, {"message": "folder not found", "status": "folder-not-found"})
            return
        uid = dash.get("uid")
        if not uid or len(uid) > 40:
            self._send(400, {"message": "uid missing or longer than 40 characters"})
            return
        existing = self.state.dashboards.get(uid)
        if existing and not body.get("overwrite"):
            self._send(412, {"message": "A dashboard with the same uid already exists", "status": "name-exists"})
            return
        version = existing["dashboard"]["version"] + 1 if existing else 1
        dash_id = existing["dashboard"]["id"] if existing else self.state.next_id
        if not existing:
            self.state.next_id += 1
        stored = {**dash, "id": dash_id, "version": version}
        url = f"/d/{uid}/{slug(dash['title'])}"
        self.state.dashboards[uid] = {"dashboard": stored, "meta": {
            "slug": slug(dash["title"]), "url": url, "folderUid": folder_uid, "version": version,
            "message": body.get("message", "")}}
        self._send(200, {"id": dash_id, "uid": uid, "url": url, "status": "success", "version": version,
                         "slug": slug(dash["title"])})


class GrafanaAPI:
    """The server on 127.0.0.1 (a free port), in a background thread; use as a context manager."""

    def __init__(self, token: str) -> None:
        self.state = GrafanaState(token)
        handler = type("Handler", (_Handler,), {"state": self.state, "lock": threading.Lock()})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "GrafanaAPI":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
