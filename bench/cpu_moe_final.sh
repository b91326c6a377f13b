#!/bin/sh
# One H200 call's CPU MoE round-up: bf16 against PyTorch side by side
# (bench/cpu_moe_vs_torch.sh, ROUNDS rounds), then an A/B list of variants in paired rounds
# (bench/cpu_moe_sched_ab.sh for AB_S seconds). bench/RESULTS.md, "CPU MoE", session 3:
#   call 1: ROUNDS=2 AB_S=60 with a list of the defaults and of the STATIC_PCT knob (removed since)
#   call 5: the defaults (ROUNDS=3 AB_S=150 VARIANTS=bench/cpu_moe_ab8.txt)
# usage: [BUILD=build] [ROUNDS=3] [AB_S=150] [VARIANTS=file] bench/cpu_moe_final.sh OUTDIR
set -u
out=${1:?usage: bench/cpu_moe_final.sh OUTDIR}
ROUNDS=${ROUNDS:-3} sh bench/cpu_moe_vs_torch.sh "$out/torch" 2>&1 | tail -14
FTBENCH=${BUILD:-build}/bin/ftbench DEADLINE_S=${AB_S:-150} VARIANTS=${VARIANTS:-bench/cpu_moe_ab8.txt} \
	sh bench/cpu_moe_sched_ab.sh "$out/ab" 2>&1 | tail -10
