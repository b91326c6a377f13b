#!/bin/sh
# The systemd files parse: units with systemd-analyze verify (@BINDIR@ replaced as make install
# does), sysusers and tmpfiles applied to an empty root. Skips what this machine lacks.
set -u
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case $BUILD in /*) BIN=$BUILD/bin ;; *) BIN=$ROOT/$BUILD/bin ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/ftunits.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib/tap.sh"
TAP_SHOW="$T/log" TAP_LINES=100000

for f in ftbenchd.service ftbenchd.socket ftbenchd.sysusers ftbenchd.tmpfiles; do
	if [ -s "$ROOT/systemd/$f" ]; then ok "systemd/$f exists"; else : >"$T/log"; nok "systemd/$f exists"; fi
done
grep -q '^ExecStart=@BINDIR@/ftbenchd' "$ROOT/systemd/ftbenchd.service" && ok "ExecStart uses @BINDIR@" ||
	{ : >"$T/log"; nok "ExecStart uses @BINDIR@"; }

mkdir -p "$T/units"
for f in "$ROOT"/systemd/*.service "$ROOT"/systemd/*.socket; do
	sed "s|@BINDIR@|$BIN|g" "$f" >"$T/units/$(basename "$f")"
done
if ! command -v systemd-analyze >/dev/null 2>&1; then
	ok "# skip systemd-analyze verify: systemd-analyze is not installed"
else
	# verify prints one "file:line: message" per problem in our units; other units' noise and
	# a container's missing PID 1 are not ours.
	(cd "$T/units" && systemd-analyze verify --man=no ftbenchd.service ftbenchd.socket) >"$T/log" 2>&1
	if grep -q 'ftbenchd\.\(service\|socket\)' "$T/log"; then
		nok "systemd-analyze verify: no complaint about ftbenchd.service/.socket"
	else
		ok "systemd-analyze verify: no complaint about ftbenchd.service/.socket"
	fi
fi
if command -v systemd-sysusers >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$T/root/etc"
	if systemd-sysusers --root="$T/root" "$ROOT/systemd/ftbenchd.sysusers" >"$T/log" 2>&1 &&
		grep -q '^ftbenchd:' "$T/root/etc/passwd" && grep -Eq '^render:[^:]*:[0-9]+:(.*,)?ftbenchd(,|$)' "$T/root/etc/group" &&
		grep -Eq '^video:[^:]*:[0-9]+:(.*,)?ftbenchd(,|$)' "$T/root/etc/group"; then
		ok "sysusers: user ftbenchd, member of render and video"
	else
		nok "sysusers: user ftbenchd, member of render and video"
	fi
	if command -v systemd-tmpfiles >/dev/null 2>&1 &&
		systemd-tmpfiles --root="$T/root" --create "$ROOT/systemd/ftbenchd.tmpfiles" >"$T/log" 2>&1 &&
		[ "$(stat -c %a "$T/root/var/cache/freetoken/benchbw")" = 755 ] &&
		[ "$(stat -c %a "$T/root/var/lib/ftbenchd")" = 750 ]; then
		ok "tmpfiles: /var/cache/freetoken/benchbw 0755, /var/lib/ftbenchd 0750"
	else
		nok "tmpfiles: /var/cache/freetoken/benchbw 0755, /var/lib/ftbenchd 0750"
	fi
else
	ok "# skip sysusers: needs root and systemd-sysusers"
	ok "# skip tmpfiles: needs root and systemd-sysusers"
fi
echo "1..$n"
[ "$failed" -eq 0 ]
