#!/usr/bin/python3
"""The daemon's mixed-load soak (`make test-soak`, FT_SOAK_S seconds, default 600): one
ftbenchd with fake workers under, all at once,
- a /health prober in its own process (one new connection every 50 ms, as a readiness probe);
- submit floods (50 jobs as fast as possible every 10 s, each with its own Idempotency-Key);
- bursts of 2x the main and reserve places connecting and sending at once (every 20 s);
- event-stream followers above max-event-streams, held 2 s, then dropped (every 15 s);
- slow clients: heads trickled a byte every 0.5 s, bodies a byte every 0.5 s (always 20 + 5);
- kill -9 of the daemon and a restart every 60 s.
At the end: /health p99 (answers while the daemon was up) under 50 ms, no socket of a burst left
without an answer while the daemon was up, and nothing lost: every job the daemon accepted (202)
exists after the restarts and reaches a final state; then SIGTERM ends the daemon within 5 s.
Prints TAP lines and the figures (bench/RESULTS.md keeps them)."""
import json
import multiprocessing
import os
import random
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # ftd_harness
from ftd_harness import Daemon, Scratch, ensure, finish, on_signals  # noqa: E402
from front_test import RESERVE, burst, parse_answer  # noqa: E402
from hostile_test import req  # noqa: E402

DURATION = float(os.environ.get("FT_SOAK_S", "600"))
CAP, STREAMS = 64, 16


def prober(port, stop, out):
    """/health every 50 ms on a new connection: (t, seconds or None when refused, status)."""
    rows = []
    data = req("GET", "/health")
    while not stop.is_set():
        t0 = time.time()
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(data)
            buf = b""
            while parse_answer(buf) is None:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
            s.close()
            got = parse_answer(buf)
            rows.append((t0, time.time() - t0, got[0] if got else None))
        except OSError:
            rows.append((t0, None, None))
        time.sleep(max(0, 0.05 - (time.time() - t0)))
    out.put(rows)


class Soak:
    def __init__(self, d):
        self.d = d
        self.stop = threading.Event()
        self.up = threading.Event()
        self.lock = threading.Lock()
        self.accepted = set()
        self.stats = {"submitted": 0, "accepted": 0, "refused": 0, "bursts": 0, "burst_answers": 0,
                      "burst_unanswered": 0, "followers": 0, "restarts": 0, "slow_cut": 0}
        self.errors = []

    def add(self, k, n=1):
        with self.lock:
            self.stats[k] += n

    def flood(self):
        while not self.stop.wait(10):
            if not self.up.is_set():
                continue
            for _ in range(50):
                key = f"soak-{random.getrandbits(64):016x}"
                body = {"kind": "cache-copy", "args": {"repeat": random.randint(1, 3), "gpu": 0}}
                self.add("submitted")
                try:
                    st, _, doc = self.d.json("POST", "/benchmark/start", body, headers={"Idempotency-Key": key},
                                             check=False, timeout=5)
                except OSError:
                    continue
                if st == 202:
                    with self.lock:
                        self.accepted.add(doc["id"])
                    self.add("accepted")
                else:
                    self.add("refused")

    def bursts(self):
        while not self.stop.wait(20):
            if not self.up.is_set():
                continue
            try:
                counts, _ = burst(self.d.port, 2 * (CAP + RESERVE), ["/health", "/benchmark/jobs?limit=1", "/metrics"])
                self.add("bursts")
                self.add("burst_answers", sum(v for k, v in counts.items() if k != "none"))
            except Exception as e:  # noqa: BLE001
                if self.up.is_set():  # a kill -9 in the middle is not the front's fault
                    self.errors.append(f"burst: {e}")
                    self.add("burst_unanswered")

    def followers(self):
        while not self.stop.wait(15):
            if not self.up.is_set():
                continue
            held = []
            try:
                for _ in range(STREAMS + 24):
                    s = socket.create_connection(("127.0.0.1", self.d.port), timeout=5)
                    held.append(s)
                    s.sendall(req("GET", f"/benchmark/jobs/{self.sleeper}/events"))
                time.sleep(2)
                self.add("followers", len(held))
            except OSError:
                pass
            for s in held:
                s.close()

    def slow(self, body):
        """One slow client for good: a head (or a body) a byte every 0.5 s; reconnect when cut."""
        data = (b"POST /benchmark/start HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 60000\r\n\r\n" + b" " * 60000) if body else \
            b"GET /benchmark/jobs HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"z" * 100000
        while not self.stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", self.d.port), timeout=5)
                start = data.index(b"\r\n\r\n") + 4 if body else 0
                s.sendall(data[:start])
                for i in range(start, len(data)):
                    if self.stop.wait(0.5):
                        break
                    s.send(data[i:i + 1])
            except OSError:
                self.add("slow_cut")
                time.sleep(0.5)

    def follow_me(self):
        """A job that runs until cancelled (GPU 1; the floods use GPU 0), for the followers."""
        self.sleeper = self.d.submit("cache-copy", {"models": "fake-sleep", "gpu": 1})["id"]

    def chaos(self):
        while not self.stop.wait(60):
            self.up.clear()
            self.d.stop(sig=signal.SIGKILL)
            time.sleep(0.2)
            self.d.start()
            self.follow_me()  # the last one was interrupted by the kill
            self.add("restarts")
            self.up.set()


def main():
    on_signals()
    t = Scratch("ftbenchd-soak-")
    d = Daemon(t.tmp, "soak", "--max-connections", str(CAP), "--max-event-streams", str(STREAMS),
               "--header-timeout", "3", "--max-queue", "200", "--retain-jobs", "100000", step_ms="20",
               contract=None)
    failed = 0
    print("1..4")
    try:
        d.start()
        sk = Soak(d)
        sk.follow_me()
        sk.up.set()
        pstop = multiprocessing.Event()
        q = multiprocessing.Queue()
        pr = multiprocessing.Process(target=prober, args=(d.port, pstop, q))
        pr.start()
        threads = [threading.Thread(target=f, daemon=True) for f in (sk.flood, sk.bursts, sk.followers, sk.chaos)]
        threads += [threading.Thread(target=sk.slow, args=(i < 5,), daemon=True) for i in range(25)]
        for th in threads:
            th.start()
        t0 = time.time()
        while time.time() - t0 < DURATION:
            time.sleep(1)
        sk.stop.set()
        pstop.set()
        rows = q.get(timeout=60)
        pr.join()
        for th in threads:
            th.join(timeout=10)
        if not sk.up.is_set():
            d.start()
        d.req("POST", f"/benchmark/jobs/{sk.sleeper}/cancel", check=False)

        lat = sorted(r[1] for r in rows if r[1] is not None and r[2] is not None)
        codes = {}
        for r in rows:
            codes[r[2]] = codes.get(r[2], 0) + 1
        p = lambda q_: lat[min(len(lat) - 1, int(q_ * len(lat)))] * 1e3  # noqa: E731
        print(f"# {DURATION:.0f} s: {len(rows)} /health probes, codes {codes}; "
              f"p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, max {lat[-1] * 1e3:.1f} ms")
        print(f"# load: {json.dumps(sk.stats)}")
        ok = p(0.99) < 50
        print(f"{'ok' if ok else 'not ok'} 1 - /health p99 under 50 ms ({p(0.99):.1f} ms)")
        failed += not ok
        ok = not sk.errors
        print(f"{'ok' if ok else 'not ok'} 2 - every burst socket answered while the daemon was up"
              + ("" if ok else f": {sk.errors[:3]}"))
        failed += not ok

        # nothing lost: every accepted job is there and ends
        deadline = time.time() + 300
        left = set(sk.accepted)
        states = {}
        while left and time.time() < deadline:
            for jid in list(left):
                st, _, doc = d.json("GET", f"/benchmark/jobs/{jid}", check=False)
                if st != 200:
                    states["missing"] = states.get("missing", 0) + 1
                    left.discard(jid)
                    continue
                if doc["state"] in ("succeeded", "failed", "cancelled", "timed_out", "interrupted"):
                    states[doc["state"]] = states.get(doc["state"], 0) + 1
                    left.discard(jid)
            time.sleep(1)
        print(f"# {len(sk.accepted)} accepted jobs: {states}, {len(left)} not final after 300 s")
        ok = not left and "missing" not in states and states.get("failed", 0) == 0
        print(f"{'ok' if ok else 'not ok'} 3 - nothing lost: every accepted job exists and is final")
        failed += not ok
        t1 = time.time()
        rc = d.stop(timeout=5)
        took = time.time() - t1
        ok = rc == 0 and took < 5
        print(f"# SIGTERM: exit {rc} in {took:.2f} s")
        print(f"{'ok' if ok else 'not ok'} 4 - SIGTERM ends the daemon within 5 s")
        failed += not ok
    except Exception as e:  # noqa: BLE001
        print(f"not ok - {e}")
        failed += 1
    finally:
        if d.proc:
            d.proc.kill()
            d.proc.wait()
        failed = finish(t.tmp, failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
