#!/usr/bin/env python3
"""PyTorch CPU MoE step: the baseline `ftbench cpu-moe` is compared with (bench/RESULTS.md).

Same shapes and working set as `ftbench cpu-moe --format bf16` (qwen3-30b: H=2048, I=768, top-8,
batch 1), bf16 expert weights [E_synth, 2I, H] (gate rows then up rows) and [E_synth, H, I],
E_synth chosen like the C bench (>= max(4*LLC, 1 GiB) of experts), expert ids rotating
through a random permutation so no expert repeats before the whole working set was read. One step
= for each routed expert: F.linear(x, gate_up[e]) -> silu(gate) * up -> F.linear(h, down[e]),
weighted sum; the way a PyTorch CPU MoE layer is usually written. GB/s = topk * expert_bytes / t.
"""
import argparse
import json
import math
import os
import statistics
import time

import torch
import torch.nn.functional as F


def llc_bytes():
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for d in os.listdir(base):
            p = os.path.join(base, d)
            lvl = int(open(os.path.join(p, "level")).read())
            size = open(os.path.join(p, "size")).read().strip()
            mult = {"K": 1024, "M": 1 << 20, "G": 1 << 30}.get(size[-1], 1)
            val = int(size.rstrip("KMG")) * mult
            if lvl >= 3 and val > best:
                best = val
    except OSError:
        pass
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--inter", type=int, default=768)
    ap.add_argument("--experts", type=int, default=128)
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="0: physical cores (os.cpu_count() / SMT)")
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--iters", type=int, default=64)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    H, I, K = a.hidden, a.inter, a.topk
    eb = 3 * H * I * 2
    ws = max(4 * llc_bytes(), 1 << 30)
    es = max(K * a.batch, math.ceil(ws / eb))  # like the C bench: may exceed the model's E
    g = torch.Generator().manual_seed(1)
    gate_up = (torch.randn(es, 2 * I, H, generator=g) * 0.02).to(torch.bfloat16)
    down = (torch.randn(es, H, I, generator=g) * 0.02).to(torch.bfloat16)
    perm = torch.randperm(es, generator=g).tolist()
    x = torch.randn(a.batch, H, generator=g).to(torch.bfloat16)
    pos = 0

    def step():
        nonlocal pos
        out = torch.zeros(a.batch, H, dtype=torch.bfloat16)
        ids = [[perm[(pos + t * K + k) % es] for k in range(K)] for t in range(a.batch)]
        pos = (pos + a.batch * K) % es
        uniq = {e for row in ids for e in row}
        for t in range(a.batch):
            xt = x[t:t + 1]
            for k, e in enumerate(ids[t]):
                gu = F.linear(xt, gate_up[e])
                h = F.silu(gu[:, :I]) * gu[:, I:]
                out[t:t + 1] += F.linear(h, down[e]) * (1.0 / (k + 1))
        return len(uniq)

    with torch.inference_mode():
        for _ in range(a.warmup):
            step()
        gbs, ms = [], []
        for _ in range(a.iters):
            t0 = time.perf_counter()
            u = step()
            dt = time.perf_counter() - t0
            gbs.append(u * eb / dt / 1e9)
            ms.append(dt * 1e3)
    res = {"torch": torch.__version__, "threads": torch.get_num_threads(), "hidden": H, "inter": I,
           "topk": K, "batch": a.batch, "synth_experts": es, "expert_bytes": eb,
           "gbs": statistics.median(gbs), "gbs_min": min(gbs), "gbs_max": max(gbs),
           "step_ms_median": statistics.median(ms)}
    if a.json:
        print(json.dumps(res))
    else:
        print("pytorch bf16 MoE step: %.1f GB/s (min %.1f max %.1f), %.3f ms/step, %d threads, torch %s, "
              "%d synthetic experts" % (res["gbs"], res["gbs_min"], res["gbs_max"], res["step_ms_median"],
                                        res["threads"], res["torch"], es))


if __name__ == "__main__":
    main()
