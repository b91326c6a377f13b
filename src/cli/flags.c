/* flags: parsing, --help and the JSON dump of a command's option rows (flags.h). */
#include "cli/flags.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/strutil.h"

#define VAL0 256  /* getopt_long val of row i: VAL0 + i */
#define HELP_COL 24 /* the help text starts here */
#define WIDTH 100

static const char *const type_names[] = {"bool", "const", "int", "double", "string", "enum", "int_list",
					 "double_list", "call"};

static int has_arg(const struct ftflag *f)
{
	switch (f->type) {
	case FTF_BOOL:
	case FTF_CONST: return 0;
	case FTF_CALL: return f->meta != NULL;
	default: return 1;
	}
}

/* A number or numbers in [lo, hi]: the typed rows, and an FTF_CALL row that gives bounds. */
static int numeric(const struct ftflag *f)
{
	return f->type == FTF_INT || f->type == FTF_DOUBLE || (f->type == FTF_CALL && f->hi > f->lo);
}

static void *field(const struct ftflag *f, void *opts)
{
	return (char *)opts + f->off;
}

/* An integer into a long, an int or a bool field, by the field's size. */
static void store_int(const struct ftflag *f, void *opts, long v)
{
	if (f->size == sizeof(long))
		*(long *)field(f, opts) = v;
	else if (f->size == sizeof(int))
		*(int *)field(f, opts) = (int)v;
	else
		*(unsigned char *)field(f, opts) = (unsigned char)(v != 0);
}

/* The index of s in "a|b|c", or -1. */
static int choice_index(const char *choices, const char *s)
{
	size_t n = strlen(s);
	int i = 0;
	for (const char *p = choices; p && *p; i++) {
		const char *e = strchr(p, '|');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && !strncmp(p, s, n))
			return i;
		if (!e)
			break;
		p = e + 1;
	}
	return -1;
}

/* A bound as a long (LONG_MAX for a bound past it). */
static long to_long(double d)
{
	return d >= (double)LONG_MAX ? LONG_MAX : d <= (double)LONG_MIN ? LONG_MIN : (long)d;
}

static int max_items(const struct ftflag *f)
{
	return f->max_items > 0 && f->max_items <= FTFLAG_LIST_MAX ? f->max_items : FTFLAG_LIST_MAX;
}

/* "lo..hi", each bound as an integer when it is one. */
static const char *range_of(const struct ftflag *f, char *buf, size_t n)
{
	char a[32], b[32];
	snprintf(a, sizeof a, f->lo == (double)to_long(f->lo) && fabs(f->lo) < 1e15 ? "%.0f" : "%g", f->lo);
	snprintf(b, sizeof b, f->hi == (double)to_long(f->hi) && fabs(f->hi) < 1e15 ? "%.0f" : "%g", f->hi);
	snprintf(buf, n, "%s..%s", a, b);
	return buf;
}

int ftflags_set(const struct ftflag *f, const char *arg, void *opts, char *why, size_t n)
{
	char buf[80];
	long l;
	double d;
	switch (f->type) {
	case FTF_BOOL: store_int(f, opts, 1); return 0;
	case FTF_CONST: store_int(f, opts, f->value); return 0;
	case FTF_INT:
		if (ftstr_parse_long(arg, to_long(f->lo), to_long(f->hi), &l) < 0) {
			snprintf(why, n, "expected an integer in %s", range_of(f, buf, sizeof buf));
			return -1;
		}
		store_int(f, opts, l);
		return 0;
	case FTF_DOUBLE:
		if (ftstr_parse_double(arg, f->lo, f->hi, &d) < 0) {
			snprintf(why, n, "expected a number in %s", range_of(f, buf, sizeof buf));
			return -1;
		}
		*(double *)field(f, opts) = d;
		return 0;
	case FTF_STR: *(const char **)field(f, opts) = arg; return 0;
	case FTF_ENUM: {
		int i = choice_index(f->choices, arg);
		if (i < 0) {
			snprintf(why, n, "expected one of %s", f->choices);
			return -1;
		}
		store_int(f, opts, i);
		return 0;
	}
	case FTF_INTS:
	case FTF_DOUBLES: {
		struct ftflag_list *li = field(f, opts);
		int m = max_items(f), k;
		if (f->type == FTF_INTS) {
			long v[FTFLAG_LIST_MAX];
			k = ftstr_parse_long_list(arg, to_long(f->lo), to_long(f->hi), v, m);
			for (int i = 0; i < k; i++)
				li->v[i] = (double)v[i];
		} else {
			k = ftstr_parse_double_list(arg, f->lo, f->hi, li->v, m);
		}
		if (k <= 0) {
			snprintf(why, n, "expected 1 to %d comma-separated %s in %s", m,
				 f->type == FTF_INTS ? "integers" : "numbers", range_of(f, buf, sizeof buf));
			return -1;
		}
		li->n = k;
		return 0;
	}
	case FTF_CALL: snprintf(why, n, "not a plain value"); return -1;
	}
	return -1;
}

/* --name, then every alias. */
static int names_of(const struct ftflag *f, const char **names, size_t *lens, int max)
{
	int k = 0;
	names[k] = f->name;
	lens[k++] = strlen(f->name);
	for (const char *p = f->alias; p && *p && k < max;) {
		const char *e = strchr(p, '|');
		names[k] = p;
		lens[k++] = e ? (size_t)(e - p) : strlen(p);
		if (!e)
			break;
		p = e + 1;
	}
	return k;
}

void ftflags_release(struct ftflag_state *st)
{
	if (!st)
		return;
	for (int i = 0; i < st->nowned; i++)
		free(st->owned[i]);
	free(st->owned);
	if (st->joined) {
		ftcli_args_release(st->joined);
		free(st->joined);
	}
	memset(st, 0, sizeof *st);
}

/* getopt_long's table: every name of every row, then help. Names are owned copies in st. */
static struct option *build(const struct ftflag_cmd *c, struct ftflag_state *st, char *shorts, int *lists)
{
	int n = 1;
	for (int i = 0; i < c->nrows; i++) {
		const char *nm[8];
		size_t ln[8];
		n += names_of(&c->rows[i], nm, ln, 8);
	}
	struct option *o = calloc((size_t)n + 1, sizeof *o);
	st->owned = calloc((size_t)n, sizeof *st->owned);
	if (!o || !st->owned) {
		free(o);
		return NULL;
	}
	int k = 0, s = 0, nl = 0;
	for (int i = 0; i < c->nrows; i++) {
		const struct ftflag *f = &c->rows[i];
		const char *nm[8];
		size_t ln[8];
		int m = names_of(f, nm, ln, 8);
		for (int j = 0; j < m; j++) {
			char *name = strndup(nm[j], ln[j]);
			if (!name) {
				free(o);
				return NULL;
			}
			st->owned[st->nowned++] = name;
			o[k++] = (struct option){name, has_arg(f) ? required_argument : no_argument, NULL, VAL0 + i};
		}
		if (f->short_name) {
			shorts[s++] = f->short_name;
			if (has_arg(f))
				shorts[s++] = ':';
		}
		if (f->flags & FTF_SEED_LIST)
			lists[nl++] = VAL0 + i;
	}
	o[k++] = (struct option){"help", no_argument, NULL, 'h'};
	shorts[s++] = 'h';
	shorts[s] = '\0';
	lists[nl] = 0;
	return o;
}

static int row_of(const struct ftflag_cmd *c, int val)
{
	if (val >= VAL0 && val < VAL0 + c->nrows)
		return val - VAL0;
	for (int i = 0; i < c->nrows; i++)
		if (c->rows[i].short_name && c->rows[i].short_name == val)
			return i;
	return -1;
}

/* One option (typed as name): 0, 1 (stop, exit 0) or -1 (said why). */
static int apply(const struct ftflag_cmd *c, const struct ftflag *f, const char *name, const char *arg, void *opts)
{
	char why[160];
	if (f->type == FTF_CALL)
		return f->set(f, arg, opts);
	if (ftflags_set(f, arg, opts, why, sizeof why) == 0)
		return 0;
	ftcli_error("bad value '%s' for --%s: %s (see ftbench %s --help)", arg, name, why, c->name);
	return -1;
}

int ftflags_parse(const struct ftflag_cmd *c, int argc, char **argv, void *opts, struct ftflag_state *st)
{
	char shorts[2 * 64 + 2];
	int lists[129], r = -1;
	memset(st, 0, sizeof *st);
	if (c->nrows > (int)sizeof st->given || c->nrows > 64) {
		ftcli_error("too many options in one table");
		return -1;
	}
	for (int i = 0; i < c->nrows; i++) {
		const struct ftflag *f = &c->rows[i];
		if (f->def && has_arg(f) && apply(c, f, f->name, f->def, opts) != 0) {
			ftcli_error("the default of --%s does not parse (a table bug)", f->name);
			return -1;
		}
	}
	struct option *o = build(c, st, shorts, lists);
	if (!o) {
		ftflags_release(st);
		ftcli_error("out of memory");
		return -1;
	}
	st->argc = argc;
	st->argv = argv;
	if (lists[0]) {
		struct ftcli_args *a = calloc(1, sizeof *a);
		if (!a || ftcli_args_join_lists(a, argc, argv, o, lists) < 0) {
			free(a);
			ftcli_error("out of memory");
			goto out;
		}
		st->joined = a;
		st->argc = a->argc;
		st->argv = a->argv;
	}
	optind = 0; /* GNU getopt: a full restart (a command may parse twice in one process) */
	opterr = 1;
	int ch, li = -1;
	while ((ch = getopt_long(st->argc, st->argv, shorts, o, &li)) != -1) {
		if (ch == 'h' && row_of(c, 'h') < 0) {
			ftflags_help(c, stdout);
			r = 1;
			goto out;
		}
		int i = row_of(c, ch);
		if (i < 0) {
			ftflags_help(c, stderr);
			goto out;
		}
		st->given[i] = 1;
		int a = apply(c, &c->rows[i], li >= 0 ? o[li].name : c->rows[i].name, optarg, opts);
		li = -1;
		if (a) {
			r = a;
			goto out;
		}
	}
	st->pos = optind;
	int npos = st->argc - optind;
	if (npos < c->min_args || (c->max_args >= 0 && npos > c->max_args)) {
		if (npos > c->max_args && c->max_args >= 0)
			ftcli_error("unexpected argument '%s'", st->argv[optind + c->max_args]);
		else
			ftcli_error("missing %s (see ftbench %s --help)", c->args ? c->args : "arguments", c->name);
		goto out;
	}
	r = 0;
out:
	free(o);
	if (r)
		ftflags_release(st);
	return r;
}

int ftflags_given(const struct ftflag_cmd *c, const struct ftflag_state *st, const char *name)
{
	for (int i = 0; i < c->nrows; i++)
		if (!strcmp(c->rows[i].name, name))
			return st->given[i];
	return 0;
}

/* ---------------------------------------------------------------- --help */

/* "--name META" (enums without meta: their choices). */
static void label(const struct ftflag *f, char *buf, size_t n)
{
	const char *meta = f->meta ? f->meta : f->type == FTF_ENUM ? f->choices : NULL;
	snprintf(buf, n, "--%s%s%s", f->name, has_arg(f) && meta ? " " : "", has_arg(f) && meta ? meta : "");
}

/* What the row adds to its help: bounds, unit, default, other names. */
static void suffix(const struct ftflag *f, char *buf, size_t n)
{
	size_t l = 0;
	buf[0] = '\0';
#define ADD(...) (l += (size_t)snprintf(buf + l, l < n ? n - l : 0, __VA_ARGS__))
	const char *sep = "";
	char range[80];
	range_of(f, range, sizeof range);
	if (numeric(f)) {
		ADD("%s%s%s", range, f->unit ? " " : "", f->unit ? f->unit : "");
		sep = "; ";
	} else if (f->type == FTF_INTS || f->type == FTF_DOUBLES) {
		ADD("%d at most, each %s%s%s", max_items(f), range, f->unit ? " " : "", f->unit ? f->unit : "");
		sep = "; ";
	} else if (f->unit) {
		ADD("%s", f->unit);
		sep = "; ";
	}
	if (f->def && has_arg(f)) {
		ADD("%sdefault %s", sep, f->def);
		sep = "; ";
	} else if (f->def_help) {
		ADD("%sdefault: %s", sep, f->def_help);
		sep = "; ";
	}
	if (f->alias || f->short_name) {
		const char *meta = has_arg(f) && f->meta ? f->meta : "";
		const char *sp = *meta ? " " : "";
		ADD("%salso", sep);
		if (f->short_name)
			ADD(" -%c%s%s", f->short_name, sp, meta);
		for (const char *p = f->alias; p && *p;) {
			const char *e = strchr(p, '|');
			int len = e ? (int)(e - p) : (int)strlen(p);
			ADD("%s --%.*s%s%s", f->short_name || p != f->alias ? "," : "", len, p, sp, meta);
			if (!e)
				break;
			p = e + 1;
		}
	}
#undef ADD
}

/* text wrapped at WIDTH, the first line from column col (already printed up to), the others
 * indented by indent. */
static void wrap(FILE *out, const char *text, int col, int indent)
{
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		size_t room = (size_t)(WIDTH - col);
		if (len > room) {
			size_t cut = room;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (cut == 0) {
				cut = room;
				while (cut < len && p[cut] != ' ')
					cut++;
			}
			len = cut;
		}
		fprintf(out, "%.*s\n", (int)len, p);
		p += len;
		while (*p == ' ' || *p == '\n')
			p++;
		if (*p)
			fprintf(out, "%*s", indent, "");
		col = indent;
	}
}

void ftflags_help(const struct ftflag_cmd *c, FILE *out)
{
	char usage[4096], lb[128];
	size_t l = (size_t)snprintf(usage, sizeof usage, "usage: ftbench %s", c->name);
	int indent = (int)l + 1;
	for (int i = 0; i < c->nrows; i++) {
		const struct ftflag *f = &c->rows[i];
		if (f->flags & FTF_HIDDEN)
			continue;
		label(f, lb, sizeof lb);
		l += (size_t)snprintf(usage + l, l < sizeof usage ? sizeof usage - l : 0, " [%s]", lb);
	}
	if (c->args && l < sizeof usage)
		snprintf(usage + l, sizeof usage - l, " %s", c->args);
	/* the usage line, wrapped between its [...] groups */
	int col = 0;
	for (const char *p = usage; *p;) {
		const char *e = strstr(p + 1, " [");
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (col && col + (int)len > WIDTH) {
			fprintf(out, "\n%*s", indent - 1, "");
			col = indent - 1;
		}
		fprintf(out, "%.*s", (int)len, p);
		col += (int)len;
		p += len;
	}
	fputc('\n', out);
	if (c->about)
		fprintf(out, "%s\n", c->about);
	for (int i = 0; i < c->nrows; i++) {
		const struct ftflag *f = &c->rows[i];
		char sx[512], text[2048];
		if (f->flags & FTF_HIDDEN)
			continue;
		label(f, lb, sizeof lb);
		suffix(f, sx, sizeof sx);
		snprintf(text, sizeof text, "%s%s%s%s", f->help ? f->help : "", sx[0] ? " (" : "", sx, sx[0] ? ")" : "");
		int w = fprintf(out, "  %s", lb);
		if (w >= HELP_COL) {
			fprintf(out, "\n%*s", HELP_COL, "");
		} else {
			fprintf(out, "%*s", HELP_COL - w, "");
		}
		wrap(out, text, HELP_COL, HELP_COL);
	}
	if (c->notes)
		fprintf(out, "%s%s", c->notes, c->notes[strlen(c->notes) - 1] == '\n' ? "" : "\n");
}

/* ---------------------------------------------------------------- the dump */

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* The default as a JSON value of the row's type (a list: an array), or null. */
static json_t *default_json(const struct ftflag *f)
{
	if (!f->def || !has_arg(f))
		return json_null();
	union {
		long l;
		double d;
		struct ftflag_list li;
	} u;
	char why[64];
	struct ftflag g = *f;
	g.off = 0;
	g.size = sizeof(long);
	switch (f->type) {
	case FTF_INT:
		return ftflags_set(&g, f->def, &u, why, sizeof why) ? json_null() : json_integer(u.l);
	case FTF_DOUBLE:
		return ftflags_set(&g, f->def, &u, why, sizeof why) ? json_null() : json_real(u.d);
	case FTF_INTS:
	case FTF_DOUBLES: {
		if (ftflags_set(&g, f->def, &u, why, sizeof why))
			return json_null();
		json_t *a = json_array();
		for (int i = 0; i < u.li.n; i++)
			json_array_append_new(a, f->type == FTF_INTS ? json_integer((json_int_t)u.li.v[i]) : json_real(u.li.v[i]));
		return a;
	}
	case FTF_CALL:
		if (numeric(f))
			return json_real(strtod(f->def, NULL));
		return json_string(f->def);
	default: return json_string(f->def);
	}
}

json_t *ftflags_json(const struct ftflag_cmd *c)
{
	json_t *rows = json_array(), *out = json_pack("{s:s,s:o}", "command", c->name, "flags", rows);
	if (!out)
		return NULL;
	for (int i = 0; i < c->nrows; i++) {
		const struct ftflag *f = &c->rows[i];
		const char *nm[8];
		size_t ln[8];
		int m = names_of(f, nm, ln, 8);
		json_t *aliases = json_array(), *choices = json_array();
		for (int j = 1; j < m; j++)
			json_array_append_new(aliases, json_stringn(nm[j], ln[j]));
		for (const char *p = f->choices; p && *p;) {
			const char *e = strchr(p, '|');
			json_array_append_new(choices, json_stringn(p, e ? (size_t)(e - p) : strlen(p)));
			if (!e)
				break;
			p = e + 1;
		}
		char sx[512], sh[3] = {'-', f->short_name, 0};
		suffix(f, sx, sizeof sx);
		int num = numeric(f) || f->type == FTF_INTS || f->type == FTF_DOUBLES;
		json_t *r = json_pack("{s:s,s:o,s:o,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:b,s:b}", "name", f->name,
				      "aliases", aliases, "short", f->short_name ? json_string(sh) : json_null(), "type",
				      type_names[f->type], "meta", str_or_null(f->meta), "minimum",
				      num ? json_real(f->lo) : json_null(), "maximum",
				      num ? json_real(f->hi) : json_null(), "default", default_json(f),
				      "default_help", str_or_null(f->def_help), "choices", choices, "unit",
				      str_or_null(f->unit), "help", str_or_null(f->help), "max_items",
				      f->type == FTF_INTS || f->type == FTF_DOUBLES ? json_integer(max_items(f)) : json_null(),
				      "takes_value", has_arg(f), "hidden", (f->flags & FTF_HIDDEN) != 0);
		if (!r || json_array_append_new(rows, r) < 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

/* ---------------------------------------------------------------- shared rows */

int ftflags_result_fd(const struct ftflag *f, const char *arg, void *opts)
{
	(void)f;
	(void)opts;
	return ftcli_opt_result_fd(arg);
}

int ftflags_tune(const struct ftflag *f, const char *arg, void *opts)
{
	return ftcli_opt_tune(field(f, opts), arg);
}

int ftflags_gpu(const struct ftflag *f, const char *arg, void *opts)
{
	struct ftflag_gpu *g = field(f, opts);
	if (g->spec == g->device && strcmp(g->device, arg)) {
		ftcli_error("--gpu %s and --device %s name different GPUs", arg, g->device);
		return -1;
	}
	g->spec = arg;
	return 0;
}

int ftflags_device(const struct ftflag *f, const char *arg, void *opts)
{
	struct ftflag_gpu *g = field(f, opts);
	return ftcli_opt_device(arg, g->device, sizeof g->device, &g->spec);
}
