#!/bin/sh
# Test doubles and fault hooks live in the test build only: the product binaries (ftbench,
# ftbenchd, libftprofile) carry none of their names; the test build ftbench_hooks has them all.
set -u
. tests/lib/tap.sh
tap_tmpdir no-test-doubles
# every test-only environment variable and fake of the tree, by the name a product would read
for bin in "$FTBENCH" "$(pwd)/$B/bin/ftbenchd" "$(pwd)/$B/lib/libftprofile.so"; do
	strings "$bin" >"$T/strings" 2>"$T/err"
	found=""
	for d in FTBENCH_TEST_FAKE_GPUS FTLOAD_TEST_EINVAL FTBENCH_LW_FAULT 'Fake GPU' GPU-fa4e0000; do
		grep -q "$d" "$T/strings" && found="$found $d"
	done
	echo "$found" >"$T/err"
	check "$(basename "$bin") holds no test double" sh -c "[ -s '$T/strings' ] && [ -z '$found' ]"
done
strings "$FTBENCH_HOOKS" >"$T/strings"
for d in FTBENCH_TEST_FAKE_GPUS FTLOAD_TEST_EINVAL FTBENCH_LW_FAULT 'Fake GPU'; do
	echo "$d missing" >"$T/err"
	check "the test build ftbench_hooks has $d" grep -q "$d" "$T/strings"
done
FTBENCH_TEST_FAKE_GPUS=2 "$FTBENCH_HOOKS" gpus --json >"$T/out" 2>"$T/err"
check "ftbench_hooks with 2 fake GPUs lists them" grep -q GPU-fa4e0000-0000-4000-8000-000000000001 "$T/out"
FTBENCH_TEST_FAKE_GPUS=2 CUDA_VISIBLE_DEVICES= "$FTBENCH" gpus --json >"$T/out" 2>"$T/err"
check "the product ftbench ignores the variable" sh -c "! grep -q fa4e0000 '$T/out'"
tap_done
