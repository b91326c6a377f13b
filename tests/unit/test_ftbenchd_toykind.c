/* ftbenchd kinds: a kind is one row plus its argv builder. A toy kind defined here, outside the
 * daemon's table, goes through what a real one does: validation of its args against its
 * argument table (400 naming the field), the argv (table flags, its builder's flags, --gpu,
 * --result-fd=3 last), and its on-success hook storing a profile through the store it is
 * handed. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/kinds.h"

/* ---- the toy kind: these lines are all a new kind needs on the daemon's side */
static const struct ftargs_spec toy_args[] = {
	{"rounds", FTARGS_T_INT, "--rounds", 1, 10},
	{"speed", FTARGS_T_NUM, "--speed", 0, 1},
	{"mode", FTARGS_T_ENUM, "--mode", 0, 0, "fast|slow"},
	{"gpu", FTARGS_T_GPU, "--gpu"},
	{NULL}};

static int toy_argv(const struct ftd_kind_ctx *c, const json_t *args, struct ftd_argv *b, struct ftd_err *err)
{
	if (json_object_get(args, "speed") && !json_object_get(args, "mode")) {
		ftd_kind_err_set(err, 400, "missing_field", "args.mode", "toy with args.speed needs args.mode");
		return -1;
	}
	ftd_kind_argv_push(b, ftd_kind_argv_flag("--job", c->job_id ? c->job_id : "none"));
	return 0;
}

static int toy_success(struct ftd_kind_done *d)
{
	return d->store(json_object_get(d->result, "profile"), d->gpu_uuid, &d->profile_path, d->ctx) < 0 ? -1 : 0;
}

static const struct ftd_kind toy = {.name = "toy", .args = toy_args, .argv = toy_argv, .on_success = toy_success};
/* ---- end of the toy kind */

static struct ftgpu_info gpus[1];
static struct ftd_config cfg;

static int build(const char *args_json, char ***argv, int *gpu, struct ftd_err *e)
{
	json_t *a = json_loads(args_json, 0, NULL);
	assert_non_null(a);
	struct ftd_kind_ctx c = {.cfg = &cfg, .worker = "/w/ftbench", .gpus = gpus, .ngpus = 1, .job_id = "00ff00ff00ff00ff"};
	int r = ftd_kind_argv(&toy, a, &c, gpu, argv, e);
	json_decref(a);
	return r;
}

static void test_validation(void **s)
{
	(void)s;
	char **argv;
	int gpu;
	struct ftd_err e;
	assert_int_equal(build("{\"rounds\":11}", &argv, &gpu, &e), -1);
	assert_int_equal(e.status, 400);
	assert_string_equal(e.field, "args.rounds");
	assert_int_equal(build("{\"mode\":\"medium\"}", &argv, &gpu, &e), -1);
	assert_string_equal(e.field, "args.mode");
	assert_int_equal(build("{\"colour\":1}", &argv, &gpu, &e), -1);
	assert_string_equal(e.code, "unknown_field");
	assert_string_equal(e.field, "args.colour");
	/* the builder's own rule */
	assert_int_equal(build("{\"speed\":0.5}", &argv, &gpu, &e), -1);
	assert_string_equal(e.code, "missing_field");
	assert_string_equal(e.field, "args.mode");
	assert_int_equal(build("{\"gpu\":3}", &argv, &gpu, &e), -1);
	assert_string_equal(e.code, "unknown_gpu");
}

static void test_argv(void **s)
{
	(void)s;
	char **argv;
	int gpu;
	struct ftd_err e;
	assert_int_equal(build("{\"rounds\":3,\"speed\":0.25,\"mode\":\"slow\"}", &argv, &gpu, &e), 0);
	const char *want[] = {"/w/ftbench", "toy", "--rounds=3", "--speed=0.25", "--mode=slow", "--job=00ff00ff00ff00ff",
			      "--gpu=GPU-0000", "--result-fd=3", NULL};
	for (int i = 0; want[i]; i++)
		assert_string_equal(argv[i], want[i]);
	assert_null(argv[8]);
	assert_int_equal(gpu, 0);
	ftd_kind_argv_free(argv);
}

struct store {
	int calls;
	char uuid[64];
	double x;
	int fail;
};

static int store(const json_t *profile, const char *uuid, char **path_out, void *ctx)
{
	struct store *st = ctx;
	st->calls++;
	snprintf(st->uuid, sizeof st->uuid, "%s", uuid ? uuid : "");
	st->x = json_number_value(json_object_get(profile, "x"));
	if (st->fail)
		return -ENOSPC;
	*path_out = strdup("/store/GPU-0000.json");
	return 0;
}

static void test_on_success(void **s)
{
	(void)s;
	struct store st = {0};
	json_t *result = json_pack("{s:{s:f}}", "profile", "x", 2.5);
	struct ftd_kind_done d = {.job_id = "00ff00ff00ff00ff", .result = result, .gpu_uuid = "GPU-0000", .store = store,
				  .ctx = &st};
	assert_int_equal(toy.on_success(&d), 0);
	assert_int_equal(st.calls, 1);
	assert_string_equal(st.uuid, "GPU-0000");
	assert_true(st.x == 2.5);
	assert_string_equal(d.profile_path, "/store/GPU-0000.json");
	free(d.profile_path);
	st.fail = 1;
	struct ftd_kind_done d2 = d;
	d2.profile_path = NULL;
	assert_int_equal(toy.on_success(&d2), -1);
	assert_null(d2.profile_path);
	json_decref(result);
}

int main(void)
{
	gpus[0].index = 0;
	snprintf(gpus[0].uuid, sizeof gpus[0].uuid, "GPU-0000");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_argv),
		cmocka_unit_test(test_on_success),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
