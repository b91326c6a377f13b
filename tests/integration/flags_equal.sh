#!/bin/sh
# One flag, one row: the job arguments of the daemon (ftbenchd --dump-job-args), the CLI's option
# tables (ftbench flags) and api/openapi.yaml agree on bounds, choices, defaults and help
# (scripts/openapi-args.py; it reads the binaries and the spec). Every command's table parses its
# own defaults (--help parses them first) and its --help prints every visible row.
set -u
B=${BUILD:-build}
FT="$(pwd)/$B/bin/ftbench"
T=$(mktemp -d /tmp/ft-flags-equal-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
n=0
check() { desc=$1; shift; n=$((n + 1)); if "$@" >"$T/out" 2>&1; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; sed 's/^/#   /' "$T/out" | head -n 40; fi; }

check "CLI, daemon and api/openapi.yaml agree on every job argument" python3 scripts/openapi-args.py "$B"
"$FT" flags >"$T/flags.json"
for cmd in $(python3 -c "import json,sys; print(' '.join(c['command'] for c in json.load(open(sys.argv[1]))['commands']))" "$T/flags.json"); do
	check "$cmd --help: its defaults parse, exit 0" "$FT" "$cmd" --help
	"$FT" "$cmd" --help >"$T/help" 2>&1
	missing=$(python3 -c "
import json, sys
help = open(sys.argv[2]).read()
for c in json.load(open(sys.argv[1]))['commands']:
    if c['command'] == sys.argv[3]:
        print(' '.join('--' + f['name'] for f in c['flags'] if not f['hidden'] and '\n  --' + f['name'] not in help))
" "$T/flags.json" "$T/help" "$cmd")
	check "$cmd --help has a line for every visible row" [ -z "$missing" ]
done
check "ftbench flags NOPE: exit 2" sh -c "! '$FT' flags nope"
echo "1..$n"
