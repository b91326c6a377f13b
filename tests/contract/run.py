#!/usr/bin/python3
"""Contract test: schemathesis (a pinned PyPI test dependency, scripts/deps.sh) drives the live
ftbenchd (fake workers, tests/lib/ftd_harness.py) from api/openapi.yaml with every check
(status codes and bodies as documented, schema-valid requests accepted, schema-invalid ones
refused, SSE events, headers, stateful links), a fixed seed and a bounded number of examples.
0 failures wanted. Prints TAP-like lines.

Environment: FT_TEST_VENV (default /opt/ftbenchd-test-venv), FT_CONTRACT_EXAMPLES (default 40),
FT_CONTRACT_SEED (default 1)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ftd_harness import Daemon  # noqa: E402

VENV = os.environ.get("FT_TEST_VENV", "/opt/ftbenchd-test-venv")
ST = os.path.join(VENV, "bin", "schemathesis")


def main():
    print("1..2")
    if not os.access(ST, os.X_OK):
        print(f"not ok 1 - contract: {ST} is missing (run scripts/deps.sh as root)")
        return 1
    tmp = tempfile.mkdtemp(prefix="ftbenchd-contract-")
    models = os.path.join(tmp, "models")
    os.makedirs(models + "/m")
    d = Daemon(tmp, "main", "--model-roots", models, "--decode-server", "ft=ft serve {model} --port {port}",
               "--max-queue", "1000")
    d.env["FAKE_STEP_MS"] = "1"
    rc = 1
    try:
        d.start()
        env = dict(os.environ, SCHEMATHESIS_HOOKS=os.path.join(HERE, "hooks.py"), NO_COLOR="1")
        cmd = [ST, "run", os.path.join(ROOT, "api", "openapi.yaml"), "-u", f"http://127.0.0.1:{d.port}",
               "--checks", "all", "-w", "1", "--request-timeout", "20",
               "--max-examples", os.environ.get("FT_CONTRACT_EXAMPLES", "40"),
               "--seed", os.environ.get("FT_CONTRACT_SEED", "1")]
        try:
            p = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=400)
            out = p.stdout + p.stderr
            code = p.returncode
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            code = -1
        m = re.search(r"(\d+) generated, (\d+) (passed|found)", out)
        summary = m.group(0) if m else "no summary"
        if code == 0:
            print(f"ok 1 - schemathesis against api/openapi.yaml: {summary}")
            rc = 0
        else:
            print(f"not ok 1 - schemathesis against api/openapi.yaml (exit {code}): {summary}")
            keep = [ln for ln in out.splitlines() if not ln.startswith("    '")]
            for ln in keep[-150:]:
                print("# " + ln)
        if d.stop() != 0:
            print("not ok 2 - the daemon did not stop cleanly")
            rc = 1
        else:
            print("ok 2 - the daemon stopped cleanly")
    finally:
        if d.proc:
            d.proc.kill()
            d.proc.wait()
        if rc == 0:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"# kept {tmp}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
