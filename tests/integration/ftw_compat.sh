#!/bin/sh
# FTW both ways with the seed system (reference §7) and both gpt-oss checkpoint layouts (§1):
# - both gpt-oss layouts (released mxfp4, transformers bf16) load in baseline, parallel and ftw
#   modes with equal checksums;
# - an FTW written by `ftbench ftw convert` follows §7's rules (ftw_seed.py check: torch dtype
#   names, MoE layers 0..n-1 also with a dense first layer, counts, metadata with sub-folders) and
#   its banks equal an independent reading of the checkpoint (gpt-oss bf16: de-interleaved);
# - FTW written the way the seed's converter writes it (ftw_seed.py write: per-layer and flat
#   banks, flat alphas, tensors split across 64 KiB shards) read by ftbench give the checkpoint's
#   checksums, also through the buffered fallback; so do seed FTW files of every §1 format (random
#   banks, nvfp4_marlin in its own tile shapes with its alphas) against the §7 checksum;
# - an FTW in ftbench's older spelling (bf16/u8 dtypes, banks numbered by model layer) still loads;
#   a seed FTW missing a layer is refused with a reason.
BUILD=${BUILD:-build}
ft=$BUILD/bin/ftbench
fth=$BUILD/tests/integration/ftbench_hooks # the same ftbench with the test fault hooks
py="python3 $(dirname "$0")/ftw_seed.py"
tmp=$(mktemp -d /tmp/ftw_compat_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../lib/tap.sh"
TAP_SHOW=
# checksums of one load-weights worker as one JSON line, from its result message on --result-fd
# (its error message, and its stderr, into $tmp/cks_err): [ft=BINARY] cks MODE MODEL [FTW_DIR]
cks() {
	${ft:?} load-weights --worker "$1" --model "$2" ${3:+--ftw-dir "$3"} --workers 3 --chunk-mib 1 --result-fd 3 \
		3>"$tmp/cks_out" >/dev/null 2>"$tmp/cks_err"
	python3 -c 'import json,sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    if m["type"] == "result": print(json.dumps(m["result"]["checksums"], sort_keys=True))
    if m["type"] == "error": print(m["message"], file=sys.stderr)' "$tmp/cks_out" 2>>"$tmp/cks_err"
}

for arch in qwen3-moe deepseek-v3 gpt-oss gpt-oss-bf16; do
	m=$tmp/$arch
	if ! $ft make-checkpoint --arch "$arch" --out "$m" --layers 3 --experts 4 --hidden 256 --inter 128 \
		--shard-mib 1 >/dev/null 2>"$tmp/err"; then
		nok "make-checkpoint $arch: $(cat "$tmp/err")"; continue
	fi
	# metadata in sub-folders, as DeepSeek-V4's inference/ and encoding/
	mkdir -p "$m/inference" "$m/encoding/x"
	echo '{"dim": 256}' >"$m/inference/config.json"
	echo 'tokens' >"$m/encoding/x/vocab.txt"
	echo '{}' >"$m/tokenizer.json"
	case $arch in gpt-oss*)
		$ft load-weights --model "$m" --modes baseline,parallel,ftw --workers 3 --chunk-mib 1 --shard-gib 1 \
			--ftw-dir "$tmp/lw_$arch" --json >"$tmp/lw.json" 2>"$tmp/err"
		rc=$?
		good=$(grep -c '"checksum_ok": true' "$tmp/lw.json")
		if [ $rc -eq 0 ] && [ "$good" -eq 3 ] && grep -q '"ok": true' "$tmp/lw.json"; then
			ok "$arch: baseline, parallel and ftw agree ($(grep -o '"format": "[a-z0-9_]*"' "$tmp/lw.json" | head -1))"
		else
			nok "$arch: load-weights exit $rc, $good rows ok: $(cat "$tmp/err")"
		fi
		left=$(find "$tmp/lw_$arch" ! -type d 2>/dev/null | head -3)
		[ -z "$left" ] && ok "$arch: the conversion is removed, metadata sub-folders included" ||
			nok "$arch: left after load-weights: $left";;
	esac
	# what ftbench writes, against §7 and an independent reading of the checkpoint
	if $ft ftw convert "$m" "$tmp/ftw_$arch" --shard-gib 1 >/dev/null 2>"$tmp/err" &&
		$py check "$m" "$tmp/ftw_$arch" >"$tmp/out" 2>&1; then
		ok "$arch: $(cat "$tmp/out")"
	else
		nok "$arch: ftbench's FTW: $(cat "$tmp/err" "$tmp/out")"
	fi
	base=$(cks baseline "$m")
	[ -n "$base" ] || { nok "$arch: baseline worker: $(cat "$tmp/cks_err")"; continue; }
	# what the seed's converter writes, read by ftbench
	for layout in per-layer flat; do
		s=$tmp/seed_${arch}_$layout
		if ! $py write "$m" "$s" "$layout" 64 >"$tmp/out" 2>&1; then
			nok "$arch $layout: writing the seed FTW: $(cat "$tmp/out")"; continue
		fi
		got=$(cks ftw "$m" "$s")
		[ -n "$got" ] && [ "$got" = "$base" ] && ok "$arch: seed FTW ($layout, $(ls "$s"/*.ftw | wc -l) shards) gives the checkpoint's checksums" ||
			nok "$arch $layout: seed FTW checksums '$got' vs '$base': $(cat "$tmp/cks_err")"
	done
	got=$(FTLOAD_TEST_EINVAL=1 ft=$fth cks ftw "$m" "$tmp/seed_${arch}_flat")
	[ -n "$got" ] && [ "$got" = "$base" ] && ok "$arch: seed FTW (flat) through the buffered fallback" ||
		nok "$arch: flat seed FTW with O_DIRECT refused: '$got': $(cat "$tmp/cks_err")"
done

# both gpt-oss layouts where H != 2I (above H = 2I: told apart by config.json and the biases)
for arch in gpt-oss gpt-oss-bf16; do
	m=$tmp/${arch}_h192
	if $ft make-checkpoint --arch "$arch" --out "$m" --layers 2 --experts 3 --hidden 192 --inter 128 \
		>/dev/null 2>"$tmp/err" && $ft ftw convert "$m" "$tmp/ftw_${arch}_h192" >/dev/null 2>>"$tmp/err" &&
		$py check "$m" "$tmp/ftw_${arch}_h192" >"$tmp/out" 2>&1 &&
		[ "$(cks baseline "$m")" = "$(cks parallel "$m")" ] && [ "$(cks baseline "$m")" = "$(cks ftw "$m" "$tmp/ftw_${arch}_h192")" ]; then
		ok "$arch, H 192 I 128: modes agree and $(cat "$tmp/out")"
	else
		nok "$arch, H 192 I 128: $(cat "$tmp/err" "$tmp/out" "$tmp/cks_err")"
	fi
done

# seed FTW of every §1 format (random banks; flat ones take the layer count from config.json),
# against the §7 checksum computed independently
for fmt in bf16 fp8_block q4_0 nvfp4 nvfp4_marlin mxfp4_triton ds_fp4; do
	for layout in per-layer flat; do
		s=$tmp/synth_${fmt}_$layout
		want=$($py synth "$fmt" "$s" "$layout" 64 2>"$tmp/err")
		got=$(cks ftw "$s" "$s")
		[ -n "$want" ] && [ "$got" = "$want" ] && ok "seed $fmt FTW ($layout) gives the §7 checksums" ||
			nok "seed $fmt FTW ($layout): '$got' vs '$want': $(cat "$tmp/err" "$tmp/cks_err")"
	done
done

# ftbench's older FTW spelling: dtype bf16, banks numbered by model layer (1, 2 after a dense layer 0)
m=$tmp/deepseek-v3
old=$tmp/old_ftw
cp -r "$tmp/ftw_deepseek-v3" "$old"
python3 - "$old/freetoken_weight.json" <<'EOF'
import json, re, sys
p = sys.argv[1]
j = json.load(open(p))
for t in j["tensors"]:
    if t["kind"] == "experts_bank":
        t["dtype"] = "bf16"
        t["name"] = re.sub(r"#L(\d{5})$", lambda m: "#L%05d" % (int(m.group(1)) + 1), t["name"])
for k in ("weight_names", "expert_bank_layer_ids"):
    j.pop(k)
json.dump(j, open(p, "w"))
EOF
got=$(cks ftw "$m" "$old")
[ -n "$got" ] && [ "$got" = "$(cks baseline "$m")" ] && ok "an FTW in ftbench's older spelling still loads" ||
	nok "older FTW: '$got': $(cat "$tmp/cks_err")"

# a seed FTW whose bank lacks a layer: refused, naming the bank
s=$tmp/seed_qwen3-moe_per-layer
python3 - "$s/freetoken_weight.json" <<'EOF'
import json, sys
p = sys.argv[1]
j = json.load(open(p))
j["tensors"] = [t for t in j["tensors"] if t["name"] != "down#L00001"]
json.dump(j, open(p, "w"))
EOF
got=$(cks ftw "$tmp/qwen3-moe" "$s")
[ -z "$got" ] && grep -q 'bank down has 2 entries for 3 layers' "$tmp/cks_err" && ok "a missing bank layer is refused: $(head -c 150 "$tmp/cks_err")" ||
	nok "missing layer: '$got': $(cat "$tmp/cks_err")"

# ... and one whose bank has a layer twice (and so lacks another): refused
python3 "$(dirname "$0")/ftw_seed.py" write "$tmp/qwen3-moe" "$tmp/dup" per-layer 64 >/dev/null 2>&1
python3 - "$tmp/dup/freetoken_weight.json" <<'PY'
import json, sys
p = sys.argv[1]
j = json.load(open(p))
for t in j["tensors"]:
    if t["name"] == "down#L00001":
        t["name"] = "down#L00000"
json.dump(j, open(p, "w"))
PY
got=$(cks ftw "$tmp/qwen3-moe" "$tmp/dup")
[ -z "$got" ] && grep -q 'down#L00000 appears twice' "$tmp/cks_err" && ok "a bank layer given twice is refused" ||
	nok "duplicate layer: '$got': $(cat "$tmp/cks_err")"
echo "1..$n"
