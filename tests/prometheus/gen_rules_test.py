#!/usr/bin/env python3
"""Write tests/prometheus/ftbenchd.rules.test.yml: promtool unit tests of
etc/prometheus/ftbenchd.rules.yml with synthetic series for a fleet of 8 H200 hosts (one of them
degraded: a memory channel lost, so its CPU MoE and read ceiling are ~2/3 of the others') and a
cohort of 2 L40S hosts (too small to alert). Rerun after changing the fleet below:
    python3 tests/prometheus/gen_rules_test.py > tests/prometheus/ftbenchd.rules.test.yml
The file is checked in; tests/integration/fleet_manifests.sh runs promtool on it and checks that
this script still writes the same text."""
import json

H200, L40S = "NVIDIA H200", "NVIDIA L40S"
XEON, EPYC = "Intel(R) Xeon(R) Platinum 8480+", "AMD EPYC 9654 96-Core Processor"


def host(i, model, cpu):
    name = f"gpu-node-{i:02d}"
    return {"job": "ftbenchd", "instance": f"{name}:8377", "gpu": f"GPU-{i:08d}-0000-0000-0000-000000000000",
            "model_name": model, "hostname": name, "cpu_model": cpu}


def sel(metric, labels):
    return metric + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def series(metric, labels, value, n=30):
    return {"series": sel(metric, labels), "values": f"{value}x{n}"}


fleet = [host(i, H200, XEON) for i in range(1, 9)]
degraded = fleet[7]  # gpu-node-08
small = [host(i, L40S, EPYC) for i in (11, 12)]

cpu_moe = {h["hostname"]: 118 + 0.5 * i for i, h in enumerate(fleet)}
cpu_moe[degraded["hostname"]] = 80
read = {h["hostname"]: 205 + i for i, h in enumerate(fleet)}
read[degraded["hostname"]] = 140
cpu_moe.update({small[0]["hostname"]: 60, small[1]["hostname"]: 30})  # 50 %: no alert, cohort of 2
read.update({small[0]["hostname"]: 300, small[1]["hostname"]: 300})

cohort_series = []
for h in fleet + small:
    n = h["hostname"]
    cohort_series.append(series("ftbenchd_profile_cpu_moe_gbs", dict(h, dtype="bf16"), cpu_moe[n]))
    cohort_series.append(series("ftbenchd_profile_gather_gbs", dict(h, dtype="bf16"), 50))
    cohort_series.append(series("ftbenchd_profile_cpu_stream_read_gbs", h, read[n]))
    cohort_series.append(series("ftbenchd_profile_pcie_h2d_gbs", h, 55))
    cohort_series.append(series("ftbenchd_profile_pcie_d2h_gbs", h, 54))
    cohort_series.append(series("ftbenchd_profile_timestamp_seconds", h, 1795949710))


def median(v):
    v = sorted(v)
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


cohort_key = {"model_name": H200, "cpu_model": XEON}
med_moe = median([cpu_moe[h["hostname"]] for h in fleet])
med_read = median([read[h["hostname"]] for h in fleet])


def below(h, figure, ratio, dtype=None):
    labels = dict(h, figure=figure, severity="warning")
    if dtype:
        labels["dtype"] = dtype
    pct = f"{ratio * 100:.4g}%"
    return {"exp_labels": labels, "exp_annotations": {
        "summary": f"{h['hostname']} {figure}{' (' + dtype + ')' if dtype else ''} is {pct} of its cohort's median",
        "description": (f"GPU {h['gpu']} on {h['hostname']} ({h['model_name']}, {h['cpu_model']}): {figure} is "
                        "more than 15 % below the median of the hosts with the same GPU and CPU model. Look for a "
                        "DIMM or memory channel lost, a PCIe link trained down, a BIOS power profile, or a noisy "
                        "neighbour during the bw job.")}}


tests = [
    {  # 1: the cohort medians, and the one degraded host of eight alerts; the cohort of 2 does not
        "interval": "1m",
        "input_series": cohort_series,
        "promql_expr_test": [
            {"expr": sel("ftbenchd:cohort_cpu_moe_gbs:median", dict(cohort_key, dtype="bf16")), "eval_time": "5m",
             "exp_samples": [{"labels": sel("ftbenchd:cohort_cpu_moe_gbs:median", dict(cohort_key, dtype="bf16")),
                              "value": med_moe}]},
            {"expr": sel("ftbenchd:cohort_members:count", cohort_key), "eval_time": "5m",
             "exp_samples": [{"labels": sel("ftbenchd:cohort_members:count", cohort_key), "value": 8}]},
            {"expr": "ftbenchd:figure_over_cohort:ratio < 0.85", "eval_time": "5m",
             "exp_samples": [
                 {"labels": sel("ftbenchd:figure_over_cohort:ratio", dict(degraded, dtype="bf16", figure="cpu_moe_gbs")),
                  "value": 80 / med_moe},
                 {"labels": sel("ftbenchd:figure_over_cohort:ratio", dict(degraded, figure="cpu_stream_read_gbs")),
                  "value": 140 / med_read},
                 {"labels": sel("ftbenchd:figure_over_cohort:ratio", dict(small[1], dtype="bf16", figure="cpu_moe_gbs")),
                  "value": 30 / 45}]},
        ],
        "alert_rule_test": [
            {"alertname": "FtbenchdHostBelowCohort", "eval_time": "5m", "exp_alerts": []},  # pending (for: 10m)
            {"alertname": "FtbenchdHostBelowCohort", "eval_time": "15m", "exp_alerts": [
                below(degraded, "cpu_moe_gbs", 80 / med_moe, "bf16"),
                below(degraded, "cpu_stream_read_gbs", 140 / med_read)]},
        ],
    },
]


def one_alert_test(name, input_series, alertname, eval_time, exp):
    return {"interval": "1m", "input_series": input_series,
            "alert_rule_test": [{"alertname": alertname, "eval_time": eval_time, "exp_alerts": exp}]}


h3, h5, h6 = fleet[2], fleet[4], fleet[5]
verdict = dict(h3, dtype="nvfp4", source="replay")
tests.append(one_alert_test("verdict", [series("ftbenchd_verdict_agrees", verdict, 0),
                                        series("ftbenchd_verdict_agrees", dict(h5, dtype="nvfp4", source="engine"), 1)],
                            "FtbenchdVerdictDisagrees", "10m", [{
    "exp_labels": dict(verdict, severity="warning"),
    "exp_annotations": {
        "summary": f"{h3['hostname']} nvfp4: the replay validation disagrees with the profile's verdict",
        "description": ("Running the engine both ways (replay) picked the other backend for nvfp4 on GPU "
                        f"{h3['gpu']}. The profile's verdict is the rule of thumb; see its validation block "
                        "(ftbench profile show) before trusting it.")}}]))
tests.append(one_alert_test("invalid", [series("ftbenchd_profile_valid", h5, 0), series("ftbenchd_profile_valid", h6, 1)],
                            "FtbenchdProfileInvalid", "10m", [{
    "exp_labels": dict(h5, severity="warning"),
    "exp_annotations": {
        "summary": f"The stored profile of {h5['gpu']} on {h5['hostname']} is corrupt or not valid",
        "description": "Engines reading it fall back to offload. Run a bw job; see GET /profiles."}}]))
stale_desc = ("The machine no longer matches the profile's fingerprint (driver, PCIe link, CPU microcode, memory, "
              "kernel, tool version), or the profile is older than 30 days.")
# h6: fingerprint changed; h3: measured 40 days before the test's clock (which starts at 0)
tests.append(one_alert_test("stale", [series("ftbenchd_profile_stale", h6, 1, 120), series("ftbenchd_profile_stale", h5, 0, 120),
                                      series("ftbenchd_profile_timestamp_seconds", h3, -40 * 86400, 120),
                                      series("ftbenchd_profile_timestamp_seconds", h5, 0, 120)],
                            "FtbenchdProfileStale", "90m", [
    {"exp_labels": dict(h6, severity="info"),
     "exp_annotations": {"summary": f"The profile of {h6['gpu']} on {h6['hostname']} is stale", "description": stale_desc}},
    {"exp_labels": dict(h3, severity="info"),
     "exp_annotations": {"summary": f"The profile of {h3['gpu']} on {h3['hostname']} is stale", "description": stale_desc}}]))
drift = dict(degraded, figure="cpu_moe_gbs.bf16")
tests.append(one_alert_test("drift", [series("ftbenchd_profile_drift_ratio", drift, 0.67),
                                      series("ftbenchd_profile_drift_ratio", dict(h3, figure="cpu_moe_gbs.bf16"), 1.05)],
                            "FtbenchdProfileDrift", "1m", [{
    "exp_labels": dict(drift, severity="info"),
    "exp_annotations": {
        "summary": f"{degraded['hostname']} cpu_moe_gbs.bf16 moved to 67% of the previous profile's",
        "description": ("The new profile's figure left the previous profile's spread by more than 10 % on GPU "
                        f"{degraded['gpu']}.")}}]))
new = host(9, H200, XEON)
gi = {"job": "ftbenchd", "instance": new["instance"], "gpu": new["gpu"], "UUID": new["gpu"], "modelName": H200,
      "Hostname": new["hostname"], "pci_bus_id": "00000000:18:00.0", "index": "0"}
gi_old = dict(gi, instance=h3["instance"], gpu=h3["gpu"], UUID=h3["gpu"], Hostname=h3["hostname"])
tests.append(one_alert_test("missing", [series("ftbenchd_gpu_info", gi, 1, 600), series("ftbenchd_gpu_info", gi_old, 1, 600),
                                        series("ftbenchd_profile_timestamp_seconds", h3, 1795949710, 600)],
                            "FtbenchdProfileMissing", "7h", [{
    "exp_labels": dict(gi, severity="warning"),
    "exp_annotations": {
        "summary": f"GPU {new['gpu']} on {new['hostname']} has no profile",
        "description": ("ftbenchd lists the GPU but has no stored profile for it for 6 hours (rebench = on-change "
                        "measures a new node once its GPUs are idle; a failed bw job leaves none).")}}]))

doc = {"rule_files": ["../../etc/prometheus/ftbenchd.rules.yml"], "evaluation_interval": "1m", "tests": tests}
print("# Generated by tests/prometheus/gen_rules_test.py (see there); promtool test rules reads it.")
print(json.dumps(doc, indent=1))
