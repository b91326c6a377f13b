#!/bin/sh
# daemon_gpu: ftbenchd scheduling real GPU jobs on this host (issue 3, and what a one-GPU machine
# can show of issue 7). Starts ftbenchd on loopback with temporary state and cache, submits
#   A: cache-copy on GPU 0, B: bw (holds GPU 0 and the host), C: cache-copy on GPU 0,
# samples GET /gpus and each worker's CUDA_VISIBLE_DEVICES while they run, waits for all three
# and prints the timeline (queued/started/finished per job) and what /gpus showed.
# usage: BUILD=build [OUTDIR=dir] bench/daemon_gpu.sh        (results in bench/RESULTS.md)
set -u
BUILD=${BUILD:-build}
BIN=$(cd "$(dirname "$0")/.." && pwd)/$BUILD/bin
OUTDIR=${OUTDIR:-$(mktemp -d /tmp/ftbenchd-gpu.XXXXXX)}
mkdir -p "$OUTDIR/state" "$OUTDIR/cache"
export XDG_CACHE_HOME=$OUTDIR/cache XDG_STATE_HOME=$OUTDIR/state
unset NOTIFY_SOCKET LISTEN_FDS LISTEN_PID FREETOKEN_BENCHBW_PATH
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
D=http://127.0.0.1:$port
"$BIN/ftbenchd" --listen "127.0.0.1:$port" --state-dir "$OUTDIR/state/ftbenchd" --worker "$BIN/ftbench" \
	>"$OUTDIR/ftbenchd.log" 2>&1 &
dpid=$!
trap 'kill -TERM $dpid 2>/dev/null; wait $dpid 2>/dev/null' EXIT
i=0
until curl -fsS -m 2 "$D/health" >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -gt 300 ] && { echo "ftbenchd did not come up"; cat "$OUTDIR/ftbenchd.log"; exit 1; }
	sleep 0.1
done
curl -fsS "$D/gpus" >"$OUTDIR/gpus_idle.json"
GPU=${GPU-0}   # GPU= (empty) leaves the jobs' gpu to the daemon (no GPU: they fail, the script still runs)
G=; [ -n "$GPU" ] && G=",\"gpu\":\"$GPU\""
sub() { curl -fsS -H 'Content-Type: application/json' -d "$1" "$D/benchmark/start" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
A=$(sub '{"kind":"cache-copy","args":{"models":["qwen3-30B","gpt-oss-120b"],"batch_sizes":[1,4,32],"miss_rates":[0,1],"repeat":10'"$G"'}}')
B=$(sub '{"kind":"bw","args":{"dtype":"bf16,nvfp4"'"$G"'}}')
C=$(sub '{"kind":"cache-copy","args":{"models":["glm4.7-nvfp4"],"batch_sizes":[4],"miss_rates":[1],"repeat":10'"$G"'}}')
echo "submitted A=$A (cache-copy) B=$B (bw) C=$C (cache-copy)"
: >"$OUTDIR/samples.txt"
while :; do
	s=$(curl -fsS "$D/benchmark/jobs?limit=10" | python3 -c '
import json,sys
j=json.load(sys.stdin)["jobs"]
print(" ".join("%s:%s" % (x["id"][:6], x["state"]) for x in sorted(j, key=lambda x: x["id"])))')
	g=$(curl -fsS "$D/gpus" | python3 -c '
import json,sys
d=json.load(sys.stdin)
print(",".join("%s:%s" % (g["index"], (g["job"] or "-")[:6]) for g in d["gpus"]) + " host:" + (d["host_job"] or "-")[:6])')
	env=""
	for p in $(pgrep -f "$BIN/ftbench (cache-copy|bw)" 2>/dev/null); do
		env="$env $(tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -E '^CUDA_(VISIBLE_DEVICES|DEVICE_ORDER)=' | tr '\n' ' ')"
	done
	echo "$(date +%T.%N | cut -c1-12) jobs[$s] gpus=$g env=[$env]" >>"$OUTDIR/samples.txt"
	case "$s" in *queued*|*running*) sleep 0.5 ;; *) break ;; esac
done
awk '!seen[$0]++' "$OUTDIR/samples.txt" | sed 's/^[^ ]* //' | uniq | head -20
for id in $A $B $C; do
	curl -fsS "$D/benchmark/jobs/$id" >"$OUTDIR/job_$id.json"
done
python3 - "$OUTDIR" "$A" "$B" "$C" <<'PY'
import json, sys, os
out, ids = sys.argv[1], sys.argv[2:]
jobs = [json.load(open(os.path.join(out, "job_%s.json" % i))) for i in ids]
keys = ("created_at", "started_at", "finished_at")
t0 = None
def ts(j, k):
    return j.get(k) or j.get(k.replace("_at", ""))
print("%-4s %-10s %-10s %-10s %10s %10s %10s" % ("job", "kind", "state", "exit", "queued", "started", "finished"))
import datetime
def sec(v):
    if v is None: return None
    if isinstance(v, (int, float)): return float(v)
    return datetime.datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
t0 = min(sec(ts(j, "created_at")) for j in jobs)
for name, j in zip("ABC", jobs):
    f = [sec(ts(j, k)) for k in keys]
    print("%-4s %-10s %-10s %-10s %10s %10s %10s" % (name, j["kind"], j["state"], j.get("exit_status"),
          *["%.1f" % (x - t0) if x is not None else "-" for x in f]))
PY
