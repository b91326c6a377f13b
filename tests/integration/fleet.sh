#!/bin/sh
# Fleet integration: /metrics through promtool, the node-feature-discovery file as
# NFD reads it, ftbench health's exit codes, the NHC/NPD examples, first-boot measurement
# (see fleet_test.py). promtool: Debian's prometheus package (scripts/deps.sh).
if ! command -v promtool >/dev/null 2>&1; then
	echo "not ok - promtool is needed (Debian package prometheus; run scripts/deps.sh as root)"
	exit 1
fi
exec sh "$(dirname "$0")/run-python" fleet_test.py prometheus_client
