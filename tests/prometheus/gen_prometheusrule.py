#!/usr/bin/env python3
"""Print etc/k8s/prometheusrule.yaml: the groups of etc/prometheus/ftbenchd.rules.yml wrapped in
a Prometheus Operator PrometheusRule (tests/integration/fleet_manifests.sh checks that the
checked-in file is this script's output)."""
import os
import sys

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HEAD = """# Prometheus Operator: the rules of etc/prometheus/ftbenchd.rules.yml (cohort medians per GPU
# and CPU model, FtbenchdHostBelowCohort, missing/stale/invalid profiles, verdicts their
# validation disagrees with, drift) as a PrometheusRule. Its spec.groups are that file's groups,
# exactly (tests/integration/fleet_manifests.sh compares them); edit the rules file and
# regenerate this one:
#   python3 tests/prometheus/gen_prometheusrule.py > etc/k8s/prometheusrule.yaml
# The label release: prometheus matches kube-prometheus-stack's default ruleSelector; change it
# to what your Prometheus selects.
"""


def literal(dumper, data):
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def main():
    with open(os.path.join(ROOT, "etc", "prometheus", "ftbenchd.rules.yml")) as f:
        rules = yaml.safe_load(f)
    yaml.add_representer(str, literal, Dumper=yaml.SafeDumper)
    doc = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
           "metadata": {"name": "ftbenchd", "namespace": "ftbenchd",
                        "labels": {"app": "ftbenchd", "release": "prometheus"}},
           "spec": {"groups": rules["groups"]}}
    sys.stdout.write(HEAD + yaml.safe_dump(doc, sort_keys=False, width=100))


if __name__ == "__main__":
    main()
