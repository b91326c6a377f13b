#!/bin/sh
# GET /openapi.json of a live ftbenchd is a valid OpenAPI 3.0.3 document, by openapi-spec-validator
# (PyPI, pinned in scripts/deps.sh, installed in the test venv beside schemathesis).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/${BUILD:-build}
VENV=${FT_TEST_VENV:-/opt/ftbenchd-test-venv}
echo "1..2"
if ! "$VENV/bin/python3" -c 'import openapi_spec_validator' 2>/dev/null; then
	echo "not ok 1 - openapi-spec-validator is missing from $VENV (run scripts/deps.sh as root)"
	echo "not ok 2 - # not run"
	exit 1
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/ftopenapi.XXXXXX")
PID=
# shellcheck disable=SC2317 # the EXIT trap
cleanup() { [ -z "$PID" ] || { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }; rm -rf "$T"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$B/bin/ftbenchd" --listen "127.0.0.1:$port" --state-dir "$T/state" --profile-dir "$T/prof" \
	--worker "$B/tests/fixtures/fakeworker" >"$T/log" 2>&1 &
PID=$!
i=0
until curl -fsS -m 2 "http://127.0.0.1:$port/openapi.json" -o "$T/openapi.json" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -ge 100 ] || ! kill -0 "$PID" 2>/dev/null; then
		echo "not ok 1 - ftbenchd did not serve /openapi.json"; sed 's/^/# /' "$T/log"
		echo "not ok 2 - # not run"
		exit 1
	fi
	sleep 0.1
done
echo "ok 1 - GET /openapi.json answered"
if out=$("$VENV/bin/python3" - "$T/openapi.json" 2>&1 <<'PY'
import json, sys
from openapi_spec_validator import validate
doc = json.load(open(sys.argv[1]))
if doc.get("openapi") != "3.0.3":
    sys.exit(f"openapi is {doc.get('openapi')!r}, not 3.0.3")
validate(doc)
PY
); then
	echo "ok 2 - /openapi.json is valid OpenAPI 3.0.3 (openapi-spec-validator)"
else
	echo "not ok 2 - /openapi.json is not valid OpenAPI 3.0.3:"
	printf '%s\n' "$out" | tail -n 15 | sed 's/^/#   /'
	exit 1
fi
