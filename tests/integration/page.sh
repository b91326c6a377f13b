#!/bin/sh
# The status page with 8 GPUs laid out by headless Chromium: comparison view, folded details,
# history axes, replay map, no overlapping labels, bounded height (see page_test.py).
exec sh "$(dirname "$0")/run-python" page_test.py
