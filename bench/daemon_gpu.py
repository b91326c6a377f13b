#!/usr/bin/env python3
"""daemon_gpu: ftbenchd scheduling real GPU jobs on this host (issues 3 and 7). Needs only python3
(no curl: the GPU machine has none).

Starts BUILD/bin/ftbenchd on loopback with temporary state and cache, submits
  one GPU (default):  A: cache-copy on GPU 0, B: bw (holds GPU 0 and the host), C: cache-copy on GPU 0
  GPUS=2:             A: cache-copy on GPU 0, B: cache-copy on GPU 1, C: bw on GPU 1 (host-exclusive),
                      D: cache-copy on GPU 0
  GPUS=2 ALL=1:       and E: bw with gpu "all" (holds both GPUs and the host, its worker
                      sees both GPUs, one profile per GPU with its concurrent blocks in the store)
samples GET /gpus and each worker's CUDA_VISIBLE_DEVICES (from /proc/PID/environ) while they run,
waits for all and prints the timeline and what /gpus showed. Exit 1 when a job failed or the
scheduling rules were broken (two jobs on one GPU, anything beside a host-exclusive job, not
FIFO; with GPUS=2 also: A and B not side by side, a worker seeing another GPU than its job's).

usage: BUILD=build [GPU=0] [GPUS=1|2] [OUTDIR=dir] bench/daemon_gpu.py  (GPU= empty: jobs name no GPU)
"""
import json, os, signal, socket, subprocess, sys, tempfile, time, urllib.request

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.environ.get("BUILD", "build")
bindir = build if build.startswith("/") else os.path.join(root, build)
bindir = os.path.join(bindir, "bin")
out = os.environ.get("OUTDIR") or tempfile.mkdtemp(prefix="ftbenchd-gpu.")
os.makedirs(out, exist_ok=True)
gpu = os.environ.get("GPU", "0")

s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
base = "http://127.0.0.1:%d" % port
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(out, "cache"), XDG_STATE_HOME=os.path.join(out, "state"))
for k in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "FREETOKEN_BENCHBW_PATH"):
    env.pop(k, None)
log = open(os.path.join(out, "ftbenchd.log"), "w")
d = subprocess.Popen([os.path.join(bindir, "ftbenchd"), "--listen", "127.0.0.1:%d" % port,
                      "--state-dir", os.path.join(out, "state", "ftbenchd"),
                      "--worker", os.path.join(bindir, "ftbench"), "--rebench", "never"], stdout=log, stderr=log, env=env)


def http(method, path, body=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"} if body is not None else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


try:
    for _ in range(300):
        try:
            http("GET", "/health")
            break
        except OSError:
            if d.poll() is not None:
                sys.exit("ftbenchd exited: see %s/ftbenchd.log" % out)
            time.sleep(0.1)
    else:
        sys.exit("ftbenchd did not come up")
    two = os.environ.get("GPUS", "1") == "2"
    g = {"gpu": gpu} if gpu else {}
    cc_long = dict(models=["qwen3-30B", "gpt-oss-120b"], batch_sizes=[1, 4, 32], miss_rates=[0, 1], repeat=10)
    cc_short = dict(models=["glm4.7-nvfp4"], batch_sizes=[4], miss_rates=[1], repeat=10)
    if two:
        inv = http("GET", "/gpus")["gpus"]
        uuid = {str(x["index"]): x.get("uuid") for x in inv}
        print("GET /gpus:", ", ".join("%s=%s" % kv for kv in sorted(uuid.items())))
        plan = [("A", "cache-copy", dict(cc_long, gpu="0")), ("B", "cache-copy", dict(cc_long, gpu="1")),
                ("C", "bw", dict(dtype="bf16,nvfp4", gpu="1")), ("D", "cache-copy", dict(cc_short, gpu="0"))]
        if os.environ.get("ALL") == "1":
            plan.append(("E", "bw", dict(dtype="bf16", overlap_seconds=1, gpu="all")))
            uuid["all"] = ",".join(uuid[k] for k in sorted(uuid, key=int))
    else:
        plan = [("A", "cache-copy", dict(cc_long, **g)), ("B", "bw", dict(dtype="bf16,nvfp4", **g)),
                ("C", "cache-copy", dict(cc_short, **g))]
    jobs = {n: http("POST", "/benchmark/start", {"kind": k, "args": a}) for n, k, a in plan}
    jgpu = {n: a.get("gpu") for n, k, a in plan}
    name = {j["id"]: n for n, j in jobs.items()}
    print("submitted", ", ".join("%s=%s (%s)" % (n, j["id"][:8], j["kind"]) for n, j in jobs.items()))
    samples, bad = [], []
    t0 = time.time()
    while True:
        lst = http("GET", "/benchmark/jobs?limit=20")["jobs"]
        st = {name[j["id"]]: j["state"] for j in lst if j["id"] in name}
        gp = http("GET", "/gpus")
        holders = {str(x["index"]): name.get(x["job"], x["job"]) for x in gp["gpus"]}
        if st.get("E") == "running" and any(h != "E" for h in holders.values()):
            bad.append("bw gpu=all E running but GET /gpus shows %s" % holders)
        host = name.get(gp["host_job"], gp["host_job"])
        running = [n for n, v in st.items() if v == "running"]
        if host and len(running) > 1:
            bad.append("host-exclusive %s ran beside %s" % (host, running))
        envs = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
                if len(cmd) > 1 and cmd[0].endswith(b"/ftbench") and cmd[1] in (b"bw", b"cache-copy"):
                    e = dict(kv.split(b"=", 1) for kv in open("/proc/%s/environ" % pid, "rb").read().split(b"\0") if b"=" in kv)
                    jid = e.get(b"FTBENCHD_JOB_ID", b"").decode()
                    if jid in name:  # a worker of this daemon (not some other ftbench on the host)
                        cvd = e.get(b"CUDA_VISIBLE_DEVICES", b"?").decode()
                        if two and cvd != uuid.get(jgpu[name[jid]]):
                            bad.append("%s (GPU %s) saw CUDA_VISIBLE_DEVICES=%s" % (name[jid], jgpu[name[jid]], cvd))
                        envs.append("%s:CUDA_VISIBLE_DEVICES=%s,ORDER=%s" % (name[jid], e.get(b"CUDA_VISIBLE_DEVICES", b"?").decode(),
                                                                           e.get(b"CUDA_DEVICE_ORDER", b"?").decode()))
            except OSError:
                pass
        line = "jobs %s  gpus %s host %s  workers %s" % (" ".join("%s:%s" % kv for kv in sorted(st.items())),
                                                         holders, host or "-", envs or "-")
        if not samples or samples[-1][1] != line:
            samples.append((time.time() - t0, line))
        if all(v not in ("queued", "running") for v in st.values()):
            break
        time.sleep(0.3)
    for t, line in samples:
        print("%6.1fs  %s" % (t, line))
    final = {n: http("GET", "/benchmark/jobs/%s" % j["id"]) for n, j in jobs.items()}
    json.dump(final, open(os.path.join(out, "jobs.json"), "w"), indent=1)
    def ts(v):
        if v is None: return None
        if isinstance(v, (int, float)): return float(v)
        import datetime
        return datetime.datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
    z = min(ts(j["created_at"]) for j in final.values())
    print("%-3s %-10s %-10s %-5s %8s %8s %8s" % ("job", "kind", "state", "exit", "queued", "started", "finished"))
    for n, j in final.items():
        f = [ts(j[k]) for k in ("created_at", "started_at", "finished_at")]
        print("%-3s %-10s %-10s %-5s %8s %8s %8s" % (n, j["kind"], j["state"], j["exit_status"],
              *["%.1f" % (x - z) if x is not None else "-" for x in f]))
    span = {n: (ts(j["started_at"]) or 0, ts(j["finished_at"]) or 0) for n, j in final.items()}
    if two:
        # A (GPU 0) and B (GPU 1) side by side; C (host-exclusive) after both, alone; D after C
        a, b, c, dd = span["A"], span["B"], span["C"], span["D"]
        if not (b[0] < a[1] and a[0] < b[1]):
            bad.append("A and B (GPUs 0 and 1) did not run at the same time")
        if c[0] < max(a[1], b[1]) - 1e-3:
            bad.append("host-exclusive C started before A and B finished")
        if dd[0] < c[1] - 1e-3:
            bad.append("D started before C finished (FIFO without starvation)")
        both = [t for t, line in samples if "A:running" in line and "B:running" in line]
        print("A and B both running in %d samples; overlap %.1f s" % (len(both), max(0, min(a[1], b[1]) - max(a[0], b[0]))))
        if "E" in span:
            e = span["E"]
            if e[0] < dd[1] - 1e-3:
                bad.append("E (bw gpu=all) started before D finished")
            store = os.path.join(out, "cache", "freetoken", "benchbw")
            for k in sorted(uuid):
                if k == "all":
                    continue
                try:
                    pr = json.load(open(os.path.join(store, uuid[k] + ".json")))
                except (OSError, ValueError) as ex:
                    bad.append("E: no profile for GPU %s: %s" % (k, ex))
                    continue
                blk = ((pr.get("dtype_kernels") or {}).get("bf16") or {}).get("concurrent") or {}
                print("E: GPU %s profile: deployment %s, bf16 isolated %s / concurrent %s (cpu %s, gather %s GB/s)" % (
                    k, pr.get("deployment"), pr["dtype_kernels"]["bf16"].get("recommended_isolated"),
                    blk.get("recommended"), blk.get("cpu_moe_gbs"), blk.get("pcie_gather_gbs")))
                if not blk or (pr.get("concurrent") or {}).get("engines") != 2:
                    bad.append("E: GPU %s profile has no concurrent block of 2 engines" % k)
    else:
        # FIFO on one GPU: A, then B (host-exclusive), then C, never overlapping
        iv = sorted((s0, e0, n) for n, (s0, e0) in span.items())
        for (s1, e1, n1), (s2, e2, n2) in zip(iv, iv[1:]):
            if gpu and s2 < e1 - 1e-3:
                bad.append("%s started before %s finished on the same GPU" % (n2, n1))
        if [n for _, _, n in iv] != ["A", "B", "C"]:
            bad.append("order %s, expected A B C (FIFO)" % [n for _, _, n in iv])
    failed = [n for n, j in final.items() if j["state"] != "succeeded"]
    for b in bad:
        print("BAD:", b)
    if failed:
        print("not succeeded:", failed)
    sys.exit(1 if bad or (failed and gpu) else 0)
finally:
    d.send_signal(signal.SIGTERM)
    d.wait(30)
