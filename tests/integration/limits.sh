#!/bin/sh
# The same argument limits in the daemon's table, the OpenAPI spec and the CLI (limits_test.py).
exec python3 "$(dirname "$0")/limits_test.py"
