#!/bin/sh
# cpu-moe A/B of executor settings in one run: the work schedule (dynamic items of several
# sizes against the static split), the software prefetch distance of the row kernels, the
# mxfp4 prefetch mode, two streams. Every variant is one `ftbench cpu-moe --format F --json`
# invocation (batch 1, 16 threads, its own interleaved read passes); the list is walked in
# rounds, rotated each round, until DEADLINE_S; bench/cpu_moe_ab_summary.py prints, per format,
# each variant's median % of its own read ceiling and its median paired difference against the
# format's baseline in the same round. bench/RESULTS.md, "CPU MoE".
# usage: FTBENCH=path/ftbench [DEADLINE_S=240] [VARIANTS=file] bench/cpu_moe_sched_ab.sh OUTDIR
# A variant line: label format env-assignments-or-- [extra cpu-moe args]; BIN=path among the
# assignments runs that ftbench instead (an older build, side by side)
set -u
out=${1:?usage: bench/cpu_moe_sched_ab.sh OUTDIR}
mkdir -p "$out"
here=$(dirname "$0")
t0=$(date +%s)
list="$out/variants.txt"
if [ -n "${VARIANTS:-}" ]; then cp "$VARIANTS" "$list"; else cat > "$list" <<'EOF'
bf16-static bf16 FREETOKEN_CPU_MOE_SCHED=static
bf16-dyn128 bf16 FREETOKEN_CPU_MOE_ITEM_KB=128
bf16-dyn256 bf16 FREETOKEN_CPU_MOE_ITEM_KB=256
bf16-dyn512 bf16 FREETOKEN_CPU_MOE_ITEM_KB=512
bf16-dyn1024 bf16 FREETOKEN_CPU_MOE_ITEM_KB=1024
bf16-dyn256-pf0 bf16 FREETOKEN_CPU_MOE_ITEM_KB=256,FREETOKEN_CPU_MOE_PF_DIST=0
bf16-static-pf0 bf16 FREETOKEN_CPU_MOE_SCHED=static,FREETOKEN_CPU_MOE_PF_DIST=0
bf16-dyn256-pf2k bf16 FREETOKEN_CPU_MOE_ITEM_KB=256,FREETOKEN_CPU_MOE_PF_DIST=2048
bf16-dyn256-pf8k bf16 FREETOKEN_CPU_MOE_ITEM_KB=256,FREETOKEN_CPU_MOE_PF_DIST=8192
bf16-dyn256-s1 bf16 FREETOKEN_CPU_MOE_ITEM_KB=256,FREETOKEN_CPU_MOE_STREAMS=1
q4-static q4_0 FREETOKEN_CPU_MOE_SCHED=static
q4-dyn128 q4_0 FREETOKEN_CPU_MOE_ITEM_KB=128
q4-dyn512 q4_0 FREETOKEN_CPU_MOE_ITEM_KB=512
q4-dyn256-pf0 q4_0 FREETOKEN_CPU_MOE_ITEM_KB=256,FREETOKEN_CPU_MOE_PF_DIST=0
nv-static nvfp4 FREETOKEN_CPU_MOE_SCHED=static
nv-dyn256 nvfp4 FREETOKEN_CPU_MOE_ITEM_KB=256
mx-static mxfp4 FREETOKEN_CPU_MOE_SCHED=static
mx-dyn256 mxfp4 FREETOKEN_CPU_MOE_ITEM_KB=256
mx-dyn512 mxfp4 FREETOKEN_CPU_MOE_ITEM_KB=512
mx-dyn1024 mxfp4 FREETOKEN_CPU_MOE_ITEM_KB=1024
mx-static-none mxfp4 FREETOKEN_CPU_MOE_SCHED=static,FREETOKEN_CPU_MOE_MXPF=none
mx-static-rows mxfp4 FREETOKEN_CPU_MOE_SCHED=static,FREETOKEN_CPU_MOE_MXPF=rows
EOF
fi
n=$(grep -c . "$list")
: > "$out/runs.jsonl"
round=0
while [ $(( $(date +%s) - t0 )) -lt "${DEADLINE_S:-240}" ]; do
	round=$((round + 1))
	i=0
	while [ $i -lt "$n" ]; do
		[ $(( $(date +%s) - t0 )) -lt "${DEADLINE_S:-240}" ] || break
		line=$(sed -n "$(( (i + round - 1) % n + 1 ))p" "$list")
		i=$((i + 1))
		set -- $line
		label=$1 fmt=$2 envs=$3
		shift 3
		[ "$envs" = - ] && envs=""
		bin=$FTBENCH
		case ",$envs," in *,BIN=*) # another build side by side: BIN=path among the assignments
			bin=$(echo "$envs" | tr ',' '\n' | sed -n 's/^BIN=//p')
			envs=$(echo "$envs" | tr ',' '\n' | grep -v '^BIN=' | paste -sd, -) ;;
		esac
		j=$(env $(echo "$envs" | tr ',' ' ') timeout 60 "$bin" cpu-moe --format "$fmt" --json "$@" 2>"$out/err.txt" | tr -d "\n")
		rc=$?
		printf '{"round": %d, "label": "%s", "format": "%s", "env": "%s", "rc": %d, "run": %s}\n' \
			"$round" "$label" "$fmt" "$envs" "$rc" "${j:-null}" >> "$out/runs.jsonl"
	done
done
python3 "$here/cpu_moe_ab_summary.py" "$out/runs.jsonl" | tee "$out/summary.txt"
