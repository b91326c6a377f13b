#!/usr/bin/env python3
"""bw_check: the acceptance checks of `ftbench bw` (bench/RESULTS.md section 1) from one run's files.

usage: bw_check.py PROFILE BASELINE_BEFORE BASELINE_AFTER ELAPSED_S FTBENCH
Checks: CPU read ceiling >= the independent read loop (same run; both sides the best median of a
phase of read passes: bw's phases are interleaved with its kernels, the loop's are three phases of
8 passes before and three after the run) and >= CPU MoE bf16; each PCIe
ceiling within 3% of one large pinned cudaMemcpy; the run under 180 s; libftprofile (through
`ftbench profile recommend|fetch-fraction --json`) returns the decision and fraction the numbers
imply. Prints a table; exit 1 when a check fails."""
import json, math, os, subprocess, sys

prof_path, b0_path, b1_path, elapsed, ftbench = sys.argv[1:6]
p = json.load(open(prof_path))
b0, b1 = json.load(open(b0_path)), json.load(open(b1_path))
elapsed = float(elapsed)
rows, ok = [], True


def check(name, value, want, passed):
    global ok
    ok &= bool(passed)
    rows.append((name, value, want, "PASS" if passed else "FAIL"))


ceil = p["ceilings"]
cpu_ceil = ceil["cpu_stream_read_gbs"]
base = max(b0["cpu_read_gbs"]["median"], b1["cpu_read_gbs"]["median"])
check("cpu read ceiling vs independent loop", "%.1f vs %.1f / %.1f GB/s" % (
    cpu_ceil, b0["cpu_read_gbs"]["median"], b1["cpu_read_gbs"]["median"]),
    ">= 0.99 x best baseline", cpu_ceil >= 0.99 * base)
# The same two loop bodies side by side (bw_baseline's "ab"): immune to the host's drift between
# the bracketing runs above and bw's own, which on the H200 VMs reaches 30 % within a minute.
for name, b in (("before", b0), ("after", b1)):
    ab = b.get("ab")
    if ab:
        check("ceiling loop vs independent loop, alternated (%s)" % name,
              "ratio %.3f (min %.3f, max %.3f; %.1f vs %.1f GB/s, %d pairs)" % (
                  ab["ratio_median"], ab["ratio_min"], ab["ratio_max"], ab["ceiling_loop_gbs"]["median"],
                  ab["independent_gbs"]["median"], ab["pairs"]), "median ratio >= 0.99",
              ab["ratio_median"] >= 0.99)
if "cpu_stream_read_gbs_spread" in ceil and ceil["cpu_stream_read_gbs_spread"]:
    sp = ceil["cpu_stream_read_gbs_spread"]
    rows.append(("cpu read passes of the run (info)", "median %.1f, %.1f-%.1f, %d" % (
        sp["median"], sp["min"], sp["max"], sp["samples"]), "%s phases" % ceil.get("cpu_stream_read_phases", "?"),
        "INFO"))
    for name, b in (("before", b0), ("after", b1)):
        if b.get("cpu_read_all_gbs"):
            a = b["cpu_read_all_gbs"]
            rows.append(("independent loop %s, all passes (info)" % name, "median %.1f, %.1f-%.1f, %d" % (
                a["median"], a["min"], a["max"], a["samples"]), "", "INFO"))
for fmt, e in sorted(p["dtype_kernels"].items()):
    if e.get("cpu_moe_gbs") and e.get("cpu_read_adjacent_gbs"):
        rows.append(("CPU MoE %s vs adjacent read (info)" % fmt, "%.1f / %.1f GB/s = %.0f%%" % (
            e["cpu_moe_gbs"], e["cpu_read_adjacent_gbs"], 100 * e["cpu_moe_gbs"] / e["cpu_read_adjacent_gbs"]),
            "", "INFO"))
bf = p["dtype_kernels"].get("bf16", {})
if bf.get("cpu_moe_gbs"):
    check("cpu read ceiling vs CPU MoE bf16", "%.1f vs %.1f GB/s" % (cpu_ceil, bf["cpu_moe_gbs"]),
          ">= MoE", cpu_ceil >= bf["cpu_moe_gbs"])
for d, k in (("h2d", "pcie_linear_h2d_gbs"), ("d2h", "pcie_linear_d2h_gbs")):
    if ceil.get(k) is None or b0.get(d + "_gbs") is None:
        rows.append(("pcie %s ceiling" % d, "not measured", "", "SKIP"))
        continue
    m = b0[d + "_gbs"]["median"]
    check("pcie %s ceiling vs cudaMemcpy %d MiB" % (d, b0["copy_mib"]), "%.2f vs %.2f GB/s (%+.1f%%)" % (
        ceil[k], m, 100 * (ceil[k] / m - 1)), "within 3%", abs(ceil[k] / m - 1) <= 0.03)
check("full default run", "%.1f s" % elapsed, "< 180 s", elapsed < 180)

env = dict(os.environ, FREETOKEN_BENCHBW_PATH=prof_path)
thr = p["threshold"]
for fmt, e in sorted(p["dtype_kernels"].items()):
    cpu, pcie = e.get("cpu_moe_gbs"), e.get("pcie_gather_gbs")
    cov, pov = e.get("cpu_moe_overlap_gbs"), e.get("pcie_gather_overlap_gbs")
    want = "hybrid" if (cpu and pcie and cpu > thr * pcie and e["note"] is None) else "offload"
    if cov and pov:
        frac = min(1.0, pov / (pov + cov))
    elif cpu and pcie:
        frac = min(1.0, pcie / cpu)
    else:
        frac = None
    r = json.loads(subprocess.run([ftbench, "profile", "recommend", fmt, "--json"], env=env,
                                  capture_output=True, text=True).stdout)
    f = json.loads(subprocess.run([ftbench, "profile", "fetch-fraction", fmt, "--json"], env=env,
                                  capture_output=True, text=True).stdout)
    got_f = f.get("fetch_fraction")
    same_f = (frac is None and got_f is None) or (frac is not None and got_f is not None and
                                                  abs(frac - got_f) < 1e-9)
    check("libftprofile %s" % fmt, "%s, fraction %s" % (r.get("recommendation"),
          "-" if got_f is None else "%.4f" % got_f),
          "%s, %s" % (want, "-" if frac is None else "%.4f" % frac),
          r.get("recommendation") == want and e["recommended"] == want and same_f)

w = max(len(r[0]) for r in rows)
for r in rows:
    print("%-*s  %-34s %-24s %s" % (w, r[0], r[1], r[2], r[3]))
sys.exit(0 if ok else 1)
