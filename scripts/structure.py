#!/usr/bin/env python3
"""A structure report of the tree: the largest files and functions (lines), include cycles among
the modules of src/ and daemon/, the count of duplicated runs (the `duplicates` tool, when this
machine has it), and the product files over 800 lines and functions over 200 lines, each with the
reason it is allowed (EXCUSED below) or "no reason" (a thing to split).

  scripts/structure.py [--top N] [--repo DIR]     exit 0 always; prints the report
  scripts/structure.py --cycles [--repo DIR]      only the include cycles; exit 1 when there is one

A function is counted from its opening line (the signature before a "{" in column 0) to the
matching "}" in column 0, the project's style (docs/STYLE). A module is a path without .c/.h/.cu;
module A depends on B when a file of A includes B's header ("dir/b.h" resolved against src/,
daemon/, kernels/ and the including file's folder)."""
import argparse
import os
import re
import shutil
import subprocess
import sys

# One cycle per strongly connected component: the layer test's (tests/integration/layers.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from layers import cycles as scc_cycles  # noqa: E402

PRODUCT_DIRS = ["src", "daemon", "kernels"]
FILE_LIMIT = 800
FUNC_LIMIT = 200

# What may stay over the limits, and why. A key is a file path or "path:function".
EXCUSED = {
    # CUDA kernels: one kernel is one launch; splitting it into device functions changes register
    # allocation and the speed the A/B (bench/ab.py) holds them to.
    "kernels/*:__global__": "a CUDA kernel: one launch, its register budget is measured as a whole",
    # generated at build time from api/openapi.yaml, not edited by hand
    "build/*": "generated",
    # A .cu is one nvcc translation unit: its kernels, their device helpers and launchers. Moving
    # device code to another unit changes what nvcc inlines, so a split waits for an H200 A/B.
    "kernels/expert_gemv.cu": "one nvcc unit (GEMV kernels per format, their launchers); a split needs an H200 A/B (bench/ab.py)",
}

SRC_EXT = (".c", ".h", ".cu", ".cuh")
SIG_RE = re.compile(r"^[A-Za-z_][^;{}]*\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
INC_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def files_under(root, dirs):
    out = []
    for d in dirs:
        top = os.path.join(root, d)
        for dp, dn, fn in os.walk(top):
            dn.sort()
            for f in sorted(fn):
                if f.endswith(SRC_EXT):
                    out.append(os.path.relpath(os.path.join(dp, f), root))
    return out


def read_lines(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return f.read().split("\n")


def code_of(line, in_comment):
    """The line without comments and string or character literals (their braces do not count),
    and whether a block comment is still open after it."""
    out, i, n = [], 0, len(line)
    while i < n:
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i, in_comment = end + 2, False
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            in_comment, i = True, i + 2
        elif line[i] in "\"'":
            q, i = line[i], i + 1
            while i < n and line[i] != q:
                i += 2 if line[i] == "\\" else 1
            i += 1
        else:
            out.append(line[i])
            i += 1
    return "".join(out), in_comment


def functions(lines):
    """(name, first line, length, is_cuda_kernel) of each function defined in column 0."""
    out = []
    i = 0
    n = len(lines)
    while i < n:
        if lines[i].rstrip() == "{":
            # the signature: walk back to the line that starts it (column 0, not a comment)
            j = i - 1
            while j >= 0 and lines[j] and (lines[j][0] in " \t" or lines[j].startswith(")")):
                j -= 1
            sig = " ".join(lines[k].strip() for k in range(max(j, 0), i))
            m = SIG_RE.match(sig) if j >= 0 else None
            depth = 0
            k = i
            in_comment = False
            while k < n:
                code, in_comment = code_of(lines[k], in_comment)
                depth += code.count("{") - code.count("}")
                if lines[k].startswith("}") and depth <= 0:
                    break
                k += 1
            if m and "=" not in sig.split("(")[0]:
                name = m.group(1)
                out.append((name, j + 1, k - j + 1, "__global__" in sig))
            i = k + 1
            continue
        i += 1
    return out


def resolve(root, inc, frm):
    for base in (os.path.dirname(frm), "src", "daemon", "kernels", "."):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(os.path.join(root, p)):
            return p
    return None


def module(path):
    return os.path.splitext(path)[0]


def cycles(root, paths):
    graph = {}
    for p in paths:
        m = module(p)
        graph.setdefault(m, set())
        for line in read_lines(root, p):
            mm = INC_RE.match(line)
            if not mm:
                continue
            q = resolve(root, mm.group(1), p)
            if q and module(q) != m and q.split("/")[0] in ("src", "daemon"):
                graph[m].add(module(q))
    for targets in list(graph.values()):
        for t in targets:
            graph.setdefault(t, set())
    return scc_cycles(graph)


def excuse(path, fn=None, cuda_kernel=False):
    if cuda_kernel:
        return EXCUSED["kernels/*:__global__"]
    if fn and f"{path}:{fn}" in EXCUSED:
        return EXCUSED[f"{path}:{fn}"]
    if path in EXCUSED:
        return EXCUSED[path]
    return "no reason"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--cycles", action="store_true", help="only the include cycles (exit 1 on one)")
    a = ap.parse_args()
    root = os.path.abspath(a.repo)
    prod = files_under(root, PRODUCT_DIRS)
    if a.cycles:
        cyc = cycles(root, [p for p in prod if p.split("/")[0] in ("src", "daemon")])
        for c in cyc:
            print("cycle: " + " <-> ".join(c))
        return 1 if cyc else 0
    allsrc = files_under(root, PRODUCT_DIRS + ["tests", "bench"])
    sizes = []
    funcs = []
    for p in allsrc:
        lines = read_lines(root, p)
        sizes.append((len(lines) - (1 if lines and lines[-1] == "" else 0), p))
        for name, first, length, kern in functions(lines):
            funcs.append((length, p, name, first, kern))
    sizes.sort(key=lambda t: (-t[0], t[1]))
    funcs.sort(key=lambda t: (-t[0], t[1], t[3]))
    total = sum(s for s, p in sizes if p in prod)
    print(f"# structure of {root}")
    print(f"product (src daemon kernels): {len(prod)} files, {total} lines; with tests and bench: "
          f"{len(allsrc)} files, {sum(s for s, _ in sizes)} lines")
    print(f"\n## largest files (top {a.top})")
    for s, p in sizes[:a.top]:
        print(f"{s:6d}  {p}")
    print(f"\n## largest functions (top {a.top})")
    for length, p, name, first, kern in funcs[:a.top]:
        print(f"{length:6d}  {p}:{first} {name}{' (CUDA kernel)' if kern else ''}")
    print("\n## include cycles among modules of src/ and daemon/")
    cyc = cycles(root, [p for p in prod if p.split("/")[0] in ("src", "daemon")])
    for c in cyc:
        print("cycle: " + " <-> ".join(c))
    if not cyc:
        print("none")
    print("\n## duplicates (pairs of places sharing six or more lines, whole tree)")
    if shutil.which("duplicates"):
        r = subprocess.run(["duplicates", "--repo", root, "--seconds", "120", "--most", "5"],
                           capture_output=True, text=True)
        print("\n".join(r.stdout.strip().split("\n")[:7]))
    else:
        print("(the duplicates tool is not on this machine)")
    print(f"\n## product files over {FILE_LIMIT} lines")
    over = [(s, p) for s, p in sizes if p in prod and s > FILE_LIMIT]
    for s, p in over:
        print(f"{s:6d}  {p}: {excuse(p, cuda_kernel=False)}")
    if not over:
        print("none")
    print(f"\n## product functions over {FUNC_LIMIT} lines")
    overf = [f for f in funcs if f[1] in prod and f[0] > FUNC_LIMIT]
    for length, p, name, first, kern in overf:
        print(f"{length:6d}  {p}:{first} {name}: {excuse(p, name, kern)}")
    if not overf:
        print("none")
    unexcused = sum(1 for s, p in over if excuse(p) == "no reason") + \
        sum(1 for f in overf if excuse(f[1], f[2], f[4]) == "no reason")
    print(f"\n{unexcused} over the limits without a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())
