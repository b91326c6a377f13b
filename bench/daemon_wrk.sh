#!/bin/sh
# ftbenchd under load: wrk against GET /benchmark/jobs/{id} on loopback while that job runs
# (a fake worker reporting progress), then the daemon's RSS before and after the run.
# Target: >= 20,000 req/s on 2 cores with p99 < 10 ms; RSS within 1 MiB after 1,000,000 requests.
# usage: bench/daemon_wrk.sh [SECONDS (default 60)] [CONNECTIONS (default 32)]
# Needs wrk (Debian package). BUILD selects the build directory (default build).
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
secs=${1:-60}
conns=${2:-32}
command -v wrk >/dev/null || { echo "daemon_wrk: wrk is not installed (apt-get install wrk)"; exit 2; }
[ -x "$B/bin/ftbenchd" ] && [ -x "$B/tests/fixtures/fakeworker" ] || { echo "daemon_wrk: build first (make)"; exit 2; }
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
FAKE_STEP_MS=200 "$B/bin/ftbenchd" --listen "127.0.0.1:$port" --state-dir "$tmp/state" --profile-dir "$tmp/prof" \
	--worker "$PWD/$B/tests/fixtures/fakeworker" --rebench never --log-level 4 >"$tmp/daemon.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
url=http://127.0.0.1:$port
for _ in $(seq 50); do curl -sf "$url/health" >/dev/null && break; sleep 0.1; done
# a job that runs for the whole benchmark, reporting progress every 200 ms
id=$(curl -sf -H 'Content-Type: application/json' -d '{"kind":"cache-copy","args":{"repeat":100000}}' \
	"$url/benchmark/start" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
sleep 0.5
state=$(curl -sf "$url/benchmark/jobs/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
[ "$state" = running ] || { echo "daemon_wrk: job is $state, not running"; exit 1; }
rss() { awk '/^VmRSS/ {print $2}' /proc/$pid/status; }
wrk -t1 -c"$conns" -d5s "$url/benchmark/jobs/$id" >/dev/null   # warm-up: threads, allocator
rss0=$(rss)
wrk -t2 -c"$conns" -d"${secs}s" --latency "$url/benchmark/jobs/$id" >"$tmp/wrk.txt"
rss1=$(rss)
cat "$tmp/wrk.txt"
state=$(curl -sf "$url/benchmark/jobs/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
reqs=$(awk '/requests in/ {print $1}' "$tmp/wrk.txt")
rps=$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk.txt")
p99=$(awk '$1 == "99%" {print $2}' "$tmp/wrk.txt")
errs=$(awk '/Non-2xx|Socket errors/' "$tmp/wrk.txt")
echo "job state during/after: $state"
echo "requests: $reqs  req/s: $rps  p99: $p99  RSS before: ${rss0} KiB  after: ${rss1} KiB  delta: $((rss1 - rss0)) KiB"
[ -z "$errs" ] || echo "errors: $errs"
