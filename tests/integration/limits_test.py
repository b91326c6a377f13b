"""The same limits everywhere: every integer or number argument of a job kind has
the same [minimum, maximum] in the daemon's table (`ftbenchd --dump-job-args`), the OpenAPI spec
(api/openapi.yaml) and the CLI the worker runs (`ftbench KIND --flag V --help`: 0 when V is
accepted, 2 when refused; --help comes after the flag, so nothing is measured)."""
import json
import os
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # ftd_harness
from ftd_harness import FTBENCH as FT, FTBENCHD, ROOT, Tap  # noqa: E402

SCHEMA = {"bw": "BwArgs", "cache-copy": "CacheCopyArgs", "load-weights": "LoadWeightsArgs",
          "decode": "DecodeArgs", "replay": "ReplayArgs"}

spec = yaml.safe_load(open(os.path.join(ROOT, "api/openapi.yaml")))["components"]["schemas"]
dump = json.loads(subprocess.run([FTBENCHD, "--dump-job-args"], check=True, capture_output=True, text=True).stdout)
tap = Tap()
check = tap.check


def cli(kind, flag, value):
    r = subprocess.run([FT, kind, f"{flag}={value}", "--help"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    return r.returncode, r.stderr.strip()


def fmt(v, integer):
    return str(int(v)) if integer else repr(float(v))


for k in dump["kinds"]:
    kind = k["kind"]
    props = spec[SCHEMA[kind]]["properties"]
    for a in k["args"]:
        if a["type"] not in ("int", "number"):
            continue
        name, flag, integer = a["name"], a["flag"], a["type"] == "int"
        lo, hi = float(a["minimum"]), float(a["maximum"])
        p = props.get(name, {})
        check(f"{kind} {name}: the spec's limits are the daemon's [{lo:g}, {hi:g}]",
              p.get("minimum") is not None and float(p["minimum"]) == lo and float(p["maximum"]) == hi,
              f"spec {p.get('minimum')}..{p.get('maximum')}")
        step = 1 if integer else max(abs(hi) * 1e-3, 1e-9)
        for v, want in ((lo, 0), (hi, 0), (hi + step, 2), (lo - (1 if integer else max(abs(lo) * 1e-3, 1e-9)), 2)):
            rc, err = cli(kind, flag, fmt(v, integer))
            check(f"{kind} {flag}={fmt(v, integer)}: the CLI {'accepts' if want == 0 else 'refuses'} it",
                  rc == want, f"exit {rc}: {err[-200:]}")
    # Lists: each item's [minimum, maximum] and the most items, the same three ways.
    for a in k["args"]:
        if a["type"] not in ("int_list", "number_list"):
            continue
        name, flag, integer = a["name"], a["flag"], a["type"] == "int_list"
        lo, hi, most = float(a["minimum"]), float(a["maximum"]), a["max_items"]
        p = props.get(name, {})
        items = p.get("items", {})
        check(f"{kind} {name}: the spec's items are the daemon's [{lo:g}, {hi:g}], at most {most}",
              items.get("minimum") is not None and float(items["minimum"]) == lo
              and float(items["maximum"]) == hi and p.get("maxItems") == most,
              f"spec items {items.get('minimum')}..{items.get('maximum')}, maxItems {p.get('maxItems')}")
        step = 1 if integer else max(abs(hi) * 1e-3, 1e-9)
        low = lo - (1 if integer else max(abs(lo) * 1e-3, 1e-9))
        for v, want in ((lo, 0), (hi, 0), (hi + step, 2), (low, 2)):
            rc, err = cli(kind, flag, fmt(v, integer))
            check(f"{kind} {flag}={fmt(v, integer)}: the CLI {'accepts' if want == 0 else 'refuses'} it",
                  rc == want, f"exit {rc}: {err[-200:]}")
        for n, want in ((most, 0), (most + 1, 2)):
            rc, err = cli(kind, flag, ",".join([fmt(lo, integer)] * n))
            check(f"{kind} {flag} with {n} items: the CLI {'accepts' if want == 0 else 'refuses'} it",
                  rc == want, f"exit {rc}: {err[-200:]}")
sys.exit(tap.done())
