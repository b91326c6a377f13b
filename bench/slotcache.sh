#!/bin/sh
# Slot cache benchmarks (bench/RESULTS.md, sections 2-3). Needs a GPU; `make` and `make bench-tools` first.
#   1. GPU correctness + ensure_experts timing: build/tests/gpu/test_slot_cache_gpu
#   2. every copy_missing variant against a linear pinned copy of the same bytes (gather_variants)
#   3. ftbench cache-copy (reference §4 + baselines)
# usage: BUILD=build bench/slotcache.sh [quick]   ("quick": fewer cache-copy rows)
set -e
B=${BUILD:-build}
[ -x "$B/bench/gather_variants" ] || { echo "slotcache.sh: $B/bench/gather_variants is not built (make bench-tools, CUDA=1)"; exit 2; }
"$B/tests/gpu/test_slot_cache_gpu"
V=fused,fused_1sm,fused_4sm,fused_32b,fused_8b,l2_256,unroll4,unroll16,bulk,per_bank,memcpy,memcpy_batch,proxy,linear
for m in qwen3-30B glm4.7-nvfp4 gpt-oss-120b qwen3.5-35B; do
	"$B/bench/gather_variants" "$m" 1,4,32 11 "$V"
done
if [ "${1:-}" = quick ]; then
	"$B/bin/ftbench" cache-copy --batch-sizes 1,4,32 --miss-rates 0,1 --repeat 15
else
	"$B/bin/ftbench" cache-copy
fi
