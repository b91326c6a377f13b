#!/bin/sh
# What an operator sees: status page in headless chromium, /metrics through Prometheus' parser,
# SSE resume, /openapi.json, profile history and drift (see operator_test.py).
cd "$(dirname "$0")/../.." || exit 1
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import yaml, prometheus_client' 2>/dev/null; then
	echo "not ok - python3-yaml and python3-prometheus-client are needed (run scripts/deps.sh as root)"
	exit 1
fi
exec "$py" tests/integration/operator_test.py
