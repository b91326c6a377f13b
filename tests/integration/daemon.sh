#!/bin/sh
# ftbenchd integration tests: the real daemon on loopback with fake workers (see daemon_test.py).
# Needs Debian's python3 with python3-yaml and python3-jsonschema (scripts/deps.sh installs them).
cd "$(dirname "$0")/../.." || exit 1
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import yaml, jsonschema' 2>/dev/null; then
	echo "not ok - python3-yaml and python3-jsonschema are needed (run scripts/deps.sh as root)"
	exit 1
fi
exec "$py" tests/integration/daemon_test.py
