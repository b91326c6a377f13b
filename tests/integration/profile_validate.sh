#!/bin/sh
# ftbench profile validate --from FILE: a seed engine harness run (the bf16 points of a
# real one, tests/fixtures/engine/harness_bf16.json) or a decode --compare summary becomes the
# profile's validation.<fmt>; profile show says whether it agrees and whether it is current or
# stale; the result passes the schema; bad input leaves the profile untouched. Fake measurements
# (FTBENCH_TEST_FAKE_GPUS) make the profile.
set -u
echo "1..16"
B=${BUILD:-build}
FT="$(pwd)/$B/tests/integration/ftbench_hooks" # the test build: fake GPUs and figures (cli.h)
H="$(pwd)/tests/fixtures/engine/harness_bf16.json"
T=$(mktemp -d /tmp/ft-validate-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export XDG_CACHE_HOME="$T/cache" FREETOKEN_BENCHBW_SYSDIR="$T/sys" CUDA_VISIBLE_DEVICES= FTBENCH_TEST_FAKE_GPUS=1
unset FREETOKEN_BENCH_PROGRESS
n=0
check() { desc=$1; shift; n=$((n + 1)); if "$@"; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; sed 's/^/#   /' "$T/err" "$T/out" | head -n 20; fi; }
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$FT" bw --dtype bf16,nvfp4 --cpu-iters 2 --kernel-cpu-iters 3 --kernel-pcie-iters 2 --pcie-iters 2 --no-legacy-copy \
	-o "$T/p.json" >"$T/out" 2>"$T/err"
export FREETOKEN_BENCHBW_PATH="$T/p.json"
epoch=$(jget "$T/p.json" 'd["epoch"]')
later=$(python3 -c "print($epoch + 60)")
verdict=$(jget "$T/p.json" 'd["dtypes"]["bf16"]')

"$FT" profile show >"$T/out" 2>"$T/err"
check "show: no validation yet" grep -q "^validated no" "$T/out"
"$FT" profile validate --from "$H" --measured-epoch "$later" >"$T/out" 2>"$T/err"; rc=$?
check "validate: exit 0, the uniform point by default, a tie, agrees" \
	sh -c "[ $rc -eq 0 ] && grep -q 'bf16: freetoken 0.1.2 (module, uniform): winner tie, best fetch fraction 0.500; the profile says $verdict: agrees' '$T/out'"
check "the record: engine, arms, figures, epochs" \
	[ "$(jget "$T/p.json" '(lambda v: (v["source"], v["engine"]["name"], len(v["engine"]["arms"]), len(v["figures"]), v["measured_epoch"] == '"$later"', v["profile_epoch"] == d["epoch"]))(d["validation"]["bf16"])')" = "('engine', 'freetoken', 4, 4, True, True)" ]
check "nvfp4 (not in the run) has none" [ "$(jget "$T/p.json" '"nvfp4" in d["validation"]')" = False ]
check "the profile with its validation passes the schema" \
	sh -c "python3 tests/schema_check.py api/schemas/profile.schema.json '$T/p.json' >'$T/err' 2>&1"
"$FT" profile show >"$T/out" 2>"$T/err"
check "show: agrees, current" grep -q "^validated bf16 by engine freetoken 0.1.2: winner tie, best fetch fraction 0.500; agrees with the profile's verdict ($verdict), current" "$T/out"

"$FT" profile validate --from "$H" --workload reuse:0.85 --cache-fraction 0.4 --measured-epoch "$later" >"$T/out" 2>"$T/err"
check "a chosen point: offload wins" grep -q "(module, reuse:0.85): winner offload, best fetch fraction 0.750" "$T/out"
# the harness file's own epoch is the run's (the device call, before this profile): stale
"$FT" profile validate --from "$H" >"$T/out" 2>"$T/err"
"$FT" profile show >"$T/out" 2>"$T/err"
check "a run older than the profile: STALE" grep -q "^validated bf16 .*STALE (stale_profile" "$T/out"

printf '%s\n' '{"kind":"decode","rows":1}' \
	'{"kind":"decode_compare","epoch":'"$later"',"server_kind":"freetoken","arms":[{"arm":"moe-backend=offload","settings":{"moe-backend":"offload"},"decode_tok_s":{"median":30,"min":29,"max":31}},{"arm":"moe-backend=hybrid","settings":{"moe-backend":"hybrid"},"decode_tok_s":{"median":41,"min":40,"max":42}}],"winner":"moe-backend=hybrid","decision":"winner"}' >"$T/c.jsonl"
"$FT" profile validate --from "$T/c.jsonl" >"$T/out" 2>"$T/err"; rc=$?
check "a decode --compare summary without --dtype: usage error" [ $rc -eq 2 ]
"$FT" profile validate --from "$T/c.jsonl" --dtype nvfp4 --engine-version 0.1.2 >"$T/out" 2>"$T/err"; rc=$?
check "decode --compare rows (JSON lines): the summary is read, hybrid wins" \
	sh -c "[ $rc -eq 0 ] && [ \"\$(python3 -c \"import json; v=json.load(open('$T/p.json'))['validation']['nvfp4']; print(v['winner'], v['level'], v['unit'], v['engine']['version'])\")\" = 'hybrid server tok_s 0.1.2' ]"

cp "$T/p.json" "$T/keep.json"
echo '{"format":"something else"}' >"$T/bad.json"
"$FT" profile validate --from "$T/bad.json" --dtype bf16 >"$T/out" 2>"$T/err"; rc=$?
check "an unknown document: exit 1, says why, profile untouched" \
	sh -c "[ $rc -eq 1 ] && grep -q 'neither a seed engine harness run' '$T/err' && cmp -s '$T/p.json' '$T/keep.json'"
"$FT" profile validate --from "$T/none.json" >"$T/out" 2>"$T/err"; rc=$?
check "a missing file: exit 1, named" sh -c "[ $rc -eq 1 ] && grep -q 'none.json' '$T/err' && cmp -s '$T/p.json' '$T/keep.json'"
"$FT" profile validate >"$T/out" 2>"$T/err"; rc=$?
check "no --from: usage error" [ $rc -eq 2 ]

# a profile with replay points judges a run by its answer for the run's workload: the replay
# point nearest the run's cache fraction and measured reuse (ftprof_recommend_workload)
export XDG_CACHE_HOME="$T/c2"
unset FREETOKEN_BENCHBW_PATH
"$FT" bw --dtype bf16 --cpu-iters 2 --kernel-cpu-iters 3 --kernel-pcie-iters 2 --pcie-iters 2 --no-legacy-copy \
	>"$T/out" 2>"$T/err"
"$FT" replay --format bf16 --layers 4 --steps 8 --warmup 16 --fractions 0,0.5,1 --no-caps \
	--workloads uniform,reuse:0.85 --cache 0.4 >"$T/out" 2>"$T/err"
S2=$("$FT" profile path)
for w in uniform:0.00 reuse:0.85:0.85; do
	want=$(jget "$S2" '{"hybrid": "hybrid"}.get(next(p for p in d["replay"]["bf16"]["points"] if p["reuse"] == '"${w##*:}"')["winner"], "offload")')
	"$FT" profile validate --from "$H" --workload "${w%:*}" --measured-epoch 4000000000 >"$T/out" 2>"$T/err"; rc=$?
	got=$(jget "$S2" '(lambda v: (v["verdict"], v["verdict_point"]["reuse"], v["reuse"] > 0))(d["validation"]["bf16"])')
	check "a ${w%:*} run is judged by the replay point at reuse ${w##*:} ($want)" sh -c \
		"[ $rc -eq 0 ] && grep -q 'the profile says $want at cache 0.40, reuse ${w##*:} (its replay point nearest the run' '$T/out' && \
		[ \"$got\" = \"('$want', $(python3 -c "print(float('${w##*:}'))"), True)\" ]"
done
check "the profile with a workload-judged validation passes the schema" \
	sh -c "python3 tests/schema_check.py api/schemas/profile.schema.json '$S2' >'$T/err' 2>&1"
