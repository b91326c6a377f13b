#!/usr/bin/env python3
"""Summarise bench/cpu_moe_sched_ab.sh runs: per format, each variant's median GB/s, read GB/s and
% of its own read ceiling, and the median of its paired difference (points of %) against the
format's first-listed variant in the same round; then, where the runs were traced
(FREETOKEN_CPU_MOE_TRACE=1), each variant's median step parts in us. usage:
cpu_moe_ab_summary.py runs.jsonl"""
import json
import statistics as st
import sys


def main():
    runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    order, base = [], {}
    rows = {}
    for r in runs:
        lab, fmt = r["label"], r["format"]
        if lab not in order:
            order.append(lab)
        base.setdefault(fmt, lab)
        res = (r.get("run") or {}).get("results") or []
        if r["rc"] != 0 or not res:
            rows.setdefault(lab, []).append(None)
            continue
        x = res[0]
        rows.setdefault(lab, []).append((r["round"], x["gbs"], x["read_ceiling_gbs"],
                                         100 * x["fraction_of_read_ceiling"], x["kernel"]))
    print("%-18s %-8s %4s %8s %8s %7s %9s %5s  %s" % ("variant", "format", "n", "GB/s", "read", "%", "d% vs base", "wins", "kernel"))
    for lab in order:
        ok = [v for v in rows[lab] if v]
        fmt = next(r["format"] for r in runs if r["label"] == lab)
        if not ok:
            print("%-18s %-8s failed (%d runs)" % (lab, fmt, len(rows[lab])))
            continue
        b = {v[0]: v for v in rows.get(base[fmt], []) if v}
        diffs = [v[3] - b[v[0]][3] for v in ok if v[0] in b]
        wins = sum(1 for v in ok if v[0] in b and v[3] > b[v[0]][3])
        print("%-18s %-8s %4d %8.1f %8.1f %7.1f %9s %5s  %s" % (
            lab, fmt, len(ok), st.median(v[1] for v in ok), st.median(v[2] for v in ok),
            st.median(v[3] for v in ok),
            "%+.1f" % st.median(diffs) if diffs and lab != base[fmt] else "-",
            "%d/%d" % (wins, len(diffs)) if lab != base[fmt] else "-", ok[0][4]))
    keys = ["step_us", "start_us", "items_us", "wait_us", "idle_us", "after_us", "items_per_worker"]
    traced = {}
    for r in runs:
        res = (r.get("run") or {}).get("results") or []
        if r["rc"] == 0 and res and "trace" in res[0]:
            traced.setdefault(r["label"], []).append(res[0]["trace"])
    if traced:
        print("\ntrace medians (us per worker and step)")
        # gap: the step less its parts, i.e. between items (claims, next-item setup) and the
        # driver's wait for the last worker
        print("%-18s" % "variant" + "".join("%9s" % k.replace("_us", "").replace("items_per_worker", "items/w")
                                          for k in keys) + "%9s" % "gap")
        parts = ["start_us", "items_us", "wait_us", "idle_us", "after_us"]
        for lab in order:
            if lab in traced:
                gap = st.median(t["step_us"] - sum(t[k] for k in parts) for t in traced[lab])
                print("%-18s" % lab + "".join("%9.1f" % st.median(t[k] for t in traced[lab]) for k in keys)
                      + "%9.1f" % gap)


if __name__ == "__main__":
    main()
