#!/bin/sh
# Are two builds of a CUDA object the same machine code? For moves and splits of kernel source
# that must not change what runs (a helper moved into a .cuh, a host function into its own file).
#   scripts/sass-diff.sh OLD.o NEW.o     (objects, executables or libraries with device code)
# Compares, per architecture and per kernel (by mangled name): the SASS instruction stream and its
# encodings (cuobjdump -sass, with the /*addr*/ column dropped), the resource usage (registers,
# stack, shared, local, constant memory: cuobjdump -res-usage), and the embedded PTX with its
# line-info directives (.loc, .file) and debug sections left out. Line numbers and file names may
# differ; nothing else may. Prints one line per kernel ("same" or "DIFFERS") and a unified diff of
# what differs. Exit 0: the same; 1: something differs (or a kernel is in one object only);
# 2: usage, or a tool or input is missing.
# Needs cuobjdump and nvdisasm: on PATH, in $CUDA_HOME/bin, or named by $CUOBJDUMP (the CUDA
# toolkit's, or PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels where the toolkit
# has only nvcc).
set -eu
if [ $# -ne 2 ]; then
	echo "usage: scripts/sass-diff.sh OLD.o NEW.o" >&2
	exit 2
fi
for f in "$1" "$2"; do
	[ -r "$f" ] || { echo "sass-diff: cannot read '$f'" >&2; exit 2; }
done
cuda=${CUDA_HOME:-/usr/local/cuda}
cuobjdump=${CUOBJDUMP:-}
if [ -z "$cuobjdump" ]; then
	if command -v cuobjdump >/dev/null 2>&1; then cuobjdump=cuobjdump
	elif [ -x "$cuda/bin/cuobjdump" ]; then cuobjdump=$cuda/bin/cuobjdump
	else
		echo "sass-diff: no cuobjdump (on PATH, in $cuda/bin, or CUOBJDUMP=...)" >&2
		exit 2
	fi
fi
if ! command -v nvdisasm >/dev/null 2>&1 && [ -z "${NVDISASM_PATH-}" ]; then
	if [ -x "$cuda/bin/nvdisasm" ]; then PATH=$cuda/bin:$PATH; export PATH
	elif [ -x "$(dirname "$(command -v "$cuobjdump")")/nvdisasm" ]; then
		PATH=$(dirname "$(command -v "$cuobjdump")"):$PATH; export PATH
	else
		echo "sass-diff: cuobjdump -sass needs nvdisasm (on PATH or NVDISASM_PATH=DIR)" >&2
		exit 2
	fi
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sass-diff.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# split OBJ DIR: one file per architecture and kernel (DIR/sm_90.NAME), PTX in DIR/ptx.
split() {
	mkdir -p "$2"
	"$cuobjdump" -sass "$1" >"$tmp/sass.txt" || { echo "sass-diff: cuobjdump -sass '$1' failed" >&2; exit 2; }
	"$cuobjdump" -res-usage "$1" >"$tmp/res.txt" || { echo "sass-diff: cuobjdump -res-usage '$1' failed" >&2; exit 2; }
	awk -v dir="$2" '
		/^[ \t]*code for sm_/ { arch = $3; out = ""; next }
		/^[ \t]*Function : / { out = dir "/" arch "." $3; next }
		out != "" && /^[ \t]*\/\*[0-9a-f]+\*\// { sub(/^[ \t]*\/\*[0-9a-f]+\*\/[ \t]*/, ""); gsub(/[ \t]+/, " "); print > out; next }
		out != "" && /^[ \t]*\/\* 0x[0-9a-f]+ \*\/[ \t]*$/ { gsub(/[ \t]+/, " "); print > out; next }
		out != "" && /^[ \t]*\.[a-z]/ { gsub(/[ \t]+/, " "); print > out; next }
	' "$tmp/sass.txt"
	awk -v dir="$2" '
		/^arch = sm_/ { arch = $3; next }
		/^ Function [^ ]+:$/ { name = $2; sub(/:$/, "", name); getline; print "resources:" $0 >> (dir "/" arch "." name); next }
	' "$tmp/res.txt"
	"$cuobjdump" -ptx "$1" 2>/dev/null | awk '
		/^[ \t]*\.section[ \t]+\.debug/ { skip = 1 }
		skip { next }
		/^[ \t]*\.(loc|file)[ \t]/ { next }
		/^(identifier|ptxasOptions) =/ { next }
		NF { print }
	' >"$2/ptx" || true
}
split "$1" "$tmp/old"
split "$2" "$tmp/new"
if [ -z "$(ls "$tmp/old")" ] || [ "$(ls "$tmp/old")" = ptx ]; then
	echo "sass-diff: '$1' holds no device code" >&2
	exit 2
fi

rc=0
for f in $( (ls "$tmp/old"; ls "$tmp/new") | sort -u); do
	if [ ! -e "$tmp/old/$f" ]; then echo "only in $2: $f"; rc=1; continue; fi
	if [ ! -e "$tmp/new/$f" ]; then echo "only in $1: $f"; rc=1; continue; fi
	n=$(grep -c . "$tmp/old/$f" || true)
	if cmp -s "$tmp/old/$f" "$tmp/new/$f"; then
		echo "same     $f ($n lines)"
	else
		echo "DIFFERS  $f"
		diff -u "$tmp/old/$f" "$tmp/new/$f" | sed -n '1,40p'
		rc=1
	fi
done
exit $rc
