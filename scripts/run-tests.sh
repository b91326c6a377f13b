#!/bin/sh
# Run test programs and scripts; each prints cmocka's summary (or "ok"/"not ok" lines for
# scripts). Ends with one line "N passed, N failed" (N skipped when a GPU test finds no GPU).
# usage: run-tests.sh [--gpu] TEST...
gpu=0
[ "${1:-}" = "--gpu" ] && { gpu=1; shift; }
pass=0 fail=0 skip=0 failed_names=
if [ "$gpu" = 1 ]; then
	g=$("${BUILD:-build}/bin/ftbench" gpus 2>&1 | head -n 1)
	case "$g" in "no GPUs"*) echo "test-gpu: ${g#no GPUs: } — the GPU tests skip (run them on a machine with an NVIDIA GPU)";; esac
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "$@"; do
	[ -e "$t" ] || continue
	name=${t#${BUILD:-build}/tests/}
	timeout="${FT_TEST_TIMEOUT:-600}"
	case "$t" in
	*.sh) timeout "$timeout" sh "$t" >"$log" 2>&1 ;;
	*)    timeout "$timeout" "$t" >"$log" 2>&1 ;;
	esac
	rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	case "$t" in *.sh)
		p=$(grep -c '^ok ' "$log"); f=$(grep -c '^not ok ' "$log");;
	esac
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed, timed out or failed outside a test
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	if [ "$f" -gt 0 ]; then
		echo "FAIL $name (exit $rc)"; sed 's/^/    /' "$log" | tail -n 40
		failed_names="$failed_names $name"
	else
		echo "ok   $name ($p passed${s:+, $s skipped})" | sed 's/, 0 skipped//'
	fi
done
[ -n "$failed_names" ] && echo "failed:$failed_names"
if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
