#!/usr/bin/env bash
# The PostgreSQL backup procedure of docs/DEPLOYMENT.md ("Backups"), run once: a server on a fresh
# database, records written through it and a user added with the CLI, `pg_dump --format=custom`
# while the server runs, `pg_restore --no-owner` into a new empty database, a server on that one,
# and the records and the audit log read back. Uses the cluster named by OUTPOST_TEST_POSTGRES_URL,
# or starts one with .ci/postgres.sh. Needs a debug build of `outpost`. Takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${OUTPOST_BINARY:-Server/.build/debug/outpost}
source .ci/outpost-server.sh

started_postgres=""
if [ -z "${OUTPOST_TEST_POSTGRES_URL:-}" ]; then
    eval "$(bash .ci/postgres.sh start)"
    started_postgres=1
fi
pg_bin=""
for dir in "$(pg_config --bindir 2>/dev/null || true)" /usr/lib/postgresql/*/bin /usr/bin; do
    if [ -n "$dir" ] && [ -x "$dir/pg_dump" ] && [ -x "$dir/pg_restore" ]; then pg_bin=$dir; break; fi
done
[ -n "$pg_bin" ] || { echo "postgres-backup: no pg_dump/pg_restore (Debian: apt-get install postgresql-client)"; exit 1; }

base=${OUTPOST_TEST_POSTGRES_URL%/*}
source_db="outpost_backup_$$"
restored_db="outpost_restored_$$"
finish() {
    cleanup
    "$pg_bin/psql" "$base/postgres" -q -c "DROP DATABASE IF EXISTS $source_db WITH (FORCE)" \
        -c "DROP DATABASE IF EXISTS $restored_db WITH (FORCE)" > /dev/null 2>&1 || true
    if [ -n "$started_postgres" ]; then bash .ci/postgres.sh stop "$OUTPOST_POSTGRES_PID" "$OUTPOST_POSTGRES_DIR"; fi
}
trap finish EXIT
export HOME="$workdir" XDG_CONFIG_HOME="$workdir"

"$pg_bin/psql" "$base/postgres" -q -c "CREATE DATABASE $source_db" -c "CREATE DATABASE $restored_db"
"$binary" rules set notes create true --database "$base/$source_db" > /dev/null
"$binary" rules set notes read true --database "$base/$source_db" > /dev/null
printf 'backup-password-1\n' | "$binary" users add backup-user --database "$base/$source_db" > /dev/null

start_outpost_server postgres-backup --database "$base/$source_db" --log-level warning
ids=()
for n in 1 2 3; do
    ids+=("$("$binary" records create notes "{\"n\": $n}" --server "$url" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')")
done
# A consistent snapshot while the server runs; custom format, without owners (restorable as any role).
"$pg_bin/pg_dump" --format=custom --no-owner --file "$workdir/outpost.dump" "$base/$source_db"
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""

"$pg_bin/pg_restore" --no-owner --exit-on-error --dbname "$base/$restored_db" "$workdir/outpost.dump"
start_outpost_server postgres-backup --database "$base/$restored_db" --log-level warning
for index in 0 1 2; do
    n=$("$binary" records get notes "${ids[$index]}" --server "$url" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["n"])')
    [ "$n" = "$((index + 1))" ] || { echo "postgres-backup: record ${ids[$index]} reads n=$n after the restore"; exit 1; }
done
"$binary" audit --database "$base/$restored_db" --action user.added | grep -q '"actor":"operator"' ||
    { echo "postgres-backup: the restored audit log lacks the user the CLI added"; exit 1; }
echo "postgres-backup: 3 records and the audit log read back from the restored database"
