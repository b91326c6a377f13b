#!/bin/sh
# Proxy split/merge runs (bench/RESULTS.md, "Slot cache (issue 4)", proxy split subsection).
# Runs prebuilt binaries from one directory (the device gets them through .xfer):
#   D/test_slot_cache_gpu, D/gather_variants, D/ftbench, D/lib (device-libs.sh)
# usage: bench/slotcache_proxy.sh D OUT [quick] [MODELS]
#   1. GPU correctness (make test-gpu's binary)
#   2. gather_variants: proxy variants (split thresholds, signal, wait interval, the first
#      proxy) against fused, the per-expert memcpy loop and a linear copy; random plans, then
#      consecutive plans (what cache-copy's plan is)
#   3. ftbench cache-copy --copy proxy, one profile at a time (JSON; tables made afterwards)
# Everything lands in OUT/logs and is packed into OUT/slotcache_proxy.tgz (the device returns
# few files).
D=${1:?dir} O=${2:?out}
MODELS=${4:-qwen3.5-35B qwen3-30B gemma4-26B minimax-m2.5-marlin minimax-m2.5-triton glm4.7-nvfp4 gpt-oss-20b gpt-oss-120b}
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
L="$O/logs"
mkdir -p "$L"
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current,driver_version --format=csv,noheader >"$L/gpu.txt" 2>&1
echo "== test_slot_cache_gpu $(date -u +%T)"
timeout 90 "$D/test_slot_cache_gpu" >"$L/test_gpu.txt" 2>&1; echo "test rc=$?"
grep -E "PASSED|FAILED|proxy" "$L/test_gpu.txt"
V=fused,memcpy,proxy,proxy_v0,proxy_nosplit,proxy_nomerge,proxy_s16k,proxy_s512k,proxy_s1m,proxy_kernsig,proxy_sleep0,linear
echo "== gather_variants $(date -u +%T)"
for m in minimax-m2.5-triton glm4.7-nvfp4 gpt-oss-120b minimax-m2.5-marlin qwen3-30B; do
	timeout 40 "$D/gather_variants" "$m" 1,4,32 7 "$V"
done >"$L/variants.txt" 2>&1
for m in minimax-m2.5-triton gpt-oss-120b; do
	timeout 30 "$D/gather_variants" "$m" 1,4,32 5 "$V" seq
done >>"$L/variants.txt" 2>&1
echo "== cache-copy $(date -u +%T)"
if [ "${3:-}" = quick ]; then
	G="--batch-sizes 1,4,16,32 --miss-rates 0,0.25,1 --repeat 11"
else
	G=""
fi
for m in $MODELS; do
	timeout ${CC_TIMEOUT:-40} "$D/ftbench" cache-copy --models "$m" --copy proxy $G --json >"$L/cc_$m.json" 2>"$L/cc_$m.err"
	echo "cache-copy $m rc=$? $(date -u +%T)"
done
tar -C "$O" -czf "$O/slotcache_proxy.tgz" logs && rm -rf "$L"
echo "== done $(date -u +%T)"
