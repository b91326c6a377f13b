#!/bin/sh
# make run: the main job through the daemon, end to end, on this machine.
#   1. start $BUILD/bin/ftbenchd on 127.0.0.1 (a free port) with a temporary state folder; its
#      profile store is yours, the one `ftbench profile show` reads ($XDG_CACHE_HOME/freetoken/
#      benchbw, ~/.cache/... when unset), so the profile stays after the run;
#   2. submit a `bw` job over HTTP (`ftbench submit bw ... --wait`) and follow its progress;
#   3. print the profile summary (`ftbench profile show`) and where the profile is, or, when the
#      job failed, every reason it gives;
#   4. stop the daemon (SIGTERM, wait) and remove the temporary folder.
# Works without a GPU: bw then measures the CPU side only and writes host.json.
#
# Environment: BUILD (default build); FT_RUN_BW_ARGS (the bw job's arguments, default
# "--dtype bf16,nvfp4 --cpu-iters 4 --kernel-cpu-iters 16"); FT_RUN_TIMEOUT (job timeout in
# seconds, default 1800); FT_RUN_PROFILE_DIR (the profile store instead of yours);
# FT_RUN_KEEP=1 keeps the temporary folder (journal, logs).
# Exit status: the job's (0 succeeded, 1 failed); 1 also when the daemon does not come up or
# does not stop cleanly; 2 when the binaries are missing.
set -u

BUILD=${BUILD:-build}
case $BUILD in
/*) BIN=$BUILD/bin ;;
*) BIN=$(cd "$(dirname "$0")/.." && pwd)/$BUILD/bin ;;
esac
FTBENCH=$BIN/ftbench
FTBENCHD=$BIN/ftbenchd
BW_ARGS=${FT_RUN_BW_ARGS:---dtype bf16,nvfp4 --cpu-iters 4 --kernel-cpu-iters 16}
JOB_TIMEOUT=${FT_RUN_TIMEOUT:-1800}
UP_WAIT_S=20   # ftbenchd asks `ftbench gpus --json` at start; allow for a slow driver
STOP_WAIT_S=30 # > the daemon's kill-grace (10 s) for a job still running

say() { printf '== %s\n' "$*"; }
die() { printf 'make run: %s\n' "$*" >&2; exit "${2:-1}"; }

for b in "$FTBENCH" "$FTBENCHD"; do
	[ -x "$b" ] || die "$b is missing: run 'make' first" 2
done
command -v curl >/dev/null 2>&1 || die "curl is needed to check the daemon's /health (apt-get install curl)" 2

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ftbenchd-run.XXXXXX") || die "cannot make a temporary folder"
DPID=
stop_daemon() {
	[ -n "$DPID" ] || return 0
	kill -0 "$DPID" 2>/dev/null || { wait "$DPID" 2>/dev/null; DPID=; return 0; }
	kill -TERM "$DPID" 2>/dev/null
	i=0
	while kill -0 "$DPID" 2>/dev/null && [ $i -lt $((STOP_WAIT_S * 10)) ]; do
		sleep 0.1; i=$((i + 1))
	done
	if kill -0 "$DPID" 2>/dev/null; then
		echo "make run: ftbenchd did not stop ${STOP_WAIT_S}s after SIGTERM; killing it" >&2
		kill -KILL "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
		DPID=
		return 1
	fi
	wait "$DPID"
	rc=$?
	DPID=
	return $rc
}
# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() {
	stop_daemon || true
	if [ "${FT_RUN_KEEP:-0}" = 1 ]; then
		echo "make run: kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$TMP/cache" "$TMP/state" "$TMP/config" || die "cannot populate $TMP"
# The caller's profile store (what `ftbench profile show` reads), before XDG_CACHE_HOME moves.
if [ -n "${FT_RUN_PROFILE_DIR:-}" ]; then
	STORE=$FT_RUN_PROFILE_DIR
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
	STORE=$XDG_CACHE_HOME/freetoken/benchbw
else
	STORE=${HOME:?HOME is not set}/.cache/freetoken/benchbw
fi
USER_CACHE=${XDG_CACHE_HOME:-}

# The daemon and every command below see only the temporary folders: no systemd hand-over
# (socket, notify, directories) leaks in from the caller's environment.
unset NOTIFY_SOCKET LISTEN_FDS LISTEN_PID LISTEN_FDNAMES WATCHDOG_USEC WATCHDOG_PID \
	STATE_DIRECTORY CACHE_DIRECTORY LOGS_DIRECTORY FREETOKEN_BENCHBW_PATH \
	FTBENCHD_URL FTBENCHD_TOKEN_FILE
export XDG_CACHE_HOME="$TMP/cache" XDG_STATE_HOME="$TMP/state" XDG_CONFIG_HOME="$TMP/config"

# A free loopback port: ask the kernel when python3 is there, else a pseudo-random one;
# either way a port taken in the meantime makes the daemon exit, and we try another.
pick_port() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' \
			2>/dev/null && return
	fi
	echo $(( ( $$ * 7919 + $1 * 104729 + $(date +%N | sed 's/^0*//;s/^$/0/') ) % 30000 + 20000 ))
}

# A config of our own (never /etc/ftbenchd.conf): loopback, the temporary state folder, this
# build's worker, the caller's profile store (its legacy single file stays in the temporary
# cache: make run does not change what released engines read).
start_daemon() {
	PORT=$1
	cat >"$TMP/ftbenchd.conf" <<-EOF
	# written by scripts/make-run.sh
	listen = 127.0.0.1:$PORT
	state-dir = $TMP/state/ftbenchd
	profile-dir = $STORE
	worker = $FTBENCH
	EOF
	"$FTBENCHD" --config "$TMP/ftbenchd.conf" >>"$TMP/ftbenchd.log" 2>&1 &
	DPID=$!
	i=0
	while [ $i -lt $((UP_WAIT_S * 10)) ]; do
		if ! kill -0 "$DPID" 2>/dev/null; then
			wait "$DPID"; DRC=$?; DPID=
			return 1
		fi
		if curl -fsS -m 2 "http://127.0.0.1:$PORT/health" >"$TMP/health.json" 2>/dev/null; then
			return 0
		fi
		sleep 0.1; i=$((i + 1))
	done
	return 2
}

say "starting ftbenchd on loopback (state and cache in $TMP)"
up=0 DRC=0
for attempt in 1 2 3; do
	port=$(pick_port "$attempt")
	start_daemon "$port"
	case $? in
	0) up=1; break ;;
	1) grep -qiE 'address (already )?in use|EADDRINUSE' "$TMP/ftbenchd.log" || break ;; # else retry
	2) break ;;
	esac
done
if [ "$up" != 1 ]; then
	echo "make run: ftbenchd did not come up on 127.0.0.1:$port" >&2
	if [ -n "$DPID" ]; then
		echo "make run: it is running but /health did not answer within ${UP_WAIT_S}s" >&2
	else
		echo "make run: it exited with status $DRC" >&2
	fi
	echo "make run: its log ($TMP/ftbenchd.log):" >&2
	tail -n 20 "$TMP/ftbenchd.log" | sed 's/^/    /' >&2
	exit 1
fi
URL=http://127.0.0.1:$port
echo "ftbenchd $(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$TMP/health.json") (pid $DPID) at $URL"
gpus=$(curl -fsS -m 5 "$URL/gpus" 2>/dev/null | sed -n 's/.*"reason": *"\([^"]*\)".*/\1/p')
[ -z "$gpus" ] || echo "no GPU: $gpus (bw measures the CPU side and writes host.json)"

say "submitting a bw job over HTTP: ftbench submit bw $BW_ARGS --wait"
# Progress goes to stderr (a bar on a terminal); the outcome lines (stdout) are kept to find
# the profile path, then shown.
# shellcheck disable=SC2086 # BW_ARGS is a list of words on purpose
"$FTBENCH" submit bw $BW_ARGS --timeout "$JOB_TIMEOUT" --wait --daemon "$URL" >"$TMP/outcome.txt"
job_rc=$?
cat "$TMP/outcome.txt"
job_id=$(sed -n 's/^job \([0-9a-f]\{16\}\) .*/\1/p' "$TMP/outcome.txt" | head -n 1)

# `ftbench profile ...` as the caller sees it (their cache, not the temporary one)
# (FT_RUN_PROFILE_DIR: a store of its own, read through FREETOKEN_BENCHBW_PATH)
profile_cmd() {
	if [ -n "${FT_RUN_PROFILE_DIR:-}" ] && [ -n "${profile:-}" ]; then
		FREETOKEN_BENCHBW_PATH=$profile "$FTBENCH" profile "$@"
	elif [ -n "$USER_CACHE" ]; then XDG_CACHE_HOME=$USER_CACHE "$FTBENCH" profile "$@"
	else env -u XDG_CACHE_HOME "$FTBENCH" profile "$@"; fi
}

if [ "$job_rc" -ne 0 ] && grep -q "the profile is not valid" "$TMP/outcome.txt"; then
	# measured, but the profile's own checks failed (a busy or noisy host): honest, not broken
	echo "make run: the bw job measured, but its profile did not pass its own checks on this host;"
	echo "  every reason is listed above (reasons:). The profile is kept in the store's history"
	echo "  ($STORE/history/), not where engines read. Run it again on a quiet host, or see:"
	echo "  ftbench bw --help (exit status 3, --max-spread)."
	job_rc=0
elif [ "$job_rc" -ne 0 ]; then
	echo "make run: the bw job did not succeed (exit $job_rc); its reasons are above" >&2
	if [ -n "$job_id" ]; then
		echo "make run: the worker's log (GET /benchmark/jobs/$job_id/log), last lines:" >&2
		curl -sS -m 5 "$URL/benchmark/jobs/$job_id/log" 2>/dev/null | tail -n 20 | sed 's/^/    /' >&2
	fi
else
	profile=$(sed -n 's/^  profile: //p' "$TMP/outcome.txt" | head -n 1)
	say "profile summary (ftbench profile show)"
	if ! profile_cmd show; then
		echo "make run: 'ftbench profile show' could not read the profile" >&2
		job_rc=1
	fi
	[ -n "$profile" ] || profile=$(profile_cmd path 2>/dev/null)
	echo "profile kept at: ${profile:-?}"
	echo "  (your profile store $STORE: 'ftbench profile show' reads it; an installed daemon"
	echo "   writes /var/cache/freetoken/benchbw/, where engines read it)"
fi

say "stopping ftbenchd (SIGTERM)"
if stop_daemon; then
	echo "ftbenchd stopped cleanly"
else
	echo "make run: ftbenchd did not stop cleanly; its log:" >&2
	tail -n 20 "$TMP/ftbenchd.log" | sed 's/^/    /' >&2
	[ "$job_rc" -ne 0 ] || job_rc=1
fi
exit "$job_rc"
