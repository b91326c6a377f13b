#!/bin/sh
# The last H200 call of session 3: bf16 against PyTorch side by side (bench/cpu_moe_vs_torch.sh),
# then every format with the executor defaults, and mxfp4 with session 2's item sizes beside
# them (bench/cpu_moe_ab8.txt).
# usage: BUILD=build bench/final3_h200.sh OUTDIR
set -u
out=${1:?usage: bench/final3_h200.sh OUTDIR}
ROUNDS=${ROUNDS:-3} sh bench/cpu_moe_vs_torch.sh "$out/torch" 2>&1 | tail -14
FTBENCH=${BUILD:-build}/bin/ftbench DEADLINE_S=${AB_S:-150} VARIANTS=bench/cpu_moe_ab8.txt sh bench/cpu_moe_sched_ab.sh "$out/ab" 2>&1 | tail -9
