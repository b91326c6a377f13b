#!/bin/sh
# A failure's reasons on every surface and the daemon's checks at submission (reasons_test.py).
# Needs python3-yaml and python3-jsonschema (scripts/deps.sh installs them; run-python says so).
exec sh "$(dirname "$0")/run-python" reasons_test.py yaml jsonschema
