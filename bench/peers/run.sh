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
#   3. a context too small for D: finish_reason "length" before D is "the context is full", exit 1;
#   C. --compare n-cpu-moe=0,8 on a tiny MoE llama (8 experts, 2 used): one fresh llama-server per
#      arm and cycle, 3 cycles, each arm's flag on its command line, both arms measured every
#      cycle, a summary row with a verdict (rows: $BUILD/peers/compare.jsonl).
# With PEERS_LCP=1 also llama-cpp-python's own server (its package from the same sdist, its C
# library built shared from the same source; a second build of ggml, ~10 min):
#   4. --url: detected as a plain OpenAI server (no /health: ready from /v1/models), no usage:
#      the tokens counted from the chunks equal the usage of the same request not streamed;
#   5. top_k -1 (forced with --server-kind vllm): its multi-line HTTP 500 shown whole, exit 1;
#   6. a prompt longer than its context: HTTP 200 and no event, "the server sent no tokens".
# Rows: $BUILD/peers/peers.jsonl. Exit status 0 when every check passed. PEERS_DECODE (256),
# PEERS_THREADS (1), PEERS_JOBS (2) change D, the server's threads, the build's jobs.
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
sdist=$(ls "$P"/llama_cpp_python-*.tar.gz 2>/dev/null | tail -n 1 || true)
if [ -z "$sdist" ]; then
	say "downloading the llama-cpp-python sdist"
	python3 -m pip download -q --no-binary :all: --no-deps llama-cpp-python -d "$P" || fail "pip download"
	sdist=$(ls "$P"/llama_cpp_python-*.tar.gz | tail -n 1)
fi
src=$P/$(basename "$sdist" .tar.gz)
[ -d "$src" ] || tar xzf "$sdist" -C "$P"
src_dir=$src/vendor/llama.cpp
if [ ! -x "$LS" ]; then
	command -v cmake >/dev/null || fail "cmake is missing (scripts/deps.sh installs it)"
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
MOE=$P/tiny-moe.gguf
[ -s "$MOE" ] || "$PY" bench/peers/tiny_llama_gguf.py "$MOE" --embd 256 --ff 256 --experts 8 --experts-used 2 ||
	fail "writing $MOE"

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

# llama-cpp-python's own server (PEERS_LCP=1): the package from the same sdist, its C library
# built shared from the same vendor/llama.cpp (the package's own build is skipped), in the venv
if [ "${PEERS_LCP:-0}" = 1 ]; then
	SH=$P/llama-shared
	if [ ! -e "$SH/bin/libllama.so" ]; then
		say "building libllama.so (shared, CPU, -j$JOBS) for llama-cpp-python"
		cmake -S "$src_dir" -B "$SH" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF \
			-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
			-DLLAMA_BUILD_COMMON=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=ON >"$P/cmake-shared.log" 2>&1 &&
			cmake --build "$SH" --target llama -j"$JOBS" >"$P/build-shared.log" 2>&1 ||
			fail "libllama.so build (logs: $P/cmake-shared.log, $P/build-shared.log)"
	fi
	export LLAMA_CPP_LIB_PATH="$SH/bin"
	if ! "$PY" -c 'import llama_cpp.server' 2>/dev/null; then
		say "installing llama-cpp-python[server] from $sdist into $P/venv (no C build: LLAMA_BUILD=OFF)"
		CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" "$P/venv/bin/pip" install -q "$sdist[server]" ||
			fail "pip install llama-cpp-python[server]"
	fi
	AIME=$LOGDIR/aime.jsonl
	echo '{"problem": "Find the number of ordered pairs (a, b) of positive integers with a + b = 20."}' >"$AIME"
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"$PY" -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$port" --n_ctx $((8192 + D)) --n_threads "$THREADS" \
		>"$LOGDIR/lcp-server.log" 2>&1 &
	SRV_PID=$!
	say "run 4: --url llama-cpp-python http://127.0.0.1:$port (pid $SRV_PID), greedy, D=$D"
	"$FT" decode --url "http://127.0.0.1:$port" --decode "$D" --greedy --aime "$AIME" --server-timeout 300 \
		--json "$ROWS" || fail "run 4 exited $?"
	say "run 4: the engine's own figure for the measured request (server log): $(grep 'eval time' "$LOGDIR/lcp-server.log" | grep -v prompt | tail -n 1 | sed 's/^.*eval time = *//')"
	# the same request without streaming: its usage says how many tokens greedy decoding makes
	twin=$("$PY" - "$port" "$D" <<'PYEOF'
import json, sys, urllib.request
port, d = sys.argv[1], int(sys.argv[2])
text = "Find the number of ordered pairs (a, b) of positive integers with a + b = 20.\nPlease reason step by step, and put your final answer within \\boxed{}."
body = {"model": "x", "messages": [{"role": "user", "content": text}], "stream": False, "max_tokens": d,
        "ignore_eos": True, "temperature": 0.0, "top_p": 1.0,
        "chat_template_kwargs": {"enable_thinking": True, "thinking": True}}
req = urllib.request.Request("http://127.0.0.1:%s/v1/chat/completions" % port, json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req))["usage"]["completion_tokens"])
PYEOF
)
	say "run 4: ftbench counted $(field 3 completion_tokens) tokens from chunks; the non-streamed twin's usage: $twin"
	[ "$(field 3 server_kind)" = openai ] || fail "run 4 detected $(field 3 server_kind), not openai"
	[ "$(field 3 tokens_from)" = chunks ] || fail "run 4: tokens from $(field 3 tokens_from)"
	[ "$(field 3 completion_tokens)" = "$twin" ] || fail "run 4 counted $(field 3 completion_tokens), usage says $twin"
	say "run 5: --server-kind vllm sends top_k -1: llama-cpp-python's 500 must be shown whole"
	set +e
	"$FT" decode --url "http://127.0.0.1:$port" --server-kind vllm --decode 8 --greedy --json "$ROWS" >"$LOGDIR/run5.txt" 2>&1
	rc=$?
	set -e
	kill "$SRV_PID"; wait "$SRV_PID" 2>/dev/null || true; SRV_PID=
	[ "$rc" -ne 0 ] || fail "run 5 exited 0"
	grep -q "Input should be greater than or equal to 0" "$LOGDIR/run5.txt" || { cat "$LOGDIR/run5.txt" >&2; fail "run 5: the message is cut"; }
	say "run 6: llama-cpp-python with --n_ctx 64: HTTP 200 and no event must be \"the server sent no tokens\""
	set +e
	"$FT" decode --server-kind openai --server-cmd "$PY -m llama_cpp.server --model {model} --host {host} --port {port} --n_ctx 64 --n_threads $THREADS" \
		--model "$MODEL" --decode 32 --server-timeout 300 --driver-wait 0 --log-dir "$LOGDIR" --json "$ROWS" >/dev/null 2>&1
	rc=$?
	set -e
	[ "$rc" -ne 0 ] || fail "run 6 exited 0"
	case "$(field 5 error)" in *"the server sent no tokens"*"still running"*) ;; *) fail "run 6: $(field 5 error)" ;; esac
fi

# run C: --compare against llama-server's own MoE placement flag (a CPU build: every expert is on
# the CPU whatever n-cpu-moe says, so the arms should tie; what is checked is the mechanism)
CROWS=$P/compare.jsonl
rm -f "$CROWS"
say "run C: --compare n-cpu-moe=0,8 on $MOE, 3 cycles, D=$D"
"$FT" decode --server-kind llama.cpp --server-cmd "$CMD" --model "$MOE" --decode "$D" --server-timeout 300 \
	--driver-wait 0 --log-dir "$LOGDIR" --compare n-cpu-moe=0,8 --cycles 3 --json "$CROWS" || fail "run C exited $?"
python3 - "$CROWS" <<'EOF' || fail "run C: the rows are not what --compare must write"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
runs, s = rows[:-1], rows[-1]
assert len(runs) == 6 and s["kind"] == "decode_compare", "6 arm-cycle rows and a summary: %d rows" % len(rows)
for r in runs:
    v = r["compare"]["settings"]["n-cpu-moe"]
    assert r["ok"] and r["server_kind"] == "llama.cpp", r.get("error")
    assert ("--n-cpu-moe %s" % v) in r["server_cmd"], r["server_cmd"]
# rotated: cycle 2 starts at the second arm
assert [r["compare"]["settings"]["n-cpu-moe"] for r in runs] == ["0", "8", "8", "0", "0", "8"]
assert s["decision"] in ("winner", "tie") and not s["failed"], s
for a in s["arms"]:
    assert a["ok"] and a["cycles_ok"] == 3, a
    t = a["decode_tok_s"]
    print("test-peers: run C: %-12s tok/s %.2f [%.2f-%.2f], ttft %.1f ms [%.1f-%.1f], cold %.1f ms" % (
        a["arm"], t["median"], t["min"], t["max"], a["ttft_ms"]["median"], a["ttft_ms"]["min"], a["ttft_ms"]["max"],
        a["ttft_cold_ms"]["median"]), file=sys.stderr)
print("test-peers: run C: %s%s: %s" % (s["decision"], " " + s["winner"] if s["winner"] else "", s["reason"]),
      file=sys.stderr)
EOF

python3 - "$ROWS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\ntest-peers: ftbench decode against peer servers (tiny random llama, CPU)")
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
