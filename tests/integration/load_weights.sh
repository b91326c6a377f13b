#!/bin/sh
# load-weights end to end: every make-checkpoint architecture loads in all three modes with
# equal checksums; FTW cleanup and reuse; a reordering bug is reported BAD with exit 1; a
# hostile checkpoint is refused with a clear error; the worker protocol on --result-fd.
BUILD=${BUILD:-build}
ft=$BUILD/bin/ftbench
fth=$BUILD/tests/integration/ftbench_hooks # the same ftbench with the test fault hooks
tmp=$(mktemp -d /tmp/ftlw_it_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../lib/tap.sh"
TAP_SHOW=

for arch in qwen3-moe mixtral deepseek-v3 gpt-oss; do
	m=$tmp/$arch
	if ! $ft make-checkpoint --arch "$arch" --out "$m" --layers 3 --experts 4 --hidden 256 --inter 128 \
		--shard-mib 1 --json >"$tmp/mk.json" 2>"$tmp/err"; then
		nok "make-checkpoint $arch: $(cat "$tmp/err")"; continue
	fi
	$ft load-weights --model "$m" --modes baseline,parallel,ftw --workers 3 --chunk-mib 1 --shard-gib 1 \
		--ftw-dir "$tmp/ftw_$arch" --json >"$tmp/lw.json" 2>"$tmp/err"
	rc=$?
	good=$(grep -c '"checksum_ok": true' "$tmp/lw.json")
	if [ $rc -eq 0 ] && [ "$good" -eq 3 ] && grep -q '"ok": true' "$tmp/lw.json"; then
		ok "load-weights $arch: baseline, parallel, ftw agree"
	else
		nok "load-weights $arch: exit $rc, $good rows ok: $(cat "$tmp/err")"
	fi
	if [ -e "$tmp/ftw_$arch" ]; then nok "ftw dir of $arch not removed"; else ok "ftw dir of $arch removed"; fi
done

m=$tmp/qwen3-moe
# --keep-ftw keeps the conversion and a second run reuses it
$ft load-weights --model "$m" --modes ftw --ftw-dir "$tmp/keep" --keep-ftw >/dev/null 2>&1 &&
$ft load-weights --model "$m" --modes ftw,auto --ftw-dir "$tmp/keep" --keep-ftw --json >"$tmp/lw.json" 2>/dev/null &&
grep -q '"reused": true' "$tmp/lw.json" && [ -e "$tmp/keep/freetoken_weight.json" ] &&
	ok "--keep-ftw keeps and reuses the FTW directory" || nok "--keep-ftw"

# a reordering bug in one reader: BAD and exit 1
FTBENCH_LW_FAULT=swap-experts:parallel $fth load-weights --model "$m" --modes parallel >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'parallel .*BAD' "$tmp/out" && grep -q 'checksum mismatch' "$tmp/err"; then
	ok "reordered experts reported BAD, exit 1"
else
	nok "reordered experts: exit $rc: $(cat "$tmp/out" "$tmp/err")"
fi

# ftw convert on the command line, and load-weights refuses an FTW directory as the model
$ft ftw convert "$m" "$tmp/conv" --shard-gib 1 >/dev/null 2>&1 && [ -e "$tmp/conv/freetoken_weight.json" ] &&
	ok "ftw convert" || nok "ftw convert"
$ft load-weights --model "$tmp/conv" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'FTW directory' "$tmp/err" && ok "FTW dir as --model refused" || nok "FTW dir as --model: $(cat "$tmp/err")"

# a hostile shard: data_offsets past the end of the file
h=$tmp/hostile
mkdir -p "$h"
cp "$m/config.json" "$h/"
hdr='{"model.layers.0.mlp.experts.0.gate_proj.weight":{"dtype":"BF16","shape":[128,256],"data_offsets":[0,65536]}}'
len=$(printf '%s' "$hdr" | wc -c)
{ printf "$(printf '\\%03o' $((len % 256)) $((len / 256)) 0 0 0 0 0 0)"; printf '%s' "$hdr"; head -c 100 /dev/zero; } >"$h/model.safetensors"
$ft load-weights --model "$h" --modes baseline >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q 'past the end of the data' "$tmp/err" && ok "hostile header refused: $(head -c 160 "$tmp/err")" ||
	nok "hostile header: exit $rc: $(cat "$tmp/err")"

# usage errors exit 2
$ft load-weights --model "$m" --modes bogus >/dev/null 2>&1; [ $? -eq 2 ] && ok "bad --modes exits 2" || nok "bad --modes"
$ft make-checkpoint --arch qwen3-moe --out "$m" >/dev/null 2>&1; [ $? -eq 2 ] && ok "make-checkpoint into a non-empty dir exits 2" || nok "non-empty out"
$ft make-checkpoint --arch llama --out "$tmp/x" >/dev/null 2>&1; [ $? -eq 2 ] && ok "unknown arch exits 2" || nok "unknown arch"

# the daemon's worker protocol: progress and result lines on --result-fd
$ft load-weights --model "$m" --modes parallel --result-fd 3 3>"$tmp/fd3" >/dev/null 2>&1
grep -q '"type": *"progress"' "$tmp/fd3" && grep -q '"type": *"result"' "$tmp/fd3" &&
	ok "--result-fd carries progress and result" || nok "--result-fd: $(head -c 300 "$tmp/fd3")"

# the conversion writes only into a fresh directory it makes and
# removes only that; an existing --ftw-dir (even the model itself) keeps every file it had, and
# links planted where fixed names used to be are never followed
sums() { (cd "$1" && find . -type f -exec sha1sum {} + | sort; find . | sort) 2>&1; }
before=$(sums "$m")
$ft load-weights --model "$m" --modes ftw --ftw-dir "$m" >/dev/null 2>"$tmp/err"
rc=$?
after=$(sums "$m")
[ $rc -eq 0 ] && [ "$before" = "$after" ] && ok "--ftw-dir = the model: the checkpoint is untouched" ||
	nok "--ftw-dir = the model: exit $rc, checkpoint changed: $(cat "$tmp/err")"
mkdir -p "$tmp/victim" "$tmp/own"
echo precious >"$tmp/victim/keep.txt"
echo mine >"$tmp/own/notes.txt"
ln -s "$tmp/victim/keep.txt" "$tmp/own/freetoken-00000.ftw"
ln -s "$tmp/victim" "$tmp/own/ftw-qwen3-moe"
$ft load-weights --model "$m" --modes ftw --ftw-dir "$tmp/own" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && [ "$(cat "$tmp/victim/keep.txt")" = precious ] && [ "$(cat "$tmp/own/notes.txt")" = mine ] &&
	[ -L "$tmp/own/freetoken-00000.ftw" ] && [ "$(ls "$tmp/victim")" = keep.txt ] &&
	[ "$(ls -A "$tmp/own" | sort | tr '\n' ' ')" = "freetoken-00000.ftw ftw-qwen3-moe notes.txt " ] &&
	ok "an existing --ftw-dir with planted links: nothing there written, followed or removed" ||
	nok "planted links in --ftw-dir: exit $rc: $(ls -la "$tmp/own" "$tmp/victim"; cat "$tmp/err")"
# the default place: a link planted at the old fixed name /var/tmp/ftw_<model name> is ignored
name=ftlwtest$$
cp -r "$m" "$tmp/$name"
ln -s "$tmp/victim" "/var/tmp/ftw_$name" 2>/dev/null
$ft load-weights --model "$tmp/$name" --modes ftw >/dev/null 2>"$tmp/err"
rc=$?
left=$(ls -d /var/tmp/ftw_$name.* 2>/dev/null)
rm -f "/var/tmp/ftw_$name"
[ $rc -eq 0 ] && [ "$(ls "$tmp/victim")" = keep.txt ] && [ -z "$left" ] &&
	ok "default FTW directory taken by a planted link: a fresh one beside it, removed, the link not followed" ||
	nok "default FTW directory: exit $rc, left $left, victim: $(ls "$tmp/victim"); $(cat "$tmp/err")"
echo "1..$n"
