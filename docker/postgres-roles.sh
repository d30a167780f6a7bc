#!/bin/sh
# The store's login roles besides its owner, made or brought up to date on every `docker compose up`
# by the db-roles service, after db-migrate (the grants name tables the migrations create):
#   VOXWATCH_PG_READER  Grafana's: reads every table, writes nothing (a dashboard editor can run
#                       any SQL as this role, so it gets no write at all)
#   VOXWATCH_PG_WEB     the web app's: reads every table, and may only add rows to
#                       preference_ratings (the rating pages, POST /rate/...): no update, no delete
# Each role's privileges are revoked first and granted again, so they are exactly these; the
# passwords are set each time, so a password changed in .env applies on the next `up`.
# Runs as the store's owner with psql (PGHOST, PGUSER, PGPASSWORD, PGDATABASE from the environment).
set -eu
psql -v ON_ERROR_STOP=1 -q \
     -v reader="$VOXWATCH_PG_READER" -v reader_password="$VOXWATCH_PG_READER_PASSWORD" \
     -v web="$VOXWATCH_PG_WEB" -v web_password="$VOXWATCH_PG_WEB_PASSWORD" <<'SQL'
BEGIN;
SELECT format('CREATE ROLE %I', r) FROM unnest(ARRAY[:'reader', :'web']) AS r
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) \gexec
ALTER ROLE :"reader" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'reader_password';
ALTER ROLE :"web" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'web_password';
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM :"reader", :"web";
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM :"reader", :"web";
REVOKE CREATE ON SCHEMA public FROM :"reader", :"web";
GRANT pg_read_all_data TO :"reader", :"web";
GRANT INSERT ON preference_ratings TO :"web";
SELECT format('GRANT USAGE ON SEQUENCE %s TO %I', pg_get_serial_sequence('preference_ratings', 'rating_id'), :'web') \gexec
COMMIT;
SQL
echo "roles $VOXWATCH_PG_READER (read-only) and $VOXWATCH_PG_WEB (read, add ratings) are up to date"
