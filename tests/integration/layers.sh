#!/bin/sh
# The daemon's layers: its #include graph has no cycle and no arrow against the order of
# tests/integration/layers.py (docs/ARCHITECTURE.md); the checker itself fails on a planted
# back-arrow and a planted cycle; main.c is the only caller of sd_notify; src/ and daemon/ have
# no include cycle among their modules (scripts/structure.py --cycles, which finds a planted one).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/ftlayers.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib/tap.sh"
TAP_SHOW="$T/log" TAP_LINES=100000
check() { python3 "$ROOT/tests/integration/layers.py" "$1" >"$T/log" 2>&1; }

echo "1..7"
if check "$ROOT/daemon"; then ok "daemon/: every include points down, no cycle"; else nok "daemon/: every include points down, no cycle"; fi

cp -r "$ROOT/daemon" "$T/up"
sed -i 's|^#include "job.h"|#include "job.h"\n#include "http.h"|' "$T/up/job.c"
if check "$T/up"; then : >"$T/log"; nok "a planted include of http.h in job.c is refused"
elif grep -q 'job.c includes http.h' "$T/log"; then ok "a planted include of http.h in job.c is refused"
else nok "a planted include of http.h in job.c is refused"; fi

mkdir "$T/loop"
printf '#include "b.h"\n' >"$T/loop/a.h"
printf '#include "a.h"\n' >"$T/loop/b.h"
if check "$T/loop"; then : >"$T/log"; nok "a planted cycle is refused"
elif grep -q 'include cycle: a <-> b' "$T/log"; then ok "a planted cycle is refused"
else nok "a planted cycle is refused"; fi

cp -r "$ROOT/daemon" "$T/new"
printf '/* x */\n' >"$T/new/stray.c"
if check "$T/new"; then : >"$T/log"; nok "a module without a layer is refused"
elif grep -q 'module stray has no layer' "$T/log"; then ok "a module without a layer is refused"
else nok "a module without a layer is refused"; fi

grep -ln 'sd_notify' "$ROOT"/daemon/*.c | grep -v '/main\.c$' >"$T/log"
if [ -s "$T/log" ]; then nok "only main.c calls sd_notify"; else ok "only main.c calls sd_notify"; fi
cyc() { python3 "$ROOT/scripts/structure.py" --cycles --repo "$1" >"$T/log" 2>&1; }
if cyc "$ROOT"; then ok "src/ and daemon/: no include cycle"; else nok "src/ and daemon/: no include cycle"; fi
mkdir "$T/repo" && cp -r "$ROOT/src" "$ROOT/daemon" "$T/repo/"
sed -i 's|^#include "hw/gpu.h"|#include "cli/flags.h"\n#include "hw/gpu.h"|' "$T/repo/src/cli/cli.h"
if cyc "$T/repo"; then : >"$T/log"; nok "a planted cycle cli.h <-> flags.c is found"
elif grep -q 'cycle: src/cli/cli <-> src/cli/flags' "$T/log"; then ok "a planted cycle cli.h <-> flags.c is found"
else nok "a planted cycle cli.h <-> flags.c is found"; fi
[ "$failed" -eq 0 ]
