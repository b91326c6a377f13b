#!/usr/bin/env python3
"""What an operator sees: the status page in a real browser (Debian's headless
chromium), /metrics through Prometheus' own text parser (python3-prometheus-client), SSE ids and
Last-Event-ID, /openapi.json, profile history and drift. The real daemon on loopback with the fake
worker (tests/fixtures/fakeworker.c). TAP output with a plan line; checks do not use `assert`, so
PYTHONOPTIMIZE changes nothing; every daemon started is stopped."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # ftd_harness
from ftd_harness import BUILD, FTBENCHD, GPU0, ROOT, CheckFailed, Scratch, finish, nfd_labels, openapi_contract, parse_sse, plan, run_tests  # noqa: E402,E501
from ftd_harness import Daemon as _Daemon  # noqa: E402
from ftd_harness import ensure as check  # noqa: E402

ARTIFACTS = os.path.join(BUILD, "test-artifacts")
FIXTURE_UUID = "GPU-8eb97239-58cd-4a4f-9b2e-0123456789ab"
Failed = CheckFailed


def Daemon(tmp, name, *extra, env=None):
    """The harness' daemon as these tests use it: every response checked against the served
    OpenAPI document (the page, /metrics and the history also by their own parsers), the fake
    worker's 20 ms steps, a fresh port at each start, 30 s to wait for a job."""
    return _Daemon(tmp, name, *extra, env=env, step_ms="20", new_port=True, wait_s=30)


def sse_events(d, jid, last=None):
    """The whole event stream of a finished job: [(id, event, data)]."""
    h = {"Last-Event-ID": str(last)} if last is not None else {}
    st, _, raw = d.req("GET", f"/benchmark/jobs/{jid}/events", headers=h)
    check(st == 200, f"events: {st}")
    return parse_sse(raw)


# ---------------------------------------------------------------- tests

def test_metrics_real_parser(t):
    """Prometheus' own parser: every family typed (none 'unknown', which is what samples away
    from their TYPE line become), no family twice, the profile gauges there."""
    t.d.wait(t.d.submit("cache-copy", {"repeat": 1})["id"])  # a job in the duration histogram
    st, h, raw = t.d.req("GET", "/metrics")
    check(st == 200 and h["content-type"].startswith("text/plain"), f"/metrics {st} {h.get('content-type')}")
    fams = list(text_string_to_metric_families(raw.decode()))
    names = [f.name for f in fams]
    check(len(names) == len(set(names)), f"a family twice: {sorted(n for n in names if names.count(n) > 1)}")
    untyped = [f.name for f in fams if f.type == "unknown"]
    check(not untyped, f"families read as untyped: {untyped}")
    byname = {f.name: f for f in fams}
    # the duration histogram, per kind: buckets cumulative in rising le, the last le +Inf and
    # equal to _count (the jobs the tests ran are in it)
    dur = byname.get("ftbenchd_job_duration_seconds")
    check(dur is not None and dur.type == "histogram", "ftbenchd_job_duration_seconds missing or not a histogram")
    kinds = {s.labels["kind"] for s in dur.samples}
    for kind in kinds:
        bk = [(float(s.labels["le"]), s.value) for s in dur.samples
              if s.name.endswith("_bucket") and s.labels["kind"] == kind]
        count = [s.value for s in dur.samples if s.name.endswith("_count") and s.labels["kind"] == kind]
        check(bk and bk[-1][0] == float("inf") and [b[0] for b in bk] == sorted(b[0] for b in bk)
              and all(a[1] <= b[1] for a, b in zip(bk, bk[1:])) and count == [bk[-1][1]],
              f"{kind}'s duration buckets {bk}, count {count}")
    check(sum(s.value for s in dur.samples if s.name.endswith("_count")) > 0, "no job in the duration histogram")
    hyb = byname.get("ftbenchd_profile_hybrid")
    check(hyb is not None and hyb.type == "gauge", "ftbenchd_profile_hybrid missing or not a gauge")
    got = {(s.labels["gpu"], s.labels["dtype"]): s.value for s in hyb.samples}
    check(got.get((FIXTURE_UUID, "bf16")) == 1.0 and got.get((FIXTURE_UUID, "nvfp4")) == 0.0, f"hybrid samples {got}")
    rd = byname["ftbenchd_profile_cpu_stream_read_gbs"]
    check(any(s.labels["gpu"] == FIXTURE_UUID and s.value == 210.5 for s in rd.samples), "read ceiling sample")


def test_sse_ids_and_resume(t):
    jid = t.d.submit("cache-copy", {"repeat": 4})["id"]
    t.d.wait(jid)
    ev = sse_events(t.d, jid)
    ids = [int(i) for i, _, _ in ev]
    check(ids == sorted(set(ids)) and ids[0] >= 1, f"ids not strictly increasing: {ids}")
    check(len(ev) >= 4, f"only {len(ev)} events")
    k = len(ev) // 2
    rest = sse_events(t.d, jid, last=ids[k - 1])
    check([int(i) for i, _, _ in rest] == ids[k:], f"resume after {ids[k - 1]}: {[i for i, _, _ in rest]}")
    check(rest == ev[k:], "resumed events differ from the tail of the full stream")
    check(sse_events(t.d, jid, last=ids[k - 1] + 1 if ids[k] > ids[k - 1] + 1 else ids[k - 1]) == ev[k:],
          "resume after an id between two of this stream's")
    check(sse_events(t.d, jid, last=ids[-1]) == [], "resume after the last event sent something")
    st, _, raw = t.d.req("GET", f"/benchmark/jobs/{jid}/events", headers={"Last-Event-ID": "x1"})
    err = json.loads(raw)["error"]
    check(st == 400 and err["field"] == "Last-Event-ID", f"bad Last-Event-ID: {st} {err}")


def type_lists(node, where="$"):
    """Where a JSON Schema type list (["string","null"]) is left: OpenAPI 3.0 has none."""
    if isinstance(node, dict):
        here = [where] if isinstance(node.get("type"), list) else []
        return here + [w for k, v in node.items() for w in type_lists(v, f"{where}.{k}")]
    if isinstance(node, list):
        return [w for i, v in enumerate(node) for w in type_lists(v, f"{where}[{i}]")]
    return []


def test_openapi_json(t):
    got = t.d.get("/openapi.json")
    want = openapi_contract().served  # api/openapi.yaml through scripts/gen-openapi-json.py --json
    check(got == want, "/openapi.json differs from api/openapi.yaml")
    check(got["openapi"] == "3.0.3" and not type_lists(got), f"not OpenAPI 3.0 form: {type_lists(got)[:5]}")
    for p in ("/", "/openapi.json", "/profiles/{uuid}/history", "/metrics", "/bench/run", "/bench/profile"):
        check(p in got["paths"], f"{p} not in the document")


def test_history_and_drift(t):
    nfd = os.path.join(t.tmp, "hist", "features.d", "ftbenchd")
    d = Daemon(t.tmp, "hist", "--history", "3", "--nfd-features-file", nfd)
    d.nfd = nfd
    try:
        d.start(FAKE_READ_GBS="100.5")
        for _ in range(2):
            check(d.wait(d.submit("bw", {})["id"])["state"] == "succeeded", "bw failed")
        d.stop()
        d.start(FAKE_READ_GBS="80")  # a DIMM lost: 20 % less
        check(d.wait(d.submit("bw", {})["id"])["state"] == "succeeded", "bw failed")
        h = d.get(f"/profiles/{GPU0}/history")
        reads = [p["ceilings"]["cpu_stream_read_gbs"] for p in h["profiles"]]
        check(h["keep"] == 3 and reads == [100.5, 100.5, 80], f"history {h['keep']} {reads}")
        cur = d.get(f"/profiles/{GPU0}")
        drift = cur.get("drift", [])
        check(len(drift) == 1 and drift[0]["figure"] == "cpu_stream_read_gbs", f"drift {drift}")
        check(abs(drift[0]["ratio"] - 80 / 100.5) < 1e-9, f"ratio {drift[0]['ratio']}")
        check(any(w.startswith("drift: cpu_stream_read_gbs 80.00") for w in cur["warnings"]), f"{cur['warnings']}")
        check(h["profiles"][1].get("drift") == [], "an unchanged profile: drift checked, none found")
        fams = {f.name: f for f in text_string_to_metric_families(d.req("GET", "/metrics")[2].decode())}
        s = [x for x in fams["ftbenchd_profile_drift_ratio"].samples if x.labels["gpu"] == GPU0]
        check(len(s) == 1 and s[0].labels["figure"] == "cpu_stream_read_gbs" and abs(s[0].value - 0.796) < 1e-3,
              f"drift metric {s}")
        check(len(d.get(f"/profiles/{GPU0}/history?limit=1")["profiles"]) == 1, "limit=1")
        check(d.wait(d.submit("bw", {})["id"])["state"] == "succeeded", "bw failed")
        h = d.get(f"/profiles/{GPU0}/history")
        check([p["ceilings"]["cpu_stream_read_gbs"] for p in h["profiles"]] == [100.5, 80, 80],
              "history keeps the newest 3")
        check(not any("valid" in p for p in h["profiles"]), "the fake profiles carry no valid field")
        # a bw worker's exit 3 (its profile's own checks failed): the job fails with the reason,
        # the profile goes to the history only, the stored one is unchanged
        before = d.get(f"/profiles/{GPU0}")
        j = d.wait(d.submit("bw", {"isa": "fake-invalid"})["id"])
        check(j["state"] == "failed" and "the profile is not valid" in (j["error"] or "") and
              "fake: a spread over 50%" in j["error"], f"invalid bw job: {j['state']} {j['error']}")
        check(d.get(f"/profiles/{GPU0}") == before, "the stored profile changed")
        h = d.get(f"/profiles/{GPU0}/history")["profiles"]
        check(h[-1].get("valid") is False and len(h) == 3, "the invalid profile is the newest in the history")
        check(d.req("GET", "/profiles/GPU-99999999-aaaa-bbbb-cccc-000000000000/history")[0] == 404, "unknown: 404")
        check(d.req("GET", f"/profiles/{GPU0}/history?limit=0")[0] == 400, "limit=0: 400")
        check(d.req("GET", f"/profiles/{GPU0}/nothing")[0] == 404, "other sub-path: 404")
        # read as nfd-worker would an hour after the fake profile was measured (epoch 1795000000.5)
        labels = nfd_labels(nfd, 1795000000.5 + 3600)
        read = labels.pop("ftbenchd/cpu-read-mbps", "")
        check(labels == {"ftbenchd/profiles": "1", "ftbenchd/bf16.verdict": "offload", "ftbenchd/profile-age": "lt-1d"}
              and read.isdigit(), f"NFD feature file: {labels}, cpu-read-mbps {read!r}")
        t.hist = d  # kept running for the page test
    except Exception:
        d.stop()
        raise


def chromium():
    for c in ("chromium", "chromium-browser"):
        p = shutil.which(c)
        if p:
            return p
    raise Failed("chromium is not installed (scripts/deps.sh installs Debian's chromium)")


def browse(url, *flags):
    udd = tempfile.mkdtemp(prefix="ftb-chromium-")
    try:
        r = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            f"--user-data-dir={udd}", *flags, url], capture_output=True, timeout=120)
        return r.stdout.decode(errors="replace")
    finally:
        shutil.rmtree(udd, ignore_errors=True)


def test_page_in_browser(t):
    d = getattr(t, "hist", None)
    check(d is not None, "needs the history daemon")
    shutil.copy(os.path.join(ROOT, "tests", "fixtures", "profiles", "full.json"),
                os.path.join(d.prof, FIXTURE_UUID + ".json"))
    d.env["FAKE_STEP_MS"] = "700"
    d.stop()
    d.start()
    # rewritten at start: the fixture's GPU and the fake one disagree on bf16
    labels = {k: v for k, v in nfd_labels(d.nfd, 1795000000.5 + 3600).items() if k.endswith(".verdict")}
    check(labels == {"ftbenchd/bf16.verdict": "mixed", "ftbenchd/ds_fp4.verdict": "offload",
                     "ftbenchd/fp8_block.verdict": "offload", "ftbenchd/mxfp4_triton.verdict": "hybrid",
                     "ftbenchd/nvfp4.verdict": "offload"}, f"NFD feature file after start: {labels}")
    jid = d.submit("cache-copy", {"repeat": 30, "gpu": 1})["id"]
    deadline = time.time() + 10
    while d.get(f"/benchmark/jobs/{jid}")["state"] != "running" and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.8)  # a first progress event
    url = f"http://127.0.0.1:{d.port}/"
    dom = browse(url, "--virtual-time-budget=4000", "--dump-dom")
    check("<h1>ftbenchd</h1>" in dom, f"no page: {dom[:300]}")
    check(dom.count('<tr class="gpu"') == 2 and GPU0 in dom, "the two GPUs")
    check(f'data-job="{jid}" data-state="running" data-live="1"' in dom,
          "the running job's progress was not updated live by the page's script")
    check(f'class="profile" data-uuid="{FIXTURE_UUID}"' in dom, "the fixture profile")
    for fmt in ("bf16", "nvfp4", "mxfp4_triton"):
        check(f'data-format="{fmt}"' in dom, f"format {fmt} not drawn")
    check(dom.count('class="bar" data-figure="cpu_moe_gbs"') >= 4, "CPU MoE bars")
    check(dom.count('class="threshold"') >= 5, "threshold lines")
    check('class="history-plot"' in dom, "history plots")
    check(dom.count("<svg") >= 2, "svg plots")
    check("http://" not in dom.replace(url, "").replace("http://www.w3.org", ""), "an external asset")
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "status-page.png")
    browse(url, "--virtual-time-budget=3000", "--hide-scrollbars", "--window-size=1100,2400",
           f"--screenshot={shot}")
    check(os.path.getsize(shot) > 20000, "screenshot")
    print(f"# screenshot: {shot}")
    d.req("POST", f"/benchmark/jobs/{jid}/cancel")


def test_page_token(t):
    d = Daemon(t.tmp, "tok", "--token-file", t.token_file)
    try:
        d.start()
        st, h, raw = d.req("GET", "/")
        check(st == 401 and h["content-type"].startswith("text/html") and b'id="login"' in raw,
              f"no token: {st} {h.get('content-type')}")
        check(b"Fake H200" not in raw, "the token page shows the daemon's state")
        st, h, raw = d.req("GET", "/", headers={"Authorization": "Bearer " + t.token})
        check(st == 200 and b'<tr class="gpu"' in raw, f"with the token: {st}")
        st, h, raw = d.req("GET", "/metrics")
        check(st == 401 and h["content-type"].startswith("application/json"), "JSON endpoints stay JSON 401")
        st, h, raw = d.req("GET", "/openapi.json")
        check(st == 401, "/openapi.json needs the token like the API")
    finally:
        d.stop()


def test_rebench_stale(t):
    """A profile whose fingerprint names another kernel is stale: the daemon queues a bw job for
    that GPU at start (rebench = on-change, the default), once; never: nothing."""
    with open(os.path.join(ROOT, "tests", "fixtures", "profiles", "full.json")) as f:
        p = json.load(f)
    p["gpu"]["uuid"] = GPU0
    p["fingerprint"] = {"kernel": "0.0.0-another-machine", "tool_version": "0.1.0"}
    for mode, want in (("never", 0), ("on-change", 1)):
        # GPU1 has no profile: held by a process (FAKE_BUSY_FILE), its first-boot job waits
        busy = os.path.join(t.tmp, "busy-" + mode)
        open(busy, "w").close()
        d = Daemon(t.tmp, "rebench-" + mode, "--rebench", mode, env={"FAKE_STEP_MS": "2000", "FAKE_BUSY_FILE": busy})
        os.makedirs(d.prof, exist_ok=True)
        with open(os.path.join(d.prof, GPU0 + ".json"), "w") as f:
            json.dump(p, f)
        try:
            d.start()
            jobs = d.get("/benchmark/jobs")["jobs"]
            bw = [j for j in jobs if j["kind"] == "bw" and j["gpu"] and j["gpu"]["uuid"] == GPU0]
            check(len(jobs) == want and len(bw) == want, f"rebench={mode}: jobs {jobs}")
            if want:
                st, _, page = d.req("GET", "/")
                check(b'class="warn stale">stale: kernel 0.0.0-another-machine -&gt; ' in page, "the page says stale")
                d.stop()
                d.start()  # the queued job is still there: not queued twice
                jobs = d.get("/benchmark/jobs")["jobs"]
                check(len([j for j in jobs if not j["state"] in ("interrupted",)]) <= 1,
                      f"queued twice: {[(j['kind'], j['state']) for j in jobs]}")
        finally:
            d.stop()
    r = subprocess.run([FTBENCHD, "-n", "--rebench", "sometimes"], capture_output=True, text=True)
    check(r.returncode == 2 and "rebench 'sometimes'" in r.stderr, f"bad rebench: {r.returncode} {r.stderr}")


TESTS = [test_metrics_real_parser, test_sse_ids_and_resume, test_openapi_json, test_history_and_drift,
         test_page_in_browser, test_page_token, test_rebench_stale]


def main():
    plan(len(TESTS))
    t = Scratch("ftbenchd-operator-")
    tmp = t.tmp
    t.token = "0123456789abcdef0123456789"
    t.token_file = os.path.join(tmp, "token")
    with open(t.token_file, "w") as f:
        f.write(t.token + "\n")
    os.chmod(t.token_file, 0o600)
    t.d = Daemon(tmp, "main")
    os.makedirs(t.d.prof, exist_ok=True)
    shutil.copy(os.path.join(ROOT, "tests", "fixtures", "profiles", "full.json"),
                os.path.join(t.d.prof, FIXTURE_UUID + ".json"))
    failed = 0
    try:
        t.d.start()
        failed += run_tests(TESTS, t)
    finally:
        failed = finish(tmp, failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
