#!/bin/bash
# WAL per exactly-once key on PostgreSQL, by record type: Once's claim insert and completion
# (the statements JdbcStore sends, as pgbench scripts) against the raw insert + update.
# Run on the database server's host (pg_waldump reads its pg_wal directory), as a user that may
# read it. Usage: benchmarks/wal/wal-per-key.sh [transactions per client, default 1000]
# Environment: PSQL_ARGS (default "-U postgres -h 127.0.0.1 test"), PG_BIN, PG_WAL, and
# VERSIONS: how many of the shipped schema versions make Once's table (default all; 3 gives the
# column order of versions 1 to 3, which tables made before version 4 keep).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-1000}
args=${PSQL_ARGS:-"-U postgres -h 127.0.0.1 test"}
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
wal=${PG_WAL:-/var/lib/postgresql/15/main/pg_wal}
psql() { command psql -qAt $args "$@"; }

psql -c "DROP TABLE IF EXISTS once_wal, raw_wal"
ls "$root"/stores/jdbc/src/main/resources/dev/once/jdbc/schema/postgresql/V*.sql | sort -V \
  | head -n "${VERSIONS:-99}" | while read -r f; do
  sed 's/\${table}/once_wal/g; s/\${name}/once_wal/g' "$f"
done | psql >/dev/null
psql -c "CREATE TABLE raw_wal (idempotency_key text PRIMARY KEY, status text NOT NULL,
  request_hash bytea, response_body bytea, created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL)"

for script in raw-pair once-key; do
  psql -c "CHECKPOINT"
  a=$(psql -c "SELECT pg_current_wal_lsn()")
  "$bin/pgbench" -n $args -c 4 -t "$n" -f "$here/$script.sql" >/dev/null
  b=$(psql -c "SELECT pg_current_wal_lsn()")
  echo "$script: $(psql -c "SELECT (pg_wal_lsn_diff('$b', '$a') / $((4 * n)))::int") WAL bytes per key"
  "$bin/pg_waldump" -p "$wal" -s "$a" -e "$b" --stats=record 2>/dev/null | awk '$2 + 0 > 0 || NR < 3'
done
psql -c "DROP TABLE IF EXISTS once_wal, raw_wal"
