#!/bin/sh
# The gather's candidates side by side (issue 23): the GPU test, then per profile
# gather_variants (random plans) and cache-copy (consecutive plans, the default copy = proxy),
# then the default `ftbench bw`. Runs prebuilt binaries (the device gets them through .xfer):
#   B/tests/gpu/test_slot_cache_gpu, B/gather_variants, B/bin/ftbench
# usage: BUILD=build bench/gather_idle.sh OUT [MODELS]
# Logs land in OUT/logs, packed into OUT/gather_idle.tgz; a short table is printed last.
O=${1:?out}
B=${BUILD:-build}
MODELS=${2:-qwen3.5-35B qwen3-30B gemma4-26B minimax-m2.5-marlin minimax-m2.5-triton glm4.7-nvfp4 gpt-oss-20b gpt-oss-120b}
L="$O/logs"
mkdir -p "$L"
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current,driver_version --format=csv,noheader >"$L/gpu.txt" 2>&1
nproc >>"$L/gpu.txt"
echo "== test_slot_cache_gpu $(date -u +%T)"
timeout 150 "$B/tests/gpu/test_slot_cache_gpu" >"$L/test_gpu.txt" 2>&1; echo "test rc=$?"
grep -E "PASSED|FAILED|graph of|us/layer|µs" "$L/test_gpu.txt" | head -20
V=${GV_VARIANTS:-linear,memcpy,fused,fused_graph,proxy,proxy_b2b,proxy_bell,proxy_spin,proxy_graph,proxy_graph_b2b}
echo "== gather_variants $(date -u +%T)"
for m in $MODELS; do
	timeout ${GV_TIMEOUT:-40} "$B/gather_variants" "$m" 1,4,32 ${GV_REPS:-7} "$V"
done >"$L/variants.txt" 2>&1
echo "== cache-copy $(date -u +%T)"
for m in $MODELS; do
	timeout ${CC_TIMEOUT:-40} "$B/bin/ftbench" cache-copy --models "$m" --batch-sizes 1,4,32 --miss-rates 1 \
		--repeat ${CC_REPS:-7} --json >"$L/cc_$m.json" 2>"$L/cc_$m.err"
	echo "cache-copy $m rc=$? $(date -u +%T)"
done
if [ -z "${NO_BW:-}" ]; then
	# the default (proxy) and the SM gather, alternated
	for k in 1 2; do
		for gp in sm proxy; do
			t0=$(date +%s)
			timeout 90 "$B/bin/ftbench" bw --gather $gp --json >"$L/bw_${gp}_$k.json" 2>"$L/bw_${gp}_$k.err"
			echo "bw --gather $gp rc=$? $(( $(date +%s) - t0 )) s"
		done
	done
fi
tar -C "$O" -czf "$O/gather_idle.tgz" logs
echo "== done $(date -u +%T)"
# the short table: % of linear per variant, every profile and batch
grep -E "bs=|% of linear" "$L/variants.txt" | awk '/bs=/{if(line)print line; line=$1" "$3" "$4} /of linear/{sub("%","",$(NF-2)); line=line" "$1"="$(NF-2)} END{print line}'
python3 - "$L" <<'PY' || true
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + "/cc_*.json")):
    try:
        d = json.load(open(f))
    except Exception as e:
        print(f, "unreadable", e); continue
    for res in d.get("results", d if isinstance(d, list) else []):
        for r in res.get("rows", []):
            if not r.get("misses"):
                continue
            g = lambda k: r.get(k) or 0
            print("cc %-20s C=%-5s bs=%-2s n=%-3s lin %.2f | %%lin: time %.1f proxy %.1f fused %.1f memcpy %.1f | ens %.2f us %s" % (
                res.get("model"), res.get("cache_slots"), r.get("bs"), r.get("misses"), g("linear_GBps"),
                g("pct_of_linear"), g("proxy_pct_of_linear"), g("fused_pct_of_linear"), g("memcpy_pct_of_linear"),
                g("ensure_us"), "ok" if r.get("verified") else "NOT VERIFIED"))
PY
python3 - "$L" <<'PY' || true
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + "/bw_*.json")):
    try:
        d = json.load(open(f))
    except Exception as e:
        print(f, "unreadable", e); continue
    c = d["ceilings"]
    out = ["%-14s read %.1f lin %.1f |" % (f.split("/")[-1][:-5], c["cpu_stream_read_gbs"], c["pcie_linear_h2d_gbs"])]
    for k, v in d["dtype_kernels"].items():
        sp = v.get("cpu_moe_gbs_spread") or {}
        out.append("%s cpu %.1f (min %.1f) g %.1f ov %.1f/%.1f %s" % (k, v.get("cpu_moe_gbs") or 0, sp.get("min") or 0,
                   v.get("pcie_gather_gbs") or 0, v.get("cpu_moe_overlap_gbs") or 0, v.get("pcie_gather_overlap_gbs") or 0,
                   v.get("recommended")))
    print(" ".join(out))
PY
rm -rf "$L"
