#!/bin/sh
# One call on the GPU machine (nvidia-h200-x2) for the issues that need it, in about 6-8 minutes:
#   1. make test-gpu's binaries (build/tests/gpu/*) on GPU 0;
#   2. bench/multigpu_conc.sh (bw --gpu all, isolated vs concurrent, multigpu.sh);
#   3. the status page from ftbenchd with the real ftbench as worker, the profiles of
#      step 2 in its store and a short cache-copy job run through it: $OUT/status.html, taken
#      as a screenshot on a machine with chromium (bench/status_page.png).
# usage: [BUILD=build] [LIBDIR=dir] [PAGE_ONLY=bw_all.json] bench/device_call.sh OUT
set -u
out=${1:?usage: bench/device_call.sh OUT}
B=${BUILD:-build}
here=$(cd "$(dirname "$0")" && pwd)
[ -z "${LIBDIR:-}" ] && [ -d "$here/../.xfer/lib" ] && LIBDIR=$(cd "$here/../.xfer/lib" && pwd)
[ -n "${LIBDIR:-}" ] && export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# the system's curl with the system's libcurl (LIBDIR's is for our binaries)
curl() { env -u LD_LIBRARY_PATH curl "$@"; }
mkdir -p "$out"
T=$(date +%s)
# PAGE_ONLY=FILE: only step 3, with the profiles of an earlier step 2's bw_all.json
if [ -z "${PAGE_ONLY:-}" ]; then
{
	echo "== test-gpu $(date -u +%T)"
	for t in "$B"/tests/gpu/*; do
		CUDA_VISIBLE_DEVICES=0 timeout 300 "$t" 2>&1 | tail -n 15
		echo "$t rc=$?"
	done
} > "$out/testgpu.txt" 2>&1
echo "test-gpu: $(grep -c 'rc=0' "$out/testgpu.txt") of $(ls "$B"/tests/gpu | wc -l) passed, $(( $(date +%s) - T )) s"
grep -E 'PASSED|FAILED' "$out/testgpu.txt"

BUILD=$B sh "$here/multigpu_conc.sh" "$out"
fi

echo "== status page $(date -u +%T)"
w=$(mktemp -d)
mkdir -p "$w/prof" "$w/state"
python3 - "${PAGE_ONLY:-$out/bw_all.json}" "$w/prof" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["profiles"]:
    json.dump(p, open(f"{sys.argv[2]}/{p['gpu']['uuid']}.json", "w"), indent=1)
PY
port=18377
"$B/bin/ftbenchd" --listen 127.0.0.1:$port --state-dir "$w/state" --profile-dir "$w/prof" \
	--worker "$(pwd)/$B/bin/ftbench" --rebench never > "$w/daemon.log" 2>&1 &
dp=$!
for i in $(seq 50); do curl -fsS -m 1 127.0.0.1:$port/health >/dev/null 2>&1 && break; sleep 0.2; done
curl -fsS -H 'Content-Type: application/json' -d '{"kind":"cache-copy","args":{"models":"qwen3-30b","batch_sizes":[1,16],"miss_rates":[0,0.25,0.5,1],"repeat":5,"gpu":0}}' \
	127.0.0.1:$port/benchmark/start > "$w/cc.json"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$w/cc.json")
for i in $(seq 120); do
	st=$(curl -fsS 127.0.0.1:$port/benchmark/jobs/$id | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
	case $st in queued|running) sleep 1;; *) break;; esac
done
echo "cache-copy job $id: $st"
curl -fsS 127.0.0.1:$port/ > "$out/status.html"
curl -fsS 127.0.0.1:$port/metrics > "$w/metrics.txt"
kill $dp; wait $dp 2>/dev/null
echo "status.html: $(wc -c < "$out/status.html") bytes; daemon log:"; tail -n 5 "$w/daemon.log"
echo "== done, $(( $(date +%s) - T )) s"
[ -n "${PAGE_ONLY:-}" ] || tail -n 40 "$out/summary.txt"
