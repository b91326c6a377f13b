#!/bin/sh
# The CLI's own words: every long flag in the usage lines of cpu-moe, load-weights, gpus, cpu,
# cache-copy, decode, profile, jobs, replay and health has a --help line saying what it does; one
# name for repetitions (--repeat, old names kept); cpu-moe clears its progress bar before each
# table line on a terminal and names its error column.
set -u
B=${BUILD:-build}
FT="$(pwd)/$B/bin/ftbench"
T=$(mktemp -d /tmp/ft-cli-help-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export XDG_CACHE_HOME="$T/cache" FREETOKEN_BENCHBW_SYSDIR="$T/sys" CUDA_VISIBLE_DEVICES=
unset FREETOKEN_BENCHBW_PATH FREETOKEN_BENCH_PROGRESS
n=0
check() { desc=$1; shift; n=$((n + 1)); if "$@"; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; sed 's/^/#   /' "$T/err" 2>/dev/null | head -n 20; fi; }
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# every --flag named in the usage lines has a line of its own that starts with it
for cmd in cpu-moe load-weights gpus cpu cache-copy decode profile jobs replay health; do
	"$FT" $cmd --help >"$T/help" 2>&1
	for f in $(sed -n '/^usage:/,/^  [^ ]/p' "$T/help" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		check "$cmd --help explains $f" grep -Eq -- "^  $f( |\$)" "$T/help"
	done
done
"$FT" cpu-moe --help >"$T/help"
check "cpu-moe --help: GB/s is 10^9 bytes/s" grep -q "GB/s is 10^9 bytes per second" "$T/help"
check "cpu-moe --help: what the error column is" grep -q "max rel err vs scalar, the largest relative" "$T/help"
"$FT" load-weights --help >"$T/help"
check "load-weights --help: GB/s is 10^9 bytes/s" grep -q "read GB/s (JSON read_gbs) is 10^9 bytes" "$T/help"

SMALL="--warmup 0 --isa scalar --working-set-mib 8 --read-passes 0"
"$FT" cpu-moe $SMALL --repeat 3 --json >"$T/out" 2>"$T/err"
check "cpu-moe --repeat 3: 3 timed steps" [ "$(jget "$T/out" 'd["iters"], len(d["results"])')" = "(3, 1)" ]
"$FT" cpu-moe $SMALL --iters 2 --json >"$T/out" 2>"$T/err"
check "cpu-moe --iters, the old name, still works" [ "$(jget "$T/out" 'd["iters"]')" = 2 ]
"$FT" cpu-moe --repeat 0 >"$T/out" 2>"$T/err"; rc=$?
check "cpu-moe --repeat 0: exit 2 naming --repeat" sh -c "[ $rc -eq 2 ] && grep -q -- \"bad value '0' for --repeat\" '$T/err'"
"$FT" cpu-moe --threads x >"$T/out" 2>"$T/err"; rc=$?
check "cpu-moe --threads x: exit 2 naming --threads" sh -c "[ $rc -eq 2 ] && grep -q -- \"for --threads\" '$T/err'"

# on a terminal: the bar is taken off before every line of the table (script(1) gives a pty)
if command -v script >/dev/null 2>&1; then
	script -qc "'$FT' cpu-moe --warmup 0 --isa scalar --working-set-mib 8 --read-passes 1 --repeat 2" /dev/null \
		>"$T/tty" 2>&1 </dev/null
	# what a terminal shows of each line: the text after its last carriage return
	python3 - "$T/tty" >"$T/shown" <<'PY'
import re, sys
for line in open(sys.argv[1], encoding="utf-8", errors="replace", newline="").read().split("\n"):
    line = line.rstrip("\r")
    print(re.sub(r"\x1b\[K", "", line.split("\r")[-1]))
PY
	check "tty: the header line is whole" grep -Eq '^isa +kernel +GB/s .* max rel err vs scalar$' "$T/shown"
	check "tty: the scalar row is whole" grep -Eq '^scalar +[a-z0-9-]+ +[0-9.]+ ' "$T/shown"
	check "tty: the read row is whole" grep -Eq '^read +' "$T/shown"
	check "tty: no bar left in front of a line" sh -c "! grep -Eq '\\] [0-9]+/[0-9]+ ' '$T/shown'"
	check "tty: a bar was drawn at all" grep -q '\] 1/3 ceilings' "$T/tty"
fi

# bw --repeat: every timed measurement, the per-measurement flags win (fake measurements)
export FTBENCH_TEST_FAKE_GPUS=1
FT="$(pwd)/$B/tests/integration/ftbench_hooks" # the test build from here on: fake measurements
"$FT" bw --dtype bf16 --repeat 3 --kernel-pcie-iters 2 --no-legacy-copy --no-checks -o "$T/p.json" >"$T/out" 2>"$T/err"
check "bw --repeat 3 --kernel-pcie-iters 2: 3 samples everywhere but the gather's 2" \
	[ "$(jget "$T/p.json" 'd["ceilings"]["cpu_stream_read_gbs_spread"]["samples"], d["ceilings"]["pcie_linear_h2d_gbs_spread"]["samples"], d["dtype_kernels"]["bf16"]["cpu_moe_gbs_spread"]["samples"], d["dtype_kernels"]["bf16"]["pcie_gather_gbs_spread"]["samples"]')" = "(3, 3, 3, 2)" ]
"$FT" bw --repeat 1001 >"$T/out" 2>"$T/err"; rc=$?
check "bw --repeat 1001: exit 2 (the daemon's limit too)" [ $rc -eq 2 ]
"$FT" bw --help >"$T/help" 2>&1
check "bw --help explains --repeat" grep -q -- "--repeat N  *samples of every timed measurement" "$T/help"
echo "1..$n"
