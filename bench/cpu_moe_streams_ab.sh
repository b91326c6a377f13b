#!/bin/sh
# cpu-moe A/B of FREETOKEN_CPU_MOE_STREAMS (1: one weight stream per kernel call, 2: the two
# halves of a call's rows / scale blocks interleaved), same binary, batch 1, pairs back to back
# with the order swapped every round; each invocation has its own interleaved read ceiling.
# Starts nothing after DEADLINE_S seconds. bench/RESULTS.md, "CPU MoE".
# usage: FTBENCH=path/ftbench [KERNELS=prog] [UNIT=prog] [DEADLINE_S=120] [FORMATS="mxfp4 bf16 q4_0"]
#        bench/cpu_moe_streams_ab.sh OUTDIR
set -u
out=${1:?usage: bench/cpu_moe_streams_ab.sh OUTDIR}
mkdir -p "$out"
t0=$(date +%s)
left() { [ $(( $(date +%s) - t0 )) -lt "${DEADLINE_S:-120}" ]; }
sum="$out/summary.txt"
: > "$sum"
if [ -n "${UNIT:-}" ]; then timeout 30 "$UNIT" > "$out/unit.txt" 2>&1; echo "unit rc=$?" >> "$sum"; fi
if [ -n "${KERNELS:-}" ]; then
	for v in 1 2; do
		FREETOKEN_CPU_MOE_STREAMS=$v timeout 20 "$KERNELS" 1 > "$out/kernels.s$v.txt" 2>&1
		grep -E "isa[34]" "$out/kernels.s$v.txt" | sed "s|^|kern s$v: |" >> "$sum"
	done
fi
r=0
while left; do
	r=$((r + 1))
	if [ $((r % 2)) = 1 ]; then order="1 2"; else order="2 1"; fi
	for f in ${FORMATS:-mxfp4 bf16 q4_0}; do
		for v in $order; do
			left || break 3
			# one log file for all (the device run returns only a few files)
			FREETOKEN_CPU_MOE_STREAMS=$v timeout 40 "$FTBENCH" cpu-moe --format "$f" > "$out/run.txt" 2>&1
			echo "### r$r $f streams=$v" >> "$out/all.txt"
			cat "$out/run.txt" >> "$out/all.txt"
			line=$(grep -E "^avx" "$out/run.txt" | awk '{print $3, "GB/s read", $6, "=", $7, "%"}')
			echo "r$r $f streams=$v: $line" >> "$sum"
		done
	done
done
echo "total $(( $(date +%s) - t0 )) s" >> "$sum"
cat "$sum"
