/* cli/flags: a command's option rows -> parsing (defaults, bounds, aliases, the seed's list
 * spelling, later-wins), --help (bounds and default from the row) and the JSON dump. flags.c and
 * args.c are compiled in here (src/cli is outside libftbench); the few ftcli_ calls they make are
 * stood in for below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/cli/args.c"
#include "../../src/cli/flags.c"

static char last_error[512];
void ftcli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	va_end(ap);
}
int ftcli_opt_result_fd(const char *arg)
{
	return strcmp(arg, "3") ? -1 : 0;
}
int ftcli_opt_device(const char *arg, char *spec, size_t n, const char **gpu_spec)
{
	snprintf(spec, n, "%s", arg);
	*gpu_spec = spec;
	return 0;
}
int ftcli_opt_tune(struct ftcli_tune *o, const char *arg)
{
	if (!strcmp(arg, "help"))
		return 1;
	o->kv[o->n++] = arg;
	return 0;
}

struct o {
	long repeat;
	int threads, flag, fmt, mode;
	double x;
	const char *out, *dtype;
	struct ftflag_list batch, rates;
	struct ftcli_tune tune;
};
#define F(m) FTF_FIELD(struct o, m)
static const struct ftflag rows[] = {
	{"repeat", FTF_INT, F(repeat), .meta = "N", .lo = 1, .hi = 1000, .def = "64", .alias = "iters|reps",
	 .help = "timed steps"},
	{"threads", FTF_INT, F(threads), .meta = "N", .lo = 0, .hi = 4096, .help = "threads"},
	{"x", FTF_DOUBLE, F(x), .meta = "X", .lo = 0, .hi = 1, .def = "0.75", .unit = "s", .help = "a share"},
	{"output", FTF_STR, F(out), .meta = "FILE", .short_name = 'o', .alias = "out", .help = "where"},
	{"dtype", FTF_STR, F(dtype), .meta = "LIST", .def = "all", .flags = FTF_SEED_LIST, .help = "formats"},
	{"no-checks", FTF_BOOL, F(flag), .help = "no checks"},
	{"mode", FTF_ENUM, F(mode), .choices = "proxy|sm|both", .def = "sm", .help = "path"},
	{"batch", FTF_INTS, F(batch), .meta = "LIST", .lo = 1, .hi = 32, .max_items = 4, .def = "1,2",
	 .flags = FTF_SEED_LIST, .help = "batches"},
	{"rates", FTF_DOUBLES, F(rates), .meta = "LIST", .lo = 0, .hi = 1, .help = "rates"},
	FTF_JSON_ROW(struct o, fmt, "json"),
	FTF_FORMAT_ROW(struct o, fmt, "format"),
	FTF_RESULT_FD_ROW,
	FTF_TUNE_ROW(struct o, tune),
};
static const struct ftflag_cmd cmd = {"demo", rows, FTF_COUNT(rows), .args = "[FILE]", .max_args = 1};

/* Parse the NULL-ended in into *o: ftflags_parse's return. */
static int parse(struct o *o, struct ftflag_state *st, const char *const *in)
{
	char *argv[32];
	int argc = 0;
	argv[argc++] = (char *)"demo";
	while (*in)
		argv[argc++] = (char *)*in++;
	argv[argc] = NULL;
	memset(o, 0, sizeof *o);
	last_error[0] = '\0';
	FILE *keep = stdout;
	stdout = fopen("/dev/null", "w");
	int r = ftflags_parse(&cmd, argc, argv, o, st);
	fclose(stdout);
	stdout = keep;
	return r;
}

static void test_defaults(void **s)
{
	(void)s;
	struct o o;
	struct ftflag_state st;
	assert_int_equal(parse(&o, &st, (const char *[]){NULL}), 0);
	assert_int_equal(o.repeat, 64);
	assert_true(o.x == 0.75);
	assert_string_equal(o.dtype, "all");
	assert_int_equal(o.mode, 1);
	assert_int_equal(o.batch.n, 2);
	assert_true(o.batch.v[1] == 2);
	assert_int_equal(o.fmt, 0); /* table */
	assert_false(ftflags_given(&cmd, &st, "repeat"));
	ftflags_release(&st);
}

static void test_values_aliases_and_order(void **s)
{
	(void)s;
	struct o o;
	struct ftflag_state st;
	const char *in[] = {"--iters", "7", "--x=0.5", "-o", "f.json", "--no-checks", "--mode", "both",
			    "--batch", "4", "8", "--dtype", "bf16", "nvfp4", "--json", "--tune", "a=1", "--threads=3",
			    "pos", NULL};
	assert_int_equal(parse(&o, &st, in), 0);
	assert_int_equal(o.repeat, 7);
	assert_true(ftflags_given(&cmd, &st, "repeat"));
	assert_false(ftflags_given(&cmd, &st, "rates"));
	assert_true(o.x == 0.5);
	assert_string_equal(o.out, "f.json");
	assert_int_equal(o.flag, 1);
	assert_int_equal(o.mode, 2);
	assert_int_equal(o.batch.n, 2);
	assert_true(o.batch.v[0] == 4 && o.batch.v[1] == 8);
	assert_string_equal(o.dtype, "bf16,nvfp4"); /* the seed's spelling, joined */
	assert_int_equal(o.fmt, 1);
	assert_int_equal(o.tune.n, 1);
	assert_int_equal(o.threads, 3);
	assert_int_equal(st.argc - st.pos, 1);
	assert_string_equal(st.argv[st.pos], "pos");
	ftflags_release(&st);
	/* the later of --json and --output-format wins, both ways */
	assert_int_equal(parse(&o, &st, (const char *[]){"--json", "--output-format", "csv", NULL}), 0);
	assert_int_equal(o.fmt, 2);
	ftflags_release(&st);
	assert_int_equal(parse(&o, &st, (const char *[]){"--output-format", "md", "--json", NULL}), 0);
	assert_int_equal(o.fmt, 1);
	ftflags_release(&st);
	assert_int_equal(parse(&o, &st, (const char *[]){"--out", "g", "--reps", "1000", NULL}), 0);
	assert_string_equal(o.out, "g");
	assert_int_equal(o.repeat, 1000);
	ftflags_release(&st);
}

static void test_refused(void **s)
{
	(void)s;
	struct o o;
	struct ftflag_state st;
	static const char *const bad[][3] = {
		{"--repeat", "0", "bad value '0' for --repeat: expected an integer in 1..1000"},
		{"--iters", "1001", "bad value '1001' for --iters: expected an integer in 1..1000"},
		{"--x", "1.5", "bad value '1.5' for --x: expected a number in 0..1"},
		{"--mode", "gpu", "bad value 'gpu' for --mode: expected one of proxy|sm|both"},
		{"--batch", "1,2,3,4,5", "bad value '1,2,3,4,5' for --batch: expected 1 to 4"},
		{"--batch", "33", "for --batch"},
		{"--rates", "0.5,2", "for --rates"},
		{"--threads", "x", "for --threads"},
		{"--output-format", "xml", "for --output-format: expected one of table|json|csv|md"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(parse(&o, &st, (const char *[]){bad[i][0], bad[i][1], NULL}), -1);
		if (!strstr(last_error, bad[i][2]))
			fail_msg("%s %s: '%s' has no '%s'", bad[i][0], bad[i][1], last_error, bad[i][2]);
	}
	assert_int_equal(parse(&o, &st, (const char *[]){"--result-fd", "9", NULL}), -1);
	assert_int_equal(parse(&o, &st, (const char *[]){"a", "b", NULL}), -1); /* one positional at most */
	assert_non_null(strstr(last_error, "unexpected argument 'b'"));
	FILE *keep = stderr;
	stderr = fopen("/dev/null", "w");
	assert_int_equal(parse(&o, &st, (const char *[]){"--nope", NULL}), -1);
	fclose(stderr);
	stderr = keep;
	/* stop with exit 0: --help, --tune help */
	assert_int_equal(parse(&o, &st, (const char *[]){"--help", NULL}), 1);
	assert_int_equal(parse(&o, &st, (const char *[]){"-h", NULL}), 1);
	assert_int_equal(parse(&o, &st, (const char *[]){"--tune", "help", NULL}), 1);
}

static char *help_text(void)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	ftflags_help(&cmd, f);
	fclose(f);
	return buf;
}

static void test_help_from_rows(void **s)
{
	(void)s;
	char *h = help_text();
	static const char *const want[] = {
		"usage: ftbench demo [--repeat N] [--threads N]",
		"\n  --repeat N            timed steps (1..1000; default 64; also --iters N, --reps N)\n",
		"\n  --x X                 a share (0..1 s; default 0.75)\n",
		"\n  --output FILE         where (also -o FILE, --out FILE)\n",
		"\n  --mode proxy|sm|both  path (default sm)\n",
		"batches (4 at most, each 1..32; default 1,2)",
		"[FILE]",
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		if (!strstr(h, want[i]))
			fail_msg("--help has no '%s':\n%s", want[i], h);
	assert_null(strstr(h, "--tune")); /* hidden */
	free(h);
}

static void test_dump(void **s)
{
	(void)s;
	json_t *j = ftflags_json(&cmd);
	assert_non_null(j);
	json_t *fl = json_object_get(j, "flags");
	assert_int_equal(json_array_size(fl), (size_t)FTF_COUNT(rows));
	json_t *r = json_array_get(fl, 0);
	assert_string_equal(json_string_value(json_object_get(r, "name")), "repeat");
	assert_int_equal(json_integer_value(json_object_get(r, "default")), 64);
	assert_true(json_number_value(json_object_get(r, "maximum")) == 1000);
	assert_string_equal(json_string_value(json_array_get(json_object_get(r, "aliases"), 1)), "reps");
	r = json_array_get(fl, 7);
	assert_int_equal(json_array_size(json_object_get(r, "default")), 2);
	assert_int_equal(json_integer_value(json_object_get(r, "max_items")), 4);
	assert_true(json_is_true(json_object_get(json_array_get(fl, FTF_COUNT(rows) - 1), "hidden")));
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),        cmocka_unit_test(test_values_aliases_and_order),
		cmocka_unit_test(test_refused),         cmocka_unit_test(test_help_from_rows),
		cmocka_unit_test(test_dump),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
