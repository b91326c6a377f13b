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
python3-prometheus-client chromium cmake python3-venv python3-pip clang libclang-rt-dev"
# The contract tests run PyPI test tools from their own venv: schemathesis (tests/contract/run.py)
# and openapi-spec-validator (tests/integration/openapi_valid.sh: /openapi.json is OpenAPI 3.0.3).
venv=${FT_TEST_VENV:-/opt/ftbenchd-test-venv}
pins="schemathesis==4.32.5 openapi-spec-validator==0.9.0"
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
pip_missing() {
	for pin in $pins; do
		[ "$("$venv/bin/python3" -m pip show "${pin%%==*}" 2>/dev/null | sed -n 's/^Version: //p')" = "${pin#*==}" ] ||
			return 0
	done
	return 1
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
pip_missing || exit 0
if [ -n "$dry" ] || [ -w "$(dirname "$venv")" ] || [ -w "$venv" ]; then
	echo "deps: installing $pins into $venv" >&2
	[ -x "$venv/bin/python3" ] || run /usr/bin/python3 -m venv "$venv"
	# shellcheck disable=SC2086 # one word per pin
	run "$venv/bin/python3" -m pip install -q --disable-pip-version-check $pins
	exit 0
fi
echo "deps: $pins: some are missing from $venv" >&2
echo "deps: run as root:  /usr/bin/python3 -m venv $venv && $venv/bin/python3 -m pip install $pins" >&2
exit 1
