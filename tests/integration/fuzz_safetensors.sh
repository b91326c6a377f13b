#!/bin/sh
# Fuzz the safetensors header parser for a bounded time (FT_FUZZ_SECONDS, default 10) with
# libFuzzer when clang can build it; otherwise say so (the cmocka mutation loop in
# tests/unit/test_safetensors.c always runs).
secs=${FT_FUZZ_SECONDS:-10}
BUILD=${BUILD:-build}
out=$BUILD/fuzz
mkdir -p "$out/corpus"
bin=$out/fuzz_safetensors
if ! command -v clang >/dev/null 2>&1; then
	echo "ok 1 fuzz_safetensors # SKIP clang not installed"
	exit 0
fi
if ! clang -std=gnu17 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
	tests/fuzz/fuzz_safetensors.c src/moe/safetensors.c src/util/fsutil.c -ljansson -o "$bin" 2>"$out/build.log"; then
	echo "ok 1 fuzz_safetensors # SKIP clang cannot build libFuzzer targets here"
	exit 0
fi
# seeds: a valid header and a few near misses (8 bytes of file size first)
seed() { printf '\377\377\0\0\0\0\0\0%s' "$2" > "$out/corpus/$1"; }
seed valid '{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,4],"data_offsets":[0,16]},"b":{"dtype":"U8","shape":[4],"data_offsets":[16,20]}}'
seed overlap '{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}}'
seed deep '{"a":{"b":{"c":[1]}}}'
if "$bin" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$out/" "$out/corpus" >"$out/fuzz.log" 2>&1; then
	echo "ok 1 fuzz_safetensors ($(grep -o 'Done [0-9]* runs' "$out/fuzz.log" | head -1) in ${secs}s)"
else
	echo "not ok 1 fuzz_safetensors: a crash or abort (see $out/fuzz.log and the crash-* file)"
	tail -n 30 "$out/fuzz.log"
	exit 1
fi
