#!/usr/bin/python3
"""make test-mutants-gen: generated mutants beside the hand list of tests/mutants.py. universalmutator
(PyPI; installed into build/mutvenv on first use) writes every mutant of each product source of the
chosen directories; a fixed-seed sample of them is applied one at a time to a copy of the tree,
which is rebuilt (only the fast tests of that directory) and tested. A mutant that does not
build is not counted, nor one whose object the selection's targets never recompile (code the
build leaves out: another CUDA/CPU variant, a disabled branch); one that builds and passes every
test of its directory SURVIVES. Prints
per mutant "dir file:line killed|SURVIVED|no-build" and the score per directory; the sample is
cut into time slices (--slice K/N: the K-th of N equal parts) so that a run fits its time.

usage: tests/gen_mutants.py [--dirs D,D] [--per-dir N] [--seed S] [--slice K/N] [--budget SECONDS]
                            [--only FILE:LINE,...] [--list]"""
import argparse
import difflib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VENV = os.path.join(ROOT, "build", "mutvenv")
UM_VERSION = "universalmutator==1.14.1"

# per directory: the fast tests that judge its mutants (each mutant costs a rebuild and these)
FAST = {
    "src/profile": ["test_profile", "test_history", "test_profile_deploy", "test_validation"],
    "daemon": ["test_ftbenchd_argspec", "test_ftbenchd_config", "test_ftbenchd_journal", "test_ftbenchd_kinds",
               "test_ftbenchd_request", "test_ftbenchd_sched", "test_ftbenchd_toykind", "test_ftbenchd_worker"],
    "src/bench": ["test_bw", "test_bw_host", "test_decode", "test_cpu_bench", "test_validation"],
    "src/cli": ["test_cli_args", "test_flags", "test_jobargs"],  # + the ftbench binary and EXTRA
    "src/decode": ["test_decode", "test_prompts", "test_sampling", "test_server", "test_sse"],
}
# per directory: more to build and run (the CLI is linked into ftbench alone: its effects show in
# the binary's integration tests)
EXTRA = {"src/cli": (["build/bin/ftbench"], ["tests/integration/cli_help.sh", "tests/integration/flags_effect.sh",
                                            "tests/integration/output_formats.sh"])}
# sources that are not product code of their directory (entry points the fast tests never link)
SKIP = {"daemon/main.c"}


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


def generate(mutate, src, outdir):
    """Every mutant of src: [(line, text)], line the first changed line."""
    os.makedirs(outdir, exist_ok=True)
    subprocess.run([mutate, src, "--noCheck", "--mutantDir", outdir], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, cwd=outdir)  # its scratch file lands there
    orig = open(src).read().splitlines(keepends=True)
    base = os.path.splitext(os.path.basename(src))[0]
    out = []
    for n in sorted(os.listdir(outdir), key=lambda x: int(re.findall(r"\d+", x)[-1]) if re.findall(r"\d+", x) else 0):
        if not n.startswith(base + ".mutant."):
            continue
        text = open(os.path.join(outdir, n)).read()
        new = text.splitlines(keepends=True)
        line = next((i + 1 for i, (a, b) in enumerate(zip(orig, new)) if a != b), min(len(orig), len(new)))
        out.append((line, text))
    return out


def product_sources(d):
    return sorted(os.path.join(d, f) for f in os.listdir(os.path.join(ROOT, d))
                  if f.endswith(".c") and os.path.join(d, f) not in SKIP)


def comment_or_blank(line):
    s = line.strip()
    return not s or s.startswith(("/*", "*", "//", "#include"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dirs", default="src/profile,daemon,src/bench,src/cli,src/decode")
    ap.add_argument("--per-dir", type=int, default=60)
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--slice", default="1/1")
    ap.add_argument("--budget", type=float, default=0, help="stop starting mutants after this many seconds")
    ap.add_argument("--only", default="", help="FILE:LINE:INDEX,... of the sample (a survivor again)")
    ap.add_argument("--list", action="store_true", help="print the sample, run nothing")
    a = ap.parse_args()
    mutate = ensure_tool()
    k, n = (int(x) for x in a.slice.split("/"))
    tmp = tempfile.mkdtemp(prefix="ftgenmut-")
    rng = random.Random(a.seed)
    sample = []
    for d in a.dirs.split(","):
        pool = []
        for src in product_sources(d):
            orig = open(os.path.join(ROOT, src)).read().splitlines()
            for i, (line, text) in enumerate(generate(mutate, os.path.join(ROOT, src),
                                                      os.path.join(tmp, "gen", src.replace("/", "_")))):
                if line <= len(orig) and comment_or_blank(orig[line - 1]):
                    continue  # a comment or an include: no behaviour to judge
                pool.append((d, src, line, i, text))
        pick = rng.sample(pool, min(a.per_dir, len(pool)))
        log(f"{d}: {len(pool)} mutants generated, {len(pick)} sampled")
        sample += pick
    sample = [m for i, m in enumerate(sample) if i % n == k - 1]
    if a.only:
        want = set(a.only.split(","))
        sample = [m for m in sample if f"{m[1]}:{m[2]}:{m[3]}" in want]
    if a.list:
        for d, src, line, i, text in sample:
            orig = open(os.path.join(ROOT, src)).read().splitlines()
            new = text.splitlines()
            log(f"{src}:{line}:{i}  {orig[line - 1].strip() if line <= len(orig) else ''}  ->  "
                f"{new[line - 1].strip() if line <= len(new) else '(deleted)'}")
        shutil.rmtree(tmp, ignore_errors=True)
        return 0
    # the copy of the tree (and its build, for incremental rebuilds), as tests/mutants.py makes it
    copy = os.path.join(tmp, "tree")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.split(b"\0")
    for f in files:
        if f and os.path.isfile(os.path.join(ROOT, f.decode())):
            dst = os.path.join(copy, f.decode())
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, f.decode()), dst)
    if os.path.isdir(os.path.join(ROOT, "build")):
        shutil.copytree(os.path.join(ROOT, "build"), os.path.join(copy, "build"), symlinks=True,
                        ignore=shutil.ignore_patterns("mutvenv"))
    # a mutant that loops is caught by the runner's timeout: 120 s, not the default 600
    env = dict(os.environ, BUILD="build", FT_TEST_TIMEOUT=os.environ.get("FT_TEST_TIMEOUT", "120"))
    env.pop("MAKEFLAGS", None)
    env.pop("MAKELEVEL", None)
    t0 = time.time()
    score = {}
    rows = []
    for d, src, line, i, text in sample:
        if a.budget and time.time() - t0 > a.budget:
            log(f"budget of {a.budget:.0f} s spent: {len(rows)} of {len(sample)} mutants run")
            break
        tests = [f"build/tests/unit/{t}" for t in FAST[d]]
        path = os.path.join(copy, src)
        orig = open(path).read()
        t1 = time.time()
        try:
            with open(path, "w") as f:
                f.write(text)
            bins, integ = EXTRA.get(d, ([], []))
            obj = os.path.join(copy, "build", "obj", os.path.splitext(src)[0] + ".o")
            before = os.path.getmtime(obj) if os.path.exists(obj) else 0
            b = subprocess.run(["make", "-j2", *tests, *bins], cwd=copy, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            if b.returncode != 0:
                verdict = "no-build"
            elif not os.path.exists(obj) or os.path.getmtime(obj) <= before:
                verdict = "not-built"  # no target of the selection compiles this file: nothing judged it
            else:
                r = subprocess.run(["sh", "scripts/run-tests.sh", *tests, *integ], cwd=copy, env=env,
                                   capture_output=True, text=True, timeout=900)
                verdict = "killed" if r.returncode != 0 else "SURVIVED"
        except subprocess.TimeoutExpired:
            verdict = "killed"  # a hang is caught (by the runner's timeout)
        finally:
            with open(path, "w") as f:
                f.write(orig)
        o = orig.splitlines()
        nw = text.splitlines()
        diff = f"{o[line - 1].strip() if line <= len(o) else ''}  ->  {nw[line - 1].strip() if line <= len(nw) else '(deleted)'}"
        rows.append((d, src, line, i, verdict, diff))
        s = score.setdefault(d, [0, 0, 0, 0])
        s[["killed", "SURVIVED", "no-build", "not-built"].index(verdict)] += 1
        log(f"{d} {src}:{line}:{i} {verdict} ({time.time() - t1:.0f} s)  {diff}")
    # restore the copy's build of the last file
    log("\n| directory | killed | survived | did not build | not built by the selection | score |\n"
        "|---|---|---|---|---|---|")
    for d, (kk, ss, nb, nt) in score.items():
        log(f"| {d} | {kk} | {ss} | {nb} | {nt} | {100.0 * kk / (kk + ss) if kk + ss else 0:.0f} % |")
    log(f"\n{len(rows)} mutants in {time.time() - t0:.0f} s (seed {a.seed}, {a.per_dir} per directory, slice {a.slice})")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
