#!/bin/sh
# Repeatability of the default `ftbench bw` (bench/RESULTS.md section 1): N back-to-back default runs (the batch sweep
# off), each one's wall time, then per format the CPU MoE / gather ratio of every run, its verdict,
# the median ratio and each run's deviation from it, and the within-run spread of the ratio over
# the interleaved rounds (ratio_rounds_spread).
# usage: [N=5] [FTBENCH=build/bin/ftbench] bench/bw_repeat.sh OUTDIR
set -u
out=${1:?usage: bench/bw_repeat.sh OUTDIR}
n=${N:-5}
bin=${FTBENCH:-build/bin/ftbench}
mkdir -p "$out"
k=0
while [ $k -lt "$n" ]; do
	k=$((k + 1))
	t0=$(date +%s.%N)
	timeout 120 "$bin" bw --json >"$out/bw_$k.json" 2>"$out/bw_$k.err"
	rc=$?
	echo "bw $k rc=$rc $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s"
done
python3 - "$out" "$n" <<'PY'
import json, statistics as st, sys
d, n = sys.argv[1], int(sys.argv[2])
runs = []
for k in range(1, n + 1):
    try:
        runs.append(json.load(open("%s/bw_%d.json" % (d, k))))
    except Exception as e:
        print("bw", k, "unreadable:", e)
        runs.append(None)
fmts = []
for p in runs:
    for f in (p or {}).get("dtype_kernels", {}):
        if f not in fmts:
            fmts.append(f)
print("| run | read ceiling GB/s | linear H2D GB/s | " + " | ".join(fmts) + " |")
print("|---" * (3 + len(fmts)) + "|")
for k, p in enumerate(runs, 1):
    if not p:
        continue
    c = p["ceilings"]
    cells = []
    for f in fmts:
        e = p["dtype_kernels"].get(f, {})
        r, rs = e.get("ratio"), e.get("ratio_rounds_spread")
        if r is None:
            cells.append("-")
            continue
        sp = " (rounds %.2f-%.2f)" % (rs["min"], rs["max"]) if rs else ""
        cells.append("%.1f / %.1f = %.3f %s%s" % (e["cpu_moe_gbs"], e["pcie_gather_gbs"], r, e["recommended"], sp))
    print("| %d | %.1f | %.1f | %s |" % (k, c["cpu_stream_read_gbs"], c["pcie_linear_h2d_gbs"], " | ".join(cells)))
for f in fmts:
    rs = [p["dtype_kernels"][f]["ratio"] for p in runs if p and p["dtype_kernels"].get(f, {}).get("ratio") is not None]
    vs = [p["dtype_kernels"][f]["recommended"] for p in runs if p and f in p["dtype_kernels"]]
    if not rs:
        print("%s: no ratio" % f)
        continue
    med = st.median(rs)
    dev = max(abs(r / med - 1) for r in rs)
    print("%s: median ratio %.3f, largest deviation %.1f %%, verdicts %s -> %s" % (
        f, med, 100 * dev, ", ".join(vs), "same verdict, within 3 %" if len(set(vs)) == 1 and dev <= 0.03 else "NOT met"))
    # builds that report them: the median of the per-pair ratios, and the CPU MoE's slow steps
    ps = [p["dtype_kernels"][f].get("ratio_paired") for p in runs if p and f in p["dtype_kernels"]]
    ps = [x for x in ps if x is not None]
    if ps:
        pm = st.median(ps)
        print("%s: ratio_paired %s; median %.3f, largest deviation %.1f %%" % (
            f, ", ".join("%.3f" % x for x in ps), pm, 100 * max(abs(x / pm - 1) for x in ps)))
    ss = [p["dtype_kernels"][f].get("cpu_moe_slow_steps") for p in runs if p and f in p["dtype_kernels"]]
    if any(x is not None for x in ss):
        print("%s: CPU MoE steps under 0.8 x median: %s" % (
            f, ", ".join("-" if x is None else "%.1f %%" % (100 * x) for x in ss)))
PY
