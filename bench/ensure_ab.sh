#!/bin/sh
# ensure_experts on the GPU machine, one call (bench/RESULTS.md section 3): the GPU test,
# then ensure_time of a baseline build and of this build alternated, then ftbench cache-copy of
# both builds alternated, every cache-copy profile at batch 32, miss rate 1, C = int(0.4*L*E).
# Layout of DIR (one folder per build: old/, new/, and for ensure_time alone the folders named in
# VARIANTS, e.g. VARIANTS="nolow"):
#   B/ftbench  B/ensure_time  [B/ensure_prof]  new/test_slot_cache_gpu
# usage: bench/ensure_ab.sh DIR OUT [ROUNDS]   (ROUNDS of ensure_time per build, default 2)
# OUT gets, as each step ends (so a call stopped at its time limit still brings back the steps
# done): test.txt, time.txt (every ensure_time run, each under a "== ensure_time B round R" line),
# prof_new.txt, cc_summary.txt (one line per cache-copy run), and at the end res.tgz with every
# file (the cache-copy JSONs too); the device tool brings back at most 8 files.
set -u
dir=${1:?usage: bench/ensure_ab.sh DIR OUT [ROUNDS]}
out=${2:?usage: bench/ensure_ab.sh DIR OUT [ROUNDS]}
rounds=${3:-2}
work=$(mktemp -d) # the per-run files, tarred into OUT at the end
mkdir -p "$out"
T=$(date +%s)
say() { echo "== $* ($(( $(date +%s) - T )) s)"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv > "$work/gpu.txt" 2>&1
say "test_slot_cache_gpu"
timeout 300 "$dir/new/test_slot_cache_gpu" > "$out/test.txt" 2>&1
echo "rc=$?" >> "$out/test.txt"
grep -E "PASSED|FAILED|rc=" "$out/test.txt"
for r in $(seq "$rounds"); do
	for b in old ${VARIANTS:-} new; do
		say "ensure_time $b round $r" | tee -a "$out/time.txt"
		timeout 120 "$dir/$b/ensure_time" >> "$out/time.txt" 2>&1 || echo "ensure_time $b rc=$?" | tee -a "$out/time.txt"
	done
done
[ -x "$dir/new/ensure_prof" ] && { say "ensure_prof new"; timeout 120 "$dir/new/ensure_prof" > "$out/prof_new.txt" 2>&1; }
# one line per run: file, cache_slots, ensure_us, ensure_first_round_us, ensure_isolated_us, pct_of_linear, verified
summary() {
	python3 - "$1" <<'PY' 2>&1
import json, sys, os
f = sys.argv[1]
try:
    for res in json.load(open(f))["results"]:
        for row in res["rows"]:
            print(os.path.basename(f), res["cache_slots"], row.get("ensure_us"), row.get("ensure_first_round_us"), row.get("ensure_isolated_us"),
                  row.get("pct_of_linear"), row.get("verified"), row.get("error", ""))
except Exception as e:
    print(f, "unreadable:", e)
PY
}
# model:C of every cache-copy profile (int(0.4*L*E))
for mc in qwen3.5-35B:4096 qwen3-30B:2457 gemma4-26B:1536 minimax-m2.5-marlin:6348 minimax-m2.5-triton:6348 \
	glm4.7-nvfp4:5696 gpt-oss-20b:307 gpt-oss-120b:1843; do
	m=${mc%:*} c=${mc#*:}
	for b in old new; do
		say "cache-copy $b $m"
		timeout 120 "$dir/$b/ftbench" cache-copy --models "$m" --cache-slots "$c" --batch-sizes 32 --miss-rates 1 \
			--repeat 5 --json > "$work/cc_${b}_$m.json" 2> "$work/cc_${b}_$m.err" || echo "cache-copy $b $m rc=$?"
		summary "$work/cc_${b}_$m.json" | tee -a "$out/cc_summary.txt"
	done
done
say "done"
cp "$out/test.txt" "$out/time.txt" "$out/cc_summary.txt" "$work/" 2>/dev/null
[ -f "$out/prof_new.txt" ] && cp "$out/prof_new.txt" "$work/"
tar czf "$out/res.tgz" -C "$work" .
