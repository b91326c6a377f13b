#!/bin/sh
# scripts/run-tests.sh counts honestly: a skip is a skip (never a pass), a silent test, a missing
# test path and a script that stops before its plan are failures, a crash and a timeout (whose
# process group is killed) fail, each test's name is printed as it starts, and a test that uses a
# terminal (script(1)) behaves the same when the runner itself runs under a terminal.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUN="$ROOT/scripts/run-tests.sh"
T=$(mktemp -d "${TMPDIR:-/tmp}/ftrunner-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
echo "1..13"
n=0
# expect DESC WANT_RC PATTERN... -- TEST...: run the runner, want its exit status and every
# pattern (grep -E) in its output
expect() {
	desc=$1 want=$2; shift 2
	pats=
	while [ "$1" != "--" ]; do pats="$pats
$1"; shift; done
	shift
	(cd "$T" && BUILD="$T/build" FT_TEST_TIMEOUT=${TO:-60} sh "$RUN" "$@") >"$T/out" 2>&1
	rc=$?
	okk=1
	[ "$rc" -eq "$want" ] || okk=0
	echo "$pats" | while IFS= read -r p; do [ -z "$p" ] || grep -Eq -- "$p" "$T/out" || exit 1; done || okk=0
	n=$((n + 1))
	if [ $okk = 1 ]; then echo "ok $n - $desc"; else
		echo "not ok $n - $desc (exit $rc, want $want)"; sed 's/^/#   /' "$T/out"; fi
}
mk() { printf '%s\n' "$2" >"$T/$1"; chmod +x "$T/$1"; }

mk skip.sh '#!/bin/sh
echo "1..2"; echo "ok 1 - a"; echo "ok 2 - b # SKIP no widget here"'
expect "a skipped check counts as skipped, not passed, and is shown" 0 \
	'^ok   skip\.sh \(1 passed, 1 skipped\)' 'skipped: ok 2 - b # SKIP no widget' '^1 passed, 0 failed, 1 skipped$' -- skip.sh
mk skipall.sh '#!/bin/sh
echo "1..0 # SKIP nothing to do here"'
expect "a script skipped as a whole (plan 1..0 and a skip directive) is one skip" 0 '^0 passed, 0 failed, 1 skipped$' -- skipall.sh
mk silent.sh '#!/bin/sh
exit 0'
expect "a silent script fails" 1 '^FAIL silent\.sh .*no plan line' '^0 passed, 1 failed$' -- silent.sh
mk silentbin '#!/bin/sh
exit 0'
expect "a silent test program (no cmocka summary) fails" 1 '^FAIL \./silentbin .*reported no check' -- ./silentbin
expect "a test path that does not exist fails" 1 '^FAIL nothere .*no such test' '^failed: nothere$' -- nothere
mk early.sh '#!/bin/sh
echo "1..3"; echo "ok 1 - a"; echo "ok 2 - b"; exit 0'
expect "a script that stops before its plan fails" 1 '^FAIL early\.sh .*planned 3 checks, reported 2' -- early.sh
mk noplan.sh '#!/bin/sh
echo "ok 1 - a"; echo "ok 2 - b"'
expect "a script with no plan line fails" 1 '^FAIL noplan\.sh .*no plan line' -- noplan.sh
mk early_py.sh '#!/bin/sh
exec python3 -c "import sys
print(\"1..4\"); print(\"ok 1 - a\"); sys.exit(0)"'
expect "a Python test that stops before its plan fails" 1 '^FAIL early_py\.sh .*planned 4 checks, reported 1' -- early_py.sh
mk good.sh '#!/bin/sh
echo "ok 1 - a"; echo "ok 2 - b"; echo "1..2"'
mk cm '#!/bin/sh
echo "[  PASSED  ] 3 test(s)."; echo "[  SKIPPED ] 1 test(s), listed below:"; echo "[  SKIPPED ] test_gpu_thing"'
expect "names printed as tests start; plans at the end; cmocka skips counted" 0 \
	'^run  good\.sh$' '^ok   good\.sh \(2 passed\)$' '^run  \./cm$' '^ok   \./cm \(3 passed, 1 skipped\)$' \
	'^5 passed, 0 failed, 1 skipped$' -- good.sh ./cm
mk crash '#!/bin/sh
echo "[  PASSED  ] 2 test(s)."; kill -SEGV $$'
expect "a test program that crashes after its checks fails" 1 '^FAIL \./crash \(exit 139: exit status 139\)' -- ./crash
mk hang.sh '#!/bin/sh
echo "1..1"; sleep 300 & echo $! >"'"$T"'/hang.pid"; wait'
TO=2 expect "a hanging test times out and fails" 1 '^FAIL hang\.sh .*timed out after 2s' -- hang.sh
n=$((n + 1))
sleep 0.3
hp=$(cat "$T/hang.pid" 2>/dev/null)
# gone, or a zombie waiting for init to reap it
if [ -n "$hp" ] && { ! kill -0 "$hp" 2>/dev/null || grep -q '^[0-9]* ([^)]*) Z' "/proc/$hp/stat" 2>/dev/null; }; then echo "ok $n - the timed-out test's children are gone"
else echo "not ok $n - the timed-out test left $(cat "$T/hang.pid" 2>/dev/null) running"; kill "$(cat "$T/hang.pid")" 2>/dev/null; fi
# #17 defect 13: the runner under a terminal, running a test that uses script(1) itself, must not
# be stopped by the terminal (it hung 10 minutes)
mk tty.sh '#!/bin/sh
echo "1..1"
if script -qec "echo inner" /dev/null | grep -q inner; then echo "ok 1 - script(1) ran"; else echo "not ok 1 - script(1)"; fi'
n=$((n + 1))
(cd "$T" && BUILD="$T/build" timeout 60 script -qec "sh '$RUN' tty.sh" /dev/null) </dev/null >"$T/out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '1 passed, 0 failed' "$T/out"; then echo "ok $n - the runner under a terminal runs a test that uses script(1)"
else echo "not ok $n - under script(1): exit $rc"; sed 's/^/#   /' "$T/out"; fi
