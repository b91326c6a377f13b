#!/usr/bin/env python3
"""api/openapi.yaml as one OpenAPI 3.0.3 JSON document (the schemas it names by file inlined), written
as a C string for ftbenchd's GET /openapi.json, or as JSON.

  gen-openapi-json.py openapi.yaml > out.c       the C file compiled into the daemon
  gen-openapi-json.py --json openapi.yaml         the document itself (the tests read it)

api/schemas/*.json are JSON Schema (draft-07, installed for any validator); OpenAPI 3.0 schema
objects are a subset that spells "or null" as `nullable: true`. Inlined, each file is turned into
that form: `type: [X, "null"]` -> `type: X, nullable: true`; `oneOf`/`anyOf` with a `{type: null}`
branch -> the other branch with `nullable: true`; `const` -> a one-value `enum`; `$schema`/`$id`
dropped. A construct that has no 3.0 spelling stops the build (so the served spec stays valid)."""
import json
import os
import sys

import yaml


def oas30(node, where="schema"):
    """A JSON Schema (draft-07) node as an OpenAPI 3.0 schema object."""
    if isinstance(node, list):
        return [oas30(v, where) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: oas30(v, f"{where}.{k}") for k, v in node.items() if k not in ("$schema", "$id")}
    t = node.get("type")
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        if len(rest) != 1:
            sys.exit(f"gen-openapi-json: {where}: type {t} has no OpenAPI 3.0 spelling")
        node["type"] = rest[0]
        if "null" in t:
            node["nullable"] = True
    for key in ("oneOf", "anyOf"):
        alts = node.get(key)
        if isinstance(alts, list) and {"type": "null"} in alts:
            rest = [a for a in alts if a != {"type": "null"}]
            del node[key]
            if len(rest) == 1 and "$ref" not in rest[0] and not (set(rest[0]) & set(node)):
                node.update(rest[0])
            elif rest:
                node[key] = rest
            if "type" not in node:
                sys.exit(f"gen-openapi-json: {where}: a nullable {key} needs a typed branch in OpenAPI 3.0")
            node["nullable"] = True
    if "const" in node:
        node["enum"] = [node.pop("const")]
    return node


def inline(node, base):
    """Replace {"$ref": "file.json"} (a reference to another file) by that file's schema, in 3.0 form."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#") and len(node) == 1:
            with open(os.path.join(base, ref)) as f:
                return oas30(json.load(f), ref)
        return {k: inline(v, base) for k, v in node.items()}
    if isinstance(node, list):
        return [inline(v, base) for v in node]
    return node


def document(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    return inline(doc, os.path.dirname(path))


def main():
    args = sys.argv[1:]
    as_json = args[:1] == ["--json"]
    if as_json:
        args = args[1:]
    text = json.dumps(document(args[0]), separators=(",", ":"), ensure_ascii=True)
    if as_json:
        sys.stdout.write(text + "\n")
        return
    out = ["/* generated from api/openapi.yaml by scripts/gen-openapi-json.py: do not edit */",
           "const char ftd_openapi_json[] ="]
    for i in range(0, len(text), 100):
        chunk = text[i:i + 100].replace("\\", "\\\\").replace('"', '\\"')
        out.append('\t"' + chunk + '"')
    out[-1] += ";"
    sys.stdout.write("\n".join(out) + "\n")


main()
