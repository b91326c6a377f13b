#!/usr/bin/python3
"""Jobs and processes: what a client, a worker or a crowded host must never be able
to do to ftbenchd. The real daemon on loopback with fake workers (tests/fixtures/fakeworker.c).

  server_name_exact      decode `server` is an exact name (defect 3)
  decode_url_allowlist   decode `url` only from decode-urls, well-formed (defect 5)
  config_at_start        argv built from the configuration in force at start (defect 4)
  max_running            max-running caps jobs without a GPU; default the cores (defect 7)
  child_error_text       a failure in the child before exec has its real error (defect 7)
  many_jobs_polled       520 running jobs are all read (no 511 poll limit) (defect 7)
  orphan_tree_killed     a double-forked orphan in its own session, empty environment (defect 9)
  fault_suite            112 jobs of 14 faulty workers: states, 0 zombies, 0 leftovers, no fd growth
  kill9_cycles           kill -9 of the daemon at random points, FT_KILL9_CYCLES times (default 10;
                         `make test-soak` runs 50): journal and profiles parse, no temp file, no
                         leftover worker process (defects 9, 10)

Prints "ok N - name" / "not ok N - name"; exit 1 when anything failed. FT_HARDEN_ONLY=name,name
runs a subset. Figures of the fault suite and the kill -9 cycles go to stdout as "# ..." lines."""
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # ftd_harness
from ftd_harness import (BUILD, FTBENCHD, SLOW, Daemon, Scratch, ensure, expect_error, finish,  # noqa: E402
                         job_env_has, pid_alive, plan, run_tests)
NCPU = os.cpu_count() or 1

results = []



# On a GPU-less daemon cache-copy is refused (409 no_gpu): the jobs that need no GPU and run side
# by side there are decode jobs against an allowed url, the fake mode named by the model
# directory (tests/fixtures/fakeworker.c). GPULESS: the daemon flags that allow them.
DECODE_URL = "http://127.0.0.1:9"


def gpuless_flags(t):
    for mode in ("ok", "sleep", "double", "crash", "hang", "spawn", "garbage", "unknown", "huge", "fail",
                 "noresult", "chatty", "escape", "hidden", "holdfd", "nonewline", "bigline", "invalid", "usage"):
        os.makedirs(os.path.join(t.models, "fake-" + mode), exist_ok=True)
    return ("--model-roots", t.models, "--decode-urls", DECODE_URL)


def gpuless(t, mode):
    """A GPU-less job's args: decode with fake mode `mode`."""
    return {"model": os.path.join(t.models, "fake-" + mode), "url": DECODE_URL}

def test(fn):
    results.append(fn)
    return fn


def proc_stat(pid):
    """(state, ppid, pgid) of pid, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(") ", 1)[1].split()
        return rest[0], int(rest[1]), int(rest[2])
    except (OSError, IndexError):
        return None


def descendants(root):
    """Every process below root (by parent chain): {pid: state}."""
    parent, state = {}, {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            st = proc_stat(int(p))
            if st:
                state[int(p)], parent[int(p)] = st[0], st[1]
    out = {}
    for p in parent:
        q, depth = p, 0
        while q in parent and depth < 1000:
            q, depth = parent[q], depth + 1
            if q == root:
                out[p] = state[p]
                break
    return out


def nfds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def escaped_pids(d, jid):
    st, _, log = d.req("GET", f"/benchmark/jobs/{jid}/log")
    return [int(x) for x in re.findall(rb"escaped child (\d+)", log)]


def wait_all(d, ids, timeout=120):
    deadline = time.time() + timeout * SLOW
    final = ("succeeded", "failed", "cancelled", "timed_out", "interrupted")
    while True:
        st, _, lst = d.json("GET", "/benchmark/jobs?limit=1000")
        states = {j["id"]: j for j in lst["jobs"] if j["id"] in ids}
        if all(states.get(i, {}).get("state") in final for i in ids):
            return states
        ensure(time.time() < deadline, lambda: {i: states.get(i, {}).get("state") for i in ids})
        time.sleep(0.1)


def wait_gone(pids, timeout=5):
    deadline = time.time() + timeout * SLOW
    while any(pid_alive(p) for p in pids):
        if time.time() > deadline:
            return [p for p in pids if pid_alive(p)]
        time.sleep(0.05)
    return []


@test
def server_name_exact(t):
    """a name containing '=' selected the tail of a template (prefix match up to '='); now an
    exact match on [A-Za-z0-9_.-]{1,64}, 400 naming args.server otherwise"""
    tmpl = "sg=python3 -m sglang.launch_server --model-path={model} --port={port}"
    d = Daemon(t.tmp, "names", "--model-roots", t.models, "--decode-server", tmpl).start()
    try:
        m = t.models + "/m"
        for bad in ("sg=python3 -m sglang.launch_server --model-path", "sg=python3", "s g", "x" * 65, "",
                    "sg\n", "é"):
            expect_error(d, "POST", "/benchmark/start", 400, "invalid_argument", "args.server",
                         body={"kind": "decode", "args": {"model": m, "server": bad}})
        expect_error(d, "POST", "/benchmark/start", 403, "forbidden", "args.server",
                     body={"kind": "decode", "args": {"model": m, "server": "s"}})
        job = d.submit("decode", {"model": m, "server": "sg"})
        ensure("--server-cmd=" + tmpl[3:] in job["argv"], lambda: job["argv"])
        d.wait(job["id"])
    finally:
        d.stop()
    r = subprocess.run([FTBENCHD, "-n", "--decode-server", "bad name=x {port}"], capture_output=True, text=True)
    ensure(r.returncode == 2 and "not 1 to 64" in r.stderr, lambda: r.stderr)


@test
def decode_url_allowlist(t):
    """loopback is no longer implied; a url must be in decode-urls and well-formed"""
    d = Daemon(t.tmp, "urls0").start()
    try:
        for u in ("http://127.0.0.1:9/v1", "http://localhost:30000", "http://[::1]:1/"):
            expect_error(d, "POST", "/benchmark/start", 403, "forbidden", "args.url",
                         body={"kind": "decode", "args": {"url": u}})
    finally:
        d.stop()
    d = Daemon(t.tmp, "urls1", "--decode-urls", "http://127.0.0.1:9").start()
    try:
        for u in ("http://127.0.0.1:9/v1 x", "http://127.0.0.1:9/v1\r\nX-Evil: 1", "http://127.0.0.1:9/\x01",
                  "http://127.0.0.1:9/#frag", "http://u:p@127.0.0.1:9/", "http://127.0.0.1:0/", "gopher://127.0.0.1:9/",
                  "http://127.0.0.1:9.evil/"):
            expect_error(d, "POST", "/benchmark/start", 400, "invalid_argument", "args.url",
                         body={"kind": "decode", "args": {"url": u}})
        for u in ("http://127.0.0.1:90/", "http://127.0.0.1:99/v1", "http://127.0.0.2:9/", "https://127.0.0.1:9/"):
            expect_error(d, "POST", "/benchmark/start", 403, "forbidden", "args.url",
                         body={"kind": "decode", "args": {"url": u}})
        d.wait(d.submit("decode", {"url": "http://127.0.0.1:9/v1"})["id"])
    finally:
        d.stop()


@test
def config_at_start(t):
    """queued jobs whose configuration went away (a decode-server removed, a model root removed)
    fail when they would start, with an error that says so, instead of running what was revoked"""
    other = os.path.join(t.tmp, "other-root")
    os.makedirs(other + "/m2", exist_ok=True)
    d = Daemon(t.tmp, "cfgstart", "--model-roots", t.models + "," + other,
               "--decode-server", "ft=ft serve {model} --port {port}")
    d.start()
    m = t.models + "/m"
    blocker = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
    d.wait(blocker["id"], ("running",))
    dec = d.submit("decode", {"model": m, "server": "ft", "gpu": 0})
    lw = d.submit("load-weights", {"model": other + "/m2", "gpu": 0})
    keep = d.submit("cache-copy", {"repeat": 1, "gpu": 0})
    d.stop()
    d.args = [a for a in d.args]
    i = d.args.index("--decode-server")
    del d.args[i:i + 2]
    d.args[d.args.index("--model-roots") + 1] = t.models
    d.start()
    try:
        jd, jl, jk = d.wait(dec["id"]), d.wait(lw["id"]), d.wait(keep["id"])
        ensure(jd["state"] == "failed" and "configuration in force" in jd["error"] and \
            "decode-server" in jd["error"], lambda: jd)
        ensure(jl["state"] == "failed" and "configuration in force" in jl["error"] and \
            "model root" in jl["error"], lambda: jl)
        ensure(jk["state"] == "succeeded", lambda: jk)
    finally:
        d.stop()


@test
def max_running(t):
    """jobs that need no GPU were not capped (400 ran at once); max-running caps them, default
    the number of cores"""
    d = Daemon(t.tmp, "maxrun", "--max-running", "2", *gpuless_flags(t), env={"FAKE_GPUS": "0"}).start()
    try:
        ids = [d.submit("decode", gpuless(t, "sleep"))["id"] for _ in range(5)]
        time.sleep(0.5 * SLOW)
        states = [d.job(i)["state"] for i in ids]
        ensure(states == ["running"] * 2 + ["queued"] * 3, lambda: states)
        d.json("POST", f"/benchmark/jobs/{ids[0]}/cancel")
        d.wait(ids[2], ("running",))
        ensure(d.job(ids[3])["state"] == "queued")
        for i in ids:
            d.json("POST", f"/benchmark/jobs/{i}/cancel")
        wait_all(d, ids)
    finally:
        d.stop()
    d = Daemon(t.tmp, "maxrun-default", *gpuless_flags(t), env={"FAKE_GPUS": "0"}).start()
    try:
        ids = [d.submit("decode", gpuless(t, "sleep"))["id"] for _ in range(NCPU + 1)]
        time.sleep(0.5 * SLOW)
        states = [d.job(i)["state"] for i in ids]
        ensure(states.count("running") == NCPU and states[-1] == "queued", lambda: states)
        for i in ids:
            d.json("POST", f"/benchmark/jobs/{i}/cancel")
        wait_all(d, ids)
    finally:
        d.stop()


def squeezed(d, method, path, states=None):
    """A request while the daemon's descriptors are squeezed: the front answers 503 `busy` when it
    cannot take a connection (out of descriptors), so ask again; with states, poll the job until
    it is in one of them. The parsed answer."""
    deadline = time.time() + 60 * SLOW
    while True:
        st, _, doc = d.json(method, path)
        if st != 503 and (states is None or doc.get("state") in states):
            return doc
        ensure(time.time() < deadline, lambda: (method, path, st, doc))
        time.sleep(0.05)


@test
def child_error_text(t):
    """a call that fails in the child before exec (fcntl/dup2 out of descriptors) is reported
    with its error text, not as "the worker exited with status 127": RLIMIT_NOFILE of the
    running daemon is lowered to leave room for the parent's pipes but not for the child's"""
    d = Daemon(t.tmp, "childerr").start()  # the victim waits for the blocker's GPU
    seen = []
    try:
        pid = d.proc.pid
        soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        # the daemon's own descriptors move while the scan runs (the HTTP side's sockets come and
        # go), so the k that leaves the parent its pipes but not the child its dup2s shifts: scan
        # a wider range, twice if the first pass never hit the child
        for k in list(range(3, 24)) * 2:
            if len(seen) >= 21 and any("in the child failed" in (e or "") for _, _, e in seen):
                break
            blocker = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
            d.wait(blocker["id"], ("running",))
            victim = d.submit("cache-copy", {"repeat": 1, "gpu": 0})
            time.sleep(0.1)
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (nfds(pid) + k, hard))
            try:
                squeezed(d, "POST", f"/benchmark/jobs/{blocker['id']}/cancel")
                j = squeezed(d, "GET", f"/benchmark/jobs/{victim['id']}",
                             ("succeeded", "failed", "cancelled", "timed_out", "interrupted"))
            finally:
                resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
            d.wait(blocker["id"])
            seen.append((k, j["state"], j["error"]))
        ensure(not any("status 127" in (e or "") for _, _, e in seen), lambda: seen)
        ensure(any("in the child failed: Too many open files" in (e or "") for _, _, e in seen), lambda: seen)
        ensure(d.req("GET", "/health")[0] == 200)
    finally:
        d.stop()


@test
def many_jobs_polled(t):
    """polling stopped at 511 running jobs (a fixed 1024-entry poll set): 520 running jobs are
    all read (each shows its progress), cancelled, and leave nothing behind"""
    n = 520
    if "san" in os.path.basename(BUILD):
        return "SKIP 520 sanitizer-built workers at once would take several GiB"
    d = Daemon(t.tmp, "many", "--max-running", "1000", "--max-queue", "1000", *gpuless_flags(t),
               env={"FAKE_GPUS": "0"}).start()
    try:
        ids = [d.submit("decode", gpuless(t, "sleep"))["id"] for _ in range(n)]
        deadline = time.time() + 300 * SLOW  # 520 process starts on a busy 2-core machine
        while True:
            st, _, lst = d.json("GET", "/benchmark/jobs?limit=1000")
            js = [j for j in lst["jobs"] if j["id"] in ids]
            shown = sum(1 for j in js if (j["progress"] or {}).get("label") == "sleeping")
            if shown == n:
                break
            ensure(time.time() < deadline, lambda: f"{shown} of {n} running jobs were read")
            time.sleep(0.5)
        for i in ids:
            d.json("POST", f"/benchmark/jobs/{i}/cancel")
        states = wait_all(d, ids, timeout=180)
        ensure(all(j["state"] == "cancelled" for j in states.values()))
        time.sleep(0.3)
        left = descendants(d.proc.pid)
        ensure(not left, lambda: left)
    finally:
        d.stop()


@test
def orphan_tree_killed(t):
    """a worker whose grandchild leaves by a double fork, a new session and an empty environment
    (nothing of the job's group or FTBENCHD_JOB_ID): the daemon is its subreaper and ends it with
    the job"""
    d = Daemon(t.tmp, "orphan", *gpuless_flags(t), env={"FAKE_GPUS": "0"}).start()
    try:
        j = d.wait(d.submit("decode", gpuless(t, "double"))["id"])
        ensure(j["state"] == "succeeded", lambda: j)
        pids = escaped_pids(d, j["id"])
        ensure(len(pids) == 1)
        ensure(not wait_gone(pids), lambda: f"the orphan {pids} of the job survived")
        ensure(not descendants(d.proc.pid))
    finally:
        d.stop()


FAULTS = {  # mode: (expected state, what the error must say, extra request fields)
    "ok": ("succeeded", None, {}),
    "crash": ("failed", "signal 11", {}),
    "hang": ("timed_out", "timed out", {"timeout_s": 1}),
    "spawn": ("timed_out", "timed out", {"timeout_s": 1}),
    "garbage": ("failed", "not JSON", {}),
    "unknown": ("failed", "unknown message type", {}),
    "huge": ("failed", "max-result-line", {}),
    "bigline": ("failed", "not JSON", {}),
    "nonewline": ("failed", "without a newline", {}),
    "fail": ("failed", "fake failure", {}),
    "noresult": ("failed", "without a result", {}),
    "escape": ("succeeded", None, {}),
    "hidden": ("succeeded", None, {}),
    "holdfd": ("succeeded", None, {}),
    "double": ("succeeded", None, {}),
}


@test
def fault_suite(t):
    """at least 100 jobs of faulty workers (crash, hang ignoring SIGTERM, garbage and oversized
    lines, no newline, grandchildren holding fd 3, escaping grandchildren): every job in its
    right state, then 0 zombies, 0 leftover processes and no fd growth in the daemon"""
    d = Daemon(t.tmp, "faults", "--max-running", "6", "--max-queue", "1000", *gpuless_flags(t),
               env={"FAKE_GPUS": "0"}).start()
    try:
        warm = d.wait(d.submit("decode", gpuless(t, "ok"))["id"])
        ensure(warm["state"] == "succeeded")
        time.sleep(0.3)
        fd0 = nfds(d.proc.pid)
        t0 = time.time()
        jobs = []
        modes = list(FAULTS) * 8
        random.Random(17).shuffle(modes)
        for mode in modes:
            state, err, extra = FAULTS[mode]
            body = {"kind": "decode", "args": gpuless(t, mode), **extra}
            st, _, doc = d.json("POST", "/benchmark/start", body)
            ensure(st == 202, lambda: doc)
            jobs.append((doc["id"], mode))
        states = wait_all(d, [i for i, _ in jobs], timeout=300)
        elapsed = time.time() - t0
        bad = []
        escaped = []
        for jid, mode in jobs:
            want, err, _ = FAULTS[mode]
            j = states[jid]
            if j["state"] != want or (err and err not in (j["error"] or "")):
                bad.append((mode, j["state"], j["error"]))
            escaped += escaped_pids(d, jid)
        ensure(not bad, lambda: bad)
        survivors = wait_gone(escaped)
        ensure(not survivors, lambda: f"grandchildren survived their jobs: {survivors}")
        time.sleep(0.5)
        left = descendants(d.proc.pid)
        zombies = [p for p, s in left.items() if s == "Z"]
        ensure(not left, lambda: f"left below the daemon: {left} (zombies {zombies})")
        deadline = time.time() + 3 * SLOW  # an HTTP connection the client just closed may linger briefly
        while (fd1 := nfds(d.proc.pid)) > fd0 and time.time() < deadline:
            time.sleep(0.1)
        ensure(fd1 <= fd0, lambda: f"daemon fds grew from {fd0} to {fd1}: {os.listdir(f'/proc/{d.proc.pid}/fd')}")
        ensure(d.req("GET", "/health")[0] == 200)
        print(f"# fault suite: {len(jobs)} jobs of {len(FAULTS)} kinds in {elapsed:.1f} s, "
              f"{len(escaped)} grandchildren all ended, 0 zombies, 0 leftovers, daemon fds {fd0} -> {fd1}")
    finally:
        d.stop()


def _journal_ok(state):
    """Problems of the journal: a record that does not parse, or a temp file that is not being
    written right now (one that is still there half a second later)."""
    bad, temps = [], []
    p = os.path.join(state, "jobs")
    for name in os.listdir(p):
        if ".tmp." in name:
            temps.append(name)
            continue
        try:
            with open(os.path.join(p, name)) as f:
                json.load(f)
        except FileNotFoundError:
            pass  # removed by retention meanwhile
        except ValueError as e:
            bad.append(f"corrupt jobs/{name}: {e}")
    if temps:
        time.sleep(0.5)
        bad += [f"temp file jobs/{n}" for n in temps if os.path.exists(os.path.join(p, n))]
    return bad


KILL9_MODES = ["spawn", "escape", "hidden", "double", "holdfd", "sleep", "ok", "chatty"]


@test
def kill9_cycles(t):
    """kill -9 of the daemon at random points while jobs run, write profiles and spawn process
    trees: at each restart no corrupt journal or profile, no temp file, and no process of the
    earlier instance's jobs left (those in their group or environment, or in a recorded group)"""
    cycles = int(os.environ.get("FT_KILL9_CYCLES", "10"))
    rnd = random.Random(int(os.environ.get("FT_KILL9_SEED", "1717")))
    d = Daemon(t.tmp, "kill9c", "--max-queue", "1000", *gpuless_flags(t), env={"FAKE_GPUS": "0"})
    d.start()
    stats = {"jobs": 0, "tracked": 0, "untracked_alive": 0, "leftover": 0, "tmp_before": 0}
    problems = []
    t0 = time.time()
    try:
        for c in range(cycles):
            ids = []
            for _ in range(rnd.randint(3, 8)):
                kind = "bw" if rnd.random() < 0.3 else "decode"
                mode = rnd.choice(KILL9_MODES)
                args = {"isa": f"fake-{mode}", "cpu_iters": 2} if kind == "bw" else gpuless(t, mode)
                st, _, doc = d.json("POST", "/benchmark/start", {"kind": kind, "args": args})
                if st == 202:
                    ids.append(doc["id"])
            stats["jobs"] += len(ids)
            time.sleep(rnd.uniform(0.05, 1.5))
            seen = {}  # grandchild pid -> when the test first saw it
            for jid in ids:
                try:
                    for p in escaped_pids(d, jid):
                        seen.setdefault(p, time.time())
                except Exception:  # noqa
                    pass
            time.sleep(rnd.uniform(0.65, 1.0))  # what was seen is older than the record interval
            kill_at = time.time()
            d.stop(signal.SIGKILL)
            env_procs = [int(p) for p in os.listdir("/proc") if p.isdigit() and any(job_env_has(int(p), i) for i in ids)]
            stats["tmp_before"] += sum(1 for n in os.listdir(os.path.join(d.state, "jobs")) if ".tmp." in n)
            # what a kill -9 in the middle of an atomic write leaves (the window is too short to
            # hit by chance in a few cycles): a temp file beside the journal and the profiles
            os.makedirs(os.path.join(d.prof, "history", "host"), exist_ok=True)
            for p in (os.path.join(d.state, "jobs", f"{ids[0] if ids else 'x'}.json.tmp.Ab12Cd"),
                      os.path.join(d.prof, "GPU-x.json.tmp.Ab12Cd"),
                      os.path.join(d.prof, "history", "host", "1795000000000.json.tmp.Ab12Cd")):
                with open(p, "w") as f:
                    f.write('{"half')
            d.start()
            # what must be gone: everything that carries a job id, and grandchildren the daemon
            # had time to record (seen more than FTD_TRACK_NS + margin before the kill)
            must = set(env_procs) | {p for p, when in seen.items() if kill_at - when > 0.6}
            stats["tracked"] += len(must)
            alive = wait_gone(list(must), timeout=3)
            if alive:
                problems.append(f"cycle {c}: leftover processes {alive}")
                stats["leftover"] += len(alive)
            for p in seen:
                if p not in must and pid_alive(p):
                    stats["untracked_alive"] += 1
                    os.kill(p, signal.SIGKILL)
            problems += [f"cycle {c}: {b}" for b in _journal_ok(d.state)]
            hist = os.path.join(d.prof, "history")
            for sub in (os.listdir(hist) if os.path.isdir(hist) else []):
                problems += [f"cycle {c}: history temp file {sub}/{n}" for n in os.listdir(os.path.join(hist, sub))
                             if ".tmp." in n and os.path.exists(os.path.join(hist, sub, n))
                             and (time.sleep(0.5) or os.path.exists(os.path.join(hist, sub, n)))]
            for name in (os.listdir(d.prof) if os.path.isdir(d.prof) else []):
                if os.path.isdir(os.path.join(d.prof, name)):
                    continue
                if ".tmp." in name:
                    problems.append(f"cycle {c}: profile temp file {name}")
                    continue
                try:
                    with open(os.path.join(d.prof, name)) as f:
                        ensure(json.load(f)["version"] == 4)
                except (ValueError, KeyError, AssertionError) as e:
                    problems.append(f"cycle {c}: corrupt profile {name}: {e!r}")
        # the last instance finishes what is queued and stops cleanly
        st, _, lst = d.json("GET", "/benchmark/jobs?state=running&limit=1000")
        for j in lst["jobs"]:
            d.json("POST", f"/benchmark/jobs/{j['id']}/cancel")
        st, _, lst = d.json("GET", "/benchmark/jobs?state=queued&limit=1000")
        for j in lst["jobs"]:
            d.json("POST", f"/benchmark/jobs/{j['id']}/cancel")
    finally:
        rc = d.stop()
    elapsed = time.time() - t0
    print(f"# kill -9 cycles: {cycles} in {elapsed:.1f} s, {stats['jobs']} jobs, {stats['tracked']} processes of "
          f"the killed instances' jobs had to end, {stats['leftover']} survived the restart; "
          f"{stats['untracked_alive']} grandchildren seen < 0.6 s before the kill survived; "
          f"{stats['tmp_before']} temp files left by kill -9 itself (+{3 * cycles} planted), all swept; "
          f"{len(problems)} problems")
    ensure(not problems, lambda: problems)
    ensure(rc == 0, lambda: rc)


def main():
    t = Scratch("ftbenchd-h17-")
    only = [x for x in os.environ.get("FT_HARDEN_ONLY", "").split(",") if x]
    failed = 0
    plan(sum(1 for fn in results if not only or fn.__name__ in only))
    try:
        failed += run_tests(results, t, only=only, timed=True)
    finally:
        failed = finish(t.tmp, failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
