#!/bin/sh
# Issue 17 (jobs and processes): faulty workers, kill -9 cycles, max-running, argv at start,
# decode server names and URLs (see jobs_hardening_test.py). FT_KILL9_CYCLES sets the number of
# kill -9 cycles (10 here; `make test-soak` runs 50).
cd "$(dirname "$0")/../.." || exit 1
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import yaml, jsonschema' 2>/dev/null; then
	echo "not ok - python3-yaml and python3-jsonschema are needed (run scripts/deps.sh as root)"
	exit 1
fi
exec "$py" tests/integration/jobs_hardening_test.py
