#!/bin/bash
# WAL and server CPU per exactly-once key on PostgreSQL: Once's claim insert and completion (the
# statements JdbcStore sends, as pgbench scripts, prepared as pgjdbc prepares them) against the raw
# insert + update; WAL by record type.
# Run on the database server's host (pg_waldump reads its pg_wal directory; the CPU is read from
# /proc), as a user that may read both. Usage: benchmarks/wal/wal-per-key.sh [transactions per
# client, default 1000]
# The CPU column is the backends' own (the postmaster's reaped children: pgbench's four sessions),
# with synchronous_commit off for them, so that the WAL writer, not the backend, flushes the log:
# a flush costs per byte, which the WAL column shows; on a VM it is mostly the disk's wait.
# Environment: PSQL_ARGS (default "-U postgres -h 127.0.0.1 test"), PG_BIN, PG_WAL, ROUNDS
# (default 1: each round makes the tables anew and runs both sides, alternating which goes first),
# and VERSIONS: how many of the shipped schema versions make Once's table (default all; 3 gives the
# column order of versions 1 to 3, which tables made before version 4 keep; 4 keeps version 1's
# CHECK constraints, which tables keep until version 5 runs); ALTER_ONCE: SQL run on Once's table
# once it is made, for an experiment (e.g. "DROP INDEX once_wal_purge_idx").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-1000}
args=${PSQL_ARGS:-"-U postgres -h 127.0.0.1 test"}
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
wal=${PG_WAL:-/var/lib/postgresql/15/main/pg_wal}
psql() { command psql -qAt $args "$@"; }

# The postmaster: the first line of its pid file.
postmaster=$(head -1 "$(psql -c "SHOW data_directory")/postmaster.pid" 2>/dev/null || true)
reaped() { # CPU ticks of the postmaster's exited children
  [ -n "$postmaster" ] && awk '{print $16 + $17}' "/proc/$postmaster/stat" 2>/dev/null || echo -1
}

for round in $(seq 1 "${ROUNDS:-1}"); do
  psql -c "DROP TABLE IF EXISTS once_wal, raw_wal"
  ls "$root"/stores/jdbc/src/main/resources/dev/once/jdbc/schema/postgresql/V*.sql | sort -V \
    | head -n "${VERSIONS:-99}" | while read -r f; do
    sed 's/\${table}/once_wal/g; s/\${name}/once_wal/g' "$f"
  done | psql >/dev/null
  # An experiment's change to Once's table (an index dropped...), e.g.
  # ALTER_ONCE='DROP INDEX once_wal_purge_idx'.
  [ -n "${ALTER_ONCE:-}" ] && psql -c "$ALTER_ONCE"
  psql -c "CREATE TABLE raw_wal (idempotency_key text PRIMARY KEY, status text NOT NULL,
    request_hash bytea, response_body bytea, created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL)"
  scripts="raw-pair once-key"
  [ $((round % 2)) -eq 0 ] && scripts="once-key raw-pair"
  for script in $scripts; do
    psql -c "CHECKPOINT"
    a=$(psql -c "SELECT pg_current_wal_lsn()")
    t0=$(reaped)
    PGOPTIONS="-c synchronous_commit=off" "$bin/pgbench" -n $args -M prepared -c 4 -t "$n" \
      -f "$here/$script.sql" >/dev/null
    sleep 0.5 # the backends exit and are reaped
    t1=$(reaped)
    b=$(psql -c "SELECT pg_current_wal_lsn()")
    cpu="not read"
    [ "$t0" -ge 0 ] && [ "$t1" -ge 0 ] \
      && cpu="$(( (t1 - t0) * 1000000 / $(getconf CLK_TCK) / (4 * n) )) µs"
    echo "round $round, $script: $(psql -c "SELECT (pg_wal_lsn_diff('$b', '$a') / $((4 * n)))::int") WAL bytes per key, backend CPU $cpu per key"
    [ "$round" -eq 1 ] && "$bin/pg_waldump" -p "$wal" -s "$a" -e "$b" --stats=record 2>/dev/null \
      | awk '$2 + 0 > 0 || NR < 3'
  done
done
psql -c "DROP TABLE IF EXISTS once_wal, raw_wal"
