#!/usr/bin/env python3
"""Summary of gather_variants logs (bench/gather_ab.sh): per profile, batch and variant, the % of
the same-run linear copy of each build, every round's value and their median; a build's
'VERIFY FAILED' lines and errors listed first.
usage: gather_summary.py LOG   (LOG: '### build=B round=R' lines, then gather_variants output)"""
import re
import statistics
import sys


def parse(lines):
    cells, bad = {}, []
    build = case = None
    for line in lines:
        m = re.match(r"### build=(\S+) round=(\d+)", line)
        if m:
            build = m.group(1)
            continue
        m = re.match(r"(\S+) (\S+) bs=(\d+) n=(\d+) bytes=([\d.]+) MiB", line)
        if m:
            case = (m.group(1), int(m.group(3)), int(m.group(4)), float(m.group(5)))
            continue
        m = re.match(r"\s+(\S+)\s+([\d.]+) ms\s+([\d.]+) GB/s .*?([\d.]+)% of linear", line)
        if m and case and build:
            cells.setdefault(case, {}).setdefault(m.group(1), {}).setdefault(build, []).append(float(m.group(4)))
            continue
        if "VERIFY FAILED" in line or "error" in line or "rc=" in line:
            bad.append("%s: %s" % (build, line.strip()))
    return cells, bad


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    with open(sys.argv[1]) as f:
        cells, bad = parse(f)
    print("problems: %s" % ("; ".join(bad) if bad else "none"))
    builds = sorted({b for c in cells.values() for v in c.values() for b in v})
    for case in sorted(cells):
        model, bs, n, mib = case
        print("\n%s bs %d (%d experts, %.0f MiB): %% of linear, median [rounds]" % (model, bs, n, mib))
        for var, per in cells[case].items():
            row = []
            for b in builds:
                v = per.get(b)
                row.append("%s %5.1f [%s]" % (b, statistics.median(v), " ".join("%.1f" % x for x in v)) if v else
                           "%s   -" % b)
            print("  %-16s %s" % (var, "   ".join(row)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
