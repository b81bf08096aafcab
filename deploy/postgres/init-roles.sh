#!/bin/sh
# X7: the roles of docker-compose.yml's PostgreSQL, run once by the postgres image when it
# makes its data directory: Quire's processes and the Temporal server each sign in as a role
# of their own, with the password .env gives it (scram-sha-256), and own their databases; no
# other role may connect to them. The superuser (POSTGRES_PASSWORD) is for operators only.
set -eu
for name in QUIRE_DB_PASSWORD TEMPORAL_DB_PASSWORD; do
  eval "value=\${$name:-}"
  if [ -z "$value" ]; then
    echo "X7: $name is required (a random password in .env, see docs/deploy.md)" >&2
    exit 1
  fi
done
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v quire_password="$QUIRE_DB_PASSWORD" -v temporal_password="$TEMPORAL_DB_PASSWORD" <<'SQL'
CREATE ROLE quire LOGIN PASSWORD :'quire_password';
CREATE ROLE temporal LOGIN PASSWORD :'temporal_password';
CREATE DATABASE quire OWNER quire;
CREATE DATABASE temporal OWNER temporal;
CREATE DATABASE temporal_visibility OWNER temporal;
REVOKE ALL ON DATABASE quire FROM PUBLIC;
REVOKE ALL ON DATABASE temporal FROM PUBLIC;
REVOKE ALL ON DATABASE temporal_visibility FROM PUBLIC;
SQL
