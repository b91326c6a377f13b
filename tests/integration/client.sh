#!/bin/sh
# Integration: `ftbench submit/jobs/wait/cancel` against the real ftbenchd on loopback, driven
# as a user would. The daemon runs a fake worker (a shell script speaking the worker protocol on
# fd 3) so that every outcome is fast and deterministic: `bw --cpu-iters=1` succeeds with a
# profile, 2 fails, 3 hangs until killed. `gpus` goes to the real ftbench.
# Prints TAP-like "ok N - ..." / "not ok N - ..." lines and the plan "1..N" at the end; "1..0 # SKIP"
# while ftbenchd is the placeholder.
set -u
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case $BUILD in /*) BIN=$BUILD/bin ;; *) BIN=$ROOT/$BUILD/bin ;; esac
FTBENCH=$BIN/ftbench
FTBENCHD=$BIN/ftbenchd

if [ ! -x "$FTBENCHD" ] || [ ! -x "$FTBENCH" ]; then
	echo "not ok 1 - $BIN/ftbench and ftbenchd are built"
	exit 1
fi
if "$FTBENCHD" --help 2>&1 | grep -q "not built yet"; then
	echo "1..0 # SKIP ftbenchd is still the placeholder in this build"
	exit 0
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/ftclient-test.XXXXXX")
DPID=
cleanup() {
	if [ -n "$DPID" ]; then
		kill -TERM "$DPID" 2>/dev/null
		i=0
		while kill -0 "$DPID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill -KILL "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

. "$(dirname "$0")/../lib/tap.sh"
TAP_SHOW="$T/out $T/err" TAP_LINES=100000
# run WANT_RC CMD...: run CMD with stdout in $T/out, stderr in $T/err; true when rc == WANT_RC
run() {
	want=$1; shift
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	[ "$got" -eq "$want" ] || { echo "#   exit $got, wanted $want: $*" >>"$T/err"; return 1; }
}
has() { grep -q -- "$1" "$2"; }

# ---------------------------------------------------------------- the fake worker
cat >"$T/worker" <<EOF
#!/bin/sh
# fake ftbench for the daemon: gpus -> the real one; bw by --cpu-iters: 1 ok, 2 fail, 3 hang
[ "\$1" = gpus ] && exec "$FTBENCH" "\$@"
mode=1
for a; do case \$a in --cpu-iters=*) mode=\${a#*=} ;; esac; done
echo "fake worker: \$*"
for i in 1 2 3; do
	printf '{"type":"progress","done":%d,"total":3,"label":"step%d"}\n' \$i \$i >&3
	sleep 0.2
done
case \$mode in
1) printf '{"type":"result","result":{"version":4,"timestamp":"2026-11-29T10:55:10Z","epoch":1795000000.5,"host":"test","gpu":null,"cpu":{"physical_cores":2},"threshold":2.0,"ceilings":{"cpu_stream_read_gbs":10.0},"dtypes":{"bf16":"offload"},"dtype_kernels":{},"workloads":{},"warnings":[]}}\n' >&3
   exit 0 ;;
2) printf '{"type":"error","message":"fake failure"}\n' >&3; echo "fake worker failing" >&2; exit 1 ;;
*) exec sleep 600 ;;
esac
EOF
chmod +x "$T/worker"

# ---------------------------------------------------------------- the daemon
TOKEN=client-test-token-0123456789
printf '%s\n' "$TOKEN" >"$T/token"
printf 'wrong-token-but-long-enough\n' >"$T/badtoken"
chmod 600 "$T/token" "$T/badtoken"
unset NOTIFY_SOCKET LISTEN_FDS LISTEN_PID STATE_DIRECTORY CACHE_DIRECTORY FREETOKEN_BENCHBW_PATH
export XDG_CACHE_HOME="$T/cache" XDG_STATE_HOME="$T/state"

started=0
for attempt in 1 2 3 4 5; do
	port=$(( ( $$ * 31 + attempt * 7919 + $(date +%N | sed 's/^0*//;s/^$/0/') ) % 30000 + 20000 ))
	cat >"$T/ftbenchd.conf" <<EOF
listen = 127.0.0.1:$port
state-dir = $T/state/ftbenchd
worker = $T/worker
token-file = $T/token
kill-grace = 1
# no first-boot bw job of its own: the test counts the jobs it submits
rebench = never
EOF
	"$FTBENCHD" --config "$T/ftbenchd.conf" >"$T/daemon.log" 2>&1 &
	DPID=$!
	i=0
	while [ $i -lt 150 ]; do
		kill -0 "$DPID" 2>/dev/null || break
		curl -fsS -m 2 "http://127.0.0.1:$port/health" >/dev/null 2>&1 && { started=1; break; }
		sleep 0.1; i=$((i + 1))
	done
	[ "$started" = 1 ] && break
	kill -KILL "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; DPID=
done
if [ "$started" != 1 ]; then
	echo "not ok 1 - ftbenchd comes up on loopback"
	sed 's/^/#   /' "$T/daemon.log"
	exit 1
fi
ok "ftbenchd comes up on 127.0.0.1:$port"

export FTBENCHD_URL="http://127.0.0.1:$port" FTBENCHD_TOKEN_FILE="$T/token"
FB=$FTBENCH

# ---------------------------------------------------------------- submit --wait: success
check "submit bw --wait: exit 0 when the job succeeds" run 0 "$FB" submit bw --cpu-iters 1 --wait
check "submit --wait prints the outcome and the profile path" \
	sh -c "grep -q '^job [0-9a-f]\{16\} bw succeeded' '$T/out' && grep -q 'profile: .*host.json' '$T/out'"
prof=$(sed -n 's/^  profile: //p' "$T/out")
check "the profile landed under XDG_CACHE_HOME ($prof)" sh -c "[ -s '$prof' ] && case '$prof' in '$T/cache/'*) true;; *) false;; esac"
check "progress is quiet when piped (no bar on stderr)" sh -c "! grep -q '\[#' '$T/err'"

# ---------------------------------------------------------------- --json
check "submit --wait --json: exit 0" run 0 "$FB" submit bw --cpu-iters=1 --wait --json
check "--json prints the final job record (state succeeded, result)" \
	python3 -c "import json,sys; j=json.load(open('$T/out')); sys.exit(not (j['state']=='succeeded' and j['result']['version']==4 and j['args']['cpu_iters']==1))"

# ---------------------------------------------------------------- idempotency, --args, --opt=value
check "submit --idempotency-key K: exit 0" run 0 "$FB" submit bw --cpu-iters 1 --idempotency-key=client-k1
K1=$(cat "$T/out")
check "the same key and body give the same job" \
	sh -c "[ \"\$('$FB' submit bw --idempotency-key client-k1 --cpu-iters 1)\" = '$K1' ]"
check "the same key with another body is refused (idempotency_conflict): exit 2" \
	run 2 "$FB" submit bw --cpu-iters 2 --idempotency-key client-k1
check "a key with a space is refused before sending: exit 2" run 2 "$FB" submit bw --idempotency-key "a b"
check "--args JSON merges with --key value pairs" run 0 "$FB" submit bw --args '{"dtype":"bf16"}' --cpu-iters 1 --json
check "the job's args hold both" python3 -c "import json,sys; a=json.load(open('$T/out'))['args']; sys.exit(a!={'dtype':'bf16','cpu_iters':1})"
check "--args that is not an object: exit 2" run 2 "$FB" submit bw --args '[1]'
"$FB" wait "$K1" >/dev/null 2>&1

# ---------------------------------------------------------------- failure
check "submit --wait: exit 1 when the job fails" run 1 "$FB" submit bw --cpu-iters 2 --wait
check "a failed job's outcome says failed" has ' failed' "$T/out"

# ---------------------------------------------------------------- validation errors, verbatim
check "an out-of-range argument is refused: exit 2" run 2 "$FB" submit bw --cpu-iters 0
check "the daemon's field is shown (args.cpu_iters)" has 'args.cpu_iters' "$T/err"
check "an unknown argument is refused: exit 2" run 2 "$FB" submit bw --no-such-option 3
check "the daemon's field is shown (args.no_such_option)" has 'args.no_such_option' "$T/err"
check "an unknown kind is refused: exit 2" run 2 "$FB" submit frobnicate
check "the daemon's error code is shown (unknown_kind)" has 'unknown_kind' "$T/err"
check "--json on a refusal prints the daemon's error object" \
	sh -c "'$FB' submit bw --cpu-iters 0 --json 2>/dev/null | python3 -c 'import json,sys; e=json.load(sys.stdin)[\"error\"]; sys.exit(e[\"field\"]!=\"args.cpu_iters\")'"

# ---------------------------------------------------------------- auth and reachability
check "a wrong token is refused: exit 2" run 2 "$FB" jobs --token-file "$T/badtoken"
check "the refusal names the 401" has '401' "$T/err"
check "no token is refused: exit 2" run 2 env -u FTBENCHD_TOKEN_FILE "$FB" jobs
check "no daemon: exit 2 with a clear message" run 2 "$FB" jobs --daemon http://127.0.0.1:1
check "the message says it cannot reach ftbenchd" has 'cannot reach ftbenchd' "$T/err"
check "a bad --daemon URL: exit 2" run 2 "$FB" jobs --daemon 127.0.0.1:8377

# ---------------------------------------------------------------- running, queued, cancel
check "submit without --wait prints the job id" run 0 "$FB" submit bw --cpu-iters 3
A=$(cat "$T/out")
check "the id is 16 hex digits ($A)" sh -c "echo '$A' | grep -qx '[0-9a-f]\{16\}'"
check "a second host-holding job is queued behind it" run 0 "$FB" submit bw --cpu-iters 1 --json
B=$(python3 -c "import json; print(json.load(open('$T/out'))['id'])")
i=0
while [ $i -lt 100 ]; do
	"$FB" jobs --state running --json 2>/dev/null | grep -q "\"$A\"" && break
	sleep 0.1; i=$((i + 1))
done
check "jobs: the table lists both with their states" \
	sh -c "'$FB' jobs >'$T/out' 2>'$T/err' && grep -q '^$A  bw .*running' '$T/out' && grep -q '^$B  bw .*queued' '$T/out' && head -n1 '$T/out' | grep -q '^ID '"
check "jobs --state queued --json lists only the queued one" \
	sh -c "'$FB' jobs --state queued --json | python3 -c 'import json,sys; ids=[j[\"id\"] for j in json.load(sys.stdin)[\"jobs\"]]; sys.exit(ids!=[\"$B\"])'"
check "jobs --format csv: a header and both jobs" \
	sh -c "'$FB' jobs --format csv >'$T/out' 2>'$T/err' && head -n1 '$T/out' | grep -qx 'id,kind,state,gpu,created,run_s,note' && grep -Eq '^$A,bw,running,' '$T/out' && grep -Eq '^$B,bw,queued,[^,]*,20[0-9-]+T[0-9:]+Z,,queue position [0-9]+\$' '$T/out'"
check "jobs --format md: a Markdown table" \
	sh -c "'$FB' jobs --format md >'$T/out' 2>'$T/err' && sed -n 2p '$T/out' | grep -q '^| --- |' && grep -q '^| $B | bw | queued |' '$T/out'"
check "jobs --format json is --json" \
	sh -c "'$FB' jobs --format json | python3 -c 'import json,sys; sys.exit(len(json.load(sys.stdin)[\"jobs\"]) < 2)'"
check "jobs --format xml: exit 2" run 2 "$FB" jobs --format xml
# a running job's run_s and note (its progress) move between the two listings: the header is
# compared whole, the rows by id, kind, state, gpu and created
check "jobs --output-format csv is --format csv (one flag name on every table command)" \
	sh -c "'$FB' jobs --format csv >'$T/a' && '$FB' jobs --output-format csv >'$T/b' && [ -s '$T/b' ] && python3 -c 'import csv,sys; t=[list(csv.reader(open(f))) for f in sys.argv[1:]]; r=[[row[:5] for row in x[1:]] for x in t]; sys.exit(t[0][0]!=t[1][0] or r[0]!=r[1] or len(r[0])<2 or t[0][0][6]!=\"note\")' '$T/a' '$T/b'"
check "jobs --output-format xml: exit 2 naming --output-format" \
	sh -c "'$FB' jobs --output-format xml 2>&1 | grep -q -- \"bad value 'xml' for --output-format: expected one of table|json|csv|md\""
check "cancel a queued job: exit 0" run 0 "$FB" cancel "$B"
check "it is cancelled at once" has 'cancelled' "$T/out"
check "wait on the cancelled job: exit 1" run 1 "$FB" wait "$B"
check "cancel a running job by a unique prefix: exit 0" run 0 "$FB" cancel "$(echo "$A" | cut -c1-8)"
check "wait on it: exit 1" run 1 "$FB" wait "$A"
check "its outcome says cancelled" has 'cancelled' "$T/out"
check "cancel of a finished job: exit 1 (job_finished)" run 1 "$FB" cancel "$A"
check "the refusal names job_finished" has 'job_finished' "$T/err"
check "wait on an unknown job: exit 2" run 2 "$FB" wait 0000000000000000
check "wait on a malformed id: exit 2" run 2 "$FB" wait xyz

# ---------------------------------------------------------------- timeout
check "submit --timeout 1 on a hanging job --wait: exit 1" run 1 "$FB" submit bw --cpu-iters 3 --timeout 1 --wait
check "the outcome says timed_out" has 'timed_out' "$T/out"

# ---------------------------------------------------------------- wait follows a job to its end
check "submit then wait: exit 0" sh -c "id=\$('$FB' submit bw --cpu-iters 1) && '$FB' wait \"\$id\" >'$T/out' 2>'$T/err' && grep -q succeeded '$T/out'"

# ---------------------------------------------------------------- a progress bar on a terminal
if command -v script >/dev/null 2>&1; then
	script -qec "'$FB' submit bw --cpu-iters 1 --wait" /dev/null >"$T/tty" 2>&1
	check "on a terminal, submit --wait draws a progress bar" grep -q '\[##########.*3/3 step3' "$T/tty"
else
	ok "# skip progress bar on a terminal: script(1) is not installed"
fi

check "the daemon is still serving" curl -fsS -m 2 "$FTBENCHD_URL/health" -o /dev/null
echo "1..$n"
[ "$failed" -eq 0 ]
