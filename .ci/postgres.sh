#!/usr/bin/env bash
# A throw-away PostgreSQL for the tests: `bash .ci/postgres.sh start` installs PostgreSQL from Debian
# when it is missing, creates a cluster in a temporary folder, starts it on a free loopback port and
# prints shell assignments to eval:
#   OUTPOST_TEST_POSTGRES_URL=postgres://outpost@127.0.0.1:PORT/outpost
#   OUTPOST_POSTGRES_PID=PID  (the postmaster)   OUTPOST_POSTGRES_DIR=FOLDER
# `bash .ci/postgres.sh stop PID FOLDER` stops that server by its PID and removes the folder.
# PostgreSQL refuses to run as root: as root, the cluster belongs to an unprivileged user
# (`outpost-pg`, created when missing). Diagnostics go to stderr; stdout carries the assignments only.
set -euo pipefail

find_bin() {
    local dir
    for dir in "$(pg_config --bindir 2>/dev/null || true)" /usr/lib/postgresql/*/bin /usr/local/bin /usr/bin; do
        if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}

start() {
    local bin
    if ! bin=$(find_bin); then
        echo "postgres.sh: installing PostgreSQL from Debian" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
        bin=$(find_bin) || { echo "postgres.sh: no initdb/pg_ctl/postgres after installing postgresql" >&2; exit 1; }
    fi
    local dir run=()
    dir=$(mktemp -d /tmp/outpost-pg.XXXXXX)
    chmod 755 "$dir"
    if [ "$(id -u)" = 0 ]; then
        id outpost-pg > /dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin outpost-pg
        chown outpost-pg "$dir"
        run=(runuser -u outpost-pg --)
    fi
    local port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "${run[@]}" "$bin/initdb" -D "$dir/data" -U outpost --auth=trust --encoding=UTF8 --locale=C.UTF-8 > "$dir/initdb.log" 2>&1 ||
        "${run[@]}" "$bin/initdb" -D "$dir/data" -U outpost --auth=trust --encoding=UTF8 --no-locale > "$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    # Members of these groups authenticate with a password by that method (the lean read
    # connections' tests create such roles); everyone else is trusted as before.
    local hba
    hba=$(cat "$dir/data/pg_hba.conf")
    printf 'host all +outpost_scram 127.0.0.1/32 scram-sha-256\nhost all +outpost_md5 127.0.0.1/32 md5\nhost all +outpost_password 127.0.0.1/32 password\n%s\n' "$hba" |
        "${run[@]}" tee "$dir/data/pg_hba.conf" > /dev/null
    # max_connections: up to 24 test servers at once, each with its pools, its lean read
    # connections (one per event loop) and fixture storages.
    # fsync off: the tests kill Outpost servers, never PostgreSQL itself, and the machine stays up.
    "${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
        -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=1000" >&2 ||
        { cat "$dir/server.log" >&2; exit 1; }
    local pid
    pid=$(head -n 1 "$dir/data/postmaster.pid")
    "${run[@]}" "$bin/psql" -h 127.0.0.1 -p "$port" -U outpost -d postgres -q -c "CREATE DATABASE outpost" >&2
    "${run[@]}" "$bin/psql" -h 127.0.0.1 -p "$port" -U outpost -d postgres -q \
        -c "CREATE ROLE outpost_scram NOLOGIN" -c "CREATE ROLE outpost_md5 NOLOGIN" -c "CREATE ROLE outpost_password NOLOGIN" >&2
    echo "OUTPOST_TEST_POSTGRES_URL=postgres://outpost@127.0.0.1:$port/outpost"
    echo "OUTPOST_POSTGRES_PID=$pid"
    echo "OUTPOST_POSTGRES_DIR=$dir"
}

stop() {
    local pid=${1:?usage: postgres.sh stop PID FOLDER} dir=${2:?usage: postgres.sh stop PID FOLDER}
    # SIGINT is PostgreSQL's fast shutdown: sessions are ended, the cluster is left consistent.
    if kill -INT "$pid" 2> /dev/null; then
        for _ in $(seq 1 300); do
            kill -0 "$pid" 2> /dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2> /dev/null || true
    fi
    case "$dir" in
        /tmp/outpost-pg.*) rm -rf "$dir" ;;
        *) echo "postgres.sh: not removing '$dir' (not a folder this script made)" >&2 ;;
    esac
}

case "${1:-}" in
    start) start ;;
    stop) shift; stop "$@" ;;
    *) echo "usage: bash .ci/postgres.sh start | stop PID FOLDER" >&2; exit 2 ;;
esac
