"""Fleet integration against a real ftbenchd on loopback with the fake worker:
/metrics for Prometheus (promtool check metrics; per-format figures, build and GPU info, no
verdict sample for an unmeasured format, validation agreement), the node-feature-discovery file
read the way NFD's local source reads it (hidden temporaries, stale ones swept, expiry, integer
figures), `ftbench health` in both exit-code conventions (ok, stale, invalid, no profile, daemon
down), the NHC check and NPD plugin config of etc/, and the first-boot measurement of
rebench = on-change (waits while a process holds the GPU, once).
Run through tests/integration/fleet.sh."""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # ftd_harness
from ftd_harness import (FTBENCH, GPU0, GPU1, ROOT, Daemon, Scratch, ensure, finish, nfd_labels, plan,  # noqa: E402
                         run_tests)

FIX = os.path.join(ROOT, "tests", "fixtures", "profiles")


def fixture(name, **over):
    with open(os.path.join(FIX, name)) as f:
        p = json.load(f)
    p.update(over)
    return p


def put(d, uuid, p):
    os.makedirs(d.prof, exist_ok=True)
    with open(os.path.join(d.prof, uuid + ".json"), "w") as f:
        if isinstance(p, str):
            f.write(p)
        else:
            json.dump(p, f)


def as_gpu(p, uuid, epoch=None):
    p = copy.deepcopy(p)
    p["gpu"]["uuid"] = uuid
    if epoch is not None:
        p["epoch"] = epoch
    for v in (p.get("validation") or {}).values():
        if epoch is not None:  # the records move with the profile: current ones stay current
            for k in ("measured_epoch", "profile_epoch"):
                if k in v:
                    v[k] += epoch - 1795949710.5
    return p


def metrics_text(d):
    st, _, body = d.req("GET", "/metrics")
    ensure(st == 200, f"/metrics: {st}")
    return body.decode()


def samples(text, name):
    """{frozenset(labels.items()): value} of family name (prometheus_client's parser)."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name:
                out[frozenset(s.labels.items())] = s.value
    return out


def find(smp, **labels):
    """The values of the samples whose labels include labels."""
    want = set(labels.items())
    return [v for k, v in smp.items() if want <= set(k)]


# ---------------------------------------------------------------- /metrics

def test_metrics(t):
    d = Daemon(t.tmp, "metrics", env={"NODE_NAME": "gpu-node-07"})
    now = time.time()
    p = as_gpu(fixture("validated.json"), GPU0, epoch=now - 3600)
    p["dtypes"]["fp8_block"] = "unmeasured"  # a format the run could not measure
    put(d, GPU0, p)
    put(d, GPU1, "{ not json")
    d.start()
    try:
        text = metrics_text(d)
        # promtool: valid exposition; its only lint is the camelCase join labels of
        # ftbenchd_gpu_info (dcgm-exporter's own names), none elsewhere
        r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        lint = [x for x in (r.stdout + r.stderr).splitlines() if x.strip()]
        ensure(r.returncode in (0, 3) and all(x.startswith("ftbenchd_gpu_info label names") for x in lint),
               f"promtool check metrics: rc {r.returncode}: {lint}")
        bi = samples(text, "ftbenchd_build_info")
        ensure(list(bi.values()) == [1.0] and dict(next(iter(bi)))["hostname"] == "gpu-node-07", f"build_info {bi}")
        gi = samples(text, "ftbenchd_gpu_info")
        ensure(find(gi, gpu=GPU0, UUID=GPU0, modelName="Fake H200", Hostname="gpu-node-07") == [1.0],
               f"gpu_info joinable with dcgm-exporter: {gi}")
        ident = dict(gpu=GPU0, model_name="NVIDIA H200", hostname="gpu-node-07",
                     cpu_model="Intel(R) Xeon(R) Platinum 8480+")
        ensure(find(samples(text, "ftbenchd_profile_cpu_moe_gbs"), dtype="bf16", **ident) == [120.0], "cpu_moe bf16")
        ensure(find(samples(text, "ftbenchd_profile_gather_gbs"), dtype="nvfp4", **ident) == [52.0], "gather nvfp4")
        ff = find(samples(text, "ftbenchd_profile_fetch_fraction"), dtype="bf16", gpu=GPU0)
        ensure(len(ff) == 1 and 0 < ff[0] < 1, f"fetch fraction bf16 {ff}")
        hyb = samples(text, "ftbenchd_profile_hybrid")
        ensure(find(hyb, gpu=GPU0, dtype="bf16") == [1.0] and find(hyb, gpu=GPU0, dtype="nvfp4") == [0.0],
               f"hybrid: {hyb}")
        ensure(find(hyb, dtype="fp8_block") == [], "an unmeasured format has no verdict sample (0 would be offload)")
        ver = samples(text, "ftbenchd_profile_verdict")
        ensure(find(ver, gpu=GPU0, dtype="fp8_block", verdict="unmeasured") == [1.0], f"verdict label: {ver}")
        ag = samples(text, "ftbenchd_verdict_agrees")
        ensure(find(ag, gpu=GPU0, dtype="bf16", source="engine") == [1.0], f"agrees bf16: {ag}")
        ensure(find(ag, gpu=GPU0, dtype="nvfp4", source="replay") == [0.0], f"disagrees nvfp4: {ag}")
        ensure(find(ag, dtype="fp8_block") == [], "a stale validation is not trusted: no agrees sample")
        vs = samples(text, "ftbenchd_validation_stale")
        ensure(find(vs, gpu=GPU0, dtype="fp8_block", source="engine") == [1.0], f"stale validation: {vs}")
        val = samples(text, "ftbenchd_profile_valid")
        ensure(find(val, gpu=GPU0) == [1.0] and find(val, gpu=GPU1) == [0.0], f"valid: {val}")
    finally:
        d.stop()


# ---------------------------------------------------------------- node-feature-discovery

def test_nfd_label_names(t):
    """format names a label cannot carry (Kubernetes: [A-Za-z0-9._-], alphanumeric at both ends,
    63 characters) are left out of the features file, the rest written"""
    nfd = os.path.join(t.tmp, "names.d", "ftbenchd")
    os.makedirs(os.path.dirname(nfd))
    d = Daemon(t.tmp, "nfd-names", "--nfd-features-file", nfd)
    p = as_gpu(fixture("full.json"), GPU0, epoch=time.time() - 60)
    bad_names = ["bad format", "-lead", "x" * 60, "semi;colon", "sp\u00e4t"]
    for b in bad_names:
        p["dtypes"][b] = "hybrid"
    put(d, GPU0, p)
    d.start()
    try:
        labels = nfd_labels(nfd)  # which refuses a label name NFD would refuse
        ensure(labels.get("ftbenchd/bf16.verdict") == "hybrid" and labels.get("ftbenchd/profiles") == "1", labels)
        ensure(all(re.fullmatch(r"ftbenchd/[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?", k) for k in labels)
               and not any(b in k for b in bad_names for k in labels), f"label names Kubernetes refuses: {labels}")
    finally:
        d.stop()


def test_nfd(t):
    nfd_dir = os.path.join(t.tmp, "features.d")
    os.makedirs(nfd_dir)
    nfd = os.path.join(nfd_dir, "ftbenchd")
    # what a kill -9 mid-write left, hidden or not, and another writer's temporary
    for name in (".ftbenchd.tmp.AbCdEf", "ftbenchd.tmp.XyZ123", "other.tmp.aaaaaa"):
        with open(os.path.join(nfd_dir, name), "w") as f:
            f.write("ftbenchd/bf16.verdict=offload\n")
    d = Daemon(t.tmp, "nfd", "--nfd-features-file", nfd, "--profile-max-age", "10d")
    now = time.time()
    p0 = as_gpu(fixture("full.json"), GPU0, epoch=now - 2 * 86400)  # 2 days old
    p1 = as_gpu(fixture("full.json"), GPU1, epoch=now - 3600)
    p1["dtypes"]["nvfp4"] = "unmeasured"
    p1["dtypes"]["fp8_block"] = "unmeasured"
    p0["dtypes"]["fp8_block"] = "unmeasured"
    p1["dtype_kernels"]["bf16"]["cpu_moe_gbs"] = 100.0  # the host's worst GPU for bf16
    put(d, GPU0, p0)
    put(d, GPU1, p1)
    d.start()
    try:
        left = sorted(os.listdir(nfd_dir))
        ensure(left == ["ftbenchd", "other.tmp.aaaaaa"], f"stale temporaries of ftbenchd swept, others kept: {left}")
        labels = nfd_labels(nfd)
        ensure(set(k.split("/")[0] for k in labels) == {"ftbenchd"}, f"one namespace: {labels}")
        ensure(labels["ftbenchd/bf16.verdict"] == "hybrid", labels)
        ensure(labels["ftbenchd/nvfp4.verdict"] == "mixed", "offload on one GPU, unmeasured on the other: mixed")
        ensure(labels["ftbenchd/fp8_block.verdict"] == "unmeasured", "unmeasured everywhere: never offload")
        ensure(labels["ftbenchd/bf16.cpu-moe-mbps"] == "100000", f"the worst GPU's MB/s: {labels}")
        ints = [k for k in labels if k.endswith(("-mbps", "-us"))]
        ensure(len(ints) >= 10 and all(labels[k].isdigit() for k in ints), f"integer figures: {ints}")
        # one bf16 expert (9437184 B) over 50 GB/s gather: 189 us
        ensure(labels["ftbenchd/bf16.fetch-us"] == "189", labels["ftbenchd/bf16.fetch-us"])
        ensure(labels["ftbenchd/profile-age"] == "lt-7d", f"oldest profile 2 days old: {labels}")
        ensure(nfd_labels(nfd, now - 2 * 86400 + 3600)["ftbenchd/profile-age"] == "lt-1d", "a day after: lt-1d")
        ensure(nfd_labels(nfd, now + 6 * 86400)["ftbenchd/profile-age"] == "lt-10d", "after a week: lt-10d")
        late = nfd_labels(nfd, now + 9 * 86400)
        ensure(late == {"ftbenchd/profile-age": "expired"}, f"past profile-max-age only 'expired' is left: {late}")
        with open(nfd) as f:
            text = f.read()
        ensure("# +expiry-time=" in text, "expiry directive")
        # a new profile rewrites it, again through a hidden temporary only
        j = d.wait(d.submit("bw", {"gpu": GPU1})["id"])
        ensure(j["state"] == "succeeded", j)
        ensure(sorted(os.listdir(nfd_dir)) == ["ftbenchd", "other.tmp.aaaaaa"], os.listdir(nfd_dir))
        ensure(nfd_labels(nfd, 1795000000.5 + 60)["ftbenchd/bf16.verdict"] == "mixed",
               "the fake GPU1 profile (offload) beside GPU0's hybrid")
    finally:
        d.stop()


# ---------------------------------------------------------------- ftbench health

def health(*args, timeout=5, stderr=False):
    """ftbench health ARGS: (exit status, stdout, seconds); stderr too when asked (usage errors)."""
    t0 = time.time()
    r = subprocess.run([FTBENCH, "health", *args], capture_output=True, text=True, timeout=timeout)
    return r.returncode, (r.stdout + (r.stderr if stderr else "")).strip(), time.time() - t0


def test_health(t):
    d = Daemon(t.tmp, "health")
    now = time.time()
    good0 = as_gpu(fixture("full.json"), GPU0, epoch=now - 86400)
    good1 = as_gpu(fixture("full.json"), GPU1, epoch=now - 2 * 86400)
    d.start()
    try:
        url = ["--daemon", f"http://127.0.0.1:{d.port}"]
        cases = []
        # no profile at all: the daemon's inventory says which must exist
        cases.append(("no profile", None, None, 1, 1, "no profile for " + GPU0))
        cases.append(("ok", good0, good1, 0, 0, "ok: 2 profile(s)"))
        cases.append(("one missing", good0, None, 1, 1, "no profile for " + GPU1))
        old = as_gpu(fixture("full.json"), GPU1, epoch=now - 40 * 86400)
        cases.append(("stale by age", good0, old, 1, 1, "is 40.0 days old"))
        moved = copy.deepcopy(good1)
        moved["fingerprint"] = {"kernel": "0.0.0-another-machine"}
        cases.append(("stale by fingerprint", good0, moved, 1, 1, "stale: kernel 0.0.0-another-machine"))
        bad = copy.deepcopy(good1)
        bad["valid"] = False
        bad["invalid_reasons"] = ["cpu_moe_gbs spread over 50 %"]
        cases.append(("not valid", good0, bad, 1, 1, "not valid: cpu_moe_gbs spread over 50 %"))
        cases.append(("corrupt", good0, "{ half a file", 1, 1, "is corrupt"))
        for name, p0, p1, nhc, npd, words in cases:
            for uuid, p in ((GPU0, p0), (GPU1, p1)):
                path = os.path.join(d.prof, uuid + ".json")
                if p is None:
                    if os.path.exists(path):
                        os.unlink(path)
                else:
                    put(d, uuid, p)
            for mode, want in (("nhc", nhc), ("npd", npd)):
                rc, out, dt = health("--mode", mode, *url)
                ensure(rc == want and words in out and "\n" not in out,
                       f"{name} --mode {mode}: exit {rc} (want {want}): {out!r}")
                ensure(dt < 1.0, f"{name}: answered in {dt:.2f} s")
        put(d, GPU1, good1)
    finally:
        d.stop()
    # daemon down, profiles fine: nhc 3, npd 2 (Unknown), judged from the store alone
    down = ["--daemon", f"http://127.0.0.1:{d.port}", "--profile-dir", d.prof]
    rc, out, dt = health("--mode", "nhc", *down)
    ensure(rc == 3 and "ftbenchd does not answer" in out and dt < 1.0, f"daemon down nhc: {rc} {out!r} {dt:.2f}")
    rc, out, _ = health("--mode", "npd", *down)
    ensure(rc == 2 and "ftbenchd does not answer" in out, f"daemon down npd: {rc} {out!r}")
    rc, out, _ = health("--no-daemon", "--profile-dir", d.prof)
    ensure(rc == 0 and out.startswith("ok: 2 profile(s)"), f"--no-daemon: {rc} {out!r}")
    # daemon down and an empty store: a missing profile is NonOK, not Unknown
    empty = os.path.join(t.tmp, "empty")
    os.makedirs(empty)
    rc, out, _ = health("--mode", "npd", "--daemon", f"http://127.0.0.1:{d.port}", "--profile-dir", empty)
    ensure(rc == 1 and "no profile in" in out, f"empty store, daemon down: {rc} {out!r}")
    rc, out, _ = health("--mode", "sometimes", stderr=True)
    ensure(rc == 2 and "--mode" in out, f"bad mode: {rc} {out!r}")
    rc, out, _ = health("--max-age", "soon", stderr=True)
    ensure(rc == 2 and "--max-age" in out, f"bad max-age: {rc} {out!r}")
    t.health_store = d.prof


def test_nhc_and_npd_examples(t):
    store = getattr(t, "health_store", None)
    ensure(store, "needs test_health's store")
    bindir = os.path.dirname(FTBENCH)
    nhc = os.path.join(ROOT, "etc", "nhc", "ftbenchd.nhc")
    script = ('die() { echo "DIE $1 $2"; }; log() { echo "LOG $1"; }; . "$1"; shift; '
              'check_ftbenchd_profile "$@"; echo "RC $?"')
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    dead = "http://127.0.0.1:9"
    r = subprocess.run(["bash", "-c", script, "nhc", nhc, "--daemon", dead, "--profile-dir", store],
                       capture_output=True, text=True, env=env)
    ensure(r.stdout.splitlines()[-1] == "RC 0" and "LOG ftbenchd: ftbenchd does not answer" in r.stdout,
           f"NHC: a daemon down is logged, not drained: {r.stdout!r}")
    env["FTBENCHD_NHC_DAEMON_DOWN"] = "drain"
    r = subprocess.run(["bash", "-c", script, "nhc", nhc, "--daemon", dead, "--profile-dir", store],
                       capture_output=True, text=True, env=env)
    ensure("DIE 1 ftbenchd: ftbenchd does not answer" in r.stdout, f"NHC drain on daemon down: {r.stdout!r}")
    empty = os.path.join(t.tmp, "nhc-empty")
    os.makedirs(empty)
    r = subprocess.run(["bash", "-c", script, "nhc", nhc, "--no-daemon", "--profile-dir", empty],
                       capture_output=True, text=True, env=env)
    ensure("DIE 1 ftbenchd: no profile in" in r.stdout and r.stdout.splitlines()[-1] == "RC 1",
           f"NHC: a missing profile drains: {r.stdout!r}")
    with open(os.path.join(ROOT, "etc", "npd", "ftbenchd-plugin-monitor.json")) as f:
        npd = json.load(f)
    ensure(npd["plugin"] == "custom" and npd["conditions"][0]["type"] == npd["rules"][0]["condition"], "NPD config")
    rule = npd["rules"][0]
    ensure(os.path.basename(rule["path"]) == "ftbench" and rule["args"][:3] == ["health", "--mode", "npd"], rule)
    args = [a if a != "http://127.0.0.1:8377" else dead for a in rule["args"]] + ["--profile-dir", store]
    r = subprocess.run([FTBENCH, *args], capture_output=True, text=True, timeout=5)
    ensure(r.returncode == 2 and len(r.stdout) <= npd["pluginConfig"]["max_output_length"] + 200,
           f"the NPD rule's command: {r.returncode} {r.stdout!r}")


# ---------------------------------------------------------------- first boot

def bw_jobs(d):
    return [j for j in d.get("/benchmark/jobs")["jobs"] if j["kind"] == "bw"]


def test_first_boot(t):
    busy = os.path.join(t.tmp, "gpu-busy")
    open(busy, "w").close()
    d = Daemon(t.tmp, "firstboot", "--rebench", "on-change", env={"FAKE_BUSY_FILE": busy, "FAKE_STEP_MS": "20"})
    d.start()
    try:
        time.sleep(1.5)
        ensure(bw_jobs(d) == [], "a GPU held by a process is not measured")
        os.unlink(busy)
        deadline = time.time() + 15
        while len(bw_jobs(d)) < 2 and time.time() < deadline:
            time.sleep(0.2)
        jobs = bw_jobs(d)
        ensure(sorted(j["gpu"]["uuid"] for j in jobs) == [GPU0, GPU1], f"both GPUs measured once idle: {jobs}")
        for j in jobs:
            ensure(d.wait(j["id"])["state"] == "succeeded", j)
        ensure(os.path.exists(os.path.join(d.state, "firstboot", GPU0)), "the marker")
    finally:
        d.stop()
    # once: the profiles lost (or the measurement failed), a restart queues nothing
    shutil.rmtree(d.prof)
    d.start()
    try:
        time.sleep(1.5)
        ensure(len(bw_jobs(d)) == 2, f"not measured again: {[(j['id'], j['state']) for j in bw_jobs(d)]}")
    finally:
        d.stop()
    # never: no first boot
    e = Daemon(t.tmp, "firstboot-never", "--rebench", "never")
    e.start()
    try:
        time.sleep(1.2)
        ensure(bw_jobs(e) == [], "rebench never: nothing")
    finally:
        e.stop()


TESTS = [test_metrics, test_nfd, test_nfd_label_names, test_health, test_nhc_and_npd_examples, test_first_boot]


def main():
    plan(len(TESTS))
    t = Scratch("ftbenchd-fleet-")
    failed = 0
    try:
        failed += run_tests(TESTS, t)
    finally:
        failed = finish(t.tmp, failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
