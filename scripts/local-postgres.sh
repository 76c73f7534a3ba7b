#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster on loopback for the store tests and
# `leasehold live`, and print the URL to export as LEASEHOLD_POSTGRES_URL.
#
#   eval "$(scripts/local-postgres.sh start DIR)"   # sets LEASEHOLD_POSTGRES_URL
#   scripts/local-postgres.sh stop DIR
#   scripts/local-postgres.sh kill DIR   # crash it (start brings it back)
#
# Installs Debian's postgresql package when no server binaries are found
# (as root: apt-get). The cluster lives in DIR, is owned by the `postgres`
# user when run as root, listens on 127.0.0.1 only (port $LEASEHOLD_PG_PORT,
# default 54329), keeps PostgreSQL's durable commits (synchronous_commit on:
# with it off, a server killed mid-run lost acknowledged claims and a live
# run saw two owners of one task) and has a `leasehold` role with password `leasehold` that
# owns a `leasehold` database (password authentication, as a real one
# would), and a `leasehold_guest` role (password `guest`) that may connect
# to it but create nothing there.
set -euo pipefail

action=${1:?usage: local-postgres.sh start|stop|kill DIR}
dir=${2:?usage: local-postgres.sh start|stop|kill DIR}
port=${LEASEHOLD_PG_PORT:-54329}

bindir() {
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [ -z "$found" ] || [ ! -x "$found/initdb" ]; then
        return 1
    fi
    echo "$found"
}

as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

case "$action" in
start)
    if ! bin=$(bindir); then
        echo "installing postgresql from Debian's packages" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq postgresql >&2
        bin=$(bindir)
    fi
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
        chown postgres:postgres "$dir"
    fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        pwfile="$dir/pw"
        echo postgres > "$pwfile"
        [ "$(id -u)" = 0 ] && chown postgres:postgres "$pwfile"
        as_owner "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$pwfile" \
            --auth-local=trust --auth-host=scram-sha-256 >&2
        rm -f "$pwfile"
    fi
    if ! as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start >&2
    fi
    as_owner "$bin/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q >&2 <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'leasehold') THEN
    CREATE ROLE leasehold LOGIN PASSWORD 'leasehold';
  END IF;
  -- A role that may connect but not create: the tests' missing permission.
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'leasehold_guest') THEN
    CREATE ROLE leasehold_guest LOGIN PASSWORD 'guest';
  END IF;
END \$\$;
SELECT 'CREATE DATABASE leasehold OWNER leasehold'
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'leasehold') \gexec
SQL
    echo "export LEASEHOLD_POSTGRES_URL='postgres://leasehold:leasehold@127.0.0.1:$port/leasehold'"
    ;;
stop)
    if bin=$(bindir) && [ -f "$dir/data/PG_VERSION" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    fi
    ;;
kill)
    # The server dies as a crash would: no shutdown checkpoint, every
    # connection cut (`start` brings it back, recovering from the WAL).
    bin=$(bindir)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2
    ;;
*)
    echo "usage: local-postgres.sh start|stop|kill DIR" >&2
    exit 2
    ;;
esac
