#!/bin/sh
# Issue 23 round 3 (h23d): the AMX int8 tier of the 4-bit formats on the H200 box, one call.
# 1. test_cpu_moe_amx (the int8 kernels on real tiles against the VNNI kernels and float64, the
#    executor's amx tier against its scalar tier) and test_cpu_moe (every tier);
# 2. cpu_moe_kernels per token count (in cache, one thread: where the tiles beat the VNNI kernel);
# 3. bench/ab.py: cpu-moe --batch 1..32 per 4-bit format, the VNNI tier against the amx tier at
#    tile thresholds (tune amx_min_nb) 8 and 4, rounds interleaved and rotated, each run with its
#    own read ceiling.
# Prebuilt binaries in BUILD (the device gets them through .xfer).
# usage: BUILD=build [AB_DEADLINE=200 (0: no A/B)] [AB_TUNES="--tune A=K=V ..."] bench/amx_int8.sh OUT
O=${1:?out}
B=${BUILD:-build}
L="$O/logs"
mkdir -p "$L"
pack() { tar -C "$O" -czf "$O/amx_int8.tgz" logs; }
lscpu >"$L/lscpu.txt" 2>&1
grep -o 'amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
echo "== tests $(date -u +%T)"
FT_TEST_VERBOSE=1 timeout 120 "$B/tests/unit/test_cpu_moe_amx" >"$L/test_cpu_moe_amx.txt" 2>&1
echo "test_cpu_moe_amx rc=$?"
grep -E "AMX|PASSED|FAILED|ERROR|SKIPPED|executor" "$L/test_cpu_moe_amx.txt" | head -20
grep -E "w4a8-amx " "$L/test_cpu_moe_amx.txt" | awk '{ for (i = 1; i <= NF; i++) if ($i == "vnni") v = $(i + 1) > v ? $(i + 1) : v } END { print "real tiles: max rel err vs vnni", v }'
timeout 120 "$B/tests/unit/test_cpu_moe" >"$L/test_cpu_moe.txt" 2>&1
echo "test_cpu_moe rc=$?"
grep -E "AMX|PASSED|FAILED|ERROR" "$L/test_cpu_moe.txt" | head
pack
echo "== kernels in cache, one thread $(date -u +%T)"
for nb in 1 2 3 4 6 8 12 16 32; do
	timeout 30 "$B/bench/cpu_moe_kernels" $nb 3072
	# a second build of the kernels, when there is one (an alternative tile layout)
	[ -x "$B/bench/cpu_moe_kernels_a" ] && timeout 30 "$B/bench/cpu_moe_kernels_a" $nb 3072 | grep amx | sed 's/^/alt /'
done >"$L/kernels.txt" 2>&1
grep -E "avx512vnni|amx" "$L/kernels.txt"
pack
[ "${AB_DEADLINE:-200}" = 0 ] && { echo "== done (no A/B) $(date -u +%T)"; exit 0; }
echo "== executor A/B $(date -u +%T)"
set -- --tune vnni=isa=avx512vnni --tune amx8=isa=amx,amx_min_nb=8 --tune amx4=isa=amx,amx_min_nb=4
[ -n "$AB_TUNES" ] && eval "set -- $AB_TUNES"
timeout $(( ${AB_DEADLINE:-200} + 100 )) python3 bench/ab.py --build new="$B" \
	--suite cpu-moe:nvfp4,mxfp4_triton,ds_fp4,q4_0 "$@" \
	--args 'cpu-moe=--batch 1,2,4,8,16,32 --repeat 16 --read-passes 4' \
	--rounds 2 --deadline "${AB_DEADLINE:-200}" --timeout 90 --out "$L/ab" >"$L/ab.txt" 2>&1
echo "ab rc=$?"
pack
cp "$L/ab/table.md" "$L/ab/runs.jsonl" "$O/" 2>/dev/null
echo "== done $(date -u +%T)"
grep -E "GB/s|%" "$L/ab/table.md" | grep -v "read GB/s" | head -80
