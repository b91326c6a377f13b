#!/usr/bin/env python3
"""The seed engine's own MoE decode, module level: FreeToken's OffloadMoELayer,
OffloadMoeCache (slot cache, ensure_experts / ensure_experts_hybrid, copy_missing) and
CpuMoeExecutor (its CPU path, flag handshake, worker pinning), on constant weights in
pinned host banks, decoding a routing trace at batch B in each placement mode.

FreeToken's code is NOT part of this tree: it is imported from --seed-src (a
`git archive` of its public repository, extensions built there, see README.md).

Per point (format x workload x cache size) and arm (offload; hybrid at a fetch
fraction f or a cap K; hybrid at the fraction a bw profile gives, read through the
seed's own reader): ms per decode step of the N layers (median, p10, p90 over the
timed steps, each step one CUDA-graph replay timed by CUDA events, as the engine
decodes), tok/s of the MoE part projected to --model-layers, miss rate, fetched and
CPU experts per layer-step. The winner (offload vs the best hybrid arm) is named only
where the 95% confidence intervals of the two medians do not overlap, else "tie" (the
step-to-step spread p10..p90 is mostly the routing's: how many experts a step misses).
With --rounds the arms run once a round, rotated; with --confirm N the sweep's best hybrid arm
then runs head to head with each candidate fraction (the profile arms', --candidates' replay
best f) for N more rounds, and a candidate's share of the best comes from those alone.

Output: one JSON document (format "ftbench-engine-moe", version 1) on stdout or --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import routing  # noqa: E402
from compare_replay import key, same_fraction  # noqa: E402  (how a point and an arm are named on both sides)

OUT_FORMAT = "ftbench-engine-moe"
OUT_VERSION = 1

# The per-format workloads (FREETOKEN.md section 2, `bw` per-format geometry).
GEOMETRY = {
    "bf16": {"hidden": 2048, "inter": 768, "experts": 128, "top_k": 8},
    "nvfp4": {"hidden": 3072, "inter": 1536, "experts": 128, "top_k": 8},
}


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median_ci(ms: list[float]) -> tuple[float, float]:
    """Distribution-free 95% confidence interval of the median (order statistics k and
    n-1-k, k = floor((n - 1.96 sqrt(n)) / 2)); the whole range below 6 samples."""
    s = sorted(ms)
    n = len(s)
    k = int((n - 1.96 * n ** 0.5) / 2)
    if n < 6 or k < 0:
        return s[0], s[-1]
    return s[k], s[n - 1 - k]


def spread_of(ms: list[float]) -> dict:
    lo, hi = median_ci(ms)
    return {"median": round(percentile(ms, 0.5), 4), "p10": round(percentile(ms, 0.1), 4),
            "p90": round(percentile(ms, 0.9), 4), "ci95": [round(lo, 4), round(hi, 4)],
            "samples": len(ms), "values": [round(x, 4) for x in ms]}


def decide(offload: dict | None, hybrids: list[dict]) -> tuple[str, float | None, dict | None]:
    """(winner, best fetch fraction, best hybrid arm). A winner only where the 95%
    confidence intervals of the two medians do not overlap (the step-to-step spread
    itself is mostly routing: how many experts a step misses)."""
    ok = [h for h in hybrids if "ms_per_step" in h]
    best = min(ok, key=lambda h: h["ms_per_step"]["median"]) if ok else None
    best_f = best.get("fetch_fraction") if best else None
    if offload is None or "ms_per_step" not in offload or best is None:
        return ("hybrid" if best else "offload" if offload else "tie"), best_f, best
    a, b = offload["ms_per_step"], best["ms_per_step"]
    if a["ci95"][1] < b["ci95"][0]:
        return "offload", best_f, best
    if b["ci95"][1] < a["ci95"][0]:
        return "hybrid", best_f, best
    return "tie", best_f, best


# ----------------------------------------------------------------- engine side ----

class Engine:
    """The seed's modules for one format: banks, layers, one CPU executor, caches."""

    def __init__(self, fmt: str, layers: int, geo: dict, batch: int, log, distinct: int = 0):
        import torch
        from freetoken.distributed import set_tp_info, try_get_tp_info
        from freetoken.layers.moe import OffloadMoELayer

        if try_get_tp_info() is None:
            set_tp_info(rank=0, size=1)
        self.torch = torch
        self.fmt, self.L, self.B = fmt, layers, batch
        self.H, self.I = geo["hidden"], geo["inter"]
        self.E, self.K = geo["experts"], geo["top_k"]
        self.dev = torch.device("cuda")
        self.log = log
        # distinct host bank layers (layer l reads l mod distinct): 0 = one per layer
        self.distinct = distinct if 0 < distinct < layers else layers
        t0 = time.perf_counter()
        self.banks = self._banks()
        self.bank_s = time.perf_counter() - t0
        self.layers = [OffloadMoELayer(layer_id=i, num_experts=self.E, top_k=self.K,
                                       hidden_size=self.H, intermediate_size=self.I)
                       for i in range(layers)]
        self.executor = None
        self.caches: dict[int, object] = {}

    def _banks(self) -> dict:
        from freetoken.kernel.pinned import alloc_pinned_tensor

        torch, L, E, H, I = self.torch, self.L, self.E, self.H, self.I

        def bank(*shape, dtype, fill):
            out = []
            for _ in range(self.distinct):
                t = alloc_pinned_tensor(*shape, dtype=dtype)
                t.fill_(fill)
                out.append(t)
            return [out[i % self.distinct] for i in range(L)]

        # Constant weights, as the seed's own bw bench uses (values do not change the
        # work; no denormals). nvfp4 as its dummy loader: unit e4m3 scales, small globals.
        if self.fmt == "bf16":
            return {"gate_up": bank(E, 2 * I, H, dtype=torch.bfloat16, fill=0.02),
                    "down": bank(E, H, I, dtype=torch.bfloat16, fill=0.02)}
        if self.fmt == "nvfp4":
            fp8 = torch.float8_e4m3fn
            return {"gate_up_packed": bank(E, 2 * I, H // 2, dtype=torch.uint8, fill=0x3A),
                    "gate_up_scale": bank(E, 2 * I, H // 16, dtype=fp8, fill=1.0),
                    "gate_up_global": bank(E, 2 * I, dtype=torch.float16, fill=0.01),
                    "down_packed": bank(E, H, I // 2, dtype=torch.uint8, fill=0x3A),
                    "down_scale": bank(E, H, I // 16, dtype=fp8, fill=1.0),
                    "down_global": bank(E, H, dtype=torch.float16, fill=0.01)}
        raise SystemExit(f"freetoken_moe: format {self.fmt!r} is not built here (bf16, nvfp4)")

    def expert_bytes(self) -> int:
        return sum(t[0][0].numel() * t[0].element_size() for t in self.banks.values())

    def cache(self, slots: int, threads: int):
        from freetoken.moe.cpu_executor import CpuMoeExecutor
        from freetoken.moe.offload_cache import OffloadMoeCache

        c = self.caches.get(slots)
        if c is not None:
            return c
        c = OffloadMoeCache(num_layers=self.L, num_experts=self.E, cache_size=slots,
                            device=self.dev, quant_format=self.fmt, decode_target="hybrid",
                            hybrid_max_fetch=self.E)
        c.set_bank_sources(self.banks)
        c.collect_stats = True
        if self.executor is None:
            # The engine's construction (engine.py _init_cpu_moe_executor): threads 0 =
            # one per physical core, the flag coordinator on the last one, workers N-1.
            self.executor = CpuMoeExecutor(
                c, top_k=self.K, activation="silu", apply_router_weight_on_input=False,
                num_threads=threads, max_tokens=self.B, device=self.dev)
        c.set_cpu_executor(self.executor)
        for layer in self.layers:
            layer.offload_cache = c
        self.caches[slots] = c
        return c

    def run(self, slots: int, arm: dict, trace: dict, warmup: int, steps: int,
            use_graph: bool, threads: int, keep_cache: bool = False) -> dict:
        torch = self.torch
        c = self.cache(slots, threads)
        for layer in self.layers:
            layer.offload_cache = c
        mode = arm["mode"]
        if mode == "offload":
            c.decode_target = "gpu"
        else:
            c.decode_target = "hybrid"
            if arm.get("fetch_fraction") is not None:
                f = float(arm["fetch_fraction"])
                # f = 0 means every miss on the CPU: the engine's --moe-hybrid-max-fetch 0.
                c.hybrid_max_fetch, c.hybrid_fetch_fraction = (0, 0.0) if f <= 0 else (self.E, f)
            else:
                c.hybrid_max_fetch, c.hybrid_fetch_fraction = int(arm["cap"]), 0.0
        if not keep_cache:
            c.reset()
        c.reset_stats()
        L, B, K = self.L, self.B, self.K
        total = len(trace["steps"])
        need = warmup + steps
        host_ids = torch.empty((need, L, B, K), dtype=torch.int32).pin_memory()
        for s in range(need):
            src = trace["steps"][s % total]
            for layer in range(L):
                host_ids[s, layer] = torch.tensor(src[layer], dtype=torch.int32).view(B, K)
        static_ids = torch.zeros((L, B, K), dtype=torch.int32, device=self.dev)
        work_ids = torch.zeros_like(static_ids)
        hidden = (torch.randn(B, self.H, device=self.dev) * 0.1).to(torch.bfloat16)
        weights = torch.full((L, B, K), 1.0 / K, dtype=torch.float32, device=self.dev)
        outs: list = []

        def step():
            work_ids.copy_(static_ids)
            outs.clear()
            for layer in self.layers:
                i = layer.layer_id
                outs.append(layer._decode_routed(hidden, weights[i], work_ids[i]))

        def load(s):
            static_ids.copy_(host_ids[s], non_blocking=True)

        eager = min(3, warmup)
        for s in range(eager):
            load(s)
            step()
        torch.cuda.synchronize()
        graph = None
        if use_graph:
            try:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    load(eager)
                    step()
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    step()
                torch.cuda.synchronize()
            except Exception as e:  # the engine would run eager then (--no-graph)
                self.log(f"  graph capture failed ({type(e).__name__}: {e}); timing eager")
                graph = None
                torch.cuda.synchronize()

        def once(s):
            load(s)
            if graph is not None:
                graph.replay()
            else:
                step()

        for s in range(eager, warmup):
            once(s)
        torch.cuda.synchronize()
        c.reset_stats()
        ev0 = torch.cuda.Event(enable_timing=True)
        ev1 = torch.cuda.Event(enable_timing=True)
        ms = []
        for s in range(warmup, need):
            ev0.record()
            once(s)
            ev1.record()
            ev1.synchronize()
            ms.append(ev0.elapsed_time(ev1))
        self.executor.raise_if_unhealthy()
        st = c.decode_miss_stats()
        out = dict(arm)
        out["ms_per_step"] = spread_of(ms)
        out["graph"] = graph is not None
        out["miss_rate"] = round(st["miss_rate"], 4)
        out["active_per_layer_step"] = round(st["active_per_layer"], 3)
        miss = st["missing_per_layer"]
        fetched = miss if mode == "offload" else st["fetched_per_layer"]
        out["missing_per_layer_step"] = round(miss, 3)
        out["fetched_per_layer_step"] = round(fetched, 3)
        out["cpu_per_layer_step"] = round(0.0 if mode == "offload" else st["cpu_per_layer"], 3)
        del graph
        return out


FETCH_SPREADS = ("binomial", "exact")  # layer_steps' fetch_spread: the first is the default


def layer_steps(eng: "Engine", routes: list[int], warmup: int, steps: int, threads: int,
                use_graph: bool = True, fetches: list[int] | None = None,
                fetch_rounds: int = 5, fetch_spread: str = FETCH_SPREADS[0], fetch_slots: int = 0) -> dict:
    """The engine's CPU path inside its decode step, per layer (the probe's "layer_step"
    measure, docs/CPU_KERNEL_PROBE.md): batch 1; every layer routes top_k - n experts that are
    resident in the slot cache and n that are not, rotating over the others so the CPU reads
    other experts each step; hybrid with nothing fetched (the engine's max-fetch 0) puts the n on
    its CPU path, the rest on the GPU. The step (one CUDA-graph replay of the layers, timed by
    CUDA events, as the engine decodes) divided by the layers, for each n; base: the same step in
    offload with every route resident. What the CPU path adds to a layer-step with n routes is
    us(n) - base.

    With fetches: per m, the engine's hybrid step with m misses per layer all fetched (f = 1, no
    CPU routes) beside its offload step with the same misses (K - m resident experts, m missing
    ones rotating over the rest, a cache small enough that the fetched evict each other):
    what the engine's hybrid path adds to a layer-step that fetches m experts beyond the fetch
    itself (its hybrid slot-cache bookkeeping and handshake beside the copy). That difference is
    a few percent of either step, so each m runs in fetch_rounds rounds (the pair's order
    swapped each round) and each side's figure is the least of its round medians: the hybrid
    rounds' noise is one-sided (on the H200 one m's three rounds read 333, 345 and 480 us, the
    offload rounds within 1 %; one 32-step median each gave +418 us at m = 4 in one call and +72
    in the next), and the engine's hybrid steps in a routing trace add about what the least
    rounds add (bench/RESULTS.md section 12). fetch_spread "binomial" (the default, what the
    H200 calls of section 12 ran): each of the K routes misses with probability m / K (seeded),
    so the count varies about its mean m as in a routing trace; "exact": every layer-step misses
    exactly m (the measure before). fetch_slots: the cache's slots for those pairs (0: 2 L x K
    for binomial, so that the resident K survive a layer-step of many misses, L x K for exact;
    the rotating misses miss at any size up to L x (E - K))."""
    L, E, K = eng.L, eng.E, eng.K
    if eng.B != 1:
        raise ValueError("layer steps are measured at batch 1")
    if fetch_spread not in FETCH_SPREADS or fetch_slots < 0:
        raise ValueError(f"fetch_spread {fetch_spread!r} ({' or '.join(FETCH_SPREADS)}), "
                         f"fetch_slots {fetch_slots} (>= 0)")
    slots = min(L * E, max(E, 2 * L * K))
    cold = E - K

    def trace_for(n: int, count: int, spread: str = "exact") -> dict:
        """n routes a layer-step on cold experts (exact), or n on average (binomial)."""
        rng = random.Random(0x5EED + n)
        out = []
        nxt = 0  # the next cold expert: layer-steps in turn, so that layers sharing a bank
        for s in range(count):  # (Engine's distinct) read other experts
            step = []
            for layer in range(L):
                j = n if spread == "exact" else sum(rng.random() < n / K for _ in range(K))
                ids = list(range(K - j))
                ids += [K + (nxt + i) % cold for i in range(j)]
                nxt = (nxt + j) % cold
                step.append(ids)
            out.append(step)
        return {"steps": out}

    need = warmup + steps
    base = eng.run(slots, {"mode": "offload"}, trace_for(0, need), warmup, steps, use_graph, threads)
    res = {"base_us": base["ms_per_step"]["median"] * 1000.0 / L,
           "base_samples": [round(x * 1000.0 / L, 3) for x in base["ms_per_step"]["values"]],
           "steps": steps, "routes": []}
    for n in routes:
        # the resident set stays: nothing is fetched (max-fetch 0), nothing evicted
        r = eng.run(slots, {"mode": "hybrid", "fetch_fraction": 0.0}, trace_for(n, need), warmup, steps,
                    use_graph, threads, keep_cache=True)
        ms = r["ms_per_step"]
        res["routes"].append({"routes": n, "us": round(ms["median"] * 1000.0 / L, 3),
                              "p10": round(ms["p10"] * 1000.0 / L, 3), "p90": round(ms["p90"] * 1000.0 / L, 3),
                              "cpu_per_layer_step": r["cpu_per_layer_step"]})
    res["fetch"] = []
    arms = ({"mode": "offload"}, {"mode": "hybrid", "fetch_fraction": 1.0})
    fs = fetch_slots or (L * K if fetch_spread == "exact" else 2 * L * K)
    fs = min(L * (E - K), max(L * K, fs))
    res["fetch_spread"], res["fetch_slots"] = fetch_spread, fs
    for m in fetches or []:
        tr = trace_for(m, need, fetch_spread)
        got: dict[str, list[dict]] = {"offload": [], "hybrid": []}
        for rnd in range(max(1, fetch_rounds)):
            for arm in rotated(arms, rnd):
                got[arm["mode"]].append(eng.run(fs, arm, tr, warmup, steps, use_graph, threads))
        us = {k: [r["ms_per_step"]["median"] * 1000.0 / L for r in v] for k, v in got.items()}
        off, hyb = got["offload"][-1], got["hybrid"][-1]
        res["fetch"].append({"fetched": m, "us": round(min(us["hybrid"]), 3),
                             "offload_us": round(min(us["offload"]), 3),
                             "rounds": len(us["hybrid"]),
                             "us_rounds": [round(x, 3) for x in us["hybrid"]],
                             "offload_us_rounds": [round(x, 3) for x in us["offload"]],
                             "fetched_per_layer_step": [off["fetched_per_layer_step"],
                                                        hyb["fetched_per_layer_step"]],
                             "cpu_per_layer_step": hyb["cpu_per_layer_step"]})
    return res


# ------------------------------------------------------------------------ main ----

def rotated(items, k: int) -> list:
    """items with the first k mod n moved to the end: round k's order of the arms."""
    items = list(items)
    k %= max(1, len(items))
    return items[k:] + items[:k]


def pool_rounds(runs: list[dict]) -> dict:
    """One arm's rounds as one result: the steps of every round pooled (median, p10-p90,
    its CI), the counts averaged, each round's median kept (round_medians)."""
    out = dict(runs[0])
    ms = [v for r in runs for v in r["ms_per_step"]["values"]]
    out["ms_per_step"] = spread_of(ms)
    out["rounds"] = len(runs)
    out["round_medians"] = [r["ms_per_step"]["median"] for r in runs]
    for k in ("miss_rate", "active_per_layer_step", "missing_per_layer_step",
              "fetched_per_layer_step", "cpu_per_layer_step"):
        out[k] = round(sum(r[k] for r in runs) / len(runs), 4)
    return out


def round_shares(best: list[float], cand: list[float]) -> list[float]:
    """Paired per round: the best arm's round median over the candidate's; [min, median, max]."""
    per = sorted(b / c for b, c in zip(best, cand))
    return [round(per[0], 3), round(percentile(per, 0.5), 3), round(per[-1], 3)]


def confirm(best: dict, cands: list[float], rounds: int, run) -> dict:
    """The sweep's best hybrid arm head to head with each candidate fraction (a profile's,
    the replay's) for `rounds` fresh rounds, the order rotated; the candidates' shares come
    from these rounds alone. The best of several noisy arms is the luckiest one (the winner's
    curse: the engine's identical arms differ by 1-7 %), so a share against the sweep's own
    figure is biased low; measured again beside it, it is not. run(arm) is one eng.run. A
    candidate at the best arm's own fraction is the same arm: share 1, nothing run."""
    bf = best["fetch_fraction"]
    want = sorted({round(float(f), 4) for f in cands})
    fs = [f for f in want if not same_fraction(f, bf)]
    arms = [{"mode": "hybrid", "fetch_fraction": bf}] + \
        [{"mode": "hybrid", "fetch_fraction": f} for f in fs]
    per: list[list[dict]] = [[] for _ in arms]
    for rnd in range(rounds if fs else 0):
        for i in rotated(range(len(arms)), rnd):
            per[i].append(run(arms[i]))
    out = {"rounds": rounds if fs else 0, "best_fetch_fraction": bf, "candidates": []}
    b = pool_rounds(per[0]) if fs else None
    if b:
        out["best"] = {"ms_per_step": b["ms_per_step"], "round_medians": b["round_medians"]}
    for f in want:
        if same_fraction(f, bf):
            out["candidates"].append({"fetch_fraction": f, "same_as_best": True,
                                      "of_best_hybrid": 1.0})
            continue
        c = pool_rounds(per[1 + fs.index(f)])
        out["candidates"].append({
            "fetch_fraction": f, "ms_per_step": c["ms_per_step"],
            "round_medians": c["round_medians"],
            "of_best_hybrid": round(b["ms_per_step"]["median"] / c["ms_per_step"]["median"], 3),
            "of_best_hybrid_rounds": round_shares(b["round_medians"], c["round_medians"]),
            # the engine's own resolution: the two medians' 95% intervals overlap
            "within_ci": c["ms_per_step"]["ci95"][0] <= b["ms_per_step"]["ci95"][1]})
    return out


def replay_best(path: str) -> dict:
    """An `ftbench replay --json` document's best fetch fraction per point, keyed as
    compare_replay.py keys points: (format, workload key, cache fraction)."""
    with open(path, encoding="utf-8") as f:
        rep = json.load(f)
    return {(fmt, key(p["workload"]), round(p["cache_fraction"], 2)): p["best_fetch_fraction"]
            for fmt, blk in rep["replay"].items() for p in blk["points"]
            if p.get("best_fetch_fraction") is not None}


def parse_arms(a) -> list[dict]:
    arms = []
    if "offload" in a.modes:
        arms.append({"mode": "offload"})
    if "hybrid" in a.modes:
        for f in a.fetch:
            arms.append({"mode": "hybrid", "fetch_fraction": f})
        for k in a.cap:
            arms.append({"mode": "hybrid", "cap": k})
    return arms


def profile_fractions(a, fmt: str) -> list[dict]:
    """Arms at the fraction each --profile file gives, read by the seed's own reader
    (freetoken.moe.bench_profile.load_hybrid_fetch_fraction), as its engine reads it."""
    from freetoken.moe.bench_profile import load_hybrid_fetch_fraction

    arms = []
    for spec in a.profile:
        name, _, path = spec.partition("=")
        if not path:
            name, path = os.path.basename(spec), spec
        f = load_hybrid_fetch_fraction(fmt, path=path)
        if f is None:
            arms.append({"mode": "hybrid", "profile": name, "error": "no fraction in the profile"})
        else:
            arms.append({"mode": "hybrid", "fetch_fraction": round(float(f), 4), "profile": name})
    return arms


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed-src", default=os.environ.get("FREETOKEN_SRC"),
                   help="the seed's source tree (its python/ is put on sys.path)")
    p.add_argument("--formats", default="bf16,nvfp4")
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--model-layers", type=int, default=48,
                   help="layer count the tok/s is projected to (Qwen3-30B-A3B: 48)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--cache", default="0.4,0.7", help="GPU cache sizes, fractions of L*E")
    p.add_argument("--workloads", default="uniform,reuse:0.6,reuse:0.85,zipf:1.2")
    p.add_argument("--trace", action="append", default=[],
                   help="routing trace file (repeatable; replaces --workloads)")
    p.add_argument("--modes", default="offload,hybrid")
    p.add_argument("--fetch", default="0,0.2,0.35,0.5,0.75,1",
                   help="hybrid fetch fractions to sweep")
    p.add_argument("--cap", default="", help="hybrid fixed caps K to run")
    p.add_argument("--profile", action="append", default=[], metavar="NAME=FILE",
                   help="a bw profile; adds a hybrid arm at its fetch fraction (repeatable)")
    p.add_argument("--steps", type=int, default=64, help="timed decode steps per arm and round")
    p.add_argument("--rounds", type=int, default=1,
                   help="rounds: every arm of a point runs once a round, the arms' order "
                        "rotated by one each round; an arm's figures pool its rounds' steps")
    p.add_argument("--confirm", type=int, default=0, metavar="N",
                   help="after the sweep, N rounds of its best hybrid arm head to head with "
                        "each candidate (--profile arms, --candidates); their shares come from "
                        "these rounds alone (the sweep's best is its luckiest arm)")
    p.add_argument("--candidates", metavar="REPLAY_JSON",
                   help="ftbench replay --json: its best fetch fraction at each point is a "
                        "candidate for --confirm")
    p.add_argument("--warmup", type=int, default=24, help="untimed steps first (cache warm)")
    p.add_argument("--threads", type=int, default=0, help="CPU executor threads (0 = engine)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-graph", action="store_true")
    p.add_argument("--out", help="write the JSON here (default stdout)")
    a = p.parse_args(argv)
    if a.rounds < 1:
        p.error("--rounds: at least 1")
    if a.confirm < 0:
        p.error("--confirm: not negative")
    a.modes = [m for m in a.modes.split(",") if m]
    a.fetch = [float(x) for x in a.fetch.split(",") if x != ""]
    a.cap = [int(x) for x in a.cap.split(",") if x != ""]
    fracs = [float(x) for x in a.cache.split(",") if x]
    formats = [f for f in a.formats.split(",") if f]
    for m in a.modes:
        if m not in ("offload", "hybrid"):
            p.error(f"--modes: unknown mode {m!r}")
    for f in formats:
        if f not in GEOMETRY:
            p.error(f"--formats: {f!r} is not one of {sorted(GEOMETRY)}")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    try:
        traces = [routing.load(t) for t in a.trace]
    except routing.TraceError as e:
        log(f"freetoken_moe: {e}")
        return 2
    try:
        rbest = replay_best(a.candidates) if a.candidates else {}
    except (OSError, ValueError, KeyError, TypeError) as e:
        log(f"freetoken_moe: --candidates {a.candidates}: not a replay document ({e})")
        return 2
    if a.seed_src:
        sys.path.insert(0, os.path.join(a.seed_src, "python"))
    import torch
    import freetoken

    commit = os.environ.get("FREETOKEN_COMMIT", "")
    doc = {"format": OUT_FORMAT, "version": OUT_VERSION,
           "engine": {"name": "freetoken", "version": freetoken.__version__, "commit": commit},
           "epoch": time.time(),
           "host": {"gpu": torch.cuda.get_device_name(0), "cpus": os.cpu_count(),
                    "machine": platform.machine()},
           "layers": a.layers, "model_layers": a.model_layers, "batch": a.batch,
           "steps": a.steps, "warmup": a.warmup, "rounds": a.rounds, "confirm_rounds": a.confirm,
           "winner_rule": "offload vs the fastest hybrid arm; named when the 95% confidence "
                          "intervals of the two medians do not overlap, else tie",
           "points": []}
    t_all = time.perf_counter()
    for fmt in formats:
        geo = dict(GEOMETRY[fmt])
        if traces:
            geo["experts"], geo["top_k"] = traces[0]["experts"], traces[0]["top_k"]
        eng = Engine(fmt, a.layers, geo, a.batch, log)
        log(f"[{fmt}] banks {eng.expert_bytes() * eng.E * a.layers / 2**30:.1f} GiB pinned "
            f"in {eng.bank_s:.1f} s")
        loads = []
        if traces:
            for path, t in zip(a.trace, traces):
                if (t["layers"], t["batch"]) != (a.layers, a.batch):
                    log(f"freetoken_moe: trace {path}: {t['layers']} layers, batch {t['batch']}; "
                        f"expected {a.layers}, {a.batch} (--layers, --batch)")
                    return 2
                loads.append((t.get("workload") or os.path.basename(path), t))
        else:
            for w in a.workloads.split(","):
                loads.append((w, routing.generate(w, a.layers, eng.E, eng.K, a.batch,
                                                  a.warmup + a.steps, a.seed)))
        arms = parse_arms(a)
        if a.profile:
            arms += profile_fractions(a, fmt)
        for frac in fracs:
            slots = max(eng.E, int(round(frac * a.layers * eng.E)))
            for wname, trace in loads:
                point = {"format": fmt, "workload": wname, "cache_fraction": frac,
                         "cache_slots": slots, "expert_bytes": eng.expert_bytes(),
                         "trace_reuse": round(routing.reuse_of(trace), 4), "arms": []}
                per_round: list[list[dict]] = [[] for _ in arms]
                failed: dict[int, dict] = {}
                for rnd in range(a.rounds):
                    for i in rotated(range(len(arms)), rnd):
                        arm = arms[i]
                        if "error" in arm or i in failed:
                            continue
                        try:
                            r = eng.run(slots, arm, trace, a.warmup, a.steps, not a.no_graph,
                                        a.threads)
                        except Exception as e:
                            failed[i] = dict(arm, error=f"{type(e).__name__}: {e}")
                            continue
                        per_round[i].append(r)
                        log(f"[{fmt} {wname} c{frac} round {rnd + 1}/{a.rounds}] "
                            f"{json.dumps(dict(r, ms_per_step=r['ms_per_step']['median']))}")
                for i, arm in enumerate(arms):
                    r = arm if "error" in arm else failed.get(i) or pool_rounds(per_round[i])
                    if "ms_per_step" in r:
                        r["tok_s_moe"] = round(1000.0 / r["ms_per_step"]["median"], 2)
                        r["tok_s_model"] = round(1000.0 / (r["ms_per_step"]["median"]
                                                           * a.model_layers / a.layers), 2)
                    point["arms"].append(r)
                off = next((x for x in point["arms"] if x["mode"] == "offload"
                            and "ms_per_step" in x), None)
                hyb = [x for x in point["arms"] if x["mode"] == "hybrid" and "ms_per_step" in x
                       and "profile" not in x]
                winner, best_f, best = decide(off, hyb)
                point["winner"] = winner
                point["best_fetch_fraction"] = best_f
                if off and best:
                    point["hybrid_over_offload"] = round(
                        off["ms_per_step"]["median"] / best["ms_per_step"]["median"], 3)
                for x in point["arms"]:
                    if "profile" in x and "ms_per_step" in x and best:
                        x["of_best_hybrid"] = round(
                            best["ms_per_step"]["median"] / x["ms_per_step"]["median"], 3)
                        if len(x.get("round_medians", [])) > 1:
                            x["of_best_hybrid_rounds"] = round_shares(best["round_medians"],
                                                                      x["round_medians"])
                if a.confirm and best and best.get("fetch_fraction") is not None:
                    cands = [x["fetch_fraction"] for x in point["arms"]
                             if "profile" in x and "ms_per_step" in x]
                    rf = rbest.get((fmt, key(wname), round(frac, 2)))
                    if rf is not None:
                        point["replay_fetch_fraction"] = rf
                        cands.append(rf)

                    def run(arm):
                        r = eng.run(slots, arm, trace, a.warmup, a.steps, not a.no_graph, a.threads)
                        log(f"[{fmt} {wname} c{frac} confirm] f {arm['fetch_fraction']}: "
                            f"{r['ms_per_step']['median']} ms")
                        return r
                    try:
                        point["confirm"] = confirm(best, cands, a.confirm, run)
                    except Exception as e:
                        point["confirm"] = {"error": f"{type(e).__name__}: {e}"}
                    for x in point["arms"]:
                        c = next((c for c in point["confirm"].get("candidates", [])
                                  if "profile" in x and "fetch_fraction" in x
                                  and same_fraction(c["fetch_fraction"], x["fetch_fraction"])), None)
                        if c:
                            x["of_best_hybrid_confirm"] = c["of_best_hybrid"]
                doc["points"].append(point)
        if eng.executor is not None:
            doc.setdefault("cpu_executor", {})[fmt] = {
                "threads": eng.executor.num_threads, "isa": eng.executor.isa,
                "cores": eng.executor.core_ids}
        del eng
        torch.cuda.empty_cache()
    doc["seconds"] = round(time.perf_counter() - t_all, 1)
    text = json.dumps(doc, indent=1)
    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(tmp, a.out)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
