#!/bin/sh
# The seed daemon's routes driven by a client of the seed's protocol (seed_daemon_test.py).
# Needs python3-yaml and python3-jsonschema (scripts/deps.sh installs them; run-python says so).
exec sh "$(dirname "$0")/run-python" seed_daemon_test.py yaml jsonschema
