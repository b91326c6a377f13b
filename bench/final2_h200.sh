#!/bin/sh
# The last H200 call of session 2: bf16 against PyTorch side by side (bench/cpu_moe_vs_torch.sh)
# and the A/B of the dynamic schedule's tail and round-robin head (bench/cpu_moe_ab4.txt).
# usage: BUILD=build bench/final2_h200.sh OUTDIR
set -u
out=${1:?usage: bench/final2_h200.sh OUTDIR}
ROUNDS=${ROUNDS:-2} sh bench/cpu_moe_vs_torch.sh "$out/torch" 2>&1 | tail -12
FTBENCH=${BUILD:-build}/bin/ftbench DEADLINE_S=${AB_S:-60} VARIANTS=bench/cpu_moe_ab4.txt sh bench/cpu_moe_sched_ab.sh "$out/ab" 2>&1 | tail -10
