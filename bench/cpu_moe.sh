#!/bin/sh
# cpu-moe: the CPU MoE executor per format and ISA tier at batch 1, each tier's steps interleaved
# with passes of the CPU read ceiling (same run), batch 8, and the PyTorch baseline
# (bench/cpu_moe_torch.py, same shapes and number of synthetic experts). Settings against each
# other, or two builds: bench/ab.py.
# usage: BUILD=build [CM_OUT=DIR] bench/cpu_moe.sh        (bench/README.md, "cpu-moe")
set -u
BUILD=${BUILD:-build}
FTBENCH=${FTBENCH:-$BUILD/bin/ftbench}
out=${CM_OUT:-$(mktemp -d /tmp/ftbench-cpumoe.XXXXXX)}
mkdir -p "$out"
: > "$out/moe.txt"; : > "$out/moe.jsonl"
run() { echo "### $*" >> "$out/moe.txt"; "$@" --result-fd 3 3>>"$out/moe.jsonl" 2>&1 | tee -a "$out/moe.txt" | grep -E "^(scalar|avx|read)"; }
for f in bf16 nvfp4 mxfp4 q4_0 ds_fp4; do echo "== $f"; run "$FTBENCH" cpu-moe --format $f --isa all; done
echo "== batch 8"; for f in bf16 nvfp4; do run "$FTBENCH" cpu-moe --format $f --batch 8; done
if python3 -c 'import torch' 2>/dev/null; then
	es=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d.get("type") == "result" and d["result"]["format"] == "bf16":
        print(d["result"]["synth_experts"]); break' "$out/moe.jsonl")
	threads=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d.get("type") == "result": print(d["result"]["cpu"]["threads_used"]); break' "$out/moe.jsonl")
	echo "== pytorch ($es synthetic experts, $threads threads)"
	PYTHONUNBUFFERED=1 python3 bench/cpu_moe_torch.py --threads "$threads" --synth-experts "$es" | tee "$out/torch.txt"
else
	echo "== pytorch: not installed, baseline skipped"
fi
echo "logs: $out"
