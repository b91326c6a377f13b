#!/usr/bin/env python3
"""bench/ab.py: the one A/B driver. Builds x suite cases x --tune settings, in interleaved rounds.

Every run is one `ftbench SUITE ... --json` invocation. In each round every case of every suite
runs once per variant (a build with a --tune setting); a case's variants run back to back, and
their order rotates by one every round (AB, BA, AB, ... for two), as does the order of the cases,
so slow drift of the host lands on every variant alike. Per cell (suite, case, figure, variant):
the median, min and max over the rounds, and against the first variant (the baseline) the
median of the per-round ratios (paired in the same round).

usage: bench/ab.py [--build LABEL=DIR]... [--suite NAME[:CASES]]... [--tune LABEL=[K=V[,K=V]]]...
                   [--args NAME=ARGS]... [--rounds N] [--deadline S] [--timeout S] [--out DIR]
  --build LABEL=DIR  a build folder (DIR/bin/ftbench) or an ftbench binary; repeat for each build,
                     the first is the baseline (default: new=$BUILD or build)
  --suite NAME[:CASES]  cpu-moe (cases: formats), cache-copy (cases: models), bw (case: default);
                     CASES a comma list overriding the suite's default cases (default: cpu-moe)
  --tune LABEL=K=V,..  a setting: `--tune K=V` per pair on every invocation of its variants
                     (the CLI's hidden tuning flag, `ftbench cpu-moe --tune help`); LABEL= alone
                     is the defaults. Several: every build runs every setting (default: one, the
                     defaults)
  --args NAME=ARGS   extra arguments of suite NAME's invocations (shell words), e.g.
                     --args 'cpu-moe=--repeat 16 --read-passes 4'
  --rounds N         rounds (default 5); --deadline S: start no run after S seconds (the first
                     always runs; default none)
  --timeout S        one invocation's limit (default 300)
  --out DIR          runs.jsonl (every run), results.json (the cells), table.md (default: a new
                     folder under /tmp); the table is printed too
Exit status: 0 when every run gave figures, 1 when any failed (the table says which), 2 usage.
bench/README.md has the recipes (this host, the GPU machine, two builds)."""
import argparse
import json
import os
import shlex
import statistics as st
import subprocess
import sys
import tempfile
import time


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def put(fig, key, v):
    v = num(v)
    if v is not None:
        fig[key] = float(v)


def parse_cpu_moe(doc):
    """{"results": [per ISA tier]} for one batch, {"batches": [{"batch", "results"}]} for a list."""
    fig = {}
    batches = doc.get("batches") if isinstance(doc.get("batches"), list) else [doc]
    for b in batches:
        bs = b.get("batch", doc.get("batch", 1))
        for r in b.get("results") or []:
            k = "%s b%s" % (r.get("isa", "?"), bs)
            put(fig, k + " GB/s", r.get("gbs"))
            put(fig, k + " read GB/s", r.get("read_ceiling_gbs"))
            f = num(r.get("fraction_of_read_ceiling"))
            if f is not None:
                fig[k + " % of read"] = 100.0 * f
    return fig


def parse_cache_copy(doc):
    """Per row; a row whose slots did not hold the right bytes afterwards fails the run."""
    fig = {}
    for res in doc.get("results") or []:
        for row in res.get("rows") or []:
            if row.get("error"):
                continue
            k = "C%s bs%s miss %s" % (res.get("cache_slots"), row.get("bs"), row.get("miss_rate"))
            if row.get("verified") is False:
                fig[ERROR] = "%s %s: the copy was not verified (wrong bytes)" % (res.get("model"), k)
            for m in ("time_ms", "ensure_us", "bw_GBps", "pct_of_linear", "linear_GBps"):
                put(fig, "%s %s" % (k, m), row.get(m))
    return fig


def parse_bw(doc):
    fig = {}
    c = doc.get("ceilings") or {}
    for m in ("cpu_stream_read_gbs", "pcie_linear_h2d_gbs"):
        put(fig, m, c.get(m))
    for f, e in (doc.get("dtype_kernels") or {}).items():
        for m in ("cpu_moe_gbs", "pcie_gather_gbs", "ratio"):
            put(fig, "%s %s" % (f, m), e.get(m))
    return fig


ERROR = "__error__"  # a parser's figure key that fails the run with its message

# name: (default cases, argv of one case, parser, figures shown in the table (substrings))
SUITES = {
    "cpu-moe": (["bf16", "nvfp4", "mxfp4", "q4_0", "ds_fp4"],
                lambda c: ["cpu-moe", "--format", c, "--json"], parse_cpu_moe,
                ("GB/s", "% of read")),
    "cache-copy": (["qwen3-30B", "gpt-oss-120b", "minimax-m2.5-triton", "glm4.7-nvfp4", "qwen3.5-35B"],
                   lambda c: ["cache-copy", "--models", c, "--json"], parse_cache_copy,
                   ("time_ms", "ensure_us", "pct_of_linear")),
    "bw": (["default"], lambda c: ["bw", "--json"], parse_bw, ("gbs", "ratio")),
}
# what a suite runs with unless --args says otherwise: cache-copy's rows of the issue-23 table
DEFAULT_ARGS = {"cache-copy": ["--batch-sizes", "1,4,32", "--miss-rates", "1", "--repeat", "7"]}


def die(msg):
    print("ab.py: " + msg, file=sys.stderr)
    sys.exit(2)


def labelled(s, what):
    if "=" not in s:
        die("%s '%s' is not LABEL=VALUE" % (what, s))
    k, v = s.split("=", 1)
    if not k:
        die("%s '%s' has no label" % (what, s))
    return k, v


def ftbench_of(path):
    p = os.path.join(path, "bin", "ftbench") if os.path.isdir(path) else path
    if not (os.path.isfile(p) and os.access(p, os.X_OK)):
        die("build '%s': no executable %s" % (path, p))
    return os.path.abspath(p)


def parse_args(argv):
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--build", action="append", default=[])
    ap.add_argument("--suite", action="append", default=[])
    ap.add_argument("--tune", action="append", default=[])
    ap.add_argument("--args", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--deadline", type=float, default=0)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out")
    ap.add_argument("-h", "--help", action="store_true")
    a, rest = ap.parse_known_args(argv)
    if a.help:
        print(__doc__)
        sys.exit(0)
    if rest:
        die("unexpected argument '%s' (--help)" % rest[0])
    if a.rounds < 1 or a.rounds > 1000:
        die("--rounds %d is not in 1..1000" % a.rounds)
    builds = [labelled(b, "--build") for b in a.build] or [("new", os.environ.get("BUILD", "build"))]
    builds = [(k, ftbench_of(v)) for k, v in builds]
    suites = []
    for s in a.suite or ["cpu-moe"]:
        name, _, cases = s.partition(":")
        if name not in SUITES:
            die("unknown suite '%s' (%s)" % (name, ", ".join(SUITES)))
        suites.append((name, [c for c in cases.split(",") if c] or SUITES[name][0]))
    tunes = []
    for t in a.tune or ["default="]:
        k, v = labelled(t, "--tune")
        pairs = [p for p in v.split(",") if p]
        for p in pairs:
            if "=" not in p or p.startswith("="):
                die("--tune %s: '%s' is not KEY=VALUE" % (k, p))
        tunes.append((k, pairs))
    extra = {}
    for x in a.args:
        k, v = labelled(x, "--args")
        if k not in SUITES:
            die("--args: unknown suite '%s'" % k)
        extra[k] = shlex.split(v)
    variants = [("%s/%s" % (b, t) if len(tunes) > 1 else b, ftb, pairs)
                for b, ftb in builds for t, pairs in tunes]
    if len(builds) == 1 and len(tunes) > 1:
        variants = [(t, ftb, pairs) for (_, ftb, pairs), (t, _) in zip(variants, tunes)]
    if len({v[0] for v in variants}) != len(variants):
        die("two variants share a label")
    return a, variants, suites, extra


def run_one(ftbench, suite, case, pairs, extra, timeout, env):
    argv = [ftbench] + SUITES[suite][1](case) + extra.get(suite, DEFAULT_ARGS.get(suite, []))
    for p in pairs:
        argv += ["--tune", p]
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, env=env)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = 124, b"", b"timed out after %g s" % timeout
    rec = {"argv": argv[1:], "rc": rc, "wall_s": round(time.monotonic() - t0, 3), "figures": {}}
    if rc == 0:
        try:
            rec["figures"] = SUITES[suite][2](json.loads(out))
        except (ValueError, AttributeError, TypeError) as e:
            rec["error"] = "output is not the suite's JSON: %s" % e
        else:
            why = rec["figures"].pop(ERROR, None)
            if why:
                rec["error"] = why
            elif not rec["figures"]:
                rec["error"] = "no figures in the output"
    else:
        lines = err.decode(errors="replace").strip().splitlines()
        rec["error"] = "exit %d: %s" % (rc, lines[-1] if lines else "(no message)")
    return rec


def schedule(suites, variants, rounds):
    """(round, suite, case, variant index) in run order: per round the cases rotate by one and
    each case's variants run back to back, their order rotated by one per round."""
    cases = [(s, c) for s, cs in suites for c in cs]
    nv = len(variants)
    for r in range(rounds):
        for i in range(len(cases)):
            s, c = cases[(i + r) % len(cases)]
            for j in range(nv):
                yield r + 1, s, c, (j + r) % nv


def cells(runs, variants):
    """{(suite, case, figure): {variant: {"values": [(round, v)], ...}}} with medians, ranges,
    and the paired ratio against the first variant."""
    out = {}
    for x in runs:
        for k, v in x["figures"].items():
            out.setdefault((x["suite"], x["case"], k), {}).setdefault(x["variant"], []).append((x["round"], v))
    res = {}
    base = variants[0][0]
    for key, per in out.items():
        row = {}
        b = dict(per.get(base, []))
        for lab, vals in per.items():
            xs = [v for _, v in vals]
            c = {"n": len(xs), "median": st.median(xs), "min": min(xs), "max": max(xs), "values": xs}
            if lab != base:
                rat = [v / b[r] for r, v in vals if r in b and b[r]]
                if rat:
                    c["ratio_vs_base"] = st.median(rat)
                    c["ratio_vs_base_range"] = [min(rat), max(rat)]
            row[lab] = c
        res[key] = row
    return res


def fmt(v):
    a = abs(v)
    return "%.0f" % v if a >= 1000 else "%.1f" % v if a >= 10 else "%.2f" % v if a >= 1 else "%.3f" % v


def table(res, variants, suites, failed):
    labs = [v[0] for v in variants]
    base = labs[0]
    hdr = ["suite", "case", "figure"] + ["%s median [min, max]" % l for l in labs] + \
          ["%s/%s" % (l, base) for l in labs[1:]]
    lines = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    order = {(s, c): i for i, (s, c) in enumerate((s, c) for s, cs in suites for c in cs)}
    for (s, c, k) in sorted(res, key=lambda x: (order.get(x[:2], 0), x[2])):
        if not any(w in k for w in SUITES[s][3]):
            continue
        row = res[(s, c, k)]
        cols = [s, c, k]
        for l in labs:
            x = row.get(l)
            cols.append("%s [%s, %s] (%d)" % (fmt(x["median"]), fmt(x["min"]), fmt(x["max"]), x["n"]) if x else "-")
        for l in labs[1:]:
            x = row.get(l) or {}
            r = x.get("ratio_vs_base")
            cols.append("%.3f [%.3f, %.3f]" % (r, *x["ratio_vs_base_range"]) if r is not None else "-")
        lines.append("| " + " | ".join(cols) + " |")
    if failed:
        lines.append("")
        lines.append("Failed runs (no figures):")
        for x in failed:
            lines.append("- round %d %s %s %s: %s" % (x["round"], x["suite"], x["case"], x["variant"], x["error"]))
    return "\n".join(lines) + "\n"


def main(argv):
    a, variants, suites, extra = parse_args(argv)
    out = a.out or tempfile.mkdtemp(prefix="ftbench-ab-")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = os.path.join(out, "cache")  # bw's profiles never reach the real store
    env.pop("FREETOKEN_BENCHBW_PATH", None)
    env.pop("FREETOKEN_BENCH_PROGRESS", None)
    t0 = time.monotonic()
    runs, skipped = [], 0
    with open(os.path.join(out, "runs.jsonl"), "w") as log:
        for rnd, s, c, vi in schedule(suites, variants, a.rounds):
            if a.deadline and runs and time.monotonic() - t0 >= a.deadline:
                skipped += 1
                continue
            lab, ftb, pairs = variants[vi]
            rec = {"round": rnd, "suite": s, "case": c, "variant": lab}
            rec.update(run_one(ftb, s, c, pairs, extra, a.timeout, env))
            runs.append(rec)
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print("ab: round %d %s %s %s: %s (%.1f s)" % (rnd, s, c, lab, rec.get("error", "ok"), rec["wall_s"]),
                  file=sys.stderr)
    res = cells(runs, variants)
    failed = [x for x in runs if "error" in x]
    doc = {"variants": [{"label": l, "ftbench": f, "tune": p} for l, f, p in variants],
           "suites": [{"name": s, "cases": c, "args": extra.get(s, DEFAULT_ARGS.get(s, []))} for s, c in suites],
           "rounds": a.rounds, "runs": len(runs), "failed": len(failed), "skipped_by_deadline": skipped,
           "wall_s": round(time.monotonic() - t0, 1),
           "cells": [{"suite": s, "case": c, "figure": k, "by_variant": v} for (s, c, k), v in sorted(res.items())]}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
    t = table(res, variants, suites, failed)
    if skipped:
        t += "\n%d runs not started (--deadline %g s)\n" % (skipped, a.deadline)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(t)
    sys.stdout.write(t)
    print("ab: %d runs, %d failed, %.0f s; %s/{table.md,results.json,runs.jsonl}" % (
        len(runs), len(failed), time.monotonic() - t0, out), file=sys.stderr)
    return 1 if failed or not runs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
