#!/usr/bin/python3
"""Integration tests of ftbenchd: the real daemon on loopback (free port, temp state and cache
dirs), fake workers (tests/fixtures/fakeworker.c) for GPU inventory, crashes, hangs and garbage.
Every response is checked against api/openapi.yaml (status documented, body valid).
Prints TAP: the plan "1..N" first, then "ok N - name" / "not ok N - name"; exit status 1 when
anything failed. Checks are ensure() calls, never bare `assert` (python -O / PYTHONOPTIMIZE would
remove them: a bare assert in any tests/integration/*.py is itself reported as a failure). Every
daemon started is stopped (SIGKILL as a last resort) however the run ends: a failed check, an
exception, SIGTERM from the test runner's timeout, SIGINT or SIGHUP. The daemon, the contract
and the runner are tests/lib/ftd_harness.py's, shared with the other Python tests.

Environment: BUILD (default build), FT_DAEMON_WRAP (e.g. "valgrind --leak-check=full ...")."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # ftd_harness
from ftd_harness import (BUILD, FAKE, FTBENCHD, GPU0, GPU1, LIVE, ROOT, SLOW, WRAP, Daemon,  # noqa: E402
                         Scratch, bare_asserts, ensure, expect_error, finish, on_signals, openapi_contract,
                         job_env_has, parse_sse, pid_alive, plan, run_tests, stop_all_daemons)

CONTRACT = openapi_contract()

# ------------------------------------------------------------------ tests

results = []


def test(fn):
    results.append(fn)
    return fn


def sse(d, jid, timeout=20):
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=timeout * SLOW)
    h = {"Authorization": "Bearer " + d.token} if d.token else {}
    c.request("GET", f"/benchmark/jobs/{jid}/events", headers=h)
    r = c.getresponse()
    ensure(r.status == 200)
    ensure(r.getheader("Content-Type").startswith("text/event-stream"))
    raw = r.read()
    CONTRACT.check("GET", f"/benchmark/jobs/{jid}/events", r.status, {k.lower(): v for k, v in r.getheaders()}, raw)
    c.close()
    return [(ev, data) for _, ev, data in parse_sse(raw) if ev]


def escaped_child_ends(d, j):
    """The process job j's worker left behind ("escaped child PID" in its log) is gone within 5 s."""
    log = d.req("GET", f"/benchmark/jobs/{j['id']}/log")[2].decode()
    child = int(re.search(r"escaped child (\d+)", log).group(1))
    deadline = time.time() + 5 * SLOW
    while pid_alive(child):
        ensure(time.time() < deadline, lambda: f"process {child} survived its job")
        time.sleep(0.05)


@test
def lifecycle_bw(t):
    """a CPU-only-style bw job: 202+Location, SSE replay and live, result, profile, log, metrics"""
    d = t.main
    job = d.submit("bw", {"cpu_iters": 4, "dtype": ["bf16", "fp8"], "threshold": 2.0})
    ensure(job["state"] in ("queued", "running") and job["host_exclusive"] is True)
    ensure(job["gpu"]["uuid"] == GPU0)
    st, h, _ = d.req("GET", job["links"]["self"])
    ensure(st == 200)
    events = sse(d, job["id"])
    kinds = [e for e, _ in events]
    ensure(kinds[0] == "state" and "progress" in kinds and "result" in kinds, lambda: kinds)
    ensure(events[-1] == ("state", {"state": "succeeded"}), lambda: events[-1])
    j = d.wait(job["id"])
    ensure(j["state"] == "succeeded" and j["exit_status"] == 0 and j["signal"] is None, lambda: j)
    ensure("--dtype=bf16,fp8" in j["argv"] and "--result-fd=3" in j["argv"], lambda: j["argv"])
    fake = j["result"]["fake"]
    ensure(fake["cuda_visible_devices"] == GPU0 and fake["cuda_device_order"] == "PCI_BUS_ID", lambda: fake)
    ensure(fake["notify_socket"] == "", "NOTIFY_SOCKET leaked into the worker")
    ensure(j["profile_path"] == os.path.join(d.prof, GPU0 + ".json") and os.path.exists(j["profile_path"]))
    st, _, prof = d.json("GET", f"/profiles/{GPU0}")
    ensure(st == 200 and prof["version"] == 4)
    st, _, lst = d.json("GET", "/profiles")
    ensure(any(p["uuid"] == GPU0 for p in lst["profiles"]))
    st, _, log = d.req("GET", f"/benchmark/jobs/{job['id']}/log")
    ensure(st == 200 and b"fakeworker bw" in log)
    # replay after the end gives the same story
    again = sse(d, job["id"])
    ensure([e for e, _ in again if e != "progress"][-2:] == ["result", "state"], lambda: again)
    st, _, m = d.req("GET", "/metrics")
    m = m.decode()
    ensure('ftbenchd_jobs_finished_total{kind="bw",state="succeeded"}' in m)
    # the profile's figures carry gpu first, then the GPU/CPU model and host name labels
    ensure(re.search(r'^ftbenchd_profile_cpu_stream_read_gbs\{gpu="%s",[^}]*\} 100\.5$' % GPU0, m, re.M), lambda: m)
    ensure("ftbenchd_queue_depth 0" in m)
    st, _, lj = d.json("GET", "/benchmark/jobs?state=succeeded&limit=5")
    ensure(st == 200 and any(x["id"] == job["id"] for x in lj["jobs"]) and "result" not in lj["jobs"][0])


@test
def disjoint_gpus_run_together(t):
    """cache-copy on GPU 0 and GPU 1 run side by side; /gpus shows the holders"""
    d = t.main
    a = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
    b = d.submit("cache-copy", {"models": "fake-sleep", "gpu": GPU1})
    d.wait(a["id"], ("running",))
    d.wait(b["id"], ("running",))
    st, _, g = d.json("GET", "/gpus")
    holders = {x["uuid"]: x["job"] for x in g["gpus"]}
    ensure(holders == {GPU0: a["id"], GPU1: b["id"]}, lambda: holders)
    for x in (a, b):
        st, _, c = d.json("POST", f"/benchmark/jobs/{x['id']}/cancel")
        ensure(st == 202 and c["cancel_requested"], lambda: c)
    for x in (a, b):
        j = d.wait(x["id"])
        ensure(j["state"] == "cancelled" and j["signal"] == 15 and j["exit_status"] == 143, lambda: j)


@test
def shared_gpu_and_host_fifo(t):
    """same GPU: the second waits; a host-exclusive bw waits for everything and nothing overtakes it"""
    d = t.main
    a = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
    d.wait(a["id"], ("running",))
    b = d.submit("cache-copy", {"repeat": 2, "gpu": 0})
    c = d.submit("bw", {"cpu_iters": 2, "gpu": 1})
    e = d.submit("cache-copy", {"repeat": 2, "gpu": 1})  # GPU 1 is free, but the bw before it wants the host
    time.sleep(0.4 * SLOW)
    for x in (b, c, e):
        ensure(d.job(x["id"])["state"] == "queued", lambda: d.job(x["id"]))
    ensure(d.job(e["id"])["queue_position"] == 2)
    d.json("POST", f"/benchmark/jobs/{a['id']}/cancel")
    jb, jc, je = d.wait(b["id"]), d.wait(c["id"]), d.wait(e["id"])
    ensure(jb["state"] == jc["state"] == je["state"] == "succeeded", lambda: (jb, jc, je))
    # bw ran alone: it started after b finished and e started after bw finished
    ensure(jc["started_at"] >= jb["finished_at"] and je["started_at"] >= jc["finished_at"], lambda: (jb, jc, je))


@test
def bw_all_gpus(t):
    """bw with gpu "all": holds both GPUs and the host, its worker sees both, one profile per GPU"""
    d = t.main
    a = d.submit("bw", {"isa": "fake-sleep", "gpu": "all", "engines": 2, "deployment": "isolated"})
    ensure(a["host_exclusive"] is True)
    d.wait(a["id"], ("running",))
    st, _, g = d.json("GET", "/gpus")
    holders = {x["uuid"]: x["job"] for x in g["gpus"]}
    ensure(holders == {GPU0: a["id"], GPU1: a["id"]} and g["host_job"] == a["id"], lambda: g)
    b = d.submit("cache-copy", {"repeat": 2, "gpu": 1})
    time.sleep(0.3 * SLOW)
    ensure(d.job(b["id"])["state"] == "queued", lambda: d.job(b["id"]))
    d.json("POST", f"/benchmark/jobs/{a['id']}/cancel")
    ja, jb = d.wait(a["id"]), d.wait(b["id"])
    ensure(ja["state"] == "cancelled" and jb["state"] == "succeeded", lambda: (ja, jb))
    ensure("--gpu=all" in ja["argv"] and "--engines=2" in ja["argv"] and "--deployment=isolated" in ja["argv"])
    c = d.submit("bw", {"cpu_iters": 2, "gpu": "all"})
    j = d.wait(c["id"])
    ensure(j["state"] == "succeeded", lambda: j)
    profs = j["result"]["profiles"]
    ensure([p["gpu"]["uuid"] for p in profs] == [GPU0, GPU1], lambda: profs)
    for p in profs:
        ensure(p["fake"]["cuda_visible_devices"] == GPU0 + "," + GPU1, lambda: p["fake"])
    for u in (GPU0, GPU1):
        st, _, prof = d.json("GET", f"/profiles/{u}")
        ensure(st == 200 and prof["gpu"]["uuid"] == u, lambda: prof)
    ensure(j["profile_path"] and os.path.exists(j["profile_path"]))
    expect_error(d, "POST", "/benchmark/start", 400, "unknown_gpu", "args.gpu",
                 body={"kind": "cache-copy", "args": {"gpu": "all"}})


@test
def cancel_queued_running_finished(t):
    d = t.main
    a = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
    b = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
    d.wait(a["id"], ("running",))
    st, _, jb = d.json("POST", f"/benchmark/jobs/{b['id']}/cancel")
    ensure(st == 200 and jb["state"] == "cancelled", lambda: jb)
    st, _, ja = d.json("POST", f"/benchmark/jobs/{a['id']}/cancel")
    ensure(st == 202)
    ja = d.wait(a["id"])
    ensure(ja["state"] == "cancelled")
    expect_error(d, "POST", f"/benchmark/jobs/{a['id']}/cancel", 409, "job_finished")
    expect_error(d, "POST", "/benchmark/jobs/0123456789abcdef/cancel", 404, "not_found")
    events = sse(d, b["id"])
    ensure(events[-1] == ("state", {"state": "cancelled"}), lambda: events)


@test
def timeout_and_hang(t):
    """timeout: SIGTERM; a worker that ignores SIGTERM gets SIGKILL after the grace"""
    d = t.main
    a = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0}, timeout_s=1)
    b = d.submit("cache-copy", {"models": "fake-hang", "gpu": 1}, timeout_s=1)
    ja, jb = d.wait(a["id"]), d.wait(b["id"])
    ensure(ja["state"] == "timed_out" and ja["signal"] == 15, lambda: ja)
    ensure(jb["state"] == "timed_out" and jb["signal"] == 9 and jb["exit_status"] == 137, lambda: jb)
    ensure("timed out" in ja["error"])


@test
def bad_workers(t):
    """crash, garbage, unknown type, oversize line, error message, no result: failed, daemon fine"""
    d = t.main
    cases = {"crash": ("signal", 11), "garbage": ("error", "not JSON"), "unknown": ("error", "unknown message type"),
             "huge": ("error", "max-result-line"), "fail": ("error", "fake failure"),
             "noresult": ("error", "without a result")}
    ids = {}
    for i, mode in enumerate(cases):
        ids[mode] = d.submit("cache-copy", {"models": f"fake-{mode}", "gpu": i % 2})["id"]
    for mode, (key, want) in cases.items():
        j = d.wait(ids[mode], timeout=30)
        ensure(j["state"] == "failed", lambda: (mode, j))
        if key == "signal":
            ensure(j["signal"] == want and j["exit_status"] == 128 + want, lambda: j)
        else:
            ensure(want in (j["error"] or ""), lambda: (mode, j["error"]))
    ensure(d.req("GET", "/health")[0] == 200)


@test
def chatty_worker_log_capped(t):
    d = t.main
    j = d.wait(d.submit("cache-copy", {"models": "fake-chatty", "repeat": 1})["id"])
    ensure(j["state"] == "succeeded", lambda: j)
    st, _, log = d.req("GET", f"/benchmark/jobs/{j['id']}/log")
    ensure(len(log) <= 65536 + 200 and b"log truncated" in log, lambda: len(log))


@test
def escaped_grandchild(t):
    """a worker leaves a process in its own session holding its stdout: the job still ends and
    that process is killed (it carries the job's FTBENCHD_JOB_ID)"""
    d = t.main
    j = d.wait(d.submit("cache-copy", {"models": "fake-escape", "repeat": 1})["id"], timeout=30)
    ensure(j["state"] == "succeeded", lambda: j)
    escaped_child_ends(d, j)


@test
def pipes_held_by_a_stranger(t):
    """a process in its own session with an empty environment holds the worker's stdout after the
    worker exited: the daemon (a child subreaper) still finds it below itself, kills it, and the
    job finishes without waiting for the 5 s pipe grace"""
    d = t.main
    t0 = time.time()
    j = d.wait(d.submit("cache-copy", {"models": "fake-hidden", "repeat": 1})["id"], timeout=30)
    ensure(j["state"] == "succeeded" and time.time() - t0 < 4 * SLOW, lambda: (j, time.time() - t0))
    escaped_child_ends(d, j)


@test
def json_bodies_end_in_newline(t):
    """Every JSON body is one line ending in a newline (a shell prompt after `curl` starts on its own
    line; line-reading clients get the whole object): a document, a list, an error"""
    d = t.main
    for path, want in (("/health", 200), ("/benchmark/jobs", 200), ("/benchmark/jobs/0123456789abcdef", 404),
                       ("/profiles", 200)):
        st, h, raw = d.req("GET", path)
        ensure(st == want and h["content-type"].startswith("application/json"), lambda: (path, st, h))
        ensure(raw.endswith(b"\n") and raw.count(b"\n") == 1 and json.loads(raw), lambda: (path, raw[-80:]))


@test
def idempotency(t):
    d = t.main
    body = {"kind": "cache-copy", "args": {"repeat": 1}}
    st, h1, a = d.json("POST", "/benchmark/start", body, headers={"Idempotency-Key": "k-1"})
    st2, h2, b = d.json("POST", "/benchmark/start", body, headers={"Idempotency-Key": "k-1"})
    ensure(st == st2 == 202 and a["id"] == b["id"] and h2.get("idempotent-replayed") == "true", lambda: (a, b))
    expect_error(d, "POST", "/benchmark/start", 409, "idempotency_conflict",
                 body={"kind": "cache-copy", "args": {"repeat": 2}}, headers={"Idempotency-Key": "k-1"})
    expect_error(d, "POST", "/benchmark/start", 400, "invalid_argument", "Idempotency-Key",
                 body=body, headers={"Idempotency-Key": "x" * 200})
    d.wait(a["id"])


@test
def bad_inputs(t):
    """every bad input gets its documented 4xx and the daemon keeps serving"""
    d = t.main
    P = "/benchmark/start"
    st, _, doc = d.json("POST", P, raw=b"{not json", headers={"Content-Type": "application/json"})
    ensure(st == 400 and doc["error"]["code"] == "invalid_json", lambda: doc)
    st, _, doc = d.json("POST", P, raw=b"[1,2]", headers={"Content-Type": "application/json"})
    ensure(st == 400 and doc["error"]["code"] == "invalid_request")
    st, _, doc = d.json("POST", P, raw=b'{"kind":"bw"}', headers={"Content-Type": "text/plain"})
    ensure(st == 415 and doc["error"]["code"] == "unsupported_media_type")
    st, _, doc = d.json("POST", P, raw=b'{"kind":"bw"}')
    ensure(st == 415)
    big = b'{"kind":"bw","args":{"model":"' + b"a" * 70000 + b'"}}'
    st, _, doc = d.json("POST", P, raw=big, headers={"Content-Type": "application/json"})
    ensure(st == 413 and doc["error"]["code"] == "body_too_large", lambda: doc)
    expect_error(d, "POST", P, 400, "unknown_kind", "kind", body={"kind": "mine-bitcoin"})
    expect_error(d, "POST", P, 400, "missing_field", "kind", body={"args": {}})
    expect_error(d, "POST", P, 400, "invalid_argument", "kind", body={"kind": 3})
    expect_error(d, "POST", P, 400, "unknown_field", "colour", body={"kind": "bw", "colour": "red"})
    expect_error(d, "POST", P, 400, "unknown_field", "args.colour", body={"kind": "bw", "args": {"colour": 1}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args", body={"kind": "bw", "args": [1]})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.cpu_iters", body={"kind": "bw", "args": {"cpu_iters": "8"}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.cpu_iters", body={"kind": "bw", "args": {"cpu_iters": 0}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.cpu_iters", body={"kind": "bw", "args": {"cpu_iters": 2.5}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.threshold", body={"kind": "bw", "args": {"threshold": -1}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.dtype", body={"kind": "bw", "args": {"dtype": "bf16; rm -rf /"}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.dtype", body={"kind": "bw", "args": {"dtype": [1]}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.miss_rates",
                 body={"kind": "cache-copy", "args": {"miss_rates": [0.5, 2]}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.no_drop_cache",
                 body={"kind": "load-weights", "args": {"model": t.models + "/m", "no_drop_cache": "yes"}})
    expect_error(d, "POST", P, 400, "invalid_argument", "timeout_s", body={"kind": "bw", "timeout_s": 0})
    expect_error(d, "POST", P, 400, "unknown_gpu", "args.gpu", body={"kind": "bw", "args": {"gpu": 7}})
    expect_error(d, "POST", P, 400, "unknown_gpu", "args.gpu", body={"kind": "bw", "args": {"gpu": "GPU-ffff"}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.gpu", body={"kind": "bw", "args": {"gpu": [0]}})
    expect_error(d, "POST", P, 400, "missing_field", "args.model", body={"kind": "load-weights", "args": {}})
    expect_error(d, "POST", P, 403, "forbidden", "args.model", body={"kind": "load-weights", "args": {"model": "/etc"}})
    expect_error(d, "POST", P, 403, "forbidden", "args.model",
                 body={"kind": "load-weights", "args": {"model": t.models + "/../.."}})
    expect_error(d, "POST", P, 403, "forbidden", "args.model",
                 body={"kind": "load-weights", "args": {"model": t.models + "/escape"}})  # a symlink out
    expect_error(d, "POST", P, 403, "forbidden", "args.server",
                 body={"kind": "decode", "args": {"model": t.models + "/m", "server": "rogue"}})
    expect_error(d, "POST", P, 403, "forbidden", "args.url",
                 body={"kind": "decode", "args": {"model": t.models + "/m", "url": "http://example.com:80/v1"}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.url",
                 body={"kind": "decode", "args": {"model": t.models + "/m", "url": "file:///etc/passwd"}})
    expect_error(d, "POST", P, 400, "missing_field", "args.server",
                 body={"kind": "decode", "args": {"model": t.models + "/m"}})
    expect_error(d, "POST", P, 400, "missing_field", "args.model", body={"kind": "decode", "args": {"server": "ft"}})
    expect_error(d, "POST", P, 400, "invalid_argument", "args.server",
                 body={"kind": "decode", "args": {"model": t.models + "/m", "server": "ft", "url": "http://127.0.0.1:9/"}})
    _, doc = expect_error(d, "POST", P, 400, "invalid_argument", "args.compare",
                          body={"kind": "decode", "args": {"model": t.models + "/m", "url": "http://localhost:30000",
                                                           "compare": "moe-backend=offload,hybrid"}})
    ensure("needs args.server, not args.url" in doc["error"]["message"], lambda: doc)
    expect_error(d, "GET", P, 405, "method_not_allowed")
    expect_error(d, "DELETE", "/benchmark/jobs", 405, "method_not_allowed")
    expect_error(d, "GET", "/nope", 404, "not_found")
    expect_error(d, "GET", "/benchmark/jobs/zzz", 404, "not_found")
    expect_error(d, "GET", "/benchmark/jobs/0123456789abcdef", 404, "not_found")
    expect_error(d, "GET", "/benchmark/jobs/0123456789abcdef/log", 404, "not_found")
    expect_error(d, "GET", "/benchmark/jobs/0123456789abcdef/events", 404, "not_found")
    expect_error(d, "GET", "/profiles/GPU-none", 404, "not_found")
    expect_error(d, "GET", "/profiles/..%2F..%2Fetc%2Fpasswd", 404, "not_found")
    expect_error(d, "GET", "/benchmark/jobs?state=bogus", 400, "invalid_argument", "state")
    expect_error(d, "GET", "/benchmark/jobs?limit=0", 400, "invalid_argument", "limit")
    st, _, doc = d.json("POST", "/benchmark/jobs/0123456789abcdef/cancel", raw=b"x" * 70000,
                        headers={"Content-Type": "application/json"})
    ensure(st == 413 and doc["error"]["code"] == "body_too_large", lambda: doc)
    # the good ones still work
    lw = d.submit("load-weights", {"model": t.models + "/m", "modes": ["baseline"], "gpu": 1})
    ensure(any(a.startswith("--model=" + os.path.realpath(t.models)) for a in lw["argv"]), lambda: lw["argv"])
    dc = d.submit("decode", {"model": t.models + "/m", "server": "ft", "backends": ["offload", "hybrid"]})
    ensure("--server-cmd=ft serve {model} --port {port}" in dc["argv"] and "--backend=offload,hybrid" in dc["argv"])
    dm = d.submit("decode", {"url": "http://localhost:30000", "max_tokens": 64, "memory_ratio": 0.8, "greedy": True})
    ensure({"--tokens=64", "--mem-ratio=0.8", "--greedy"} <= set(dm["argv"]), lambda: dm["argv"])
    d.wait(dm["id"])
    du = d.submit("decode", {"model": t.models + "/m", "url": "http://127.0.0.1:9/v1"})
    for x in (lw, dc, du):
        d.wait(x["id"])
    ensure(d.req("GET", "/health")[0] == 200)


@test
def queue_limit(t):
    d = Daemon(t.tmp, "queue", "--max-queue", "2").start()
    try:
        a = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
        d.wait(a["id"], ("running",))
        d.submit("cache-copy", {"repeat": 1, "gpu": 0})
        d.submit("cache-copy", {"repeat": 1, "gpu": 0})
        h, _ = expect_error(d, "POST", "/benchmark/start", 429, "queue_full", body={"kind": "cache-copy"})
        ensure("retry-after" in h)
    finally:
        ensure(d.stop() == 0)


@test
def connection_limit(t):
    """max-connections streams fill the daemon; the next request is answered 503 (not closed) while
    /health is still answered; then it serves again"""
    d = Daemon(t.tmp, "connlimit", "--max-connections", "3").start()
    held = []
    job = d.submit("cache-copy", {"models": "fake-sleep"})
    try:
        for _ in range(3):  # three SSE streams of a running job: each surely holds a connection
            c = socket.create_connection(("127.0.0.1", d.port))
            c.sendall(f"GET /benchmark/jobs/{job['id']}/events HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            c.settimeout(5 * SLOW)
            ensure(b"200" in c.recv(4096).split(b"\r\n")[0])
            held.append(c)
        st, h, _ = d.req("GET", "/benchmark/jobs", timeout=5)
        ensure(st == 503 and "retry-after" in h, lambda: (st, h))
        ensure(d.req("GET", "/health", timeout=5)[0] == 200)
    finally:
        for c in held:
            c.close()
    try:  # the streams of the clients that left end within about a second (503 busy until then)
        time.sleep(1.5)
        deadline = time.time() + 5 * SLOW
        while True:
            try:
                st = d.json("POST", f"/benchmark/jobs/{job['id']}/cancel")[0]
                if st != 503:
                    break
            except (OSError, http.client.HTTPException):
                pass
            ensure(time.time() < deadline, "the daemon did not serve again")
            time.sleep(0.05)
        ensure(st == 202, lambda: st)
    finally:
        ensure(d.stop() == 0)


@test
def tokens(t):
    tok = os.path.join(t.tmp, "token.txt")
    with open(tok, "w") as f:
        f.write("s3cret-token-0123456789\n")
    d = Daemon(t.tmp, "token", "--token-file", tok).start()
    try:
        h, _ = expect_error(d, "GET", "/benchmark/jobs", 401, "unauthorized")
        ensure(h.get("www-authenticate") == "Bearer")
        expect_error(d, "GET", "/benchmark/jobs", 401, "unauthorized", headers={"Authorization": "Bearer wrong"})
        expect_error(d, "GET", "/benchmark/jobs", 401, "unauthorized",
                     headers={"Authorization": "Bearer s3cret-token-012345678"})
        expect_error(d, "POST", "/benchmark/start", 401, "unauthorized", body={"kind": "bw"},
                     headers={"Authorization": "Basic czNjcmV0"})
        ensure(d.req("GET", "/health")[0] == 200)  # liveness needs no token
        for m, path in (("GET", "/benchmark/jobs/0123456789abcdef"), ("GET", "/benchmark/jobs/0123456789abcdef/events"),
                        ("GET", "/benchmark/jobs/0123456789abcdef/log"), ("POST", "/benchmark/jobs/0123456789abcdef/cancel"),
                        ("GET", "/profiles"), ("GET", f"/profiles/{GPU0}"), ("GET", "/gpus"), ("GET", "/metrics")):
            expect_error(d, m, path, 401, "unauthorized")
        # refused requests with a body ran nothing: no job queued by any of them
        for body in ({"kind": "cache-copy", "args": {"repeat": 1}}, {"kind": "bw", "args": {"cpu_iters": 1}}):
            expect_error(d, "POST", "/benchmark/start", 401, "unauthorized", body=body)
        d.token = "s3cret-token-0123456789"
        ensure(d.get("/benchmark/jobs")["jobs"] == [], lambda: d.get("/benchmark/jobs"))
        ensure(d.req("GET", "/benchmark/jobs")[0] == 200)
        ensure(d.req("GET", "/metrics")[0] == 200)
    finally:
        ensure(d.stop() == 0)


@test
def config_check(t):
    def run(*a):
        return subprocess.run([FTBENCHD, *a], capture_output=True, text=True, timeout=10)
    ok = run("-n", "--state-dir", t.tmp + "/x", "--worker", FAKE)
    ensure(ok.returncode == 0, lambda: ok.stderr)
    r = run("-n", "--listen", "0.0.0.0:8377")
    ensure(r.returncode == 2 and "token" in r.stderr, lambda: r.stderr)
    bad = os.path.join(t.tmp, "bad.conf")
    with open(bad, "w") as f:
        f.write("max-queue = 12\nmax-queue = lots\n")
    r = run("-n", "-c", bad)
    ensure(r.returncode == 2 and "bad.conf:2" in r.stderr, lambda: r.stderr)
    with open(bad, "w") as f:
        f.write("no-such-option = 1\n")
    r = run("-n", "-c", bad)
    ensure(r.returncode == 2 and "unknown option" in r.stderr)
    r = run("--max-queue", "0", "-n")
    ensure(r.returncode == 2)
    # -n resolves and binds the listen address (#17 defect 12)
    r = run("-n", "--listen", "127.0.0.1:99999")
    ensure(r.returncode == 2 and "cannot parse" in r.stderr, lambda: r.stderr)
    tok = os.path.join(t.tmp, "check-token.txt")
    with open(tok, "w") as f:
        f.write("0123456789abcdef0123\n")
    r = run("-n", "--listen", "no-such-host.invalid:8377", "--token-file", tok)
    ensure(r.returncode == 2 and "does not resolve" in r.stderr, lambda: r.stderr)
    r = run("-n", "--listen", "192.0.2.1:8377", "--token-file", tok)  # TEST-NET-1: not on this host
    ensure(r.returncode == 2 and "cannot bind" in r.stderr and "not an address of this host" in r.stderr, lambda: r.stderr)
    r = run("-n", "--listen", "localhost:0")
    ensure(r.returncode == 0, lambda: r.stderr)
    r = run("-n", "--listen", f"127.0.0.1:{t.main.port}")  # in use by the running daemon: a warning
    ensure(r.returncode == 0 and "in use" in r.stderr, lambda: r.stderr)
    # each refused value: exit 2 and one line naming the option, the value and what it takes
    short_tok = os.path.join(t.tmp, "short-token.txt")
    with open(short_tok, "w") as f:
        f.write("short\n")
    for args, said in ((("--rebench", "weekly"), "ftbenchd: rebench 'weekly': expected on-change, never, or an interval "
                        "such as 7d, 12h, 30m, 3600s\n"),
                       (("--profile-max-age", "soon"), "ftbenchd: profile-max-age 'soon': expected an interval such as "
                        "30d, 12h, 3600s\n"),
                       (("--deployment", "both"), "ftbenchd: deployment 'both': give isolated or concurrent (or nothing)\n"),
                       (("--job-timeout", "700", "--max-job-timeout", "600"), "ftbenchd: job-timeout 700 is above "
                        "max-job-timeout 600\n"),
                       (("--token-file", short_tok), f"ftbenchd: token-file {short_tok}: the token must have at least "
                        "16 characters\n"),
                       (("--max-queue", "lots"), "ftbenchd: --max-queue: max-queue: 'lots' is not an integer in [1, 100000]\n"),
                       (("--state-dir",), "ftbenchd: --state-dir needs a value\n"),
                       (("extra",), "ftbenchd: unexpected argument 'extra' (see --help)\n"),
                       (("--no-such",), "ftbenchd: unknown option '--no-such' (see --help)\n")):
        r = run("-n", *args)
        ensure(r.returncode == 2 and said in r.stderr, lambda: (args, r.returncode, r.stderr))
    r = run("--help")
    ensure(r.returncode == 0 and "--state-dir" in r.stdout and "--token-file" in r.stdout)
    r = run("--version")  # says it and ends: no daemon starts
    ensure(r.returncode == 0 and re.fullmatch(r"ftbenchd \d+\.\d+\.\d+\n", r.stdout) and not r.stderr, lambda: r)
    dump = run("--dump-config").stdout
    with open(os.path.join(ROOT, "etc", "ftbenchd.conf")) as f:
        ensure(f.read() == dump, "etc/ftbenchd.conf differs from `ftbenchd --dump-config`")
    good = os.path.join(t.tmp, "good.conf")
    with open(good, "w") as f:
        f.write(dump)
    r = run("-n", "-c", good)
    ensure(r.returncode == 0, lambda: r.stderr)


@test
def retention(t):
    d = Daemon(t.tmp, "retain", "--retain-jobs", "2").start()
    try:
        ids = [d.wait(d.submit("cache-copy", {"repeat": 1})["id"])["id"] for _ in range(4)]
        time.sleep(0.2)
        d.stop()
        d.start()  # retention also runs at start
        st, _, lst = d.json("GET", "/benchmark/jobs")
        have = [j["id"] for j in lst["jobs"]]
        ensure(have == ids[:1:-1], lambda: (have, ids))
        ensure(sorted(os.listdir(os.path.join(d.state, "jobs"))) == sorted(i + ".json" for i in ids[2:]))
    finally:
        d.stop()
    # several finished jobs pruned in a row (at the start after --retain-jobs went down): the
    # newest stay, in order, and the list goes on working (a job after it, its file)
    d = Daemon(t.tmp, "retain-row").start()
    try:
        ids = [d.wait(d.submit("cache-copy", {"repeat": 1})["id"])["id"] for _ in range(5)]
        d.stop()
        d.extra = ("--retain-jobs", "2")
        d._args()
        d.start()
        have = [j["id"] for j in d.get("/benchmark/jobs")["jobs"]]
        ensure(have == ids[:2:-1], lambda: (have, ids))
        new = d.wait(d.submit("cache-copy", {"repeat": 1})["id"])["id"]
        time.sleep(0.2)
        have = [j["id"] for j in d.get("/benchmark/jobs")["jobs"]]
        ensure(have == [new, ids[-1]], lambda: (have, new, ids))
        ensure(sorted(os.listdir(os.path.join(d.state, "jobs"))) == sorted([new + ".json", ids[-1] + ".json"]))
        for gone in ids[:-1]:
            expect_error(d, "GET", f"/benchmark/jobs/{gone}", 404, "not_found")
    finally:
        d.stop()
    d = Daemon(t.tmp, "retain-age", "--retain-age", "1").start()
    try:
        old = d.wait(d.submit("cache-copy", {"repeat": 1})["id"])["id"]
        time.sleep(1.5)
        d.stop()
        d.start()
        expect_error(d, "GET", f"/benchmark/jobs/{old}", 404, "not_found")
        ensure(os.listdir(os.path.join(d.state, "jobs")) == [] and os.listdir(os.path.join(d.state, "logs")) == [])
    finally:
        d.stop()


@test
def kill9_then_restart(t):
    """kill -9 mid-job: at restart the job is interrupted, journal and profiles intact, no orphan"""
    d = Daemon(t.tmp, "kill9").start()
    done = d.wait(d.submit("bw", {"cpu_iters": 1})["id"])
    ensure(done["state"] == "succeeded")
    prof = open(done["profile_path"]).read()
    q = d.submit("cache-copy", {"models": "fake-spawn", "gpu": 0})
    queued = d.submit("cache-copy", {"repeat": 1, "gpu": 0})
    j = d.wait(q["id"], ("running",))
    deadline = time.time() + 5 * SLOW
    while not (d.job(q["id"]).get("progress") or {}).get("label", "").startswith("child"):
        ensure(time.time() < deadline)
        time.sleep(0.05)
    grandchild = int(d.job(q["id"])["progress"]["label"].split()[1])
    worker = [int(p) for p in os.listdir("/proc") if p.isdigit() and job_env_has(int(p), q["id"])]
    ensure(grandchild in worker and len(worker) == 2, lambda: worker)
    d.stop(signal.SIGKILL)
    time.sleep(0.3)
    d.start()
    try:
        j = d.job(q["id"])
        ensure(j["state"] == "interrupted", lambda: j)
        for p in worker:
            ensure(not pid_alive(p), lambda: f"process {p} of the interrupted job survived")
        ensure(d.job(done["id"])["state"] == "succeeded")
        ensure(open(done["profile_path"]).read() == prof)
        jq = d.wait(queued["id"])  # a queued job survives the crash and runs
        ensure(jq["state"] == "succeeded", lambda: jq)
        events = sse(d, q["id"])
        ensure(events[-1] == ("state", {"state": "interrupted"}), lambda: events)
    finally:
        d.stop()


def events_with_ids(d, jid, last=None):
    """A finished job's whole event stream: [(id, event, data)] (from Last-Event-ID last)."""
    h = {"Last-Event-ID": str(last)} if last is not None else {}
    st, _, raw = d.req("GET", f"/benchmark/jobs/{jid}/events", headers=h)
    ensure(st == 200, lambda: f"events of {jid}: {st}")
    return parse_sse(raw)


def live_events(d, jid, n, timeout=20):
    """The first n events of a job's live stream (the connection then dropped): [(id, event, data)]."""
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=timeout * SLOW)
    h = {"Authorization": "Bearer " + d.token} if d.token else {}
    c.request("GET", f"/benchmark/jobs/{jid}/events", headers=h)
    r = c.getresponse()
    ensure(r.status == 200, lambda: f"events of {jid}: {r.status}")
    out, f = [], {}
    while len(out) < n:
        line = r.readline().decode()
        ensure(line != "", lambda: f"the stream of {jid} ended after {out}")
        line = line.rstrip("\n")
        if not line:
            if "data" in f:
                out.append((f.get("id"), f.get("event"), json.loads(f["data"])))
            f = {}
        elif not line.startswith(":") and ":" in line:
            k, v = line.split(":", 1)
            f[k] = v[1:] if v.startswith(" ") else v
    c.close()
    return out


@test
def identity_across_restarts(t):
    """Restarts (kill -9, SIGTERM, kill -9 while a job runs): job ids never reused, the list in
    submission order (newest first) after each journal reload; event ids daemon-wide (no id in
    two streams) and strictly increasing, within every stream and across restarts: no id handed
    out before a restart (the running job's progress included) is handed out again; a finished
    job's result, error and final state keep their ids and data over every restart; Last-Event-ID
    resumes after the id given, also with an id from before the restart (the rest, once)"""
    d = Daemon(t.tmp, "identity").start()
    order, seen, handed = [], {}, set()
    try:
        for rnd, sig in enumerate((signal.SIGKILL, signal.SIGTERM, signal.SIGKILL)):
            for _ in range(2):
                order.append(d.submit("bw", {"cpu_iters": 1})["id"])
            for jid in order[-2:]:
                ensure(d.wait(jid)["state"] == "succeeded")
            long = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})["id"]
            order.append(long)
            live = live_events(d, long, 3)  # queued, running, its progress: a client that then drops
            ensure([e for _, e, _ in live] == ["state", "state", "progress"], lambda: live)
            for jid in order:
                if jid != long and jid not in seen:
                    seen[jid] = events_with_ids(d, jid)
            for evs in list(seen.values()) + [live]:
                handed |= {int(i) for i, _, _ in evs}
            top = max(handed)
            d.stop(sig)
            d.start()
            ensure(d.wait(long)["state"] in ("interrupted", "succeeded"), lambda: d.job(long))
            ev = events_with_ids(d, long)
            # what the restart ended: new events, above every id handed out before
            ensure(ev and all(int(i) > top for i, _, _ in ev), lambda: f"round {rnd}: ids up to {top} before, {ev} after")
            ensure(events_with_ids(d, long, last=int(live[-1][0])) == ev,
                   lambda: f"round {rnd}: resuming {long} after {live[-1][0]} (from before the restart)")
            seen[long] = ev
            lst = d.get("/benchmark/jobs?limit=10000")["jobs"]
            ids = [j["id"] for j in lst]
            ensure(len(set(ids)) == len(ids), lambda: f"round {rnd}: a job id twice: {ids}")
            ensure(ids[::-1] == order, lambda: f"round {rnd}: list {ids[::-1]}, submitted {order}")
            every = []
            for jid in order:
                ev = events_with_ids(d, jid)
                n = [int(e[0]) for e in ev]
                every += n
                ensure(ev and n == sorted(set(n)), lambda: f"round {rnd}: {jid}'s event ids {n}")
                # a finished job's list after a reload: its result/error and final state, with the
                # ids and data they had before
                was = seen[jid]
                want = [x for x in was if x[1] in ("result", "error")] + [was[-1]]
                ensure(ev == want and was[-1][1] == "state",
                       lambda: f"round {rnd}: {jid}'s events changed over a restart:\n{was}\n{ev}")
                k = len(ev) // 2
                ensure(events_with_ids(d, jid, last=n[k - 1] if k else 0) == ev[k:],
                       lambda: f"round {rnd}: {jid} from Last-Event-ID {n[k - 1] if k else 0}")
                first = int(was[0][0])  # a client that saw only the first event before the restart
                ensure(events_with_ids(d, jid, last=first) == [x for x in ev if int(x[0]) > first],
                       lambda: f"round {rnd}: {jid} from Last-Event-ID {first}")
                ensure(events_with_ids(d, jid, last=n[-1]) == [], lambda: f"round {rnd}: {jid} after its last id")
            ensure(len(every) == len(set(every)), lambda: f"round {rnd}: an event id in two streams: {sorted(every)}")
        # a job after the last restart: every id above all handed out before
        jid = d.submit("cache-copy", {"repeat": 1})["id"]
        d.wait(jid)
        ev = events_with_ids(d, jid)
        handed |= {int(i) for evs in seen.values() for i, _, _ in evs}
        ensure(ev and min(int(i) for i, _, _ in ev) > max(handed), lambda: f"new job's ids {ev}, before up to {max(handed)}")
        # the reservation file lost (every job finished): the journal's recorded ids still floor them
        handed |= {int(i) for i, _, _ in ev}
        d.stop()
        os.unlink(os.path.join(d.state, "event-ids"))
        d.start()
        jid = d.submit("cache-copy", {"repeat": 1})["id"]
        d.wait(jid)
        ev = events_with_ids(d, jid)
        ensure(ev and min(int(i) for i, _, _ in ev) > max(handed), lambda: f"ids {ev} after the reservation was lost, "
               f"before up to {max(handed)}")
    finally:
        d.stop()


@test
def graceful_sigterm(t):
    d = Daemon(t.tmp, "term", "--kill-grace", "3").start()
    a = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
    b = d.submit("cache-copy", {"models": "fake-hang", "gpu": 1})
    c = d.submit("cache-copy", {"repeat": 1, "gpu": 0})
    d.wait(a["id"], ("running",))
    d.wait(b["id"], ("running",))
    deadline = time.time() + 5 * SLOW  # the hanging worker ignores SIGTERM from its first progress on
    while (d.job(b["id"])["progress"] or {}).get("label") != "hanging":
        ensure(time.time() < deadline)
        time.sleep(0.02)
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and (job_env_has(int(p), a["id"]) or job_env_has(int(p), b["id"]))]
    ensure(len(pids) == 2)
    d.proc.send_signal(signal.SIGTERM)  # the hanging worker keeps the daemon in its 3 s grace period
    deadline = time.time() + 2
    while True:  # readiness probes read the code: 503 while stopping
        st, hdrs, h = d.json("GET", "/health")
        if h["status"] == "stopping":
            ensure(st == 503 and "retry-after" in hdrs, lambda: (st, hdrs))
            break
        ensure(time.time() < deadline)
        time.sleep(0.02)
    expect_error(d, "POST", "/benchmark/start", 503, "shutting_down", body={"kind": "cache-copy"})
    rc = d.stop()
    ensure(rc == 0, lambda: rc)
    for p in pids:
        ensure(not pid_alive(p))
    recs = {}
    for name in os.listdir(os.path.join(d.state, "jobs")):
        with open(os.path.join(d.state, "jobs", name)) as f:
            r = json.load(f)
        recs[r["id"]] = r
    ensure(recs[a["id"]]["state"] == "interrupted" and recs[b["id"]]["state"] == "interrupted", lambda: recs)
    ensure(recs[b["id"]]["signal"] == 9)
    ensure(recs[c["id"]]["state"] == "queued")
    d.start()
    try:
        ensure(d.wait(c["id"])["state"] == "succeeded")
    finally:
        d.stop()


@test
def no_gpu_host(t):
    """a GPU-less host: no gpu argument needed, the bw profile is host.json, a GPU request is 400"""
    d = Daemon(t.tmp, "nogpu", env={"FAKE_GPUS": "0"}).start()
    try:
        st, _, g = d.json("GET", "/gpus")
        ensure(g["gpus"] == [] and "no CUDA" in g["reason"], lambda: g)
        j = d.wait(d.submit("bw", {"cpu_iters": 1})["id"])
        ensure(j["gpu"] is None and j["profile_path"].endswith("/host.json"), lambda: j)
        ensure(j["result"]["fake"]["cuda_visible_devices"] == "")
        expect_error(d, "POST", "/benchmark/start", 400, "unknown_gpu", "args.gpu", body={"kind": "bw", "args": {"gpu": 0}})
        ensure(d.json("GET", "/profiles/host")[0] == 200)
        # the status page says there is no GPU and why, in its own paragraph; the one profile is
        # shown unfolded
        st, _, page = d.req("GET", "/")
        ensure(len(re.findall(r'<details class="profile" data-uuid="[^"]*"( open)?>', page.decode())) == 1
               and re.search(r'<details class="profile" data-uuid="[^"]*" open>', page.decode()),
               lambda: re.findall(r'<details class="profile"[^>]*>', page.decode()))
        ensure(st == 200 and '<p id="no-gpus" class="muted">No GPU: no CUDA device (fake)</p>' in page.decode(),
               lambda: page.decode()[:2000])
    finally:
        d.stop()


@test
def missing_worker(t):
    d = Daemon(t.tmp, "noworker", worker="/nonexistent/ftbench").start()
    try:
        j = d.wait(d.submit("cache-copy", {"repeat": 1})["id"])
        ensure(j["state"] == "failed" and "cannot execute" in j["error"], lambda: j)
    finally:
        d.stop()


@test
def concurrent_clients(t):
    """many clients at once: submissions, reads and SSE streams"""
    import threading
    d = t.main
    errors = []
    ids = []

    def worker(n):
        try:
            for i in range(5):
                st, _, doc = d.json("POST", "/benchmark/start", {"kind": "cache-copy", "args": {"repeat": 1, "gpu": (n + i) % 2}},
                                    headers={"Idempotency-Key": f"c{n}-{i}"})
                ensure(st == 202, lambda: doc)
                ids.append(doc["id"])
                ensure(d.req("GET", f"/benchmark/jobs/{doc['id']}")[0] == 200)
        except Exception as e:  # noqa
            errors.append(e)
    th = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    ensure(not errors, lambda: errors)
    ensure(len(set(ids)) == 40)
    for i in ids:
        ensure(d.wait(i, timeout=60)["state"] == "succeeded")


@test
def systemd_notify_and_watchdog(t):
    """READY=1 once listening, WATCHDOG=1 at half WATCHDOG_USEC, STATUS= with the queue, STOPPING=1;
    the worker does not inherit NOTIFY_SOCKET"""
    path = os.path.join(t.tmp, "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(path)
    ns.settimeout(0.2)
    d = Daemon(t.tmp, "notify", env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"})
    d.env["NOTIFY_SOCKET"] = path
    msgs = []

    def drain(until, want=None):
        while time.time() < until:
            try:
                msgs.append(ns.recv(4096).decode())
            except socket.timeout:
                pass
            if want and any(want in m for m in msgs):
                return
    d.start()
    try:
        drain(time.time() + 1.2 * SLOW)
        text = "\n".join(msgs)
        ensure("READY=1" in text, lambda: msgs)
        ensure(text.count("WATCHDOG=1") >= 3, lambda: msgs)
        j = d.wait(d.submit("bw", {"cpu_iters": 1})["id"])
        ensure(j["result"]["fake"]["notify_socket"] == "", "NOTIFY_SOCKET leaked into the worker")
        drain(time.time() + 0.3)
        ensure(any(m.startswith("STATUS=") and "queued" in m for m in msgs), lambda: msgs)
    finally:
        d.proc.send_signal(signal.SIGTERM)
        drain(time.time() + 5 * SLOW, "STOPPING=1")
        d.stop()
        ns.close()
    ensure(any("STOPPING=1" in m for m in msgs), lambda: msgs)


@test
def socket_activation(t):
    """LISTEN_FDS: the daemon serves the socket it was given (and ignores --listen)"""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    port = ls.getsockname()[1]
    d = Daemon(t.tmp, "activated")
    d.port = port
    fd = ls.fileno()

    def pre():
        os.dup2(fd, 3)
    d.logf = open(d.log, "ab")
    args = ["sh", "-c", 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"', "sh"] + WRAP + d.args
    args[args.index("--listen") + 1] = "127.0.0.1:1"  # would fail if it were used
    d.proc = subprocess.Popen(args, env=d.env, stdout=d.logf, stderr=d.logf, preexec_fn=pre, close_fds=False)
    LIVE.append(d)
    ls.close()
    try:
        deadline = time.time() + 10 * SLOW
        while True:
            try:
                if d.req("GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            ensure(time.time() < deadline and d.proc.poll() is None, lambda: open(d.log).read())
            time.sleep(0.05)
        ensure(d.wait(d.submit("cache-copy", {"repeat": 1})["id"])["state"] == "succeeded")
    finally:
        ensure(d.stop() == 0)


@test
def real_worker_bw(t):
    """the real build/bin/ftbench as the worker (skipped while its bw is a placeholder): inventory
    from `ftbench gpus --json`, a small bw job end to end, the profile in the store"""
    ftbench = os.environ.get("FT_TEST_FTBENCH") or os.path.join(BUILD, "bin", "ftbench")
    try:
        h = subprocess.run([ftbench, "bw", "--help"], capture_output=True, text=True, timeout=30)
    except OSError:
        h = None
    if not h or h.returncode != 0 or "--kernel-cpu-iters" not in h.stdout:
        return "SKIP ftbench bw is not built yet"
    d = Daemon(t.tmp, "realbw", worker=ftbench).start()
    try:
        st, _, g = d.json("GET", "/gpus")
        args = {"dtype": "bf16", "cpu_iters": 1, "kernel_cpu_iters": 2, "kernel_pcie_iters": 2,
                "pcie_iters": 2, "pcie_mib": 16, "overlap_seconds": 0, "no_checks": True}
        job = d.submit("bw", args, timeout_s=600)
        events = sse(d, job["id"], timeout=600)
        j = d.wait(job["id"], timeout=600)
        ensure(j["state"] == "succeeded", lambda: (j, d.req("GET", f"/benchmark/jobs/{job['id']}/log")[2][-2000:]))
        ensure(any(e == "progress" for e, _ in events) and events[-1] == ("state", {"state": "succeeded"}))
        prof = j["result"]
        ensure(prof["version"] == 4 and "bf16" in prof["dtypes"], lambda: prof.keys())
        name = (g["gpus"][0]["uuid"] if g["gpus"] else "host") + ".json"
        ensure(j["profile_path"] == os.path.join(d.prof, name) and os.path.exists(j["profile_path"]))
        ensure(d.json("GET", "/profiles/" + name[:-5])[0] == 200)
    finally:
        d.stop()


def main():
    on_signals()
    # the plan: every test, "main daemon stopped cleanly", "no bare assert", "no daemon left"
    plan(len(results) + 3)
    try:
        return run_all()
    finally:
        stop_all_daemons()


def run_all():
    t = Scratch("ftbenchd-it-", escape=True)
    t.main = Daemon(t.tmp, "main", "--model-roots", t.models, "--decode-server", "ft=ft serve {model} --port {port}",
                    "--decode-urls", "http://localhost:30000,http://127.0.0.1:9",
                    "--log-max", "65536")
    failed = 0
    try:
        t.main.start()
        failed += run_tests(results, t)
        rc = t.main.stop()
        if rc != 0:
            print(f"not ok {len(results) + 1} - main daemon exit status {rc}")
            failed += 1
        else:
            print(f"ok {len(results) + 1} - main daemon stopped cleanly")
        here = os.path.dirname(os.path.abspath(__file__))
        lines = [f"{f}:{n}" for f in sorted(os.listdir(here)) if f.endswith(".py")
                 for n in bare_asserts(os.path.join(here, f))]
        if lines:
            print(f"not ok {len(results) + 2} - bare assert statements (dropped by python -O) at {lines}")
            failed += 1
        else:
            print(f"ok {len(results) + 2} - every check is an ensure(), none a bare assert")
        left = stop_all_daemons()
        if left:
            print(f"not ok {len(results) + 3} - {left} daemon(s) were still running after the tests")
            failed += 1
        else:
            print(f"ok {len(results) + 3} - no daemon left running")
    finally:
        failed = finish(t.tmp, failed, tail=40)
    print(f"# contract: {len(CONTRACT.seen)} (method, path, status) combinations checked")
    missing = [(m.upper(), p, st) for p, ops in CONTRACT.spec["paths"].items() for m, op in ops.items()
               if isinstance(op, dict) and "responses" in op for st in op["responses"]
               if (m.upper(), p, int(st)) not in CONTRACT.seen]
    print(f"# contract: documented but not exercised: {missing}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
