#!/usr/bin/env python3
"""api/openapi.yaml as one JSON document (the schemas it names by file inlined), written as a C
string for ftbenchd's GET /openapi.json.  usage: gen-openapi-json.py openapi.yaml > out.c"""
import json
import os
import sys

import yaml


def inline(node, base):
    """Replace {"$ref": "file.json"} (a reference to another file) by that file's schema."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#") and len(node) == 1:
            with open(os.path.join(base, ref)) as f:
                schema = json.load(f)
            for k in ("$schema", "$id"):
                schema.pop(k, None)
            return schema
        return {k: inline(v, base) for k, v in node.items()}
    if isinstance(node, list):
        return [inline(v, base) for v in node]
    return node


def main():
    path = sys.argv[1]
    with open(path) as f:
        doc = yaml.safe_load(f)
    text = json.dumps(inline(doc, os.path.dirname(path)), separators=(",", ":"), ensure_ascii=True)
    out = ["/* generated from api/openapi.yaml by scripts/gen-openapi-json.py: do not edit */",
           "const char ftd_openapi_json[] ="]
    for i in range(0, len(text), 100):
        chunk = text[i:i + 100].replace("\\", "\\\\").replace('"', '\\"')
        out.append('\t"' + chunk + '"')
    out[-1] += ";"
    sys.stdout.write("\n".join(out) + "\n")


main()
