#!/bin/sh
# ftbenchd under hostile input: the table of raw requests and the connection-level
# attacks of tests/integration/hostile_test.py, against the real daemon with fake workers.
exec sh "$(dirname "$0")/run-python" hostile_test.py yaml jsonschema
