#!/bin/sh
# Runs once, when the Postgres volume is first initialised (docker-entrypoint-initdb.d): a
# read-only role for Grafana, so the dashboards can never write to the store.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     -v reader="$VOXWATCH_PG_READER" -v password="$VOXWATCH_PG_READER_PASSWORD" <<'SQL'
CREATE ROLE :"reader" LOGIN PASSWORD :'password';
GRANT pg_read_all_data TO :"reader";
SQL
