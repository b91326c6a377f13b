#!/bin/sh
# ftbenchd under hostile input (issue #17): the table of raw requests and the connection-level
# attacks of tests/integration/hostile_test.py, against the real daemon with fake workers.
cd "$(dirname "$0")/../.." || exit 1
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import yaml, jsonschema' 2>/dev/null; then
	echo "not ok - python3-yaml and python3-jsonschema are needed (run scripts/deps.sh as root)"
	exit 1
fi
exec "$py" tests/integration/hostile_test.py
