#!/bin/sh
# ensure_experts of two builds side by side in one H200 call: each build's GPU test (exactness
# against the C reference, and its ensure timings: back to back and in a CUDA graph), then
# cache-copy's ensure_us (8 back-to-back calls on fresh states) at batch 32, miss rate 1, both
# default cache sizes, for the profiles with the most misses, the builds alternated per round.
# usage: OLD=dir-with-ftbench-and-test_slot_cache_gpu [NEW=build] [ROUNDS=3] bench/ensure_ab.sh OUTDIR
set -u
out=${1:?usage: OLD=dir bench/ensure_ab.sh OUTDIR}
old=${OLD:?OLD=dir}
new=${NEW:-build}
mkdir -p "$out"
for b in new old; do
	d=$new/tests/gpu; [ $b = old ] && d=$old
	timeout 120 "$d/test_slot_cache_gpu" > "$out/test_gpu_$b.txt" 2>&1
	echo "test_slot_cache_gpu ($b) rc=$?: $(grep -E 'PASSED|FAILED' "$out/test_gpu_$b.txt" | tr '\n' ' ')"
	grep "ensure_experts:" "$out/test_gpu_$b.txt"
done
: > "$out/cc.jsonl"
r=0
while [ $r -lt "${ROUNDS:-3}" ]; do
	r=$((r + 1))
	for b in old new; do
		bin=$new/bin/ftbench; [ $b = old ] && bin=$old/ftbench
		for m in minimax-m2.5-triton minimax-m2.5-marlin qwen3.5-35B glm4.7-nvfp4 qwen3-30B; do
			j=$(timeout 60 "$bin" cache-copy --models "$m" --batch-sizes 32 --miss-rates 1 --repeat 5 --json 2>>"$out/err.txt" | tr -d '\n')
			printf '{"round": %d, "build": "%s", "model": "%s", "run": %s}\n' "$r" "$b" "$m" "${j:-null}" >> "$out/cc.jsonl"
		done
	done
done
python3 - "$out/cc.jsonl" <<'PY'
import json, statistics as st, sys
v = {}
for l in open(sys.argv[1]):
    x = json.loads(l)
    for res in (x["run"] or {}).get("results", []):
        for row in res["rows"]:
            v.setdefault((x["model"], res["cache_slots"], x["build"]), []).append(row["ensure_us"])
print("%-22s %6s %10s %10s %7s" % ("model", "C", "old us", "new us", "new/old"))
for (m, c, b) in sorted(k for k in v if k[2] == "old"):
    o, n = st.median(v[(m, c, "old")]), st.median(v.get((m, c, "new"), [float("nan")]))
    print("%-22s %6d %10.2f %10.2f %7.3f" % (m, c, o, n, n / o))
PY
