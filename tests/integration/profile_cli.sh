#!/bin/sh
# `ftbench profile` against fixture profiles: outputs and exit codes (0 found, 1 no data or a
# broken profile, 2 usage). GPUs are named by literal uuid and CUDA_VISIBLE_DEVICES is empty,
# so the result is the same with or without a GPU. Prints "ok ..." / "not ok ..." lines.
set -u
B=${BUILD:-build}
FT="$(pwd)/$B/bin/ftbench"
FTH="$(pwd)/$B/tests/integration/ftbench_hooks" # the test build: fake GPUs and figures (cli.h)
FIX="$(pwd)/tests/fixtures/profiles"
T=$(mktemp -d /tmp/ftprof-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export XDG_CACHE_HOME="$T/cache" FREETOKEN_BENCHBW_SYSDIR="$T/sys" CUDA_VISIBLE_DEVICES=
unset FREETOKEN_BENCHBW_PATH
S="$T/cache/freetoken/benchbw"
A=GPU-8eb97239-58cd-4a4f-9b2e-0123456789ab
n=0
# expect DESC RC STDOUT-PATTERN -- ARGS...   (pattern: grep -E on stdout; "" = anything)
expect() {
	desc=$1 want_rc=$2 pat=$3; shift 4
	"$FT" profile "$@" >"$T/out" 2>"$T/err"; rc=$?
	n=$((n + 1))
	if [ "$rc" -eq "$want_rc" ] && { [ -z "$pat" ] || grep -Eq "$pat" "$T/out"; }; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc (exit $rc, want $want_rc)"; sed 's/^/#   /' "$T/out" "$T/err" | head -n 20
	fi
}
stderr_has() {
	n=$((n + 1))
	if grep -Fq "$1" "$T/err"; then echo "ok $n - stderr names $1"; else echo "not ok $n - stderr lacks '$1'"; sed 's/^/#   /' "$T/err"; fi
}

expect "no profile: path prints where bw writes, exit 1" 1 "^$S/host.json\$" -- path
expect "no profile: recommend says none, exits 1" 1 "^none\$" -- recommend bf16
stderr_has "run \`ftbench bw\`"
mkdir -p "$S"
cp "$FIX/host.json" "$S/host.json"
cp "$FIX/full.json" "$S/$A.json"
expect "host.json: path" 0 "^$S/host.json\$" -- path
expect "host.json: bf16 offload" 0 "^offload\$" -- recommend bf16
expect "host.json: no data for nvfp4 -> none, exit 1" 1 "^none\$" -- recommend nvfp4
expect "host.json: no fetch fraction, exit 1" 1 "" -- fetch-fraction bf16
expect "host.json: show" 0 "CPU-only" -- show
expect "GPU uuid: path" 0 "^$S/$A.json\$" -- path --gpu "$A"
expect "GPU uuid: mxfp4 alias hybrid" 0 "^hybrid\$" -- recommend mxfp4 --gpu "$A"
expect "GPU uuid: fetch fraction (overlap pair)" 0 "^0\\.2000\$" -- fetch-fraction bf16 --gpu "$A"
expect "GPU uuid: --json recommend" 0 "\"recommendation\": \"hybrid\"" -- --json recommend bf16 --gpu "$A"
expect "GPU uuid: --json fetch-fraction" 0 "\"fetch_fraction\": 0\\.2" -- fetch-fraction bf16 --json --gpu "$A"
expect "GPU uuid: show --json is the file" 0 "\"uuid\": \"$A\"" -- show --json --gpu "$A"
expect "GPU uuid: show table" 0 "^bf16 +hybrid" -- show --gpu "$A"
expect "no replay map: recommend by workload says none, exit 1" 1 "^none\$" -- recommend bf16 --cache-fraction 0.4 --reuse 0.6 --gpu "$A"
stderr_has "no replay map for bf16"
expect "--reuse without --cache-fraction: usage" 2 "" -- recommend bf16 --reuse 0.6 --gpu "$A"
expect "--cache-fraction 0: usage" 2 "" -- recommend bf16 --cache-fraction 0 --reuse 0.6 --gpu "$A"
cp "$FIX/replay.json" "$S/$A.json"
expect "replay map: low reuse hybrid with its best f" 0 "^hybrid fetch_fraction=0\.35 \(replay point: cache 0\.4, reuse 0," -- recommend bf16 --cache-fraction 0.4 --reuse 0.1 --gpu "$A"
expect "replay map: reuse 0.8 is nearest 0.85, offload" 0 "^offload fetch_fraction=0\.5 " -- recommend bf16 --cache-fraction 0.35 --reuse 0.8 --gpu "$A"
expect "replay map: --json" 0 "\"recommendation\": \"offload\"" -- recommend bf16 --cache-fraction 0.7 --reuse 0.6 --json --gpu "$A"
cp "$FIX/full.json" "$S/$A.json"
expect "no batch sweep: max-batch exits 1" 1 "" -- max-batch bf16 --gpu "$A"
stderr_has "no batch sweep for bf16"
printf '{"version": 4, "dtype_kernels": {"nvfp4": {"hybrid_max_batch": 16}}}' >"$T/sweep.json"
FREETOKEN_BENCHBW_PATH="$T/sweep.json" "$FT" profile max-batch nvfp4 --json >"$T/out" 2>&1
n=$((n + 1)); if grep -q '"hybrid_max_batch": 16' "$T/out"; then echo "ok $n - max-batch reads hybrid_max_batch"; else echo "not ok $n - max-batch"; sed 's/^/#   /' "$T/out"; fi
cp "$FIX/full.json" "$S/GPU-99999999-0000-0000-0000-000000000000.json"   # measured on A
expect "a file measured on another GPU is ignored, exit 1" 1 "" -- recommend bf16 --gpu GPU-99999999-0000-0000-0000-000000000000
stderr_has "measured on $A"
FREETOKEN_BENCHBW_PATH="$FIX/dtypes_first.json" "$FT" profile recommend bf16 --gpu GPU-11111111-2222-3333-4444-555555555555 >"$T/out" 2>&1
n=$((n + 1)); if grep -qx offload "$T/out"; then echo "ok $n - FREETOKEN_BENCHBW_PATH is read"; else echo "not ok $n - FREETOKEN_BENCHBW_PATH not read"; sed 's/^/#   /' "$T/out"; fi
printf '{"version": 4, "dtypes": {' >"$S/$A.json"
expect "truncated profile: exit 1" 1 "" -- recommend bf16 --gpu "$A"
stderr_has "$S/$A.json: not valid JSON"
printf '[{"version": 4}]' >"$S/$A.json"
expect "not an object: none, exit 1" 1 "^none\$" -- recommend bf16 --gpu "$A"
stderr_has "not a bandwidth profile: the top level is not a JSON object"
printf '{"version": "4", "dtypes": {"bf16": "hybrid"}}' >"$S/$A.json"
expect "any object is a profile (as to the seed's reader)" 0 "^hybrid\$" -- recommend bf16 --gpu "$A"
cp "$FIX/full.json" "$S/$A.json"
expect "fp8 is not an alias in the reader: none, exit 1" 1 "^none\$" -- recommend fp8 --gpu "$A"
stderr_has "engines ask for 'fp8_block'"
expect "a format ftbench does not know is asked as it is" 1 "^none\$" -- recommend int3
stderr_has "'int3' is not a format ftbench knows"
expect "missing format: exit 2" 2 "" -- fetch-fraction
expect "empty format: exit 2" 2 "" -- recommend ""
expect "unknown action: exit 2" 2 "" -- frobnicate
expect "extra argument: exit 2" 2 "" -- path extra
expect "--gpu index without a GPU: exit 2" 2 "" -- path --gpu 0
expect "--help: exit 0" 0 "^usage: ftbench profile" -- --help
expect "--help names history" 0 "history +the profiles" -- --help
expect "--help says what GB/s is" 0 "GB/s is 10\\^9 bytes" -- --help
expect "--limit 0: exit 2" 2 "" -- history --limit 0 --gpu "$A"
expect "--limit x: exit 2" 2 "" -- history --limit x --gpu "$A"
expect "--limit outside history: exit 2" 2 "" -- show --limit 3 --gpu "$A"
expect "show: units on the ceilings" 0 "d2h 54\\.9 GB/s\$" -- show --gpu "$A"
expect "show: a profile without valid says not checked" 0 "^valid +not checked" -- show --gpu "$A"
expect "show: a profile without fingerprint: stale unknown" 0 "^stale +unknown" -- show --gpu "$A"

# history, valid/drift/stale with real bw runs (fake measurements, as bw_valid.sh)
G0=GPU-fa4e0000-0000-4000-8000-000000000000
SMALL="--dtype bf16,nvfp4 --cpu-iters 2 --kernel-cpu-iters 3 --kernel-pcie-iters 2 --pcie-iters 2 --no-legacy-copy"
expect "history of a GPU with none kept: exit 1" 1 "" -- history --gpu "$G0"
stderr_has "no kept profiles for $G0"
FTBENCH_TEST_FAKE_GPUS=1 "$FTH" bw $SMALL >/dev/null 2>&1
FTBENCH_TEST_FAKE_GPUS=1 "$FTH" bw $SMALL --max-spread 0.001 >/dev/null 2>&1
FTBENCH_TEST_FAKE_GPUS=1 "$FTH" bw $SMALL >/dev/null 2>&1
expect "history: a header and three rows" 0 "^timestamp +read GB/s +valid +drifted" -- history --gpu "$G0"
n=$((n + 1)); rows=$(grep -c '^20[0-9-]*T' "$T/out")
# a row per profile and format, the profile's cells on its first row only
grep '^20' "$T/out" >"$T/first"
if [ "$rows" -eq 3 ] && sed -n 2p "$T/out" | grep -Eq ' 99\.5 yes +- +bf16 +30\.0 +24\.9 offload$' &&
	sed -n 3p "$T/out" | grep -Eq '^ +nvfp4 +60\.0 +24\.9 hybrid$' && [ "$(wc -l <"$T/out")" -eq 7 ] &&
	sed -n 2p "$T/first" | grep -Eq ' NO ' && sed -n 3p "$T/first" | grep -Eq ' yes +0 '; then
	echo "ok $n - history rows: figures, verdicts, valid, drift"
else echo "not ok $n - history rows"; sed 's/^/#   /' "$T/out"; fi
expect "history --limit 1: the newest only" 0 "" -- history --gpu "$G0" --limit 1
n=$((n + 1)); if [ "$(grep -c '^20[0-9-]*T' "$T/out")" -eq 1 ] && grep -q ' yes ' "$T/out"; then echo "ok $n - --limit 1 keeps the newest"; else echo "not ok $n - --limit 1"; sed 's/^/#   /' "$T/out"; fi
"$FT" profile history --gpu "$G0" --json --limit 2 >"$T/out" 2>"$T/err"
n=$((n + 1)); if [ "$(python3 -c "import json,sys; h=json.load(open(sys.argv[1])); print(len(h), h[0]['valid'], h[1]['valid'], h[0]['epoch'] < h[1]['epoch'])" "$T/out")" = "2 False True True" ]; then
	echo "ok $n - history --json: the profiles, oldest first"; else echo "not ok $n - history --json"; sed 's/^/#   /' "$T/out" | head; fi
expect "show: every figure with its spread" 0 "^  nvfp4 cpu_moe_gbs +60\\.00 GB/s  59\\.40-60\\.60, 3 samples\$" -- show --gpu "$G0"
expect "show: the read ceiling's spread" 0 "^  cpu_stream_read_gbs +99\\.50 GB/s  99\\.00-100\\.00, 2 samples\$" -- show --gpu "$G0"
expect "show: valid" 0 "^valid +yes" -- show --gpu "$G0"
expect "show: drift compared, none" 0 "^drift +none" -- show --gpu "$G0"
expect "show: not stale on the machine it was measured on" 0 "^stale +no" -- show --gpu "$G0"
FTBENCH_TEST_FAKE_GPUS=1 "$FTH" bw $SMALL --max-spread 0.001 -o "$T/bad.json" >/dev/null 2>&1
python3 - "$T/bad.json" "$T/drift.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["fingerprint"]["kernel"] = "0.0.1-another"
d["drift"] = [{"figure": "bf16.cpu_moe_gbs", "previous": 40.0, "previous_min": 39.0, "previous_max": 41.0,
               "current": 30.0, "ratio": 0.75}]
json.dump(d, open(sys.argv[2], "w"))
PY
FREETOKEN_BENCHBW_PATH="$T/bad.json" "$FT" profile show --gpu "$G0" >"$T/out" 2>"$T/err"
n=$((n + 1)); if grep -Eq "^valid +NO: .*spread" "$T/out"; then echo "ok $n - show: invalid, with its reasons"; else echo "not ok $n - show invalid"; sed 's/^/#   /' "$T/out"; fi
FREETOKEN_BENCHBW_PATH="$T/drift.json" "$FT" profile show --gpu "$G0" >"$T/out" 2>"$T/err"
n=$((n + 1)); if grep -Eq "^drift +bf16\.cpu_moe_gbs: 40\.00 -> 30\.00 GB/s \(-25 %; previous spread 39\.00-41\.00\)" "$T/out"; then echo "ok $n - show: drift"; else echo "not ok $n - show drift"; sed 's/^/#   /' "$T/out"; fi
n=$((n + 1)); if grep -Eq "^stale +YES: .*kernel.*0\.0\.1-another" "$T/out"; then echo "ok $n - show: stale, and why"; else echo "not ok $n - show stale"; sed 's/^/#   /' "$T/out"; fi
expect "history --format csv: a header" 0 "^timestamp,read_gbs,valid,drifted,format,cpu_moe_gbs,gather_gbs,verdict\$" -- history --gpu "$G0" --format csv
n=$((n + 1)); if [ "$(grep -c '^20' "$T/out")" -eq 6 ] && grep -Eq '^20[0-9T:Z-]+,99\.5,no,,nvfp4,60\.0,24\.9,hybrid$' "$T/out" &&
	grep -Eq '^20[0-9T:Z-]+,99\.5,yes,,bf16,30\.0,24\.9,offload$' "$T/out"; then echo "ok $n - csv: a row per profile and format"
else echo "not ok $n - csv rows"; sed 's/^/#   /' "$T/out"; fi
expect "history --format md: a table" 0 "^\\| --- \\| --- \\|" -- history --gpu "$G0" --format md
n=$((n + 1)); if grep -Eq '^\| 20[0-9T:Z-]+ \| 99\.5 \| no \|  \| bf16 \| 30\.0 \| 24\.9 \| offload \|$' "$T/out"; then echo "ok $n - md rows"; else echo "not ok $n - md rows"; sed 's/^/#   /' "$T/out"; fi
expect "history --format json is --json" 0 "^\\[" -- history --gpu "$G0" --format json --limit 1
expect "--format xml: exit 2" 2 "" -- history --gpu "$G0" --format xml
stderr_has "bad value 'xml' for --format: expected one of table|json|csv|md"
expect "--format csv on recommend: exit 2 (show and history only)" 2 "" -- recommend bf16 --gpu "$G0" --format csv
expect "show --format json is the file" 0 "\"uuid\": \"$G0\"" -- show --gpu "$G0" --format json
echo "1..$n"
