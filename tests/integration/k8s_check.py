"""Check Kubernetes manifests offline: core kinds with kubernetes-validate --strict (its bundled
schemas: unknown fields are errors), the Prometheus Operator kinds (ServiceMonitor, PodMonitor,
PrometheusRule) with cloudcoil's prometheus-operator models, where an unknown field is an error
too (the models drop what they do not know: a field lost between input and output is one).
Usage: python3 k8s_check.py FILE... (the test venv's python3). Prints one TAP-ish line per
document: "ok FILE KIND/NAME" or "not ok FILE KIND/NAME: why"; exit 1 when any is not ok."""
import os
import subprocess
import sys

import yaml

CRD_KINDS = ("ServiceMonitor", "PodMonitor", "PrometheusRule")


def lost_fields(given, kept, path=""):
    """Paths present in given but not in kept (kept: the model's dump of given)."""
    out = []
    if isinstance(given, dict):
        for k, v in given.items():
            if not isinstance(kept, dict) or k not in kept:
                out.append(f"{path}.{k}")
            else:
                out += lost_fields(v, kept[k], f"{path}.{k}")
    elif isinstance(given, list) and isinstance(kept, list):
        for i, (a, b) in enumerate(zip(given, kept)):
            out += lost_fields(a, b, f"{path}[{i}]")
    return out


def check_crd(doc):
    from cloudcoil.models.prometheus_operator import v1
    model = getattr(v1, doc["kind"])
    obj = model.model_validate(doc)
    kept = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
    lost = lost_fields(doc, kept)
    if lost:
        raise ValueError("unknown fields: " + ", ".join(lost))


def main(files):
    bad = 0
    kv = os.path.join(os.path.dirname(sys.executable), "kubernetes-validate")
    for f in files:
        with open(f) as fh:
            docs = [d for d in yaml.safe_load_all(fh) if d]
        core = [d for d in docs if d.get("kind") not in CRD_KINDS]
        for d in docs:
            what = f"{f} {d.get('kind')}/{d.get('metadata', {}).get('name')}"
            if d.get("kind") in CRD_KINDS:
                try:
                    check_crd(d)
                    print(f"ok {what}")
                except Exception as e:  # pydantic's ValidationError, or ours
                    print(f"not ok {what}: {e}".replace("\n", " "))
                    bad += 1
        if core:
            r = subprocess.run([kv, "--strict", "--quiet", f], capture_output=True, text=True)
            out = (r.stdout + r.stderr).strip()
            if r.returncode != 0 or "ERROR" in out or ("WARN" in out and not all(
                    any(k in line for k in CRD_KINDS) for line in out.splitlines() if "WARN" in line)):
                print(f"not ok {f} (kubernetes-validate --strict): {out}".replace("\n", " | "))
                bad += 1
            else:
                print(f"ok {f} core kinds ({', '.join(d['kind'] for d in core)}) against kubernetes-validate --strict")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
