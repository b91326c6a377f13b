#!/bin/sh
# libftprofile as an engine would use it: build a tiny C program through
# `pkg-config --cflags --libs ftprofile` against build/ outputs, run it on a fixture profile;
# the .so exports only ftprof_*; then `make install DESTDIR=... PREFIX=/usr` puts binaries,
# library, header, .pc, systemd units and etc/ftbenchd.conf in place, and the installed .pc works.
# Prints "ok ..." / "not ok ..." lines. Run from the source tree after `make`.
set -u
B=${BUILD:-build}
SRC=$(pwd)
T=$(mktemp -d /tmp/ftprof-pc-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
. "$(dirname "$0")/../lib/tap.sh"
TAP_SHOW="$T/out" TAP_CUT=tail TAP_LINES=15
check() { desc=$1; shift; if "$@" >"$T/out" 2>&1; then ok "$desc"; else nok "$desc"; fi; }

for f in "$B/lib/libftprofile.so" "$B/lib/libftprofile.a" "$B/include/ftprofile.h" "$B/lib/pkgconfig/ftprofile.pc"; do
	check "$f exists" test -s "$f"
done

cat >"$T/engine.c" <<'EOF'
#include <errno.h>
#include <stdio.h>
#include <ftprofile.h>

int main(int argc, char **argv)
{
	struct ftprof *p = NULL;
	char err[512];
	double f = -1;
	int r = ftprof_load_file(argv[1], &p, err, sizeof err);
	if (r) {
		fprintf(stderr, "load: %d %s\n", r, err);
		return 1;
	}
	int fr = ftprof_fetch_fraction(p, "bf16", &f);
	printf("%s %s %s %.4f %d v%d\n", ftprof_rec_name(ftprof_recommend(p, "bf16")),
	       ftprof_rec_name(ftprof_recommend(p, "mxfp4")), ftprof_rec_name(ftprof_recommend(p, "q4_0")),
	       f, fr, ftprof_version());
	ftprof_free(p);
	return argc > 2 ? 0 : 0;
}
EOF
want="hybrid hybrid none 0.2000 0 v4"
# A sanitized build (make test-san) needs the engine built with the same runtime.
san=
if nm -D --undefined-only "$B/lib/libftprofile.so" 2>/dev/null | grep -q '__asan_init'; then
	san="-fsanitize=address,undefined"
fi
FIX="$SRC/tests/fixtures/profiles/full.json"

flags=$(PKG_CONFIG_PATH="$B/lib/pkgconfig" pkg-config --cflags --libs ftprofile 2>"$T/pcerr")
if [ $? -eq 0 ] && echo "$flags" | grep -q -- '-lftprofile'; then
	ok "pkg-config --cflags --libs ftprofile: $flags"
else
	nok "pkg-config --cflags --libs ftprofile"; sed 's/^/#   /' "$T/pcerr"
fi
# shellcheck disable=SC2086
check "compile an engine against the shared library" cc $san -std=c17 -Wall -Werror -o "$T/engine" "$T/engine.c" $flags
got=$(LD_LIBRARY_PATH="$B/lib" "$T/engine" "$FIX" 2>&1)
if [ "$got" = "$want" ]; then ok "engine reads the fixture through libftprofile.so ($got)"; else nok "engine output '$got', want '$want'"; fi
if LD_LIBRARY_PATH="$B/lib" ldd "$T/engine" 2>/dev/null | grep -q "libftprofile.so.0 => $B/lib/\|libftprofile.so.0 => .*/$B/lib/"; then
	ok "the engine loads libftprofile.so.0 from $B/lib"
else
	nok "the engine does not load libftprofile.so.0 from $B/lib"; LD_LIBRARY_PATH="$B/lib" ldd "$T/engine" | sed 's/^/#   /'
fi

# static: the archive alone plus its dependencies
# shellcheck disable=SC2086
check "link an engine statically against libftprofile.a" cc $san -std=c17 -o "$T/engine-static" "$T/engine.c" \
	$(PKG_CONFIG_PATH="$B/lib/pkgconfig" pkg-config --cflags ftprofile) "$B/lib/libftprofile.a" -ljansson -lm
got=$("$T/engine-static" "$FIX" 2>&1)
if [ "$got" = "$want" ]; then ok "static engine output matches"; else nok "static engine output '$got'"; fi

# the .so exports only the public API
leak=$(nm -D --defined-only "$B/lib/libftprofile.so" | awk '$2 ~ /^[TDBR]$/ {print $3}' | grep -v '^ftprof_' | sed 's/@.*//')
if [ -z "$leak" ]; then ok "libftprofile.so exports only ftprof_*"; else nok "libftprofile.so also exports: $(echo $leak)"; fi
if nm -D --undefined-only "$B/lib/libftprofile.so" | grep -qi 'cuda'; then nok "libftprofile.so needs CUDA"; else ok "libftprofile.so is CUDA-free"; fi

# make install DESTDIR=... PREFIX=/usr
D="$T/root"
# Install with the CUDA setting the build was made with (libftbench.a refers to cudart or not),
# so a stale target is relinked the same way.
if nm "$B/lib/libftbench.a" 2>/dev/null | grep -q ' U cuda'; then cuda="CUDA=1"; else cuda="CUDA=0"; fi
# shellcheck disable=SC2086
if env -u MAKEFLAGS -u MFLAGS make -s --no-print-directory install BUILD="$B" $cuda DESTDIR="$D" PREFIX=/usr >"$T/inst" 2>&1; then
	ok "make install DESTDIR=\$tmp PREFIX=/usr"
else
	nok "make install DESTDIR=\$tmp PREFIX=/usr"; sed 's/^/#   /' "$T/inst" | tail -n 20
fi
for f in usr/bin/ftbench usr/bin/ftbenchd; do check "installed $f (executable)" test -x "$D/$f"; done
for f in usr/lib/libftprofile.so.0 usr/lib/libftprofile.a usr/include/ftprofile.h usr/lib/pkgconfig/ftprofile.pc etc/ftbenchd.conf; do
	check "installed $f" test -s "$D/$f"
done
for f in usr/share/man/man1/ftbench.1 usr/share/man/man1/ftbench-bw.1 usr/share/man/man1/ftbench-decode.1 \
	usr/share/man/man8/ftbenchd.8 usr/share/bash-completion/completions/ftbench usr/share/ftbenchd/openapi.yaml \
	usr/share/ftbenchd/schemas/profile.schema.json usr/share/ftbenchd/schemas/job.schema.json; do
	check "installed $f" test -s "$D/$f"
done
check "the installed bw man page holds bw's --help" grep -q -- '--cpu-iters' "$D/usr/share/man/man1/ftbench-bw.1"
if command -v groff >/dev/null 2>&1; then
	check "the man pages format without warnings" sh -c "! groff -man -ww -z '$D'/usr/share/man/man1/*.1 '$D'/usr/share/man/man8/*.8 2>&1 | grep -q ."
fi
check "the completion offers bw's flags" bash -c ". '$D/usr/share/bash-completion/completions/ftbench';
	COMP_WORDS=('$D/usr/bin/ftbench' bw --cpu-i); COMP_CWORD=2; _ftbench '$D/usr/bin/ftbench';
	[ \"\${COMPREPLY[*]}\" = --cpu-iters ]"
for c in gpus cpu bw cache-copy cpu-moe decode profile jobs; do
	check "the installed ftbench-$c man page has --output-format" grep -q -- '--output-format' "$D/usr/share/man/man1/ftbench-$c.1"
done
check "the installed cache-copy man page has --from-json" grep -q -- '--from-json FILE' "$D/usr/share/man/man1/ftbench-cache-copy.1"
check "the completion offers cpu-moe's --output-format" bash -c ". '$D/usr/share/bash-completion/completions/ftbench';
	COMP_WORDS=('$D/usr/bin/ftbench' cpu-moe --output-f); COMP_CWORD=2; _ftbench '$D/usr/bin/ftbench';
	[ \"\${COMPREPLY[*]}\" = --output-format ]"
check "the completion offers the output formats after --output-format" bash -c ". '$D/usr/share/bash-completion/completions/ftbench';
	COMP_WORDS=('$D/usr/bin/ftbench' gpus --output-format ''); COMP_CWORD=3; _ftbench '$D/usr/bin/ftbench';
	[ \"\${COMPREPLY[*]}\" = 'table json csv md' ]"
check "the completion: profile --format is the output format, cpu-moe --format the weight format" bash -c ". '$D/usr/share/bash-completion/completions/ftbench';
	COMP_WORDS=('$D/usr/bin/ftbench' profile --format c); COMP_CWORD=3; _ftbench '$D/usr/bin/ftbench'; a=\"\${COMPREPLY[*]}\";
	COMP_WORDS=('$D/usr/bin/ftbench' cpu-moe --format nv); _ftbench '$D/usr/bin/ftbench';
	[ \"\$a\" = csv ] && [ \"\${COMPREPLY[*]}\" = nvfp4 ]"
check "installed usr/lib/libftprofile.so -> libftprofile.so.0" test "$(readlink "$D/usr/lib/libftprofile.so")" = libftprofile.so.0
check "installed usr/lib/systemd/system/" test -d "$D/usr/lib/systemd/system"
check "installed ftprofile.pc says prefix=/usr" grep -qx 'prefix=/usr' "$D/usr/lib/pkgconfig/ftprofile.pc"
check "installed header is the source header" cmp "$D/usr/include/ftprofile.h" "$SRC/src/profile/ftprofile.h"

# an engine built against the installed tree (sysroot)
iflags=$(PKG_CONFIG_SYSROOT_DIR="$D" PKG_CONFIG_PATH="$D/usr/lib/pkgconfig" pkg-config --cflags --libs ftprofile 2>&1)
# shellcheck disable=SC2086
check "compile an engine against the installed tree ($iflags)" cc $san -std=c17 -o "$T/engine-inst" "$T/engine.c" $iflags
got=$(LD_LIBRARY_PATH="$D/usr/lib" "$T/engine-inst" "$FIX" 2>&1)
if [ "$got" = "$want" ]; then ok "engine runs against the installed library"; else nok "installed engine output '$got'"; fi
echo "1..$n"
