#!/bin/sh
# The engine harness's GPU-free parts (bench/engines), against ftbench itself: a routing trace
# written by `ftbench replay --save-trace` passes routing.py's checks and one written by
# routing.py replays in `ftbench replay --trace` (the test build's cost model) with its reuse;
# routing.py's errors; compare_replay.py's table and counts on a replay and an engine run made
# to disagree at known points; the probe driver's request checks. Prints TAP.
set -u
B=${BUILD:-build}
FTH="$(pwd)/$B/tests/integration/ftbench_hooks" # the test build: fake GPUs (cli.h)
E="$(pwd)/bench/engines"
T=$(mktemp -d /tmp/ft-engines-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export XDG_CACHE_HOME="$T/cache" FREETOKEN_BENCHBW_SYSDIR="$T/sys" CUDA_VISIBLE_DEVICES= FTBENCH_TEST_FAKE_GPUS=1
unset FREETOKEN_BENCHBW_PATH FREETOKEN_BENCH_PROGRESS
n=0
check() { desc=$1; shift; n=$((n + 1)); if "$@" >"$T/out" 2>&1; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; sed 's/^/#   /' "$T/out" | head -n 20; fi; }
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

SMALL="--format bf16 --layers 4 --steps 8 --warmup 16 --fractions 0,0.5,1 --no-caps --no-store"
"$FTH" replay $SMALL --workloads uniform,reuse:0.85 --cache 0.4,0.7 --save-trace "$T/t.json" --json \
	>"$T/replay.json" 2>"$T/err"
check "ftbench's saved traces pass routing.py --check" sh -c \
	"python3 '$E/routing.py' --check '$T/t-uniform.json' && python3 '$E/routing.py' --check '$T/t-reuse-0.85.json'"
python3 "$E/routing.py" --check "$T/t-reuse-0.85.json" >"$T/shape" 2>&1
check "routing.py reads ftbench's shape and reuse (4 layers, top-8, reuse near 0.85)" \
	python3 -c "import json; d=json.load(open('$T/shape')); assert (d['layers'], d['top_k'], d['batch']) == (4, 8, 1) and abs(d['reuse'] - 0.85) < 0.05, d"
python3 "$E/routing.py" --workload reuse:0.6 --layers 4 --steps 40 --seed 3 >"$T/r.json"
"$FTH" replay $SMALL --trace "$T/r.json" --cache 0.4 --json >"$T/tr.json" 2>"$T/err"; rc=$?
check "a routing.py trace replays in ftbench (exit 0)" [ "$rc" -eq 0 ]
check "ftbench measures the reuse routing.py generated" \
	python3 -c "import json; p=json.load(open('$T/tr.json'))['replay']['bf16']['points'][0]; assert abs(p['reuse_measured'] - 0.6) < 0.08, p['reuse_measured']"
python3 "$E/routing.py" --workload zipf:1.2 --layers 2 --steps 5 --seed 9 >"$T/z9a"
python3 "$E/routing.py" --workload zipf:1.2 --layers 2 --steps 5 --seed 9 >"$T/z9b"
python3 "$E/routing.py" --workload zipf:1.2 --layers 2 --steps 5 --seed 10 >"$T/z10"
check "routing.py is deterministic per seed (and the seed matters)" sh -c "cmp -s '$T/z9a' '$T/z9b' && ! cmp -s '$T/z9a' '$T/z10'"
printf '{"format":"ftbench-routing-trace","version":1,"layers":2,"experts":8,"top_k":2,"batch":1,"steps":[[[1,9],[0,1]]]}' >"$T/bad.json"
check "routing.py --check: an id out of range is named, exit 2" sh -c \
	"python3 '$E/routing.py' --check '$T/bad.json' 2>'$T/e'; [ \$? -eq 2 ] && grep -q 'id 9 is not in \[0, 8)' '$T/e'"

# compare_replay.py: an engine run made from the replay's own points, winners turned at two
python3 - "$T/replay.json" "$T/moe.json" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
pts = []
for fmt, blk in rep["replay"].items():
    for i, p in enumerate(blk["points"]):
        arms = []
        for m in p["modes"]:
            ms = m["ms_step"]["median"]
            if m["mode"] == "offload":
                arms.append({"mode": "offload", "ms_per_step": {"median": ms}})
            elif m["mode"] == "hybrid_fraction":
                # the engine's hybrid twice as slow at f 0.5: its best f is another one
                k = 2.0 if m["fetch_fraction"] == 0.5 else 1.0
                arms.append({"mode": "hybrid", "fetch_fraction": m["fetch_fraction"], "ms_per_step": {"median": ms * k}})
        winner = p["winner"] if i % 2 == 0 else {"hybrid": "offload", "offload": "hybrid", "tie": "tie"}[p["winner"]]
        name = "t-" + p["workload"].replace(" ", "-") + ".json"
        pts.append({"format": fmt, "workload": name, "cache_fraction": p["cache_fraction"], "arms": arms,
                    "winner": winner, "best_fetch_fraction": None, "hybrid_over_offload": 1.0})
json.dump({"format": "ftbench-engine-moe", "version": 1, "points": pts}, open(sys.argv[2], "w"))
PY
python3 "$E/compare_replay.py" "$T/replay.json" "$T/moe.json" >"$T/cmp.md" 2>"$T/err"; rc=$?
check "compare_replay.py: exit 0, a row per point" sh -c "[ $rc -eq 0 ] && [ \$(grep -c '^| bf16 |' '$T/cmp.md') -eq 4 ]"
named=$(jget "$T/moe.json" 'sum(p["winner"] != "tie" for p in d["points"])')
agree=$(python3 -c "
import json
r = json.load(open('$T/replay.json'))['replay']['bf16']['points']; e = json.load(open('$T/moe.json'))['points']
print(sum(a['winner'] == b['winner'] for a, b in zip(r, e) if b['winner'] != 'tie'))")
check "compare_replay.py counts the agreeing points ($agree of $named)" grep -q "winner agrees at $agree of $named points" "$T/cmp.md"
check "compare_replay.py: the engine at the replay's best f, as a share of its best hybrid" \
	python3 - "$T/cmp.md" "$T/replay.json" "$T/moe.json" <<'PY'
import json, sys
rows = [l.split("|")[1:-1] for l in open(sys.argv[1]) if l.startswith("| bf16 |")]
rep = json.load(open(sys.argv[2]))["replay"]["bf16"]["points"]
eng = json.load(open(sys.argv[3]))["points"]
for row, p, e in zip(rows, rep, eng):
    hyb = {a["fetch_fraction"]: a["ms_per_step"]["median"] for a in e["arms"] if a["mode"] == "hybrid"}
    want = min(hyb.values()) / hyb[min(hyb, key=lambda f: abs(f - p["best_fetch_fraction"]))]
    assert abs(float(row[-2]) - want) < 0.006, (row[-2], want)
PY
# compare_replay.py with the harness's rounds: per-round shares and the engine's own resolution
python3 - "$T/replay.json" "$T/moe2.json" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))["replay"]["bf16"]["points"][:2]
pts = []
for i, p in enumerate(rep):
    rf = p["best_fetch_fraction"]
    other = 1.0 if rf != 1.0 else 0.5
    # point 0: the arm at the replay's f overlaps the best one's interval; point 1: it does not
    at_ci = [9.0, 12.0] if i == 0 else [11.0, 12.0]
    arms = [{"mode": "offload", "ms_per_step": {"median": 5.0, "ci95": [4.9, 5.1]}},
            {"mode": "hybrid", "fetch_fraction": rf, "round_medians": [10.0, 12.0, 11.0],
             "ms_per_step": {"median": 11.0, "ci95": at_ci}},
            {"mode": "hybrid", "fetch_fraction": other, "round_medians": [8.0, 12.0, 13.0],
             "ms_per_step": {"median": 10.0, "ci95": [8.0, 10.5]}}]
    name = "t-" + p["workload"].replace(" ", "-") + ".json"
    pts.append({"format": "bf16", "workload": name, "cache_fraction": p["cache_fraction"], "arms": arms,
                "winner": "offload", "best_fetch_fraction": other, "hybrid_over_offload": 0.5})
json.dump({"format": "ftbench-engine-moe", "version": 1, "points": pts}, open(sys.argv[2], "w"))
PY
python3 "$E/compare_replay.py" "$T/replay.json" "$T/moe2.json" >"$T/cmp2.md" 2>"$T/err"
# per round: min(8, 10) / 10 = 0.8, min(12, 12) / 12 = 1, min(11, 13) / 11 = 1
check "compare_replay.py: each round's share (rounds 0.80-1.00)" grep -q "0.91 (rounds 0.80-1.00) |" "$T/cmp2.md"
check "compare_replay.py: the replay's f within the engine's interval of its best at 1 of 2 points" \
	grep -q "1 of 2 within the 95% interval of the engine's best arm" "$T/cmp2.md"

# freetoken_moe.py --rounds: the arms' order rotates a round, an arm's rounds pool their steps
cat >"$T/rounds.py" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import freetoken_moe as m
assert m.rotated([0, 1, 2], 0) == [0, 1, 2] and m.rotated([0, 1, 2], 1) == [1, 2, 0]
assert m.rotated([0, 1, 2], 4) == [1, 2, 0] and m.rotated([], 3) == []
def run(vals, miss):
    return {"mode": "hybrid", "fetch_fraction": 0.5, "ms_per_step": m.spread_of(vals),
            "miss_rate": miss, "active_per_layer_step": 8, "missing_per_layer_step": 2,
            "fetched_per_layer_step": 1, "cpu_per_layer_step": 1}
r = m.pool_rounds([run([1.0, 2.0, 3.0], 0.2), run([10.0, 11.0, 12.0], 0.4)])
assert r["rounds"] == 2 and r["round_medians"] == [2.0, 11.0], r
assert r["ms_per_step"]["samples"] == 6 and r["ms_per_step"]["median"] == 6.5, r["ms_per_step"]
assert abs(r["miss_rate"] - 0.3) < 1e-9 and r["fetch_fraction"] == 0.5, r
PYEOF
check "freetoken_moe.py: rounds rotate the arms and pool their steps" python3 "$T/rounds.py" "$E"

# freetoken_moe.py --confirm: the sweep's best arm head to head with each candidate, in fresh
# rounds alone; a candidate at the best arm's own f is not run
cat >"$T/confirm.py" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import freetoken_moe as m
ran = []
def run(arm):
    f = arm["fetch_fraction"]
    ran.append(f)
    k = sum(1 for x in ran if x == f)  # this arm's k-th round
    ms = {0.5: [10.0, 10.0, 12.0], 0.375: [10.5, 11.0, 12.0], 0.75: [20.0, 20.0, 20.0]}[f][k - 1]
    return {"mode": "hybrid", "fetch_fraction": f, "ms_per_step": m.spread_of([ms - 0.1, ms, ms + 0.1]),
            "miss_rate": 0.1, "active_per_layer_step": 8, "missing_per_layer_step": 2,
            "fetched_per_layer_step": 1, "cpu_per_layer_step": 1}
# the sweep said 0.5 at 9 ms (lucky): the candidates 0.375 (twice), 0.5 (the same arm), 0.75
c = m.confirm({"fetch_fraction": 0.5, "ms_per_step": {"median": 9.0}}, [0.375, 0.5, 0.75, 0.375], 3, run)
assert c["rounds"] == 3 and c["best_fetch_fraction"] == 0.5, c
assert ran == [0.5, 0.375, 0.75, 0.375, 0.75, 0.5, 0.75, 0.5, 0.375], ran   # rotated, 3 arms x 3
got = {x["fetch_fraction"]: x for x in c["candidates"]}
assert list(got) == [0.375, 0.5, 0.75], got
assert got[0.5] == {"fetch_fraction": 0.5, "same_as_best": True, "of_best_hybrid": 1.0}, got[0.5]
# pooled medians of the confirm rounds: best 10.1 (not the sweep's 9), 0.375 11.0; per round
# 10 / 10.5, 10 / 11, 12 / 12
assert got[0.375]["of_best_hybrid"] == round(10.1 / 11.0, 3), got[0.375]
assert got[0.375]["of_best_hybrid_rounds"] == [round(10 / 11, 3), round(10 / 10.5, 3), 1.0], got[0.375]
assert got[0.375]["within_ci"] is True and got[0.75]["within_ci"] is False, got
assert got[0.75]["of_best_hybrid"] == 0.505, got[0.75]
ran.clear()
c = m.confirm({"fetch_fraction": 0.5}, [0.5], 3, run)
assert ran == [] and c["rounds"] == 0 and c["candidates"][0]["same_as_best"], (ran, c)
PYEOF
check "freetoken_moe.py --confirm: head to head in fresh rounds, the same arm not rerun" python3 "$T/confirm.py" "$E"

# freetoken_moe.layer_steps (the probe's layer_step measure) on a fake engine: each fetch count's
# pair in rounds, the order swapped each round, each side the least of its round medians
cat >"$T/lsteps.py" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import freetoken_moe as m
class Fake:
    L, E, K, B = 4, 16, 2, 1
    def __init__(self):
        self.calls = []
    def run(self, slots, arm, trace, warmup, steps, use_graph, threads, keep_cache=False):
        mode = arm["mode"]
        self.calls.append(mode)
        self.last = (slots, trace)
        n = len(self.calls)
        # per layer: offload 1 ms + a wild 5 ms once (call 5: round 2's), hybrid 1.2 ms, but
        # 3.2 ms in round 1 (call 3) and 1.6 ms in round 3 (call 7)
        ms = {"offload": 4.0 if n != 5 else 20.0, "hybrid": {3: 12.8, 7: 6.4}.get(n, 4.8)}[mode]
        return {"ms_per_step": m.spread_of([ms] * 3), "fetched_per_layer_step": 1.0,
                "cpu_per_layer_step": 0.0}
e = Fake()
r = m.layer_steps(e, [], 1, 3, 0, fetches=[1], fetch_rounds=3)
# base first, then rounds: off hyb | hyb off | off hyb
assert e.calls == ["offload", "offload", "hybrid", "hybrid", "offload", "offload", "hybrid"], e.calls
f = r["fetch"][0]
assert f["rounds"] == 3 and f["us"] == 1200.0 and f["us_rounds"] == [3200.0, 1200.0, 1600.0], f
assert f["offload_us_rounds"] == [1000.0, 5000.0, 1000.0] and f["offload_us"] == 1000.0, f
assert r["fetch_spread"] == "binomial" and r["fetch_slots"] == 16, r
# exact: every layer-step K - m resident experts and m cold ones, the layer-steps' in turn
e = Fake()
e.L, e.E, e.K = 16, 128, 8
r = m.layer_steps(e, [], 4, 96, 0, fetches=[3], fetch_rounds=1, fetch_spread="exact")
slots, tr = e.last
assert slots == 128 and len(tr["steps"]) == 100, (slots, len(tr["steps"]))
assert all(st[l][:5] == [0, 1, 2, 3, 4] and st[l][5:] == [8 + (s * 16 * 3 + l * 3 + i) % 120 for i in range(3)]
           for s, st in enumerate(tr["steps"]) for l in range(16)), tr["steps"][1]
# binomial: counts about the mean m (seeded), the cold ones still in turn
r = m.layer_steps(e, [], 4, 96, 0, fetches=[2], fetch_rounds=1, fetch_spread="binomial")
slots, tr = e.last
assert r["fetch_spread"] == "binomial" and slots == 256, (r, slots)
cnt = [sum(x >= 8 for x in st[l]) for st in tr["steps"] for l in range(16)]
mean = sum(cnt) / len(cnt)
assert 1.8 < mean < 2.2 and min(cnt) == 0 and max(cnt) >= 5, (mean, min(cnt), max(cnt))
assert all(len(ids) == 8 and ids[:8 - sum(x >= 8 for x in ids)] == list(range(8 - sum(x >= 8 for x in ids)))
           for st in tr["steps"] for ids in st), "resident experts first, then the cold ones"
r2 = m.layer_steps(e, [], 4, 96, 0, fetches=[2], fetch_rounds=1, fetch_spread="binomial", fetch_slots=819)
assert e.last[1] == tr and e.last[0] == 819, "seeded: the same counts; slots as asked"
ran = len(e.calls)
try:
    m.layer_steps(e, [0, 1], 4, 96, 0, fetches=[2], fetch_spread="poisson")
    raise SystemExit("a bad spread passed")
except ValueError as x:
    assert "binomial or exact" in str(x) and len(e.calls) == ran, (x, "refused before any run")
PYEOF
check "freetoken_moe.layer_steps: each fetch count in rounds, a wild round outvoted" python3 "$T/lsteps.py" "$E"

# freetoken_cpu_moe.py's layer_step request: a bad fetch_spread or fetch_slots refused (exit 2,
# the field named) before the engine is built (a stub freetoken: no torch here)
mkdir -p "$T/stub/freetoken" && echo '__version__ = "0"' >"$T/stub/freetoken/__init__.py"
cat >"$T/lsreq.py" <<'PYEOF'
import sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import freetoken_cpu_moe as c
base = {"layers": 16, "routes": [0, 1], "fetches": [1]}
for bad in ({"fetch_spread": "poisson"}, {"fetch_slots": -1}):
    rc = c.layer_step_main(dict(base, **bad), "bf16", 2048, 768, 128, 8, 0, 1, 1)
    assert rc == 2, (bad, rc)
PYEOF
check "freetoken_cpu_moe.py: a bad fetch_spread or fetch_slots refused, the field named" sh -c \
	"python3 '$T/lsreq.py' '$E' '$T/stub' 2>'$T/e' && grep -q \"fetch_spread 'poisson' (binomial or exact)\" '$T/e' && grep -q 'fetch_slots -1 (>= 0)' '$T/e'"
python3 - "$T/moe2.json" "$T/moe3.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p0, p1 = d["points"]
rf0 = next(a["fetch_fraction"] for a in p0["arms"] if a["mode"] == "hybrid" and a["round_medians"][0] == 10.0)
p0["confirm"] = {"rounds": 4, "candidates": [{"fetch_fraction": rf0, "of_best_hybrid": 0.97,
                  "of_best_hybrid_rounds": [0.9, 0.97, 1.04]}]}
p1["confirm"] = {"rounds": 4, "candidates": [{"fetch_fraction": 0.0, "of_best_hybrid": 0.5,
                  "of_best_hybrid_rounds": [0.5, 0.5, 0.5]}]}  # not the replay's f: not counted
json.dump(d, open(sys.argv[2], "w"))
PY
python3 "$E/compare_replay.py" "$T/replay.json" "$T/moe3.json" >"$T/cmp3.md" 2>"$T/err"
check "compare_replay.py: the head-to-head share at the replay's f, counted" sh -c \
	"grep -q '| 0.97 (0.90-1.04) |' '$T/cmp3.md' && grep -q 'head to head: 1 of 1 >= 0.95 (0.97..0.97)' '$T/cmp3.md'"

echo "1..$n"
