#!/bin/sh
# What an operator sees: status page in headless chromium, /metrics through Prometheus' parser,
# SSE resume, /openapi.json, profile history and drift (see operator_test.py).
exec sh "$(dirname "$0")/run-python" operator_test.py yaml prometheus_client
