#!/usr/bin/env bash
# `outpost serve --trusted-proxy 127.0.0.1/32` behind a real nginx (Debian) reverse proxy on
# loopback, as DEPLOYMENT.md configures it (X-Forwarded-For from $proxy_add_x_forwarded_for).
# Clients reach nginx from different loopback source addresses (curl --interface 127.0.0.2, …);
# nginx reaches the server from 127.0.0.1. Checks: two clients behind the proxy are limited
# apart; the owner is not locked out by another address's failures; a forged X-Forwarded-For,
# sent through the proxy or straight to the server from an untrusted peer, changes nothing; the
# access log names the client, not the proxy.
# Usage: .ci/nginx-proxy.sh   (OUTPOST_BINARY overrides Server/.build/debug/outpost)
set -euo pipefail
cd "$(dirname "$0")/.."

binary="${OUTPOST_BINARY:-$PWD/Server/.build/debug/outpost}"
[ -x "$binary" ] || { echo "nginx-proxy: no outpost binary at $binary (swift build --package-path Server first)"; exit 1; }
nginx=$(command -v nginx || true)
if [ -z "$nginx" ] && [ -x /usr/sbin/nginx ]; then nginx=/usr/sbin/nginx; fi
if [ -z "$nginx" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx > /dev/null
    nginx=$(command -v nginx || echo /usr/sbin/nginx)
fi

source .ci/outpost-server.sh
nginx_pid=""
stop_nginx() {
    if [ -n "$nginx_pid" ]; then
        kill "$nginx_pid" 2>/dev/null || true
        wait "$nginx_pid" 2>/dev/null || true
    fi
    cleanup
}
trap stop_nginx EXIT

database="$workdir/proxy.sqlite"
password='nginx-proxy-password-1'
printf '%s\n' "$password" | "$binary" users add owner --database "$database" > /dev/null
"$binary" clients add "nginx-proxy CI" --id proxy-ci --grant password --database "$database" > /dev/null
start_outpost_server nginx-proxy --trusted-proxy 127.0.0.1/32 --database "$database" --log-level info
server_port=${url##*:}

# A free loopback port for nginx, picked now.
proxy_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
mkdir -p "$workdir/nginx"
user_line=""
[ "$(id -u)" = 0 ] && user_line="user $(id -un) $(id -gn);"
cat > "$workdir/nginx/nginx.conf" <<CONF
$user_line
worker_processes 1;
daemon off;
pid $workdir/nginx/nginx.pid;
error_log $workdir/nginx/error.log warn;
events { worker_connections 64; }
http {
    access_log $workdir/nginx/access.log;
    client_body_temp_path $workdir/nginx/body;
    proxy_temp_path $workdir/nginx/proxy;
    fastcgi_temp_path $workdir/nginx/fastcgi;
    uwsgi_temp_path $workdir/nginx/uwsgi;
    scgi_temp_path $workdir/nginx/scgi;
    server {
        listen 127.0.0.1:$proxy_port;
        location / {
            proxy_pass http://127.0.0.1:$server_port;
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
        }
    }
}
CONF
"$nginx" -p "$workdir/nginx" -c "$workdir/nginx/nginx.conf" > "$workdir/nginx/stdout.log" 2>&1 &
nginx_pid=$!
for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$proxy_port/health" && break
    kill -0 "$nginx_pid" 2>/dev/null || { echo "nginx-proxy: nginx did not start"; cat "$workdir/nginx/stdout.log" "$workdir/nginx/error.log" 2>/dev/null; exit 1; }
    sleep 0.1
done
proxied="http://127.0.0.1:$proxy_port"

# sign_in SOURCE BASE PASSWORD [FORGED-X-FORWARDED-FOR]: the status of one password sign-in.
sign_in() {
    local source=$1 base=$2 secret=$3 forged=${4:-}
    local extra=()
    [ -n "$forged" ] && extra=(-H "X-Forwarded-For: $forged")
    curl -s -o /dev/null -w '%{http_code}' --interface "$source" "${extra[@]}" \
        --data-urlencode grant_type=password --data-urlencode username=owner \
        --data-urlencode "password=$secret" --data-urlencode client_id=proxy-ci "$base/oauth/token"
}
expect() {
    [ "$2" = "$3" ] || { echo "nginx-proxy: $1: expected $3, got $2"; tail -n 20 "$log"; exit 1; }
}

# The owner signs in through the proxy.
expect "owner through the proxy" "$(sign_in 127.0.0.3 "$proxied" "$password")" 200
# 127.0.0.2 fails until the account-and-address limit (10 in 5 minutes) locks it.
for attempt in $(seq 1 10); do expect "failure $attempt from 127.0.0.2" "$(sign_in 127.0.0.2 "$proxied" wrong)" 400; done
expect "127.0.0.2 locked" "$(sign_in 127.0.0.2 "$proxied" "$password")" 429
# A header 127.0.0.2 writes itself stands left of what nginx appends: still locked.
expect "127.0.0.2 forging through the proxy" "$(sign_in 127.0.0.2 "$proxied" "$password" 127.0.0.9)" 429
# The owner on another address is not locked out by those failures.
expect "owner from 127.0.0.3" "$(sign_in 127.0.0.3 "$proxied" "$password")" 200

# Straight to the server from 127.0.0.4, which is no trusted proxy: forged headers are ignored, so
# failures under ten different forged addresses all count on 127.0.0.4.
for attempt in $(seq 1 10); do
    expect "direct failure $attempt" "$(sign_in 127.0.0.4 "$url" wrong "198.51.100.$attempt")" 400
done
expect "127.0.0.4 locked whatever it forges" "$(sign_in 127.0.0.4 "$url" "$password" 198.51.100.77)" 429
expect "owner through the proxy, after all that" "$(sign_in 127.0.0.3 "$proxied" "$password")" 200

# The access log names the client behind the proxy, and the untrusted peer as itself (the server
# writes its log in batches, at least every 0.1 s).
for _ in $(seq 1 50); do grep -q 'client=127.0.0.4 ' "$log" && break; sleep 0.1; done
grep -q 'client=127.0.0.2 .*path=/oauth/token status=429' "$log" || { echo "nginx-proxy: no access-log line for 127.0.0.2"; tail -n 20 "$log"; exit 1; }
grep -q 'client=127.0.0.4 .*path=/oauth/token' "$log" || { echo "nginx-proxy: no access-log line for 127.0.0.4"; exit 1; }
if grep -q 'client=198.51.100' "$log"; then echo "nginx-proxy: a forged address reached the access log"; exit 1; fi
echo "nginx-proxy: limits and logs key on the client behind nginx; forged X-Forwarded-For ignored"
