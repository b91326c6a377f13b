#!/usr/bin/python3
"""By hand: how /health fares under connection load, for RESULTS.md.
Starts FTBENCHD (default build/bin/ftbenchd) on loopback with fake workers, then
  1. IDLE idle sockets (connect, send nothing) held open, N GET /health, one at a time;
  2. SSE followers of one running job held open (those the daemon turns away are closed), N GET
     /health the same way.
Prints, per phase: /health answered 200 (of N), median / p99 / max latency, and for the SSE phase
how many streams were served and how many refused (503). Loopback only, bounded, stops by itself.

usage: bench/daemon_hostile.py [--ftbenchd PATH] [--idle 300] [--sse 300] [-n 200]"""
import argparse
import os
import socket
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import daemon_test  # noqa: E402


def health(port, timeout):
    t0 = time.perf_counter()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            c = s.recv(4096)
            if not c:
                break
            data += c
        s.close()
        ok = data.startswith(b"HTTP/1.1 200")
    except OSError:
        ok = False
    return ok, time.perf_counter() - t0


def probe(port, n, timeout):
    lat, ok = [], 0
    for _ in range(n):
        good, dt = health(port, timeout)
        ok += good
        if good:
            lat.append(dt)
    lat.sort()
    q = (lambda f: f"{lat[min(len(lat) - 1, int(f * len(lat)))] * 1e3:.2f} ms") if lat else (lambda f: "-")
    return f"/health 200: {ok}/{n}, median {q(0.5)}, p99 {q(0.99)}, max {q(1.0)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ftbenchd", default=daemon_test.FTBENCHD)
    ap.add_argument("--idle", type=int, default=300)
    ap.add_argument("--sse", type=int, default=300)
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=2.0, help="seconds one /health may take")
    a = ap.parse_args()
    daemon_test.FTBENCHD = a.ftbenchd
    tmp = tempfile.mkdtemp(prefix="ftbenchd-hostile-bench-")
    d = daemon_test.Daemon(tmp, "d")
    d.args[0] = a.ftbenchd
    d.start()
    try:
        print(f"ftbenchd {a.ftbenchd}")
        print(f"no load: {probe(d.port, a.n, a.timeout)}")
        held = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(a.idle)]
        time.sleep(0.5)
        print(f"{a.idle} idle sockets: {probe(d.port, a.n, a.timeout)}")
        for s in held:
            s.close()
        deadline = time.time() + 30  # until the daemon serves again (it may take a while to notice)
        while not health(d.port, a.timeout)[0] and time.time() < deadline:
            time.sleep(0.2)
        job = d.submit("cache-copy", {"models": "fake-sleep", "gpu": 0})
        d.wait(job["id"], ("running",))
        held, served, refused, other = [], 0, 0, 0
        for _ in range(a.sse):
            try:
                s = socket.create_connection(("127.0.0.1", d.port), timeout=a.timeout)
                s.sendall(f"GET /benchmark/jobs/{job['id']}/events HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                first = s.recv(4096)
            except OSError:
                first = b""
            if first.startswith(b"HTTP/1.1 200"):
                served += 1
                held.append(s)
            else:
                refused += first.startswith(b"HTTP/1.1 503")
                other += not first.startswith(b"HTTP/1.1 503")
                s.close()
        print(f"{a.sse} SSE followers ({served} served, {refused} refused 503, {other} no answer): "
              f"{probe(d.port, a.n, a.timeout)}")
        for s in held:
            s.close()
        time.sleep(2)
        try:
            d.req("POST", f"/benchmark/jobs/{job['id']}/cancel", check=False)
        except Exception as e:  # noqa: BLE001 (the daemon before #17 may still be full)
            print(f"cancel: {e!r}")
    finally:
        d.stop(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
