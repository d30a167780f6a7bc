"""One path for each safety-critical concern: one reading of a store URL (voxwatch/foundation/store_url.py),
one scrubber (voxwatch/foundation/redaction.py), one way to open Postgres (voxwatch/store/connection.py).

A leak starts where two copies of such code differ, so the first tests make sure there are no
copies (a grep over the source), and the rest try the one copy on the URLs that broke copies
before: percent-encoded passwords, an '@' or '/' left raw in a password (libpq then quotes a piece
of it as a host or port), `password=` parameters, unix-socket and IPv6 hosts, Redis URLs, and
every error path that can quote one (psycopg, the web app's reads, the alerts, the broker,
Grafana)."""

from __future__ import annotations

import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from support.postgres import POSTGRES_ADMIN
from support.processes import REPO
from voxwatch.foundation.redaction import MASK, opaque_pieces, redact_url, scrub, url_secrets
from voxwatch.foundation.store_url import StoreError
from voxwatch.store import open_store
from voxwatch.store.connection import connect
from voxwatch.foundation.store_url import POSTGRES, SQLITE, parse_store_url, store_kind

SOURCES = [p for folder in ("voxwatch", "benchmarks", "tests")
           for p in sorted((REPO / folder).rglob("*.py")) if p != Path(__file__).resolve()]

# (what must have one home, a pattern, the files allowed to hold it)
ONE_HOME = [
    ("opening Postgres", r"psycopg\.connect\(", {"voxwatch/store/connection.py"}),
    ("reading a Postgres URL", r"conninfo_to_dict|make_conninfo|conninfo\.", {"voxwatch/foundation/store_url.py"}),
    ("telling store URL schemes apart", r"""startswith\(\(?\s*["'](sqlite|postgres)|["'](sqlite:///|postgres(ql)?://)["']""",
     {"voxwatch/foundation/store_url.py"}),
    ("the mask", r"""["']\*\*\*["']""", {"voxwatch/foundation/redaction.py"}),
    ("cutting a secret out of a text", r"\.replace\([^)]*(reveal\(\)|MASK|_secret|secret\b)", {"voxwatch/foundation/redaction.py"}),
    # grpc_wire.py's unquote decodes a gRPC status message (grpc-message is percent-encoded UTF-8, gRPC's
    # PROTOCOL-HTTP2.md), which is no URL and holds no password
    ("reading a URL's password", r"\.password\b|parse_qsl\(|unquote(_plus)?\(",
     {"voxwatch/foundation/redaction.py", "voxwatch/providers/session/grpc_wire.py"}),
]


def _where(pattern: str, skip_tests: bool) -> set[str]:
    found = set()
    for path in SOURCES:
        rel = path.relative_to(REPO).as_posix()
        if skip_tests and rel.startswith("tests/"):
            continue
        if re.search(pattern, path.read_text(encoding="utf-8")):
            found.add(rel)
    return found


@pytest.mark.parametrize("what, pattern, home", ONE_HOME, ids=[w for w, _, _ in ONE_HOME])
def test_each_concern_has_one_implementation(what, pattern, home):
    # the mask may be asserted on by tests ("*** in the message"); nothing else has an exemption
    found = _where(pattern, skip_tests=what == "the mask")
    assert found <= home, f"{what} outside its one home {sorted(home)}: {sorted(found - home)}"
    assert found, f"the pattern for {what} matches nothing: the check has gone stale"


def test_no_message_names_a_store_or_broker_url_unredacted():
    """Every f-string that puts the store's or the broker's URL in a message wraps it in the scrubber."""
    raw = re.compile(r"\{(?:cfg|config|self|args)?\.?(?:store_url|broker\.url|_url|url)\}")
    offenders = []
    for path in SOURCES:
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(("tests/", "voxwatch/providers/")) or rel == "voxwatch/grafana/dashboards.py":
            continue  # vendors' and Grafana's base URLs hold no password (push refuses one)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if raw.search(line) and ("Error(" in line or "print(" in line or "log." in line):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# --- the parser ---

def test_store_kinds_by_scheme_only():
    assert store_kind("sqlite:///var/x.sqlite") == SQLITE
    assert store_kind("postgresql://h/db") == store_kind("postgres://h/db") == POSTGRES
    assert store_kind("sqlite://var/x.sqlite") is None and store_kind("mysql://u:pw@h/db") is None


def test_sqlite_paths_relative_and_absolute():
    assert parse_store_url("sqlite:///var/x.sqlite").path == Path("var/x.sqlite")
    assert parse_store_url("sqlite:////abs/dir/x.sqlite").path == Path("/abs/dir/x.sqlite")


@pytest.mark.parametrize("url, conninfo, shown", [
    ("postgresql://u:p%40ss%2Fw0rd-1@127.0.0.1:5433/db", {"user": "u", "password": "p@ss/w0rd-1", "host": "127.0.0.1",
                                                           "port": "5433", "dbname": "db"},
     "postgresql://u:***@127.0.0.1:5433/db"),
    ("postgres://u@h/db?password=s%26cret-pw2&sslmode=disable", {"password": "s&cret-pw2", "sslmode": "disable"},
     "postgres://u@h/db?password=***&sslmode=disable"),
    ("postgresql://u:sock-pw3@%2Fvar%2Frun%2Fpostgresql/db", {"host": "/var/run/postgresql", "password": "sock-pw3"},
     "postgresql://u:***@%2Fvar%2Frun%2Fpostgresql/db"),
    ("postgresql:///db?host=/tmp/pg&password=qs-pw4", {"host": "/tmp/pg", "password": "qs-pw4"},
     "postgresql:///db?host=/tmp/pg&password=***"),
    ("postgresql://u:six-pw5@[::1]:5432/db", {"host": "::1", "port": "5432", "password": "six-pw5"},
     "postgresql://u:***@[::1]:5432/db"),
])
def test_postgres_urls_are_read_by_libpq_once_and_shown_without_the_password(url, conninfo, shown):
    parsed = parse_store_url(url)
    assert parsed.kind == POSTGRES and parsed.shown == shown
    assert parsed.conninfo.items() >= conninfo.items()
    password = conninfo["password"]
    assert password not in repr(parsed) and password not in parsed.shown
    assert parsed.scrub(f"echo: {password} / {url}").count(password) == 0


@pytest.mark.parametrize("url, pieces", [
    ("postgresql://u:left-half@right-half@127.0.0.1:1/db", ["left-half", "right-half"]),  # libpq: host 'right-half@...'
    ("postgresql://u:front-part/back-part@127.0.0.1:1/db", ["front-part", "back-part"]),  # libpq: port 'front-part'
    ("postgresql://u:bad%zz-secret@127.0.0.1:1/db", ["zz-secret"]),  # libpq quotes the bad token
    ("postgresql://u:qs-secret@h/db?bogus=1", ["qs-secret"]),  # libpq refuses the parameter
    ("postgresql://u@h/db?password=bad%zz-query", ["zz-query"]),
])
def test_a_url_libpq_cannot_read_is_refused_without_any_piece_of_its_password(url, pieces):
    with pytest.raises(StoreError) as err:
        parse_store_url(url)
    assert all(p not in str(err.value) for p in pieces), str(err.value)


# --- the scrubber ---

@pytest.mark.parametrize("url, shown", [
    ("redis://:redis-pw@broker:6379/0", "redis://:***@broker:6379/0"),
    ("rediss://user:redis-pw@broker:6380", "rediss://user:***@broker:6380"),
    ("redis://broker:6379/0", "redis://broker:6379/0"),
    ("http://admin:grafana-pw@127.0.0.1:3000/", "http://admin:***@127.0.0.1:3000/"),
    ("postgresql://u:left@right@h/db", "postgresql://u:***@h/db"),
    ("postgresql://u:pw@[::1/db", "postgresql://(unparseable URL)"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_scrub_cuts_every_spelling_of_every_kind_of_secret():
    from voxwatch.providers.keys import Secret

    url = "postgresql://u:p%40ss-word@h/db?password=two+words"
    assert set(url_secrets(url)) >= {"p%40ss-word", "p@ss-word", "two+words", "two words"}
    text = (f"connect {url} failed: password 'p@ss-word' or 'two words' rejected; key sk-abc123; "
            "webhook https://hooks.example/T0/B1/tok3n?x=1 said no to /T0/B1/tok3n")
    out = scrub(text, urls=[url], secrets=[Secret("sk-abc123"), None],
                opaque_urls=["https://hooks.example/T0/B1/tok3n?x=1"])
    for secret in ("p%40ss-word", "p@ss-word", "two+words", "two words", "sk-abc123", "tok3n", "hooks.example/T0"):
        assert secret not in out, out
    assert "postgresql://u:***@h/db" in out and out.count(MASK) >= 6
    assert scrub("a b c", secrets=["a", ""]) == "a b c"  # a 1-character "secret" would blank out ordinary text
    assert "/T0/B1/tok3n" in opaque_pieces("https://hooks.example/T0/B1/tok3n")


# --- every error path, on a store that is down ---

def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PASSWORD = "p@ss/w0rd?#-9f3e"
ENCODED = "p%40ss%2Fw0rd%3F%23-9f3e"
SPELLINGS = (PASSWORD, ENCODED, "w0rd", "9f3e")


def _tricky_urls(port: int) -> list[str]:
    return [f"postgresql://voxwatch:{ENCODED}@127.0.0.1:{port}/voxwatch?connect_timeout=2",
            f"postgres://voxwatch@127.0.0.1:{port}/voxwatch?password={ENCODED}&connect_timeout=2"]


def _clean(text: str) -> None:
    assert not any(s in text for s in SPELLINGS), text


def test_every_postgres_error_path_hides_every_spelling_of_the_password(monkeypatch):
    from voxwatch.alerts.store import connected
    from voxwatch.providers.registry import Registry
    from voxwatch.web.source import StoreUnavailable, open_source

    for url in _tricky_urls(_dead_port()):
        for attempt in (lambda: connect(url), lambda: open_store(url), lambda: connected(url, "cannot read").__enter__()):
            with pytest.raises(StoreError) as err:
                attempt()
            _clean(str(err.value))
            assert "127.0.0.1" in str(err.value) and MASK in str(err.value)
        source = open_source(url, Registry.default())
        with pytest.raises(StoreUnavailable) as unavailable:
            source.version()
        _clean(unavailable.value.public + unavailable.value.detail)
        assert MASK in unavailable.value.detail


def test_the_one_connection_path_reads_a_percent_encoded_password_as_libpq_does():
    """The local Postgres trusts its clients, so the password is accepted and ignored: the connection
    works with it in hand, as a deployment's does."""
    scheme, rest = POSTGRES_ADMIN.split("://", 1)
    user, host = rest.split("@", 1)
    try:
        conn = connect(f"{scheme}://{user}:{ENCODED}@{host}", timeout_s=5)
    except StoreError as exc:
        pytest.skip(f"no Postgres: {exc}")
    with conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.info.password == PASSWORD


def test_a_broker_that_is_down_is_named_without_its_password(tmp_path):
    from dataclasses import replace

    from voxwatch.config import load
    from voxwatch.workers.celery_app import BrokerUnreachable, enqueue_plan

    cfg = load(None)
    cfg = replace(cfg, broker=replace(cfg.broker, url=f"redis://:{ENCODED}@127.0.0.1:{_dead_port()}/0"))
    with pytest.raises(BrokerUnreachable) as err:
        enqueue_plan(cfg, cfg.region)
    _clean(str(err.value))
    assert f"redis://:{MASK}@127.0.0.1" in str(err.value)


def test_a_grafana_that_echoes_the_token_does_not_make_push_print_it():
    from voxwatch.grafana import dashboards

    token = "glsa_echoed-9c1d2e"

    class Echo(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            body = json.dumps({"message": f"bad credentials: {self.headers.get('Authorization')}"}).encode()
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(dashboards.DashboardError) as err:
            dashboards.push(f"http://127.0.0.1:{server.server_port}", token, [{"uid": "u", "title": "t"}])
    finally:
        server.shutdown()
    assert token not in str(err.value) and "bad credentials" in str(err.value), str(err.value)
