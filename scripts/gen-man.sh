#!/bin/sh
# Man pages from the programs' own --help: ftbench.1 (the command list), ftbench-<cmd>.1 per
# command, ftbenchd.8 (options and config keys).  usage: gen-man.sh BINDIR OUTDIR VERSION
# The help text is the single source; this only wraps it in roff (verbatim, so nothing is lost).
set -eu
bin=$1 out=$2 ver=$3
mkdir -p "$out"
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%d)

# roff: escape backslashes and leading dots/quotes of the verbatim text
verbatim() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

page() { # NAME SECTION SUMMARY HELP-TEXT-FILE SEEALSO
	{
		printf '.TH %s %s "%s" "ftbenchd %s" "ftbenchd"\n' "$(echo "$1" | tr a-z A-Z)" "$2" "$date" "$ver"
		printf '.SH NAME\n%s \\- %s\n' "$1" "$3"
		printf '.SH SYNOPSIS AND OPTIONS\n.nf\n'
		verbatim <"$4"
		printf '.fi\n.SH SEE ALSO\n%s\n' "$5"
	} >"$out/$1.$2"
}

t=$(mktemp)
trap 'rm -f "$t"' EXIT
"$bin/ftbench" --help >"$t" 2>&1 || true
page ftbench 1 "offloaded-MoE host benchmarks: offload or hybrid, measured on the real kernels" "$t" \
	"ftbenchd(8); ftbench\\-<command>(1) for each command; README.md"
cmds=$(sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' "$t")
for c in $cmds; do
	sum=$(sed -n "s/^  $c  *//p" "$t" | head -n 1)
	"$bin/ftbench" "$c" --help >"$t.c" 2>&1 || true
	page "ftbench-$c" 1 "$sum" "$t.c" "ftbench(1), ftbenchd(8)"
done
rm -f "$t.c"
"$bin/ftbenchd" --help >"$t" 2>&1 || true
page ftbenchd 8 "the ftbench daemon: REST API, job queue, profile store" "$t" \
	"ftbench(1), /etc/ftbenchd.conf, GET /openapi.json, README.md"
