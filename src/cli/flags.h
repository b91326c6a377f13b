/* flags: a command's options as table rows. One row per flag {name, type, field, bounds, default,
 * unit, help, aliases}; from the table come option parsing (getopt_long built from the rows, so
 * GNU prefixes, "--name=value" and permutation behave as before), --help, the man pages and the
 * bash completion (both read --help), and `ftbench flags`, the JSON dump that
 * tests/integration/flags_equal.sh holds against the daemon's job arguments and api/openapi.yaml.
 * A new flag is one row; its help cannot disagree with its default or bounds, which --help prints
 * from the row.
 *
 * A command declares its rows over a struct of its options and parses into it:
 *
 *	struct x_opts { long repeat; const char *model; enum ftcli_format fmt; };
 *	#define O(m) FTF_FIELD(struct x_opts, m)
 *	static const struct ftflag flag_rows[] = {
 *		{"repeat", FTF_INT, O(repeat), .meta = "N", .lo = 1, .hi = 1000, .def = "64",
 *		 .alias = "iters", .help = "timed steps"},
 *		{"model", FTF_STR, O(model), .meta = "M", .help = "expert shapes"},
 *		FTF_JSON_ROW(struct x_opts, fmt, "the result as JSON"),
 *		FTF_FORMAT_ROW(struct x_opts, fmt, "table, json, csv or md: one row per step"),
 *		FTF_RESULT_FD_ROW,
 *	};
 *	const struct ftflag_cmd ftcli_flags_x = {"x", flag_rows, FTF_COUNT(flag_rows), .about = "..."};
 *	int ftcli_cmd_x(int argc, char **argv) {
 *		struct x_opts o = {0}; struct ftflag_state fs;
 *		int r = ftflags_parse(&ftcli_flags_x, argc, argv, &o, &fs);
 *		if (r) return r > 0 ? 0 : FTCLI_EXIT_USAGE;   (r > 0: --help printed)
 *		... o.repeat, ftflags_given(&ftcli_flags_x, &fs, "repeat"), fs.argv[fs.pos..fs.argc) ...
 *		ftflags_release(&fs); }
 * It is listed in src/cli/main.c's command table with &ftcli_flags_x (and declared in cli.h). */
#ifndef FT_CLI_FLAGS_H
#define FT_CLI_FLAGS_H
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

enum ftflag_type {
	FTF_BOOL,    /* no value: the int field becomes 1 */
	FTF_CONST,   /* no value: the int field becomes .value (--json: the output format json) */
	FTF_INT,     /* an integer in [lo, hi] into an int or long field (by the field's size) */
	FTF_DOUBLE,  /* a number in [lo, hi] into a double */
	FTF_STR,     /* a string (borrowed from argv) into a const char * */
	FTF_ENUM,    /* one of choices ("a|b|c"): its index into an int field */
	FTF_INTS,    /* a comma list of integers in [lo, hi], 1..max_items, into a struct ftflag_list */
	FTF_DOUBLES, /* a comma list of numbers in [lo, hi], the same */
	FTF_CALL,    /* .set(row, value, opts) does it; takes a value when .meta is set */
};

#define FTF_HIDDEN 1u    /* not in --help (test and tuning knobs); still in the dump */
#define FTF_SEED_LIST 2u /* the seed's argparse list spelling: `--dtype a b` is `--dtype a,b` */

#define FTFLAG_LIST_MAX 64
struct ftflag_list {
	int n;
	double v[FTFLAG_LIST_MAX];
};

struct ftflag {
	const char *name; /* the long option, without "--" */
	enum ftflag_type type;
	size_t off, size;     /* the field in the options struct: FTF_FIELD(type, member) */
	const char *meta;     /* the value's placeholder in --help ("N", "FILE"); enums: their choices */
	double lo, hi;        /* numbers and list items: inclusive bounds */
	const char *def;      /* the default as typed on the command line, parsed into the field
			       * before argv; NULL: the field keeps what the command put there */
	const char *def_help; /* --help's words for a default that is not a value ("4x the LLC") */
	const char *choices;  /* FTF_ENUM: "a|b|c" */
	const char *unit;     /* printed after the bounds: "MiB", "s" */
	const char *help;     /* one sentence or more, no default or bounds (those come from the row) */
	const char *alias;    /* other long names, '|'-separated: the seed's spellings ("out|device") */
	char short_name;      /* 'o' for -o, or 0 */
	int max_items;        /* lists: most items (0: FTFLAG_LIST_MAX) */
	unsigned flags;       /* FTF_HIDDEN, FTF_SEED_LIST */
	long value;           /* FTF_CONST: what the field becomes */
	/* FTF_CALL: 0 done, 1 stop and exit 0 (it printed what was asked, e.g. --tune help), -1
	 * refused (it said why). opts is the options struct. */
	int (*set)(const struct ftflag *f, const char *arg, void *opts);
};

#define FTF_FIELD(T, m) .off = offsetof(T, m), .size = sizeof(((T *)0)->m)
#define FTF_STR_OF(x) #x
#define FTF_XSTR(x) FTF_STR_OF(x) /* a default from a macro: .def = FTF_XSTR(FTBW_DEF_CPU_ITERS) */
#define FTF_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A command's table. */
struct ftflag_cmd {
	const char *name;  /* "cpu-moe" */
	const struct ftflag *rows;
	int nrows;
	const char *args;  /* positional arguments in the usage line ("MODEL OUT"), or NULL: none */
	const char *about; /* paragraph after the usage line, or NULL */
	const char *notes; /* text after the options (units, environment, exit status), or NULL */
	int min_args, max_args; /* positional arguments accepted (max -1: any number) */
};

struct ftflag_state {
	int argc;    /* argv after parsing (the seed lists joined, getopt's permutation) */
	char **argv;
	int pos;     /* argv[pos..argc): the positional arguments */
	unsigned char given[128]; /* per row: given on the command line */
	char **owned;
	int nowned;
	void *joined; /* struct ftcli_args, when a row has FTF_SEED_LIST */
};

/* Parse argv (argv[0]: the command's name) into opts: every row's default first, then the
 * options in order (a later one wins). Returns 0; 1 when --help was printed on stdout or a
 * FTF_CALL row asked to stop (exit 0); -1 after saying what is wrong on stderr (a bad value
 * names the flag, the value and the bounds; an unknown option prints the usage). st is filled
 * on 0 only and then owns memory: ftflags_release. */
int ftflags_parse(const struct ftflag_cmd *c, int argc, char **argv, void *opts, struct ftflag_state *st);
void ftflags_release(struct ftflag_state *st);
/* Whether the row called name was given on the command line (by any of its names). */
int ftflags_given(const struct ftflag_cmd *c, const struct ftflag_state *st, const char *name);

/* --help: the usage line, about, one entry per visible row (help, then bounds, default and
 * aliases from the row), notes. */
void ftflags_help(const struct ftflag_cmd *c, FILE *f);
/* The table as JSON (new reference, NULL on ENOMEM): {"command": name, "flags": [{name, aliases,
 * short, type, meta, minimum, maximum, default, choices, unit, help, max_items, hidden}...]}. */
json_t *ftflags_json(const struct ftflag_cmd *c);
/* Rows every command spells the same way. --json and --output-format share one field (an enum
 * ftcli_format; the later one wins); --result-fd and --tune are FTF_CALL rows (--tune keys into
 * a struct ftcli_tune field, hidden: `--tune help` lists the knobs). */
int ftflags_result_fd(const struct ftflag *f, const char *arg, void *opts);
int ftflags_tune(const struct ftflag *f, const char *arg, void *opts);
#define FTF_JSON_ROW(T, m, h) {"json", FTF_CONST, FTF_FIELD(T, m), .value = 1 /* FTCLI_FMT_JSON */, .help = h}
#define FTF_FORMAT_ROW(T, m, h)                                                                      \
	{"output-format", FTF_ENUM, FTF_FIELD(T, m), .meta = "F", .choices = "table|json|csv|md",    \
	 .def = "table", .help = h}
/* --cpu-kernel-timeout of the commands that run an engine's probe (docs/CPU_KERNEL_PROBE.md) */
#define FTF_CPU_KERNEL_TIMEOUT_ROW(T, m)                                                             \
	{"cpu-kernel-timeout", FTF_DOUBLE, FTF_FIELD(T, m), .meta = "S", .lo = 0.1, .hi = 86400, .unit = "s", \
	 .def = "300", .help = "--cpu-kernel: the limit per format (then SIGTERM, SIGKILL to its group)"}
#define FTF_RESULT_FD_ROW                                                                            \
	{"result-fd", FTF_CALL, .meta = "N", .set = ftflags_result_fd,                               \
	 .help = "worker mode: the protocol's JSON lines (progress, result, error) on fd N (ftbenchd)"}
#define FTF_TUNE_ROW(T, m)                                                                           \
	{"tune", FTF_CALL, FTF_FIELD(T, m), .meta = "KEY=VALUE", .set = ftflags_tune, .flags = FTF_HIDDEN, \
	 .help = "a CPU MoE executor knob, repeatable (--tune help lists them)"}

/* --gpu SPEC and the seed's --device N (a CUDA device index) into a struct ftflag_gpu field:
 * spec is what was asked (NULL: none), the two may not name different GPUs. */
struct ftflag_gpu {
	const char *spec;
	char device[16];
};
int ftflags_gpu(const struct ftflag *f, const char *arg, void *opts);
int ftflags_device(const struct ftflag *f, const char *arg, void *opts);
#define FTF_GPU_ROWS(T, m, mt, dh, h)                                                                \
	{"gpu", FTF_CALL, FTF_FIELD(T, m), .meta = mt, .set = ftflags_gpu, .def_help = dh, .help = h}, \
	{"device", FTF_CALL, FTF_FIELD(T, m), .meta = "N", .set = ftflags_device,                     \
	 .help = "the seed's spelling of --gpu N (a CUDA device index)"}

/* The value of a row (parsed as on the command line) into field: 0, or -1 with why. For tests. */
int ftflags_set(const struct ftflag *f, const char *arg, void *opts, char *why, size_t n);
#endif
