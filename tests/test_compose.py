"""docker-compose.yml is safe by default (issue #18): no working default password, nothing published
beyond 127.0.0.1 unless the operator says so, images on exact versions, the web app on a role that
reads and adds ratings only with no vendor key or webhook URL, health checks for the worker and beat,
and a LICENSE that matches pyproject. The compose file is read with PyYAML (anchors and merges
resolved as compose resolves them); `docker compose config` (or Debian's `docker-compose config`)
checks it too where the CLI is installed. docker/postgres-roles.sh runs against the real Postgres."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tomllib
from pathlib import Path

import psycopg
import psycopg.errors
import pytest
import yaml

from support.postgres import POSTGRES_ADMIN, fresh_postgres
from support.processes import REPO, run_cli
from voxwatch.foundation.store_url import POSTGRES, parse_store_url, store_kind
from voxwatch.store.preference_rows import RatingRow
from voxwatch.store import open_store
from voxwatch.store.connection import connect
from voxwatch.workers import heartbeat
from voxwatch.workers.celery_app import settings
from voxwatch.config import load

pytestmark = pytest.mark.e2e

COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
COMPOSE_TEXT = yaml.safe_dump(COMPOSE, width=10**6)
"""Every value of the file (its comments left out), one per line, as compose interpolates them."""
SERVICES = COMPOSE["services"]
ENV_EXAMPLE = dict(line.split("=", 1) for line in (REPO / ".env.example").read_text().splitlines()
                   if line and not line.startswith("#"))
REFERENCE = re.compile(r"\$\{(\w+)(?:(:?[-?])([^}]*))?\}")
"""A compose interpolation: ${NAME}, ${NAME:-default}, ${NAME:?error} (and the forms without ':')."""
PASSWORDS = {"POSTGRES_PASSWORD", "VOXWATCH_PG_READER_PASSWORD", "VOXWATCH_PG_WEB_PASSWORD", "GRAFANA_ADMIN_PASSWORD"}
SECRET = re.compile(r"PASSWORD|API_KEY|WEBHOOK|TOKEN|SECRET")
EXACT_TAG = re.compile(r"(postgres:\d+\.\d+|[^:@]+:\d+\.\d+\.\d+)(-[a-z0-9.-]+)?(@sha256:[0-9a-f]{64})?")
"""An image named by an exact release (major.minor.patch; PostgreSQL's are major.minor since 10), a
variant suffix and a digest allowed: never latest, never a major-only or major.minor tag like 3.11-slim."""


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    return dict(e.split("=", 1) for e in env) if isinstance(env, list) else {k: str(v) for k, v in env.items()}


def _references(value) -> list[tuple[str, str, str]]:
    return [m.groups("") for m in REFERENCE.finditer(yaml.safe_dump(value, width=10**6))]


# ---------------------------------------------------------------- passwords

def test_every_password_is_required_and_has_no_default_anywhere():
    used = {name for name, _, _ in REFERENCE.findall(COMPOSE_TEXT) if "PASSWORD" in name}
    assert used == PASSWORDS
    for name, op, message in (m.groups("") for m in REFERENCE.finditer(COMPOSE_TEXT)):
        if "PASSWORD" in name:  # `:?` also refuses the empty string a copied .env.example has
            assert op == ":?" and name in message, (name, op, message)
    for service_name, service in SERVICES.items():
        for key, value in _environment(service).items():
            if "PASSWORD" in key:
                assert REFERENCE.fullmatch(value), (service_name, key, value)  # never a literal
    for name in PASSWORDS:
        assert ENV_EXAMPLE[name] == "", name  # .env.example holds no usable password
    assert "openssl rand" in (REPO / ".env.example").read_text()  # and says how to make one


def test_every_variable_the_compose_file_reads_is_in_env_example():
    assert {name for name, _, _ in REFERENCE.findall(COMPOSE_TEXT)} <= set(ENV_EXAMPLE)


# ---------------------------------------------------------------- ports and images

def test_every_published_port_binds_loopback_unless_the_operator_opts_in():
    published = [(name, port) for name, s in SERVICES.items() for port in s.get("ports", [])]
    assert {name for name, _ in published} == {"web", "grafana"}
    for name, port in published:
        assert isinstance(port, str) and re.fullmatch(r"(\$\{VOXWATCH_BIND:-127\.0\.0\.1\}|127\.0\.0\.1):\S+:\d+", port), \
            (name, port)
    assert ENV_EXAMPLE["VOXWATCH_BIND"] == "127.0.0.1"
    assert {name for name, s in SERVICES.items() if "ports" not in s} >= {"postgres", "redis", "worker", "beat"}


def test_every_image_names_an_exact_version():
    images = {name: s["image"] for name, s in SERVICES.items() if "build" not in s}
    assert set(images) == {"postgres", "redis", "db-roles", "grafana"}
    for name, image in images.items():
        assert EXACT_TAG.fullmatch(image) and ":latest" not in image, (name, image)
    assert images["db-roles"] == images["postgres"]  # its psql is the server's own version
    (base,) = re.findall(r"^FROM\s+(\S+)", (REPO / "Dockerfile").read_text(), re.M)
    assert EXACT_TAG.fullmatch(base), base
    for name, s in SERVICES.items():
        if "build" in s:
            assert s["image"] == "voxwatch:local", name  # built here, never pulled


# ---------------------------------------------------------------- who gets which secret

def test_the_web_app_reads_on_its_own_role_and_gets_no_vendor_key_nor_webhook():
    web = SERVICES["web"]
    env = _environment(web)
    assert set(env) == {"VOXWATCH_STORE_URL"}
    names = {name for name, _, _ in _references(web)}
    assert {"VOXWATCH_PG_WEB", "VOXWATCH_PG_WEB_PASSWORD"} <= names
    assert not {n for n in names if SECRET.search(n)} - {"VOXWATCH_PG_WEB_PASSWORD"}, names
    assert store_kind(env["VOXWATCH_STORE_URL"]) == POSTGRES
    assert "//${VOXWATCH_PG_WEB:-voxwatch_web}:" in env["VOXWATCH_STORE_URL"]
    assert any(v.endswith(":/data:ro") for v in web["volumes"])  # plays recordings, writes nothing
    assert web["depends_on"] == {"db-roles": {"condition": "service_completed_successfully"}}


def test_vendor_keys_and_webhook_urls_go_to_the_worker_only():
    for name, service in SERVICES.items():
        secret = {n for n in _environment(service) if re.search(r"API_KEY|WEBHOOK", n)}
        if name == "worker":
            assert {"VOXWATCH_OPENAI_API_KEY", "VOXWATCH_SLACK_WEBHOOK_URL"} <= secret
        else:
            assert not secret, (name, secret)
    grafana = {name for name, _, _ in _references(SERVICES["grafana"])}
    assert "POSTGRES_PASSWORD" not in grafana and "VOXWATCH_PG_READER_PASSWORD" in grafana


# ---------------------------------------------------------------- health checks

@pytest.mark.parametrize("name", ["worker", "beat"])
def test_worker_and_beat_have_a_health_check_on_the_heartbeat_file_they_keep(name):
    service = SERVICES[name]
    command, check = service["command"], service["healthcheck"]["test"]
    path = command[command.index("--heartbeat-file") + 1]
    assert check[:4] == ["CMD", "python", "-m", "voxwatch.workers.heartbeat"] and check[4] == path
    within = float(check[check.index("--within") + 1])
    # the file is touched every WORKER_EVERY_S (worker) or every pass of beat's loop: at least twice per window
    touched_every = heartbeat.WORKER_EVERY_S if name == "worker" else settings(load(environ={}))["beat_max_loop_interval"]
    assert within >= 2 * touched_every, (name, within, touched_every)


# ---------------------------------------------------------------- the license

def test_the_license_file_is_the_apache_2_text_pyproject_names():
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"] == {"text": "Apache-2.0"}
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
    assert len(text.split()) > 1500  # the full text, not a pointer to it


# ---------------------------------------------------------------- the compose CLI

def _compose_cli() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


def test_compose_config_accepts_the_file_once_the_passwords_are_set_and_refuses_it_before(tmp_path):
    cli = _compose_cli()
    if cli is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed (apt-get install docker-compose)")
    base = {k: v for k, v in os.environ.items() if k not in ENV_EXAMPLE} | {"COMPOSE_PROJECT_NAME": "voxwatch-lint"}
    passwords = {name: secrets.token_hex(8) for name in PASSWORDS}
    no_env_file = tmp_path / "empty.env"  # not the .env an operator may keep beside the compose file
    no_env_file.write_text("")

    def config(env: dict[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run([*cli, "-f", str(REPO / "docker-compose.yml"), "--env-file", str(no_env_file), "config"],
                              env=env, capture_output=True, text=True, timeout=120)

    ok = config(base | passwords)
    assert ok.returncode == 0, ok.stderr
    resolved = yaml.safe_load(ok.stdout)["services"]
    assert resolved["web"]["environment"]["VOXWATCH_STORE_URL"] == (
        f"postgresql://voxwatch_web:{passwords['VOXWATCH_PG_WEB_PASSWORD']}@postgres:5432/voxwatch")
    for name in ("web", "grafana"):
        (port,) = resolved[name]["ports"]
        assert (port.get("host_ip") if isinstance(port, dict) else port.split(":")[0]) == "127.0.0.1", port
    for name in sorted(PASSWORDS):
        refused = config(base | passwords | {name: ""})  # as a copied .env.example leaves it
        assert refused.returncode != 0 and f"set {name} in .env" in refused.stderr, (name, refused.stderr)


# ---------------------------------------------------------------- the roles

def _run_roles(db: str, roles: dict[str, str]) -> subprocess.CompletedProcess:
    admin = parse_store_url(POSTGRES_ADMIN).conninfo
    env = {"PATH": os.environ["PATH"], "PGHOST": admin.get("host", "127.0.0.1"), "PGPORT": str(admin.get("port", 5432)),
           "PGUSER": admin.get("user", "postgres"), "PGDATABASE": db, **roles}
    return subprocess.run(["sh", str(REPO / "docker/postgres-roles.sh")], env=env, capture_output=True, text=True,
                          timeout=60)


def _as(url: str, role: str) -> str:
    return re.sub(r"//[^@/]*@", f"//{role}:unused@", url, count=1)  # the test server trusts local connections


def test_the_roles_script_gives_grafana_reads_only_and_the_web_reads_plus_new_ratings_only():
    if shutil.which("psql") is None:
        pytest.skip("psql is not installed")
    from support.preference_seed import seed_store

    tag = secrets.token_hex(4)
    reader, web = f"vx_reader_{tag}", f"vx_web_{tag}"
    roles = {"VOXWATCH_PG_READER": reader, "VOXWATCH_PG_READER_PASSWORD": secrets.token_hex(8),
             "VOXWATCH_PG_WEB": web, "VOXWATCH_PG_WEB_PASSWORD": secrets.token_hex(8)}
    try:
        with fresh_postgres() as url:
            run_cli("db", "upgrade", "--store", url)
            owner = open_store(url)
            try:
                seed_store(owner)
                rater = owner.add_rater("token-new", 0.0, "new rater").rater_id
            finally:
                owner.close()
            db = url.rsplit("/", 1)[1]
            first = _run_roles(db, roles)
            assert first.returncode == 0 and "up to date" in first.stdout, first.stderr
            again = _run_roles(db, roles | {"VOXWATCH_PG_WEB_PASSWORD": secrets.token_hex(8)})  # idempotent
            assert again.returncode == 0, again.stderr

            # the web's role opens the up-to-date store (no DDL) and adds a rating, as the rating pages do
            store = open_store(_as(url, web), create=False)
            try:
                assert store.migrated == []
                assert store.add_ratings([RatingRow(None, rater, 1, "overall", 2, 200.0, "a")]) == 1
                assert any(r.rater_id == rater for r in store.preference_ratings(pair_id=1))
            finally:
                store.close()
            with connect(_as(url, web)) as conn:
                for sql in ("UPDATE preference_ratings SET cmos = 0", "DELETE FROM preference_ratings",
                            "INSERT INTO preference_raters (token_sha256, created_at, label) VALUES ('x', 0, 'x')",
                            "DELETE FROM obs_facts", "CREATE TABLE web_was_here (x int)"):
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        conn.execute(sql)
            # the web app on that role: it reads the (empty) boards, which say when the first tick comes
            from starlette.testclient import TestClient

            from voxwatch.web.app import create_app

            with TestClient(create_app(_as(url, web))) as client:
                for page in ("/", "/board/stt"):
                    response = client.get(page)
                    assert response.status_code == 200 and "No measurements on this board" in response.text, page
                    assert "the first tick goes out as soon as beat starts" in response.text, page
            with connect(_as(url, reader)) as conn:
                assert conn.execute("SELECT count(*) FROM preference_ratings").fetchone()[0] > 0
                for sql in ("INSERT INTO preference_ratings (rater_id, pair_id, rubric, cmos, answered_at, shown_first) "
                            f"VALUES ({rater}, 2, 'overall', 1, 1.0, 'a')", "CREATE TABLE reader_was_here (x int)"):
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        conn.execute(sql)
    finally:
        with connect(POSTGRES_ADMIN, timeout_s=5) as admin:
            for role in (reader, web):
                admin.execute(f"DROP ROLE IF EXISTS {role}")
