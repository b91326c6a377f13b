#!/bin/sh
# make test-peers: `ftbench decode` against a real peer server, llama.cpp's llama-server, built on
# the CPU from the source the llama-cpp-python package on PyPI ships, serving a tiny random-weight
# llama that tiny_llama_gguf.py writes with the gguf package. Not in CI (the build takes a while on
# two cores); everything is cached under $BUILD/peers, so a second run only measures.
#
# It checks what ftbench must get right against the real thing, and prints ftbench's tok/s beside
# the server's own predicted_per_second:
#   1. ftbench starts llama-server (--server-kind llama.cpp): readiness, flags, D tokens counted
#      from usage, the server's timings in the row;
#   2. --url against the running server: the kind is detected, the row labelled llama.cpp;
#   3. a context too small for D: finish_reason "length" before D is "the context is full", exit 1.
# Rows: $BUILD/peers/peers.jsonl. Exit status 0 when every check passed.
set -eu
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
P=$B/peers
D=${PEERS_DECODE:-256}
THREADS=${PEERS_THREADS:-1}
JOBS=${PEERS_JOBS:-2}
mkdir -p "$P"
say() { printf 'test-peers: %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

# 1. llama-server from the llama-cpp-python sdist
LS=$P/llama-build/bin/llama-server
if [ ! -x "$LS" ]; then
	command -v cmake >/dev/null || fail "cmake is missing (scripts/deps.sh installs it)"
	sdist=$(ls "$P"/llama_cpp_python-*.tar.gz 2>/dev/null | tail -n 1 || true)
	if [ -z "$sdist" ]; then
		say "downloading the llama-cpp-python sdist"
		python3 -m pip download -q --no-binary :all: --no-deps llama-cpp-python -d "$P"
		sdist=$(ls "$P"/llama_cpp_python-*.tar.gz | tail -n 1)
	fi
	src=$P/$(basename "$sdist" .tar.gz)
	[ -d "$src" ] || tar xzf "$sdist" -C "$P"
	say "building llama-server from $src/vendor/llama.cpp (CPU, -j$JOBS; this takes a while)"
	cmake -S "$src/vendor/llama.cpp" -B "$P/llama-build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
		-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
		-DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_APP=OFF >"$P/cmake.log" 2>&1 ||
		{ tail -n 20 "$P/cmake.log" >&2; fail "cmake configure (log: $P/cmake.log)"; }
	cmake --build "$P/llama-build" --target llama-server -j"$JOBS" >"$P/build.log" 2>&1 ||
		{ tail -n 20 "$P/build.log" >&2; fail "llama-server build (log: $P/build.log)"; }
fi
version=$("$LS" --version 2>&1 | grep -m1 -i version || true)
say "llama-server: $LS ($version)"

# 2. the gguf package in a venv of its own, and the model
PY=$P/venv/bin/python
if ! "$PY" -c 'import gguf' 2>/dev/null; then
	say "installing the gguf package into $P/venv"
	python3 -m venv "$P/venv" && "$P/venv/bin/pip" install -q gguf || fail "pip install gguf"
fi
MODEL=$P/tiny-llama.gguf
[ -s "$MODEL" ] || "$PY" bench/peers/tiny_llama_gguf.py "$MODEL" || fail "writing $MODEL"

FT=$B/bin/ftbench
[ -x "$FT" ] || fail "$FT is not built (make)"
ROWS=$P/peers.jsonl
rm -f "$ROWS"
field() { # field ROW-NUMBER KEY: one field of a row of $ROWS
	python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][int(sys.argv[2])]; v=r.get(sys.argv[3]); print("null" if v is None else v)' "$ROWS" "$1" "$2"
}
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/ftbench-peers-XXXXXX")
SRV_PID=
cleanup() { [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null && wait "$SRV_PID" 2>/dev/null; rm -rf "$LOGDIR"; }
trap cleanup EXIT INT TERM
CMD="$LS -m {model} --host {host} --port {port} -t $THREADS {flags}"

# run 1: ftbench starts the server
say "run 1: ftbench starts llama-server, D=$D"
"$FT" decode --server-kind llama.cpp --server-cmd "$CMD" --model "$MODEL" --decode "$D" --server-timeout 300 \
	--driver-wait 0 --log-dir "$LOGDIR" --json "$ROWS" || fail "run 1 exited $?"
[ "$(field 0 ok)" = True ] || fail "run 1 is not ok: $(field 0 error)"
[ "$(field 0 completion_tokens)" = "$D" ] || fail "run 1 counted $(field 0 completion_tokens) tokens, not $D"
[ "$(field 0 tokens_from)" = usage ] || fail "run 1: tokens from $(field 0 tokens_from), llama-server sends usage"
[ "$(field 0 server_tok_s)" != null ] || fail "run 1: no server timings in the row"

# run 2: --url against a server started here; the kind must be detected
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$LS" -m "$MODEL" --host 127.0.0.1 --port "$port" -t "$THREADS" --ctx-size $((8192 + D)) --parallel 1 \
	>"$LOGDIR/url-server.log" 2>&1 &
SRV_PID=$!
say "run 2: --url http://127.0.0.1:$port (llama-server pid $SRV_PID)"
"$FT" decode --url "http://127.0.0.1:$port" --decode "$D" --server-timeout 300 --json "$ROWS" ||
	fail "run 2 exited $? (server log: $(tail -n 5 "$LOGDIR/url-server.log"))"
kill "$SRV_PID"; wait "$SRV_PID" 2>/dev/null || true; SRV_PID=
[ "$(field 1 server_kind)" = llama.cpp ] || fail "run 2 detected $(field 1 server_kind), not llama.cpp"
[ "$(field 1 backend)" = llama.cpp ] || fail "run 2 labelled $(field 1 backend)"
[ "$(field 1 completion_tokens)" = "$D" ] || fail "run 2 counted $(field 1 completion_tokens) tokens"

# run 3: a context too small for D (no {flags}: our --ctx-size 128 only)
say "run 3: --ctx-size 128 < prompt + D: must fail as a full context"
set +e
"$FT" decode --server-kind llama.cpp --server-cmd "$LS -m {model} --host {host} --port {port} -t $THREADS --ctx-size 128 --parallel 1" \
	--model "$MODEL" --decode "$D" --server-timeout 300 --driver-wait 0 --log-dir "$LOGDIR" --json "$ROWS"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "run 3 exited 0 with a full context"
[ "$(field 2 short)" = context_full ] || fail "run 3: short is $(field 2 short), error: $(field 2 error)"

python3 - "$ROWS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\ntest-peers: ftbench decode against llama-server (tiny random llama, CPU)")
print("%-6s %-10s %5s %9s %9s %7s %8s %8s %9s %9s %-7s %s" % ("run", "kind", "D", "tok/s", "srv tok/s", "ratio",
      "p50 ms", "p99 ms", "ttft ms", "cold ms", "from", "finish"))
for i, r in enumerate(rows):
    ft, srv = r.get("decode_tok_s"), r.get("server_tok_s")
    f = lambda v, p=2: "-" if v is None else "%.*f" % (p, v)
    print("%-6d %-10s %5s %9s %9s %7s %8s %8s %9s %9s %-7s %s" % (i + 1, r.get("server_kind"), r.get("completion_tokens"),
          f(ft), f(srv), f(ft / srv if ft and srv else None, 4), f(r.get("event_ms_p50"), 3), f(r.get("event_ms_p99"), 3),
          f(r.get("ttft_ms"), 1), f(r.get("ttft_cold_ms"), 1), r.get("tokens_from") or "-", r.get("finish_reason")))
EOF
say "all checks passed (rows: $ROWS)"
