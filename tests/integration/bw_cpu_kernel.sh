#!/bin/sh
# bw --cpu-kernel CMD: the CPU kernel probe protocol (docs/CPU_KERNEL_PROBE.md) with
# the fixture probe (tests/fixtures/cpu_probe.c) and fake measurements (FTBENCH_TEST_FAKE_GPUS):
# the engine's figure goes into the seed-read fields, ours stay beside; the request carries the
# workload; every probe error (bad JSON, missing field, another format, non-zero exit, no result
# line, timeout, a program that does not exist) fails the run and leaves the profile untouched.
set -u
echo "1..22"
B=${BUILD:-build}
FT="$(pwd)/$B/tests/integration/ftbench_hooks" # the test build: fake GPUs and figures (cli.h)
FIX="$(pwd)/$B/tests/fixtures/cpu_probe"
T=$(mktemp -d /tmp/ft-bw-probe-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export XDG_CACHE_HOME="$T/cache" FREETOKEN_BENCHBW_SYSDIR="$T/sys" CUDA_VISIBLE_DEVICES= FTBENCH_TEST_FAKE_GPUS=1
unset FREETOKEN_BENCHBW_PATH FREETOKEN_BENCH_PROGRESS
SMALL="--dtype bf16,nvfp4 --cpu-iters 2 --kernel-cpu-iters 3 --kernel-pcie-iters 2 --pcie-iters 2 --no-legacy-copy"
n=0
check() { desc=$1; shift; n=$((n + 1)); if "$@"; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; sed 's/^/#   /' "$T/err" | head -n 20; fi; }
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$FT" bw $SMALL -o "$T/ours.json" >"$T/out" 2>"$T/err"
check "without --cpu-kernel every CPU figure names our kernel" \
	[ "$(jget "$T/ours.json" '[e["cpu_moe_kernel"]["source"] + "/" + e["cpu_moe_kernel"]["isa"] for e in d["dtype_kernels"].values()]')" = "['ftbench/scalar', 'ftbench/scalar']" ]
ours=$(jget "$T/ours.json" 'd["dtype_kernels"]["bf16"]["cpu_moe_gbs"]')
ours_rec=$(jget "$T/ours.json" 'd["dtype_kernels"]["bf16"]["recommended"]')

"$FT" bw $SMALL -o "$T/p.json" --cpu-kernel "$FIX --mode ok --gbs 80 --request-out $T/req" >"$T/out" 2>"$T/err"; rc=$?
check "a good probe: exit 0" [ $rc -eq 0 ]
check "the seed-read cpu_moe_gbs is the engine's median, ours kept beside" \
	[ "$(jget "$T/p.json" 'round(d["dtype_kernels"]["bf16"]["cpu_moe_gbs"], 2), d["dtype_kernels"]["bf16"]["cpu_moe_gbs_ftbench"]')" = "(79.9, $ours)" ]
check "the kernel is named: engine, name, version, isa, threads" \
	[ "$(jget "$T/p.json" '[d["dtype_kernels"]["bf16"]["cpu_moe_kernel"][k] for k in ("source","name","version","isa","threads")]')" = "['engine', 'fixture-engine', '1.2.3', 'fixture-isa', 3]" ]
check "the verdict follows the engine's figure (80 > 2 x 25: hybrid), ours kept" \
	[ "$(jget "$T/p.json" 'd["dtype_kernels"]["bf16"]["recommended"], d["dtypes"]["bf16"], d["dtype_kernels"]["bf16"]["recommended_ftbench"]')" = "('hybrid', 'hybrid', '$ours_rec')" ]
check "the overlap pair: the engine's figure x our contention (0.8), our gather" \
	[ "$(jget "$T/p.json" '(lambda e: (round(e["cpu_moe_overlap_gbs"] / e["cpu_moe_gbs"], 3), round(e["pcie_gather_overlap_gbs"], 1)))(d["dtype_kernels"]["bf16"])')" = "(0.8, 20.0)" ]
check "the reader's fetch fraction comes from the engine's pair; ours is kept" \
	[ "$(jget "$T/p.json" '(lambda e: e["pcie_gather_overlap_gbs"] / (e["pcie_gather_overlap_gbs"] + e["cpu_moe_overlap_gbs"]) < e["fetch_fraction_ftbench"] - 0.05)(d["dtype_kernels"]["bf16"])')" = "True" ]
check "cpu_kernel records the command and the engine per format" \
	[ "$(jget "$T/p.json" 'd["cpu_kernel"]["command"][0] == "'"$FIX"'", [m["format"] + ":" + m["name"] for m in d["cpu_kernel"]["measured"]]')" = "(True, ['bf16:fixture-engine', 'nvfp4:fixture-engine'])" ]
check "the request carries the workload (bf16: H 2048, I 768, E 128, top-8, steps, threads 0)" \
	[ "$(python3 -c "import json; r=json.loads(open('$T/req').readline()); print(r['protocol'], r['version'], r['format'], r['hidden'], r['inter'], r['experts'], r['top_k'], r['steps'], r['threads'], r['expert_bytes'] == 3*2048*768*2)")" = "ftbench-cpu-kernel 1 bf16 2048 768 128 8 3 0 True" ]
check "the profile is valid (the checks ran on the engine's figure)" [ "$(jget "$T/p.json" 'd["valid"]')" = True ]
check "the profile with the engine's and our figures passes the schema" \
	sh -c "python3 tests/schema_check.py api/schemas/profile.schema.json '$T/p.json' '$T/ours.json' >'$T/err' 2>&1"

"$FT" bw $SMALL -o "$T/u.json" --cpu-kernel "$FIX --mode ok --gbs 80 --only nvfp4" >"$T/out" 2>"$T/err"; rc=$?
check "a format the engine has no CPU path for keeps ours, with a note" \
	[ $rc -eq 0 -a "$(jget "$T/u.json" 'd["dtype_kernels"]["bf16"]["cpu_moe_kernel"]["source"], "fixture-engine" in d["dtype_kernels"]["bf16"]["cpu_moe_kernel_note"], d["dtype_kernels"]["nvfp4"]["cpu_moe_kernel"]["source"]')" = "('ftbench', True, 'engine')" ]

"$FT" bw $SMALL -o "$T/q.json" --cpu-kernel "'$FIX' --mode \"ok\" --gbs '80'" >"$T/out" 2>"$T/err"; rc=$?
check "quoted words in CMD (no shell)" [ $rc -eq 0 -a "$(jget "$T/q.json" 'round(d["dtype_kernels"]["bf16"]["cpu_moe_gbs"])')" = 80 ]
"$FT" bw $SMALL -o "$T/q.json" --cpu-kernel "$FIX --mode 'ok" >"$T/out" 2>"$T/err"; rc=$?
check "an unbalanced quote is a usage error" [ $rc -eq 2 ] && grep -q "unbalanced" "$T/err"

# every error: exit 1, a message naming what was wrong, the profile untouched
cp "$T/p.json" "$T/keep.json"
bad() { # desc, expected message, cmd [extra args]
	desc=$1 want=$2 cmd=$3; shift 3
	"$FT" bw $SMALL -o "$T/p.json" --cpu-kernel "$cmd" "$@" >"$T/out" 2>"$T/err"; rc=$?
	check "$desc: exit 1, says '$want', profile untouched" \
		sh -c "[ $rc -eq 1 ] && grep -q -- \"$want\" '$T/err' && grep -q 'no profile written' '$T/err' && cmp -s '$T/p.json' '$T/keep.json'"
}
bad "bad JSON" "is not JSON" "$FIX --mode badjson"
bad "a missing field" 'lacks .gbs.' "$FIX --mode missing"
bad "another format" "answered for format" "$FIX --mode wrongformat"
bad "a non-zero exit" "exited with status 3; its stderr ends: probe: out of cheese" "$FIX --mode exit"
bad "no result line" "printed no result line" "$FIX --mode noline"
T0=$(date +%s)
bad "a timeout" "gave no result within 1 s" "$FIX --mode hang" --cpu-kernel-timeout 1
check "the hanging probe was stopped at once" [ $(( $(date +%s) - T0 )) -lt 15 ]
bad "a program that does not exist" "cannot run" "$T/no-such-probe"
