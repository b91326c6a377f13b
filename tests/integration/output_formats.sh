#!/bin/sh
# --output-format table|json|csv|md on every table-printing command, CPU-only (output_formats_test.py).
exec python3 "$(dirname "$0")/output_formats_test.py"
