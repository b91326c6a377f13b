#!/bin/sh
# The gather on the GPU machine, one call (bench/RESULTS.md section 2): the GPU
# test's gather and proxy tests (test_proxy_stress first, in a fresh process), then
# gather_variants of a baseline build and of this build alternated (the order flipped each
# round): every profile of PROFILES at batch 1 and 4 with the variants of VARIANTS, the profiles
# of BIG at batch 32 with BIG_VARIANTS; then a summary (gather_summary.py): per profile, batch and
# variant the median % of the same-run linear copy over the rounds, each build's. A build skips
# the variants it does not know. Steps start only while the call is under DEADLINE seconds.
# Layout of DIR: old/gather_variants  new/gather_variants  new/test_slot_cache_gpu
# usage: bench/gather_ab.sh DIR OUT [ROUNDS]   (ROUNDS of batch 1 and 4, default 2; batch 32: 1)
set -u
dir=${1:?usage: bench/gather_ab.sh DIR OUT [ROUNDS]}
out=${2:?usage: bench/gather_ab.sh DIR OUT [ROUNDS]}
rounds=${3:-2}
here=$(dirname "$0")
PROFILES=${PROFILES:-qwen3.5-35B qwen3-30B gemma4-26B gpt-oss-120b minimax-m2.5-triton}
BIG=${BIG:-qwen3.5-35B gpt-oss-120b}
VARIANTS=${VARIANTS:-fused,per_bank,memcpy,linear,proxy,proxy_b2b,proxy_nowake,proxy_w,proxy_e128k,proxy_e128k_b2b,proxy_e384k,proxy_e384k_b2b,proxy_e512k,proxy_h0,proxy_h0_b2b,proxy_h2m,proxy_h2m_b2b,proxy_h4m,proxy_h4m_b2b,proxy_h8m,proxy_graph,proxy_graph_b2b}
BIG_VARIANTS=${BIG_VARIANTS:-fused,per_bank,linear,proxy,proxy_b2b,proxy_nowake,proxy_e128k,proxy_h0,proxy_h4m,proxy_h4m_b2b}
REPS=${REPS:-11}
BIG_REPS=${BIG_REPS:-5}
DEADLINE=${DEADLINE:-200}
mkdir -p "$out"
T=$(date +%s)
say() { echo "== $* ($(( $(date +%s) - T )) s)"; }
late() { [ $(( $(date +%s) - T )) -ge "$DEADLINE" ] && { say "deadline: skipped $*"; return 0; }; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv > "$out/gpu.txt" 2>&1
for t in test_proxy_stress test_gather_every_format test_odd_rows test_graph_capture; do
	say "$t"
	FT_TEST_FILTER=$t timeout 120 "$dir/new/test_slot_cache_gpu" >> "$out/test.txt" 2>&1
	echo "$t rc=$?" >> "$out/test.txt"
done
grep -E "PASSED|FAILED|rc=" "$out/test.txt"
gv() { # build round profile batches reps variants
	say "gather_variants $1 round $2 $3 bs $4"
	echo "### build=$1 round=$2" >> "$out/gv.txt"
	timeout 100 "$dir/$1/gather_variants" "$3" "$4" "$5" "$6" >> "$out/gv.txt" 2>&1 || echo "gather_variants $1 $3 $4 rc=$?"
}
order() { [ $(($1 % 2)) -eq 1 ] && echo "old new" || echo "new old"; }
for r in $(seq "$rounds"); do
	for m in $PROFILES; do
		late "$m round $r" && continue
		for b in $(order "$r"); do gv "$b" "$r" "$m" 1,4 "$REPS" "$VARIANTS"; done
	done
	[ "$r" -gt 1 ] && continue
	for m in $BIG; do
		late "$m bs 32" && continue
		for b in $(order "$r"); do gv "$b" "$r" "$m" 32 "$BIG_REPS" "$BIG_VARIANTS"; done
	done
done
say "summary"
python3 "$here/gather_summary.py" "$out/gv.txt" > "$out/summary.md" 2>&1
cat "$out/summary.md"
say "done"
