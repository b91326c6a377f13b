#!/usr/bin/env python3
"""Table and checks of bench/multigpu_conc.sh: usage multigpu_conc.py BW_ALL_JSON [READER_TXT].
BW_ALL_JSON is what `ftbench bw --gpu all -o FILE` writes ({"profiles": [...], "wall_seconds"}).
Prints, per GPU and format, the figures measured alone and while every engine runs at once, both
verdicts and fetch fractions, the wall time and the topology; ok/BAD lines for the checks; exit 1
on any BAD."""
import json
import sys

bad = []


def check(cond, what):
    print(("ok   " if cond else "BAD  ") + what)
    if not cond:
        bad.append(what)


def f(v, fmt="%.1f"):
    return fmt % v if isinstance(v, (int, float)) else "-"


try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError) as ex:
    print("BAD  no result of bw --gpu all: %s" % ex)
    sys.exit(1)
profs = doc.get("profiles", [])
wall = doc.get("wall_seconds")
check(len(profs) >= 2, "%d profiles (one per GPU)" % len(profs))
print("full run: %s s for %d GPUs (goal: under 60 s)" % (f(wall), len(profs)))
hdr = "%-5s %-13s | %7s %7s %6s %6s %5s %-7s %5s | %7s %7s %6s %6s %5s %-7s %5s" % (
    "GPU", "format", "cpu", "gather", "cpu_ov", "gat_ov", "ratio", "verdict", "fetch",
    "cpu", "gather", "cpu_ov", "gat_ov", "ratio", "verdict", "fetch")
print("%-19s | %-50s | %s" % ("", "isolated (this GPU alone)", "concurrent (every engine at once)"))
print(hdr)
print("-" * len(hdr))
sets = []
for p in profs:
    g = p.get("gpu") or {}
    conc = p.get("concurrent") or {}
    for e in conc.get("engines_of_gpu", []):
        sets.append(set(e.get("cpu_ids", [])))
    for fmt, e in (p.get("dtype_kernels") or {}).items():
        c = e.get("concurrent") or {}
        iso_fr = None
        if e.get("recommended_isolated") == "hybrid":
            po, co, pg, cp = (e.get(k) for k in ("pcie_gather_overlap_gbs", "cpu_moe_overlap_gbs", "pcie_gather_gbs", "cpu_moe_gbs"))
            iso_fr = po / (po + co) if po and co else (min(1, pg / cp) if pg and cp else None)
        print("%-5s %-13s | %7s %7s %6s %6s %5s %-7s %5s | %7s %7s %6s %6s %5s %-7s %5s" % (
            g.get("index"), fmt, f(e.get("cpu_moe_gbs")), f(e.get("pcie_gather_gbs")), f(e.get("cpu_moe_overlap_gbs")),
            f(e.get("pcie_gather_overlap_gbs")), f(e.get("ratio"), "%.2f"), e.get("recommended_isolated"),
            f(iso_fr, "%.3f"), f(c.get("cpu_moe_gbs")), f(c.get("pcie_gather_gbs")), f(c.get("cpu_moe_overlap_gbs")),
            f(c.get("pcie_gather_overlap_gbs")), f(c.get("ratio"), "%.2f"), c.get("recommended"),
            f(c.get("fetch_fraction") if c.get("recommended") == "hybrid" else None, "%.3f")))
        check(bool(c), "GPU %s %s has a concurrent block" % (g.get("index"), fmt))
        if c.get("pcie_gather_gbs") and e.get("pcie_gather_gbs"):
            share = c["pcie_gather_gbs"] / e["pcie_gather_gbs"]
            check(share < 1.05, "GPU %s %s: concurrent gather %.1f%% of alone" % (g.get("index"), fmt, 100 * share))
        if c.get("cpu_moe_gbs") and e.get("cpu_moe_gbs"):
            print("      %s: CPU share %.1f%% of alone (%s of %s cores)" % (
                fmt, 100 * c["cpu_moe_gbs"] / e["cpu_moe_gbs"], c.get("threads"), (p.get("cpu") or {}).get("threads_used")))
    topo = p.get("topology") or {}
    print("GPU %s %s bus %s: deployment %s, numa %s, engines %s, cores per engine %s, core sets %s; peers %s" % (
        g.get("index"), g.get("uuid"), g.get("pci_bus_id"), p.get("deployment"), topo.get("numa_node"),
        conc.get("engines"), conc.get("cores_per_engine"), [e.get("cpu_ids") for e in conc.get("engines_of_gpu", [])],
        [(x.get("index"), x.get("relation")) for x in topo.get("peers", [])]))
    for w in p.get("warnings", []):
        print("      warning: %s" % w)
    check(p.get("deployment") == "concurrent", "GPU %s: deployment %s (default with 2 GPUs: concurrent)" % (
        g.get("index"), p.get("deployment")))
for i in range(len(sets)):
    for j in range(i + 1, len(sets)):
        check(not (sets[i] & sets[j]), "engine core sets %d and %d are disjoint" % (i, j))
if len(sys.argv) > 2:
    print("libftprofile (ftbench profile recommend / fetch-fraction --deployment): uuid deployment format verdict fraction")
    for line in open(sys.argv[2]):
        print("  " + line.rstrip())
sys.exit(1 if bad else 0)
