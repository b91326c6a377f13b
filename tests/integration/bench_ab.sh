#!/bin/sh
# bench/ab.py, the A/B driver: two builds of the real ftbench on the cpu-moe suite (tiny sizes, 2
# rounds), then stand-in ftbench programs with known figures: the interleaved, rotated order,
# median / min / max and the paired ratio per cell, --tune passed through, a failing build
# reported (exit 1), --deadline, and usage errors (exit 2).
set -u
echo "1..17"
B=${BUILD:-build}
FT="$(pwd)/$B/bin/ftbench"
T=$(mktemp -d /tmp/ft-bench-ab-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
n=0
check() { desc=$1; shift; n=$((n + 1)); if "$@"; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; sed 's/^/#   /' "$T/err" | tail -n 20; fi; }
py() { python3 -c "$@"; }

# 1. the real ftbench, twice (a second build folder holding the same binary)
mkdir -p "$T/old/bin" && ln -s "$FT" "$T/old/bin/ftbench"
python3 bench/ab.py --build "old=$T/old" --build "new=$B" --suite cpu-moe:q4_0 --rounds 2 \
	--args 'cpu-moe=--repeat 2 --warmup 0 --read-passes 0 --threads 1' --out "$T/real" >"$T/out" 2>"$T/err"
rc=$?
check "two builds, cpu-moe, 2 rounds: exit 0" [ $rc -eq 0 ]
check "runs alternate old,new then new,old" [ "$(py 'import json,sys
print(" ".join("%d%s" % (x["round"], x["variant"]) for x in map(json.loads, open(sys.argv[1]))))' "$T/real/runs.jsonl")" = "1old 1new 2new 2old" ]
check "the table has a GB/s row with both builds and the ratio" \
	grep -Eq '^\| cpu-moe \| q4_0 \| [a-z0-9]+ b1 GB/s \| [0-9.]+ \[[0-9.]+, [0-9.]+\] \(2\) \| [0-9.]+ \[[0-9.]+, [0-9.]+\] \(2\) \| [0-9.]+ \[' "$T/out"
check "table.md is the printed table; results.json has the cells" \
	sh -c "cmp -s '$T/out' '$T/real/table.md' && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d[\"cells\"][0][\"by_variant\"]; sys.exit(not (d[\"runs\"] == 4 and d[\"failed\"] == 0 and c[\"old\"][\"n\"] == 2 and \"ratio_vs_base\" in c[\"new\"]))' '$T/real/results.json'"

# 2. stand-ins: figure = BASE + 10 x (the how-many-th call of this program), argv logged
fake() { # fake NAME BASE [EXIT]
	cat >"$T/$1" <<EOF
#!/bin/sh
echo "\$*" >>"$T/$1.argv"
k=\$(wc -l <"$T/$1.argv")
[ "${3:-0}" = 0 ] || { echo "$1: broken on purpose" >&2; exit ${3:-0}; }
echo "{\"format\": \"\$3\", \"batch\": 1, \"results\": [{\"isa\": \"avx2\", \"gbs\": \$(($2 + 10 * k)), \"read_ceiling_gbs\": 100, \"fraction_of_read_ceiling\": 0.5}]}"
EOF
	chmod +x "$T/$1"
}
fake a 0
fake b 2
python3 bench/ab.py --build "a=$T/a" --build "b=$T/b" --suite cpu-moe:bf16 --rounds 2 --out "$T/f" >"$T/out" 2>"$T/err"
check "stand-ins: exit 0" [ $? -eq 0 ]
check "a: median 15 of 10 and 20; b: 17 of 12 and 22; b/a the median of 12/10 and 22/20" \
	grep -q '^| cpu-moe | bf16 | avx2 b1 GB/s | 15.0 \[10.0, 20.0\] (2) | 17.0 \[12.0, 22.0\] (2) | 1.150 \[1.100, 1.200\] |$' "$T/out"
check "a figure derived from a fraction: % of read" grep -q '| avx2 b1 % of read | 50.0 \[50.0, 50.0\] (2) |' "$T/out"

# 3. --tune settings: every build runs every setting, `--tune K=V` per pair
rm -f "$T"/*.argv
python3 bench/ab.py --build "a=$T/a" --tune base= --tune pf=pf_dist=0,item_kb=256 --suite cpu-moe:nvfp4 \
	--rounds 1 --out "$T/t" >"$T/out" 2>"$T/err"
check "one build, two settings: labelled by setting" grep -q '| base median \[min, max\] | pf median \[min, max\] | pf/base |' "$T/out"
check "the setting's pairs reach ftbench as --tune K=V" \
	[ "$(cat "$T/a.argv")" = "$(printf 'cpu-moe --format nvfp4 --json\ncpu-moe --format nvfp4 --json --tune pf_dist=0 --tune item_kb=256')" ]

# 4. a build that fails: its runs are listed, the exit status says so
fake bad 0 3
python3 bench/ab.py --build "a=$T/a" --build "bad=$T/bad" --suite cpu-moe:bf16 --rounds 2 --out "$T/x" >"$T/out" 2>"$T/err"
check "a failing build: exit 1" [ $? -eq 1 ]
check "its runs are named with the error" [ "$(grep -c '^- round [12] cpu-moe bf16 bad: exit 3: bad: broken on purpose$' "$T/out")" = 2 ]

# cache-copy's rows: one cell per slots, batch, miss rate and figure
cat >"$T/cc" <<'EOF2'
#!/bin/sh
echo '{"results": [{"model": "qwen3-30b", "cache_slots": 128, "rows": [{"bs": 32, "miss_rate": 1.0, "time_ms": 0.25, "ensure_us": 7.5, "pct_of_linear": 91.0}, {"bs": 1, "miss_rate": 0.5, "error": "cache smaller than the active set"}]}]}'
EOF2
chmod +x "$T/cc"
python3 bench/ab.py --build "cc=$T/cc" --suite cache-copy:qwen3-30b --rounds 2 --out "$T/c" >"$T/out" 2>"$T/err"
check "cache-copy: time_ms, ensure_us and %lin per row, a row with an error left out" \
	[ "$(grep -c '^| cache-copy | qwen3-30b | C128 bs32 miss 1.0 \(time_ms\|ensure_us\|pct_of_linear\) |' "$T/out")" = 3 -a \
	  "$(grep -c 'bs1 ' "$T/out")" = 0 ]

sed 's/"pct_of_linear": 91.0}/"pct_of_linear": 91.0, "verified": false}/' "$T/cc" >"$T/ccbad" && chmod +x "$T/ccbad"
python3 bench/ab.py --build "cc=$T/ccbad" --suite cache-copy:qwen3-30b --rounds 1 --out "$T/cb" >"$T/out" 2>"$T/err"
check "cache-copy: a row not verified fails the run, named" sh -c "[ $? -eq 1 ] && grep -q 'qwen3-30b C128 bs32 miss 1.0: the copy was not verified' '$T/out'"

# 5. --deadline: what it did not start is said; usage errors
python3 bench/ab.py --build "a=$T/a" --suite cpu-moe:bf16,q4_0 --rounds 50 --deadline 0.000001 --out "$T/d" >"$T/out" 2>"$T/err"
check "--deadline: 99 of 100 runs not started, said so" grep -q '^99 runs not started' "$T/out"
python3 bench/ab.py --build "a=$T/nowhere" >"$T/out" 2>"$T/err"
check "a build without ftbench: exit 2, named" sh -c "[ $? -eq 2 ] && grep -q 'nowhere' '$T/err'"
python3 bench/ab.py --build "a=$T/a" --suite nosuch >"$T/out" 2>"$T/err"
check "an unknown suite: exit 2" [ $? -eq 2 ]
python3 bench/ab.py --build "a=$T/a" --tune 'x=pf_dist' >"$T/out" 2>"$T/err"
check "a --tune pair without =: exit 2" sh -c "[ $? -eq 2 ] && grep -q 'not KEY=VALUE' '$T/err'"
