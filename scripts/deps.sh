#!/bin/sh
# Install the Debian packages that building and testing ftbenchd need, when they are missing.
# As root: apt-get installs them. Otherwise: prints the exact command to run and fails.
# The CUDA toolkit is optional (build with CUDA=0 without it); it is not installed here.
set -eu
pkgs="build-essential pkg-config libjansson-dev libcurl4-openssl-dev libmicrohttpd-dev
libsystemd-dev libcmocka-dev curl ca-certificates python3 python3-yaml python3-jsonschema
python3-prometheus-client chromium cmake python3-venv clang libclang-rt-dev"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps: installing$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
	exit 0
fi
echo "deps: missing packages:$missing" >&2
echo "deps: run as root:  apt-get install -y$missing" >&2
exit 1
