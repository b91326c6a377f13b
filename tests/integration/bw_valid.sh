#!/bin/sh
# Honest numbers: a bw run whose own checks fail exits 3, says why, carries
# "valid": false with the reasons, and does not replace the profile engines read (it goes to the
# store's history only); -o still gets it. A run that passes is valid and stored. Fake
# measurements (FTBENCH_TEST_FAKE_GPUS: fixed figures whose samples spread by 2 %).
set -u
echo "1..9"
B=${BUILD:-build}
FT="$(pwd)/$B/tests/integration/ftbench_hooks" # the test build: fake GPUs and figures (cli.h)
T=$(mktemp -d /tmp/ft-bw-valid-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export XDG_CACHE_HOME="$T/cache" FREETOKEN_BENCHBW_SYSDIR="$T/sys" CUDA_VISIBLE_DEVICES= FTBENCH_TEST_FAKE_GPUS=1
unset FREETOKEN_BENCHBW_PATH FREETOKEN_BENCH_PROGRESS
S="$T/cache/freetoken/benchbw"
G0=GPU-fa4e0000-0000-4000-8000-000000000000
SMALL="--dtype bf16 --cpu-iters 2 --kernel-cpu-iters 3 --kernel-pcie-iters 2 --pcie-iters 2 --no-legacy-copy"
n=0
check() { desc=$1; shift; n=$((n + 1)); if "$@"; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; sed 's/^/#   /' "$T/err" | head -n 20; fi; }
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$FT" bw $SMALL >"$T/out" 2>"$T/err"; rc=$?
check "a quiet run exits 0" [ $rc -eq 0 ]
check "and is valid, with no reasons" [ "$(jget "$S/$G0.json" 'd["valid"], d["invalid_reasons"]')" = "(True, [])" ]
cp "$S/$G0.json" "$T/good.json"
"$FT" bw $SMALL --max-spread 0.001 >"$T/out" 2>"$T/err"; rc=$?
check "a run over --max-spread exits 3" [ $rc -eq 3 ]
check "and says why on stderr" grep -q "spread .* is .* of its median" "$T/err"
check "the profile engines read is unchanged" cmp -s "$S/$G0.json" "$T/good.json"
check "the run is in the history, not valid, with its reasons" \
	[ "$(python3 -c "import json,glob,sys; h=sorted(glob.glob(sys.argv[1]+'/history/$G0/*.json')); d=json.load(open(h[-1])); print(len(h), d['valid'], len(d['invalid_reasons']) > 0)" "$S")" = "2 False True" ]
"$FT" bw $SMALL --max-spread 0.001 -o "$T/p.json" >"$T/out" 2>"$T/err"; rc=$?
check "-o gets the invalid profile, exit 3" [ $rc -eq 3 -a "$(jget "$T/p.json" 'd["valid"]')" = False ]
"$FT" bw $SMALL --no-checks -o "$T/n.json" >"$T/out" 2>"$T/err"; rc=$?
check "--no-checks: no valid field, a warning says so" \
	[ $rc -eq 0 -a "$(jget "$T/n.json" '"valid" in d, any("validity not checked" in w for w in d["warnings"])')" = "(False, True)" ]
"$FT" bw --help >"$T/out" 2>&1
check "--help documents exit 3" grep -q "3 measured but not valid" "$T/out"
