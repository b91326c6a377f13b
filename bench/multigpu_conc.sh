#!/bin/sh
# Isolated and concurrent profiles on a host with two GPUs (the nvidia-h200-x2 kind), in one call of about 4-6 minutes:
#   1. build check: the binaries load (no missing library), are not older than the sources, and
#      see the GPUs; the tree's commit;
#   2. `ftbench bw --gpu all` with the defaults (5 formats): every GPU alone, then one engine per
#      GPU at once (gathers on both GPUs, CPU MoE on disjoint halves of the cores, both
#      overlapped); the full run's wall time (goal: under 60 s);
#   3. bench/multigpu.sh (its checks) with ALL=1: the daemon also runs a bw job with
#      gpu "all" (holds both GPUs and the host; one profile per GPU stored);
#   4. a table: isolated vs concurrent per GPU and format, the verdicts, the wall time, the
#      topology (bench/multigpu_conc.py, which also checks the profiles).
# Everything lands in OUT (default $OUT): summary.txt, bw_all.json, and h21.tgz with the rest.
# usage: [BUILD=build] [LIBDIR=dir with libraries the device lacks; default .xfer/lib if there]
#        [BW_ALL_ARGS=...] bench/multigpu_conc.sh [OUT]
# Bounded: bw --gpu all 200 s, multigpu.sh 300 s (typically about 70 + 80 s).
set -u
out=${1:-${OUT:?usage: bench/multigpu_conc.sh OUTDIR (or set OUT)}}
B=${BUILD:-build}
F=$B/bin/ftbench
here=$(dirname "$0")
[ -z "${LIBDIR:-}" ] && [ -d "$here/../.xfer/lib" ] && LIBDIR=$(cd "$here/../.xfer/lib" && pwd)
[ -n "${LIBDIR:-}" ] && export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
w="$out/work"
mkdir -p "$w"
S="$out/summary.txt"
: > "$S"
say() { echo "$*" | tee -a "$S"; }
t_all=$(date +%s)

say "== 1. build check $(date -u +%T)"
say "tree: $(git -C "$here/.." log -1 --format='%h %s' 2>/dev/null || echo '(no git)')"
miss=$(ldd "$F" "$B/bin/ftbenchd" 2>&1 | grep "not found" | sort -u)
[ -z "$miss" ] && say "ok   binaries load: $F $B/bin/ftbenchd" || say "BAD  missing libraries: $miss (set LIBDIR)"
stale=$(find "$here/../src" "$here/../daemon" "$here/../kernels" -newer "$F" \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) 2>/dev/null | head -5)
[ -z "$stale" ] && say "ok   $F is newer than every source" || say "BAD  sources newer than $F (stale build): $stale"
"$F" gpus > "$w/gpus.txt" 2>&1
say "gpus: $(grep -c 'GPU-' "$w/gpus.txt") listed by ftbench gpus; nvidia-smi: $(nvidia-smi -L 2>/dev/null | wc -l)"
nvidia-smi topo -m > "$w/topo.txt" 2>&1
"$F" cpu > "$w/cpu.txt" 2>&1
cat "$w/gpus.txt" "$w/cpu.txt" >> "$S"

say "== 2. ftbench bw --gpu all $(date -u +%T)"
export XDG_CACHE_HOME="$w/cache"
unset FREETOKEN_BENCHBW_PATH
t=$(date +%s)
timeout 200 "$F" bw --gpu all -o "$out/bw_all.json" ${BW_ALL_ARGS:-} > "$w/bw_all.txt" 2> "$w/bw_all.err"
rc=$?
say "bw --gpu all rc=$rc, $(( $(date +%s) - t )) s wall (the run's own figure is in the table)"
[ $rc -eq 0 ] || tail -20 "$w/bw_all.err" | tee -a "$S"
for u in $(python3 -c 'import json,sys; [print(p["gpu"]["uuid"]) for p in json.load(open(sys.argv[1]))["profiles"]]' "$out/bw_all.json" 2>/dev/null); do
	for d in isolated concurrent; do
		for f in bf16 nvfp4 mxfp4 ds_fp4; do
			echo "$u $d $f $("$F" profile recommend "$f" --gpu "$u" --deployment "$d" 2>/dev/null) $("$F" profile fetch-fraction "$f" --gpu "$u" --deployment "$d" 2>/dev/null)"
		done
	done
done > "$w/reader.txt"
cp -r "$w/cache" "$w/bw_all_store" 2>/dev/null

say "== 3. bench/multigpu.sh (ALL=1) $(date -u +%T)"
t=$(date +%s)
BUILD=$B ALL=1 timeout 300 sh "$here/multigpu.sh" "$w/mg" > "$w/multigpu.txt" 2>&1
rc=$?
say "multigpu.sh rc=$rc, $(( $(date +%s) - t )) s"
grep -E "^(ok|BAD)|rc=|^E:|^BAD|not succeeded" "$w/multigpu.txt" | tee -a "$S"

say "== 4. table $(date -u +%T)"
python3 "$here/multigpu_conc.py" "$out/bw_all.json" "$w/reader.txt" 2>&1 | tee -a "$S"
say "== done $(date -u +%T), $(( $(date +%s) - t_all )) s in all"
tar -C "$out" -czf "$out/h21.tgz" work 2>/dev/null && rm -rf "$w"
