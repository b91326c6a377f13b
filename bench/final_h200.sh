#!/bin/sh
# One H200 call for the end of a session: the GPU tests, cache-copy's target rows with the
# proxy path (issue 4), and the cpu-moe A/B of the executor defaults (issue 8).
# usage: BUILD=build [AB=bench/cpu_moe_ab3.txt] [AB_S=120] bench/final_h200.sh OUTDIR
set -u
out=${1:?usage: bench/final_h200.sh OUTDIR}
B=${BUILD:-build}
mkdir -p "$out"
echo "== test_slot_cache_gpu $(date -u +%T)"
timeout 120 "$B/tests/gpu/test_slot_cache_gpu" > "$out/test_gpu.txt" 2>&1; echo "test_slot_cache_gpu rc=$?"
grep -E "PASSED|FAILED" "$out/test_gpu.txt"
echo "== cache-copy --copy proxy $(date -u +%T)"
mkdir -p "$out/cc"
for m in qwen3.5-35B qwen3-30B gemma4-26B minimax-m2.5-marlin minimax-m2.5-triton glm4.7-nvfp4 gpt-oss-20b gpt-oss-120b; do
	timeout 60 "$B/bin/ftbench" cache-copy --models "$m" --copy proxy --batch-sizes 1,4,16,32 --miss-rates 1 \
		--repeat 11 --json > "$out/cc/$m.json" 2> "$out/cc/$m.err"
	echo "cache-copy $m rc=$? $(date -u +%T)"
done
tar -C "$out" -czf "$out/cc.tgz" cc && rm -rf "$out/cc"
echo "== cpu-moe A/B $(date -u +%T)"
FTBENCH=$B/bin/ftbench DEADLINE_S=${AB_S:-120} VARIANTS=${AB:-bench/cpu_moe_ab3.txt} bench/cpu_moe_sched_ab.sh "$out/ab"
echo "== done $(date -u +%T)"
