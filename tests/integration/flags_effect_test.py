"""Every alias and short name of a flag (`ftbench flags --json` lists them) checked by its effect,
not by being accepted: each spelling, given a value the default is not, must change what the run
does the way the flag's own name does (the file bw writes its profile to, the passes cpu-moe
times, the format load-weights prints). An alias that has no effect check here is a failure:
whoever adds one adds its check."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.getcwd()
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
FT = os.path.join(BUILD, "bin", "ftbench")
n = bad = 0


def check(desc, ok, detail=""):
    global n, bad
    n += 1
    print(("ok" if ok else "not ok") + f" {n} - {desc}")
    if not ok:
        for line in str(detail).splitlines()[:20]:
            print(f"#   {line}")
        bad += 1


T = tempfile.mkdtemp(prefix="ft-flags-effect-")
ENV = {k: v for k, v in os.environ.items() if k not in ("FREETOKEN_BENCHBW_PATH", "FREETOKEN_BENCH_PROGRESS")}
ENV.update(XDG_CACHE_HOME=os.path.join(T, "cache"), FREETOKEN_BENCHBW_SYSDIR=os.path.join(T, "sys"),
           CUDA_VISIBLE_DEVICES="", TMPDIR=T)


def ft(*args, env=None):
    r = subprocess.run([FT, *args], env=dict(ENV, **(env or {})), capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def bw_output(spelling):
    """bw NAME P: the profile lands in P (one fake GPU), nowhere else."""
    p = os.path.join(T, f"bw{spelling.replace('-', '_')}.json")
    rc, o, e = ft("bw", "--dtype", "bf16", "--repeat", "1", "--no-legacy-copy", "--no-checks", spelling, p,
                  env={"FTBENCH_TEST_FAKE_GPUS": "1"})
    doc = json.load(open(p)) if os.path.exists(p) else None
    return rc == 0 and doc is not None and "bf16" in doc.get("dtypes", {}), f"{rc} {e[-400:]}"


def cpu_moe_repeat(spelling):
    """cpu-moe NAME 3 and NAME 4: 3 and 4 timed passes (samples of the figure, "iters")."""
    got = []
    for v in ("3", "4"):
        rc, o, e = ft("cpu-moe", "--format", "q4_0", "--warmup", "0", "--isa", "auto", "--working-set-mib", "8",
                      "--read-passes", "1", "--batch", "1", spelling, v, "--json")
        try:
            d = json.loads(o)
            got.append((d["iters"], d["results"][0]["gbs_spread"]["samples"]))
        except (ValueError, KeyError, IndexError):
            got.append((rc, e[-300:]))
    return got == [(3, 3), (4, 4)], got


CKPT = os.path.join(T, "ckpt")


def load_weights_format(spelling):
    """load-weights NAME csv: the rows as CSV (the serial baseline, then the mode; the csv module reads them)."""
    rc, o, e = ft("load-weights", "--model", CKPT, "--modes", "parallel", "--repeat", "1", "--workers", "2",
                  "--chunk-mib", "1", spelling, "csv")
    rows = list(csv.reader(io.StringIO(o))) if rc == 0 else []
    modes = [r[rows[0].index("mode")] for r in rows[1:]] if rows and "mode" in rows[0] else []
    return rc == 0 and modes == ["baseline", "parallel"] and all(len(r) == len(rows[0]) for r in rows), \
        f"{rc} {e[-300:]}\n{o[:300]}"


# (command, flag name) -> the check of one spelling
EFFECTS = {("bw", "output"): bw_output, ("cpu-moe", "repeat"): cpu_moe_repeat,
           ("load-weights", "output-format"): load_weights_format}

try:
    rc, o, e = ft("flags", "--json")
    check("ftbench flags --json: exit 0, one document", rc == 0, e)
    cmds = json.loads(o)["commands"] if rc == 0 else []
    rc, o, e = ft("make-checkpoint", "--arch", "qwen3-moe", "--out", CKPT, "--layers", "2", "--experts", "4",
                  "--hidden", "256", "--inter", "128", "--shard-mib", "1")
    check("make-checkpoint: a small checkpoint for load-weights", rc == 0, e)
    walked = 0
    for c in cmds:
        for f in c["flags"]:
            names = [f"--{a}" for a in f["aliases"]] + ([f["short"]] if f["short"] else [])
            if not names:
                continue
            fn = EFFECTS.get((c["command"], f["name"]))
            check(f"{c['command']} --{f['name']}: its aliases {names} have an effect check", fn is not None,
                  "add one to EFFECTS in tests/integration/flags_effect_test.py")
            if not fn:
                continue
            for sp in [f"--{f['name']}"] + names:
                ok, detail = fn(sp)
                check(f"{c['command']} {sp}: does what --{f['name']} does", ok, detail)
                walked += 1
    check("every command's aliases walked (at least the three of bw, cpu-moe, load-weights)", walked >= 7, walked)
finally:
    shutil.rmtree(T, ignore_errors=True)
print(f"1..{n}")
sys.exit(1 if bad else 0)
