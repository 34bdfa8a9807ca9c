# Sourced by the CI scripts that run a real `outpost serve`: a temporary folder ($workdir, removed
# on exit with the server), and `start_outpost_server NAME ARGS...`, which starts
# `$binary serve --port 0 ARGS...` with its output in $workdir/serve.log, waits until it reports
# its address, and sets $server_pid and $url. NAME prefixes the error messages.
workdir=$(mktemp -d)
log="$workdir/serve.log"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$workdir"
}
trap cleanup EXIT

start_outpost_server() {
    local name=$1
    shift
    "$binary" serve --port 0 "$@" > "$log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 100); do
        grep -q "listening on" "$log" && break
        kill -0 "$server_pid" 2>/dev/null || { cat "$log"; exit 1; }
        sleep 0.1
    done
    url=$(grep -o 'http://[0-9.]*:[0-9]*' "$log" | head -n 1)
    [ -n "$url" ] || { echo "$name: the server did not report its address"; cat "$log"; exit 1; }
}
