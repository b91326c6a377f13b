#!/bin/sh
# Run test programs and scripts, one at a time, and count their checks honestly.
# usage: run-tests.sh [--gpu] TEST...
#
# A test program (cmocka) reports "[  PASSED  ] N test(s)", "[  FAILED  ] N", "[  SKIPPED ] N".
# A script (*.sh) speaks TAP: "ok N - ...", "not ok N - ...", "ok N - ... # SKIP why" (a skip,
# never a pass) and a plan line "1..N" (first or last) that the number of ok / not ok lines
# must match; "1..0 # SKIP why" skips the whole script. A test fails when it reports a failed
# check, exits non-zero (a crash, a timeout after FT_TEST_TIMEOUT seconds, default 600), reports
# no check at all, or (a script) has no plan line or stops before its plan; a test path that does
# not exist is a failure too.
#
# Each test runs in its own session with stdin from /dev/null: it never sees a terminal, so
# `make test` behaves the same at a terminal, under script(1) or tmux and in CI (a test that
# uses a terminal itself, e.g. script(1), makes its own). Its name is printed as it starts.
# Ends with one line "N passed, N failed[, N skipped]"; exit status 1 when anything failed.
gpu=0
[ "${1:-}" = "--gpu" ] && { gpu=1; shift; }
pass=0 fail=0 skip=0 failed_names=
if [ "$gpu" = 1 ]; then
	g=$("${BUILD:-build}/bin/ftbench" gpus 2>&1 | head -n 1)
	case "$g" in "no GPUs"*) echo "test-gpu: ${g#no GPUs: } — the GPU tests skip (run them on a machine with an NVIDIA GPU)";; esac
fi
log=$(mktemp)
tpid=
# Interrupted (Ctrl-C at the terminal, make killed): end the running test's whole session too.
stop() {
	[ -n "$tpid" ] && kill -TERM -- "-$tpid" 2>/dev/null
	[ -n "$tpid" ] && wait "$tpid" 2>/dev/null
	rm -f "$log"
	exit 130
}
trap 'rm -f "$log"' EXIT
trap stop INT TERM HUP
timeout="${FT_TEST_TIMEOUT:-600}"
for t in "$@"; do
	name=${t#${BUILD:-build}/tests/}
	echo "run  $name"
	why=
	if [ ! -e "$t" ]; then
		p=0 f=1 s=0 rc=127 why="no such test: $t"
		: >"$log"
	else
		# setsid: a new session (no controlling terminal) whose process group timeout kills whole.
		case "$t" in
		*.sh) setsid -w timeout "$timeout" sh "$t" >"$log" 2>&1 </dev/null &;;
		*)    setsid -w timeout "$timeout" "$t" >"$log" 2>&1 </dev/null &;;
		esac
		tpid=$!
		wait "$tpid"
		rc=$?
		tpid=
		case "$t" in
		*.sh)
			plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
			s=$(grep -Eic '^ok .*# *skip' "$log")
			p=$(($(grep -c '^ok ' "$log") - s))
			f=$(grep -c '^not ok' "$log")
			if [ -z "$plan" ]; then
				why="no plan line (1..N): stopped early or not TAP"
			elif [ "$plan" -eq 0 ] && grep -Eiq '^1\.\.0 *# *skip' "$log"; then
				s=$((s + 1))
			elif [ $((p + s + f)) -ne "$plan" ]; then
				why="planned $plan checks, reported $((p + s + f))"
			fi
			;;
		*)
			p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
			f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
			s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
			;;
		esac
		if [ -z "$why" ] && [ $((p + f + s)) -eq 0 ]; then why="reported no check"; fi
		case $rc in
		0) ;;
		124|137) why="timed out after ${timeout}s${why:+; $why}" ;;
		*) [ "$f" -eq 0 ] && why="exit status $rc${why:+; $why}" ;;
		esac
		[ -n "$why" ] && [ "$f" -eq 0 ] && f=1   # crashed, timed out, silent or stopped early
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	if [ "$f" -gt 0 ]; then
		echo "FAIL $name (exit $rc${why:+: $why})"
		grep -E '^not ok|^\[  FAILED  \] [^0-9]' "$log" | head -n 20 | sed 's/^/  > /'
		sed 's/^/    /' "$log" | tail -n 40
		failed_names="$failed_names $name"
	elif [ "$s" -gt 0 ]; then
		echo "ok   $name ($p passed, $s skipped)"
		grep -Ei '^ok .*# *skip|^1\.\.0 *# *skip|^\[  SKIPPED \] [^0-9]' "$log" | sed 's/^/    skipped: /' | head -n 10
	else
		echo "ok   $name ($p passed)"
	fi
done
[ -n "$failed_names" ] && echo "failed:$failed_names"
if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
