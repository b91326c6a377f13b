#!/bin/sh
# `ftbench replay` without a GPU: the one line a CPU-only host gets, and the whole command on
# the cost-model fake (the test build ftbench_hooks, FTBENCH_TEST_FAKE_GPUS=1): tables, csv, json
# valid against the schema once stored in the GPU's profile, the verdict fields following the
# replay, --save-trace and --trace giving the same routing back, trace errors. Prints TAP.
set -u
B=${BUILD:-build}
FT="$(pwd)/$B/bin/ftbench"
FTH="$(pwd)/$B/tests/integration/ftbench_hooks" # the test build: fake GPUs and figures (cli.h)
SC="$(pwd)/tests/schema_check.py"
SCHEMA="$(pwd)/api/schemas/profile.schema.json"
FIX="$(pwd)/tests/fixtures/profiles"
T=$(mktemp -d /tmp/ft-replay-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export XDG_CACHE_HOME="$T/cache" FREETOKEN_BENCHBW_SYSDIR="$T/sys" CUDA_VISIBLE_DEVICES=
unset FREETOKEN_BENCHBW_PATH FREETOKEN_BENCH_PROGRESS FTBENCH_TEST_FAKE_GPUS
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$T/out" "$T/err" 2>/dev/null | head -n 30; }
check() { desc=$1; shift; if "$@" >/dev/null 2>&1; then ok "$desc"; else nok "$desc"; fi; }
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# a CPU-only host: one line, exit 2, nothing written
if "$FT" gpus 2>&1 | grep -q "^no GPUs"; then
	"$FT" replay >"$T/out" 2>"$T/err"; rc=$?
	check "CPU-only: exit 2" [ "$rc" -eq 2 ]
	check "CPU-only: one line on stderr" [ "$(wc -l <"$T/err")" -eq 1 ]
	check "CPU-only: it says replay needs a GPU" grep -q "replay needs a GPU" "$T/err"
	check "CPU-only: nothing on stdout" [ ! -s "$T/out" ]
else
	n=$((n + 1)); echo "ok $n - CPU-only message # SKIP this host has a GPU"
fi

export FTBENCH_TEST_FAKE_GPUS=1
U=GPU-fa4e0000-0000-4000-8000-000000000000
S="$T/cache/freetoken/benchbw"
mkdir -p "$S"
python3 - "$FIX/full.json" "$S/$U.json" "$U" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["gpu"]["uuid"] = sys.argv[3]; d["gpu"]["name"] = "Fake GPU"
json.dump(d, open(sys.argv[2], "w"))
PY
SMALL="--format bf16 --layers 4 --steps 8 --warmup 16 --fractions 0,0.5,1 --no-caps"
"$FTH" replay $SMALL --workloads uniform,reuse:0.95 --cache 0.4 --save-trace "$T/tr.json" >"$T/out" 2>"$T/err"; rc=$?
check "fake: exit 0" [ "$rc" -eq 0 ]
check "fake: table names the winner" grep -q "winner hybrid" "$T/out"
check "fake: the map line" grep -q "cache 0.4 .*uniform: hybrid" "$T/out"
check "fake: the profile's f is a mode" grep -q "hybrid_profile" "$T/out"
check "fake: stored in the profile" grep -q "replay stored in $S/$U.json" "$T/err"
check "fake: traces saved per workload" test -s "$T/tr-uniform.json" -a -s "$T/tr-reuse-0.95.json"
check "stored profile is schema-valid" python3 "$SC" "$SCHEMA" "$S/$U.json"
check "stored: replay.bf16 has two points" [ "$(jget "$S/$U.json" 'len(d["replay"]["bf16"]["points"])')" = 2 ]
check "stored: recommended_bandwidth keeps the rule" [ "$(jget "$S/$U.json" 'd["dtype_kernels"]["bf16"]["recommended_bandwidth"]')" = hybrid ]
check "stored: recommended_by says where the verdict came from" [ "$(jget "$S/$U.json" 'd["dtype_kernels"]["bf16"]["recommended_by"] in ("replay","bandwidth")')" = True ]
"$FTH" profile recommend bf16 --cache-fraction 0.4 --reuse 0 --gpu "$U" >"$T/out" 2>"$T/err"
check "profile recommend by workload reads the stored map" grep -q "^hybrid fetch_fraction=" "$T/out"

# the trace back: same routing, same figures (the fake is deterministic)
"$FTH" replay $SMALL --workloads uniform --cache 0.4 --no-store --json >"$T/a.json" 2>"$T/err"
"$FTH" replay $SMALL --trace "$T/tr-uniform.json" --cache 0.4 --no-store --json >"$T/b.json" 2>"$T/err"; rc=$?
check "--trace: exit 0" [ "$rc" -eq 0 ]
check "--trace: the same step times as the generated routing" [ "$(jget "$T/a.json" 'd["replay"]["bf16"]["points"][0]["modes"]')" = "$(jget "$T/b.json" 'd["replay"]["bf16"]["points"][0]["modes"]')" ]
check "--json: no store" [ "$(jget "$T/a.json" 'd.get("stored", "absent")')" = absent ]
"$FTH" replay $SMALL --workloads uniform --cache 0.4 --no-store --output-format csv >"$T/out" 2>"$T/err"
check "csv: header then one row per mode (offload, profile, 3 fractions)" [ "$(wc -l <"$T/out")" -eq 6 ]
check "csv: header names the columns" grep -q "^format,cache_fraction,workload,reuse,skew,mode," "$T/out"

# bw's replay: none by default on the fake GPUs, short when asked; the profile carries the block
"$FTH" bw --dtype bf16,nvfp4 --no-checks --repeat 3 --overlap-seconds 0 -o "$T/bw0.json" >"$T/out" 2>"$T/err"
check "bw on the fake GPUs: no replay unless asked" [ "$(jget "$T/bw0.json" '"replay" in d')" = False ]
FREETOKEN_BENCH_PROGRESS=1 "$FTH" bw --dtype bf16,nvfp4 --no-checks --repeat 3 --overlap-seconds 0 --replay short -o "$T/bw1.json" >"$T/out" 2>"$T/err"; rc=$?
check "bw --replay short: exit 0" [ "$rc" -eq 0 ]
check "bw --replay short: uniform and the default reuse per format, at cache 0.4" [ "$(jget "$T/bw1.json" 'sorted((k, [(round(p["cache_fraction"], 2), p["reuse"]) for p in v["points"]]) for k, v in d["replay"].items())')" = "[('bf16', [(0.4, 0.0), (0.4, 0.6)]), ('nvfp4', [(0.4, 0.0), (0.4, 0.6)])]" ]
check "bw --replay short: schema-valid" python3 "$SC" "$SCHEMA" "$T/bw1.json"
check "bw --replay short: the summary's replay lines" grep -q "^  bf16 .*cache 0.4, reuse 0.6: " "$T/out"
check "bw --replay short: progress lines name the replay" grep -q "^FTBENCH [0-9]* [0-9]* replay:bf16" "$T/out"
check "bw --replay short: the verdict says where it came from" [ "$(jget "$T/bw1.json" 'd["dtype_kernels"]["bf16"]["recommended_by"]')" != "" ]

# --cpu-kernel: the engine's CPU path from the probe's layer steps (tests/fixtures/cpu_probe.c)
PROBE="$(pwd)/$B/tests/fixtures/cpu_probe"
"$FTH" replay $SMALL --workloads uniform --cache 0.4 --no-store --json >"$T/own.json" 2>"$T/err"
"$FTH" replay $SMALL --workloads uniform --cache 0.4 --no-store --json \
	--cpu-kernel "$PROBE --layer-us 100,50,200 --fetch-us 30 --request-out $T/lsreq" >"$T/ck.json" 2>"$T/err"; rc=$?
check "--cpu-kernel: exit 0" [ "$rc" -eq 0 ]
check "--cpu-kernel: the request asks for layer steps of the run's shape" [ "$(python3 -c "import json; r=json.loads(open('$T/lsreq').readline()); print(r['measure'], r['format'], r['layers'], r['batch'], r['routes'], r['fetches'])")" = "layer_step bf16 4 1 [0, 1, 2, 3, 4, 5, 6, 7, 8] [1, 2, 4, 8]" ]
check "--cpu-kernel: cpu_path names the engine and its curves" [ "$(jget "$T/ck.json" '(lambda c: (c["source"], c["name"], c["added_us"][:3], c["fetch_added_us"][:3], c["fetch_added_us"][8]))(d["replay"]["bf16"]["cpu_path"])')" = "('engine', 'fixture-engine', [50.0, 250.0, 450.0], [0.0, 30.0, 60.0], 240.0)" ]
check "--cpu-kernel: without it the block says ftbench's own path" [ "$(jget "$T/own.json" 'd["replay"]["bf16"]["cpu_path"]["source"]')" = ftbench ]
check "--cpu-kernel: the paced CPU time beside ours" [ "$(jget "$T/ck.json" '(lambda c: c["paced"] >= c["ours"] > 0)(d["replay"]["bf16"]["cpu_service_us"])')" = True ]
"$FTH" replay $SMALL --workloads uniform --cache 0.4 --no-store --json \
	--cpu-kernel "$PROBE --layer-us 100,3000,3000" >"$T/slow.json" 2>"$T/err"
check "--cpu-kernel: an engine whose CPU path is slow turns the winner (own: hybrid, engine's: offload)" [ "$(jget "$T/own.json" 'd["replay"]["bf16"]["points"][0]["winner"]'),$(jget "$T/slow.json" 'd["replay"]["bf16"]["points"][0]["winner"]')" = "hybrid,offload" ]
check "--cpu-kernel: the same decisions either way (counts equal)" [ "$(jget "$T/own.json" '[m["cpu_per_layer"] for m in d["replay"]["bf16"]["points"][0]["modes"]]')" = "$(jget "$T/slow.json" '[m["cpu_per_layer"] for m in d["replay"]["bf16"]["points"][0]["modes"]]')" ]
"$FTH" replay $SMALL --workloads uniform --cache 0.4 --cpu-kernel "$PROBE --layer-us 100,50,200 --fetch-us 30" >"$T/out" 2>"$T/err"
check "--cpu-kernel: the stored profile with the engine's path is schema-valid" python3 "$SC" "$SCHEMA" "$S/$U.json"
"$FTH" replay $SMALL --batch 2 --workloads uniform --cache 0.4 --no-store --cpu-kernel "$PROBE" >"$T/out" 2>"$T/err"; rc=$?
check "--cpu-kernel at batch 2: usage error naming batch 1" sh -c "[ $rc -eq 2 ] && grep -q 'batch 1' '$T/err'"
for m in "oldprobe:measure" "badroutes:routes"; do
	"$FTH" replay $SMALL --workloads uniform --cache 0.4 --cpu-kernel "$PROBE --mode ${m%%:*}" >"$T/out" 2>"$T/err"; rc=$?
	check "--cpu-kernel, probe ${m%%:*}: exit 1 naming ${m#*:}, nothing stored" sh -c "[ $rc -eq 1 ] && grep -q '${m#*:}' '$T/err' && ! grep -q 'replay stored' '$T/err'"
done
BWK="--dtype bf16 --cpu-iters 2 --kernel-cpu-iters 3 --kernel-pcie-iters 2 --pcie-iters 2 --no-legacy-copy --replay short"
"$FTH" bw $BWK -o "$T/bwk.json" \
	--cpu-kernel "$PROBE --gbs 80 --layer-us 100,50,200" >"$T/out" 2>"$T/err"; rc=$?
check "bw --cpu-kernel --replay short: exit 0, the replay ran the engine's path" [ "$rc,$(jget "$T/bwk.json" 'd["replay"]["bf16"]["cpu_path"]["source"]')" = "0,engine" ]
check "bw: the seed reader's fetch fraction is the replay's best f, the measured pair kept" [ "$(jget "$T/bwk.json" '(lambda e, p: (e["fetch_fraction_by"], round(e["pcie_gather_overlap_gbs"] / (e["pcie_gather_overlap_gbs"] + e["cpu_moe_overlap_gbs"]), 6) == round(min(0.99, max(0.01, p["best_fetch_fraction"])), 6), e["cpu_moe_overlap_gbs_measured"] > 0))(d["dtype_kernels"]["bf16"], next(p for p in d["replay"]["bf16"]["points"] if p["reuse"] == 0.6))')" = "('replay', True, True)" ]
check "bw --cpu-kernel: schema-valid" python3 "$SC" "$SCHEMA" "$T/bwk.json"
"$FTH" bw $BWK -o "$T/bwo.json" \
	--cpu-kernel "$PROBE --gbs 80 --mode badroutes" >"$T/out" 2>"$T/err"; rc=$?
check "bw: layer steps that fail skip the replay with a warning, the profile stands" [ "$rc,$(jget "$T/bwo.json" '"replay" in d, any("layer steps" in w for w in d["warnings"])')" = "0,(False, True)" ]

# errors
printf '{"format":"ftbench-routing-trace","version":1,"layers":4,"experts":128,"top_k":8,"batch":1,"steps":[[[1,2,3,4,5,6,7,8]]]}' >"$T/bad.json"
"$FTH" replay $SMALL --trace "$T/bad.json" --no-store >"$T/out" 2>"$T/err"; rc=$?
check "ragged trace: exit 2" [ "$rc" -eq 2 ]
check "ragged trace: the error names step and layers" grep -q "step 0 has 1 layers, expected 4" "$T/err"
"$FTH" replay --format fp8_block >"$T/out" 2>"$T/err"; rc=$?
check "fp8_block: usage error naming the CPU path" grep -q "without a CPU MoE path" "$T/err"
"$FTH" replay --workloads reuse:2 >"$T/out" 2>"$T/err"; rc=$?
check "bad workload: exit 2" [ "$rc" -eq 2 ]
"$FTH" replay --cache 0.4 --cache-slots 100 >"$T/out" 2>"$T/err"; rc=$?
check "two cache sizes: exit 2" [ "$rc" -eq 2 ]
echo "1..$n"
