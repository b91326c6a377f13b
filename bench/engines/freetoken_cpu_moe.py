#!/usr/bin/env python3
"""The seed engine's CPU MoE executor measured through ftbench's CPU kernel probe
protocol (docs/CPU_KERNEL_PROBE.md): `ftbench bw --cpu-kernel "python3 THIS"`.

Two measures (the request's "measure"): "kernel" (the default) and "layer_step" (the
engine's CPU path inside its decode step, freetoken_moe.layer_steps: for replay --cpu-kernel).

Reads one request line (JSON) on stdin, builds FreeToken's own CpuMoeExecutor
(freetoken.moe.cpu_executor, its C++ _cpu_moe extension) over pinned host banks of the
request's geometry, as its engine builds it: num_threads 0 = one worker per physical
core, pinned, the flag-handshake coordinator on the last core (so N-1 workers on cores
0..N-2), torch's intra-op threads clamped to 1 by the executor. Times batch-1 decode
steps of one layer with the expert ids rotating over the banks (working set well past
the last-level cache), one sample per step, and prints one result line.

FreeToken's code is not part of this tree: --seed-src (or $FREETOKEN_SRC) names its
source tree with the extensions built (bench/engines/README.md), else the installed
package is imported.
"""

from __future__ import annotations

import json
import os
import sys
import time

PROTOCOL = "ftbench-cpu-kernel"
VERSION = 1


def reply(doc: dict) -> None:
    sys.stdout.write(json.dumps(doc, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def banks_for(torch, alloc, fmt: str, E: int, H: int, I: int) -> dict:
    """Pinned [E, ...] banks in the executor's layout (FREETOKEN.md section 1); constant
    contents with normal floats (values do not change the work)."""

    def pin(*shape, dtype, fill):
        t = alloc(*shape, dtype=dtype)
        t.fill_(fill)
        return [t]

    u8 = torch.uint8
    if fmt == "bf16":
        return {"gate_up": pin(E, 2 * I, H, dtype=torch.bfloat16, fill=0.02),
                "down": pin(E, H, I, dtype=torch.bfloat16, fill=0.02)}
    if fmt == "nvfp4":
        return {"gate_up_packed": pin(E, 2 * I, H // 2, dtype=u8, fill=0x3A),
                "gate_up_scale": pin(E, 2 * I, H // 16, dtype=u8, fill=0x38),
                "gate_up_global": pin(E, 2 * I, dtype=torch.float16, fill=1.0),
                "down_packed": pin(E, H, I // 2, dtype=u8, fill=0x3A),
                "down_scale": pin(E, H, I // 16, dtype=u8, fill=0x38),
                "down_global": pin(E, H, dtype=torch.float16, fill=1.0)}
    if fmt == "mxfp4_triton":
        return {"gate_up_blocks": pin(E, H // 2, 2 * I, dtype=u8, fill=0x3A),
                "gate_up_scales": pin(E, H // 32, 2 * I, dtype=u8, fill=127),
                "gate_up_bias": pin(E, 2 * I, dtype=torch.bfloat16, fill=0.0),
                "down_blocks": pin(E, I // 2, H, dtype=u8, fill=0x3A),
                "down_scales": pin(E, I // 32, H, dtype=u8, fill=127),
                "down_bias": pin(E, H, dtype=torch.bfloat16, fill=0.0)}
    if fmt == "ds_fp4":
        return {"gate_up_packed": pin(E, 2 * I, H // 2, dtype=u8, fill=0x3A),
                "gate_up_scale": pin(E, 2 * I, H // 32, dtype=u8, fill=127),
                "down_packed": pin(E, H, I // 2, dtype=u8, fill=0x3A),
                "down_scale": pin(E, H, I // 32, dtype=u8, fill=127)}
    return {}


def main(argv: list[str]) -> int:
    src = os.environ.get("FREETOKEN_SRC")
    if len(argv) >= 2 and argv[0] == "--seed-src":
        src = argv[1]
    elif argv:
        print(f"usage: freetoken_cpu_moe.py [--seed-src DIR] < request.json", file=sys.stderr)
        return 2
    line = sys.stdin.readline()
    try:
        req = json.loads(line)
        if req.get("protocol") != PROTOCOL or req.get("version") != VERSION:
            raise ValueError(f"not a {PROTOCOL} v{VERSION} request")
        fmt = req["format"]
        H, I, E, K = (int(req[k]) for k in ("hidden", "inter", "experts", "top_k"))
        E_syn = int(req.get("synth_experts") or E)
        threads = int(req.get("threads", 0))
        warmup, steps = int(req.get("warmup", 8)), int(req.get("steps", 64))
        act = req.get("activation", "silu")
        limit = req.get("swiglu_limit")
    except (ValueError, KeyError, TypeError) as e:
        print(f"freetoken_cpu_moe: bad request: {e}", file=sys.stderr)
        return 2
    if src:
        sys.path.insert(0, os.path.join(src, "python"))
    if req.get("measure", "kernel") == "layer_step":
        return layer_step_main(req, fmt, H, I, E, K, threads, warmup, steps)
    import torch
    import freetoken
    from freetoken.kernel.pinned import alloc_pinned_tensor
    from freetoken.moe.cpu_executor import CpuMoeExecutor

    engine = {"name": "freetoken", "version": freetoken.__version__}
    if os.environ.get("FREETOKEN_COMMIT"):
        engine["commit"] = os.environ["FREETOKEN_COMMIT"]
    base = {"protocol": PROTOCOL, "version": VERSION, "engine": engine, "format": fmt}
    banks = banks_for(torch, alloc_pinned_tensor, fmt, E_syn, H, I)
    if not banks:
        reply(dict(base, supported=False, error=f"the engine's CPU executor has no {fmt} path"))
        return 0
    eb = sum(t[0][0].numel() * t[0].element_size() for t in banks.values())
    if req.get("expert_bytes") and int(req["expert_bytes"]) != eb:
        print(f"freetoken_cpu_moe: expert bytes {eb} differ from the request's "
              f"{req['expert_bytes']}", file=sys.stderr)
        return 3
    # A minimal cache stand-in: the executor reads quant_format, bank_sources and the
    # layer/expert counts (as the seed's own bw bench builds it).
    from types import SimpleNamespace

    cache = SimpleNamespace(quant_format=fmt, bank_sources=banks, num_layers=1,
                            num_experts=E_syn, decode_target="cpu", cpu_executor=None)
    ex = CpuMoeExecutor(cache, top_k=K, activation=act, apply_router_weight_on_input=False,
                        num_threads=threads, max_tokens=1, device=torch.device("cuda"),
                        swiglu_limit=limit)
    io = ex._io_for(1)
    io["x"].copy_(torch.randn(1, H, dtype=torch.bfloat16) * 0.1)
    io["w"].copy_(torch.full((1, K), 1.0 / K, dtype=torch.float32))
    task = ex._task_for(0, 1)
    base_ids = torch.arange(K, dtype=torch.int32)
    samples = []
    t_first = t_last = None
    for i in range(warmup + steps):
        io["ids"].copy_((((i * K) + base_ids) % E_syn).view(1, K))
        t0 = time.perf_counter()
        ex._ext.run_task(task)
        dt = time.perf_counter() - t0
        if i >= warmup:
            samples.append(K * eb / dt / 1e9)
            t_first = t_first or time.monotonic() - dt
            t_last = time.monotonic()
    s = sorted(samples)
    med = s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2
    reply(dict(base, gbs=round(med, 3), samples=[round(x, 3) for x in samples],
               threads=ex.num_threads, isa=ex.isa, expert_bytes=eb, synth_experts=E_syn,
               cores=ex.core_ids, torch_threads=torch.get_num_threads(),
               window=[round(t_first, 6), round(t_last, 6)]))
    return 0


def layer_step_main(req: dict, fmt: str, H: int, I: int, E: int, K: int, threads: int, warmup: int,
                    steps: int) -> int:
    """The "layer_step" measure: the engine's CPU path inside its own decode step (its
    OffloadMoELayer, slot cache, CpuMoeExecutor and flag handshake in a CUDA graph), through
    freetoken_moe.layer_steps beside this file."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import freetoken
    import freetoken_moe

    engine = {"name": "freetoken", "version": freetoken.__version__}
    if os.environ.get("FREETOKEN_COMMIT"):
        engine["commit"] = os.environ["FREETOKEN_COMMIT"]
    base = {"protocol": PROTOCOL, "version": VERSION, "engine": engine, "format": fmt,
            "measure": "layer_step"}
    if fmt not in freetoken_moe.GEOMETRY:
        reply(dict(base, supported=False,
                   error=f"the harness builds {', '.join(freetoken_moe.GEOMETRY)} layers only"))
        return 0
    try:
        layers, batch = int(req["layers"]), int(req.get("batch", 1))
        routes = [int(x) for x in req["routes"]]
        fetches = [int(x) for x in req.get("fetches") or []]
        # optional: layer_steps' defaults where the request names none
        fkw = {k: (str if k == "fetch_spread" else int)(req[k]) for k in ("fetch_spread", "fetch_slots")
               if k in req}
    except (KeyError, ValueError, TypeError) as e:
        print(f"freetoken_cpu_moe: bad layer_step request: {e}", file=sys.stderr)
        return 2
    if fkw.get("fetch_spread", freetoken_moe.FETCH_SPREADS[0]) not in freetoken_moe.FETCH_SPREADS or \
            fkw.get("fetch_slots", 0) < 0:
        print(f"freetoken_cpu_moe: bad layer_step request: fetch_spread {fkw.get('fetch_spread')!r} "
              f"({' or '.join(freetoken_moe.FETCH_SPREADS)}), fetch_slots {fkw.get('fetch_slots')} (>= 0)",
              file=sys.stderr)
        return 2
    if batch != 1 or not routes or min(routes) < 0 or max(routes + fetches) > K or min(fetches + [1]) < 1:
        print(f"freetoken_cpu_moe: layer steps at batch 1 with 0..{K} routes (asked batch {batch}, "
              f"routes {routes})", file=sys.stderr)
        return 2

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    eng = freetoken_moe.Engine(fmt, layers, {"hidden": H, "inter": I, "experts": E, "top_k": K}, 1, log,
                               distinct=min(layers, 4))
    eb = eng.expert_bytes()
    if req.get("expert_bytes") and int(req["expert_bytes"]) != eb:
        print(f"freetoken_cpu_moe: expert bytes {eb} differ from the request's {req['expert_bytes']}",
              file=sys.stderr)
        return 3
    res = freetoken_moe.layer_steps(eng, routes, warmup, steps, threads, fetches=fetches, **fkw)
    ex = eng.executor
    reply(dict(base, layer_step=res, threads=ex.num_threads, isa=ex.isa, expert_bytes=eb,
               cores=ex.core_ids, bank_s=round(eng.bank_s, 2)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
