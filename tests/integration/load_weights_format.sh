#!/bin/sh
# load-weights --repeat N and --output-format table|json|csv|md (--format the same flag, --json
# the same as json, the last given wins, as on every table command): each mode runs N times in its own
# child (the page cache dropped before each run: N progress steps per mode on --result-fd), the
# row's load_s is the median of its runs with their min and max, in the table, the JSON, and the
# CSV (read with python's csv module) and Markdown rows; limits and conflicts are usage errors;
# the product ftbench carries no test fault hook, the test build does.
BUILD=${BUILD:-build}
ft=$BUILD/bin/ftbench
fth=$BUILD/tests/integration/ftbench_hooks
tmp=$(mktemp -d /tmp/ftlw_fmt_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../lib/tap.sh"
TAP_SHOW=
check() { # check NAME COMMAND...: ok when COMMAND succeeds
	name=$1
	shift
	if "$@" >"$tmp/check" 2>&1; then ok "$name"; else nok "$name: $(head -c 600 "$tmp/check")"; fi
}

m=$tmp/model
$ft make-checkpoint --arch qwen3-moe --out "$m" --layers 2 --experts 4 --hidden 256 --inter 128 --shard-mib 1 \
	>/dev/null 2>"$tmp/err" || { echo "1..0 # SKIP make-checkpoint failed: $(cat "$tmp/err")"; exit 0; }

# --json with --repeat 3, and the worker protocol of the parent on --result-fd
$ft load-weights --model "$m" --modes parallel,ftw --repeat 3 --workers 2 --chunk-mib 1 --ftw-dir "$tmp/ftw" \
	--json --result-fd 3 3>"$tmp/fd3" >"$tmp/lw.json" 2>"$tmp/err"
rc=$?
check "--repeat 3 --json: exit 0 (exit $rc: $(head -c 300 "$tmp/err"))" test $rc -eq 0
check "--repeat 3 --json: every mode's load_s is the median of its 3 runs, within [min, max]" python3 - "$tmp/lw.json" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
def ensure(c, why):
    if not c:
        sys.exit(why)
ensure(r["repeat"] == 3, "repeat %r" % r.get("repeat"))
ensure([x["mode"] for x in r["rows"]] == ["baseline", "parallel", "ftw"], "modes %r" % [x["mode"] for x in r["rows"]])
for x in r["rows"]:
    runs = x["load_s_runs"]
    ensure(len(runs) == 3, "%s: %d runs" % (x["mode"], len(runs)))
    ensure(abs(x["load_s"] - statistics.median(runs)) < 1e-12, "%s: load_s %r is not the median of %r" % (x["mode"], x["load_s"], runs))
    ensure(x["load_s_min"] == min(runs) and x["load_s_max"] == max(runs), "%s: min/max" % x["mode"])
    ensure(x["read_gbs_min"] <= x["read_gbs"] <= x["read_gbs_max"], "%s: read_gbs outside its range" % x["mode"])
    ensure(abs(x["read_gbs"] - x["bytes"] / x["load_s"] / 1e9) < 1e-9, "%s: read_gbs not from the median" % x["mode"])
    ensure(x["checksum_ok"] is True, "%s: checksum" % x["mode"])
ensure(r["ok"] is True, "ok")
PY
check "--repeat 3: 3 children per mode, each after the cache drop (progress steps on --result-fd)" python3 - "$tmp/fd3" <<'PY'
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
labels = [m["label"] for m in msgs if m["type"] == "progress"]
want = ["baseline (run %d/3)" % i for i in (1, 2, 3)] + ["parallel (run %d/3)" % i for i in (1, 2, 3)] + \
    ["ftw-convert"] + ["ftw (run %d/3)" % i for i in (1, 2, 3)] + ["done"]
if labels != want:
    sys.exit("progress labels %r" % labels)
if [m["type"] for m in msgs].count("result") != 1:
    sys.exit("not one result message")
total = {m["total"] for m in msgs if m["type"] == "progress"}
if total != {10}:
    sys.exit("totals %r" % total)
PY

# --output-format csv: one row per mode, parsed with the csv module
$ft load-weights --model "$m" --modes parallel --repeat 2 --workers 2 --chunk-mib 1 --json --output-format csv >"$tmp/lw.csv" 2>"$tmp/err"
rc=$?
check "--output-format csv: exit 0 (exit $rc: $(head -c 300 "$tmp/err"))" test $rc -eq 0
check "--output-format csv (after --json): a header and one row per mode, numbers that parse, median within [min, max]" python3 - "$tmp/lw.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
def ensure(c, why):
    if not c:
        sys.exit(why)
ensure([r["mode"] for r in rows] == ["baseline", "parallel"], "modes %r" % [r.get("mode") for r in rows])
for r in rows:
    ensure(r["runs"] == "2", "%s: runs %r" % (r["mode"], r["runs"]))
    lo, med, hi = float(r["load_s_min"]), float(r["load_s"]), float(r["load_s_max"])
    ensure(0 < lo <= med <= hi, "%s: %r %r %r" % (r["mode"], lo, med, hi))
    ensure(float(r["read_gbs_min"]) <= float(r["read_gbs"]) <= float(r["read_gbs_max"]), "%s: read_gbs" % r["mode"])
    ensure(int(r["bytes"]) > 0 and int(r["peak_rss_bytes"]) > 0, "%s: bytes" % r["mode"])
    ensure(r["direct"] in ("yes", "no"), "direct %r" % r["direct"])
ensure(rows[0]["checksum"] == "reference" and rows[1]["checksum"] == "ok", "checksums %r" % [r["checksum"] for r in rows])
ensure(rows[1]["loader"] == "parallel" and rows[0]["loader"] == "serial", "loaders")
PY

# --format md: a Markdown table with its separator line
$ft load-weights --model "$m" --modes parallel --workers 2 --chunk-mib 1 --format md >"$tmp/lw.md" 2>"$tmp/err"
check "--format md: header, separator, one row per mode" python3 - "$tmp/lw.md" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
if len(lines) != 4 or not all(l.startswith("| ") and l.endswith(" |") for l in lines):
    sys.exit("lines %r" % lines)
cells = [c.strip() for c in lines[0].strip("|").split("|")]
if cells[:4] != ["mode", "loader", "runs", "load_s"] or set(lines[1].replace("|", "").split()) != {"---"}:
    sys.exit("header %r / %r" % (cells, lines[1]))
if not lines[2].startswith("| baseline | serial | 1 |") or not lines[3].startswith("| parallel | parallel | 1 |"):
    sys.exit("rows %r" % lines[2:])
PY

# the table: the median with [min max] when repeated; as before when not
$ft load-weights --model "$m" --modes parallel --repeat 2 --workers 2 --chunk-mib 1 >"$tmp/out" 2>"$tmp/err"
check "table with --repeat 2: [min max] columns and the median note" sh -c \
	"grep -q 'run 2 times' '$tmp/out' && grep -q 'load_s   \[min     max\]' '$tmp/out' && grep -Eq '^parallel +parallel +[0-9.]+ \[ *[0-9.]+ +[0-9.]+\]' '$tmp/out'"
$ft load-weights --model "$m" --modes parallel --workers 2 --chunk-mib 1 >"$tmp/out" 2>"$tmp/err"
check "table without --repeat: no range columns" sh -c "! grep -q 'min' '$tmp/out' && grep -Eq '^parallel +parallel +[0-9.]+ +[0-9.]+ ' '$tmp/out'"

# limits and conflicts: usage errors (exit 2) that name the flag
for bad in 0 21 x; do
	$ft load-weights --model "$m" --repeat "$bad" >/dev/null 2>"$tmp/err"
	rc=$?
	check "--repeat $bad refused: exit 2 naming 1..20" sh -c "[ $rc -eq 2 ] && grep -q -- '--repeat.*1\.\.20' '$tmp/err'"
done
$ft load-weights --model "$m" --format xml >/dev/null 2>"$tmp/err"
rc=$?
check "--format xml refused: exit 2" sh -c "[ $rc -eq 2 ] && grep -q -- '--format' '$tmp/err'"
$ft load-weights --model "$m" --output-format xml >/dev/null 2>"$tmp/err"
rc=$?
check "--output-format xml refused: exit 2" sh -c "[ $rc -eq 2 ] && grep -q -- '--output-format' '$tmp/err'"
$ft load-weights --model "$m" --modes parallel --workers 2 --chunk-mib 1 --output-format md --json >"$tmp/out" 2>"$tmp/err"
check "--json after --output-format md: JSON (the last given wins)" python3 -c \
	"import json,sys; sys.exit(0 if json.load(open('$tmp/out'))['repeat'] == 1 else 1)"
$ft load-weights --model "$m" --worker baseline >/dev/null 2>"$tmp/err"
rc=$?
check "--worker without --result-fd refused: exit 2" sh -c "[ $rc -eq 2 ] && grep -q 'result-fd' '$tmp/err'"

# the test fault hooks live in the test build only
check "the product ftbench has no test fault hook" sh -c "! grep -aq 'FTLOAD_TEST_EINVAL\|FTBENCH_LW_FAULT' '$ft'"
check "the test build ftbench_hooks has them" sh -c "grep -aq FTLOAD_TEST_EINVAL '$fth' && grep -aq FTBENCH_LW_FAULT '$fth'"
check "no @@RESULT@@ protocol left in ftbench" sh -c "! grep -aq '@@RESULT@@' '$ft'"
echo "1..$n"
