#!/bin/sh
# What `make test` needs besides Python, got before any test runs: Postgres and Redis on loopback
# (started when installed but down), and for the browser tier Debian's Chromium and ChromeDriver
# (installed through apt when this user may). What cannot be had stops here, in one line.
# Usage: preflight.sh [--browser]
set -u
PG_HOST=127.0.0.1 PG_PORT=5432 REDIS_PORT=6379
CHROMIUM=${VOXWATCH_TEST_CHROMIUM:-/usr/bin/chromium}
CHROMEDRIVER=${VOXWATCH_TEST_CHROMEDRIVER:-/usr/bin/chromedriver}

stop() { echo "make test: $*" >&2; exit 1; }
can_root() { [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
apt_install() {
  command -v apt-get >/dev/null 2>&1 && can_root || return 1
  { as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@"; } >/dev/null 2>&1
}
pg_up() { command -v pg_isready >/dev/null 2>&1 && pg_isready -h "$PG_HOST" -p "$PG_PORT" -q 2>/dev/null \
  || python3 -c "import socket; socket.create_connection(('$PG_HOST', $PG_PORT), 2)" 2>/dev/null; }
redis_up() {
  if command -v redis-cli >/dev/null 2>&1; then [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]
  else python3 -c "
import socket; s = socket.create_connection(('127.0.0.1', $REDIS_PORT), 2); s.sendall(b'PING\\r\\n')
assert s.recv(16).startswith(b'+PONG')" 2>/dev/null; fi
}

if ! pg_up; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start >/dev/null 2>&1
    sleep 1
  fi
  pg_up || stop "PostgreSQL is not answering on $PG_HOST:$PG_PORT (install it with trust auth for local connections, or set VOXWATCH_TEST_POSTGRES)"
fi
if ! redis_up; then
  if command -v redis-server >/dev/null 2>&1; then
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no >/dev/null 2>&1
    sleep 1
  fi
  redis_up || stop "Redis is not answering on 127.0.0.1:$REDIS_PORT (install redis-server)"
fi
if [ "${1:-}" = "--browser" ] && { [ ! -x "$CHROMIUM" ] || [ ! -x "$CHROMEDRIVER" ]; }; then
  if command -v apt-get >/dev/null 2>&1 && can_root; then
    echo "make test: installing Chromium and ChromeDriver for the browser tests (apt-get install chromium chromium-driver)" >&2
    apt_install chromium chromium-driver
  fi
  [ -x "$CHROMIUM" ] && [ -x "$CHROMEDRIVER" ] \
    || stop "the browser tests need $CHROMIUM and $CHROMEDRIVER: install Debian's chromium and chromium-driver, or run make test-quick"
fi
# tests/test_compose.py checks docker-compose.yml with the compose CLI where there is one (skipped otherwise)
if ! command -v docker-compose >/dev/null 2>&1 && ! docker compose version >/dev/null 2>&1; then
  apt_install docker-compose || true
fi
exit 0
