#!/usr/bin/python3
"""make test-mutants-gen: generated mutants beside the hand list of tests/mutants.py.

universalmutator (PyPI; installed into build/mutvenv on first use) writes every mutant of each
product source of the chosen directories (cached under build/mutants-gen/pool, keyed by the
source's hash). Each directory's pool is shuffled with a fixed seed and walked in that order until
QUOTA mutants of it have been JUDGED (built and run against tests); the judged sample is thus the
first QUOTA judged mutants of the seeded order, the same on every run.

A mutant is, one at a time, on a copy of the tree (its build reused: one object recompiled):
  no-compile   `cc -fsyntax-only` with the object's own flags (read from `make -n`) rejects it
  no-build     it compiles alone but the build fails (a link error)
  not-built    no target of its selection compiles the file (a variant the build leaves out)
  killed       a test of its selection fails (or hangs past its timeout)
  SURVIVED     every test of its selection passes
The selection of a file: first the unit tests whose binary links its object (found from the
symbols the object defines), one at a time, the first failure ends it; then the integration
tests named for the file or its directory (INTEG). Each test runs under FT_TEST_TIMEOUT (60 s unit,
180 s integration).

Results go to a results file (one JSON row per mutant, default build/mutants-gen/results.jsonl):
a run resumes from it (a mutant already there is not run again), so a long sample is done in time
slices (--budget SECONDS: no new mutant after that) and --report prints the table of what the file
holds. --equivalent FILE (default tests/gen_mutants_equivalent.txt) lists the survivors judged
equivalent (`src:line:index  reason`): they are left out of the score.

usage: tests/gen_mutants.py [--dirs D,D] [--quota D=N,...] [--seed S] [--budget SECONDS]
                            [--results FILE] [--only ID,...] [--rerun-survivors] [--list N] [--report]"""
import argparse
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VENV = os.path.join(ROOT, "build", "mutvenv")
UM_VERSION = "universalmutator==1.14.1"
WORK = os.path.join(ROOT, "build", "mutants-gen")

DIRS = ["src/profile", "daemon", "src/bench", "src/cli", "src/decode"]
QUOTA = {"src/profile": 80, "daemon": 90, "src/bench": 50, "src/cli": 45, "src/decode": 40}
# sources that are not product code of their directory (entry points no test links)
SKIP = {"daemon/main.c"}
# unit tests left out of the automatic selection: they take minutes, and faster ones cover the
# same objects (test_cpu_moe*: the CPU MoE kernels, none of them in the sampled directories)
SLOW_UNITS = {"test_cpu_moe", "test_cpu_moe_amx", "test_cpu_tiers", "test_loader", "test_load_weights",
              "test_ftw_compat"}

# Integration tests per file (src path) or directory, run after the unit tests; their binaries
# are built first (I_BINS). Names under tests/integration/ (scripts) or build/tests/integration/.
INTEG = {
    "daemon": ["reasons.sh", "daemon.sh"],
    "daemon/front.c": ["front.sh", "hostile.sh", "daemon.sh"],
    "daemon/runner.c": ["reasons.sh", "daemon.sh", "jobs_hardening.sh"],
    "daemon/http.c": ["page.sh", "front.sh", "daemon.sh"],
    "daemon/mbuf.c": ["page.sh", "front.sh", "daemon.sh"],
    "daemon/page.c": ["page.sh", "operator.sh", "daemon.sh"],
    "daemon/metrics.c": ["operator.sh", "fleet.sh"],
    "daemon/profiles.c": ["reasons.sh", "fleet.sh", "daemon.sh", "operator.sh"],
    "daemon/seed.c": ["seed_daemon.sh"],
    "daemon/kinds.c": ["reasons.sh", "limits.sh", "daemon.sh"],
    "daemon/request.c": ["daemon.sh", "hostile.sh"],
    "daemon/api.c": ["reasons.sh", "daemon.sh", "hostile.sh", "fleet.sh"],
    "src/profile": ["profile_cli.sh", "profile_golden.sh"],
    "src/profile/validation.c": ["profile_validate.sh", "profile_cli.sh"],
    "src/profile/deploy.c": ["profile_cli.sh", "profile_golden.sh"],
    "src/bench": ["test_bw"],
    "src/bench/decode.c": ["test_decode"],
    "src/bench/decode_compare.c": ["test_decode", "profile_validate.sh"],
    "src/bench/validation.c": ["profile_validate.sh", "bw_valid.sh"],
    "src/bench/bw_decide.c": ["test_bw", "bw_valid.sh"],
    "src/bench/load_weights.c": ["load_weights_format.sh"],
    "src/bench/cache_copy.c": ["output_formats.sh"],
    "src/bench/cpu_moe.c": ["output_formats.sh"],
    "src/bench/cpu_probe.c": ["bw_cpu_kernel.sh"],
    "src/cli": ["cli_help.sh", "output_formats.sh"],
    "src/cli/cmd_profile.c": ["profile_cli.sh", "profile_golden.sh", "cli_help.sh"],
    "src/cli/cmd_client.c": ["client.sh", "cli_help.sh"],
    "src/cli/cmd_replay.c": ["replay_cli.sh", "cli_help.sh"],
    "src/cli/tune.c": ["cli_tune.sh"],
    "src/cli/cmd_health.c": ["fleet.sh", "cli_help.sh"],
    "src/cli/cmd_bw.c": ["bw_valid.sh", "seed_cli.sh", "cli_help.sh", "flags_effect.sh"],
    "src/cli/cmd_cpu_moe.c": ["output_formats.sh", "cli_help.sh", "flags_effect.sh"],
    "src/cli/cmd_load_weights.c": ["load_weights_format.sh", "cli_help.sh", "flags_effect.sh"],
    "src/cli/output.c": ["output_formats.sh", "load_weights_format.sh"],
    "src/cli/table.c": ["output_formats.sh", "load_weights_format.sh"],
    "src/cli/cmd_cache_copy.c": ["output_formats.sh", "cli_help.sh"],
    "src/cli/cmd_decode.c": ["cli_help.sh", "test_decode"],
    "src/cli/flags.c": ["flags_equal.sh", "cli_help.sh", "flags_effect.sh"],
    "src/cli/args.c": ["seed_cli.sh", "cli_help.sh", "flags_effect.sh"],
    "src/decode": ["test_decode"],
    "src/decode/server.c": ["test_decode", "jobs_hardening.sh"],
}
# what the integration tests run: built before them
I_BINS = ["build/bin/ftbench", "build/bin/ftbenchd", "build/tests/integration/ftbench_hooks",
          "build/tests/fixtures/fakeworker", "build/tests/fixtures/sse_server", "build/tests/fixtures/cpu_probe",
          "build/lib/libftprofile.so"]
UNIT_TIMEOUT, INTEG_TIMEOUT = 60, 180
# integration tests of a minute or more: --skip-slow leaves them out of every selection
SLOW_INTEG = {"test_decode", "flags_effect.sh", "jobs_hardening.sh"}
VERDICTS = ["killed", "SURVIVED", "no-compile", "no-build", "not-built", "stale"]


def log(msg):
    print(msg, flush=True)


def ensure_tool():
    mutate = os.path.join(VENV, "bin", "mutate")
    if not os.path.exists(mutate):
        log(f"installing {UM_VERSION} into {VENV}")
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "-q", "--disable-pip-version-check", UM_VERSION],
                       check=True)
    return mutate


def product_sources(d):
    return sorted(os.path.join(d, f) for f in os.listdir(os.path.join(ROOT, d))
                  if f.endswith(".c") and os.path.join(d, f) not in SKIP)


def comment_or_blank(line):
    s = line.strip()
    return not s or s.startswith(("/*", "*", "//", "#include"))


def pool_of(mutate, src):
    """Every mutant of src as [index, first line (1-based), old lines, new lines] (cached)."""
    text = open(os.path.join(ROOT, src)).read()
    h = hashlib.sha1(text.encode()).hexdigest()[:16]
    cache = os.path.join(WORK, "pool", src.replace("/", "_") + "." + h + ".json")
    if os.path.exists(cache):
        return json.load(open(cache))
    tmp = tempfile.mkdtemp(prefix="ftgenmut-")
    try:
        subprocess.run([mutate, os.path.join(ROOT, src), "--noCheck", "--mutantDir", tmp], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True, cwd=tmp)  # its scratch file lands there
        orig = text.splitlines(keepends=True)
        base = os.path.splitext(os.path.basename(src))[0]
        names = [n for n in os.listdir(tmp) if n.startswith(base + ".mutant.")]
        out = []
        for n in sorted(names, key=lambda x: int(re.findall(r"\d+", x)[-1])):
            new = open(os.path.join(tmp, n)).read().splitlines(keepends=True)
            p = 0
            while p < min(len(orig), len(new)) and orig[p] == new[p]:
                p += 1
            s = 0
            while s < min(len(orig), len(new)) - p and orig[-1 - s] == new[-1 - s]:
                s += 1
            out.append([int(re.findall(r"\d+", n)[-1]), p + 1, orig[p:len(orig) - s], new[p:len(new) - s]])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    for old in os.listdir(os.path.dirname(cache)):  # an older version of the same source
        if old.startswith(src.replace("/", "_") + ".") and old != os.path.basename(cache):
            os.unlink(os.path.join(os.path.dirname(cache), old))
    with open(cache + ".tmp", "w") as f:
        json.dump(out, f)
    os.replace(cache + ".tmp", cache)
    return out


def ordered_pool(mutate, d, seed):
    """The directory's mutants in the seeded order: [(id, src, line, old, new)]."""
    pool = []
    for src in product_sources(d):
        orig = open(os.path.join(ROOT, src)).read().splitlines()
        for idx, line, old, new in pool_of(mutate, src):
            if line <= len(orig) and comment_or_blank(orig[line - 1]):
                continue  # a comment or an include: no behaviour to judge
            pool.append((f"{src}:{line}:{idx}", src, line, old, new))
    random.Random(f"{seed}:{d}").shuffle(pool)
    return pool


def show(old, new):
    o = " / ".join(x.strip() for x in old) or "(nothing)"
    n = " / ".join(x.strip() for x in new) or "(deleted)"
    return f"{o}  ->  {n}"


def load_results(path):
    rows = {}
    if os.path.exists(path):
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                rows[r["id"]] = r
    return rows


def load_equivalent(path):
    eq = {}
    if os.path.exists(path):
        for line in open(path):
            line = line.split("#", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
            if line:
                k, _, why = line.partition(" ")
                eq[k] = why.strip()
    return eq


def report(rows, eq, dirs):
    log("| directory | judged | killed | survived | equivalent | score | no-compile | no-build | not-built |\n"
        "|---|---|---|---|---|---|---|---|---|")
    for d in dirs:
        c = {v: 0 for v in VERDICTS}
        ne = 0
        for r in rows.values():
            if r["dir"] == d:
                if r["verdict"] == "SURVIVED" and r["id"] in eq:
                    ne += 1
                else:
                    c[r["verdict"]] += 1
        judged = c["killed"] + c["SURVIVED"] + ne
        sc = 100.0 * c["killed"] / (c["killed"] + c["SURVIVED"]) if c["killed"] + c["SURVIVED"] else 0
        log(f"| {d} | {judged} | {c['killed']} | {c['SURVIVED']} | {ne} | {sc:.1f} % | {c['no-compile']} | "
            f"{c['no-build']} | {c['not-built']} |")
    surv = [r for r in rows.values() if r["verdict"] == "SURVIVED" and r["dir"] in dirs]
    if surv:
        log("\nsurvivors:")
        for r in sorted(surv, key=lambda r: (r["dir"], r["id"])):
            tag = f"equivalent: {eq[r['id']]}" if r["id"] in eq else "LIVE"
            log(f"  {r['id']}  {r['diff']}  [{tag}]")


class Tree:
    """A copy of the tree and its build, mutated one file at a time."""

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "tree")
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                               capture_output=True).stdout.split(b"\0")
        for f in files:
            if f and os.path.isfile(os.path.join(ROOT, f.decode())):
                dst = os.path.join(self.dir, f.decode())
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(os.path.join(ROOT, f.decode()), dst)
        shutil.copytree(os.path.join(ROOT, "build"), os.path.join(self.dir, "build"), symlinks=True,
                        ignore=shutil.ignore_patterns("mutvenv", "mutants-gen", "test-artifacts"))
        self.env = dict(os.environ, BUILD="build")
        self.env.pop("MAKEFLAGS", None)
        self.env.pop("MAKELEVEL", None)
        self.cc = {}
        self.syms = None

    def make(self, targets):
        return subprocess.run(["make", "-j2", *targets], cwd=self.dir, env=self.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0

    def objs(self, src):
        b = os.path.splitext(src)[0]
        return [os.path.join(self.dir, "build", x, b + ".o") for x in ("obj", "obj-hooks")]

    def syntax_cmd(self, src):
        """The object's compile command from `make -n`, as a syntax-only check."""
        if src not in self.cc:
            obj = os.path.relpath(self.objs(src)[0], self.dir)
            out = subprocess.run(["make", "-n", "-B", obj], cwd=self.dir, env=self.env, capture_output=True,
                                 text=True).stdout
            cmd = next((ln for ln in out.splitlines() if f"-c {src}" in ln or ln.rstrip().endswith(src)), None)
            if cmd is None:
                self.cc[src] = None
            else:
                a = shlex.split(cmd)
                keep, skip = [], 0
                for x in a:
                    if skip:
                        skip -= 1
                        continue
                    if x in ("-o", "-MF"):
                        skip = 1
                        continue
                    if x in ("-c", "-MMD", "-MP") or x.startswith("-g"):
                        continue
                    keep.append(x)
                self.cc[src] = keep + ["-fsyntax-only", "-w"]
        return self.cc[src]

    def units_linking(self, src):
        """The unit test binaries that link src's object (a global symbol of it defined in them)."""
        if self.syms is None:
            self.syms = {}
            ud = os.path.join(self.dir, "build", "tests", "unit")
            for t in sorted(os.listdir(ud)):
                if t.startswith("test_") and t not in SLOW_UNITS and os.access(os.path.join(ud, t), os.X_OK):
                    out = subprocess.run(["nm", "--defined-only", os.path.join(ud, t)], capture_output=True,
                                         text=True).stdout
                    self.syms[t] = {ln.split()[-1] for ln in out.splitlines() if len(ln.split()) == 3
                                    and ln.split()[1] in "TDBR"}
        obj = self.objs(src)[0]
        if not os.path.exists(obj):
            return []
        out = subprocess.run(["nm", "--defined-only", "-g", obj], capture_output=True, text=True).stdout
        mine = {ln.split()[-1] for ln in out.splitlines() if len(ln.split()) == 3 and ln.split()[1] in "TDBR"}
        return [t for t, s in self.syms.items() if mine & s]


SKIP_SLOW = False


def integ_for(src, d):
    return [t for t in INTEG.get(src, INTEG.get(d, [])) if not (SKIP_SLOW and t in SLOW_INTEG)]


def integ_path(name):
    return f"tests/integration/{name}" if name.endswith(".sh") else f"build/tests/integration/{name}"


def run_one(tree, src, d, old, new, line):
    """Apply one mutant to the tree, judge it, restore the tree: (verdict, killed_by)."""
    path = os.path.join(tree.dir, src)
    st = os.stat(path)
    orig = open(path).read()
    lines = orig.splitlines(keepends=True)
    at = line - 1
    if old and lines[at:at + len(old)] != old:
        # the source changed since the pool was made (a survivor judged again): the same lines nearby
        near = [i for i in range(max(0, at - 300), min(len(lines), at + 300)) if lines[i:i + len(old)] == old]
        if not near:
            return "stale", None
        at = min(near, key=lambda i: abs(i - at))
    text = "".join(lines[:at] + new + lines[at + len(old):])
    saved = {}
    for o in tree.objs(src):
        if os.path.exists(o):
            saved[o] = (open(o, "rb").read(), os.stat(o).st_mtime_ns)
    try:
        with open(path, "w") as f:
            f.write(text)
        cmd = tree.syntax_cmd(src)
        if cmd and subprocess.run(cmd, cwd=tree.dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            return "no-compile", None
        units = tree.units_linking(src)
        integ = integ_for(src, d)
        before = {o: os.stat(o).st_mtime_ns if os.path.exists(o) else 0 for o in tree.objs(src)}
        built = lambda: any(os.path.exists(o) and os.stat(o).st_mtime_ns != before[o] for o in tree.objs(src))  # noqa: E731
        for i, t in enumerate(units):  # built one at a time: the first that fails ends it
            if not tree.make([f"build/tests/unit/{t}"]):
                return "no-build", None
            if i == 0 and not built():
                break  # the units do not compile this file: the integration tests' binaries may
            if tests_fail(tree, [f"build/tests/unit/{t}"], UNIT_TIMEOUT):
                return "killed", t
        if not integ:
            return ("SURVIVED" if built() else "not-built"), None
        ib = [x for x in I_BINS] + [integ_path(x) for x in integ if not x.endswith(".sh")]
        if not tree.make(ib):
            return "no-build", None
        if not built():
            return "not-built", None
        for t in integ:
            if tests_fail(tree, [integ_path(t)], INTEG_TIMEOUT):
                return "killed", t
        return "SURVIVED", None
    finally:
        with open(path, "w") as f:
            f.write(orig)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        for o, (data, mt) in saved.items():
            if not os.path.exists(o) or os.stat(o).st_mtime_ns != mt:
                with open(o, "wb") as f:
                    f.write(data)
                # newer than all the mutant built (archives and links are redone), older than the
                # next mutant's source
                now = time.time_ns()
                os.utime(o, ns=(now, now))


def tests_fail(tree, tests, timeout):
    env = dict(tree.env, FT_TEST_TIMEOUT=str(timeout))
    try:
        r = subprocess.run(["sh", "scripts/run-tests.sh", *tests], cwd=tree.dir, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=timeout + 60)
        return r.returncode != 0
    except subprocess.TimeoutExpired:
        return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dirs", default=",".join(DIRS))
    ap.add_argument("--quota", default="", help="D=N,... judged mutants per directory (default: QUOTA)")
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--budget", type=float, default=0, help="start no mutant after this many seconds")
    ap.add_argument("--results", default=os.path.join(WORK, "results.jsonl"))
    ap.add_argument("--equivalent", default=os.path.join(ROOT, "tests", "gen_mutants_equivalent.txt"))
    ap.add_argument("--only", default="", help="ID,... (src:line:index): run these again, whatever the quota")
    ap.add_argument("--rerun-survivors", action="store_true", help="judge every recorded survivor again (not the listed equivalents)")
    ap.add_argument("--list", type=int, default=0, help="print the first N of each directory's order, run nothing")
    ap.add_argument("--report", action="store_true", help="print the table of the results file, run nothing")
    ap.add_argument("--skip-slow", action="store_true", help="leave the integration tests of SLOW_INTEG out")
    a = ap.parse_args()
    dirs = a.dirs.split(",")
    global SKIP_SLOW
    SKIP_SLOW = a.skip_slow
    quota = dict(QUOTA)
    for kv in filter(None, a.quota.split(",")):
        k, v = kv.split("=")
        quota[k] = int(v)
    rows = load_results(a.results)
    eq = load_equivalent(a.equivalent)
    if a.report:
        report(rows, eq, dirs)
        return 0
    mutate = ensure_tool()
    t0 = time.time()
    pools = {d: ordered_pool(mutate, d, a.seed) for d in dirs}
    for d in dirs:
        log(f"{d}: {len(pools[d])} mutants generated (seed {a.seed}), quota {quota.get(d, 0)} judged")
    if a.list:
        for d in dirs:
            for mid, src, line, old, new in pools[d][:a.list]:
                log(f"{mid}  {show(old, new)}")
        return 0
    only = set(filter(None, a.only.split(",")))
    if a.rerun_survivors:
        only |= {r["id"] for r in rows.values() if r["verdict"] == "SURVIVED" and r["dir"] in dirs and r["id"] not in eq}
    tmp = tempfile.mkdtemp(prefix="ftgenmut-")
    os.makedirs(os.path.dirname(a.results), exist_ok=True)
    try:
        tree = Tree(tmp)
        log(f"copy of the tree ready ({time.time() - t0:.0f} s)")
        n = 0
        for d in dirs:
            judged = sum(1 for r in rows.values() if r["dir"] == d and r["verdict"] in ("killed", "SURVIVED"))
            for m in pools[d]:
                mid, src, line, old, new = m
                if only:
                    if mid not in only:
                        continue
                elif judged >= quota.get(d, 0):
                    break
                elif mid in rows:
                    continue
                if a.budget and time.time() - t0 > a.budget:
                    log(f"budget of {a.budget:.0f} s spent after {n} mutants; run again to go on")
                    report(load_results(a.results), eq, dirs)
                    return 0
                t1 = time.time()
                verdict, by = run_one(tree, src, d, old, new, line)
                row = {"id": mid, "dir": d, "src": src, "line": line, "verdict": verdict, "by": by,
                       "skip_slow": a.skip_slow,
                       "diff": show(old, new), "s": round(time.time() - t1, 1), "seed": a.seed,
                       "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                rows[mid] = row
                with open(a.results, "a") as f:
                    f.write(json.dumps(row) + "\n")
                n += 1
                if verdict in ("killed", "SURVIVED") and not only:
                    judged += 1
                if verdict != "no-compile":
                    log(f"{mid} {verdict}{' by ' + by if by else ''} ({row['s']:.0f} s)  {row['diff']}")
        log(f"\n{n} mutants in {time.time() - t0:.0f} s (seed {a.seed})")
        report(rows, eq, dirs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
