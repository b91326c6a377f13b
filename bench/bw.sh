#!/bin/sh
# bw: `ftbench bw` with its default settings on this host, bracketed by the independent
# baselines of bench/bw_baseline.c (same run), then the checks of bench/bw_check.py.
# usage: BUILD=build [BW_OUT=DIR] bench/bw.sh [ftbench bw options]   (bench/RESULTS.md, section "bw")
set -eu
BUILD=${BUILD:-build}
FTBENCH=${FTBENCH:-$BUILD/bin/ftbench}
out=${BW_OUT:-$(mktemp -d /tmp/ftbench-bw.XXXXXX)}
mkdir -p "$out"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ -z "${BASELINE:-}" ]; then
	BASELINE=$BUILD/bench/bw_baseline
	VALIDATE=$BUILD/bench/bw_validate
	mkdir -p "$BUILD/bench"
	cuda=""
	[ -x "$CUDA_HOME/bin/nvcc" ] && cuda="-DFT_HAVE_CUDA=1 -I$CUDA_HOME/include -L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lstdc++"
	cc -O2 -std=gnu17 -D_GNU_SOURCE -Isrc bench/bw_baseline.c "$BUILD/lib/libftbench.a" $cuda -ljansson -lm -pthread -o "$BASELINE"
	cc -O2 -std=gnu17 -D_GNU_SOURCE -Isrc bench/bw_validate.c "$BUILD/lib/libftbench.a" -ljansson -lm -o "$VALIDATE"
fi
VALIDATE=${VALIDATE:-$(dirname "$BASELINE")/bw_validate}
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
"$VALIDATE" "$SCHEMA" "$out/profile.json"
python3 "$(dirname "$0")/bw_check.py" "$out/profile.json" "$out/baseline_before.json" "$out/baseline_after.json" \
	"$(awk "BEGIN{print $t1 - $t0}")" "$FTBENCH"
