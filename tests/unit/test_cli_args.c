/* cli/args: the seed's argparse lists (`--batch-sizes 1 4 16 32`) joined into ours before
 * getopt_long, matched as getopt_long matches options. args.c is compiled in here (it lives in
 * src/cli, outside libftbench). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "../../src/cli/args.c"

enum { O_BATCH = 256, O_MISS, O_BASE, O_BASIC, O_JSON, O_GPU };
static const struct option opts[] = {
	{"batch-sizes", required_argument, NULL, O_BATCH}, {"miss-rates", required_argument, NULL, O_MISS},
	{"base", required_argument, NULL, O_BASE},         {"basic", required_argument, NULL, O_BASIC},
	{"json", no_argument, NULL, O_JSON},               {"gpu", required_argument, NULL, O_GPU},
	{0}};
static const int lists[] = {O_BATCH, O_MISS, O_BASE, O_BASIC, 0};

/* Join argv (NULL-terminated) and compare with want (NULL-terminated). */
static void expect(const char *const *in, const char *const *want)
{
	int argc = 0;
	while (in[argc])
		argc++;
	struct ftcli_args a;
	assert_int_equal(ftcli_args_join_lists(&a, argc, (char **)in, opts, lists), 0);
	int n = 0;
	while (want[n])
		n++;
	if (a.argc != n)
		fail_msg("%d arguments, want %d (first: %s)", a.argc, n, a.argc ? a.argv[0] : "-");
	for (int i = 0; i < n; i++)
		assert_string_equal(a.argv[i], want[i]);
	assert_null(a.argv[a.argc]);
	ftcli_args_release(&a);
}

static void test_join(void **s)
{
	/* the seed's spelling */
	expect((const char *[]){"cc", "--batch-sizes", "1", "4", "16", "32", "--miss-rates", "0", "0.25", NULL},
	       (const char *[]){"cc", "--batch-sizes", "1,4,16,32", "--miss-rates", "0,0.25", NULL});
	/* ours is untouched */
	expect((const char *[]){"cc", "--batch-sizes", "1,4", "--json", NULL},
	       (const char *[]){"cc", "--batch-sizes", "1,4", "--json", NULL});
	/* --name=v and more items */
	expect((const char *[]){"cc", "--batch-sizes=1", "4", "--json", NULL},
	       (const char *[]){"cc", "--batch-sizes", "1,4", "--json", NULL});
	/* a unique prefix as getopt_long takes it */
	expect((const char *[]){"cc", "--batch", "1", "4", NULL}, (const char *[]){"cc", "--batch", "1,4", NULL});
	/* an ambiguous prefix (base/basic) is left to getopt_long to refuse */
	expect((const char *[]){"cc", "--bas", "1", "4", NULL}, (const char *[]){"cc", "--bas", "1", "4", NULL});
	/* an exact name wins over a longer one it prefixes */
	expect((const char *[]){"cc", "--base", "1", "4", NULL}, (const char *[]){"cc", "--base", "1,4", NULL});
	/* not a list option: its arguments stay apart */
	expect((const char *[]){"cc", "--gpu", "0", "1", NULL}, (const char *[]){"cc", "--gpu", "0", "1", NULL});
	/* "--" ends the options */
	expect((const char *[]){"cc", "--", "--batch-sizes", "1", "4", NULL},
	       (const char *[]){"cc", "--", "--batch-sizes", "1", "4", NULL});
	/* an option ends the list; a missing value is getopt_long's to report */
	expect((const char *[]){"cc", "--batch-sizes", "1", "-h", "4", NULL},
	       (const char *[]){"cc", "--batch-sizes", "1", "-h", "4", NULL});
	expect((const char *[]){"cc", "--batch-sizes", NULL}, (const char *[]){"cc", "--batch-sizes", NULL});
	expect((const char *[]){"cc", "--batch-sizes", "--json", "2", NULL},
	       (const char *[]){"cc", "--batch-sizes", "--json", "2", NULL});
	expect((const char *[]){"cc", NULL}, (const char *[]){"cc", NULL});
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_join)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
