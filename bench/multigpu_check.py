#!/usr/bin/env python3
"""Checks of bench/multigpu.sh: usage multigpu_check.py OUTDIR UUID_OF_GPU_1.
Prints ok/BAD lines and a small table of each GPU's bw figures; exit 1 on any BAD."""
import glob
import json
import os
import sys

out, u1 = sys.argv[1], sys.argv[2]
bad = []


def check(cond, what):
    print(("ok   " if cond else "BAD  ") + what)
    if not cond:
        bad.append(what)


def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError) as e:
        return {"_error": str(e)}


smi = [[f.strip() for f in l.split(",")] for l in open(os.path.join(out, "smi.csv")) if l.strip()]
gpus = load(os.path.join(out, "gpus.json")).get("gpus", [])
check(len(gpus) == 2 and len(smi) == 2, "ftbench gpus lists %d GPUs, nvidia-smi %d" % (len(gpus), len(smi)))
for g, s in zip(gpus, smi):
    bus = (g.get("pci_bus_id") or "").upper()
    check(g.get("uuid") == s[1] and bus.endswith(s[2].upper()[-12:]) and str(g.get("index")) == s[0],
          "GPU %s: ftbench %s %s / nvidia-smi %s %s" % (s[0], g.get("uuid"), g.get("pci_bus_id"), s[1], s[2]))
# cache-copy: --gpu 1, --gpu UUID, --gpu UUID-prefix report the same device
seen = {}
for p in sorted(glob.glob(os.path.join(out, "cc.*.json"))):
    j = load(p)
    seen[os.path.basename(p)[3:-5]] = (j.get("gpu") or {}).get("uuid")
check(len(seen) == 3 and set(seen.values()) == {u1},
      "cache-copy --gpu 1 / UUID / prefix ran on %s" % seen)
# profile path/show: --gpu 1 and --gpu UUID name the same file, GPU 0 another
paths = {t: open(os.path.join(out, "path.%s.txt" % t)).read().strip() for t in ("0", "1", u1[:12])}
check(paths["1"] == paths[u1[:12]] and paths["0"] != paths["1"] and paths["1"].endswith(u1 + ".json"),
      "profile path --gpu 1 == --gpu UUID (%s), --gpu 0 = %s" % (paths["1"], paths["0"]))
# two profiles in the store, each naming its own GPU, each with its own figures
store = sorted(glob.glob(os.path.join(out, "cache", "freetoken", "benchbw", "*.json")))
check(len(store) == 2, "benchbw store holds %d profiles: %s" % (len(store), [os.path.basename(p) for p in store]))
rows = []
for p in store:
    j = load(p)
    u = (j.get("gpu") or {}).get("uuid")
    check(os.path.basename(p) == "%s.json" % u, "%s names GPU %s" % (os.path.basename(p), u))
    c = j.get("ceilings", {})
    rows.append((u, (j.get("gpu") or {}).get("pci_bus_id"), (j.get("gpu") or {}).get("numa_node"),
                 c.get("pcie_linear_h2d_gbs"), c.get("pcie_linear_d2h_gbs"), c.get("cpu_stream_read_gbs"),
                 (j.get("cpu") or {}).get("cpu_ids"), j.get("dtypes"), j.get("epoch")))
if len(rows) == 2:
    check(rows[0][3] != rows[1][3] and rows[0][8] != rows[1][8],
          "each profile has its own measurements (H2D %.2f vs %.2f GB/s)" % (rows[0][3] or 0, rows[1][3] or 0))
for r in rows:
    print("profile %s bus %s numa %s: H2D %.2f D2H %.2f GB/s, CPU read %.1f GB/s, cpu ids %s, decisions %s" % (
        r[0], r[1], r[2], r[3] or 0, r[4] or 0, r[5] or 0, r[6], r[7]))
sys.exit(1 if bad else 0)
