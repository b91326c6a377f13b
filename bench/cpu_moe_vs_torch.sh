#!/bin/sh
# bf16 CPU MoE step: `ftbench cpu-moe --format bf16` (batch 1, its own read ceiling) and the
# PyTorch step of bench/cpu_moe_torch.py (plain loop and transformers-style), same shapes and
# working set, alternated ROUNDS times in one run; then one invocation of every other format
# with the executor defaults. Prints per-round ratios. bench/RESULTS.md, "CPU MoE".
# usage: [BUILD=build] [ROUNDS=3] bench/cpu_moe_vs_torch.sh OUTDIR
set -u
out=${1:?usage: bench/cpu_moe_vs_torch.sh OUTDIR}
F=${BUILD:-build}/bin/ftbench
mkdir -p "$out"
: > "$out/runs.jsonl"
threads=$("$F" cpu --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["physical_cores"])') || exit 1
i=0
while [ $i -lt "${ROUNDS:-3}" ]; do
	i=$((i + 1))
	j=$("$F" cpu-moe --format bf16 --json 2>/dev/null | tr -d '\n')
	printf '{"round": %d, "what": "ftbench", "run": %s}\n' $i "${j:-null}" >> "$out/runs.jsonl"
	es=$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["synth_experts"])')
	python3 "$(dirname "$0")/cpu_moe_torch.py" --threads "$threads" --synth-experts "$es" --json 2>/dev/null |
		while read -r l; do printf '{"round": %d, "what": "torch", "run": %s}\n' $i "$l"; done >> "$out/runs.jsonl"
done
for f in nvfp4 q4_0 ds_fp4 mxfp4; do
	j=$("$F" cpu-moe --format $f --json 2>/dev/null | tr -d '\n')
	printf '{"round": 0, "what": "ftbench", "run": %s}\n' "${j:-null}" >> "$out/runs.jsonl"
done
python3 - "$out/runs.jsonl" <<'EOF2'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    x = r["run"]
    if not x:
        print("round %d %s: failed" % (r["round"], r["what"])); continue
    if r["what"] == "ftbench":
        res = x["results"][0]
        print("round %d ftbench %-7s %-12s %6.1f GB/s  read %6.1f  %5.1f %%  calib %s" % (r["round"], x["format"], res["kernel"], res["gbs"],
              res["read_ceiling_gbs"], 100 * res["fraction_of_read_ceiling"], [round(c, 1) for c in x["ceiling"]["calibration_gbs"]]))
    else:
        print("round %d torch   %-7s %6.1f GB/s" % (r["round"], x.get("style"), x.get("gbs", 0)))
for k in sorted({r["round"] for r in rows if r["round"]}):
    ft = [r["run"]["results"][0]["gbs"] for r in rows if r["round"] == k and r["what"] == "ftbench" and r["run"]]
    tt = {r["run"].get("style"): r["run"].get("gbs") for r in rows if r["round"] == k and r["what"] == "torch" and r["run"]}
    if ft:
        print("round %d: ftbench bf16 / torch: %s" % (k, ", ".join("%s %.2fx" % (s, ft[0] / g) for s, g in tt.items() if g)))
EOF2
