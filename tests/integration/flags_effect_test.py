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


FTH = os.path.join(BUILD, "tests", "integration", "ftbench_hooks")  # the fakes (test build only)
SSE = os.path.join(BUILD, "tests", "fixtures", "sse_server")


def fth(*args):
    env = dict(ENV, FTBENCH_TEST_FAKE_GPUS="1")
    r = subprocess.run([FTH, *args], env=env, capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def replay_format(spelling):
    """replay NAME nvfp4: the one format replayed (the fake GPU's cost model), not the default two."""
    rc, o, e = fth("replay", "--size", "short", "--no-store", "--json", spelling, "nvfp4")
    try:
        return rc == 0 and list(json.loads(o)["replay"]) == ["nvfp4"], f"{rc} {e[-300:]}"
    except (ValueError, KeyError):
        return False, f"{rc} {e[-300:]}\n{o[:300]}"


def decode_rows(*args):
    tmpl = f"{SSE} --port {{port}} --model {{model}} --lifetime 60 --rate 2000 {{flags}}"
    rc, o, e = ft("decode", "--model", T, "--server-cmd", tmpl, "--output-format", "json", *args)
    try:
        return rc, json.loads(o)["rows"], e
    except (ValueError, KeyError):
        return rc, [], e


def decode_backend(spelling):
    """decode NAME cpu: the row is the cpu backend's (the server got --moe-backend cpu), not offload."""
    rc, rows, e = decode_rows("--decode", "8", spelling, "cpu")
    return rc == 0 and [r["backend"] for r in rows] == ["cpu"], f"{rc} {e[-300:]}"


def decode_tokens(spelling):
    """decode NAME 9: 9 tokens asked and counted (the default is 256)."""
    rc, rows, e = decode_rows(spelling, "9")
    return rc == 0 and [r["completion_tokens"] for r in rows] == [9], f"{rc} {rows} {e[-300:]}"


def decode_server_timeout(spelling):
    """decode NAME 1 with a server that never listens: given up after about 1 s (the default: 1800)."""
    import time
    t = time.monotonic()
    rc, o, e = ft("decode", "--model", T, "--server-cmd", "sleep 60 {port}", "--term-grace", "1", "--kill-grace", "1",
                  "--output-format", "json", spelling, "1")
    took = time.monotonic() - t
    return rc == 1 and took < 30, f"{rc} {took:.1f} s {e[-300:]}"


def profile_gpu(spelling):
    """profile path NAME UUID: that GPU's file in the store (exit 1: it is not there yet)."""
    u = "GPU-11111111-aaaa-bbbb-cccc-000000000000"
    rc, o, e = ft("profile", "path", spelling, u)
    return rc in (0, 1) and o.strip().endswith(f"/benchbw/{u}.json"), f"{rc} {o} {e[-300:]}"


def profile_json(spelling):
    """profile path NAME: the answer as JSON (the default is the bare path)."""
    rc, o, e = ft("profile", "path", "--gpu", "GPU-11111111-aaaa-bbbb-cccc-000000000000", spelling)
    try:
        return rc in (0, 1) and json.loads(o)["gpu_uuid"] == "GPU-11111111-aaaa-bbbb-cccc-000000000000", o[:200]
    except (ValueError, KeyError, TypeError):
        return False, f"{rc} {o[:200]} {e[-200:]}"


PROF = os.path.join(T, "prof.json")


def profile_format(spelling):
    """profile show NAME csv: the profile's formats as CSV rows (one per format)."""
    if not os.path.exists(PROF):
        fth("bw", "--dtype", "bf16,nvfp4", "--repeat", "1", "--no-legacy-copy", "--no-checks", "-o", PROF)
    rc, o, e = ft("profile", "show", spelling, "csv", env={"FREETOKEN_BENCHBW_PATH": PROF})
    rows = list(csv.reader(io.StringIO(o))) if rc == 0 else []
    return rc == 0 and len(rows) >= 3 and all(len(r) == len(rows[0]) for r in rows), f"{rc} {e[-300:]}\n{o[:300]}"


DAEMON = {}


def jobs_format(spelling):
    """jobs NAME csv against a live ftbenchd: a CSV header row (the default is the table)."""
    import socket
    import time
    if "url" not in DAEMON:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        DAEMON["proc"] = subprocess.Popen(
            [os.path.join(BUILD, "bin", "ftbenchd"), "--listen", f"127.0.0.1:{port}", "--state-dir",
             os.path.join(T, "state"), "--profile-dir", os.path.join(T, "dprof"), "--worker",
             os.path.join(BUILD, "tests", "fixtures", "fakeworker"), "--rebench", "never"],
            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        DAEMON["url"] = f"http://127.0.0.1:{port}"
        for _ in range(100):
            if ft("jobs", "--daemon", DAEMON["url"])[0] == 0:
                break
            time.sleep(0.1)
    rc, o, e = ft("jobs", "--daemon", DAEMON["url"], spelling, "csv")
    rows = list(csv.reader(io.StringIO(o))) if rc == 0 else []
    return rc == 0 and len(rows) >= 1 and "id" in rows[0] and "state" in rows[0], f"{rc} {e[-300:]}\n{o[:300]}"


# (command, flag name) -> the check of one spelling
EFFECTS = {("bw", "output"): bw_output, ("cpu-moe", "repeat"): cpu_moe_repeat,
           ("load-weights", "output-format"): load_weights_format, ("replay", "format"): replay_format,
           ("decode", "backend"): decode_backend, ("decode", "decode"): decode_tokens,
           ("decode", "server-timeout"): decode_server_timeout, ("profile", "gpu"): profile_gpu,
           ("profile", "json"): profile_json, ("profile", "output-format"): profile_format,
           ("jobs", "output-format"): jobs_format}

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
    if "proc" in DAEMON:
        DAEMON["proc"].terminate()
        DAEMON["proc"].wait(timeout=30)
    shutil.rmtree(T, ignore_errors=True)
print(f"1..{n}")
sys.exit(1 if bad else 0)
