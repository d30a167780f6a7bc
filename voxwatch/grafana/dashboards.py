"""`voxwatch dashboards push`: upload the Grafana dashboards (dashboards/*.json) to a Grafana, by uid.

The docker-compose Grafana loads the same files by provisioning; push is for a Grafana that runs
elsewhere. Each dashboard is created or updated by its uid (POST /api/dashboards/db with overwrite,
through grafana-client) in a `voxwatch` folder, so pushing again updates in place and never
duplicates. The token comes only from VOXWATCH_GRAFANA_TOKEN and never appears in any message.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from grafana_client import GrafanaApi
from grafana_client.client import GrafanaClientError, GrafanaException, GrafanaUnauthorizedError

from voxwatch.foundation.network_errors import reason
from voxwatch.foundation.redaction import scrub

DATASOURCE_TYPE = "grafana-postgresql-datasource"
"""The core Postgres datasource's plugin id since Grafana 10.2.3 (it was `postgres` before, now an alias)."""
MIN_GRAFANA_VERSION = (10, 2, 3)
"""The oldest Grafana the dashboards and the provisioning work on (dashboards/README.md says so)."""
TOKEN_VARIABLE = "VOXWATCH_GRAFANA_TOKEN"
FOLDER_UID = "voxwatch"
FOLDER_TITLE = "voxwatch"
TIMEOUT_S = 10.0
_UID = re.compile(r"[A-Za-z0-9_-]{1,40}")  # Grafana's rule for a dashboard uid


class DashboardError(RuntimeError):
    """Bad dashboard files, a missing token, or a Grafana that refused or could not be reached."""


@dataclass(frozen=True)
class Pushed:
    uid: str
    title: str
    version: int
    previous: int | None  # the version Grafana held before; None when this push created it
    url: str


def load(folder: Path) -> list[dict]:
    """Every dashboard in the folder, checked before anything is sent: valid JSON, a title, a unique uid."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise DashboardError(f"no dashboard JSON files in {folder}; run from the voxwatch checkout or pass --dir")
    dashboards: list[dict] = []
    seen: dict[str, str] = {}
    for path in files:
        try:
            dashboard = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DashboardError(f"{path}: not a readable JSON file: {exc}") from None
        if not isinstance(dashboard, dict) or not dashboard.get("title"):
            raise DashboardError(f"{path}: not a Grafana dashboard (no title)")
        uid = dashboard.get("uid")
        if not isinstance(uid, str) or not _UID.fullmatch(uid):
            raise DashboardError(f"{path}: needs a uid of 1-40 letters, digits, '-' or '_' (got {uid!r})")
        if uid in seen:
            raise DashboardError(f"{path}: uid {uid!r} is also the uid of {seen[uid]}")
        seen[uid] = path.name
        dashboards.append(dashboard)
    return dashboards


def token_from_env() -> str:
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if not token:
        raise DashboardError(f"set {TOKEN_VARIABLE} to a Grafana service account token with the Editor role")
    return token


def push(url: str, token: str, dashboards: list[dict]) -> list[Pushed]:
    """Create or update each dashboard by uid in the voxwatch folder (created when missing)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DashboardError("--url must be Grafana's http(s) base URL, e.g. http://localhost:3000")
    if "@" in parts.netloc:  # a user part: credentials, which belong in the token
        raise DashboardError(f"leave credentials out of --url; the token comes from {TOKEN_VARIABLE}")
    api = GrafanaApi.from_url(url, credential=token, timeout=TIMEOUT_S)

    def failure(text: str) -> DashboardError:  # whatever Grafana or the HTTP client said, the token cut out
        return DashboardError(scrub(text, secrets=[token], urls=[url]))

    try:
        _ensure_folder(api)
        return [_push_one(api, url, d) for d in dashboards]
    except GrafanaUnauthorizedError:
        raise failure(f"Grafana at {url} refused the token in {TOKEN_VARIABLE} (401 Unauthorized); "
                      "use a valid service account token") from None
    except GrafanaException as exc:
        if exc.status_code == 403:
            detail = "the token may not write dashboards (403 Forbidden); give its service account the Editor role"
        elif isinstance(exc.response, dict):  # Grafana's own error: {"message": ...}
            detail = f"Grafana answered {exc.status_code}: {exc.response.get('message', exc.message)}"
        elif exc.status_code:
            detail = f"answered {exc.status_code} with a body that is not Grafana's JSON; check --url"
        else:
            detail = str(exc.message)
        raise failure(f"{url}: {detail}") from None
    except (ValueError, KeyError, TypeError):  # a body that is not JSON, or JSON without Grafana's fields
        raise failure(f"the server at {url} did not answer like Grafana's HTTP API; check --url") from None
    except OSError as exc:  # niquests' connection errors (refused, DNS, TLS) are OSErrors
        raise failure(f"cannot reach Grafana at {url}: {reason(exc)}") from None


def _ensure_folder(api: GrafanaApi) -> None:
    try:
        api.folder.get_folder(FOLDER_UID)
    except GrafanaClientError as exc:
        if exc.status_code != 404:
            raise
        api.folder.create_folder(FOLDER_TITLE, uid=FOLDER_UID)


def _push_one(api: GrafanaApi, base_url: str, dashboard: dict) -> Pushed:
    uid = dashboard["uid"]
    try:
        previous = api.dashboard.get_dashboard(uid)["dashboard"].get("version")
    except GrafanaClientError as exc:
        if exc.status_code != 404:
            raise
        previous = None
    # id null + uid + overwrite: Grafana creates the dashboard or replaces the one with this uid
    result = api.dashboard.update_dashboard({"dashboard": {**dashboard, "id": None}, "folderUid": FOLDER_UID,
                                             "overwrite": True, "message": "voxwatch dashboards push"})
    # Grafana's url is absolute-path, including any sub-path Grafana is served under
    return Pushed(uid, dashboard["title"], int(result["version"]), previous, urljoin(base_url, result["url"]))
