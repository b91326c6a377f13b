#!/usr/bin/python3
"""The seed daemon's routes on ftbenchd, driven by a client written from the seed's protocol
(reference §9; the seed's python/freetoken/daemon/app.py): `POST /bench/run {"args":[ft bench bw
flags]}` with `X-FT-Token`, read as the seed's desktop app reads it (`event:`/`data:` blocks:
`progress {done,total,label}`, then `result` with the whole profile or `error {message}`);
`GET /bench/profile`; 401 `{"detail":"invalid or missing X-FT-Token"}`; `/health`'s seed fields;
and the job cancelled when the stream's client goes away (the seed's PR #221). The real daemon
on loopback with the fake worker; every response checked against the served OpenAPI. TAP."""
import http.client
import json
import socket
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ftd_harness import (GPU0, GPU1, SLOW, Daemon, Scratch, ensure, finish, on_signals,  # noqa: E402
                         openapi_contract, plan, run_tests)

TOKEN = "seed-token-0123456789"
results = []


def test(fn):
    results.append(fn)
    return fn


class SeedClient:
    """What the seed's desktop app does: JSON bodies, X-FT-Token, SSE read line by line."""

    def __init__(self, port, token=TOKEN):
        self.port = port
        self.token = token

    def _conn(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout * SLOW)

    def _headers(self, extra=None):
        h = {"Content-Type": "application/json"}
        if self.token is not None:
            h["X-FT-Token"] = self.token
        h.update(extra or {})
        return h

    def get(self, path):
        c = self._conn()
        c.request("GET", path, headers=self._headers())
        r = c.getresponse()
        raw = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        openapi_contract().check("GET", path, r.status, hdrs, raw)
        return r.status, json.loads(raw)

    def bench_run(self, args, stop_after=None):
        """POST /bench/run; the events [(event, data)] until the stream ends, or the connection
        closed after stop_after events (the app's window closed). (status, events, body)."""
        c = self._conn(60)
        c.request("POST", "/bench/run", body=json.dumps({"args": args}), headers=self._headers())
        r = c.getresponse()
        if r.status != 200:
            raw = r.read()
            c.close()
            return r.status, [], json.loads(raw)
        ensure(r.getheader("Content-Type", "").startswith("text/event-stream"), "not an event stream")
        out, ev, data = [], None, []
        while True:
            line = r.readline()
            if not line:
                break
            line = line.decode().rstrip("\r\n")
            if line.startswith("event:"):
                ev = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
            elif line == "" and ev is not None:
                out.append((ev, json.loads("\n".join(data))))
                ev, data = None, []
                if stop_after is not None and len(out) >= stop_after:
                    # the client goes away: with "Connection: close" the socket belongs to the
                    # response (http.client hands it over), so shut it down there
                    sock = c.sock or r.fp.raw._sock
                    sock.shutdown(socket.SHUT_RDWR)
                    r.close()
                    c.close()
                    return r.status, out, None
        c.close()
        return r.status, out, None


def start(t, name, *extra, env=None):
    tok = os.path.join(t.tmp, name + "-token")
    with open(tok, "w") as f:
        f.write(TOKEN + "\n")
    d = Daemon(t.tmp, name, "--token-file", tok, *extra, env=env)
    d.token = TOKEN
    return d.start()


@test
def run_progress_then_result(t):
    d = start(t, "seed")
    t.d = d
    st, ev, _ = SeedClient(d.port).bench_run(["--dtype", "bf16", "nvfp4", "--cpu-iters", "3"])
    ensure(st == 200, f"status {st}")
    names = [e for e, _ in ev]
    ensure(names[-1] == "result" and set(names[:-1]) == {"progress"}, lambda: names)
    for _, p in ev[:-1]:
        ensure(set(p) == {"done", "total", "label"} and isinstance(p["done"], int), lambda: p)
    prof = ev[-1][1]
    ensure(isinstance(prof, dict) and prof.get("version") == 4, lambda: prof)
    # the same queue: a bw job of ours, the seed's list spelling joined
    jobs = d.get("/benchmark/jobs")["jobs"]
    ensure(jobs and jobs[0]["kind"] == "bw" and jobs[0]["state"] == "succeeded", lambda: jobs[0])
    argv = jobs[0]["argv"]
    ensure("--dtype=bf16,nvfp4" in argv and "--cpu-iters=3" in argv, lambda: argv)
    st, stored = SeedClient(d.port).get("/bench/profile")
    ensure(st == 200 and stored.get("gpu", {}).get("uuid") == GPU0, lambda: stored)


@test
def run_error_with_every_reason(t):
    d = t.d
    st, ev, _ = SeedClient(d.port).bench_run(["--isa", "fake-invalid"])
    ensure(st == 200 and [e for e, _ in ev][-1] == "error" and "result" not in [e for e, _ in ev], lambda: ev)
    msg = ev[-1][1]["message"]
    ensure("fake: a spread over 50%" in msg and "fake: CPU MoE above the read ceiling" in msg, lambda: msg)
    # flags the job cannot take: one error event, no job
    n = len(d.get("/benchmark/jobs")["jobs"])
    for args, says in ((["--output", "/tmp/x"], "the daemon owns it"), (["--colour", "red"], "not a flag"),
                       (["--dtype", "fp16"], "unknown format 'fp16'"), (["--cpu-iters"], "needs a value")):
        st, ev, _ = SeedClient(d.port).bench_run(args)
        ensure(st == 200 and len(ev) == 1 and ev[0][0] == "error" and says in ev[0][1]["message"], lambda: (args, ev))
    ensure(len(d.get("/benchmark/jobs")["jobs"]) == n, "a refused run left a job")
    st, _, body = SeedClient(d.port).bench_run("--dtype bf16")
    ensure(st == 422 and "detail" in body, lambda: body)


@test
def token_401_and_health(t):
    d = t.d
    for token in (None, "wrong"):
        c = SeedClient(d.port, token)
        st, body = c.get("/bench/profile")
        ensure(st == 401 and body == {"detail": "invalid or missing X-FT-Token"}, lambda: body)
        st, _, body = c.bench_run([])
        ensure(st == 401 and body == {"detail": "invalid or missing X-FT-Token"}, lambda: body)
    st, h = SeedClient(d.port, None).get("/health")
    ensure(st == 200 and h["status"] == "ok" and isinstance(h["uptimeS"], int) and h["engineRunning"] is False, h)
    # X-FT-Token is the token on our routes too
    st, jobs = SeedClient(d.port).get("/benchmark/jobs")
    ensure(st == 200 and "jobs" in jobs, lambda: jobs)


@test
def profile_of_the_named_gpu(t):
    d = t.d
    st, p = SeedClient(d.port).get(f"/bench/profile?gpu={GPU1}")
    ensure(st == 200 and p is None, lambda: p)  # GPU 1 has no profile yet
    SeedClient(d.port).bench_run(["--gpu", "1", "--cpu-iters", "1"])
    st, p = SeedClient(d.port).get("/bench/profile?gpu=1")
    ensure(st == 200 and p["gpu"]["uuid"] == GPU1, lambda: p)
    st, body = SeedClient(d.port).get("/bench/profile?gpu=7")
    ensure(st == 404 and "detail" in body, lambda: body)


@test
def disconnect_cancels(t):
    d = t.d
    st, ev, _ = SeedClient(d.port).bench_run(["--isa", "fake-sleep"], stop_after=1)
    ensure(st == 200 and ev[0][0] == "progress", lambda: ev)
    jid = d.get("/benchmark/jobs")["jobs"][0]["id"]
    j = d.wait(jid, timeout=20)
    ensure(j["state"] == "cancelled", lambda: j)
    log = d.req("GET", f"/benchmark/jobs/{jid}/log")[2].decode()
    ensure("mode sleep" in log, log)


@test
def streams_full_no_job(t):
    """At max-event-streams a /bench/run is 503 before any job is queued (none would be followed)."""
    d = start(t, "full", "--max-event-streams", "1")
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30 * SLOW)
    c.request("POST", "/bench/run", body=json.dumps({"args": ["--isa", "fake-sleep"]}),
              headers={"Content-Type": "application/json", "X-FT-Token": TOKEN})
    r = c.getresponse()
    ensure(r.status == 200 and r.readline().startswith(b"event: progress"), "the first stream")
    n = len(d.get("/benchmark/jobs")["jobs"])
    st, _, raw = d.req("POST", "/bench/run", body={"args": []}, headers={"X-FT-Token": TOKEN})
    ensure(st == 503 and json.loads(raw)["error"]["code"] == "busy", lambda: (st, raw))
    ensure(len(d.get("/benchmark/jobs")["jobs"]) == n, "a job was queued without a stream")
    c.close()
    d.stop()


def main():
    on_signals()
    t = Scratch("ftbenchd-seed-")
    plan(len(results))
    failed = 0
    try:
        failed = run_tests(results, t, only=sys.argv[1:])
    finally:
        failed = finish(t.tmp, failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
