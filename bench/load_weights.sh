#!/bin/sh
# load-weights on a synthetic checkpoint of ~9 GiB of bf16 experts (qwen3-moe layout: 8 MoE
# layers x 128 experts, H 2048, I 768, 4 GiB shards), against the sequential O_DIRECT read
# rate of the same files measured in the same run with dd (iflag=direct bs=16M).
# Env: FTBENCH (binary), LW_DIR (scratch, default /var/tmp/ftlw_bench), LW_LAYERS, LW_EXPERTS,
# LW_SHARD_MIB, LW_OUT (where logs go, default $LW_DIR/out). Needs ~3x the checkpoint free.
set -u
ft=${FTBENCH:-${BUILD:-build}/bin/ftbench}
dir=${LW_DIR:-/var/tmp/ftlw_bench}
out=${LW_OUT:-$dir/out}
layers=${LW_LAYERS:-8}
experts=${LW_EXPERTS:-128}
shard=${LW_SHARD_MIB:-4096}
need_gib=$(( layers * experts * 9 * 3 / 1024 + 2 ))
mkdir -p "$dir" "$out" || exit 1
free_gib=$(df -Pk "$dir" | awk 'NR==2 {print int($4/1048576)}')
if [ "$free_gib" -lt "$need_gib" ]; then
	echo "load_weights.sh: skipped: $dir has $free_gib GiB free, needs $need_gib"
	exit 0
fi
echo "== host: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
echo "== scratch: $(df -PT "$dir" | awk 'NR==2 {print $1, $2}') at $dir"
m=$dir/qwen3
rm -rf "$m" "$dir/ftw"
$ft make-checkpoint --arch qwen3-moe --out "$m" --layers "$layers" --experts "$experts" --hidden 2048 \
	--inter 768 --shard-mib "$shard" || exit 1
echo "== dd iflag=direct bs=16M, the shards one after another"
t0=$(date +%s.%N)
bytes=0
for f in "$m"/*.safetensors; do
	dd if="$f" of=/dev/null iflag=direct bs=16M 2>"$out/dd.log" || { cat "$out/dd.log"; exit 1; }
	tail -n 1 "$out/dd.log"
	bytes=$((bytes + $(stat -c %s "$f")))
done
t1=$(date +%s.%N)
dd_gibs=$(echo "$bytes $t0 $t1" | awk '{printf "%.3f", $1 / ($3 - $2) / 1073741824}')
echo "dd sequential O_DIRECT: $bytes bytes, $dd_gibs GiB/s"
echo "== ftbench load-weights (default: 8 workers, 8 MiB chunks)"
$ft load-weights --model "$m" --ftw-dir "$dir/ftw" --keep-ftw --result-fd 3 3>"$out/lw.jsonl"
rc1=$?
echo "== page cache of the shards after the run (fadvise eviction at work: expect ~0)"
fincore "$m"/*.safetensors 2>/dev/null || true
echo "== again with 16 workers, FTW reused"
$ft load-weights --model "$m" --ftw-dir "$dir/ftw" --keep-ftw --workers 16 --modes parallel,ftw --result-fd 3 3>"$out/lw16.jsonl"
rc2=$?
python3 - "$out/lw.jsonl" "$dd_gibs" "$out/lw16.jsonl" <<'PY'
import json, sys
def res(p):
    for l in open(p):
        j = json.loads(l)
        if j.get("type") == "result":
            return j["result"]
r = res(sys.argv[1]); dd = float(sys.argv[2]); r16 = res(sys.argv[3])
rows = {x["mode"]: x for x in r["rows"]}
shard = max(__import__("os").path.getsize(f) for f in __import__("glob").glob(r["model"] + "/*.safetensors"))
limit = r["bank_bytes"] * 1.1 + shard
print("== summary")
print("bank bytes %.2f GiB, largest shard %.2f GiB, RSS limit %.2f GiB" % (r["bank_bytes"]/2**30, shard/2**30, limit/2**30))
for name, rr in (("8 workers", r), ("16 workers", r16)):
    rs = {x["mode"]: x for x in rr["rows"]}
    for m in ("baseline", "parallel", "ftw"):
        x = rs[m]
        print("%-10s %-8s %6.3f s %6.2f GiB/s  %.0f%% of dd  peakRSS %.2f GiB (%s limit)  direct %s  checksum %s" % (
            name, m, x["load_s"], x["read_gibs"], 100 * x["read_gibs"] / dd, x["peak_rss_bytes"]/2**30,
            "under" if x["peak_rss_bytes"] < limit else "OVER", x.get("direct"), "ok" if x["checksum_ok"] else "BAD"))
p, f = rows["parallel"]["read_gibs"], rows["ftw"]["read_gibs"]
print("parallel/dd %.2f (goal >= 0.90); ftw/parallel %.2f (goal >= 1.00); ok %s" % (p / dd, f / p, r["ok"]))
PY
rm -rf "$m" "$dir/ftw"
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ]
