#!/bin/sh
# Every libFuzzer target tests/fuzz/fuzz_*.c, built with clang (-fsanitize=fuzzer,address,
# undefined) and run for a bounded time each (FT_FUZZ_SECONDS, default 10), seeded from
# tests/fuzz/seeds/<target>/ or tests/fuzz/<target without fuzz_>/ when that exists, with the
# dictionary tests/fuzz/<target without fuzz_>.dict when that exists. A target names what it
# links in its header comment (include paths: src/ and daemon/):
#   fuzz-srcs: src/....c ...      (compiled with the target, so they are instrumented too; @BUILD@
#                                  is the build directory, for a file the build generates)
#   fuzz-libs: -ljansson ...
# One TAP line per target. A target that cannot be built, a missing clang, a crash, a leak, a
# timeout or an abort is a failure (never a skip): `scripts/deps.sh` installs clang.
secs=${FT_FUZZ_SECONDS:-10}
BUILD=${BUILD:-build}
cd "$(dirname "$0")/../.." || exit 1
out=$BUILD/fuzz
mkdir -p "$out"
n=0 failed=0
targets=$(ls tests/fuzz/fuzz_*.c 2>/dev/null)
echo "1..$(echo "$targets" | grep -c .)"
for src in $targets; do
	name=$(basename "$src" .c)
	n=$((n + 1))
	if ! command -v clang >/dev/null 2>&1; then
		echo "not ok $n - $name: clang is not installed (run scripts/deps.sh as root)"
		failed=$((failed + 1)); continue
	fi
	srcs=$(sed -n 's/^.*fuzz-srcs:\([^*]*\).*$/\1/p' "$src" | tr '\n' ' ' | sed "s|@BUILD@|$BUILD|g")
	libs=$(sed -n 's/^.*fuzz-libs:\([^*]*\).*$/\1/p' "$src" | tr '\n' ' ')
	if [ -z "$srcs" ]; then
		echo "not ok $n - $name: names no fuzz-srcs: line"
		failed=$((failed + 1)); continue
	fi
	bin=$out/$name
	# shellcheck disable=SC2086
	if ! clang -std=gnu17 -D_GNU_SOURCE -DFT_VERSION='"fuzz"' -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -Isrc -Isrc/profile -Idaemon "$src" $srcs $libs -o "$bin" >"$out/$name.build.log" 2>&1; then
		echo "not ok $n - $name: does not build"
		sed 's/^/#   /' "$out/$name.build.log" | tail -n 20
		failed=$((failed + 1)); continue
	fi
	rm -rf "$out/$name.corpus"
	mkdir -p "$out/$name.corpus"
	seeds= dict= short=${name#fuzz_}
	[ -d "tests/fuzz/seeds/$name" ] && seeds="tests/fuzz/seeds/$name"
	[ -d "tests/fuzz/$short" ] && seeds="$seeds tests/fuzz/$short"
	[ -f "tests/fuzz/$short.dict" ] && dict="-dict=tests/fuzz/$short.dict"
	# shellcheck disable=SC2086
	if "$bin" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
		$dict -artifact_prefix="$out/$name-" "$out/$name.corpus" $seeds >"$out/$name.log" 2>&1; then
		runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$out/$name.log" | tail -n 1)
		if [ -n "$runs" ] && [ "$runs" -gt 0 ]; then
			echo "ok $n - $name: $runs runs in ${secs}s, no crash"
		else
			echo "not ok $n - $name: ran no input"; tail -n 20 "$out/$name.log" | sed 's/^/#   /'
			failed=$((failed + 1))
		fi
	else
		echo "not ok $n - $name: a crash, leak, timeout or abort (see $out/$name.log and $out/$name-*)"
		tail -n 30 "$out/$name.log" | sed 's/^/#   /'
		failed=$((failed + 1))
	fi
done
[ "$failed" -eq 0 ]
