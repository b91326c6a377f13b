#!/usr/bin/env python3
"""Validate JSON documents against a JSON Schema with python3-jsonschema, naming where a document
fails in one line: "$.gpu.uuid: 'x' does not match '^GPU-...'", "$.cpu: missing required property
"isa"". For anyOf/oneOf the deepest of the branches' failures is named (each branch's
shallowest failure; at equal depth one that is not a mere type mismatch); when no branch gets
deeper than the keyword itself, "$: matches none of oneOf (closest: ...)".

usage: schema_check.py SCHEMA DOC...   each DOC "valid" or its failure; exit 0 when all are valid,
                                       1 when one is not, 2 when a file cannot be read
       schema_check.py --serve         for C tests (tests/schema.h): reads lines
                                       "SCHEMA-PATH<TAB>DOCUMENT-AS-ONE-LINE-OF-JSON", answers
                                       "ok", "invalid<TAB>message" or "error<TAB>message" per line
"""
import json
import sys

import jsonschema


def jpath(err):
    p = "$"
    for e in err.absolute_path:
        p += "[%d]" % e if isinstance(e, int) else "." + str(e)
    return p


def message(err):
    if err.validator == "required":
        missing = [r for r in err.validator_value if isinstance(err.instance, dict) and r not in err.instance]
        if missing:
            return 'missing required property "%s"' % missing[0]
    return err.message


def deepest(err):
    """(error, message) to name for err: itself, or for anyOf/oneOf the most telling of its
    branches' failures: per branch the shallowest (what is most wrong with the document for that
    branch), then the deepest of those (at equal depth, not a mere type mismatch; then the first
    branch)."""
    if err.validator in ("anyOf", "oneOf") and err.context:
        firsts = {}
        for c in err.context:
            b = c.relative_schema_path[0] if c.relative_schema_path else 0
            if b not in firsts or len(c.absolute_path) < len(firsts[b].absolute_path):
                firsts[b] = c
        best = max((deepest(firsts[b]) for b in sorted(firsts)),
                   key=lambda x: len(x[0].absolute_path) * 2 + (x[0].validator != "type"))
        if len(best[0].absolute_path) > len(err.absolute_path):
            return best
        return err, "matches none of %s (closest: %s: %s)" % (err.validator, jpath(best[0]), best[1])
    return err, message(err)


def describe(err):
    e, msg = deepest(err)
    return "%s: %s" % (jpath(e), msg)


_validators = {}


def validator(schema_path):
    v = _validators.get(schema_path)
    if v is None:
        with open(schema_path) as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        v = _validators[schema_path] = cls(schema)
    return v


def check(schema_path, doc):
    """None when doc is valid, else one line naming the first failure (the most telling one)."""
    errs = list(validator(schema_path).iter_errors(doc))
    if not errs:
        return None
    errs.sort(key=lambda e: (len(e.absolute_path), e.validator == "type"))
    return describe(errs[0])


def serve():
    for line in sys.stdin:
        path, _, doc = line.rstrip("\n").partition("\t")
        try:
            why = check(path, json.loads(doc))
            out = "ok" if why is None else "invalid\t" + why
        except Exception as e:  # the C test reads -EIO with the reason; the checker lives on
            out = "error\t%s: %s" % (path, e)
        sys.stdout.write(out.replace("\n", " ") + "\n")
        sys.stdout.flush()
    return 0


def main(argv):
    if argv == ["--serve"]:
        return serve()
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    rc = 0
    for p in argv[1:]:
        try:
            with open(p) as f:
                doc = json.load(f)
            why = check(argv[0], doc)
        except (OSError, ValueError, jsonschema.SchemaError) as e:
            print("%s: %s" % (p, e))
            return 2
        print("%s: %s" % (p, why or "valid"))
        rc = rc or (1 if why else 0)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
