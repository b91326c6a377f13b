#!/bin/sh
# Contract test of the live ftbenchd against api/openapi.yaml with schemathesis (tests/contract/).
cd "$(dirname "$0")/../.." || exit 1
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" tests/contract/run.py
