#!/bin/sh
# Slot cache benchmarks (bench/RESULTS.md, "Slot cache" section): the copy_missing variants
# against a linear pinned copy of the same bytes, then `ftbench cache-copy`.
# usage: BUILD=build bench/slotcache.sh   (needs a GPU; `make` first)
set -e
B=${BUILD:-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
cc -O2 -std=gnu17 -D_GNU_SOURCE -DFT_HAVE_CUDA=1 -Isrc -Ikernels -I"$CUDA_HOME/include" \
	bench/gather_variants.c -o "$B/gather_variants" "$B/lib/libftbench.a" \
	-L"$CUDA_HOME/lib64" -lcudart_static -ldl -lrt -lstdc++ -ljansson -lm -pthread
for m in qwen3-30B glm4.7-nvfp4 gpt-oss-120b; do
	"$B/gather_variants" "$m" 1,4,32 15
done
"$B/bin/ftbench" cache-copy
