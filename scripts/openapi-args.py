#!/usr/bin/env python3
"""The job arguments three ways, held equal: the CLI's flag rows (`ftbench flags`), the daemon's
argument tables (`ftbenchd --dump-job-args`) and api/openapi.yaml (the <Kind>Args schemas).
Reads the binaries and the spec, not the sources.

For every argument of every kind: the daemon's flag is a row (or an alias of one) of that
command's table; numbers and list items have the same minimum and maximum in all three; lists
the same maxItems; the daemon's choices are the spec's and among the CLI's; the spec's
`description` begins with the CLI row's help (the spec may add what only a job means: "; must
realpath under a model root"); the spec's `default` is the CLI row's default, and there is none
where the row has none. (A `server` argument names a configured template instead of giving one:
its description is the daemon's own.)

usage: scripts/openapi-args.py [--write] [BUILD]   (BUILD: build; default: check, exit 1 on a
difference, each one printed; --write: put the CLI's help and defaults into the spec first)"""
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SPEC = os.path.join(ROOT, "api", "openapi.yaml")
SCHEMA = {"bw": "BwArgs", "cache-copy": "CacheCopyArgs", "load-weights": "LoadWeightsArgs",
          "decode": "DecodeArgs", "replay": "ReplayArgs"}
OWN_DESCRIPTION = {"server"}  # daemon types whose value is not the flag's


def load(build):
    cli = json.loads(subprocess.run([os.path.join(build, "bin", "ftbench"), "flags"], check=True,
                                    capture_output=True, text=True).stdout)
    daemon = json.loads(subprocess.run([os.path.join(build, "bin", "ftbenchd"), "--dump-job-args"],
                                       check=True, capture_output=True, text=True).stdout)
    rows = {c["command"]: c["flags"] for c in cli["commands"]}
    return rows, daemon["kinds"]


def row_of(rows, flag):
    name = flag[2:]
    for r in rows:
        if r["name"] == name or name in r["aliases"]:
            return r
    return None


def same(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def check(rows, kinds, spec):
    """Every difference, as lines."""
    out = []
    schemas = spec["components"]["schemas"]
    for k in kinds:
        kind = k["kind"]
        table = rows.get(kind)
        props = schemas[SCHEMA[kind]]["properties"]
        if table is None:
            out.append(f"{kind}: `ftbench flags` has no table for it")
            continue
        for a in k["args"]:
            what = f"{kind} args.{a['name']} ({a['flag']})"
            r = row_of(table, a["flag"])
            p = props.get(a["name"])
            if r is None:
                out.append(f"{what}: no such flag in `ftbench {kind}`'s table")
                continue
            if p is None:
                out.append(f"{what}: not in api/openapi.yaml")
                continue
            items = p.get("items", {})
            if a["type"] in ("int", "number"):
                for key in ("minimum", "maximum"):
                    if not (same(a[key], r[key]) and same(a[key], p.get(key))):
                        out.append(f"{what}: {key} daemon {a[key]}, CLI {r[key]}, spec {p.get(key)}")
            if a["type"] in ("int_list", "number_list"):
                for key in ("minimum", "maximum"):
                    if not (same(a[key], r[key]) and same(a[key], items.get(key))):
                        out.append(f"{what}: item {key} daemon {a[key]}, CLI {r[key]}, spec {items.get(key)}")
            if a["max_items"] is not None:
                cli_max = r["max_items"] if r["max_items"] is not None else a["max_items"]
                if not (a["max_items"] == cli_max == p.get("maxItems")):
                    out.append(f"{what}: maxItems daemon {a['max_items']}, CLI {r['max_items']}, "
                               f"spec {p.get('maxItems')}")
            if a["choices"]:
                enum = p.get("enum", items.get("enum"))
                if enum != a["choices"]:
                    out.append(f"{what}: choices daemon {a['choices']}, spec {enum}")
                if r["choices"] and not set(a["choices"]) <= set(r["choices"]):
                    out.append(f"{what}: choices daemon {a['choices']} not among the CLI's {r['choices']}")
            desc = p.get("description", "")
            if a["type"] not in OWN_DESCRIPTION and not (r["help"] and desc.startswith(r["help"])):
                out.append(f"{what}: the spec's description does not begin with the CLI's help\n"
                           f"    CLI:  {r['help']!r}\n    spec: {desc!r}")
            want = None if a["type"] in OWN_DESCRIPTION else as_spec(r["default"], p)
            if not same(p.get("default"), want):
                out.append(f"{what}: default CLI {want!r}, spec {p.get('default')!r}")
    return out


def as_spec(default, prop):
    """The CLI row's default in the spec property's own type: an array property takes the comma
    list as an array (its items typed), so the spec stays valid OpenAPI."""
    if default is None or prop.get("type") != "array" or not isinstance(default, str):
        return default
    kind = prop.get("items", {}).get("type")
    conv = {"integer": int, "number": float}.get(kind, str)
    return [conv(x) for x in default.replace(" ", ",").split(",") if x]


# ---------------------------------------------------------------- --write

def flow(v):
    """v as YAML flow text."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {flow(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(flow(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v == int(v) and abs(v) < 1e15:
        return str(int(v))
    if isinstance(v, float):  # YAML 1.1 (PyYAML) reads 1e-06 as a string: no exponent
        return repr(v) if "e" not in repr(v) else f"{v:.15f}".rstrip("0")
    if isinstance(v, int):
        return repr(v)
    s = str(v)
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_.]*", s) and s not in ("true", "false", "null", "yes", "no", "on",
                                                                 "off"):
        return s
    return "'" + s.replace("'", "''") + "'"


def write(rows, kinds):
    lines = open(SPEC).read().split("\n")
    for k in kinds:
        kind, table = k["kind"], rows[k["kind"]]
        start = lines.index(f"    {SCHEMA[kind]}:")
        i = start + 1
        while lines[i] != "      properties:":
            i += 1
        i += 1
        while i < len(lines) and lines[i].startswith("        "):
            j = i + 1
            while j < len(lines) and lines[j].startswith("         "):
                j += 1
            name, _ = lines[i].strip().split(":", 1)
            prop = yaml.safe_load("\n".join(x[8:] for x in lines[i:j]))[name]
            a = next((x for x in k["args"] if x["name"] == name), None)
            r = row_of(table, a["flag"]) if a else None
            if a and r and a["type"] not in OWN_DESCRIPTION:
                old = prop.pop("description", "") or ""
                extra = ""
                for sep in ("; job: ",):
                    if sep in old:
                        extra = sep + old.split(sep, 1)[1]
                prop.pop("default", None)
                prop["description"] = r["help"] + extra
                if r["default"] is not None:
                    prop["default"] = as_spec(r["default"], prop)
            lines[i:j] = [f"        {name}: {flow(prop)}"]
            i += 1
    open(SPEC, "w").write("\n".join(lines))


def main():
    args = [a for a in sys.argv[1:] if a != "--write"]
    build = os.path.abspath(args[0] if args else os.path.join(ROOT, os.environ.get("BUILD", "build")))
    rows, kinds = load(build)
    if "--write" in sys.argv[1:]:
        write(rows, kinds)
    diffs = check(rows, kinds, yaml.safe_load(open(SPEC)))
    for d in diffs:
        print(d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
