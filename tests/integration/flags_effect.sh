#!/bin/sh
# Every alias and short name of a flag checked by its effect (flags_effect_test.py).
exec python3 "$(dirname "$0")/flags_effect_test.py"
