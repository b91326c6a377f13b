#!/bin/sh
# bw: `ftbench bw` with its default settings on this host, bracketed by the independent
# baselines of bench/bw_baseline.c (same run; `make bench-tools`), the profile checked against
# api/schemas/profile.schema.json (tests/schema_check.py), then the checks of bench/bw_check.py.
# usage: BUILD=build [BW_OUT=DIR] bench/bw.sh [ftbench bw options]   (bench/README.md, "bw")
set -eu
BUILD=${BUILD:-build}
FTBENCH=${FTBENCH:-$BUILD/bin/ftbench}
out=${BW_OUT:-$(mktemp -d /tmp/ftbench-bw.XXXXXX)}
mkdir -p "$out"
BASELINE=${BASELINE:-$BUILD/bench/bw_baseline}
[ -x "$BASELINE" ] || { echo "bw.sh: $BASELINE is not built (make bench-tools)" >&2; exit 2; }
SCHEMA=${SCHEMA:-api/schemas/profile.schema.json}

"$BASELINE" > "$out/baseline_before.json"
export XDG_CACHE_HOME="$out/cache"
t0=$(date +%s.%N)
"$FTBENCH" bw "$@" > "$out/summary.txt" 2> "$out/bw.stderr"
t1=$(date +%s.%N)
"$BASELINE" > "$out/baseline_after.json"
prof=$(ls "$out"/cache/freetoken/benchbw/*.json | head -n 1)
cp "$prof" "$out/profile.json"
cat "$out/summary.txt"
python3 "$(dirname "$0")/../tests/schema_check.py" "$SCHEMA" "$out/profile.json"
python3 "$(dirname "$0")/bw_check.py" "$out/profile.json" "$out/baseline_before.json" "$out/baseline_after.json" \
	"$(awk "BEGIN{print $t1 - $t0}")" "$FTBENCH"
