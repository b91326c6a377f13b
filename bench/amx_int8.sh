#!/bin/sh
# The AMX int8 tier of the 4-bit formats on the H200 box, one call.
# 1. test_cpu_moe_amx (the int8 kernels on real tiles against the VNNI kernels and float64, the
#    executor's amx tier against its scalar tier), a second build of it when present
#    (test_cpu_moe_amx_q: another tile order on trial), and test_cpu_moe (every tier);
# 2. cpu_moe_kernels per token count (in cache, one thread: where the tiles beat the VNNI kernel;
#    cpu_moe_kernels_a, when present, a second build of the tiles, its amx lines marked "alt");
# 3. cpu-moe --batch 1..32 per 4-bit format, the VNNI and amx tiers in the same run (each batch:
#    both tiers, each in rounds after a pass of the read ceiling), the tier order alternating
#    by format. Prebuilt binaries in BUILD (the device gets them through .xfer).
# usage: BUILD=build [NBS="8 16 32"] [AB=0 (no cpu-moe runs)] bench/amx_int8.sh OUT
O=${1:?out}
B=${BUILD:-build}
L="$O/logs"
mkdir -p "$L"
pack() { tar -C "$O" -czf "$O/amx_int8.tgz" logs; }
lscpu >"$L/lscpu.txt" 2>&1
grep -o 'amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
echo "== tests $(date -u +%T)"
for t in test_cpu_moe_amx test_cpu_moe_amx_q; do
	[ -x "$B/tests/unit/$t" ] || continue
	FT_TEST_VERBOSE=1 timeout 120 "$B/tests/unit/$t" >"$L/$t.txt" 2>&1
	echo "$t rc=$?"
	grep -E "AMX|PASSED|FAILED|ERROR|SKIPPED|executor" "$L/$t.txt" | head -20
	grep -E "w4a8-amx " "$L/$t.txt" | awk '{ for (i = 1; i <= NF; i++) if ($i == "vnni") v = $(i + 1) > v ? $(i + 1) : v } END { print "real tiles: max rel err vs vnni", v }'
done
timeout 120 "$B/tests/unit/test_cpu_moe" >"$L/test_cpu_moe.txt" 2>&1
echo "test_cpu_moe rc=$?"
grep -E "AMX|PASSED|FAILED|ERROR" "$L/test_cpu_moe.txt" | head
pack
echo "== kernels in cache, one thread $(date -u +%T)"
for nb in ${NBS:-1 2 3 4 6 8 12 16 32}; do
	timeout 30 "$B/bench/cpu_moe_kernels" $nb 3072
	[ -x "$B/bench/cpu_moe_kernels_a" ] && timeout 30 "$B/bench/cpu_moe_kernels_a" $nb 3072 | grep amx | sed 's/^/alt /'
done >"$L/kernels.txt" 2>&1
grep -E "avx512vnni|amx" "$L/kernels.txt"
pack
[ "${AB:-1}" = 0 ] && { echo "== done (no cpu-moe runs) $(date -u +%T)"; exit 0; }
echo "== cpu-moe, VNNI and amx tiers $(date -u +%T)"
i=0
for f in nvfp4 mxfp4_triton ds_fp4 q4_0; do
	isa=avx512vnni,amx
	[ $((i % 2)) = 1 ] && isa=amx,avx512vnni
	i=$((i + 1))
	t0=$(date +%s)
	timeout 90 "$B/bin/ftbench" cpu-moe --format $f --batch 1,2,4,8,16,32 --isa $isa --repeat 16 --read-passes 4 \
		--output-format csv >"$L/cm_$f.csv" 2>"$L/cm_$f.err"
	echo "cpu-moe $f ($isa) rc=$? $(( $(date +%s) - t0 )) s"
	pack
done
echo "== done $(date -u +%T)"
for f in nvfp4 mxfp4_triton ds_fp4 q4_0; do
	echo "-- $f"; cut -d, -f1,2,4,7,8 "$L/cm_$f.csv"
done
