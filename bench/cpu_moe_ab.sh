#!/bin/sh
# cpu-moe A/B: the CPU MoE executor of this tree against a "before" build in the same run, at
# batch 1, every invocation with its own read ceiling (interleaved rounds), plus the per-step
# fixed cost (bench/cpu_moe_overhead.c) and per-core in-cache kernel rates
# (bench/cpu_moe_kernels.c) on this CPU. Runs a priority list and starts nothing after
# DEADLINE_S seconds. bench/RESULTS.md, "CPU MoE".
# usage: FTBENCH=new/ftbench FTBENCH_OLD=old/ftbench [KERNELS=prog] [OVERHEAD=prog] [UNIT=prog]
#        [DEADLINE_S=170] bench/cpu_moe_ab.sh OUTDIR
set -u
out=${1:?usage: bench/cpu_moe_ab.sh OUTDIR}
mkdir -p "$out"
t0=$(date +%s)
left() { [ $(( $(date +%s) - t0 )) -lt "${DEADLINE_S:-170}" ]; }
log="$out/ab.txt"
: > "$log"
# one cpu-moe invocation: label, env assignments (or -), binary, args
moe() {
	left || { echo "skip (deadline): $*" >> "$log"; return; }
	label=$1; envs=$2; bin=$3; shift 3
	echo "### $label: $envs $bin cpu-moe $*" >> "$log"
	s=$(date +%s)
	if [ "$envs" = - ]; then
		timeout 60 "$bin" cpu-moe "$@" > "$out/run.txt" 2>&1
	else
		env $envs timeout 60 "$bin" cpu-moe "$@" > "$out/run.txt" 2>&1
	fi
	cat "$out/run.txt" >> "$log"
	grep -E "^(scalar|avx|read|ceiling)" "$out/run.txt" | sed "s|^|$label: |" >> "$out/summary.txt"
	echo "($label: $(( $(date +%s) - s )) s)" >> "$log"
}
: > "$out/summary.txt"
if [ -n "${UNIT:-}" ]; then timeout 60 "$UNIT" > "$out/unit.txt" 2>&1; echo "unit rc=$?" >> "$out/summary.txt"; tail -2 "$out/unit.txt" >> "$out/summary.txt"; fi
if [ -n "${OVERHEAD:-}" ]; then
	for v in "-" "FREETOKEN_CPU_MOE_LEAN=0" "FREETOKEN_CPU_MOE_SPIN=busy"; do
		echo "== overhead $v (top-1, top-8)" >> "$out/summary.txt"
		if [ "$v" = - ]; then e=""; else e=$v; fi
		env $e timeout 30 "$OVERHEAD" 0 1 >> "$out/summary.txt" 2>&1
		env $e timeout 30 "$OVERHEAD" 0 8 >> "$out/summary.txt" 2>&1
	done
fi
if [ -n "${KERNELS:-}" ]; then timeout 60 "$KERNELS" 1 > "$out/kernels.txt" 2>&1; fi
N=$FTBENCH O=$FTBENCH_OLD
moe new-mx - "$N" --format mxfp4 --isa avx512,avx512vnni
moe old-mx - "$O" --format mxfp4 --isa avx512,avx512vnni
moe new-bf16 - "$N" --format bf16
moe old-bf16 - "$O" --format bf16
moe new-q4 - "$N" --format q4_0
moe old-q4 - "$O" --format q4_0
moe new-bf16-lean0 FREETOKEN_CPU_MOE_LEAN=0 "$N" --format bf16
moe new-q4-lean0 FREETOKEN_CPU_MOE_LEAN=0 "$N" --format q4_0
moe new-nv - "$N" --format nvfp4
moe old-nv - "$O" --format nvfp4
moe new-bf16-busy FREETOKEN_CPU_MOE_SPIN=busy "$N" --format bf16
moe new-q4-busy FREETOKEN_CPU_MOE_SPIN=busy "$N" --format q4_0
moe new-mx-busy FREETOKEN_CPU_MOE_SPIN=busy "$N" --format mxfp4
moe new-mx-rowspf FREETOKEN_CPU_MOE_MXPF=rows "$N" --format mxfp4
moe new-ds - "$N" --format ds_fp4
for r in 2 3; do
	moe new-bf16.$r - "$N" --format bf16
	moe old-bf16.$r - "$O" --format bf16
	moe new-q4.$r - "$N" --format q4_0
	moe old-q4.$r - "$O" --format q4_0
	moe new-mx.$r - "$N" --format mxfp4
	moe old-mx.$r - "$O" --format mxfp4
done
echo "total $(( $(date +%s) - t0 )) s" >> "$out/summary.txt"
