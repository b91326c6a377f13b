#!/usr/bin/python3
"""The connection front of ftbenchd, against the real daemon with fake workers:
- a burst of sockets (twice the main and reserve places together) that connect and send at once,
  then event-stream followers above max-event-streams that leave abruptly; after each round
  /health and the API answer within 1 s; three rounds in one daemon, then SIGTERM ends it
  within 5 s (libmicrohttpd 0.9.75 wedged for good here: bench/mhd_limit_repro.c);
- per request, not per connection: pipelined requests (one answer, then a clean close), a
  second head trickled on a kept-alive connection, a bad second head, a trickled body (408);
- the front's own refusals are JSON (Transfer-Encoding codings, obs-fold, header lines, 505, 431);
- /health 503 "saturated" while every API place is held, 200 again once they come back;
- decode URLs with dot segments outside decode-urls refused, inside normalised;
- a final state the journal cannot take (a file-size limit on the daemon, as a full disk) is not
  announced: a restart finds what the API said, and once the disk takes it the state is final;
- a FIFO and a 1 GiB file in the profile store: the daemon starts, /profiles and /metrics answer.
Prints TAP lines; exit status 1 when anything failed."""
import json
import os
import resource
import select
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # ftd_harness
from ftd_harness import kill_all, stop_checked, SLOW, Daemon, Scratch, ensure, expect_error, finish, on_signals, plan, run_tests  # noqa: E402
from hostile_test import raw_req, req  # noqa: E402

RESERVE = 256  # the reserve daemon's places (daemon/http.c RESERVE_MAX)
tests = []


def test(fn):
    tests.append(fn)
    return fn


def parse_answer(buf):
    """(status, headers, body) of the first complete HTTP answer in buf, or None."""
    head, sep, rest = buf.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        hdrs[k.strip().lower().decode()] = v.strip().decode("latin-1")
    n = int(hdrs.get("content-length", "0"))
    if len(rest) < n:
        return None
    return status, hdrs, rest[:n]


def burst(port, n, paths):
    """n sockets connect without waiting, each sends its request as soon as it is connected, and
    is read to its end. Every one must get a complete answer (a close without one fails), a 503
    with Retry-After and a JSON error. Returns {status: count} and the slowest answer's seconds."""
    socks, data = {}, {}
    poller = select.poll()
    for i in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks[s.fileno()] = [s, b"", False]
        data[s.fileno()] = req("GET", paths[i % len(paths)])
        poller.register(s, select.POLLOUT)
    t0 = time.time()
    counts, slowest, bad = {}, 0.0, []
    deadline = t0 + 20 * SLOW
    while socks and time.time() < deadline:
        for fd, ev in poller.poll(500):
            ent = socks.get(fd)
            if ent is None:
                continue
            s = ent[0]
            if not ent[2]:
                try:
                    s.send(data[fd])
                except OSError as e:
                    bad.append(f"send: {e}")
                    ev = select.POLLHUP
                else:
                    ent[2] = True
                    poller.modify(s, select.POLLIN)
                    continue
            try:
                chunk = s.recv(65536) if not ev & select.POLLNVAL else b""
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                ent[1] += chunk
                continue
            got = parse_answer(ent[1])
            if got is None:
                bad.append(f"no answer after {time.time() - t0:.0f} s: {ent[1][:120]!r}")
                counts["none"] = counts.get("none", 0) + 1
            else:
                st, hdrs, body = got
                counts[st] = counts.get(st, 0) + 1
                if st == 503:
                    try:
                        doc = json.loads(body)
                    except ValueError:
                        doc = None
                    if "retry-after" not in hdrs or not isinstance(doc, dict):
                        bad.append(f"503 without Retry-After or a JSON body: {hdrs} {body[:120]!r}")
            slowest = max(slowest, time.time() - t0)
            poller.unregister(s)
            s.close()
            del socks[fd]
    for s, _, _ in socks.values():
        s.close()
    ensure(not socks, lambda: f"{len(socks)} sockets never answered nor closed")
    ensure(not bad, lambda: f"{len(bad)} bad answers, e.g. {sorted(set(bad))[:3]}; counts {counts}")
    return counts, slowest


def answers_within(port, path, limit_s=1.0, want=200):
    """GET path must be answered want within limit_s (times SLOW)."""
    t0 = time.time()
    st, _, body = raw_req(port, req("GET", path), timeout=limit_s * SLOW)
    took = time.time() - t0
    ensure(st == want and took <= limit_s * SLOW, lambda: f"GET {path}: {st} after {took:.2f} s: {body[:200]!r}")
    return took


def open_stream(port, jid):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10 * SLOW)
    s.sendall(req("GET", f"/benchmark/jobs/{jid}/events"))
    return s, s.recv(4096)


@test
def burst_followers_sigterm(t):
    """3 rounds of a burst (2x the main and reserve places, connecting and sending at once) and
    followers above max-event-streams leaving abruptly: /health and the API answer within 1 s
    after each; then SIGTERM ends the daemon within 5 s"""
    d = t.burst
    job = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
    d.wait(job["id"], ("running",))
    n = 2 * (t.burst_cap + RESERVE)
    notes = []
    for rnd in range(3):
        counts, slowest = burst(d.port, n, ["/health", "/benchmark/jobs?limit=1", "/metrics"])
        # served, or refused as busy: 503 (what a client retries), nothing else
        ensure(counts.get(200, 0) > 0 and set(counts) <= {200, 503}, lambda: counts)
        answers_within(d.port, "/health")
        answers_within(d.port, "/benchmark/jobs?limit=1")
        held, codes, refusals = [], {}, set()
        time.sleep(0.5 * SLOW)  # the last round's probe stream is let go within a 200 ms slice
        for _ in range(t.burst_streams + 24):
            s, first = open_stream(d.port, job["id"])
            code = first.split(b"\r\n")[0].split()[1].decode() if first else "closed"
            codes[code] = codes.get(code, 0) + 1
            if code != "200":
                refusals.add(first.split(b"\r\n\r\n", 1)[-1][:100])
            held.append(s)
        ensure(codes.get("200") == t.burst_streams, lambda: f"round {rnd + 1}: {codes} {refusals}")
        for i, s in enumerate(held):  # gone at once, half of them with a reset
            if i % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        h = answers_within(d.port, "/health")
        a = answers_within(d.port, "/benchmark/jobs?limit=1")
        # the followers' places come back: a new stream is served (their threads see the close
        # within a 200 ms slice)
        deadline = time.time() + 3 * SLOW
        while True:
            s, first = open_stream(d.port, job["id"])
            s.close()
            if first.startswith(b"HTTP/1.1 200"):
                break
            ensure(time.time() < deadline, lambda: first[:200])
            time.sleep(0.1)
        notes.append(f"round {rnd + 1}: {n} sockets {counts}, slowest {slowest:.2f} s; "
                     f"after followers /health {h * 1e3:.0f} ms, API {a * 1e3:.0f} ms")
    for line in notes:
        print("# " + line)
    t0 = time.time()
    rc = d.stop(timeout=5)
    took = time.time() - t0
    print(f"# SIGTERM after the bursts: exit {rc} in {took:.2f} s")
    ensure(rc == 0 and took < 5 * SLOW, lambda: (rc, took))


def read_to_eof(s, limit_s):
    """Everything s sends until it closes; a reset or limit_s without EOF fails."""
    s.settimeout(limit_s * SLOW)
    buf = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            raise AssertionError(f"reset instead of a clean close after {buf[:200]!r}")
        except socket.timeout:
            raise AssertionError(f"no close within {limit_s} s after {buf[:200]!r}")
        if not chunk:
            return buf
        buf += chunk


@test
def pipelined_refused_cleanly(t):
    """6 pipelined requests (probe and API): the first is answered with Connection: close, then the
    connection ends cleanly; the client knows to send the rest again"""
    d = t.rules
    for path in ("/health", "/benchmark/jobs?limit=1"):
        s = socket.create_connection(("127.0.0.1", d.port))
        s.sendall(req("GET", path) * 6)
        buf = read_to_eof(s, 5)
        s.close()
        got = parse_answer(buf)
        ensure(got and got[0] == 200 and got[1].get("connection") == "close", lambda: buf[:300])
        ensure(buf.count(b"HTTP/1.1 ") == 1, lambda: buf.count(b"HTTP/1.1 "))


@test
def kept_alive_trickle(t):
    """after an answer the connection ends: a second head trickled a byte at a time is not waited
    for (it would pass neither header-timeout nor the front's checks otherwise)"""
    d = t.rules
    s = socket.create_connection(("127.0.0.1", d.port))
    s.sendall(req("GET", "/benchmark/jobs?limit=1"))
    s.settimeout(5 * SLOW)
    buf = b""
    while parse_answer(buf) is None:
        chunk = s.recv(65536)
        ensure(chunk, lambda: buf[:200])
        buf += chunk
    t0 = time.time()
    closed = False
    for ch in b"GET /benchmark/jobs HTTP/1.1\r\nHost: x\r\nX-Slow: zzzzzzzzzz":
        try:
            s.send(bytes([ch]))
        except OSError:
            closed = True
            break
        r, _, _ = select.select([s], [], [], 0.2)
        if r:
            try:
                if s.recv(4096) == b"":
                    closed = True
                    break
            except ConnectionResetError:
                closed = True
                break
        if time.time() - t0 > 6 * SLOW:
            break
    s.close()
    took = time.time() - t0
    ensure(closed and took < 2 * SLOW, lambda: f"closed {closed} after {took:.1f} s")


@test
def second_request_head(t):
    """a bad head pipelined after a good request is never served; sent on its own it gets the
    front's 400 (JSON, field Host)"""
    d = t.rules
    bad = b"GET /benchmark/jobs HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", d.port))
    s.sendall(req("GET", "/benchmark/jobs?limit=1") + bad)
    buf = read_to_eof(s, 5)
    s.close()
    ensure(buf.count(b"HTTP/1.1 ") == 1 and parse_answer(buf)[0] == 200, lambda: buf[:300])
    st, hdrs, body = raw_req(d.port, bad)
    ensure(st == 400 and json.loads(body)["error"]["field"] == "Host", lambda: (st, body))


@test
def body_trickle(t):
    """a body a byte every 0.25 s: 408 (JSON) once header-timeout (2 s) and the minimum rate are
    past, not after the whole body"""
    d = t.rules
    s = socket.create_connection(("127.0.0.1", d.port))
    s.sendall(b"POST /benchmark/start HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 200\r\n\r\n")
    t0 = time.time()
    buf = b""
    s.setblocking(False)
    while time.time() - t0 < 10 * SLOW:
        try:
            s.send(b" ")
        except OSError:
            pass
        time.sleep(0.25)
        try:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        except BlockingIOError:
            pass
        except OSError:
            break
        if parse_answer(buf):
            break
    s.close()
    took = time.time() - t0
    got = parse_answer(buf)
    ensure(got and got[0] == 408, lambda: buf[:300])
    ensure(json.loads(got[2])["error"]["code"] == "request_timeout", lambda: got[2])
    ensure(took < 4 * SLOW, lambda: f"answered after {took:.1f} s")


@test
def front_refusals_json(t):
    """what the front refuses itself is a JSON error: codings other than chunked 501, obs-fold and
    malformed header lines 400, HTTP/2.0 505, a 9 KiB head 431"""
    d = t.rules
    body = b"0\r\n\r\n"
    cases = [
        ("TE gzip, chunked", req("POST", "/benchmark/start", ["Transfer-Encoding: gzip, chunked"], body), 501),
        ("TE identity", req("POST", "/benchmark/start", ["Transfer-Encoding: identity"], body), 501),
        ("two TE", req("POST", "/benchmark/start", ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
                       body), 501),
        ("obs-fold", req("GET", "/health", ["X-A: a", " folded"]), 400),
        ("no colon", req("GET", "/health", ["X-A a"]), 400),
        ("space before colon", req("GET", "/health", ["X-A : a"]), 400),
        ("control character", req("GET", "/health", ["X-A: a\x01b"]), 400),
        ("HTTP/2.0", req("GET", "/health", version="HTTP/2.0"), 505),
        ("9 KiB head", req("GET", "/health", ["X-Big: " + "b" * 9216]), 431),
    ]
    bad = []
    for name, data, want in cases:
        st, hdrs, b = raw_req(d.port, data)
        try:
            code = json.loads(b)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = None
        if st != want or not hdrs.get("content-type", "").startswith("application/json") or not code:
            bad.append(f"{name}: {st} {hdrs.get('content-type')} {b[:120]!r}")
    ensure(not bad, lambda: "\n".join(bad))


@test
def health_saturated(t):
    """every API place held (max-connections 3, three streams) for 5 s: /health 503 saturated with
    Retry-After; once they are let go, 200 again"""
    d = t.small
    job = d.submit("cache-copy", {"models": "fake-sleep"})
    held = []
    try:
        deadline = time.time() + 10 * SLOW
        while len(held) < 3:
            s, first = open_stream(d.port, job["id"])
            if first.startswith(b"HTTP/1.1 200"):
                held.append(s)
            else:
                s.close()
                ensure(time.time() < deadline, lambda: first[:200])
                time.sleep(0.1)
        st, _, body = raw_req(d.port, req("GET", "/health"))
        ensure(st == 200, lambda: (st, body))  # full, but not for 5 s yet
        time.sleep(5.3)
        st, hdrs, body = raw_req(d.port, req("GET", "/health"))
        ensure(st == 503 and json.loads(body)["status"] == "saturated" and "retry-after" in hdrs,
               lambda: (st, hdrs, body))
    finally:
        for s in held:
            s.close()
    deadline = time.time() + 3 * SLOW
    while raw_req(d.port, req("GET", "/health"))[0] != 200:
        ensure(time.time() < deadline, "/health stayed 503 after the places came back")
        time.sleep(0.1)
    d.req("POST", f"/benchmark/jobs/{job['id']}/cancel", check=False)


@test
def decode_url_dot_segments(t):
    """decode-urls http://127.0.0.1:9/v1: dot segments (plain or percent-encoded) that leave it are
    403, an encoded '/' 400; one that stays inside is accepted and the worker gets its normal form"""
    d = t.rules
    m = t.models + "/m"
    for url in ("http://127.0.0.1:9/v1/../internal/admin", "http://127.0.0.1:9/v1/%2e%2e/internal",
                "http://127.0.0.1:9/v1/a/../../x", "http://127.0.0.1:9/v1/.%2E/x"):
        expect_error(d, "POST", "/benchmark/start", 403, "forbidden", "args.url",
                     body={"kind": "decode", "args": {"model": m, "url": url}})
    expect_error(d, "POST", "/benchmark/start", 400, "invalid_argument", "args.url",
                 body={"kind": "decode", "args": {"model": m, "url": "http://127.0.0.1:9/v1/..%2Fadmin"}})
    job = d.submit("decode", {"model": m, "url": "http://127.0.0.1:9/v1/x/./../chat"})
    with open(os.path.join(d.state, "jobs", job["id"] + ".json")) as f:
        argv = json.load(f)["argv"]
    ensure(any(a.endswith("http://127.0.0.1:9/v1/chat") for a in argv), lambda: argv)
    ensure(not any(".." in a for a in argv), lambda: argv)
    d.req("POST", f"/benchmark/jobs/{job['id']}/cancel", check=False)
    d.wait(job["id"])


def journal_state(d, jid):
    with open(os.path.join(d.state, "jobs", jid + ".json")) as f:
        return json.load(f)["state"]


@test
def disk_full_final_state(t):
    """the daemon cannot write files (RLIMIT_FSIZE 1 byte, EFBIG as ENOSPC would be): a cancelled
    job's final state is not announced; kill -9 then: it is interrupted, as the API had said
    running. Again, and the limit lifted: the final state is journaled and then announced"""
    d = t.disk
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    seen = []
    for lift in (False, True):
        job = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
        d.wait(job["id"], ("running",))
        resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (1, hard))
        st = d.req("POST", f"/benchmark/jobs/{job['id']}/cancel", check=False)[0]
        ensure(st == 202, lambda: st)
        t0 = time.time()
        while time.time() - t0 < 1.5:
            s = d.job(job["id"])["state"]
            seen.append(s)
            ensure(s == "running", lambda: f"announced {s} while the journal could not say so")
            time.sleep(0.1)
        ensure(journal_state(d, job["id"]) == "running")
        if not lift:
            d.stop(sig=signal.SIGKILL)
            d.start()
            got = d.job(job["id"])
            ensure(got["state"] == "interrupted", lambda: got)
            continue
        resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (hard, hard))
        got = d.wait(job["id"], timeout=5)
        ensure(got["state"] == "cancelled" and journal_state(d, job["id"]) == "cancelled", lambda: got)
        ensure(got["duration_s"] < 1.4, lambda: got)  # the run's time, not the wait for the disk


@test
def profile_store_fifo_and_huge(t):
    """a FIFO and a 1 GiB (sparse) file named as profiles: the daemon gets ready, /profiles lists
    no profile of them (the big file only as corrupt, saying why), /profiles/{name} is an error,
    /metrics answers, and nothing reads the big file"""
    d = t.store
    os.makedirs(d.prof, exist_ok=True)
    os.mkfifo(os.path.join(d.prof, "GPU-11111111-aaaa-bbbb-cccc-000000000000.json"))
    with open(os.path.join(d.prof, "host.json"), "wb") as f:
        f.truncate(1 << 30)
    t0 = time.time()
    d.start()
    print(f"# ready in {time.time() - t0:.2f} s with a FIFO and a 1 GiB file in the store")
    st, _, doc = d.json("GET", "/profiles")
    ensure(st == 200 and all(p.get("corrupt") and p.get("dtypes") is None for p in doc["profiles"])
           and [p["uuid"] for p in doc["profiles"] if "larger" in p["corrupt"]] == ["host"], lambda: doc)
    for name in ("GPU-11111111-aaaa-bbbb-cccc-000000000000", "host"):
        st = d.req("GET", f"/profiles/{name}", check=False)[0]
        ensure(st == 404, lambda: (name, st))
    ensure(d.req("GET", "/metrics")[0] == 200)
    with open(f"/proc/{d.proc.pid}/status") as f:
        rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
    ensure(rss < 256 * 1024, lambda: f"peak RSS {rss} kB")
    d.stop()


def main():
    on_signals()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    t = Scratch("ftbenchd-front-")
    t.burst_cap, t.burst_streams = 32, 8
    t.burst = Daemon(t.tmp, "burst", "--max-connections", str(t.burst_cap), "--max-event-streams",
                     str(t.burst_streams), "--header-timeout", "3")
    t.rules = Daemon(t.tmp, "rules", "--header-timeout", "2", "--model-roots", t.models, "--decode-urls",
                     "http://127.0.0.1:9/v1")
    t.small = Daemon(t.tmp, "small", "--max-connections", "3", "--max-event-streams", "3")
    t.disk = Daemon(t.tmp, "disk")
    t.store = Daemon(t.tmp, "store")
    failed = 0
    plan(len(tests))
    try:
        for d in (t.burst, t.rules, t.small, t.disk):
            d.start()
        failed += run_tests(tests, t)
        failed += stop_checked((t.rules, t.small, t.disk))
    finally:
        kill_all((t.burst, t.rules, t.small, t.disk, t.store))
        failed = finish(t.tmp, failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
