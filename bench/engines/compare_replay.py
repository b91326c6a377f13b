#!/usr/bin/env python3
"""ftbench replay beside the seed engine's own MoE decode of the same routing traces: one row
per (format, workload, cache size) with both offload steps, both all-CPU (f = 0) steps, both
winners, whether they agree (where the engine names one), and the engine's step at the
replay's best fetch fraction as a share of its best hybrid step (the replay's target:
>= 0.95; with the harness's --rounds, each round's share too, and whether that arm's median is
within the 95% interval of the best arm's, the engine's own resolution; with the harness's
--confirm, that share measured again head to head with the sweep's best arm in fresh rounds,
free of the sweep's selection bias), and the mean |log(replay / engine)| of the hybrid steps
both ran (how well the replay models the engine's hybrid path). Markdown on stdout, a summary
line last.

usage: compare_replay.py REPLAY_JSON MOE_JSON
  REPLAY_JSON  `ftbench replay --json` (with --save-trace: the routing the harness replays)
  MOE_JSON     bench/engines/freetoken_moe.py --trace ... --out (same fractions swept)
"""

from __future__ import annotations

import json
import math
import re
import sys


def same_fraction(a: float, b: float) -> bool:
    """Two fetch fractions are the same arm (a profile's f is written to 4-5 digits)."""
    return abs(a - b) < 5e-5


def key(name: str) -> str:
    """'reuse 0.6' (replay) and 't-reuse-0.6.json' (a saved trace's file name) -> 'reuse0.6'."""
    n = re.sub(r"\.json$", "", name.rsplit("/", 1)[-1])
    n = re.sub(r"^.*?-(?=uniform|reuse|zipf)", "", n)
    return re.sub(r"[^a-z0-9.]", "", n.lower())


def arm_ms(arm: dict) -> float | None:
    m = arm.get("ms_per_step")
    return m["median"] if m else None


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    rep = json.load(open(argv[0]))
    moe = json.load(open(argv[1]))
    eng = {}
    for p in moe["points"]:
        eng[(p["format"], key(p["workload"]), round(p["cache_fraction"], 2))] = p
    print("| format | workload | cache | replay offload ms | engine offload ms | replay f=0 ms | engine f=0 ms "
          "| replay winner (hyb/off, best f) | engine winner (hyb/off, best f) | agree "
          "| engine at replay's best f / engine's best hybrid | the same, head to head (rounds) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    named = agree = 0
    shares = []
    ties = []   # the replay's f within the engine's CI95 of its best hybrid arm
    logerr = []  # |log(replay / engine)| of every hybrid fraction both ran
    confirmed = []  # the share measured head to head (the harness's --confirm)
    for fmt, blk in rep["replay"].items():
        for p in blk["points"]:
            k = (fmt, key(p["workload"]), round(p["cache_fraction"], 2))
            e = eng.get(k)
            if e is None:
                print(f"| {fmt} | {p['workload']} | {k[2]} | no engine point |  |  |  |  |  |  |  |")
                continue
            modes = p["modes"]
            r_off = next((m["ms_step"]["median"] for m in modes if m["mode"] == "offload"), None)
            r_f0 = next((m["ms_step"]["median"] for m in modes
                         if m["mode"] == "hybrid_fraction" and m.get("fetch_fraction") == 0), None)
            arms = [a for a in e["arms"] if "ms_per_step" in a and "profile" not in a]
            e_off = next((arm_ms(a) for a in arms if a["mode"] == "offload"), None)
            hyb = [a for a in arms if a["mode"] == "hybrid" and a.get("fetch_fraction") is not None]
            e_f0 = next((arm_ms(a) for a in hyb if a["fetch_fraction"] == 0), None)
            best = min(hyb, key=arm_ms) if hyb else None
            by_f = {a["fetch_fraction"]: arm_ms(a) for a in hyb}
            for m in modes:
                if m["mode"] == "hybrid_fraction" and by_f.get(m.get("fetch_fraction")):
                    logerr.append(abs(math.log(m["ms_step"]["median"] / by_f[m["fetch_fraction"]])))
            rf = p.get("best_fetch_fraction")
            at = min(hyb, key=lambda a: abs(a["fetch_fraction"] - rf)) if hyb and rf is not None else None
            share = arm_ms(best) / arm_ms(at) if best and at else None
            if share is not None:
                shares.append(share)
                # the engine's own resolution: the replay's f ties its best arm when the two
                # medians' 95% intervals overlap (the rule the engine's winner is named by)
                ci_a, ci_b = at["ms_per_step"].get("ci95"), best["ms_per_step"].get("ci95")
                if ci_a and ci_b:
                    ties.append(ci_a[0] <= ci_b[1])
            rounds = ""
            if at and best and len(at.get("round_medians", [])) > 1:
                # per round: that round's fastest hybrid arm over the arm at the replay's f
                per = [min(a["round_medians"][i] for a in hyb if len(a.get("round_medians", [])) > i)
                       / at["round_medians"][i] for i in range(len(at["round_medians"]))]
                rounds = f" (rounds {min(per):.2f}-{max(per):.2f})"
            conf = "-"
            c = next((c for c in (e.get("confirm") or {}).get("candidates", [])
                      if rf is not None and same_fraction(c["fetch_fraction"], rf)), None)
            if c:
                confirmed.append(c["of_best_hybrid"])
                conf = (f"{c['of_best_hybrid']:.2f} (same f)" if c.get("same_as_best") else
                        f"{c['of_best_hybrid']:.2f} ({c['of_best_hybrid_rounds'][0]:.2f}-"
                        f"{c['of_best_hybrid_rounds'][2]:.2f})")
            ew = e["winner"]
            if ew != "tie":
                named += 1
                agree += p["winner"] == ew
            ag = "n/a (tie)" if ew == "tie" else ("yes" if p["winner"] == ew else "NO")

            def f(x):
                return "-" if x is None else f"{x:.2f}"

            print(f"| {fmt} | {p['workload']} | {k[2]} | {f(r_off)} | {f(e_off)} | {f(r_f0)} | {f(e_f0)} "
                  f"| {p['winner']} ({p.get('speedup', 0):.2f}x, {rf}) "
                  f"| {ew} ({e.get('hybrid_over_offload', 0):.2f}x, {e.get('best_fetch_fraction')}) | {ag} "
                  f"| {f(share)}{rounds} | {conf} |")
    lo = min(shares) if shares else float("nan")
    print(f"\nwinner agrees at {agree} of {named} points where the engine names one; the engine at the "
          f"replay's best f reaches {lo:.2f}..{max(shares) if shares else float('nan'):.2f} of its best hybrid "
          f"({sum(s >= 0.95 for s in shares)} of {len(shares)} points >= 0.95; {sum(ties)} of {len(ties)} "
          f"within the 95% interval of the engine's best arm); mean |log(replay / engine)| "
          f"of the hybrid steps {sum(logerr) / len(logerr) if logerr else float('nan'):.3f} ({len(logerr)} steps)"
          + (f"; head to head: {sum(x >= 0.95 for x in confirmed)} of {len(confirmed)} >= 0.95 "
             f"({min(confirmed):.2f}..{max(confirmed):.2f})" if confirmed else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
