#!/usr/bin/env bash
# A PostgreSQL server for the tests of threadlock/postgres.
#
#   bash .ci/postgres.sh start   installs Debian's postgresql package when it
#                                is missing (and nftables, as root), starts a cluster listening on
#                                127.0.0.1, creates the role and database of
#                                the tests, and prints the URL to use (only
#                                the URL goes to stdout; progress to stderr)
#   bash .ci/postgres.sh stop    stops the cluster if `start` started it, and
#                                nothing else
#   bash .ci/postgres.sh cluster prints "<version> <name>" of the cluster
#                                `start` uses
#
# The tests may stop and start the cluster only when .ci/run says so
# (THREADLOCK_PG_RESTART=1); THREADLOCK_PG_CLUSTER (from `cluster`) tells
# them which cluster that is.
set -euo pipefail

ROLE=threadlock
PASSWORD=threadlock
DB=threadlock_test
STATE=${THREADLOCK_PG_STATE:-/tmp/threadlock-postgres.started}

say() { printf 'postgres.sh: %s\n' "$*" >&2; }

as_postgres() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    sudo -n -u postgres "$@"
  fi
}

# The first cluster pg_lsclusters lists, as "<version> <name> <port> <status>".
first_cluster() {
  pg_lsclusters --no-header 2>/dev/null | awk 'NR == 1 { print $1, $2, $3, $4 }'
}

start() {
  # postgresql, and nftables for the tests that cut a connection
  # (test/postgres-partition.test.js), which run wherever the server tests
  # are required.
  local missing=()
  if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    missing+=(postgresql)
  fi
  if ! command -v nft >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    missing+=(nftables)
  fi
  if [ "${#missing[@]}" -gt 0 ]; then
    say "installing Debian's ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update >&2
    apt-get install -y "${missing[@]}" >&2
  fi
  local version name port status
  read -r version name port status <<<"$(first_cluster)" || true
  if [ -z "${version:-}" ]; then
    version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
    name=main
    say "creating cluster $version $name"
    pg_createcluster "$version" "$name" >&2
    read -r version name port status <<<"$(first_cluster)"
  fi
  if [ "$status" != online ]; then
    say "starting cluster $version $name on 127.0.0.1:$port"
    # Only loopback: the tests never reach another address. Debian's
    # postgresql.conf reads conf.d/, so the setting survives a restart.
    printf "listen_addresses = '127.0.0.1'\n" >"/etc/postgresql/$version/$name/conf.d/threadlock.conf"
    pg_ctlcluster "$version" "$name" start >&2
    echo "$version $name" >"$STATE"
  else
    say "cluster $version $name is already running on port $port (left running by stop)"
  fi
  # The role and database of the tests, with a password for TCP logins.
  as_postgres psql -q -p "$port" -v ON_ERROR_STOP=1 -d postgres >&2 <<SQL
SELECT 'CREATE ROLE $ROLE LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$ROLE')
\gexec
ALTER ROLE $ROLE WITH LOGIN PASSWORD '$PASSWORD';
SELECT 'CREATE DATABASE $DB OWNER $ROLE' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$DB')
\gexec
SQL
  echo "postgres://$ROLE:$PASSWORD@127.0.0.1:$port/$DB"
}

stop() {
  if [ -f "$STATE" ]; then
    local version name
    read -r version name <"$STATE"
    say "stopping cluster $version $name"
    pg_ctlcluster "$version" "$name" stop >&2 || true
    rm -f "$STATE"
  else
    say "nothing to stop (this script did not start the cluster)"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  cluster) first_cluster | awk '{ print $1, $2 }' ;;
  *)
    echo "usage: bash .ci/postgres.sh start|stop|cluster" >&2
    exit 2
    ;;
esac
