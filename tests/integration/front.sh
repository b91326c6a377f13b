#!/bin/sh
# The connection front under bursts, followers and slow or pipelining clients, the per-request
# rules, disk-full final states and hostile profile-store files (front_test.py).
exec sh "$(dirname "$0")/run-python" front_test.py yaml jsonschema
