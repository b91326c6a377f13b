#!/usr/bin/env python3
"""The daemon's layers (docs/ARCHITECTURE.md): every file of daemon/ belongs to one module (its
name without .c/.h) and every module to one layer; a file may include (and so call) only modules
of lower layers or its own. Derives the #include graph of a daemon directory and prints one
problem a line: a module without a layer, an include against the order, a cycle.

  layers.py DIR        exit 1 when DIR has a problem
"""
import os
import re
import sys

# Bottom first. http -> api -> job <- journal; kinds -> kindarg -> config; main -> runner -> sched, worker (-> util/proc).
LAYERS = [
    ["log", "mbuf"],
    ["config", "jobflags"],
    ["kindarg"],
    ["kinds"],
    ["request"],
    ["job"],
    ["journal"],
    ["worker"],
    ["sched"],
    ["daemon"],
    ["profiles"],
    ["procs"],
    ["metrics"],
    ["runner"],
    ["page_profile"],
    ["api", "page"],
    ["seed", "rebench"],
    ["front"],
    ["http"],
    ["main"],
]
RANK = {m: i for i, layer in enumerate(LAYERS) for m in layer}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def graph(d):
    """{module: {included module: first file that includes it}} over the daemon's own headers."""
    files = sorted(f for f in os.listdir(d) if f.endswith((".c", ".h")))
    mods = {os.path.splitext(f)[0] for f in files}
    g = {m: {} for m in mods}
    for f in files:
        m = os.path.splitext(f)[0]
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            for inc in INCLUDE.findall(fh.read()):
                t = os.path.splitext(os.path.basename(inc))[0]
                if inc.endswith(".h") and "/" not in inc and t in mods and t != m:
                    g[m].setdefault(t, f)
    return g


def cycles(g):
    """One cycle per strongly connected component of more than one module."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def problems(d):
    g = graph(d)
    out = []
    for m in sorted(g):
        if m not in RANK:
            out.append(f"module {m} has no layer (add it to LAYERS in tests/integration/layers.py)")
    for m in sorted(g):
        for t, f in sorted(g[m].items()):
            if m in RANK and t in RANK and RANK[t] >= RANK[m]:
                out.append(f"{f} includes {t}.h: {t} is not below {m}")
    for c in cycles(g):
        out.append("include cycle: " + " <-> ".join(c))
    return out


if __name__ == "__main__":
    p = problems(sys.argv[1])
    for line in p:
        print(line)
    sys.exit(1 if p else 0)
