#!/bin/bash
# The seed engine (FreeToken) on the GPU machine, as an outside reference: install its
# missing wheels, unpack its source, build its two C++ extensions (torch's extension
# builder), then run the stages asked for. Nothing of FreeToken is in this tree: XFER
# holds what bench/engines/pack.sh put there (its `git archive`, wheels, our scripts and
# binaries), and everything is unpacked under /tmp.
#
# usage: device.sh XFER OUT STAGE...
# Everything is written under /tmp/work (names below); at the end (and on an error exit)
# OUT gets two files: results.tar.gz (/tmp/work) and, with the stage keep, cache.tar.gz.
#   moe      bench/engines/freetoken_moe.py $MOE_ARGS -> OUT/moe.json (its log: moe.log)
#   replay   ftbench replay --cpu-kernel (the engine's layer steps) $REPLAY_ARGS, its routing
#            saved, then the harness on those traces ($MOE_ARGS) and compare_replay.py's table
#            -> OUT/replay.json, moe.json (lsprobe.txt: the layer-step probe alone, bf16; LSPROBE=0
#            skips it); MOE_JSON=FILE compares with an earlier call's harness run instead; the
#            replay's best f at each point is the harness's --candidates (for its --confirm)
#   probe    the seed CPU kernel driver alone, bf16 and nvfp4 -> OUT/probe.jsonl
#   bw       ftbench bw --dtype bf16,nvfp4 $BW_ARGS -> OUT/bw_ours.json, then the seed's own
#            ft bench bw (benchbw.py) -> OUT/bw_seed.json, in the same call
#   bwk      ftbench bw --cpu-kernel "python3 XFER/engines/freetoken_cpu_moe.py" -> bw_engine.json
#   server   the seed's server on a config-only model with its dummy weights, driven by
#            ftbench decode (offload, hybrid; SERVER_COMPARE=moe-backend=offload,hybrid:
#            decode --compare over SERVER_CYCLES) -> OUT/decode.jsonl (logs: server.log);
#            SERVER_EXTRA: more words for the server's command line (end it with a blank), e.g.
#            "--disable-moe-prefill-overlap " for a cache under 2 x E slots (the seed asserts it)
#   keep     the built extensions and JIT caches -> OUT/cache.tar.gz (carry it next time)
set -u
X=$(cd "${1:?usage: device.sh XFER OUT STAGE...}" && pwd)
RES=${2:?usage: device.sh XFER OUT STAGE...}
shift 2
OUT=/tmp/work
mkdir -p "$RES" "$OUT"
trap 'tar -czf "$RES/results.tar.gz" -C "$OUT" . 2>/dev/null' EXIT
T0=$(date +%s)
log() { echo "== $(date -u +%T) +$(( $(date +%s) - T0 ))s $*"; }
export PYTHONUNBUFFERED=1
# our binaries' shared libraries, for them alone (python keeps the system's)
FTB=(env "LD_LIBRARY_PATH=$X/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$X/bin/ftbench")
mkdir -p "$OUT" /tmp/ft /tmp/jit
log setup
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
	--target /tmp/site "$X"/whl/*.whl >"$OUT/pip.log" 2>&1 || { tail -5 "$OUT/pip.log"; exit 1; }
tar -xzf "$X/freetoken.tar.gz" -C /tmp/ft
export PYTHONPATH=/tmp/site:/tmp/ft/python
export FREETOKEN_SRC=/tmp/ft FREETOKEN_COMMIT=$(cat "$X/COMMIT")
export TVM_FFI_CACHE_DIR=/tmp/jit/tvm TRITON_CACHE_DIR=/tmp/jit/triton
PY=$(command -v python3)
if [ -f "$X/cache/cache.tar.gz" ]; then
	tar -xzf "$X/cache/cache.tar.gz" -C / && log "carried extensions and JIT caches unpacked"
fi
if ! ls /tmp/ft/python/freetoken/kernel/_cpu_moe*.so >/dev/null 2>&1; then
	log "building the seed's C++ extensions"
	(cd /tmp/ft && MAX_JOBS=16 $PY setup.py build_ext --inplace) >"$OUT/build.log" 2>&1 \
		|| { tail -20 "$OUT/build.log"; exit 1; }
fi
ls /tmp/ft/python/freetoken/kernel/*.so
log "setup done"
E=$X/engines
for stage in "$@"; do
	case $stage in
	moe)
		log "moe ${MOE_ARGS:-}"
		# shellcheck disable=SC2086
		timeout "${MOE_TIMEOUT:-400}" $PY "$E/freetoken_moe.py" ${MOE_ARGS:-} --out "$OUT/moe.json" \
			>"$OUT/moe.log" 2>&1
		echo "moe rc=$?"; grep -v '^\[' "$OUT/moe.log" | tail -15
		$PY "$E/summarize.py" "$OUT/moe.json" 2>&1 | tail -60
		;;
	replay)
		# ftbench replay with the engine's CPU path (--cpu-kernel: the probe's layer steps), its
		# routing saved, then the seed engine's own MoE decode on those traces, side by side
		# (compare_replay.py). REPLAY_ARGS go to ftbench replay, MOE_ARGS to the harness: give
		# both the same fractions, and the harness --warmup = replay's warmup + 4.
		if [ "${LSPROBE:-1}" != 0 ]; then
			# LSPROBE_SPREADS: the fetch measure's spreads to compare, each "exact" or
			# "binomial", optionally :SLOTS (the cache for the fetch pairs); "default" (the
			# default): the driver's, as ftbench asks
			for v in ${LSPROBE_SPREADS:-default}; do
				sp=${v%%:*} sl=0 extra=""
				[ "$sp" != "$v" ] && sl=${v#*:}
				[ "$sp" != default ] && extra=',"fetch_spread":"'"$sp"'","fetch_slots":'"$sl"
				log "layer-step probe alone (bf16; diagnostics; fetch spread $sp, slots $sl)"
				echo '{"protocol":"ftbench-cpu-kernel","version":1,"measure":"layer_step","format":"bf16","hidden":2048,"inter":768,"experts":128,"top_k":8,"threads":0,"warmup":8,"steps":32,"layers":16,"batch":1,"routes":[0,1,2],"fetches":[1,2,4,8]'"$extra"'}' |
					timeout 200 $PY "$E/freetoken_cpu_moe.py" >>"$OUT/lsprobe.txt" 2>&1
				echo "layer-step probe rc=$?"; tail -1 "$OUT/lsprobe.txt" | $PY -c 'import json,sys; r=json.loads(sys.stdin.read())["layer_step"]; print("base", r["base_us"], [(x["routes"], x["us"]) for x in r["routes"]]); [print(x) for x in r["fetch"]]' 2>&1 | cut -c1-400
			done
		fi
		log "ftbench replay --cpu-kernel ${REPLAY_ARGS:-}"
		mkdir -p "$OUT/tr"
		# shellcheck disable=SC2086
		timeout "${REPLAY_TIMEOUT:-300}" "${FTB[@]}" replay ${REPLAY_ARGS:-} --save-trace "$OUT/tr/t.json" \
			--cpu-kernel "env -u LD_LIBRARY_PATH $PY $E/freetoken_cpu_moe.py" --no-store --json \
			>"$OUT/replay.json" 2>"$OUT/replay.err"
		echo "replay rc=$?"; grep -v INFO "$OUT/replay.err" | tail -8
		if [ -n "${MOE_JSON:-}" ]; then # the engine's decode of the same traces from an earlier call
			cp "$MOE_JSON" "$OUT/moe.json"
		else
			T=""
			for f in "$OUT"/tr/*.json; do T="$T --trace $f"; done
			log "the engine on the replay's traces ${MOE_ARGS:-}"
			# shellcheck disable=SC2086
			timeout "${MOE_TIMEOUT:-400}" $PY "$E/freetoken_moe.py" ${MOE_ARGS:-} $T \
				--candidates "$OUT/replay.json" --out "$OUT/moe.json" \
				>"$OUT/moe.log" 2>&1
			echo "moe rc=$?"; grep -v '^\[' "$OUT/moe.log" | grep -v INFO | tail -5
		fi
		$PY "$E/compare_replay.py" "$OUT/replay.json" "$OUT/moe.json" 2>&1 | tail -20
		;;
	probe)
		for fmt in bf16 nvfp4; do
			log "probe $fmt"
			case $fmt in bf16) g='"hidden":2048,"inter":768';; nvfp4) g='"hidden":3072,"inter":1536';; esac
			echo "{\"protocol\":\"ftbench-cpu-kernel\",\"version\":1,\"format\":\"$fmt\",$g,\"experts\":128,\"top_k\":8,\"activation\":\"silu\",\"threads\":0,\"warmup\":8,\"steps\":64}" |
				timeout 120 $PY "$E/freetoken_cpu_moe.py" >>"$OUT/probe.jsonl" 2>"$OUT/probe_$fmt.err"
			echo "probe $fmt rc=$?"; tail -c 600 "$OUT/probe.jsonl"; tail -3 "$OUT/probe_$fmt.err"
		done
		;;
	bw)
		log "ftbench bw"
		# shellcheck disable=SC2086
		timeout 200 "${FTB[@]}" bw --dtype bf16,nvfp4 ${BW_ARGS:-} -o "$OUT/bw_ours.json" \
			>"$OUT/bw_ours.txt" 2>&1; echo "ftbench bw rc=$?"; tail -12 "$OUT/bw_ours.txt"
		log "seed bw"
		timeout 200 $PY -c 'import sys; from freetoken.moe.benchbw import main; sys.exit(main(sys.argv[1:]))' \
			--dtype bf16,nvfp4 ${SEEDBW_ARGS:-} -o "$OUT/bw_seed.json" >"$OUT/bw_seed.txt" 2>&1
		echo "seed bw rc=$?"; tail -14 "$OUT/bw_seed.txt"
		;;
	bwk)
		log "ftbench bw --cpu-kernel (the seed's executor)"
		# shellcheck disable=SC2086
		timeout "${BWK_TIMEOUT:-300}" "${FTB[@]}" bw --dtype bf16,nvfp4 ${BW_ARGS:-} \
			--cpu-kernel "env -u LD_LIBRARY_PATH $PY $E/freetoken_cpu_moe.py" -o "$OUT/bw_engine.json" \
			>"$OUT/bw_engine.txt" 2>&1; echo "ftbench bw --cpu-kernel rc=$?"; tail -14 "$OUT/bw_engine.txt"
		;;
	seedbw)
		log "seed bw"
		timeout "${SEEDBW_TIMEOUT:-200}" $PY -c 'import sys; from freetoken.moe.benchbw import main; sys.exit(main(sys.argv[1:]))' \
			--dtype bf16,nvfp4 ${SEEDBW_ARGS:-} -o "$OUT/bw_seed.json" >"$OUT/bw_seed.txt" 2>&1
		echo "seed bw rc=$?"; tail -14 "$OUT/bw_seed.txt"
		;;
	moeprof)
		# the harness with an arm at each profile's fetch fraction, read by the seed's own
		# reader: the engine-kernel profile (bwk), ours (its *_ftbench figures moved back into
		# the seed-read fields) and the seed's own bw profile (seedbw); PROFILES="engine ours seed"
		# names the ones to run (default all that exist)
		$PY - "$OUT/bw_engine.json" "$OUT/bw_ours_from_engine.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for e in list(d["dtype_kernels"].values()) + [k for w in d["workloads"].values() for k in w["kernels"].values()]:
    for f in ("cpu_moe_gbs", "cpu_moe_overlap_gbs", "ratio", "recommended"):
        if f + "_ftbench" in e:
            e[f] = e[f + "_ftbench"]
json.dump(d, open(sys.argv[2], "w"))
PYEOF
		P=""
		for p in engine=bw_engine.json ours=bw_ours_from_engine.json seed=bw_seed.json; do
			case " ${PROFILES:-engine ours seed} " in *" ${p%%=*} "*) ;; *) continue ;; esac
			[ -f "$OUT/${p#*=}" ] && P="$P --profile ${p%%=*}=$OUT/${p#*=}"
		done
		log "moe with profile arms:$P ${MOEPROF_ARGS:-}"
		# shellcheck disable=SC2086
		timeout "${MOE_TIMEOUT:-400}" $PY "$E/freetoken_moe.py" ${MOEPROF_ARGS:-} $P --out "$OUT/moe_prof.json" \
			>"$OUT/moe_prof.log" 2>&1
		echo "moe_prof rc=$?"; grep -v '^\[' "$OUT/moe_prof.log" | grep -v INFO | tail -8
		$PY "$E/summarize.py" "$OUT/moe_prof.json" 2>&1 | tail -30
		;;
	server)
		log "server: model dir"
		M=/tmp/ftmodel
		$PY "$E/freetoken_model.py" "$M" --layers "${SERVER_LAYERS:-16}" --experts "${SERVER_EXPERTS:-128}" || exit 1
		log "server: ftbench decode (offload, hybrid)"
		# shellcheck disable=SC2086
		if [ -n "${SERVER_COMPARE:-}" ]; then # decode --compare, e.g. moe-backend=offload,hybrid
			ARMS="--compare $SERVER_COMPARE --cycles ${SERVER_CYCLES:-3}"
		else
			ARMS="--backend ${SERVER_BACKENDS:-offload,hybrid}"
		fi
		# shellcheck disable=SC2086
		timeout "${SERVER_TIMEOUT:-300}" "${FTB[@]}" decode --model "$M" $ARMS \
			--server-cmd "env -u LD_LIBRARY_PATH $PY -m freetoken.cli serve --model {model} --host {host} --port {port} --dummy-weight ${SERVER_EXTRA:-}{flags}" \
			--cache "${SERVER_CACHE:-819}" --decode "${SERVER_DECODE:-128}" --server-timeout 240 \
			--term-grace 10 --kill-grace 5 --log-dir "$OUT" --json "$OUT/decode.jsonl" ${SERVER_ARGS:-} \
			>"$OUT/decode.txt" 2>&1
		echo "decode rc=$?"; tail -20 "$OUT/decode.txt"
		for f in "$OUT"/*.log; do case $f in *server*|*freetoken*) echo "-- $f"; tail -25 "$f";; esac; done
		;;
	keep)
		tar -czf "$RES/cache.tar.gz" /tmp/jit /tmp/ft/python/freetoken/kernel/*.so 2>/dev/null
		ls -la "$RES/cache.tar.gz"
		;;
	*) echo "device.sh: unknown stage $stage" >&2; exit 2 ;;
	esac
	# after every stage, so that a call stopped at its limit still brings back what was done
	tar -czf "$RES/results.tar.gz" -C "$OUT" . 2>/dev/null
done
log done
