#!/usr/bin/python3
"""make test-mutants: a test is worth its break. Each entry of MUTANTS is one deliberate break
(one per module that moves or computes bytes, plus the test machinery itself), applied alone to a
copy of the tree, which is then rebuilt (make all) and tested with its subset: every unit test
(units=True) plus the integration tests named. The break must make that subset fail. Prints the
table "break -> tests that failed" (the one in bench/RESULTS.md); exit status 1 when a break
survives, when a break no longer applies (its text is gone from the source: update the list), or
when the unbroken copy does not pass the union of the subsets first.

usage: tests/mutants.py [NAME...]    (default: every mutant; FT_MUTANTS_KEEP=1 keeps the copy)"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# name, file, text, replacement, what it breaks, units?, integration tests, extra environment
# (extra "cpu": the /proc/cpuinfo flags, space-separated, without which the break is not run)
MUTANTS = [
    ("banks-transpose", "src/moe/banks.c",
     "(uint64_t)e * eb, 1, (uint32_t)N,", "(uint64_t)e * eb, j != 3, (uint32_t)N,",
     "gpt-oss down_proj_blocks loaded untransposed", True, ["tests/integration/load_weights.sh"], {}),
    ("banks-deinterleave", "src/moe/banks.c",
     "c & 1 ? p->cols / 2 + c / 2 : c / 2;", "c & 1 ? c / 2 : p->cols / 2 + c / 2;",
     "gpt-oss bf16's gate and up rows swapped when de-interleaved", True, ["tests/integration/load_weights.sh"], {}),
    ("loader-parallel", "src/moe/loader.c",
     "buf + (a - c->off), (size_t)(e - a));", "buf + (a - c->off), (size_t)(e - a) - (e - a > 1));",
     "the parallel loader drops the last byte of each piece of a chunk", True,
     ["tests/integration/load_weights.sh"], {}),
    ("ftw-writer", "src/moe/ftw.c",
     "rc = write_at(fd, ftbanks_layer(c->b, e->bank, e->layer), sz, off);",
     "rc = write_at(fd, ftbanks_layer(c->b, e->bank, e->layer) + (sz > 1), sz - (sz > 1), off);",
     "FTW conversion writes each bank layer one byte early", True, ["tests/integration/load_weights.sh"], {}),
    ("checksum-step", "src/moe/checksum.c",
     "uint64_t step = total / CKS_SAMPLES;", "uint64_t step = total / CKS_SAMPLES + 1;",
     "the bank checksum samples with another step than the reference's", True,
     ["tests/integration/load_weights.sh"], {}),
    ("safetensors-abort", "src/moe/safetensors.c",
     "\tmemset(out, 0, sizeof *out);\n\tif (len < 2)", "\tmemset(out, 0, sizeof *out);\n\tabort();\n\tif (len < 2)",
     "the safetensors header parser aborts on every header", False, ["tests/integration/fuzz.sh"], {}),
    ("bw-partial-profile", "src/bench/bw_run.c",
     "\t\tif (r < 0) {\n\t\t\tftbw_meas_release(&m);\n\t\t\treturn r;\n\t\t}\n\t\tif (m.gather.rc < 0)",
     "\t\tif (r < 0) {\n\t\t\tftbw_meas_release(&m);\n\t\t\tu->nitems = i;\n\t\t\tu->err[0] = '\\0';\n"
     "\t\t\treturn 0;\n\t\t}\n\t\tif (m.gather.rc < 0)",
     "a failed measurement ends the run with the partial profile, written to the store", False,
     ["build/tests/integration/test_bw"], {}),
    ("bw-fetch-fraction", "src/bench/bw_decide.c",
     "f = pcie_ov / (pcie_ov + cpu_ov);", "f = pcie_ov / cpu_ov;",
     "ftbench's hybrid fetch fraction from the overlap pair", True, [], {}),
    ("profile-fetch-fraction", "src/profile/profile.c",
     "f = a / (a + b);", "f = a / b;",
     "libftprofile's fetch fraction from the overlap pair", True, [], {}),
    ("decode-sha1", "src/bench/decode.c",
     'ftsha1_hex(s.text ? s.text : "", s.text_len, hex);', 'ftsha1_hex("", 0, hex);',
     "decode's output_sha1 hashes the empty string", False, ["build/tests/integration/test_decode"], {}),
    ("sha1-constant", "src/util/sha1.c", "k = 0x5A827999u;", "k = 0x5A827998u;",
     "a SHA-1 round constant", True, [], {}),
    ("cpu-moe-bf16-truncate", "src/moe/cpu/kern_avx512bf16.c",
     "\t\t__m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + k + 16), _mm512_loadu_ps(x + k));\n"
     "\t\t_mm512_storeu_si512(d + 2 * k, (__m512i)v);",
     "\t\tfor (int i = 0; i < 32; i++) {\n\t\t\tunion { float f; uint32_t u; } c = {x[k + i]};\n"
     "\t\t\t((uint16_t *)(void *)d)[k + i] = (uint16_t)(c.u >> 16);\n\t\t}",
     "bf16-activation tier: activations truncated instead of rounded", True, [], {"cpu": "avx512_bf16"}),
    ("cpu-moe-scalar", "src/moe/cpu/kern_scalar.c",
     "acc += ftkern_bf16(row[k]) * x[k];", "acc += ftkern_bf16(row[k]) * x[k] * (k != 0);",
     "the scalar bf16 kernel drops the first product of each row", True, [], {}),
    ("cpu-moe-dyn-pout", "src/moe/cpu/sched_dyn.c",
     "memset(po + (size_t)b * (size_t)H + (size_t)(c * 16), 0, (size_t)(e - c * 16) * sizeof(float));",
     "(void)e;",
     "the dynamic schedule adds into partial outputs the previous step left", True, [], {}),
    ("cpu-moe-amx-int8-scale", "src/moe/cpu/kern_amx_int8_body.h",
     "i8_post((const int32_t (*)[16])cb[1], _mm512_load_ps(sxt[g][j + 1])",
     "i8_post((const int32_t (*)[16])cb[1], _mm512_load_ps(sxt[g][j])",
     "AMX int8 row kernel (the tiles and their C emulation): a block scaled by its neighbour's token scales",
     True, [], {"cpu": "avx512_vnni"}),
    ("cpu-moe-amx-min-nb", "src/moe/cpu/executor.c",
     "kn->amx_i8_min_nb = (int)t->amx_min_nb;", "kn->amx_i8_min_nb = FTKERN_AMX_I8_MIN_NB;",
     "amx tier dispatch: the executor never hands tune.amx_min_nb to the int8 tiles (the default threshold always)",
     True, [], {"cpu": "avx512_vnni avx512_bf16"}),
    ("cpu-moe-mx-vbmi", "src/moe/cpu/kern_mx_body.h",
     "cb = _mm512_set1_epi64(0x3C382C281C180C08LL)", "cb = _mm512_set1_epi64(0x3C382C281C180C09LL)",
     "mxfp4 K split, VBMI decode: the second column of each pair reads its first nibble one bit off",
     True, [], {"cpu": "avx512_vnni avx512vbmi"}),
    ("cpu-moe-tune-range", "src/moe/cpu/tune.c",
     "ok = (k->words && v == 0) || (v >= k->lo && v <= k->hi);", "ok = (k->words && v == 0) || v >= k->lo;",
     "a knob above its range is taken (ftcpumoe_create no longer refuses it)", True, [], {}),
    ("slot-cache-lru", "src/moe/slot_cache.c",
     "if (want[e] && slot_for[e] >= 0)\n\t\t\tsc->usage[slot_for[e]] = step;",
     "if (want[e] && slot_for[e] >= 0)\n\t\t\tsc->usage[slot_for[e]] = sc->usage[slot_for[e]];",
     "a slot-cache hit does not refresh the slot's recency (LRU becomes FIFO)", True, [], {}),
    ("formats-global", "src/moe/formats.c",
     'set1(&o[2], "gate_up_global", FTFMT_DT_FP16, 2 * I);', 'set1(&o[2], "gate_up_global", FTFMT_DT_FP16, I);',
     "nvfp4's gate_up global-scale bank half its size", True, [], {}),
    ("sse-append", "src/util/sse.c",
     "\tmemcpy(b->p + b->len, s, n);\n\tb->len += n;", "\tmemcpy(b->p + b->len, s, n);\n\tb->len += n - (n > 1);",
     "the SSE line buffer loses a byte per append", True, ["build/tests/integration/test_decode"], {}),
    ("fsutil-write-atomic", "src/util/fsutil.c",
     "r = ftfs_write_all(fd, data, len);", "r = ftfs_write_all(fd, data, len - (len > 1));",
     "atomic file writes drop the last byte", True, ["tests/integration/profile_cli.sh"], {}),
    ("stats-median", "src/util/stats.c",
     "st.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);", "st.median = s[n / 2];",
     "the median of an even count of samples", True, [], {}),
    # five bugs that once passed every test
    ("bw-median-max", "src/bench/bw.c",
     "\t\treturn NAN;\n\treturn ftstat_of(p->gbs, p->n).median;", "\t\treturn NAN;\n\treturn ftstat_of(p->gbs, p->n).max;",
     "a measured figure's median replaced by its max (ratios, verdicts, batch sweep)", True, [], {}),
    ("fingerprint-microcode", "src/profile/fingerprint.c",
     'differs(was, now, "cpu_microcode", why', 'differs(was, now, "cpu_mircocode", why',
     "a microcode update never marks a profile stale", True, [], {}),
    ("deploy-workloads", "src/bench/bw_host.c",
     'json_object_get(w, "recommended_moe_backend");', 'json_object_get(w, "recommended_moe_backends");',
     "deployment concurrent not applied to the per-model workload entries' backend map", True, [], {}),
    ("decode-cold-ttft", "src/bench/decode.c",
     "\t\tif (i == 0 && err == 0)\n\t\t\tr->ttft_cold_ms", "\t\tif (err == 0)\n\t\t\tr->ttft_cold_ms",
     "ttft_cold_ms taken from every warm-up instead of the first", False,
     ["build/tests/integration/test_decode"], {}),
    ("csv-quote-doubling", "src/cli/output.c",
     "\t\t\t\t\tif (*c == '\"')\n\t\t\t\t\t\tfputc('\"', o);\n", "",
     "the csv printer no longer doubles a cell's quotes (RFC 4180)", False,
     ["tests/integration/output_formats.sh"], {}),
    ("journal-seq", "daemon/runner.c",
     "\t\t\tftd.jobs.next_seq = j->seq + 1;", "\t\t\t(void)0;",
     "after a journal reload new jobs take sequence numbers of old ones (the list out of submission order)",
     False, ["tests/integration/daemon.sh"], {}),
    ("isa-need-vnni", "src/moe/cpu/isa.c",
     "FTCPU_AVX512DQ |\n\t\tFTCPU_AVX512_VNNI,", "FTCPU_AVX512DQ,",
     "the avx512vnni tier taken on a CPU without AVX512_VNNI", True, [], {}),
    ("daemon-retry-after", "daemon/api.c",
     "} else if (status == 429 || status == 503) {", "} else if (status == 503) {",
     "no Retry-After on 429 (daemon_test.py run with PYTHONOPTIMIZE=2)", False,
     ["tests/integration/daemon.sh"], {"PYTHONOPTIMIZE": "2"}),
    ("sched-no-reserve", "daemon/sched.c", "			if (v[i].host_excl)\n				host_resv_excl = 1;",
     "			if (v[i].host_excl)\n				host_resv_excl = 0;",
     "a host-exclusive job waiting for the host reserves nothing (later jobs starve it)", True, [], {}),
    ("journal-no-interrupt", "daemon/journal.c", "		j->state = FTD_JOB_INTERRUPTED;\n", "",
     "a job running when the daemon died stays running after a restart", True, [], {}),
    ("flags-default", "src/cli/flags.c", "if (f->def && has_arg(f) && apply(c, f, f->name, f->def, opts) != 0) {",
     "if (0 && f->def && has_arg(f) && apply(c, f, f->name, f->def, opts) != 0) {",
     "a flag row's default is not put into its field before the command line", True, [], {}),
    ("table-csv-format", "src/cli/table.c", "!human && c->csv_fmt ? c->csv_fmt : c->fmt", "c->fmt",
     "csv and md cells rounded as the human table's", False, ["tests/integration/output_formats.sh"], {}),
    ("jobargs-bound", "daemon/jobflags.c", "\t\t\tm[i].hi = f->hi;", "\t\t\tm[i].hi = f->hi + 1;",
     "the daemon's bound of a job argument differs from its flag's", False,
     ["tests/integration/flags_equal.sh"], {}),
    ("front-no-cap", "daemon/front.c", "	if (held >= p->cap)\n		return -1;", "	if (held >= 4 * p->cap)\n		return -1;",
     "the front hands a pool sockets past its cap (libmicrohttpd's own limit is reached)", False,
     ["tests/integration/front.sh"], {}),
    ("final-unjournaled", "daemon/daemon.c", "		j->state = was;\n", "		(void)was;\n",
     "a final state the journal refused is announced anyway", False, ["tests/integration/front.sh"], {}),
    ("url-as-typed", "daemon/config.c",
     "	if (ftd_config_url_normalize(url, u, sizeof u, why, sizeof why) < 0)\n		return 0;",
     "	snprintf(u, sizeof u, \"%s\", url);", "decode-urls compared as typed (dot segments pass)", True, [], {}),
    ("sysusers-video", "systemd/ftbenchd.sysusers", "m ftbenchd video\n", "",
     "the ftbenchd user not in the video group", False, ["tests/integration/systemd_units.sh"], {}),
    ("fuzz-link", "tests/fuzz/fuzz_safetensors.c", " src/util/errmsg.c\n * fuzz-libs:", "\n * fuzz-libs:",
     "fuzz_safetensors links without errmsg.c (it skipped and passed)", False, ["tests/integration/fuzz.sh"], {}),
    ("runner-skip", "scripts/run-tests.sh", "s=$(grep -Eic '^ok .*# *skip' \"$log\")", "s=0",
     "the runner counts a skip as a pass", False, ["tests/integration/runner.sh"], {}),
    ("runner-missing", "scripts/run-tests.sh", 'p=0 f=1 s=0 rc=127 why="no such test: $t"', "continue",
     "the runner drops a missing test path", False, ["tests/integration/runner.sh"], {}),
    ("runner-silent", "scripts/run-tests.sh", 'why="reported no check"; fi', ':; fi',
     "the runner passes a test program that reports no check", False, ["tests/integration/runner.sh"], {}),
    ("runner-plan", "scripts/run-tests.sh", 'why="planned $plan checks, reported $((p + s + f))"', ":",
     "the runner passes a script that stops before its plan", False, ["tests/integration/runner.sh"], {}),
    ("runner-terminal", "scripts/run-tests.sh",
     '\t\t*.sh) setsid -w timeout "$timeout" sh "$t" >"$log" 2>&1 </dev/null &;;\n'
     '\t\t*)    setsid -w timeout "$timeout" "$t" >"$log" 2>&1 </dev/null &;;\n\t\tesac\n'
     '\t\ttpid=$!\n\t\twait "$tpid"\n',
     '\t\t*.sh) timeout "$timeout" sh "$t" >"$log" 2>&1 ;;\n\t\t*)    timeout "$timeout" "$t" >"$log" 2>&1 ;;\n'
     '\t\tesac\n',
     "the runner as it was: each test under timeout in a background process group of the terminal (#17 defect 13)", False,
     ["tests/integration/runner.sh"], {}),
    ("metrics-unmeasured-offload", "daemon/profiles.c",
     "\t\t\tif (vd && label_ok(k))\n\t\t\t\tftd_mbuf_cat(m, \"ftbenchd_profile_hybrid",
     "\t\t\tif (label_ok(k) && (vd = vd ? vd : \"offload\"))\n\t\t\t\tftd_mbuf_cat(m, \"ftbenchd_profile_hybrid",
     "/metrics says offload (0) for an unmeasured format again", False,
     ["tests/integration/fleet.sh"], {}),
    ("nfd-no-sweep", "daemon/profiles.c", "int k = ftfs_sweep_temps_of(ftd.cfg.nfd_file);", "int k = 0;",
     "a planted NFD temporary survives a restart", False, ["tests/integration/fleet.sh"], {}),
    ("health-npd-unknown", "src/cli/cmd_health.c", "return npd ? 2 : 3;", "return npd ? 1 : 3;",
     "ftbench health --mode npd says NonOK when it cannot tell (daemon down)", False,
     ["tests/integration/fleet.sh"], {}),
    ("firstboot-ignores-busy", "daemon/rebench.c", "if (json_is_integer(np) && json_integer_value(np) > 0) {",
     "if (0) {", "the first-boot bw job starts on a GPU another process holds", False,
     ["tests/integration/fleet.sh"], {}),
    ("page-no-outlier", "daemon/page.c", "if (count >= 3 && med > 0 && v < FTD_PAGE_OUTLIER * med)",
     "if (0)", "the comparison view does not mark a degraded GPU", False, ["tests/integration/page.sh"], {}),
    ("page-replay-skews-merged", "daemon/page_profile.c", "return isfinite(k) ? k : 0;", "return 0 * k;",
     "the replay map draws skewed points over the skew-0 ones at the same cache size and reuse", False,
     ["tests/integration/page.sh"], {}),
    ("validate-workload", "src/bench/validation.c", "ftval_judge(rec, ftprof_rec_name(w), pc, pr);",
     "ftval_judge(rec, ftprof_rec_name(ftprof_recommend(p, format)), pc, pr);",
     "profile validate judges a run by the default verdict while naming its workload's replay point", False,
     ["tests/integration/profile_validate.sh"], {}),
]


def log(msg):
    print(msg, flush=True)


def run(cmd, cwd, env=None, out=None):
    with open(out, "w") if out else open(os.devnull, "w") as f:
        return subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT).returncode


def subset(copy, units, integ):
    tests = []
    if units:
        d = os.path.join(copy, "build", "tests", "unit")
        tests += sorted(os.path.join("build/tests/unit", n) for n in os.listdir(d) if n.startswith("test_"))
    return tests + list(integ)


def has_cpu(flag):
    with open("/proc/cpuinfo") as f:
        return re.search(r"\b%s\b" % re.escape(flag), f.read()) is not None


def main():
    want = set(sys.argv[1:])
    mutants = [m for m in MUTANTS if not want or m[0] in want]
    if want - {m[0] for m in mutants}:
        log(f"unknown mutant(s): {sorted(want - {m[0] for m in mutants})}")
        return 2
    tmp = tempfile.mkdtemp(prefix="ftmutants-")
    copy = os.path.join(tmp, "tree")
    os.makedirs(copy)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.split(b"\0")
    for f in files:
        if f and os.path.isfile(os.path.join(ROOT, f.decode())):
            dst = os.path.join(copy, f.decode())
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, f.decode()), dst)
    if os.path.isdir(os.path.join(ROOT, "build")):  # an incremental rebuild per mutant
        shutil.copytree(os.path.join(ROOT, "build"), os.path.join(copy, "build"), symlinks=True)
    env = dict(os.environ, BUILD="build")
    env.pop("MAKEFLAGS", None)
    env.pop("MAKELEVEL", None)
    bad = 0
    rows = []
    t0 = time.time()
    if run(["make", "-j2", "all"], copy, env, os.path.join(tmp, "build.log")):
        log(f"the unbroken copy does not build: {tmp}/build.log")
        return 1
    union = []
    for m in mutants:
        for t in subset(copy, m[5], m[6]):
            if t not in union:
                union.append(t)
    log(f"baseline: the unbroken copy with the {len(union)} tests of the subsets")
    if run(["sh", "scripts/run-tests.sh", *union], copy, env, os.path.join(tmp, "baseline.log")):
        log(f"the unbroken copy fails its tests: {tmp}/baseline.log")
        return 1
    for name, path, old, new, what, units, integ, extra in mutants:
        src = os.path.join(copy, path)
        with open(src) as f:
            orig = f.read()
        tests = subset(copy, units, integ)
        where = ("unit tests" if units else "") + (" + " if units and integ else "") + \
            " ".join(os.path.basename(t) for t in integ)
        if "cpu" in extra and not all(has_cpu(c) for c in extra["cpu"].split()):
            rows.append((name, path, what, where, f"not run: this CPU lacks {extra['cpu']}"))
            log(f"{name}: not run (no {extra['cpu']})")
            continue
        if orig.count(old) != 1:
            rows.append((name, path, what, where, f"DOES NOT APPLY ({orig.count(old)} matches)"))
            log(f"{name}: its text occurs {orig.count(old)} times in {path}: update the list")
            bad += 1
            continue
        t1 = time.time()
        try:
            with open(src, "w") as f:
                f.write(orig.replace(old, new))
            blog = os.path.join(tmp, name + ".build.log")
            if run(["make", "-j2", "all"], copy, env, blog):
                rows.append((name, path, what, where, "DOES NOT BUILD"))
                log(f"{name}: does not build ({blog})")
                bad += 1
                continue
            tlog = os.path.join(tmp, name + ".log")
            tenv = dict(env, **{k: v for k, v in extra.items() if k != "cpu"})
            rc = run(["sh", "scripts/run-tests.sh", *tests], copy, tenv, tlog)
            with open(tlog, errors="replace") as f:
                text = f.read()
            failed = re.findall(r"^failed: (.*)$", text, re.M)
            caught = failed[-1].strip() if failed else ""
            if rc != 0 and caught:
                rows.append((name, path, what, where, caught))
                log(f"{name}: caught by {caught} ({time.time() - t1:.0f} s)")
            else:
                rows.append((name, path, what, where, "SURVIVED"))
                log(f"{name}: SURVIVED ({tlog})")
                bad += 1
        finally:
            with open(src, "w") as f:
                f.write(orig)
    log(f"\n| break | module | subset run | failed tests |\n|---|---|---|---|")
    for name, path, what, where, caught in rows:
        log(f"| {name}: {what} | `{path}` | {where} | {caught} |")
    log(f"\n{len(rows)} breaks, {bad} not caught or not applied; {time.time() - t0:.0f} s")
    if os.environ.get("FT_MUTANTS_KEEP") or bad:
        log(f"copy and logs kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
