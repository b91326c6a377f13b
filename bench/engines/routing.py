"""Routing workloads for the engine harnesses: generated (uniform, reuse, Zipf) or read
from a trace file. Pure Python (no torch), so the format and the generators are tested
on a machine without a GPU (tests/integration/engine_harness.sh).

Trace file (the format `ftbench replay --trace` reads and writes):

    {"format": "ftbench-routing-trace", "version": 1,
     "layers": L, "experts": E, "top_k": K, "batch": B,
     "steps": [ [ [B*K ids of layer 0], [B*K ids of layer 1], ... ],   # step 0
                ... ]}

Every id is an integer in [0, E); a layer-step's B*K ids list token 0's K routes first.

Generators (deterministic for a given seed; per layer an independent stream):
- uniform: each token's K experts drawn uniformly without replacement.
- reuse:R: each of the K experts a token had at the step before is kept with
  probability R (independently), the other routes are drawn uniformly from the experts
  it did not have; step 0 is uniform. R is the mean step-to-step reuse of a layer's
  experts.
- zipf:S: per layer a fixed random ranking of the experts; each token draws K distinct
  experts with probability proportional to 1/rank^S (sequential draws without
  replacement).
"""

from __future__ import annotations

import json
import random

TRACE_FORMAT = "ftbench-routing-trace"
TRACE_VERSION = 1


class TraceError(ValueError):
    """A trace file or a workload name that cannot be used; the message says why."""


def parse_workload(spec: str) -> tuple[str, float]:
    """'uniform' | 'reuse:R' (0 <= R <= 1) | 'zipf:S' (S > 0) -> (kind, parameter)."""
    kind, _, arg = spec.partition(":")
    if kind == "uniform" and not arg:
        return "uniform", 0.0
    if kind in ("reuse", "zipf") and arg:
        try:
            x = float(arg)
        except ValueError:
            raise TraceError(f"workload {spec!r}: {arg!r} is not a number") from None
        if kind == "reuse" and not 0.0 <= x <= 1.0:
            raise TraceError(f"workload {spec!r}: reuse must be within 0..1")
        if kind == "zipf" and not x > 0.0:
            raise TraceError(f"workload {spec!r}: the Zipf exponent must be > 0")
        return kind, x
    raise TraceError(f"workload {spec!r}: expected uniform, reuse:R or zipf:S")


def _zipf_pick(rng: random.Random, order: list[int], weights: list[float], k: int) -> list[int]:
    pool = list(range(len(order)))
    w = list(weights)
    out = []
    for _ in range(k):
        r = rng.random() * sum(w)
        acc = 0.0
        j = len(pool) - 1
        for i, wi in enumerate(w):
            acc += wi
            if r < acc:
                j = i
                break
        out.append(order[pool[j]])
        del pool[j]
        del w[j]
    return out


def generate(spec: str, layers: int, experts: int, top_k: int, batch: int, steps: int,
             seed: int = 1) -> dict:
    """A trace document (the file format above) for a generated workload."""
    kind, x = parse_workload(spec)
    if not (layers > 0 and experts > 0 and 0 < top_k <= experts and batch > 0 and steps > 0):
        raise TraceError("layers, experts, top_k, batch and steps must be positive, top_k <= experts")
    rngs = [random.Random(seed * 1000003 + layer) for layer in range(layers)]
    ranks = []
    for layer in range(layers):
        order = list(range(experts))
        rngs[layer].shuffle(order)
        ranks.append(order)
    zw = [1.0 / (r + 1) ** x for r in range(experts)] if kind == "zipf" else []
    prev = [[None] * batch for _ in range(layers)]
    out_steps = []
    for _ in range(steps):
        step = []
        for layer in range(layers):
            rng = rngs[layer]
            ids = []
            for t in range(batch):
                if kind == "zipf":
                    cur = _zipf_pick(rng, ranks[layer], zw, top_k)
                elif kind == "reuse" and prev[layer][t] is not None:
                    before = prev[layer][t]
                    kept = [e for e in before if rng.random() < x]
                    had = set(before)
                    fresh = [e for e in range(experts) if e not in had]
                    cur = kept + rng.sample(fresh, top_k - len(kept))
                else:
                    cur = rng.sample(range(experts), top_k)
                prev[layer][t] = cur
                ids.extend(cur)
            step.append(ids)
        out_steps.append(step)
    return {"format": TRACE_FORMAT, "version": TRACE_VERSION, "layers": layers,
            "experts": experts, "top_k": top_k, "batch": batch, "workload": spec,
            "seed": seed, "steps": out_steps}


def validate(doc) -> dict:
    """Check a trace document; return it. Raises TraceError naming the first problem."""
    if not isinstance(doc, dict):
        raise TraceError("trace: not a JSON object")
    if doc.get("format") != TRACE_FORMAT:
        raise TraceError(f"trace: format is {doc.get('format')!r}, expected {TRACE_FORMAT!r}")
    if doc.get("version") != TRACE_VERSION:
        raise TraceError(f"trace: version {doc.get('version')!r} is not {TRACE_VERSION}")
    for key in ("layers", "experts", "top_k", "batch"):
        v = doc.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise TraceError(f"trace: {key!r} must be a positive integer")
    L, E, K, B = doc["layers"], doc["experts"], doc["top_k"], doc["batch"]
    if K > E:
        raise TraceError("trace: top_k exceeds experts")
    steps = doc.get("steps")
    if not isinstance(steps, list) or not steps:
        raise TraceError("trace: 'steps' must be a non-empty list")
    for s, step in enumerate(steps):
        if not isinstance(step, list) or len(step) != L:
            raise TraceError(f"trace: step {s} must list {L} layers")
        for layer, ids in enumerate(step):
            if not isinstance(ids, list) or len(ids) != B * K:
                raise TraceError(f"trace: step {s} layer {layer} must hold {B * K} ids")
            for e in ids:
                if not isinstance(e, int) or isinstance(e, bool) or not 0 <= e < E:
                    raise TraceError(f"trace: step {s} layer {layer}: id {e!r} is not in [0, {E})")
    return doc


def load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise TraceError(f"trace {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise TraceError(f"trace {path}: not JSON ({e.msg} at line {e.lineno})") from None
    return validate(doc)


def reuse_of(doc: dict) -> float:
    """Measured step-to-step reuse: the mean share of a token's experts at step s that it
    also had at step s-1 (over all layers, tokens and steps after the first)."""
    K, B = doc["top_k"], doc["batch"]
    kept = total = 0
    steps = doc["steps"]
    for s in range(1, len(steps)):
        for layer, ids in enumerate(steps[s]):
            before = steps[s - 1][layer]
            for t in range(B):
                a = set(ids[t * K:(t + 1) * K])
                b = set(before[t * K:(t + 1) * K])
                kept += len(a & b)
                total += K
    return kept / total if total else 0.0


def main(argv=None) -> int:
    import argparse
    import sys

    p = argparse.ArgumentParser(description="write or check a routing trace file")
    p.add_argument("--workload", help="uniform | reuse:R | zipf:S (generate)")
    p.add_argument("--check", metavar="FILE", help="validate FILE and print its shape")
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--experts", type=int, default=128)
    p.add_argument("--top-k", type=int, default=8)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--steps", type=int, default=96)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    try:
        if a.check:
            doc = load(a.check)
            print(json.dumps({"layers": doc["layers"], "experts": doc["experts"],
                              "top_k": doc["top_k"], "batch": doc["batch"],
                              "steps": len(doc["steps"]), "reuse": round(reuse_of(doc), 4)}))
            return 0
        if not a.workload:
            p.error("--workload or --check is required")
        doc = generate(a.workload, a.layers, a.experts, a.top_k, a.batch, a.steps, a.seed)
    except TraceError as e:
        print(f"routing: {e}", file=sys.stderr)
        return 2
    json.dump(doc, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
