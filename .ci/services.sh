#!/usr/bin/env bash
# Makes sure the servers the tests talk to are installed and running. Sourced by .ci/run; also
# runnable by hand on a fresh machine: `bash .ci/services.sh`.
# PostgreSQL needs nothing here: the tests start embedded binaries from Maven Central.
set -euo pipefail

apt_updated=false
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if [[ $apt_updated == false ]]; then
    apt-get update -qq
    apt_updated=true
  fi
  apt-get install -y -qq "$@" >/dev/null
}

mariadb_tcp() {
  mariadb --protocol=tcp -h 127.0.0.1 -P 3306 -uroot -e 'SELECT 1' >/dev/null 2>&1
}

ensure_mariadb() {
  if ! command -v mariadbd >/dev/null 2>&1 && [[ ! -x /usr/sbin/mariadbd ]]; then
    echo "installing MariaDB"
    apt_install mariadb-server mariadb-client
  fi
  if ! mariadb -uroot -e 'SELECT 1' >/dev/null 2>&1 && ! mariadb_tcp; then
    echo "starting MariaDB"
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    for _ in $(seq 1 60); do
      mariadb -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
      sleep 0.5
    done
  fi
  # The tests connect over TCP as root with an empty password, to database `test`.
  if ! mariadb_tcp; then
    echo "allowing root over TCP from 127.0.0.1"
    mariadb -uroot -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED VIA mysql_native_password USING PASSWORD('');
      GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION; FLUSH PRIVILEGES;"
  fi
  mariadb --protocol=tcp -h 127.0.0.1 -uroot -e 'CREATE DATABASE IF NOT EXISTS test'
  mariadb --protocol=tcp -h 127.0.0.1 -uroot -e 'SELECT VERSION()' | tail -1
}

ensure_mariadb

# The Redis tests start their own redis-server processes on free ports; they need the binary only.
ensure_redis_binary() {
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "installing redis-server"
    apt_install redis-server
  fi
  redis-server --version
}

ensure_redis_binary
