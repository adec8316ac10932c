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

# RabbitMQ: the once-rabbitmq tests talk to a real broker on 127.0.0.1:5672 (guest/guest).
rabbit_up() {
  rabbitmq-diagnostics -q check_port_connectivity >/dev/null 2>&1 \
    || (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null
}

ensure_rabbitmq() {
  if ! command -v rabbitmq-server >/dev/null 2>&1; then
    echo "installing rabbitmq-server"
    apt_install rabbitmq-server
  fi
  if ! rabbit_up; then
    echo "starting RabbitMQ"
    rabbitmq-server -detached || true
    for _ in $(seq 1 120); do
      rabbit_up && break
      sleep 0.5
    done
  fi
  rabbitmqctl -q await_startup >/dev/null 2>&1 || true
  rabbit_up && echo "RabbitMQ up on 5672"
}

ensure_rabbitmq

# NATS with JetStream: the once-nats tests talk to a real server on 127.0.0.1:4222.
nats_up() {
  (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null
}

ensure_nats() {
  if ! command -v nats-server >/dev/null 2>&1 && [[ ! -x /usr/sbin/nats-server ]]; then
    echo "installing nats-server"
    apt_install nats-server
  fi
  if ! nats_up; then
    echo "starting nats-server with JetStream"
    mkdir -p /var/lib/nats-server
    start-stop-daemon --start --oknodo --background --exec "$(command -v nats-server || echo /usr/sbin/nats-server)" \
      -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
    for _ in $(seq 1 60); do
      nats_up && break
      sleep 0.5
    done
  fi
  nats_up && echo "NATS up on 4222"
}

ensure_nats
