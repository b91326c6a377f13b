#!/bin/sh
# The golden reader corpus (tests/fixtures/profiles/golden/EXPECTED, answers of the seed's reader
# written by hand from reference §5) through the CLI: `ftbench profile recommend|fetch-fraction
# FORMAT --json` with the file as FREETOKEN_BENCHBW_PATH, the caller GPU-less ("-") or the
# fake GPU "Fake GPU" (FTBENCH_TEST_FAKE_GPUS=1). tests/unit/test_profile.c checks the same
# lines through libftprofile. Prints "ok ..." / "not ok ..." lines.
set -u
B=${BUILD:-build}
FT="$(pwd)/$B/tests/integration/ftbench_hooks" # the test build: fake GPUs (cli.h)
G="$(pwd)/tests/fixtures/profiles/golden"
T=$(mktemp -d /tmp/ftprof-golden-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export XDG_CACHE_HOME="$T/cache" FREETOKEN_BENCHBW_SYSDIR="$T/sys" CUDA_VISIBLE_DEVICES=
n=0 files=
echo "1..$(grep -v '^#' "$G/EXPECTED" | grep -c '[^[:space:]]')"
grep -v '^#' "$G/EXPECTED" | while read -r file caller fmt rec frac rest; do
	[ -n "$file" ] || continue
	case $caller in fake) fake=1 ;; *) fake=0 ;; esac
	FREETOKEN_BENCHBW_PATH="$G/$file" FTBENCH_TEST_FAKE_GPUS=$fake "$FT" profile recommend "$fmt" --json \
		>"$T/rec" 2>"$T/err1"
	rc1=$?
	FREETOKEN_BENCHBW_PATH="$G/$file" FTBENCH_TEST_FAKE_GPUS=$fake "$FT" profile fetch-fraction "$fmt" --json \
		>"$T/frac" 2>"$T/err2"
	rc2=$?
	n=$((n + 1))
	if python3 - "$T/rec" "$T/frac" "$rec" "$frac" "$rc1" "$rc2" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1])); frac = json.load(open(sys.argv[2]))
want_rec, want_frac, rc1, rc2 = sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
ok = rec.get("recommendation") == want_rec and rc1 == (1 if want_rec == "none" else 0)
f = frac.get("fetch_fraction", "missing")
if want_frac == "none":
    ok = ok and f is None and rc2 == 1
else:
    ok = ok and isinstance(f, (int, float)) and abs(f - float(want_frac)) < 1e-6 and rc2 == 0
sys.exit(0 if ok else 1)
PY
	then
		echo "ok $n - $file $caller $fmt: $rec $frac"
	else
		echo "not ok $n - $file $caller $fmt: want $rec $frac (exit $rc1/$rc2)"
		sed 's/^/#   /' "$T/rec" "$T/err1" "$T/frac" "$T/err2" | head -n 20
	fi
done
