#!/bin/sh
# One H200 call: the CPU MoE tests (real AMX tiles there) and the GPU test, the
# batch crossover (cpu-moe --batch sweeps, bf16 with the avx512bf16 and amx tiers; bw
# --batch-sweep), then 5 back-to-back default bw runs (repeatability). Prebuilt binaries in
# BUILD (the device gets them through .xfer).
# usage: BUILD=build bench/crossover.sh OUT        (logs packed into OUT/crossover.tgz)
O=${1:?out}
B=${BUILD:-build}
L="$O/logs"
mkdir -p "$L"
pack() { tar -C "$O" -czf "$O/crossover.tgz" logs; }
lscpu >"$L/lscpu.txt" 2>&1
echo "== tests $(date -u +%T)"
timeout 120 "$B/tests/unit/test_cpu_moe" >"$L/test_cpu_moe.txt" 2>&1; echo "test_cpu_moe rc=$?"
grep -E "AMX|PASSED|FAILED" "$L/test_cpu_moe.txt"
timeout 120 "$B/tests/gpu/test_slot_cache_gpu" >"$L/test_gpu.txt" 2>&1; echo "test_slot_cache_gpu rc=$?"
grep -E "PASSED|FAILED" "$L/test_gpu.txt"
pack
echo "== cpu-moe batch sweeps $(date -u +%T)"
BS=1,2,4,8,16,32
timeout 90 "$B/bin/ftbench" cpu-moe --format bf16 --batch $BS --isa avx512bf16,amx --iters 16 --read-passes 4 \
	>"$L/cm_bf16.txt" 2>&1 || { echo "no amx tier: $(tail -1 "$L/cm_bf16.txt")";
	timeout 60 "$B/bin/ftbench" cpu-moe --format bf16 --batch $BS --iters 16 --read-passes 4 >"$L/cm_bf16.txt" 2>&1; }
echo "cpu-moe bf16 rc=$?"
for f in nvfp4 mxfp4_triton ds_fp4 q4_0; do
	timeout 60 "$B/bin/ftbench" cpu-moe --format $f --batch $BS --iters 16 --read-passes 4 >"$L/cm_$f.txt" 2>&1
	echo "cpu-moe $f rc=$?"
done
pack
echo "== bw --batch-sweep $(date -u +%T)"
t0=$(date +%s)
timeout 150 "$B/bin/ftbench" bw --batch-sweep $BS -o "$L/bw_sweep_profile.json" >"$L/bw_sweep.txt" 2>"$L/bw_sweep.err"
echo "bw --batch-sweep rc=$? $(( $(date +%s) - t0 )) s"
pack
echo "== 5 x bw $(date -u +%T)"
for k in 1 2 3 4 5; do
	t0=$(date +%s)
	timeout 60 "$B/bin/ftbench" bw --json >"$L/bw5_$k.json" 2>"$L/bw5_$k.err"
	echo "bw $k rc=$? $(( $(date +%s) - t0 )) s"
	pack
done
echo "== done $(date -u +%T)"
for f in bf16 nvfp4 mxfp4_triton ds_fp4 q4_0; do
	echo "-- cpu-moe $f"; sed -n '/^batch sweep/,$p' "$L/cm_$f.txt"
done
grep -E 'batch:|^dtype' "$L/bw_sweep.txt" | head -30
python3 - "$L" <<'PY' || true
import json, sys, statistics as st
rows = {}
for k in range(1, 6):
    try:
        d = json.load(open("%s/bw5_%d.json" % (sys.argv[1], k)))
    except Exception as e:
        print("bw", k, "unreadable", e); continue
    c = d["ceilings"]
    print("bw%d read %.1f lin %.1f" % (k, c["cpu_stream_read_gbs"], c["pcie_linear_h2d_gbs"]), " ".join(
        "%s %.1f/%.1f=%.2f %s" % (f, e.get("cpu_moe_gbs") or 0, e.get("pcie_gather_gbs") or 0, e.get("ratio") or 0,
                                  e["recommended"][0]) for f, e in d["dtype_kernels"].items()))
    for f, e in d["dtype_kernels"].items():
        if e.get("ratio"):
            rows.setdefault(f, []).append((e["ratio"], e["recommended"]))
for f, v in rows.items():
    med = st.median(r for r, _ in v)
    print("%-13s median ratio %.3f, max dev %.1f %%, verdicts %s" % (f, med, 100 * max(abs(r / med - 1) for r, _ in v),
                                                                  "".join(x[0] for _, x in v)))
PY
rm -rf "$L"
