#!/bin/sh
# The seed system's command lines, as its users type them (seed/benchmark-guide.zh.txt and
# reference/FREETOKEN.md §4, §5, §7), run through ftbench with fake measurements
# (FTBENCH_TEST_FAKE_GPUS: fixed figures, fake GPUs) and a tiny synthetic checkpoint: none may
# fail on an option, and the seed's spellings mean what they mean there. Also: the legacy single
# file on one-GPU and two-GPU hosts, FREETOKEN_BENCH_PROGRESS lines, "saved: PATH", --help.
# Prints "ok ..." / "not ok ..." lines. (The decode lines belong to the decode issue.)
set -u
B=${BUILD:-build}
FT="$(pwd)/$B/tests/integration/ftbench_hooks" # the test build: fake GPUs and figures (cli.h)
T=$(mktemp -d /tmp/ft-seed-cli-XXXXXX)
M="$T/seedmodel$$"          # load-weights' default FTW dir is /var/tmp/ftw_<model name>
trap 'rm -rf "$T" "/var/tmp/ftw_seedmodel$$"' EXIT INT TERM
export XDG_CACHE_HOME="$T/cache" FREETOKEN_BENCHBW_SYSDIR="$T/sys" CUDA_VISIBLE_DEVICES= FTBENCH_TEST_FAKE_GPUS=1
unset FREETOKEN_BENCHBW_PATH FREETOKEN_BENCH_PROGRESS
S="$T/cache/freetoken/benchbw"
L="$T/cache/freetoken/benchbw.json"
G0=GPU-fa4e0000-0000-4000-8000-000000000000
G1=GPU-fa4e0000-0000-4000-8000-000000000001
SMALL="--cpu-iters 2 --kernel-cpu-iters 3 --kernel-pcie-iters 2 --pcie-iters 2"
. "$(dirname "$0")/../lib/tap.sh"
TAP_SHOW="$T/out $T/err"

# seed LINE: run "ftbench ARGS" for the seed line; exit 0 and no option complaint
seed() {
	desc=$1; shift
	"$FT" "$@" >"$T/out" 2>"$T/err"; rc=$?
	if [ $rc -eq 0 ] && ! grep -Eiq "unrecognized option|unknown option|invalid option|unexpected argument|option .* requires" "$T/err"; then
		ok "$desc: ftbench $*"
	else
		nok "$desc: ftbench $* (exit $rc)"
	fi
}
# check DESC COMMAND...: a shell condition
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$FT" make-checkpoint --arch qwen3-moe --out "$M" --layers 2 --experts 4 --hidden 256 --inter 128 \
	--shard-mib 1 >"$T/out" 2>"$T/err" && ok "make-checkpoint" || nok "make-checkpoint"

# ---- §5 / guide 5.3: ft bench bw
seed "guide 5.3" bw $SMALL
check "bw: the summary's last line is saved: PATH" sh -c "tail -n 1 '$T/out' | grep -qx 'saved: $S/$G0.json'"
seed "guide 5.3" bw --dtype nvfp4,bf16 $SMALL
seed "guide 5.3" bw --model qwen3.6-moe $SMALL
seed "guide 5.3" bw --dtype all --model all $SMALL
seed "guide 5.3" bw --gpu GPU-fa4e $SMALL
seed "§5 --device (released)" bw --device 0 --dtype bf16 $SMALL
seed "§5 -o" bw --dtype bf16 -o "$T/o1.json" $SMALL
seed "§5 --out" bw --dtype bf16 --out "$T/o2.json" $SMALL
check "--out writes there and says so" sh -c "[ -s '$T/o2.json' ] && tail -n 1 '$T/out' | grep -qx 'saved: $T/o2.json'"
seed "§5 --cpu-threads 0 (all cores)" bw --dtype bf16 --cpu-threads 0 --out "$T/o3.json" $SMALL
cores=$("$FT" cpu --json | python3 -c "import json,sys; print(json.load(sys.stdin)['physical_cores'])")
check "--cpu-threads 0 uses every physical core" [ "$(jget "$T/o3.json" "d['cpu']['threads_used']")" = "$cores" ]
seed "§5 every bw flag" bw --dtype all --model gpt-oss-20b,dsv4 --formats mxfp4 --isa auto --threshold 2.0 \
	--gpu 0 --cpu-threads 0 --cpu-iters 2 --pcie-mib 16 --pcie-iters 2 --kernel-cpu-iters 3 --kernel-pcie-iters 2 \
	-o "$T/o4.json"
seed "§5 space-separated lists" bw --dtype bf16 nvfp4 --model qwen3-30b --isa all --out "$T/o5.json" $SMALL
check "bw --dtype bf16 nvfp4: both measured" [ "$(jget "$T/o5.json" "','.join(d['dtype_kernels'])")" = "bf16,nvfp4" ]
"$FT" bw --dtype bf16 --device x >"$T/out" 2>"$T/err"; rc=$?
check "bad --device: exit 2 naming the flag" sh -c "[ $rc -eq 2 ] && grep -q -- '--device' '$T/err'"
"$FT" bw --dtype bf16 --device 0 --gpu 1 >"$T/out" 2>"$T/err"; rc=$?
check "--device 0 with --gpu 1: exit 2" [ $rc -eq 2 ]

# ---- FREETOKEN_BENCH_PROGRESS=1: the seed's progress lines on stdout
FREETOKEN_BENCH_PROGRESS=1 "$FT" bw --dtype bf16,nvfp4 --model qwen3-30b --out "$T/p.json" $SMALL >"$T/out" 2>"$T/err"
check "progress: FTBENCH lines with the seed's labels, in order" sh -c "grep '^FTBENCH ' '$T/out' | tr '\n' '|' |
	grep -qx 'FTBENCH 0 4 ceilings|FTBENCH 1 4 dtype:bf16|FTBENCH 2 4 dtype:nvfp4|FTBENCH 3 4 qwen3-30b:bf16|FTBENCH 4 4 done|'"
check "progress: the last line is saved: PATH" sh -c "tail -n 1 '$T/out' | grep -qx 'saved: $T/p.json'"
"$FT" bw --dtype bf16 --out "$T/p.json" $SMALL >"$T/out" 2>"$T/err"
check "progress lines only when asked" sh -c "! grep -q '^FTBENCH' '$T/out'"
FREETOKEN_BENCH_PROGRESS=1 "$FT" load-weights --model "$M" --modes parallel --workers 2 --chunk-mib 1 >"$T/out" 2>"$T/err"
check "progress: load-weights prints FTBENCH lines too" sh -c "grep -q '^FTBENCH 0 .* baseline' '$T/out' && grep -q '^FTBENCH .* done' '$T/out' && ! grep -q FTBENCH '$T/err'"

# ---- the legacy single file: one GPU yes, two GPUs no
rm -rf "$T/cache"
"$FT" bw --dtype bf16 $SMALL >"$T/out" 2>"$T/err"
check "one GPU: the legacy copy appears" [ -f "$L" ]
check "one GPU: the legacy copy has the same bytes" cmp -s "$L" "$S/$G0.json"
check "one GPU: the summary names it" grep -qx "legacy copy: $L" "$T/out"
rm -rf "$T/cache"
"$FT" bw --dtype bf16 --no-legacy-copy $SMALL >"$T/out" 2>"$T/err"
check "--no-legacy-copy: none" sh -c "[ ! -e '$L' ] && [ -f '$S/$G0.json' ]"
rm -rf "$T/cache"
FTBENCH_TEST_FAKE_GPUS=2 "$FT" bw --dtype bf16 --gpu 1 $SMALL >"$T/out" 2>"$T/err"
check "two GPUs: no legacy copy" sh -c "[ ! -e '$L' ] && [ -f '$S/$G1.json' ]"
check "two GPUs: says why" grep -q "this host has 2 GPUs: the legacy single file $L is not written" "$T/err"
# the reader: FREETOKEN_BENCHBW_PATH, then the per-GPU file, then the legacy file
rm -rf "$T/cache"
"$FT" bw --dtype bf16 $SMALL >/dev/null 2>&1
check "reader: the per-GPU file first" sh -c "[ \"\$('$FT' profile path)\" = '$S/$G0.json' ]"
rm "$S/$G0.json"
check "reader: then the legacy file" sh -c "[ \"\$('$FT' profile path)\" = '$L' ] && '$FT' profile recommend bf16 >/dev/null 2>&1"
check "reader: FREETOKEN_BENCHBW_PATH before both" sh -c "[ \"\$(FREETOKEN_BENCHBW_PATH='$T/o5.json' '$FT' profile path)\" = '$T/o5.json' ]"

# ---- §4 / guide 4: bench_offload_cache_copy.py (fake: prints what it would run)
seed "guide 4.1" cache-copy
check "cache-copy defaults: batch 1 4 16 32, miss 0 .25 .5 1, repeat 25" \
	[ "$(jget "$T/out" "[d['batch_sizes'], d['miss_rates'], d['repeat']]")" = "[[1, 4, 16, 32], [0.0, 0.25, 0.5, 1.0], 25]" ]
seed "§4 space-separated lists" cache-copy --models qwen3-30B gpt-oss-20b --cache-slots 128 1843 \
	--batch-sizes 1 4 16 32 --miss-rates 0 .25 .5 1 --repeat 5 --device 0
check "§4 lists parsed as the seed's argparse does" [ "$(jget "$T/out" "[d['models'], d['cache_slots'], d['batch_sizes'], d['miss_rates'], d['repeat'], d['gpu']]")" = \
	"[['qwen3-30B', 'gpt-oss-20b'], [128, 1843], [1, 4, 16, 32], [0.0, 0.25, 0.5, 1.0], 5, '$G0']" ]
seed "issue: --batch-sizes 1 4 16 32 --miss-rates 0 0.25" cache-copy --batch-sizes 1 4 16 32 --miss-rates 0 0.25
check "comma lists still work" sh -c "'$FT' cache-copy --batch-sizes 1,16 --miss-rates 0,0.5 | grep -q '\"batch_sizes\"'"
FTBENCH_TEST_FAKE_GPUS=2 "$FT" cache-copy --device 1 >"$T/out" 2>"$T/err"
check "cache-copy --device 1 is GPU 1" [ "$(jget "$T/out" "d['gpu']")" = "$G1" ]
"$FT" cache-copy --device 3 >"$T/out" 2>"$T/err"; rc=$?
check "cache-copy --device 3 on a one-GPU host: exit 2 naming --device" sh -c "[ $rc -eq 2 ] && grep -q -- '--device: no GPU with index 3' '$T/err'"
"$FT" cache-copy --batch-sizes 1 x >"$T/out" 2>"$T/err"; rc=$?
check "bad list item: exit 2 naming the flag" sh -c "[ $rc -eq 2 ] && grep -q -- '--batch-sizes' '$T/err'"

# ---- §7 / guide 3: bench_load_weight_generic.py
seed "guide 3.4" load-weights --model "$M"
check "the default FTW dir /var/tmp/ftw_<model> is removed" [ ! -e "/var/tmp/ftw_seedmodel$$" ]
seed "guide 3.4 subset" load-weights --model "$M" --modes parallel,ftw
seed "guide 3.4 --keep-ftw" load-weights --model "$M" --keep-ftw
check "--keep-ftw keeps /var/tmp/ftw_<model>" [ -f "/var/tmp/ftw_seedmodel$$/freetoken_weight.json" ]
rm -rf "/var/tmp/ftw_seedmodel$$"
seed "§7 every flag" load-weights --model "$M" --modes baseline,parallel,ftw --workers 4 --chunk-mib 1 \
	--shard-gib 0.5 --no-drop-cache --keep-ftw --ftw-dir "$T/ftw" --expert-load parallel
check "--shard-gib 0.5 is 512 MiB" [ "$(jget "$T/ftw/freetoken_weight.json" "d['shard_limit']")" = 536870912 ]
seed "§7 --modes with spaces" load-weights --model "$M" --modes parallel ftw --ftw-dir "$T/ftw2" --expert-load serial
seed "§7 an unknown --modes entry is skipped" load-weights --model "$M" --modes parallel,bogus
check "the unknown mode is named in a note" grep -q "unknown mode 'bogus' skipped" "$T/err"
"$FT" load-weights --model "$M" --shard-gib x >"$T/out" 2>"$T/err"; rc=$?
check "bad --shard-gib: exit 2 naming the flag" sh -c "[ $rc -eq 2 ] && grep -q -- '--shard-gib' '$T/err'"
seed "§7 ftw --shard-gib 0.5" ftw convert "$M" "$T/ftw3" --shard-gib 0.5

# ---- --help shows the seed's names beside ours
"$FT" bw --help >"$T/out" 2>&1
check "bw --help names --device and --out" sh -c "grep -q -- '--device N' '$T/out' && grep -q -- '--out FILE' '$T/out' && grep -q 'cpu-threads N .*0' '$T/out'"
"$FT" cache-copy --help >"$T/out" 2>&1
check "cache-copy --help names --device and space lists" sh -c "grep -q -- '--device N' '$T/out' && grep -q -- '--batch-sizes 1 4 16 32' '$T/out'"
"$FT" load-weights --help >"$T/out" 2>&1
check "load-weights --help: --shard-gib takes a number" grep -q -- "--shard-gib X" "$T/out"
echo "1..$n"
