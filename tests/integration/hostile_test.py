#!/usr/bin/python3
"""Hostile inputs against the real ftbenchd on loopback (fake workers, as daemon_test.py): a table
of raw requests, each with the status it must get, and after each one /health must answer 200.
Then the connection-level attacks (idle and slow clients holding the daemon's places), bounded and self-stopping: idle sockets,
a slowloris head, SSE followers beyond the cap, the connection limit; /health keeps answering.

Every answer must be a complete HTTP response whose JSON body (if any) parses as UTF-8 JSON;
an answer that never comes (the connection just closes) fails the row.
Prints TAP-like "ok N - name" / "not ok N - name" lines; exit status 1 when anything failed.
FT_HOSTILE_SHOW=1 prints every row's status and body."""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # ftd_harness
from ftd_harness import kill_all, stop_checked, FTBENCHD, SLOW, Daemon, Scratch, ensure, finish, plan, run_tests  # noqa: E402

SHOW = os.environ.get("FT_HOSTILE_SHOW") == "1"
A63E = "a" * 63 + "é"  # 64 characters, 65 bytes: a 64-byte cut splits the é (defect 8)
P = "/benchmark/start"


def raw_req(port, data, timeout=10):
    """Send data, read one HTTP response (after any 1xx). Returns (status, headers, body);
    status None when the connection closed without an answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout * SLOW)
    try:
        try:
            s.sendall(data)
        except OSError:
            pass  # the server may answer and close before it read everything
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                try:
                    chunk = s.recv(65536)
                except ConnectionResetError:
                    chunk = b""
                if not chunk:
                    return None, {}, buf
                buf += chunk
            head, _, rest = buf.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            status = int(lines[0].split()[1])
            hdrs = {}
            for ln in lines[1:]:
                k, _, v = ln.partition(b":")
                hdrs[k.strip().lower().decode()] = v.strip().decode("latin-1")
            if 100 <= status < 200:
                buf = rest
                continue
            n = int(hdrs.get("content-length", "0"))
            method = data.split(b" ", 1)[0]
            if method == b"HEAD" or status in (204, 304):
                n = 0
            while len(rest) < n:
                try:
                    chunk = s.recv(65536)
                except ConnectionResetError:
                    chunk = b""
                if not chunk:
                    break
                rest += chunk
            return status, hdrs, rest[:n]
    finally:
        s.close()


def req(method, path, headers=None, body=None, version="HTTP/1.1", host=True):
    h = []
    if host:
        h.append("Host: 127.0.0.1")
    h += headers or []
    b = body.encode() if isinstance(body, str) else body
    if b is not None and not any(x.lower().split(":")[0] in ("content-length", "transfer-encoding") for x in h):
        h.append(f"Content-Length: {len(b)}")
    head = f"{method} {path} {version}\r\n" + "".join(x + "\r\n" for x in h) + "\r\n"
    return head.encode("utf-8", "surrogateescape") + (b or b"")


def start(body, ctype="application/json", extra=None):
    if not isinstance(body, (str, bytes)):
        body = json.dumps(body, ensure_ascii=False)
    return req("POST", P, [f"Content-Type: {ctype}"] + (extra or []), body)


def bw(args):
    return start({"kind": "bw", "args": args})


def lw(args, t):
    return start({"kind": "load-weights", "args": dict({"model": t.models + "/m"}, **args)})


def dec(args, t):
    return start({"kind": "decode", "args": args})


def rows(t):
    """(name, raw request, expected status). [dN]: a defect the daemon once had (N: its number when found)."""
    m = t.models + "/m"
    r = []
    add = lambda name, data, st: r.append((name, data, st))  # noqa: E731
    # --- framing and headers (defect 12)
    add("health", req("GET", "/health"), 200)
    add("health HEAD", req("HEAD", "/health"), 200)
    add("health HTTP/1.0 without Host", req("GET", "/health", version="HTTP/1.0", host=False), 200)
    add("[d12] HTTP/1.1 without Host", req("GET", "/health", host=False), 400)
    add("[d12] HTTP/1.1 without Host, jobs", req("GET", "/benchmark/jobs", host=False), 400)
    add("[d12] two Host headers", req("GET", "/benchmark/jobs", ["Host: a"]), 400)
    add("[d12] two Content-Length that differ", req("POST", P, ["Content-Type: application/json", "Content-Length: 13",
                                                               "Content-Length: 40"], '{"kind":"bw"}'), 400)
    add("[d12] Content-Length 0 then 13", req("POST", P, ["Content-Type: application/json", "Content-Length: 0",
                                                         "Content-Length: 13"], '{"kind":"bw"}'), 400)
    add("two equal Content-Length", req("POST", P, ["Content-Type: application/json", "Content-Length: 2",
                                                   "Content-Length: 2"], "[]"), 400)
    add("[d12] Content-Length beside chunked", req("POST", P, ["Content-Type: application/json",
                                                             "Transfer-Encoding: chunked", "Content-Length: 2"],
                                                  b"2\r\n{}\r\n0\r\n\r\n"), 400)
    add("Content-Length not a number", req("POST", P, ["Content-Type: application/json", "Content-Length: abc"], b""), 400)
    add("Content-Length negative", req("POST", P, ["Content-Type: application/json", "Content-Length: -1"], b""), 400)
    add("Content-Length 2^64", req("POST", P, ["Content-Type: application/json",
                                              "Content-Length: 18446744073709551616"], b""), 413)
    add("Content-Length over max-body", req("POST", P, ["Content-Type: application/json", "Content-Length: 70000"],
                                            b""), 413)
    add("body over max-body (chunked)", req("POST", P, ["Content-Type: application/json",
                                                        "Transfer-Encoding: chunked"],
                                            b"11170\r\n" + b"a" * 70000 + b"\r\n0\r\n\r\n"), 413)
    add("chunked good body", req("POST", P, ["Content-Type: application/json", "Transfer-Encoding: chunked"],
                                 b'10\r\n{"kind":"bw","ar\r\nf\r\ngs":{"gpu":1}}\r\n0\r\n\r\n'), 202)
    add("Expect 100-continue", req("POST", P, ["Content-Type: application/json", "Expect: 100-continue"],
                                   '{"kind":"nope"}'), 400)
    add("unknown method", req("BREW", "/health"), 405)
    add("lower-case method", req("get", "/health"), 405)
    add("DELETE /health", req("DELETE", "/health"), 405)
    add("PUT start", req("PUT", P, ["Content-Type: application/json"], "{}"), 405)
    add("OPTIONS jobs", req("OPTIONS", "/benchmark/jobs"), 405)
    add("TRACE", req("TRACE", "/health"), 405)
    add("HTTP/2.0 version", req("GET", "/health", version="HTTP/2.0"), 505)
    add("HTTP/9.9 version", req("GET", "/health", version="HTTP/9.9"), 505)
    # a version that is no digit.digit is malformed (400), not a version not served (505)
    add("HTTP/A.1 version", req("GET", "/health", version="HTTP/A.1"), 400)
    add("HTTP/1.x version", req("GET", "/health", version="HTTP/1.x"), 400)
    add("HTTP/:.1 version", req("GET", "/health", version="HTTP/:.1"), 400)
    add("garbage request line", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400)
    add("header without colon", req("GET", "/health", ["NoColonHere"]), 400)
    add("header value not UTF-8", req("GET", "/health", ["X-Junk: \udcff\udcfe"]), 200)
    add("Authorization junk (no token configured)", req("GET", "/benchmark/jobs", ["Authorization: \udcff"]), 200)
    add("64 KiB header", req("GET", "/health", ["X-Big: " + "b" * 65536]), 431)
    add("7 KiB header", req("GET", "/benchmark/jobs?limit=1", ["X-Big: " + "b" * 7000]), 200)
    add("long URL", req("GET", "/" + "u" * 6000), 404)
    add("URL over the head limit", req("GET", "/" + "u" * 20000), 431)
    add("TLS hello", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 400)
    add("request line without version", b"GET /health\r\n\r\n", 400)
    add("request line with two spaces", b"GET  /health HTTP/1.1\r\nHost: x\r\n\r\n", 400)
    add("bare LF head", b"GET /health HTTP/1.1\nHost: x\n\n", 200)
    # --- paths and queries (defect 8: input echoed in messages)
    add("[d8] profile %FF", req("GET", "/profiles/%FF"), 404)
    add("[d8] profile %C3 (cut character)", req("GET", "/profiles/%C3"), 404)
    add("[d8] profile 79 letters + é", req("GET", "/profiles/" + "a" * 79 + "%C3%A9"), 404)
    add("[d8] profile raw 0xFF byte", req("GET", "/profiles/\udcff"), 404)
    add("profile traversal", req("GET", "/profiles/..%2F..%2Fetc%2Fpasswd"), 404)
    add("profile %00 (not the list)", req("GET", "/profiles/%00"), 404)
    add("profile %2500", req("GET", "/profiles/%2500"), 404)
    add("jobs state %00", req("GET", "/benchmark/jobs?state=queued%00x"), 400)
    add("profile long", req("GET", "/profiles/" + "G" * 5000), 404)
    add("job %FF", req("GET", "/benchmark/jobs/%FF"), 404)
    add("job id upper hex", req("GET", "/benchmark/jobs/0123456789ABCDEF"), 404)
    add("job id 17 chars", req("GET", "/benchmark/jobs/0123456789abcdef0"), 404)
    add("job unknown sub-path", req("GET", "/benchmark/jobs/0123456789abcdef/nope"), 404)
    add("job log unknown", req("GET", "/benchmark/jobs/0123456789abcdef/log"), 404)
    add("job events unknown", req("GET", "/benchmark/jobs/0123456789abcdef/events"), 404)
    add("cancel unknown", req("POST", "/benchmark/jobs/0123456789abcdef/cancel"), 404)
    add("cancel GET", req("GET", "/benchmark/jobs/0123456789abcdef/cancel"), 405)
    add("path %FF", req("GET", "/nope%FF"), 404)
    add("path with NUL (not /health)", req("GET", "/health%00x"), 404)
    add("target not starting with /", req("GET", "%2Fhealth"), 400)
    add("[d8] state %FF", req("GET", "/benchmark/jobs?state=%FF"), 400)
    add("[d8] state 31 letters + é", req("GET", "/benchmark/jobs?state=" + "s" * 31 + "%C3%A9"), 400)
    add("[d8] state raw bytes", req("GET", "/benchmark/jobs?state=\udcc3"), 400)
    add("limit %FF", req("GET", "/benchmark/jobs?limit=%FF"), 400)
    add("limit 0", req("GET", "/benchmark/jobs?limit=0"), 400)
    add("limit 10001", req("GET", "/benchmark/jobs?limit=10001"), 400)
    add("limit 2^64", req("GET", "/benchmark/jobs?limit=18446744073709551616"), 400)
    add("limit 1e3", req("GET", "/benchmark/jobs?limit=1e3"), 400)
    add("limit 10000", req("GET", "/benchmark/jobs?limit=10000"), 200)
    add("state and limit ok", req("GET", "/benchmark/jobs?state=queued&limit=1"), 200)
    add("[d8] profile history %FF", req("GET", "/profiles/%FF/history"), 404)
    add("[d8] profile history 79 letters + é", req("GET", "/profiles/" + "a" * 79 + "%C3%A9/history"), 404)
    add("profile history limit 0", req("GET", "/profiles/host/history?limit=0"), 400)
    add("profile unknown sub-path", req("GET", "/profiles/host/nope"), 404)
    add("status page", req("GET", "/"), 200)
    add("status page POST", req("POST", "/", ["Content-Type: application/json"], "{}"), 405)
    add("openapi.json", req("GET", "/openapi.json"), 200)
    add("metrics", req("GET", "/metrics"), 200)
    add("gpus", req("GET", "/gpus"), 200)
    add("profiles", req("GET", "/profiles"), 200)
    # --- Content-Type and Idempotency-Key (defect 8)
    add("[d8] Content-Type 0xFF", start('{"kind":"bw"}', "application/json\udcff"), 415)
    add("[d8] Content-Type 63 letters + é", start('{"kind":"bw"}', A63E), 415)
    add("Content-Type text/plain", start('{"kind":"bw"}', "text/plain"), 415)
    add("Content-Type missing", req("POST", P, [], '{"kind":"bw"}'), 415)
    add("Content-Type application/jsonx", start('{"kind":"bw"}', "application/jsonx"), 415)
    add("Content-Type with charset", start('{"kind":"nope"}', "application/json; charset=utf-8"), 400)
    add("Idempotency-Key 0xFF", start('{"kind":"nope"}', extra=["Idempotency-Key: \udcff"]), 400)
    add("Idempotency-Key 129 chars", start('{"kind":"nope"}', extra=["Idempotency-Key: " + "k" * 129]), 400)
    add("Idempotency-Key with space", start('{"kind":"nope"}', extra=["Idempotency-Key: a b"]), 400)
    # --- request JSON (defect 8, defect 3)
    add("[d8] kind 63 letters + é", start({"kind": A63E}), 400)
    add("[d8] kind 64 x é", start({"kind": "é" * 64}), 400)
    add("[d8] unknown field 63 letters + é", start({"kind": "bw", A63E: 1}), 400)
    add("[d8] unknown arg 57 letters + é", start({"kind": "bw", "args": {"a" * 57 + "é": 1}}), 400)
    add("[d8] unknown arg 99 letters + é", start({"kind": "bw", "args": {"a" * 99 + "é": 1}}), 400)
    add("[d8] invalid UTF-8 in the body", start(b'{"kind":"\xff"}'), 400)
    add("[d8] invalid JSON near 0xC3", start(b'{"kind" \xc3'), 400)
    add("malformed JSON", start("{not json"), 400)
    add("empty body", start(""), 400)
    add("body null", start("null"), 400)
    add("body array", start("[1,2]"), 400)
    add("body string", start('"bw"'), 400)
    add("trailing garbage", start('{"kind":"bw"} x'), 400)
    add("duplicate keys", start('{"kind":"bw","kind":"bw"}'), 400)
    add("NUL in a string", start('{"kind":"b\\u0000w"}'), 400)
    add("lone surrogate", start('{"kind":"\\ud800"}'), 400)
    add("deep nesting", start('{"kind":"bw","args":' + "[" * 5000 + "]" * 5000 + "}"), 400)
    add("number overflow", start('{"kind":"bw","timeout_s":1e999}'), 400)
    add("kind missing", start({"args": {}}), 400)
    add("kind number", start({"kind": 3}), 400)
    add("kind unknown", start({"kind": "mine-bitcoin"}), 400)
    add("args array", start({"kind": "bw", "args": [1]}), 400)
    add("timeout_s 0", start({"kind": "bw", "timeout_s": 0}), 400)
    add("timeout_s -1", start({"kind": "bw", "timeout_s": -1}), 400)
    add("timeout_s string", start({"kind": "bw", "timeout_s": "60"}), 400)
    add("timeout_s 1.5", start({"kind": "bw", "timeout_s": 1.5}), 400)
    add("[d3] timeout_s over max-job-timeout", start({"kind": "bw", "timeout_s": 86401}), 400)
    add("timeout_s 2^63", start({"kind": "bw", "timeout_s": 9223372036854775807}), 400)
    # --- the argument table (defect 3: every limit of the spec)
    add("gpu -1", bw({"gpu": -1}), 400)
    add("gpu 256", bw({"gpu": 256}), 400)
    add("gpu empty", bw({"gpu": ""}), 400)
    add("gpu 81 characters", bw({"gpu": "G" * 81}), 400)
    add("gpu object", bw({"gpu": {}}), 400)
    add("gpu 7 (none)", bw({"gpu": 7}), 400)
    add("dtype empty", bw({"dtype": ""}), 400)
    add("dtype 257 characters", bw({"dtype": "a" * 257}), 400)
    add("dtype shell", bw({"dtype": "bf16; rm -rf /"}), 400)
    add("dtype 65 items", bw({"dtype": ["a"] * 65}), 400)
    add("dtype item 65 characters", bw({"dtype": ["a" * 65]}), 400)
    add("dtype item é", bw({"dtype": ["é"]}), 400)
    add("dtype empty list", bw({"dtype": []}), 400)
    add("[d3] models 64 names of 64 characters", start({"kind": "cache-copy", "args": {
        "models": ["m%063d" % i for i in range(64)], "gpu": 1}}), 202)
    add("cpu_iters 1001", bw({"cpu_iters": 1001}), 400)
    add("cpu_iters 2^63", bw({"cpu_iters": 9223372036854775807}), 400)
    add("threshold 0", bw({"threshold": 0}), 400)
    add("threshold NaN-ish string", bw({"threshold": "nan"}), 400)
    add("overlap_seconds 601", bw({"overlap_seconds": 601}), 400)
    add("miss_rates 2", start({"kind": "cache-copy", "args": {"miss_rates": [0.5, 2]}}), 400)
    add("batch_sizes 33 items", start({"kind": "cache-copy", "args": {"batch_sizes": [1] * 33}}), 400)
    add("copy bogus", start({"kind": "cache-copy", "args": {"copy": "dma"}}), 400)
    add("[d3] modes 4 items", lw({"modes": ["baseline", "parallel", "ftw", "ftw"]}, t), 400)
    add("modes unknown", lw({"modes": ["turbo"]}, t), 400)
    add("model missing", start({"kind": "load-weights", "args": {}}), 400)
    add("model empty", lw({"model": ""}, t), 400)
    add("model 4097 characters", lw({"model": "/" + "m" * 4096}, t), 400)
    add("model /etc", lw({"model": "/etc"}, t), 403)
    add("model ../..", lw({"model": t.models + "/../.."}, t), 403)
    add("model symlink out", lw({"model": t.models + "/escape"}, t), 403)
    add("[d8] model not UTF-8-cut", lw({"model": t.models + "/" + A63E}, t), 403)
    add("no_drop_cache string", lw({"no_drop_cache": "yes"}, t), 400)
    add("[d3] server 65 characters", dec({"model": m, "server": "s" * 65}, t), 400)
    add("server 63 letters + é (outside the name pattern)", dec({"model": m, "server": A63E}, t), 400)
    add("server with =", dec({"model": m, "server": "ft=x"}, t), 400)
    add("server empty", dec({"model": m, "server": ""}, t), 400)
    add("server unknown", dec({"model": m, "server": "rogue"}, t), 403)
    add("server and url", dec({"model": m, "server": "ft", "url": "http://127.0.0.1:9/"}, t), 400)
    add("neither server nor url", dec({"model": m}, t), 400)
    add("url file://", dec({"url": "file:///etc/passwd"}, t), 400)
    add("url 2049 characters", dec({"url": "http://127.0.0.1/" + "u" * 2032}, t), 400)
    add("url with credentials", dec({"url": "http://u:p@127.0.0.1:1/"}, t), 400)
    add("url with a space", dec({"url": "http://127.0.0.1:9/v1 --x"}, t), 400)
    add("url with a newline", dec({"url": "http://127.0.0.1:9/\nX-Evil: 1"}, t), 400)
    add("url with a bad port", dec({"url": "http://127.0.0.1:abc/"}, t), 400)
    add("url without a host", dec({"url": "http://"}, t), 400)
    add("url other host", dec({"url": "http://example.com/"}, t), 403)
    add("[d5] loopback url not in decode-urls", dec({"url": "http://127.0.0.1:1/"}, t), 403)
    add("[d1] ftw_dir = the model (accepted: the job converts into a fresh directory of its own)",
        lw({"ftw_dir": t.models + "/m"}, t), 202)
    add("backends empty", dec({"url": "http://127.0.0.1:9/", "backends": []}, t), 400)
    add("max_tokens 1", dec({"url": "http://127.0.0.1:9/", "max_tokens": 1}, t), 400)
    add("warmup 101", dec({"url": "http://127.0.0.1:9/", "warmup": 101}, t), 400)
    add("cancel with a body", req("POST", "/benchmark/jobs/0123456789abcdef/cancel",
                                  ["Content-Type: text/plain"], "x" * 100), 404)
    return r


def check_answer(name, st, hdrs, body, want):
    ensure(st is not None, lambda: f"{name}: no HTTP answer (the connection closed)")
    ensure(st == want, lambda: f"{name}: {st}, wanted {want}: {body[:300]!r}")
    ctype = hdrs.get("content-type", "")
    if ctype.startswith("application/json") and body:
        doc = json.loads(body.decode("utf-8"))  # strict: invalid UTF-8 raises
        if st >= 400:
            ensure(set(doc["error"]) == {"code", "message", "field"}, lambda: doc)
            ensure(len((doc["error"]["message"] or "").strip()) >= 8, lambda: f"{name}: no reason given: {doc}")
    if st in (429, 503):
        ensure("retry-after" in hdrs, lambda: f"{name}: {st} without Retry-After")


def health_ok(port, timeout=5):
    st, _, body = raw_req(port, req("GET", "/health"), timeout=timeout)
    ensure(st == 200, lambda: f"/health answered {st}: {body[:200]!r}")


tests = []


def test(fn):
    tests.append(fn)
    return fn


@test
def hostile_table(t):
    """at least 100 raw requests, each its status, each followed by a /health that answers"""
    d = t.main
    table = rows(t)
    ensure(len(table) >= 100, lambda: len(table))
    bad = []
    for name, data, want in table:
        try:
            st, hdrs, body = raw_req(d.port, data)
            if SHOW:
                print(f"# {st} {name}: {body[:160]!r}")
            check_answer(name, st, hdrs, body, want)
        except Exception as e:  # noqa: BLE001
            bad.append(f"{name}: {e}")
        try:
            health_ok(d.port)
        except Exception as e:  # noqa: BLE001
            bad.append(f"{name}: then /health: {e}")
    t.answered = len(table) - len(bad)
    print(f"# hostile table: {len(table)} requests, {t.answered} answered as wanted")
    ensure(not bad, lambda: "\n".join(bad))


@test
def slowloris_head(t):
    """a head sent a byte at a time is cut at header-timeout with 408; /health answers meanwhile"""
    d = t.slow
    s = socket.create_connection(("127.0.0.1", d.port))
    s.settimeout(10 * SLOW)
    t0 = time.time()
    got = b""
    try:
        for ch in b"GET /benchmark/jobs HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"z" * 200:
            try:
                s.send(bytes([ch]))
            except OSError:
                break
            if time.time() - t0 < 1.5:
                health_ok(d.port)
            time.sleep(0.05)
            if time.time() - t0 > 8 * SLOW:
                break
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    finally:
        s.close()
    took = time.time() - t0
    ensure(got.startswith(b"HTTP/1.1 408"), lambda: got[:200])
    ensure(took < 2 + 3 * SLOW, lambda: f"cut after {took:.1f}s (header-timeout 2)")
    health_ok(d.port)


@test
def idle_sockets(t):
    """300 sockets that send nothing: /health and a normal request keep answering, quickly"""
    d = t.main
    held = []
    try:
        for _ in range(300):
            held.append(socket.create_connection(("127.0.0.1", d.port)))
        lat = []
        for _ in range(20):
            t0 = time.time()
            health_ok(d.port)
            lat.append(time.time() - t0)
        st, _, _ = raw_req(d.port, req("GET", "/benchmark/jobs?limit=1"))
        ensure(st == 200, lambda: st)
        lat.sort()
        print(f"# /health under 300 idle sockets: median {lat[10] * 1e3:.1f} ms, max {lat[-1] * 1e3:.1f} ms")
        ensure(lat[-1] < 2 * SLOW, lambda: lat)
    finally:
        for s in held:
            s.close()


def open_stream(port, jid):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10 * SLOW)
    s.sendall(f"GET /benchmark/jobs/{jid}/events HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    first = s.recv(4096)
    return s, first


@test
def sse_followers(t):
    """300 SSE followers of a running job: those past max-event-streams get 503 + Retry-After,
    /health and the job API keep answering"""
    d = t.main
    job = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
    d.wait(job["id"], ("running",))
    held = []
    codes = {}
    try:
        for _ in range(300):
            s, first = open_stream(d.port, job["id"])
            code = first.split(b"\r\n")[0].split()[1].decode() if first else "closed"
            codes[code] = codes.get(code, 0) + 1
            if code == "503":
                ensure(b"Retry-After:" in first, lambda: first[:300])
                s.close()
            else:
                held.append(s)
        ensure(codes.get("200") == 64 and codes.get("503") == 236, lambda: codes)
        lat = []
        for _ in range(20):
            t0 = time.time()
            health_ok(d.port)
            lat.append(time.time() - t0)
        lat.sort()
        print(f"# /health with 64 streams open and 236 refused: median {lat[10] * 1e3:.1f} ms, "
              f"max {lat[-1] * 1e3:.1f} ms")
        st, _, _ = raw_req(d.port, req("GET", f"/benchmark/jobs/{job['id']}"))
        ensure(st == 200, lambda: st)
    finally:
        for s in held:
            s.close()
        d.req("POST", f"/benchmark/jobs/{job['id']}/cancel", check=False)
    d.wait(job["id"])
    # the places come back once the followers left (their streams end within about a second)
    deadline = time.time() + 10 * SLOW
    while True:
        job2 = d.submit("cache-copy", {"repeat": 1, "gpu": 0})
        s, first = open_stream(d.port, job2["id"])
        s.close()
        if first.startswith(b"HTTP/1.1 200"):
            break
        ensure(time.time() < deadline, lambda: first[:200])
        time.sleep(0.2)


@test
def connection_limit_503(t):
    """max-connections in use: a request is answered 503 with Retry-After (not closed), /health and
    /metrics are answered; when the holders leave, it serves again"""
    d = t.small
    job = d.submit("cache-copy", {"models": "fake-sleep"})
    held = []
    try:
        for _ in range(3):
            # the submit's connection (or a stream's) may still count until the daemon sees it
            # closed (slow under the sanitizers): a 503 then is the limit working; try again
            deadline = time.time() + 10 * SLOW
            while True:
                s, first = open_stream(d.port, job["id"])
                if not first.startswith(b"HTTP/1.1 503") or time.time() > deadline:
                    break
                s.close()
                time.sleep(0.1)
            ensure(first.startswith(b"HTTP/1.1 200"), lambda: first[:200])
            held.append(s)
        st, hdrs, body = raw_req(d.port, req("GET", "/benchmark/jobs"))
        ensure(st == 503 and "retry-after" in hdrs, lambda: (st, hdrs, body))
        ensure(json.loads(body)["error"]["code"] == "busy", lambda: body)
        health_ok(d.port)
        st, _, _ = raw_req(d.port, req("GET", "/metrics"))
        ensure(st == 200, lambda: st)
    finally:
        for s in held:
            s.close()
    deadline = time.time() + 10 * SLOW
    while raw_req(d.port, req("GET", "/benchmark/jobs"))[0] != 200:
        ensure(time.time() < deadline, "the daemon did not serve again")
        time.sleep(0.1)
    # the closed streams and that GET may still count until the daemon sees them closed (a 503
    # with the limit at 3 is the limit working; seen under the sanitizers): try again until then
    while True:
        st = d.json("POST", f"/benchmark/jobs/{job['id']}/cancel")[0]
        if st != 503 or time.time() > deadline:
            break
        time.sleep(0.1)
    ensure(st == 202, lambda: f"cancel of the held job answered {st}")


def _resolve(spec, node):
    while isinstance(node, dict) and "$ref" in node:
        node = spec["components"]["schemas"][node["$ref"].split("/")[-1]]
    return node


def _valid_item(sch):
    if "enum" in sch:
        return sch["enum"][0]
    if sch.get("type") == "integer":
        return sch.get("minimum", 1)
    if sch.get("type") == "number":
        return sch.get("minimum", 0)
    return "a"


def _compare_of_length(n):
    """A valid decode comparison (CompareList) of exactly n bytes: override-tensor with 16 distinct
    values of printable ASCII (the most a key takes), n >= 16 + 16 * 2 + 15."""
    prefix = "override-tensor="
    r = n - len(prefix) - 15
    base, extra = divmod(r, 16)
    return prefix + ",".join("%02d" % i + "x" * (base + (i < extra) - 2) for i in range(16))


# A comparison is structured (KEY=V1,V2, the named keys, values that fit them): its valid items.
_COMPARE_ITEMS = ["moe-backend=offload,hybrid", "moe-hybrid-max-fetch=2,4", "moe-cache-size=auto,64", "n-cpu-moe=0,8"]


def _limit_cases(name, sch):
    """(what, value, must_refuse) for every limit the schema states on one property."""
    out = []
    for alt in sch.get("oneOf", [sch]):
        t = alt.get("type")
        if t in ("integer", "number"):
            step = 1 if t == "integer" else max(abs(alt.get("maximum", 1)) * 1e-3, 1e-9)
            if "maximum" in alt:
                out += [(f"{name} = maximum", alt["maximum"], False), (f"{name} > maximum", alt["maximum"] + step, True)]
            if "minimum" in alt:
                lo = alt["minimum"]
                out += [(f"{name} = minimum", lo, False),
                        (f"{name} < minimum", lo - (1 if t == "integer" else max(abs(lo) * 1e-3, 1e-9)), True)]
        elif t == "string":
            fill = "a" if "pattern" not in alt or re_fullmatch(alt["pattern"], "a") else "/"
            if "enum" in alt:
                out += [(f"{name} = {alt['enum'][-1]}", alt["enum"][-1], False), (f"{name} not in enum", "zz-none", True)]
            if "maxLength" in alt:
                n = alt["maxLength"]
                if "pattern" in alt and alt["pattern"].startswith("^https?://"):
                    out += [(f"{name} at maxLength", "http://127.0.0.1/" + "u" * (n - 17), False),
                            (f"{name} over maxLength", "http://127.0.0.1/" + "u" * (n - 16), True)]
                elif name == "compare":
                    out += [(f"{name} at maxLength", _compare_of_length(n), False),
                            (f"{name} over maxLength", _compare_of_length(n + 1), True),
                            (f"{name} at maxLength in 2-byte characters", "é" * n, True)]
                elif "pattern" in alt and not re_fullmatch(alt["pattern"], fill) and _names_of(sch):
                    # a comma list of known names (bw's dtype, formats, model): names up to n characters
                    at = _names_of_length(_names_of(sch), n)
                    out += [(f"{name} at maxLength", at, False), (f"{name} over maxLength", at + ",x", True)]
                else:
                    out += [(f"{name} at maxLength", fill * n, False), (f"{name} over maxLength", fill * (n + 1), True),
                            (f"{name} at maxLength in 2-byte characters", "é" * n,
                             "pattern" in alt and not re_fullmatch(alt["pattern"], "é" * n))]
            if alt.get("minLength", 0) >= 1:
                out.append((f"{name} under minLength", "", True))
            if "pattern" in alt:
                bad = next(v for v in ("bad value\n", "a\0b") if not re_fullmatch(alt["pattern"], v))
                out.append((f"{name} outside pattern", bad, True))
        elif t == "array":
            item = _valid_item(_resolve(SPEC, alt.get("items", {})))
            if "maxItems" in alt and name == "compare":
                n = alt["maxItems"]
                out += [(f"{name} with maxItems", _COMPARE_ITEMS[:n], False),
                        (f"{name} over maxItems", _COMPARE_ITEMS[:n] + ["override-tensor=a,b"], True)]
            elif "maxItems" in alt:
                n = alt["maxItems"]
                out += [(f"{name} with maxItems", [item] * n, False), (f"{name} over maxItems", [item] * (n + 1), True)]
            if alt.get("minItems", 0) >= 1:
                out.append((f"{name} under minItems", [], True))
    return out


def _names_of(sch):
    """The names a oneOf [comma string, array of enum] allows (its array branch's enum), or []."""
    for alt in sch.get("oneOf", []):
        if alt.get("type") == "array":
            return [x for x in _resolve(SPEC, alt.get("items", {})).get("enum", []) if x != "all"]
    return []


def _names_of_length(names, n):
    """Names (repeats allowed) joined by commas into exactly n characters (else as close below)."""
    prev = {}  # length -> (previous length, name)
    for nm in names:
        prev.setdefault(len(nm), (0, nm))
    for length in range(1, n + 1):
        if length in prev:
            for nm in names:
                nxt = length + 1 + len(nm)
                if nxt <= n and nxt not in prev:
                    prev[nxt] = (length, nm)
    length = max(k for k in prev if k <= n)
    parts = []
    while length:
        length, nm = prev[length]
        parts.append(nm)
    return ",".join(reversed(parts))


def re_fullmatch(rx, v):
    """The pattern as JSON Schema reads it ($ is the end of the string, not before a last newline)."""
    import re
    return re.search(rx[:-1] + r"\Z" if rx.endswith("$") else rx, v) is not None


SPEC = None


@test
def spec_limits(t):
    """every limit api/openapi.yaml states for a request is what the server enforces: just past it
    is 400 naming the field, at it is not refused for that field"""
    global SPEC
    import yaml
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "api", "openapi.yaml")) as f:
        SPEC = yaml.safe_load(f)
    d = t.main
    base = {"bw": {"gpu": 1}, "cache-copy": {"gpu": 1}, "load-weights": {"model": t.models + "/m", "gpu": 1},
            "decode": {"url": "http://127.0.0.1:9/"}}
    kinds = {"bw": "BwArgs", "cache-copy": "CacheCopyArgs", "load-weights": "LoadWeightsArgs", "decode": "DecodeArgs"}
    timeout = _resolve(SPEC, SPEC["components"]["schemas"]["StartBw"]["properties"]["timeout_s"])
    cases = [("bw", "timeout_s", w, v, r) for w, v, r in _limit_cases("timeout_s", timeout)]
    for kind, sname in kinds.items():
        for prop, sch in SPEC["components"]["schemas"][sname]["properties"].items():
            if prop == "gpu":
                continue  # a GPU index or uuid the inventory must have: unknown_gpu, checked in the table
            cases += [(kind, prop, w, v, r) for w, v, r in _limit_cases(prop, _resolve(SPEC, sch))]
    bad, ids = [], []
    for kind, prop, what, value, refuse in cases:
        body = {"kind": kind, "args": dict(base[kind])}
        if prop == "timeout_s":
            body["timeout_s"] = value
        else:
            if kind == "decode" and prop == "server":
                body["args"] = {"model": t.models + "/m"}
            if kind == "decode" and prop == "url":
                body["args"] = {}
            if kind == "decode" and prop == "compare":  # arms are fresh servers: not with a url
                body["args"] = {"server": "ft", "model": t.models + "/m"}
            body["args"][prop] = value
        st, _, doc = d.json("POST", P, body, check=False)
        field = prop if prop == "timeout_s" else "args." + prop
        refused = st == 400 and (doc["error"]["code"] == "invalid_json" or  # a NUL in a string
                                 (doc["error"]["code"] in ("invalid_argument", "missing_field") and
                                  doc["error"]["field"] == field))
        if st == 202:
            ids.append(doc["id"])
        if refused != bool(refuse):
            bad.append(f"{kind} {what}: {st} {doc if st != 202 else 'accepted'}")
    for jid in ids:
        d.req("POST", f"/benchmark/jobs/{jid}/cancel", check=False)
    print(f"# spec limits: {len(cases)} cases from api/openapi.yaml, {len(bad)} disagree")
    ensure(len(cases) >= 60, lambda: len(cases))
    ensure(not bad, lambda: "\n".join(bad))


def main():
    t = Scratch("ftbenchd-hostile-", escape=True)
    # a daemon with the decode-url allowlist (#17 defect 5) lets the table's loopback URL through
    allow = ["--decode-urls", "http://127.0.0.1:9"] if "--decode-urls" in subprocess.run(
        [FTBENCHD, "--help"], capture_output=True, text=True).stdout else []
    t.main = Daemon(t.tmp, "main", "--model-roots", t.models, "--decode-server", "ft=ft serve {model} --port {port}",
                    "--max-event-streams", "64", "--max-queue", "1000", *allow)
    t.slow = Daemon(t.tmp, "slow", "--header-timeout", "2")
    t.small = Daemon(t.tmp, "small", "--max-connections", "3", "--max-event-streams", "3")
    failed = 0
    plan(len(tests))  # the plan (daemon exit failures add unnumbered "not ok" lines)
    try:
        for d in (t.main, t.slow, t.small):
            d.start()
        failed += run_tests(tests, t)
        failed += stop_checked((t.main, t.slow, t.small))
    finally:
        kill_all((t.main, t.slow, t.small))
        failed = finish(t.tmp, failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
