#!/usr/bin/env python3
"""Print freetoken_moe.py's JSON (format ftbench-engine-moe) as a markdown table: per
point the offload and best-hybrid step times, their ratio, the winner, the best fetch
fraction, miss rates, and each --profile arm's share of the best hybrid.

usage: summarize.py moe.json [more.json ...]
"""

from __future__ import annotations

import json
import sys


def fmt_ms(arm):
    if not arm or "ms_per_step" not in arm:
        return "—"
    m = arm["ms_per_step"]
    return f"{m['median']:.2f} ({m['p10']:.2f}–{m['p90']:.2f})"


def main(paths) -> int:
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("format") != "ftbench-engine-moe":
            print(f"{path}: not an ftbench-engine-moe document", file=sys.stderr)
            return 2
        eng = doc["engine"]
        print(f"engine {eng['name']} {eng['version']} {eng.get('commit', '')[:12]}, "
              f"{doc['layers']} layers, batch {doc['batch']}, {doc['steps']} timed steps"
              f" x {doc.get('rounds', 1)} round(s); "
              f"{doc['host']['gpu']}")
        for fmt, ex in (doc.get("cpu_executor") or {}).items():
            print(f"  CPU executor {fmt}: {ex['threads']} threads, isa {ex['isa']}")
        print("| format | workload (reuse) | cache | offload ms/step | best hybrid ms/step | f | "
              "hybrid/offload | winner | miss off→hyb | profile arms (f: of best) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for p in doc["points"]:
            off = next((a for a in p["arms"] if a["mode"] == "offload"), None)
            hyb = [a for a in p["arms"] if a["mode"] == "hybrid" and "ms_per_step" in a
                   and "profile" not in a]
            best = min(hyb, key=lambda a: a["ms_per_step"]["median"]) if hyb else None
            prof = ", ".join(f"{a['profile']} {a.get('fetch_fraction', '—')}: "
                             f"{a.get('of_best_hybrid', a.get('error', '—'))}"
                             + (" (rounds %s-%s)" % (a["of_best_hybrid_rounds"][0],
                                                      a["of_best_hybrid_rounds"][2])
                                if "of_best_hybrid_rounds" in a else "")
                             + (f"; head to head {a['of_best_hybrid_confirm']}"
                                if "of_best_hybrid_confirm" in a else "")
                             for a in p["arms"] if "profile" in a)
            miss = (f"{off.get('miss_rate', '—')}→{best.get('miss_rate', '—')}"
                    if off and best else "—")
            bf = best.get("fetch_fraction", best.get("cap")) if best else "—"
            print(f"| {p['format']} | {p['workload']} ({p.get('trace_reuse', '—')}) | "
                  f"{p['cache_fraction']} | {fmt_ms(off)} | {fmt_ms(best)} | {bf} | "
                  f"{p.get('hybrid_over_offload', '—')} | {p['winner']} | {miss} | {prof or '—'} |")
        errs = [(p["format"], p["workload"], a) for p in doc["points"] for a in p["arms"]
                if "error" in a]
        for fmt, w, a in errs[:10]:
            print(f"  error {fmt} {w} {a}")
        for p in doc["points"]:
            c = p.get("confirm")
            if not c:
                continue
            if "error" in c:
                print(f"  confirm {p['format']} {p['workload']} c{p['cache_fraction']}: {c['error']}")
                continue
            row = ", ".join(
                f"f {x['fetch_fraction']}: " + ("same as best" if x.get("same_as_best") else
                                               f"{x['of_best_hybrid']} (rounds {x['of_best_hybrid_rounds'][0]}-"
                                               f"{x['of_best_hybrid_rounds'][2]}, within CI {x['within_ci']})")
                for x in c["candidates"])
            print(f"  head to head ({c['rounds']} rounds) {p['format']} {p['workload']} c{p['cache_fraction']}, "
                  f"best f {c['best_fetch_fraction']}: {row}")
        print(f"  sweep per point (ms median by f): ")
        for p in doc["points"]:
            row = " ".join(f"{a.get('fetch_fraction', a.get('cap'))}:{a['ms_per_step']['median']:.2f}"
                           for a in p["arms"] if a["mode"] == "hybrid" and "ms_per_step" in a)
            print(f"   {p['format']} {p['workload']} c{p['cache_fraction']}: {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
