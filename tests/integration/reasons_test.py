#!/usr/bin/python3
"""A failure's reasons on every surface, and what the daemon refuses at submission: the job's
error (one line) and error_detail (every reason), the one error event of its stream, `ftbench
submit --wait`, the status page and `make run`; a worker that dies of a usage error before its
result fd is open (its output's last line is the reason); bad format and model names, a GPU kind
on a GPU-less host; a corrupt or unmeasured profile in GET /profiles; the legacy single file a
daemon bw job writes on a one-GPU host and not on a two-GPU one. The fake worker
(tests/fixtures/fakeworker.c) and the test build ftbench_hooks with FTBENCH_TEST_FAKE_GPUS (fixed
figures, no CUDA). Every response is checked against the OpenAPI document the daemon serves. TAP."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # ftd_harness
from ftd_harness import (FTBENCH, FTBENCH_HOOKS, GPU0, ROOT, SLOW, Daemon, Scratch, ensure,  # noqa: E402
                         expect_error, finish, on_signals, plan, run_tests)

results = []


def test(fn):
    results.append(fn)
    return fn


def events(d, jid):
    """The whole event stream of a finished job: [(event, data)]."""
    st, _, raw = d.req("GET", f"/benchmark/jobs/{jid}/events")
    ensure(st == 200, f"events: {st}")
    out = []
    for block in raw.decode().split("\n\n"):
        ev = data = None
        for line in block.split("\n"):
            if line.startswith("event: "):
                ev = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        if ev:
            out.append((ev, data))
    return out


def real_daemon(t, name, gpus, *extra):
    """ftbenchd with the real ftbench as its worker on gpus fake GPUs, its own XDG cache."""
    cache = os.path.join(t.tmp, name, "cache")
    os.makedirs(cache, exist_ok=True)
    env = {"FTBENCH_TEST_FAKE_GPUS": str(gpus), "XDG_CACHE_HOME": cache}
    env.pop("FREETOKEN_BENCHBW_PATH", None)
    d = Daemon(t.tmp, name, *extra, env=env, worker=FTBENCH_HOOKS, wait_s=60)
    d.env.pop("FREETOKEN_BENCHBW_PATH", None)
    d.cache = cache
    return d.start()


SMALL = {"dtype": ["bf16", "nvfp4"], "cpu_iters": 2, "kernel_cpu_iters": 4, "kernel_pcie_iters": 2,
         "pcie_iters": 2}


@test
def invalid_bw_reasons_everywhere(t):
    """The real worker's profile fails its own checks (a spread limit no figure meets): every
    reason reaches the job, its one error event, `submit --wait` and the page."""
    d = real_daemon(t, "invalid", 1)
    t.real1 = d
    j = d.wait(d.submit("bw", dict(SMALL, max_spread=0.001))["id"])
    ensure(j["state"] == "failed" and j["exit_status"] == 3, lambda: j)
    detail = (j["error_detail"] or "").splitlines()
    ensure("\n" not in j["error"] and j["error"].startswith("the profile is not valid"), lambda: j["error"])
    ensure(detail and detail[0] in j["error"], lambda: f"first reason not in the error: {j}")
    ensure(len(detail) >= 3 and any("bf16 CPU MoE" in x for x in detail) and any("nvfp4" in x for x in detail),
           lambda: f"every reason: {detail}")
    errs = [data for ev, data in events(d, j["id"]) if ev == "error"]
    ensure(len(errs) == 1, lambda: f"one error event, got {errs}")
    ensure(errs[0]["message"] == j["error"] and errs[0]["detail"] == j["error_detail"], lambda: errs)
    r = subprocess.run([FTBENCH, "wait", j["id"], "--daemon", f"http://127.0.0.1:{d.port}"], capture_output=True,
                       text=True, timeout=60 * SLOW)
    ensure(r.returncode == 1, lambda: f"wait: {r.returncode} {r.stderr}")
    for reason in detail:
        ensure(reason in r.stdout, lambda: f"`ftbench wait` lacks {reason!r}: {r.stdout}")
    st, _, page = d.req("GET", "/")
    ensure(st == 200 and detail[-1].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
           in page.decode(), "the page lacks the last reason")
    # submit --wait: the same reasons, its exit status 1
    r = subprocess.run([FTBENCH, "submit", "bw", "--dtype", "bf16", "--cpu-iters", "2", "--kernel-cpu-iters", "4",
                        "--max-spread", "0.001", "--wait", "--daemon", f"http://127.0.0.1:{d.port}"],
                       capture_output=True, text=True, timeout=120 * SLOW)
    ensure(r.returncode == 1 and "reasons:" in r.stdout and "bf16 CPU MoE" in r.stdout, lambda: r.stdout + r.stderr)


@test
def legacy_copy_one_gpu_not_two(t):
    """A daemon bw job writes the seed's single file on a one-GPU host (the store's rule), the
    same bytes as the stored profile; on a two-GPU host it does not."""
    d = t.real1
    j = d.wait(d.submit("bw", SMALL)["id"])
    ensure(j["state"] == "succeeded" and j["profile_path"], lambda: j)
    legacy = os.path.join(d.cache, "freetoken", "benchbw.json")
    ensure(os.path.exists(legacy), f"no legacy file {legacy}")
    ensure(open(legacy, "rb").read() == open(j["profile_path"], "rb").read(), "the legacy copy differs")
    two = real_daemon(t, "two", 2)
    j = two.wait(two.submit("bw", SMALL)["id"])
    ensure(j["state"] == "succeeded", lambda: j)
    ensure(not os.path.exists(os.path.join(two.cache, "freetoken", "benchbw.json")), "a legacy file on 2 GPUs")
    two.stop()
    off = real_daemon(t, "off", 1, "--bw-legacy-copy", "0")
    j = off.wait(off.submit("bw", SMALL)["id"])
    ensure(j["state"] == "succeeded", lambda: j)
    ensure(not os.path.exists(os.path.join(off.cache, "freetoken", "benchbw.json")), "bw-legacy-copy 0 wrote it")
    off.stop()


@test
def names_refused_at_submit(t):
    d = t.real1
    P = "/benchmark/start"
    _, doc = expect_error(d, "POST", P, 400, "invalid_argument", "args.dtype",
                             body={"kind": "bw", "args": {"dtype": ["fp16"]}})
    ensure("'fp16'" in doc["error"]["message"] and "nvfp4" in doc["error"]["message"], lambda: doc)
    expect_error(d, "POST", P, 400, "invalid_argument", "args.dtype", body={"kind": "bw", "args": {"dtype": "bf16,x"}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.formats",
                 body={"kind": "bw", "args": {"model": "all", "formats": "int3"}})
    _, doc = expect_error(d, "POST", P, 400, "invalid_argument", "args.model",
                             body={"kind": "bw", "args": {"model": ["qwen3-30b", "gpt-5"]}})
    ensure("'gpt-5'" in doc["error"]["message"] and "qwen3-30b" in doc["error"]["message"], lambda: doc)
    for ok in ({"dtype": "all"}, {"dtype": ["mxfp4", "fp8"]}, {"model": "qwen3-30b", "formats": "bf16"},
               {"model": "all"}, {"model": ["qwen3-30b", "all"]}):
        jid = d.submit("bw", dict(ok, cpu_iters=1, kernel_cpu_iters=2))["id"]
        ensure(d.wait(jid)["state"] == "succeeded", f"{ok} refused")


@test
def gpu_kind_on_gpuless_host(t):
    d = Daemon(t.tmp, "nogpu", env={"FAKE_GPUS": "0"}).start()
    _, doc = expect_error(d, "POST", "/benchmark/start", 409, "no_gpu", None, body={"kind": "cache-copy"})
    ensure("needs a GPU" in doc["error"]["message"] and "no CUDA device (fake)" in doc["error"]["message"], lambda: doc)
    ensure(d.wait(d.submit("bw", {"cpu_iters": 1})["id"])["state"] == "succeeded", "bw runs without a GPU")
    d.stop()


@test
def usage_error_last_line(t):
    """A worker that refuses its arguments before its result fd is open: its output's last line."""
    d = Daemon(t.tmp, "fake").start()
    t.fake = d
    j = d.wait(d.submit("cache-copy", {"models": "fake-usage"})["id"])
    ensure(j["state"] == "failed" and j["exit_status"] == 2, lambda: j)
    ensure(j["error"] == "the worker exited with status 2: ftbench cache-copy: --fake: a usage error", lambda: j)
    ensure("usage: ftbench cache-copy" in j["error_detail"], lambda: j)
    ensure([ev for ev, _ in events(d, j["id"])].count("error") == 1, "one error event")
    # a worker's own error message: once in the stream, kept as the error
    j = d.wait(d.submit("cache-copy", {"models": "fake-fail"})["id"])
    errs = [data for ev, data in events(d, j["id"]) if ev == "error"]
    ensure(len(errs) == 1 and errs[0]["message"] == j["error"], lambda: errs)


@test
def invalid_fake_all_reasons(t):
    d = t.fake
    j = d.wait(d.submit("bw", {"isa": "fake-invalid"})["id"])
    ensure(j["state"] == "failed" and "fake: a spread over 50%" in j["error"], lambda: j)
    ensure(j["error_detail"].splitlines() == ["fake: a spread over 50%", "fake: CPU MoE above the read ceiling"],
           lambda: j["error_detail"])


@test
def corrupt_and_unmeasured_profiles(t):
    d = t.fake
    os.makedirs(d.prof, exist_ok=True)
    with open(os.path.join(d.prof, GPU0 + ".json"), "w") as f:
        f.write('{"version": 4, "gpu": nul')
    with open(os.path.join(d.prof, "host.json"), "w") as f:
        json.dump({"version": 4, "gpu": None, "timestamp": "2026-12-01T00:00:00Z",
                   "dtypes": {"bf16": "offload", "nvfp4": "unmeasured"}}, f)
    listing = d.get("/profiles")["profiles"]
    bad = [p for p in listing if p["uuid"] == GPU0]
    ensure(len(bad) == 1 and "not JSON" in bad[0].get("corrupt", ""), lambda: listing)
    host = [p for p in listing if p["uuid"] == "host"]
    ensure(host and host[0]["dtypes"]["nvfp4"] == "unmeasured" and "corrupt" not in host[0], lambda: listing)
    _, doc = expect_error(d, "GET", f"/profiles/{GPU0}", 500, "corrupt_profile")
    ensure("not a profile" in doc["error"]["message"], lambda: doc)
    os.unlink(os.path.join(d.prof, GPU0 + ".json"))
    os.unlink(os.path.join(d.prof, "host.json"))


@test
def make_run_prints_reasons_and_keeps_the_profile(t):
    cache = os.path.join(t.tmp, "mr-cache")
    env = dict(os.environ, FTBENCH_TEST_FAKE_GPUS="1", FT_RUN_FTBENCH=FTBENCH_HOOKS, XDG_CACHE_HOME=cache, BUILD=os.environ.get("BUILD", "build"),
               FT_RUN_BW_ARGS="--dtype bf16,nvfp4 --cpu-iters 2 --kernel-cpu-iters 4 --max-spread 0.001")
    env.pop("FREETOKEN_BENCHBW_PATH", None)
    r = subprocess.run(["sh", os.path.join(ROOT, "scripts", "make-run.sh")], capture_output=True, text=True,
                       env=env, timeout=300 * SLOW, cwd=ROOT)
    out = r.stdout + r.stderr
    ensure(r.returncode == 0 and "reasons:" in out and "bf16 CPU MoE" in out and "nvfp4 PCIe gather" in out, out)
    store = os.path.join(cache, "freetoken", "benchbw")
    ensure(os.path.isdir(os.path.join(store, "history")), f"no history in {store}: {out}")
    env["FT_RUN_BW_ARGS"] = "--dtype bf16 --cpu-iters 2 --kernel-cpu-iters 4"
    r = subprocess.run(["sh", os.path.join(ROOT, "scripts", "make-run.sh")], capture_output=True, text=True,
                       env=env, timeout=300 * SLOW, cwd=ROOT)
    out = r.stdout + r.stderr
    kept = [x for x in out.splitlines() if x.startswith("profile kept at: ")]
    ensure(r.returncode == 0 and kept, out)
    path = kept[0].split(": ", 1)[1]
    ensure(path.startswith(store) and os.path.exists(path), f"{path} not in {store}")
    show = subprocess.run([FTBENCH_HOOKS, "profile", "show"], capture_output=True, text=True,
                          env=dict(env, XDG_CACHE_HOME=cache), timeout=60)
    ensure(show.returncode == 0 and "valid" in show.stdout, show.stdout + show.stderr)


def main():
    on_signals()
    t = Scratch("ftbenchd-reasons-")
    plan(len(results))
    failed = 0
    try:
        failed = run_tests(results, t, only=sys.argv[1:])
    finally:
        failed = finish(t.tmp, failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
