"""ftd_harness: what the Python integration tests of ftbenchd share (daemon_test.py, hostile_test.py,
jobs_hardening_test.py, operator_test.py, limits_test.py): the build's paths, the check function,
a real ftbenchd on loopback (free port, temp state and profile dirs, a fake worker) that is always
stopped, and the TAP runner (the plan line first, "ok N - name" / "not ok N - name", a traceback
on failure, the daemons' logs scanned for sanitizer and valgrind reports at the end).

Checks are ensure() calls, never bare `assert` (python -O / PYTHONOPTIMIZE would remove them);
bare_asserts(path) finds any. Environment: BUILD (default build), FT_DAEMON_WRAP (e.g.
"valgrind --leak-check=full ..."; every wait is then SLOW times longer)."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
FTBENCHD = os.path.join(BUILD, "bin", "ftbenchd")
FTBENCH = os.path.join(BUILD, "bin", "ftbench")
# the test build of ftbench: fake GPUs and fixed bw figures (src/cli/cli.h, tests/lib/fake_gpus.c)
FTBENCH_HOOKS = os.path.join(BUILD, "tests", "integration", "ftbench_hooks")
FAKE = os.path.join(BUILD, "tests", "fixtures", "fakeworker")
WRAP = os.environ.get("FT_DAEMON_WRAP", "").split()
SLOW = 1 if not WRAP else 8  # valgrind is slow
# the GPUs of the fake worker's inventory (tests/fixtures/fakeworker.c)
GPU0 = "GPU-11111111-aaaa-bbbb-cccc-000000000000"
GPU1 = "GPU-22222222-aaaa-bbbb-cccc-000000000000"
FINAL = ("succeeded", "failed", "cancelled", "timed_out", "interrupted")


class CheckFailed(Exception):
    """A check failed (not AssertionError: nothing here depends on assert statements)."""


def ensure(cond, msg="check failed"):
    """The test's check: raises CheckFailed(msg) when cond is false, whatever python's -O is.
    msg: a string, or a function giving it (evaluated only on failure, as assert's message is)."""
    if not cond:
        raise CheckFailed(msg() if callable(msg) else msg)


def bare_asserts(path):
    """Line numbers of `assert` statements in the file at path (python -O would drop them)."""
    import ast
    with open(os.path.abspath(path)) as f:
        tree = ast.parse(f.read())
    return sorted(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert))


def parse_sse(raw):
    """An event stream (bytes) as [(id, event, data)]: each block's fields ("name: value", the one
    space after the colon dropped), comments left out, data parsed as JSON; blocks without data
    are skipped."""
    out = []
    for block in raw.decode().split("\n\n"):
        f = {}
        for line in block.splitlines():
            if line.startswith(":") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            f[k] = v[1:] if v.startswith(" ") else v
        if "data" in f:
            out.append((f.get("id"), f.get("event"), json.loads(f["data"])))
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


LIVE = []  # every Daemon with a process started, so none outlives the run


def stop_all_daemons():
    """SIGTERM, then SIGKILL after 5 s, to every daemon still running; returns how many were."""
    alive = [d for d in LIVE if d.proc and d.proc.poll() is None]
    for d in alive:
        d.proc.terminate()
    deadline = time.time() + 5 * SLOW
    for d in alive:
        try:
            d.proc.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            d.proc.kill()
            d.proc.wait()
    return len(alive)


def _nullable(node):
    """OpenAPI 3.0 `nullable: true` -> JSON Schema type lists / anyOf null."""
    if isinstance(node, dict):
        node = {k: _nullable(v) for k, v in node.items()}
        if node.pop("nullable", False):
            t = node.get("type")
            if isinstance(t, str):
                node["type"] = [t, "null"]
            else:
                node = {"anyOf": [node, {"type": "null"}]}
        return node
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    return node


class Contract:
    """The OpenAPI document ftbenchd serves at /openapi.json (api/openapi.yaml with api/schemas/*.json
    inlined in OpenAPI 3.0 form by scripts/gen-openapi-json.py) as a checker of responses: the
    status documented for the path and method, the body valid against its schema (3.0's
    `nullable` read as JSON Schema's null); seen collects the (method, path, status) combinations
    checked."""

    def __init__(self):
        import jsonschema
        self.jsonschema = jsonschema
        out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen-openapi-json.py"), "--json",
                              os.path.join(ROOT, "api", "openapi.yaml")], capture_output=True, text=True, check=True)
        self.served = json.loads(out.stdout)
        self.spec = _nullable(self.served)
        self.resolver = jsonschema.RefResolver("", self.spec)
        self.templates = []
        for path in self.spec["paths"]:
            rx = "^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"
            self.templates.append((re.compile(rx), path))
        self.seen = set()

    def check(self, method, url, status, headers, body):
        path = url.split("?")[0]
        tmpl = next((t for rx, t in self.templates if rx.match(path)), None)
        if tmpl is None:
            ensure(status == 404, lambda: f"{method} {url}: undocumented path answered {status}")
            self._error_body(body)
            return
        ops = self.spec["paths"][tmpl]
        op = ops.get(method.lower())
        if op is None:
            ensure(status == 405, lambda: f"{method} {url}: undocumented method answered {status}")
            self._error_body(body)
            return
        resp = op["responses"].get(str(status))
        ensure(resp is not None, lambda: f"{method} {tmpl}: status {status} is not documented")
        self.seen.add((method, tmpl, status))
        if "$ref" in resp:
            resp = self.spec["components"]["responses"][resp["$ref"].split("/")[-1]]
        content = resp.get("content", {})
        ctype = headers.get("content-type", "").split(";")[0].strip()
        ensure(ctype in content, lambda: f"{method} {tmpl} {status}: content-type {ctype} not documented")
        schema = content[ctype].get("schema")
        if ctype == "application/json" and schema is not None:
            doc = json.loads(body)
            self.jsonschema.validate(doc, schema, resolver=self.resolver)

    def _error_body(self, body):
        doc = json.loads(body)
        self.jsonschema.validate(doc, self.spec["components"]["schemas"]["Error"])


_CONTRACT = []


def openapi_contract():
    """The one Contract of this process (read once, on first use: python3-jsonschema and
    python3-yaml are needed only by the tests that check responses)."""
    if not _CONTRACT:
        _CONTRACT.append(Contract())
    return _CONTRACT[0]


class Daemon:
    """One ftbenchd in tmp/name (state/, profiles/, daemon.log) on a free loopback port.
    contract: every req() with check=True is checked against api/openapi.yaml (True, the
    default), another object with check(method, url, status, headers, body), or None. step_ms:
    the fake worker's FAKE_STEP_MS. new_port: a fresh port at each start (else the one of
    __init__). wait_s: how long wait() waits by default (times SLOW)."""

    def __init__(self, tmp, name, *extra, env=None, worker=FAKE, contract=True, step_ms="50", new_port=False,
                 wait_s=20):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.state = os.path.join(self.dir, "state")
        self.prof = os.path.join(self.dir, "profiles")
        self.worker = worker
        self.extra = extra
        self.new_port = new_port
        self.contract = openapi_contract() if contract is True else contract
        self.wait_s = wait_s
        self.env = dict(os.environ, FAKE_STEP_MS=step_ms)
        self.env.update(env or {})
        self.env.pop("NOTIFY_SOCKET", None)
        self.token = None
        self.proc = None
        self.log = os.path.join(self.dir, "daemon.log")
        self._args()

    def _args(self):
        # rebench never unless the test says otherwise: the default (on-change) measures a GPU
        # without a profile once at first boot, a bw job the tests did not submit
        rebench = [] if "--rebench" in self.extra else ["--rebench", "never"]
        self.args = [FTBENCHD, "--listen", f"127.0.0.1:{self.port}", "--state-dir", self.state,
                     "--profile-dir", self.prof, "--worker", self.worker, "--kill-grace", "1", *rebench,
                     *self.extra]

    def start(self, wait=True, **env):
        """Start it (env: variables for this start only); with wait, until /health answers 200."""
        if self.new_port and self.proc is None and LIVE.count(self):
            self.port = free_port()
            self._args()
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen(WRAP + self.args, env=dict(self.env, **env), stdout=self.logf,
                                     stderr=self.logf)
        LIVE.append(self)
        if wait:
            deadline = time.time() + 10 * SLOW
            while time.time() < deadline:
                try:
                    st, _, _ = self.req("GET", "/health", check=False)
                    if st == 200:
                        return self
                except OSError:
                    pass
                if self.proc.poll() is not None:
                    raise CheckFailed(f"ftbenchd exited with {self.proc.returncode}: {open(self.log).read()}")
                time.sleep(0.05)
            raise CheckFailed("ftbenchd did not answer /health")
        return self

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Send sig and wait for the exit (SIGKILL after timeout, then TimeoutExpired); its status."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        rc = self.proc.returncode if self.proc else None
        self.proc = None
        return rc

    def req(self, method, path, body=None, headers=None, check=True, raw=None, timeout=30):
        """One request (body: JSON-encoded; raw: bytes as they are); (status, headers, bytes)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout * SLOW)
        h = dict(headers or {})
        if self.token and "Authorization" not in h:
            h["Authorization"] = "Bearer " + self.token
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        if check and self.contract is not None:
            self.contract.check(method, path, r.status, hdrs, text)
        return r.status, hdrs, text

    def json(self, method, path, body=None, **kw):
        st, h, text = self.req(method, path, body, **kw)
        return st, h, (json.loads(text) if text and h.get("content-type", "").startswith("application/json") else text)

    def get(self, path):
        """GET path, which must answer 200; the parsed JSON."""
        st, _, raw = self.req("GET", path)
        ensure(st == 200, lambda: f"GET {path}: {st} {raw[:200]!r}")
        return json.loads(raw)

    def submit(self, kind, args=None, expect=202, **extra):
        body = {"kind": kind}
        if args is not None:
            body["args"] = args
        body.update(extra)
        st, h, doc = self.json("POST", "/benchmark/start", body)
        ensure(st == expect, lambda: f"submit {kind} {args}: {st} {doc}")
        return doc

    def job(self, jid):
        st, _, doc = self.json("GET", f"/benchmark/jobs/{jid}")
        ensure(st == 200, lambda: doc)
        return doc

    def wait(self, jid, states=FINAL, timeout=None):
        deadline = time.time() + (timeout or self.wait_s) * SLOW
        while time.time() < deadline:
            j = self.job(jid)
            if j["state"] in states:
                return j
            time.sleep(0.03)
        raise CheckFailed(f"job {jid} still {self.job(jid)['state']}, wanted {states}")


def expect_error(d, method, path, status, code, field=None, body=None, **kw):
    """A request that must fail with status and error code (and field); (headers, body)."""
    st, h, doc = d.json(method, path, body, **kw)
    ensure(st == status, lambda: f"{method} {path}: {st} {doc}, wanted {status}")
    ensure(doc["error"]["code"] == code, lambda: f"{method} {path}: code {doc['error']['code']}, wanted {code}")
    if field is not None:
        ensure(doc["error"]["field"] == field, lambda: f"field {doc['error']['field']}, wanted {field}")
    # a refusal says why: a sentence, not nothing
    ensure(len((doc["error"]["message"] or "").strip()) >= 8, lambda: f"{method} {path}: no reason given: {doc}")
    return h, doc


def pid_alive(pid):
    """pid exists and is no zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def job_env_has(pid, jid):
    """Process pid carries job jid's FTBENCHD_JOB_ID in its environment (a worker or its child)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"FTBENCHD_JOB_ID={jid}".encode() in f.read().split(b"\0")
    except OSError:
        return False


class Scratch:
    """The state the tests of one file share: tmp (a fresh temp dir), models (tmp/models with an
    empty model m/ and, with escape, a symlink escape -> /etc), and what the tests add."""

    def __init__(self, prefix, escape=False):
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.models = os.path.join(self.tmp, "models")
        os.makedirs(self.models + "/m")
        if escape:
            os.symlink("/etc", self.models + "/escape")


def on_signals():
    """SIGTERM, SIGINT, SIGHUP (the runner's timeout, ^C) unwind through the finally blocks, so
    the daemons are stopped."""
    def raise_exit(sig, frame):
        raise SystemExit(128 + sig)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, raise_exit)


def run_tests(tests, t, only=None, timed=False):
    """Run each fn(t) of tests (numbered from 1; with only, just those names, keeping their
    numbers): "ok N - name" (a str the test returns is appended as "# note", e.g. "SKIP ..."),
    or "not ok N - name" and the traceback. Returns how many failed."""
    failed = 0
    for n, fn in enumerate(tests, 1):
        if only and fn.__name__ not in only:
            continue
        t0 = time.time()
        try:
            note = fn(t)
            took = f" ({time.time() - t0:.1f} s)" if timed else ""
            print(f"ok {n} - {fn.__name__}{took}" + (f" # {note}" if isinstance(note, str) else ""))
        except Exception as e:
            failed += 1
            print(f"not ok {n} - {fn.__name__}" + (f": {e}" if isinstance(e, CheckFailed) else ""))
            traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()
    return failed


def plan(n):
    print(f"1..{n}")
    sys.stdout.flush()


def stop_checked(daemons):
    """Stop each daemon (SIGTERM, its own grace); an exit status other than 0 is an unnumbered
    "not ok" line. Returns how many did not exit 0."""
    failed = 0
    for d in daemons:
        rc = d.stop()
        if rc != 0:
            failed += 1
            print(f"not ok - {os.path.basename(d.dir)} daemon exit status {rc}")
    return failed


def kill_all(daemons):
    """For a finally: SIGKILL and reap every daemon of daemons still running."""
    for d in daemons:
        if d.proc:
            d.proc.kill()
            d.proc.wait()


def finish(tmp, failed, tail=30):
    """After the tests: stop whatever a failed test left running, scan every tmp/*/daemon.log for
    sanitizer, valgrind error and leak reports ("not ok - ..." each, counted into failed), print
    the logs' tails when anything failed, then remove tmp or say it is kept. Returns failed."""
    stop_all_daemons()
    for sub in sorted(os.listdir(tmp)):
        lp = os.path.join(tmp, sub, "daemon.log")
        if not os.path.exists(lp):
            continue
        text = open(lp, errors="replace").read()
        if re.search(r"ERROR SUMMARY: [1-9]", text) or "runtime error" in text or "Sanitizer" in text:
            print(f"not ok - memory errors or sanitizer reports by the daemon in {sub} (see {lp})")
            failed += 1
        if WRAP and "definitely lost:" in text and not re.search(r"definitely lost: 0 bytes", text):
            print(f"not ok - valgrind: leaks in {sub}")
            failed += 1
    if failed:
        for sub in sorted(os.listdir(tmp)):
            lp = os.path.join(tmp, sub, "daemon.log")
            if os.path.exists(lp):
                print(f"# --- {lp}")
                for line in open(lp, errors="replace").read().splitlines()[-tail:]:
                    print("# " + line)
        print(f"# kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return failed


class Tap:
    """Checks counted as they run, the plan printed last (limits_test.py: the number of checks
    is known only at the end)."""

    def __init__(self):
        self.n = 0
        self.bad = 0

    def check(self, desc, ok, detail=""):
        self.n += 1
        print(("ok" if ok else "not ok") + f" {self.n} - {desc}" + ("" if ok else f" ({detail})"))
        self.bad += not ok

    def done(self):
        print(f"1..{self.n}")
        return 1 if self.bad else 0


NFD_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
NFD_NAMESPACE = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")


def nfd_labels(path, now=None):
    """The node labels node-feature-discovery's local source makes of the feature file at path at
    time now (epoch seconds; default: the clock), by its documented rules (customization guide,
    "Local feature source"): a file whose name starts with a dot is not read; more than 64 kB and
    the file is ignored; `#` lines are comments except the `# +expiry-time=<RFC 3339>` directive,
    which applies to the lines after it (lines of an expired section are skipped); `<key>[=<value>]`
    (value "true" when absent), a later line of the same key wins. Raises CheckFailed for what NFD
    would refuse: an unparsable directive, a key without a namespace, a name or value Kubernetes
    does not accept."""
    import datetime
    ensure(not os.path.basename(path).startswith("."), f"{path}: NFD skips dot files")
    size = os.path.getsize(path)
    ensure(size <= 65536, f"{path}: {size} bytes, over NFD's 64 kB")
    now = time.time() if now is None else now
    expiry = None
    labels = {}
    with open(path) as f:
        for raw in f.read().split("\n"):
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                if line.startswith("# +"):
                    key, _, value = line[3:].partition("=")
                    ensure(key == "expiry-time" and value, f"{path}: unknown or bad directive {line!r}")
                    stamp = datetime.datetime.strptime(value.strip(), "%Y-%m-%dT%H:%M:%SZ")
                    expiry = stamp.replace(tzinfo=datetime.timezone.utc).timestamp()
                continue
            if expiry is not None and expiry < now:
                continue
            key, eq, value = line.partition("=")
            ns, slash, name = key.partition("/")
            ensure(slash and NFD_NAMESPACE.match(ns), f"{path}: {key!r} has no valid namespace")
            ensure(NFD_LABEL_NAME.match(name), f"{path}: label name {name!r} is not valid")
            value = value if eq else "true"
            ensure(value == "" or NFD_LABEL_NAME.match(value), f"{path}: label value {value!r} is not valid")
            labels[key] = value
    return labels
