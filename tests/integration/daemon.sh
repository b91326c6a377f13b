#!/bin/sh
# ftbenchd integration tests: the real daemon on loopback with fake workers (see daemon_test.py).
# Needs python3-yaml and python3-jsonschema (scripts/deps.sh installs them; run-python says so).
exec sh "$(dirname "$0")/run-python" daemon_test.py yaml jsonschema
