"""--output-format table|json|csv|md on every table-printing command, on CPU-only
paths: gpus (fake GPUs), cpu, cpu-moe (a short real run), bw (fake measurements), cache-copy
(--from-json: a real H200 result, tests/fixtures/cache_copy/qwen3-30B_h200.json, as
`cache-copy --json` wrote it and wrapped as ftbenchd's job), decode (the sse_server fixture),
profile show and profile history (bw's kept profiles). For each: CSV parses with the csv module, JSON with json, Markdown has its header
separator row and the same cells as the CSV, the rows are the table's rows (their key columns,
in order), and --json and --output-format json agree. (jobs: tests/integration/client.sh.)"""
import copy
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import jsonschema

ROOT = os.getcwd()
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
FT = os.path.join(BUILD, "bin", "ftbench")
FTH = os.path.join(BUILD, "tests", "integration", "ftbench_hooks")  # test build: fake GPUs (cli.h)
SSE = os.path.join(BUILD, "tests", "fixtures", "sse_server")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "cache_copy", "qwen3-30B_h200.json")
FORMATS = ("table", "json", "csv", "md")
n = 0
bad = 0


def check(desc, ok, detail=""):
    global n, bad
    n += 1
    print(("ok" if ok else "not ok") + f" {n} - {desc}")
    if not ok:
        for line in str(detail).splitlines()[:30]:
            print(f"#   {line}")
        bad += 1
    return ok


T = tempfile.mkdtemp(prefix="ft-output-formats-")
ENV = {k: v for k, v in os.environ.items()
       if k not in ("FREETOKEN_BENCHBW_PATH", "FREETOKEN_BENCH_PROGRESS", "FTBENCH_TEST_FAKE_GPUS")}
ENV.update(XDG_CACHE_HOME=os.path.join(T, "cache"), FREETOKEN_BENCHBW_SYSDIR=os.path.join(T, "sys"),
           CUDA_VISIBLE_DEVICES="", TMPDIR=T)


def ft(*args, env=None, stdin=None):
    e = dict(ENV)
    e.update(env or {})
    exe = FTH if "FTBENCH_TEST_FAKE_GPUS" in e else FT
    r = subprocess.run([exe, *args], env=e, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def parse_csv(text):
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return rows[0] if rows else [], rows[1:]


def md_cells(line):
    """The cells of one Markdown row: | a | b | with \\| and \\\\ escaped."""
    cells, cur, i = [], "", 0
    if not (line.startswith("| ") and line.endswith(" |")):
        raise ValueError(f"not a Markdown row: {line!r}")
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line):
            cur += line[i + 1]
            i += 2
            continue
        if ch == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    cells = cells[1:]  # before the first |
    for c in cells:
        if not (c.startswith(" ") and c.endswith(" ")):
            raise ValueError(f"cell {c!r} of {line!r} is not padded")
    return [c[1:-1] for c in cells]


def parse_md(text):
    """(header, rows); raises ValueError unless line 2 is the |---| separator of as many columns."""
    lines = text.rstrip("\n").split("\n")
    head = md_cells(lines[0])
    if len(lines) < 2 or lines[1] != "|" + " --- |" * len(head):
        raise ValueError(f"no header separator row of {len(head)} columns: {lines[1:2]}")
    return head, [md_cells(x) for x in lines[2:]]


def flat(cell):
    return cell.replace("\r", " ").replace("\n", " ")


def formats_of(name, args, env=None, want_rc=0):
    """Run the command in every format; check each parses and csv and md agree. Returns
    {fmt: stdout} plus "csv_rows", "md_rows", "head", "json"."""
    out = {}
    for f in FORMATS:
        rc, o, e = ft(*args, "--output-format", f, env=env)
        check(f"{name} --output-format {f}: exit {want_rc}", rc == want_rc, f"exit {rc}\n{e}\n{o[:2000]}")
        out[f] = o
    try:
        out["json"] = json.loads(out["json"])
        check(f"{name}: json is one JSON document", True)
    except ValueError as x:
        check(f"{name}: json is one JSON document", False, f"{x}\n{out['json'][:1000]}")
        out["json"] = None
    head, rows = parse_csv(out["csv"])
    check(f"{name}: csv has a header and rows of as many cells",
          head and all(len(r) == len(head) for r in rows), out["csv"][:2000])
    try:
        mhead, mrows = parse_md(out["md"])
        check(f"{name}: md has its header separator row", True)
    except (ValueError, IndexError) as x:
        check(f"{name}: md has its header separator row", False, f"{x}\n{out['md'][:2000]}")
        mhead, mrows = [], []
    out.update(head=head, csv_rows=rows, md_head=mhead, md_rows=mrows)
    check(f"{name}: md and csv have the same header", mhead == head, f"{mhead}\n{head}")
    return out


def same_cells(name, out, keys=None):
    """md rows == csv rows (all columns, or the key columns of runs that measure twice)."""
    head = out["head"]
    idx = [head.index(k) for k in keys] if keys else range(len(head))
    a = [[flat(r[i]) for i in idx] for r in out["csv_rows"]]
    b = [[r[i] for i in idx] for r in out["md_rows"]]
    check(f"{name}: md has the csv's rows" + (f" ({', '.join(keys)})" if keys else ""), a == b, f"{a}\n{b}")


def col(out, key, rows="csv_rows"):
    i = out["head"].index(key)
    return [r[i] for r in out[rows]]


def json_agrees(name, args, out, env=None, same=None):
    """--json and --output-format json (out["json"], parsed): equal, or same(a, b)."""
    rc, o, e = ft(*args, "--json", env=env)
    a = json.loads(o) if rc == 0 else None
    b = out["json"]
    ok = a is not None and b is not None and (same(a, b) if same else a == b)
    check(f"{name}: --json and --output-format json agree", ok, f"{e}{o[:600]}\n{json.dumps(b)[:600]}")


def bad_format(name, args, env=None):
    rc, o, e = ft(*args, "--output-format", "xml", env=env)
    check(f"{name} --output-format xml: exit 2 naming the flag and the choices",
          rc == 2 and ("--output-format: 'xml' is none of table, json, csv, md" in e
                       or "bad value 'xml' for --output-format: expected one of table|json|csv|md" in e),
          f"exit {rc}: {e}")


try:
    # ---------------------------------------------------------------- gpus (2 fake GPUs, then none)
    fake2 = {"FTBENCH_TEST_FAKE_GPUS": "2"}
    g = formats_of("gpus", ["gpus"], env=fake2)
    same_cells("gpus", g)
    table = [ln.split()[:2] for ln in g["table"].splitlines()[1:]]
    check("gpus: the md rows are the table's (index, uuid)", table == [r[:2] for r in g["md_rows"]],
          f"{table}\n{g['md_rows']}")
    check("gpus: csv index/uuid/name from the JSON",
          [[str(x["index"]), x["uuid"], x["name"]] for x in (g["json"] or {}).get("gpus", [])] ==
          [r[:3] for r in g["csv_rows"]], g["csv"])
    json_agrees("gpus", ["gpus"], g, env=fake2)
    rc, o, e = ft("gpus", "--output-format", "csv", env={"FTBENCH_TEST_FAKE_GPUS": "0"})
    check("gpus, no GPU: csv is the header alone, the reason on stderr",
          rc == 0 and o.count("\n") == 1 and o.startswith("index,uuid,") and "no GPUs" in e, f"{rc} {o!r} {e!r}")
    bad_format("gpus", ["gpus"])

    # ---------------------------------------------------------------- cpu (field, value)
    c = formats_of("cpu", ["cpu"])
    same_cells("cpu", c, ["field"])
    kv = dict(c["csv_rows"])
    # the human table: one line per csv row, in order, its label in 17 columns, the value with its unit
    tab = [(ln[:17].strip(), ln[17:]) for ln in c["table"].splitlines()]
    label = {"model": ("model", ""), "physical_cores": ("physical cores", ""), "logical_cpus": ("logical cpus", ""),
             "numa_nodes": ("numa nodes", ""), "isa": ("isa", ""), "llc_mib": ("llc", " MiB"),
             "memory_gib": ("memory", " GiB"), "memory_available_gib": ("memory available", " GiB")}
    check("cpu: the table's lines are the csv rows, in order (label, value and unit)",
          len(tab) == len(c["csv_rows"]) == len(label) and
          all(f in label and lab == label[f][0] and val == v + label[f][1] for (lab, val), (f, v) in zip(tab, c["csv_rows"])),
          f"{tab}\n{c['csv_rows']}")
    j = c["json"] or {}
    check("cpu: csv agrees with the JSON", kv.get("model") == j.get("model") and
          kv.get("physical_cores") == str(j.get("physical_cores")) and kv.get("isa") == " ".join(j.get("isa", [])),
          f"{kv}\n{j}")
    json_agrees("cpu", ["cpu"], c)
    bad_format("cpu", ["cpu"])

    # ---------------------------------------------------------------- cpu-moe (a short real run)
    # --format stays the weight format beside --output-format (q4_0: the smallest experts)
    small = ["cpu-moe", "--format", "q4_0", "--warmup", "0", "--isa", "auto", "--working-set-mib", "8",
             "--read-passes", "1", "--repeat", "2", "--batch", "1,2"]
    m = formats_of("cpu-moe", small)
    same_cells("cpu-moe", m, ["batch", "isa", "kernel", "experts_per_step"])
    batch, table = None, []
    for ln in m["table"].splitlines():
        hb = re.search(r"  batch (\d+) \(", ln)
        if hb:
            batch = hb.group(1)
        elif re.match(r"(scalar|avx2|avx512\w*|amx)\s", ln):
            table.append([batch] + ln.split()[:2])
    keys = [[r[0], r[1], r[2]] for r in m["md_rows"]]
    check("cpu-moe: the md rows are the table's (batch, isa, kernel)", table == keys and len(keys) == 2,
          f"{table}\n{keys}")
    check("cpu-moe --format q4_0: the q4_0 kernel", all(k.startswith("w4") for k in col(m, "kernel")) and len(col(m, "kernel")) == 2, m["csv"])
    check("cpu-moe: figures are numbers (GB/s, %, ms)",
          all(float(x) > 0 for x in col(m, "gbs") + col(m, "read_gbs") + col(m, "read_pct") + col(m, "step_ms")),
          m["csv"])
    jm = m["json"] or {}
    check("cpu-moe: the JSON's batches and tiers are the csv's",
          [[str(b["batch"]), r["isa"], r["kernel"]] for b in jm.get("batches", []) for r in b["results"]] == keys,
          json.dumps(jm)[:800])

    def same_run_shape(a, b):
        def shape(d):
            return [(x["batch"], x["format"], x["model"], x["geometry"], [r["isa"] for r in x["results"]],
                     sorted(x), sorted(x["results"][0])) for x in d["batches"]]
        return sorted(a) == sorted(b) and shape(a) == shape(b)
    json_agrees("cpu-moe", small, m, same=same_run_shape)
    bad_format("cpu-moe", small)

    # ---------------------------------------------------------------- bw (fake measurements)
    fake1 = {"FTBENCH_TEST_FAKE_GPUS": "1"}
    bwargs = ["bw", "--dtype", "bf16,nvfp4", "--model", "qwen3-30b", "--repeat", "2", "--no-legacy-copy",
              "--no-checks", "-o", os.path.join(T, "bw.json")]
    b = formats_of("bw", bwargs, env=fake1)
    same_cells("bw", b)
    rows = b["table"].split("workload ", 1)[-1].split("\n\n")[0].splitlines()[1:]
    table = [[r.split()[0], r.split()[1], r.split()[-2], "" if r.split()[-1] == "-" else r.split()[-1]] for r in rows]
    keys = [[r[1], r[2], r[10], r[11]] for r in b["md_rows"]]
    check("bw: the md rows are the table's (workload, format, decision, fetch)", table == keys and len(keys) == 3,
          f"{table}\n{keys}")
    check("bw: saved: goes to stderr in csv and md, stdout is the rows alone",
          "saved:" not in b["csv"] and "saved:" not in b["md"] and b["table"].rstrip().endswith("bw.json"), b["csv"])
    # the csv run's own profile (-o) holds the csv's figures
    def num(v, f):
        return f % v if isinstance(v, (int, float)) else ""

    def fetch(e):
        """The fetch fraction of a hybrid verdict (README: the gather's share of the overlapped pair,
        else gather / CPU), in [0, 1]."""
        if e.get("recommended") != "hybrid":
            return ""
        co, go = e.get("cpu_moe_overlap_gbs"), e.get("pcie_gather_overlap_gbs")
        f = go / (go + co) if co and go else e["pcie_gather_gbs"] / e["cpu_moe_gbs"]
        return f"{min(1.0, max(0.0, f)):.3f}"
    _, rows = parse_csv(ft(*bwargs, "--output-format", "csv", env=fake1)[1])
    prof = json.load(open(os.path.join(T, "bw.json")))
    want = []
    for wk, ks in [("(dtype)", prof["dtype_kernels"])] + [(w, v["kernels"]) for w, v in prof["workloads"].items()]:
        for f, e in ks.items():
            want.append([prof["gpu"]["uuid"], wk, f, f"{e['expert_bytes'] / 2**20:.2f}", f"{e['cpu_moe_gbs']:.2f}",
                         e["cpu_moe_isa"], f"{e['pcie_gather_gbs']:.2f}", f"{e['cpu_moe_overlap_gbs']:.2f}",
                         f"{e['pcie_gather_overlap_gbs']:.2f}", f"{e['ratio']:.3f}", e["recommended"],
                         fetch(e), "", "", num(e.get("hybrid_max_batch"), "%.0f"), e.get("note") or ""])
    check("bw: csv figures are the profile's (every column)", rows == want, f"{rows}\n{want}")
    # the table's figure columns are the csv's, in the table's precision (its own column list: one)
    table = [r.split() for r in b["table"].split("workload ", 1)[-1].split("\n\n")[0].splitlines()[1:]]
    want = [[r[1], r[2], f"{float(r[3]):.2f}", f"{float(r[4]):.1f}", f"({r[5]})", f"{float(r[6]):.1f}",
             f"{float(r[7]):.1f}", f"{float(r[8]):.1f}", f"{float(r[9]):.2f}", r[10], r[11] or "-"] for r in rows]
    check("bw: the table's rows are the csv's figures (exp MiB, GB/s, ratio, decision, fetch)", table == want,
          f"{table}\n{want}")

    def same_profile(a, b):
        return all(a[k] == b[k] for k in ("dtypes", "ceilings", "threshold", "gpu")) and \
            a["dtype_kernels"].keys() == b["dtype_kernels"].keys()
    json_agrees("bw", bwargs, b, env=fake1, same=same_profile)
    bad_format("bw", bwargs, env=fake1)

    # ---------------------------------------------------------------- profile show (the bw profile)
    penv = dict(fake1, FREETOKEN_BENCHBW_PATH=os.path.join(T, "bw.json"))
    p = formats_of("profile show", ["profile", "show"], env=penv)
    same_cells("profile show", p)
    rows = p["table"].split("\nformat ", 1)[-1].split("\n")[1:]
    table = [r.split()[:2] for r in rows if r and not r.startswith(("warning", "workload", "figures"))][:len(p["md_rows"])]
    check("profile show: the md rows are the table's (format, rec)",
          table == [r[:2] for r in p["md_rows"]] and len(table) == 2, f"{table}\n{p['md_rows']}")
    check("profile show: json is the file", p["json"] == json.load(open(os.path.join(T, "bw.json"))))
    json_agrees("profile show", ["profile", "show"], p, env=penv)
    rc, o, e = ft("profile", "show", "--format", "md", env=penv)
    check("profile --format md is --output-format md", rc == 0 and o == p["md"], f"{rc} {e}")

    # ---------------------------------------------------------------- profile history (two kept bw runs)
    hargs = [a for a in bwargs if a not in ("-o", os.path.join(T, "bw.json"))]
    for extra in ([], ["--max-spread", "0.001"]):  # kept without -o: one valid, one checked and not
        ft(*[a for a in hargs if a != "--no-checks"], *extra, env=fake1)
    uuid = prof["gpu"]["uuid"]
    h = formats_of("profile history", ["profile", "history", "--gpu", uuid], env=fake1)
    same_cells("profile history", h)
    hist = h["json"] or []
    want = []
    for pr in hist:
        v = {True: "yes", False: "no"}.get(pr.get("valid"), "")
        d = str(len(pr["drift"])) if isinstance(pr.get("drift"), list) else ""
        for f, e in pr["dtype_kernels"].items():
            want.append([pr["timestamp"], num(pr["ceilings"].get("cpu_stream_read_gbs"), "%.1f"), v, d, f,
                         num(e.get("cpu_moe_gbs"), "%.1f"), num(e.get("pcie_gather_gbs"), "%.1f"), e["recommended"]])
    check("profile history: csv is a row per kept profile and format, from the JSON",
          len(hist) == 2 and h["csv_rows"] == want and {r[2] for r in want} == {"yes", "no"}, f"{h['csv']}\n{want}")
    table, cur = [], None
    for ln in h["table"].splitlines()[1:]:
        x = ln.split()
        cur = x[:4] if not ln.startswith(" ") else cur  # the profile's cells: on its first row only
        table.append(cur + x[-4:])
    shown = [[r[0], r[1], {"no": "NO", "": "-"}.get(r[2], r[2]), r[3] or "-"] + r[4:] for r in want]
    check("profile history: the table's rows are the csv's", table == shown and
          sum(not ln.startswith(" ") for ln in h["table"].splitlines()) == 3, f"{table}\n{shown}")
    json_agrees("profile history", ["profile", "history", "--gpu", uuid], h, env=fake1)
    bad_format("profile history", ["profile", "history", "--gpu", uuid], env=fake1)

    # ---------------------------------------------------------------- cache-copy --from-json
    fixture = json.load(open(FIXTURE))
    cc = formats_of("cache-copy --from-json", ["cache-copy", "--from-json", FIXTURE])
    same_cells("cache-copy", cc)
    table, slots = [], None
    for ln in cc["table"].splitlines():
        hs = re.search(r"cache (\d+) slots", ln)
        if hs:
            slots = hs.group(1)
        elif re.match(r"\s*\d+\s+\d+\s+[0-9.]+\s", ln):
            x = ln.split()
            table.append([slots, x[0], x[2], x[4], x[8], x[-1]])  # slots, bs, miss, time_ms, bw_GBps, ok
    keys = [[r[2], r[5], r[7], r[9], r[13], r[23]] for r in cc["md_rows"]]
    check("cache-copy: the md rows are the table's (slots, bs, miss, time_ms, bw_GBps, ok)",
          table == keys and len(keys) == 6, f"{table}\n{keys}")
    want = []
    for res in fixture["results"]:
        for r in res["rows"]:
            want.append([res["model"], res["format"], str(res["cache_slots"]), res["path"], res["copy"], str(r["bs"]),
                         str(r["active"]), f"{r['miss_rate']:.2f}", str(r["misses"]), f"{r['time_ms']:.4f}",
                         f"{r['time_ms_spread']['min']:.4f}", f"{r['time_ms_spread']['max']:.4f}",
                         f"{r['copy_MiB']:.2f}", f"{r['bw_GBps']:.2f}", f"{r['tok_ms']:.2f}", f"{r['ensure_us']:.2f}",
                         f"{r['linear_GBps']:.2f}", f"{r['fused_GBps']:.2f}", f"{r['memcpy_GBps']:.2f}",
                         f"{r['proxy_GBps']:.2f}", f"{r['pct_of_linear']:.1f}", f"{r['proxy_pct_of_linear']:.1f}",
                         f"{r['fused_over_per_bank']:.3f}", "yes" if r["verified"] else "no", ""])
    check("cache-copy: every csv cell is the saved result's figure", cc["csv_rows"] == want,
          f"{cc['csv_rows'][:2]}\n{want[:2]}")
    check("cache-copy: --output-format json is the saved result", cc["json"] == fixture)
    json_agrees("cache-copy --from-json", ["cache-copy", "--from-json", FIXTURE], cc)
    rc, o, e = ft("cache-copy", "--from-json", "-", "--output-format", "csv", stdin=json.dumps(fixture))
    check("cache-copy --from-json - reads stdin", rc == 0 and o == cc["csv"], f"{rc} {e}")

    # the same result as ftbenchd keeps it: GET /benchmark/jobs/ID (valid by api/schemas/job.schema.json)
    job = {"id": "0123456789abcdef", "kind": "cache-copy", "state": "succeeded",
           "args": {"models": ["qwen3-30B"], "batch_sizes": [1, 4, 32], "miss_rates": [1]},
           "argv": [FT, "cache-copy", "--models", "qwen3-30B", "--result-fd", "3"],
           "gpu": {"index": 0, "uuid": fixture["gpu"]["uuid"]}, "host_exclusive": False, "timeout_s": 3600,
           "created_at": "2026-11-30T19:54:00Z", "started_at": "2026-11-30T19:54:01Z",
           "finished_at": "2026-11-30T19:54:30Z", "duration_s": 29.0, "queue_position": None,
           "progress": {"done": 2, "total": 2, "label": "done"}, "cancel_requested": False, "exit_status": 0,
           "signal": None, "error": None, "error_detail": None, "result": fixture, "profile_path": None,
           "idempotency_key": None,
           "links": {"self": "/benchmark/jobs/0123456789abcdef", "events": "/benchmark/jobs/0123456789abcdef/events",
                     "log": "/benchmark/jobs/0123456789abcdef/log", "cancel": "/benchmark/jobs/0123456789abcdef/cancel"}}
    schema = json.load(open(os.path.join(ROOT, "api", "schemas", "job.schema.json")))
    try:
        jsonschema.validate(job, schema)
        check("the job fixture is valid by job.schema.json", True)
    except jsonschema.ValidationError as x:
        check("the job fixture is valid by job.schema.json", False, x.message)
    jp = os.path.join(T, "job.json")
    json.dump(job, open(jp, "w"))
    for f in FORMATS:
        rc, o, e = ft("cache-copy", "--from-json", jp, "--output-format", f)
        check(f"cache-copy --from-json JOB --output-format {f}: the result's {f}",
              rc == 0 and (json.loads(o) == fixture if f == "json" else o == cc[f]), f"{rc} {e}\n{o[:500]}")
    # an error row (the cache smaller than the active set) as run_config writes it
    err = copy.deepcopy(fixture)
    err["results"][0]["rows"].append({"bs": 64, "active": 128, "miss_rate": 1.0, "misses": 128,
                                      "error": "cache smaller than the active set"})
    rc, o, e = ft("cache-copy", "--from-json", "-", "--output-format", "csv", stdin=json.dumps(err))
    last = parse_csv(o)[1][3] if rc == 0 else []
    check("cache-copy: an error row keeps bs/active/miss/misses and its error, no figures",
          last[5:9] == ["64", "128", "1.00", "128"] and all(x == "" for x in last[9:24]) and
          last[24] == "cache smaller than the active set", f"{rc} {e}\n{last}")
    rc, o, e = ft("cache-copy", "--from-json", "-", stdin=json.dumps(err))
    check("cache-copy table: the error row", rc == 0 and re.search(r"\n +64 +128 +1\.00 +128  cache smaller", o), o)
    for desc, doc, msg in (
            ("a bw job", dict(job, kind="bw"), "a bw job, not cache-copy"),
            ("a queued job", dict(job, state="queued", result=None), "the job has no result (state queued)"),
            ("a failed job", dict(job, state="failed", result=None, error="worker exited 1"),
             "no result (state failed: worker exited 1)"),
            ("a profile", prof, "not a cache-copy result"),
            ("rows missing", {"results": [{"model": "x"}]}, "results[0] has no model name or no \"rows\" array")):
        rc, o, e = ft("cache-copy", "--from-json", "-", stdin=json.dumps(doc))
        check(f"cache-copy --from-json {desc}: exit 2, saying why", rc == 2 and msg in e and o == "", f"{rc} {e}")
    rc, o, e = ft("cache-copy", "--from-json", "-", stdin="{not json")
    check("cache-copy --from-json of no JSON: exit 2 with the parser's line", rc == 2 and "(line 1)" in e, e)
    rc, o, e = ft("cache-copy", "--from-json", os.path.join(T, "none.json"))
    check("cache-copy --from-json of a missing file: exit 2 naming it", rc == 2 and "none.json" in e, e)
    bad_format("cache-copy", ["cache-copy", "--from-json", FIXTURE])

    # hostile cells (a model path, a format, an error as a user may have them): quotes, commas,
    # CR/LF, pipes, backslashes, UTF-8; every cell read back by csv, the Markdown parser and json
    hostile = ['a "q" b, c\nd|e\\f \u00fcn\u00ef \u5b57 "" ,', '"', '""', ',', 'x|y', '|', '\\|', 'tab\there',
               'cr\r\nlf', ' lead and trail ', '\u2603 snow"man', 'end"']
    hdoc = copy.deepcopy(fixture)
    res0 = hdoc["results"][0]
    hrows = []
    for i, h in enumerate(hostile):
        res = copy.deepcopy(res0)
        res["model"], res["format"], res["path"] = h, hostile[(i + 1) % len(hostile)], hostile[(i + 2) % len(hostile)]
        res["rows"] = [dict(res0["rows"][0], error=hostile[(i + 3) % len(hostile)])]
        hrows.append(res)
    hdoc["results"] = hrows
    hout = {}
    for f in FORMATS:
        # bytes, not text mode: universal newlines would turn a cell's CR LF into LF
        r = subprocess.run([FT, "cache-copy", "--from-json", "-", "--output-format", f], env=ENV,
                           input=json.dumps(hdoc).encode(), capture_output=True, timeout=300)
        rc, o, e = r.returncode, r.stdout.decode("utf-8"), r.stderr.decode("utf-8", "replace")
        check(f"cache-copy hostile cells --output-format {f}: exit 0", rc == 0, f"{rc} {e}")
        hout[f] = o
    want = [[r["model"], r["format"], r["path"], r["rows"][0]["error"]] for r in hrows]
    head, rows = parse_csv(hout["csv"])
    got = [[x[head.index(k)] for k in ("model", "format", "path", "error")] for x in rows] if head else []
    check("cache-copy hostile cells: python's csv reads back every cell as it was (RFC 4180 quoting)",
          got == want and all(len(x) == len(head) for x in rows), f"{got}\n{want}\n{hout['csv'][:1500]}")
    try:
        mh, mr = parse_md(hout["md"])
        mgot = [[x[mh.index(k)] for k in ("model", "format", "path", "error")] for x in mr]
    except (ValueError, IndexError) as x:
        mgot = [str(x)]
    check("cache-copy hostile cells: the Markdown rows hold every cell (pipes and backslashes escaped, "
          "line breaks as spaces)", mgot == [[flat(c) for c in r] for r in want], f"{mgot}\n{hout['md'][:1500]}")
    try:
        jgot = json.loads(hout["json"])
    except ValueError as x:
        jgot = str(x)
    check("cache-copy hostile cells: json is the document", jgot == hdoc, str(jgot)[:800])

    # cache-copy --list
    cl = formats_of("cache-copy --list", ["cache-copy", "--list"])
    same_cells("cache-copy --list", cl)
    table = [ln.split() for ln in cl["table"].splitlines()[1:]]
    check("cache-copy --list: the md rows are the table's", table == cl["md_rows"], f"{table}\n{cl['md_rows']}")
    check("cache-copy --list: json has the models",
          [x["model"] for x in (cl["json"] or {}).get("models", [])] == col(cl, "model"))

    # ---------------------------------------------------------------- decode (sse_server)
    dj = os.path.join(T, "decode.jsonl")
    dargs = ["decode", "--model", "/models/m", "--tokens", "16", "--backend", "offload,cpu", "--driver-wait", "0",
             "--log-dir", T, "--server-cmd",
             f"{SSE} --port {{port}} --model {{model}} --lifetime 60 --rate 500 --fault-backend cpu --exit-at-start {{flags}}"]
    d = formats_of("decode", dargs, want_rc=1)
    same_cells("decode", d, ["backend", "tokens_from", "completion_tokens", "output_sha1", "ok"])
    table = [[ln.split()[0], "no" if "FAILED" in ln else "yes"] for ln in d["table"].split("\n\n", 1)[-1].splitlines()[2:]
             if re.match(r"(offload|cpu) ", ln)]
    check("decode: the md rows are the table's (backend, ok)", table == [[r[0], r[13]] for r in d["md_rows"]] and
          table == [["offload", "yes"], ["cpu", "no"]], f"{table}\n{d['md_rows']}")
    check("decode: the failed backend's error is one csv cell", "failing at start" in d["csv_rows"][1][14], d["csv"])
    if os.path.exists(dj):
        os.unlink(dj)
    rc, o, e = ft(*dargs, "--output-format", "json", "--json", dj)
    lines = [json.loads(x) for x in open(dj)] if os.path.exists(dj) else []
    doc = json.loads(o) if o.strip() else {}
    check("decode: --output-format json's rows are the --json FILE rows of the same run",
          rc == 1 and doc.get("rows") == lines and len(lines) == 2 and doc.get("failed") == ["cpu"], f"{rc} {e}\n{o[:500]}")
    check("decode: the failed backend has no figures, the other all of them",
          len(d["csv_rows"]) == 2 and all(x == "" for x in d["csv_rows"][1][1:13]) and
          all(float(x) > 0 for x in d["csv_rows"][0][1:9]), d["csv"])
    bad_format("decode", dargs)

    # ---------------------------------------------------------------- every table command says so in --help
    for cmd in ("gpus", "cpu", "cpu-moe", "bw", "cache-copy", "decode", "profile", "jobs"):
        rc, o, e = ft(cmd, "--help")
        check(f"{cmd} --help explains --output-format", re.search(r"^  --output-format F +table", o, re.M), o[-400:])
finally:
    shutil.rmtree(T, ignore_errors=True)
print(f"1..{n}")
sys.exit(1 if bad else 0)
