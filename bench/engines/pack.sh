#!/bin/sh
# Put what device.sh needs into XFER (a folder of the checkout the device call sends,
# ignored by git): FreeToken's source as `git archive` of its mirror (never committed
# here), the wheels its imports need that the device image lacks (WHEELS: a folder of
# them, see README.md), our scripts, and ftbench with its shared libraries.
# usage: MIRROR=/work/.mirror/FlashML-org+FreeToken/repo WHEELS=/tmp/whl BUILD=build pack.sh XFER
set -eu
x=${1:?usage: pack.sh XFER}
here=$(cd "$(dirname "$0")" && pwd)
mirror=${MIRROR:-/work/.mirror/FlashML-org+FreeToken/repo}
mkdir -p "$x/whl" "$x/engines" "$x/bin"
git -C "$mirror" archive HEAD python/ setup.py pyproject.toml LICENSE README.md | gzip -1 >"$x/freetoken.tar.gz"
git -C "$mirror" rev-parse HEAD >"$x/COMMIT"
cp "${WHEELS:?WHEELS: the folder of downloaded wheels}"/*.whl "$x/whl/"
cp "$here"/*.py "$here"/device.sh "$x/engines/"
cp "${BUILD:-build}/bin/ftbench" "$x/bin/"
sh /work/shared/tools/device-libs.sh "$x/lib" "$x/bin/ftbench" >/dev/null
du -sh "$x"
