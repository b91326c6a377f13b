#!/bin/sh
# tests/schema_check.py, the JSON Schema check of the C tests (tests/schema.h) and bench/bw.sh,
# through python3-jsonschema: the failing path is named ($.a.b[1].c), a missing property by
# name, for oneOf the deepest branch failure (or "matches none of" at the keyword), the exit
# statuses of the file mode, and the --serve protocol.
set -u
echo "1..8"
T=$(mktemp -d /tmp/ft-schema-check-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
n=0
check() { desc=$1; shift; n=$((n + 1)); if "$@"; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; sed 's/^/#   /' "$T/out"; fi; }
SC=tests/schema_check.py
cat >"$T/s.json" <<'J'
{"type": "object", "required": ["a"], "additionalProperties": false,
 "properties": {"a": {"type": "object", "properties": {"b": {"type": "array",
   "items": {"type": "object", "properties": {"c": {"type": "integer"}}}}}},
  "m": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["median"],
                                     "properties": {"median": {"type": "number"}}}]},
  "n": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}
J
doc() { printf '%s' "$2" >"$T/$1.json"; }
doc ok '{"a": {"b": [{"c": 1}, {"c": 2}]}, "m": null}'
doc idx '{"a": {"b": [{"c": 1}, {"c": "2"}]}}'
doc req '{"m": null}'
doc one '{"a": {}, "m": {"median": "x"}}'
doc none '{"a": {}, "n": "s"}'
python3 $SC "$T/s.json" "$T/ok.json" >"$T/out" 2>&1
check "a valid document: valid, exit 0" [ $? -eq 0 -a "$(cat "$T/out")" = "$T/ok.json: valid" ]
python3 $SC "$T/s.json" "$T/idx.json" >"$T/out" 2>&1
check "an array item's field: \$.a.b[1].c named, exit 1" sh -c "[ $? -eq 1 ] && grep -q '^$T/idx.json: \\\$.a.b\\[1\\].c: ' '$T/out'"
python3 $SC "$T/s.json" "$T/req.json" >"$T/out" 2>&1
check "a missing property by name" grep -q ': \$: missing required property "a"$' "$T/out"
python3 $SC "$T/s.json" "$T/one.json" >"$T/out" 2>&1
check "oneOf: the deepest branch failure, \$.m.median" grep -q ': \$.m.median: ' "$T/out"
python3 $SC "$T/s.json" "$T/none.json" >"$T/out" 2>&1
check "anyOf failing at the keyword: matches none of anyOf" grep -q ': \$.n: matches none of anyOf (closest: ' "$T/out"
python3 $SC "$T/s.json" "$T/nosuch.json" >"$T/out" 2>&1
check "an unreadable document: exit 2, named" sh -c "[ $? -eq 2 ] && grep -q nosuch '$T/out'"
printf '%s\t%s\n%s\t%s\n%s\t%s\n' "$T/s.json" "$(cat "$T/ok.json")" "$T/s.json" "$(cat "$T/req.json")" \
	"$T/nosuch-schema.json" '{}' | python3 $SC --serve >"$T/out" 2>&1
check "--serve: ok, invalid<TAB>why, error<TAB>why, one line each" \
	[ "$(cut -f1 "$T/out" | tr '\n' ' ')" = "ok invalid error " ]
check "--serve: the reason of the invalid one" [ "$(sed -n 2p "$T/out" | cut -f2)" = '$: missing required property "a"' ]
