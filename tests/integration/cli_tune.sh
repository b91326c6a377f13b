#!/bin/sh
# --tune key=value: the CPU MoE executor's knobs reach it from ftbench cpu-moe and bw;
# --tune help lists the table; a bad key or value is named with what it accepts (exit 2);
# FREETOKEN_CPU_MOE_ISA (the seed's) still forces the tier, --tune isa wins over it; the other
# FREETOKEN_CPU_MOE_* variables are refused.
set -u
B=${BUILD:-build}
FT="$(pwd)/$B/bin/ftbench"
T=$(mktemp -d /tmp/ft-cli-tune-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export XDG_CACHE_HOME="$T/cache" FREETOKEN_BENCHBW_SYSDIR="$T/sys" CUDA_VISIBLE_DEVICES=
for v in $(env | sed -n 's/^\(FREETOKEN_CPU_MOE_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset FREETOKEN_BENCHBW_PATH FREETOKEN_BENCH_PROGRESS
echo "1..16"
n=0
check() { desc=$1; shift; n=$((n + 1)); if "$@"; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; sed 's/^/#   /' "$T/err" 2>/dev/null | head -n 20; fi; }
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
SMALL="--format nvfp4 --warmup 0 --working-set-mib 8 --read-passes 0 --repeat 2 --json"

"$FT" cpu-moe --tune help >"$T/out" 2>"$T/err"; rc=$?
check "--tune help: exit 0" [ $rc -eq 0 ]
check "--tune help: every key with its default and range" sh -c "
	for k in isa sched item_kb item2_kb tail_div pf_dist pf_far mx_pf_dist pf_scales mx_vbmi trace; do
		grep -Eq \"^  \$k +default \" '$T/out' || exit 1
	done
	grep -Eq '^  pf_dist +default 4096 +an integer from 0 to 65536' '$T/out'"
"$FT" bw --tune help >"$T/out2" 2>"$T/err"; rc=$?
check "bw --tune help: the same table" sh -c "[ $rc -eq 0 ] && cmp -s '$T/out' '$T/out2'"

"$FT" cpu-moe --tune nosuch=1 >"$T/out" 2>"$T/err"; rc=$?
check "unknown key: exit 2, the key and the keys named" sh -c "[ $rc -eq 2 ] && grep -q \"unknown key 'nosuch' (keys: isa, sched\" '$T/err'"
"$FT" cpu-moe --tune pf_far=99999 >"$T/out" 2>"$T/err"; rc=$?
check "out of range: exit 2, value and range named" sh -c "[ $rc -eq 2 ] && grep -q \"pf_far='99999': expected an integer from 0 to 65536\" '$T/err'"
"$FT" cpu-moe --tune sched=dyn >"$T/out" 2>"$T/err"; rc=$?
check "bad word: exit 2, the words named" sh -c "[ $rc -eq 2 ] && grep -q \"sched='dyn': expected one of auto|static|dynamic\" '$T/err'"
"$FT" cpu-moe --tune trace >"$T/out" 2>"$T/err"; rc=$?
check "no '=': exit 2" sh -c "[ $rc -eq 2 ] && grep -q \"'trace': expected key=value\" '$T/err'"
"$FT" bw --tune tail_div=0 >"$T/out" 2>"$T/err"; rc=$?
check "bw: a bad --tune is refused before any work" sh -c "[ $rc -eq 2 ] && grep -q \"tail_div='0': expected an integer from 1 to 64\" '$T/err'"

"$FT" cpu-moe $SMALL --tune isa=scalar >"$T/out" 2>"$T/err"
check "--tune isa=scalar: auto runs the scalar tier" [ "$(jget "$T/out" 'd["results"][0]["isa"]')" = scalar ]
FREETOKEN_CPU_MOE_ISA=scalar "$FT" cpu-moe $SMALL >"$T/out" 2>"$T/err"
check "FREETOKEN_CPU_MOE_ISA=scalar: the same" [ "$(jget "$T/out" 'd["results"][0]["isa"]')" = scalar ]
best=$("$FT" cpu-moe $SMALL 2>"$T/err" | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["isa"])')
FREETOKEN_CPU_MOE_ISA=scalar "$FT" cpu-moe $SMALL --tune isa=auto >"$T/out" 2>"$T/err"
check "--tune isa=auto wins over the variable" [ "$(jget "$T/out" 'd["results"][0]["isa"]')" = "$best" ]
FREETOKEN_CPU_MOE_ISA=mmx "$FT" cpu-moe $SMALL >"$T/out" 2>"$T/err"; rc=$?
check "FREETOKEN_CPU_MOE_ISA=mmx: exit 2 naming it" sh -c "[ $rc -eq 2 ] && grep -q \"FREETOKEN_CPU_MOE_ISA='mmx'\" '$T/err'"
FREETOKEN_CPU_MOE_SCHED=static "$FT" cpu-moe $SMALL >"$T/out" 2>"$T/err"; rc=$?
check "FREETOKEN_CPU_MOE_SCHED: refused, the --tune spelling given" sh -c "[ $rc -eq 2 ] && grep -q -- '--tune sched=static' '$T/err'"
FREETOKEN_CPU_MOE_LEAN=0 "$FT" cpu-moe $SMALL >"$T/out" 2>"$T/err"; rc=$?
check "a removed switch's variable: refused" sh -c "[ $rc -eq 2 ] && grep -q 'FREETOKEN_CPU_MOE_LEAN: not a setting of this build' '$T/err'"

# trace=1 reaches the executor: the dynamic step's parts are printed (sched=dynamic: this box
# may have fewer than 8 cores)
"$FT" cpu-moe $SMALL --isa auto --tune sched=dynamic --tune trace=1 >"$T/out" 2>"$T/err"
check "--tune trace=1 sched=dynamic: the step is traced" sh -c "grep -q '\"trace\"' '$T/out'"
"$FT" cpu-moe $SMALL --isa auto >"$T/out" 2>"$T/err"
check "without it: no trace" sh -c "! grep -q '\"trace\"' '$T/out'"
