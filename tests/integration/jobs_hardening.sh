#!/bin/sh
# Jobs and processes: faulty workers, kill -9 cycles, max-running, argv at start,
# decode server names and URLs (see jobs_hardening_test.py). FT_KILL9_CYCLES sets the number of
# kill -9 cycles (10 here; `make test-soak` runs 50).
exec sh "$(dirname "$0")/run-python" jobs_hardening_test.py yaml jsonschema
