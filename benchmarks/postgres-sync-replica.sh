#!/usr/bin/env bash
# A private PostgreSQL primary with a synchronous streaming replica, both on loopback, for
# benchmarks where a commit costs what it costs on a replicated production server: every commit
# waits until the replica has flushed the commit's WAL (synchronous_commit = on,
# synchronous_standby_names = once_replica), and both servers fsync.
#
#   benchmarks/postgres-sync-replica.sh start   # prints the store URI for `once bench --store`
#   benchmarks/postgres-sync-replica.sh stop    # stops both servers and deletes their data
#
# Uses the machine's PostgreSQL binaries (Debian: apt-get install postgresql), the newest under
# /usr/lib/postgresql, or those of $PG_BIN. As root it runs them as the postgres user. Never used
# by the tests.
set -euo pipefail

dir="${ONCE_PG_REPLICA_DIR:-/tmp/once-pg-replica}"
primary_port="${ONCE_PG_PRIMARY_PORT:-55432}"
replica_port="${ONCE_PG_REPLICA_PORT:-55433}"
bin="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
if [[ -z "$bin" || ! -x "$bin/initdb" ]]; then
  echo "no PostgreSQL binaries found: install postgresql or set PG_BIN" >&2
  exit 2
fi

as_owner() {
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

stop() {
  for node in replica primary; do
    if [[ -f "$dir/$node/postmaster.pid" ]]; then
      as_owner "$bin/pg_ctl" -D "$dir/$node" -m fast -w stop >/dev/null || true
    fi
  done
  rm -rf "$dir"
}

start() {
  stop
  mkdir -p "$dir"
  if [[ "$(id -u)" == 0 ]]; then
    chown postgres "$dir"
  fi
  as_owner "$bin/initdb" -D "$dir/primary" -U postgres --auth=trust >"$dir/initdb.log"
  cat >>"$dir/primary/postgresql.conf" <<EOF
port = $primary_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
wal_level = replica
max_wal_senders = 4
fsync = on
synchronous_commit = on
synchronous_standby_names = 'once_replica'
EOF
  as_owner "$bin/pg_ctl" -D "$dir/primary" -l "$dir/primary.log" -w start >/dev/null
  as_owner "$bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres \
      -D "$dir/replica" -R -X stream
  cat >>"$dir/replica/postgresql.auto.conf" <<EOF
port = $replica_port
primary_conninfo = 'host=127.0.0.1 port=$primary_port user=postgres application_name=once_replica'
EOF
  as_owner "$bin/pg_ctl" -D "$dir/replica" -l "$dir/replica.log" -w start >/dev/null
  for _ in $(seq 1 100); do
    state="$(as_owner "$bin/psql" -h 127.0.0.1 -p "$primary_port" -U postgres -Atqc \
        "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'once_replica'" \
        postgres || true)"
    if [[ "$state" == sync ]]; then
      echo "postgres://postgres@127.0.0.1:$primary_port/postgres"
      return 0
    fi
    sleep 0.1
  done
  echo "the replica did not become synchronous; see $dir/*.log" >&2
  exit 1
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
