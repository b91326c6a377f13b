#!/bin/sh
# A host with two GPUs: the inventory against nvidia-smi, --gpu INDEX and --gpu UUID
# selecting the same device in every command that takes --gpu, `ftbench bw` per GPU (two
# profiles under $XDG_CACHE_HOME/freetoken/benchbw/<uuid>.json, each with its GPU's own
# figures), and ftbenchd's scheduling of jobs on both GPUs (bench/daemon_gpu.py GPUS=2).
# Prints "ok ..." / "BAD ..." lines; bench/multigpu_check.py does the comparisons.
# usage: [BUILD=build] [BW_ARGS="..."] [ALL=1: also a daemon bw job with gpu "all"] bench/multigpu.sh OUTDIR
set -u
out=${1:?usage: bench/multigpu.sh OUTDIR}
B=${BUILD:-build}
F=$B/bin/ftbench
here=$(dirname "$0")
mkdir -p "$out"
export XDG_CACHE_HOME="$out/cache"
unset FREETOKEN_BENCHBW_PATH
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader > "$out/smi.csv"
nvidia-smi topo -m > "$out/topo.txt" 2>&1
"$F" gpus > "$out/gpus.txt" 2>&1
"$F" gpus --json > "$out/gpus.json"
u1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpus"][1]["uuid"])' "$out/gpus.json")
cc="--models qwen3-30B --batch-sizes 4 --miss-rates 1 --repeat 5 --json"
for tag in index uuid prefix; do
	case $tag in index) sel=1 ;; uuid) sel=$u1 ;; prefix) sel=$(echo "$u1" | cut -c1-12) ;; esac
	"$F" cache-copy --gpu "$sel" $cc > "$out/cc.$tag.json" 2> "$out/cc.$tag.err"
	echo "cache-copy --gpu $sel rc=$?" >> "$out/rc.txt"
done
# bw on each GPU (BW_ARGS, default: two formats, 1 s overlap), written to the per-GPU store
t=$(date +%s)
"$F" bw --gpu 0 ${BW_ARGS:---dtype bf16,nvfp4 --overlap-seconds 1} > "$out/bw0.txt" 2>&1
echo "bw --gpu 0 rc=$? $(( $(date +%s) - t )) s" >> "$out/rc.txt"
t=$(date +%s)
"$F" bw --gpu "$u1" ${BW_ARGS:---dtype bf16,nvfp4 --overlap-seconds 1} > "$out/bw1.txt" 2>&1
echo "bw --gpu $u1 rc=$? $(( $(date +%s) - t )) s" >> "$out/rc.txt"
for sel in 0 1 "$u1"; do
	tag=$(echo "$sel" | cut -c1-12)
	"$F" profile path --gpu "$sel" > "$out/path.$tag.txt" 2>&1
	"$F" profile show --gpu "$sel" --json > "$out/show.$tag.json" 2>&1
done
ls -l "$out/cache/freetoken/benchbw/" > "$out/store.txt" 2>&1
python3 "$here/multigpu_check.py" "$out" "$u1"
BUILD=$B GPUS=2 ALL=${ALL:-0} OUTDIR="$out/daemon" python3 "$here/daemon_gpu.py" > "$out/daemon.txt" 2>&1
echo "daemon_gpu GPUS=2 rc=$?" >> "$out/rc.txt"
cat "$out/rc.txt" "$out/daemon.txt"
