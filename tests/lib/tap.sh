# tests/lib/tap.sh: what the shell tests share. Source it from a test run in the repository root
# (as scripts/run-tests.sh runs them):
#   . "$(dirname "$0")/../lib/tap.sh"
#   tap_tmpdir NAME       T = a fresh directory /tmp/ft-NAME-XXXXXX, removed when the test exits
#   ok DESC / nok DESC    one TAP line each (n counts them, failed counts the nok)
#   check DESC CMD...     ok when CMD succeeds, else nok
#   tap_done              the plan line "1..n" (for tests that count as they go); false if any failed
# After a nok, the first TAP_LINES (20) lines of each file named in TAP_SHOW (default: "$T/err"
# when T is set; TAP_SHOW= shows none), or the last ones with TAP_CUT=tail, say why as comments.
n=0
failed=0
B=${BUILD:-build}
FTBENCH="$(pwd)/$B/bin/ftbench"
# the test build of ftbench: the same CLI with its test hooks and doubles (src/cli/cli.h)
FTBENCH_HOOKS="$(pwd)/$B/tests/integration/ftbench_hooks"

tap_tmpdir() {
	T=$(mktemp -d "/tmp/ft-$1-XXXXXX") || exit 1
	trap 'rm -rf "$T"' EXIT
	trap 'exit 1' INT TERM
}
tap_show() {
	for _f in ${TAP_SHOW-${T:+$T/err}}; do
		[ -s "$_f" ] && sed 's/^/#   /' "$_f"
	done | "${TAP_CUT:-head}" -n "${TAP_LINES:-20}"
	return 0
}
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; tap_show; }
check() { _d=$1; shift; if "$@"; then ok "$_d"; else nok "$_d"; fi; }
tap_done() { echo "1..$n"; [ "$failed" -eq 0 ]; }
