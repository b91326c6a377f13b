/* The validation record: ftval_build from the seed engine harness, a decode --compare
 * summary and a record as it is; libftprofile's ftprof_validation (current / stale); and the CPU
 * kernel probe's pure parts (ftprobe_split, ftprobe_parse). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/cpu_probe.h"
#include "bench/validation.h"
#include "ftprofile.h"

/* two points of bf16 (uniform: a tie; reuse:0.85 at two cache sizes: offload wins) and one of
 * nvfp4 (uniform: hybrid wins) */
static const char *harness =
	"{\"format\":\"ftbench-engine-moe\",\"version\":1,\"epoch\":2000,"
	"\"engine\":{\"name\":\"freetoken\",\"version\":\"0.1.2\",\"commit\":\"abc\"},\"points\":["
	"{\"format\":\"bf16\",\"workload\":\"reuse:0.85\",\"cache_fraction\":0.4,\"winner\":\"offload\","
	" \"best_fetch_fraction\":0.75,\"arms\":[{\"mode\":\"offload\",\"ms_per_step\":{\"median\":3.2,\"p10\":2,\"p90\":4}},"
	"  {\"mode\":\"hybrid\",\"fetch_fraction\":0.75,\"ms_per_step\":{\"median\":4.7,\"p10\":4,\"p90\":10}}]},"
	"{\"format\":\"bf16\",\"workload\":\"uniform\",\"cache_fraction\":0.4,\"winner\":\"tie\","
	" \"best_fetch_fraction\":0.5,\"arms\":[{\"mode\":\"offload\",\"ms_per_step\":{\"median\":16,\"p10\":14,\"p90\":17}},"
	"  {\"mode\":\"hybrid\",\"fetch_fraction\":0.5,\"ms_per_step\":{\"median\":13.9,\"p10\":12,\"p90\":19}},"
	"  {\"mode\":\"hybrid\",\"fetch_fraction\":0.3,\"profile\":\"engine\",\"ms_per_step\":{\"median\":14.2,\"p10\":12,\"p90\":19}},"
	"  {\"mode\":\"hybrid\",\"cap\":2,\"error\":\"RuntimeError: x\"}]},"
	"{\"format\":\"bf16\",\"workload\":\"reuse:0.85\",\"cache_fraction\":0.7,\"winner\":\"offload\","
	" \"best_fetch_fraction\":0.75,\"arms\":[{\"mode\":\"offload\",\"ms_per_step\":{\"median\":3.0,\"p10\":2,\"p90\":4}},"
	"  {\"mode\":\"hybrid\",\"fetch_fraction\":0.75,\"ms_per_step\":{\"median\":5.3,\"p10\":4,\"p90\":10}}]},"
	"{\"format\":\"nvfp4\",\"workload\":\"uniform\",\"cache_fraction\":0.4,\"winner\":\"hybrid\","
	" \"best_fetch_fraction\":0.35,\"arms\":[{\"mode\":\"offload\",\"ms_per_step\":{\"median\":16,\"p10\":15,\"p90\":17}},"
	"  {\"mode\":\"hybrid\",\"fetch_fraction\":0.35,\"ms_per_step\":{\"median\":8,\"p10\":7,\"p90\":9}}]}]}";

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	if (!j)
		print_error("fixture JSON: %s at %d\n", e.text, e.position);
	assert_non_null(j);
	return j;
}

static const char *str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void test_harness_point_choice(void **s)
{
	json_t *doc = J(harness), *v;
	struct ftval_opts o;
	char err[256];
	ftval_opts_default(&o);
	/* default: the uniform point, whatever comes first in the file */
	assert_int_equal(ftval_build(doc, "bf16", &o, 1000, &v, err, sizeof err), 0);
	ftval_judge(v, "offload", NAN, NAN);
	assert_string_equal(str(v, "workload"), "uniform");
	assert_string_equal(str(v, "winner"), "tie");
	assert_true(json_is_true(json_object_get(v, "agrees"))); /* a tie agrees */
	assert_string_equal(str(v, "source"), "engine");
	assert_string_equal(str(v, "level"), "module");
	assert_string_equal(str(json_object_get(v, "engine"), "version"), "0.1.2");
	/* three measured arms (the failed one left out), labelled */
	assert_int_equal(json_array_size(json_object_get(v, "figures")), 3);
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(v, "engine"), "arms"), 2)),
			    "hybrid f=0.3 (profile engine)");
	assert_true(fabs(json_number_value(json_object_get(v, "best_fetch_fraction")) - 0.5) < 1e-12);
	assert_true(json_number_value(json_object_get(v, "measured_epoch")) == 2000);
	assert_true(json_number_value(json_object_get(v, "profile_epoch")) == 1000);
	json_decref(v);
	/* a workload and a cache size pick their point; the verdict disagrees */
	o.workload = "reuse:0.85";
	o.cache_fraction = 0.7;
	assert_int_equal(ftval_build(doc, "bf16", &o, 1000, &v, err, sizeof err), 0);
	ftval_judge(v, "hybrid", NAN, NAN);
	assert_true(fabs(json_number_value(json_object_get(v, "cache_fraction")) - 0.7) < 1e-12);
	assert_string_equal(str(v, "winner"), "offload");
	assert_true(json_is_false(json_object_get(v, "agrees")));
	json_decref(v);
	/* no verdict to compare with: agrees null */
	assert_int_equal(ftval_build(doc, "nvfp4", NULL, 1000, &v, err, sizeof err), 0);
	assert_true(json_is_null(json_object_get(v, "agrees")));
	assert_true(json_is_null(json_object_get(v, "verdict")));
	json_decref(v);
	/* no such point */
	o.cache_fraction = 0.9;
	assert_int_equal(ftval_build(doc, "bf16", &o, 1000, &v, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "no point for bf16"));
	assert_int_equal(ftval_build(doc, "mxfp4_triton", NULL, 1000, &v, err, sizeof err), -EINVAL);
	/* the formats of a run */
	const char *names[8];
	assert_int_equal(ftval_formats(doc, names, 8), 2);
	assert_string_equal(names[0], "bf16");
	assert_string_equal(names[1], "nvfp4");
	/* no time: refused, unless given */
	json_object_del(doc, "epoch");
	assert_int_equal(ftval_build(doc, "bf16", NULL, 1000, &v, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "--measured-epoch"));
	ftval_opts_default(&o);
	o.measured_epoch = 3000;
	assert_int_equal(ftval_build(doc, "bf16", &o, 1000, &v, err, sizeof err), 0);
	ftval_judge(v, "offload", NAN, NAN);
	assert_true(json_number_value(json_object_get(v, "measured_epoch")) == 3000);
	json_decref(v);
	json_decref(doc);
}

/* ftval_judge: the run's workload judged by a replay point's verdict (verdict_point set), a tie
 * agrees, no verdict leaves agrees null; the harness record carries the point's measured reuse */
static void test_judge(void **s)
{
	(void)s;
	json_t *doc = J("{\"format\":\"ftbench-engine-moe\",\"version\":1,\"epoch\":2000,\"engine\":{\"name\":\"freetoken\"},"
			"\"points\":[{\"format\":\"bf16\",\"workload\":\"uniform\",\"cache_fraction\":0.4,\"trace_reuse\":0.0635,"
			"\"winner\":\"hybrid\",\"arms\":[{\"mode\":\"offload\",\"ms_per_step\":{\"median\":16}},"
			"{\"mode\":\"hybrid\",\"fetch_fraction\":0.5,\"ms_per_step\":{\"median\":14}}]}]}"),
	       *v;
	char err[256];
	assert_int_equal(ftval_build(doc, "bf16", NULL, 1000, &v, err, sizeof err), 0);
	ftval_judge(v, "offload", NAN, NAN);
	assert_true(fabs(json_number_value(json_object_get(v, "reuse")) - 0.0635) < 1e-12);
	assert_true(json_is_false(json_object_get(v, "agrees"))); /* the default verdict: offload */
	assert_true(json_is_null(json_object_get(v, "verdict_point")));
	ftval_judge(v, "hybrid", 0.4, 0.0);
	assert_true(json_is_true(json_object_get(v, "agrees")));
	assert_string_equal(str(v, "verdict"), "hybrid");
	const json_t *vp = json_object_get(v, "verdict_point");
	assert_true(fabs(json_number_value(json_object_get(vp, "cache_fraction")) - 0.4) < 1e-12);
	assert_true(json_number_value(json_object_get(vp, "reuse")) == 0.0);
	ftval_judge(v, NULL, 0.4, 0.0);
	assert_true(json_is_null(json_object_get(v, "agrees")));
	assert_true(json_is_null(json_object_get(v, "verdict_point")));
	json_object_set_new(v, "winner", json_string("tie"));
	ftval_judge(v, "offload", NAN, NAN);
	assert_true(json_is_true(json_object_get(v, "agrees")));
	json_decref(v);
	json_decref(doc);
}

static void test_compare_summary(void **s)
{
	json_t *doc = J("{\"kind\":\"decode_compare\",\"epoch\":5000,\"server_kind\":\"freetoken\","
			"\"prompt_source\":\"builtin:0\",\"arms\":["
			"{\"arm\":\"moe-backend=offload\",\"settings\":{\"moe-backend\":\"offload\"},"
			" \"decode_tok_s\":{\"median\":30,\"min\":29,\"max\":31}},"
			"{\"arm\":\"moe-backend=hybrid\",\"settings\":{\"moe-backend\":\"hybrid\"},"
			" \"decode_tok_s\":{\"median\":41,\"min\":40,\"max\":42}}],"
			"\"winner\":\"moe-backend=hybrid\",\"decision\":\"winner\"}"),
	       *v;
	struct ftval_opts o;
	char err[256];
	ftval_opts_default(&o);
	o.engine_version = "0.1.2";
	assert_int_equal(ftval_build(doc, "bf16", &o, 1000, &v, err, sizeof err), 0);
	ftval_judge(v, "offload", NAN, NAN);
	assert_string_equal(str(v, "winner"), "hybrid");
	assert_string_equal(str(v, "level"), "server");
	assert_string_equal(str(v, "unit"), "tok_s");
	assert_true(json_is_false(json_object_get(v, "agrees")));
	assert_string_equal(str(json_object_get(v, "engine"), "version"), "0.1.2");
	assert_true(json_is_null(json_object_get(v, "best_fetch_fraction")));
	json_decref(v);
	/* the --output-format json document holds it under "compare"; a tie agrees */
	json_t *wrap = json_pack("{s:s,s:O}", "kind", "decode", "compare", doc);
	json_object_set_new(json_object_get(wrap, "compare"), "decision", json_string("tie"));
	json_object_set_new(json_object_get(wrap, "compare"), "winner", json_null());
	assert_int_equal(ftval_build(wrap, "bf16", NULL, 1000, &v, err, sizeof err), 0);
	ftval_judge(v, "hybrid", NAN, NAN);
	assert_string_equal(str(v, "winner"), "tie");
	assert_true(json_is_true(json_object_get(v, "agrees")));
	json_decref(v);
	/* no data: refused */
	json_object_set_new(json_object_get(wrap, "compare"), "decision", json_string("no_data"));
	assert_int_equal(ftval_build(wrap, "bf16", NULL, 1000, &v, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "no verdict"));
	json_decref(wrap);
	json_decref(doc);
	/* a record as it is (replay) */
	doc = J("{\"source\":\"replay\",\"winner\":\"offload\",\"best_fetch_fraction\":0.4,\"measured_epoch\":7}");
	assert_int_equal(ftval_build(doc, "bf16", NULL, 1000, &v, err, sizeof err), 0);
	ftval_judge(v, "offload", NAN, NAN);
	assert_string_equal(str(v, "source"), "replay");
	assert_true(json_is_true(json_object_get(v, "agrees")));
	json_decref(v);
	json_decref(doc);
	doc = J("{\"what\":1}");
	assert_int_equal(ftval_build(doc, "bf16", NULL, 1000, &v, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "neither"));
	json_decref(doc);
}

static struct ftprof *load(const char *text)
{
	char path[] = "/tmp/ftprof_val.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct ftprof *p = NULL;
	char err[256];
	assert_int_equal(ftprof_load_file(path, &p, err, sizeof err), 0);
	unlink(path);
	return p;
}

static void test_stale(void **s)
{
	char text[1024];
	struct ftprof_validation v;
	const char *rec = "{\"version\":4,\"epoch\":1000,\"dtypes\":{\"bf16\":\"offload\"},\"validation\":{"
			  "\"bf16\":{\"source\":\"engine\",\"engine\":{\"name\":\"freetoken\",\"version\":\"0.1.2\","
			  "\"arms\":[]},\"winner\":\"tie\",\"best_fetch_fraction\":0.5,\"agrees\":true,"
			  "\"measured_epoch\":%s,\"profile_epoch\":%s},"
			  "\"mxfp4_triton\":{\"source\":\"replay\",\"winner\":\"hybrid\",\"agrees\":null,"
			  "\"measured_epoch\":1001,\"profile_epoch\":1000}}}";
	snprintf(text, sizeof text, rec, "1001", "1000");
	struct ftprof *p = load(text);
	assert_int_equal(ftprof_validation(p, "bf16", NULL, &v), 0);
	assert_int_equal(v.state, FTPROF_VALIDATION_CURRENT);
	assert_string_equal(v.winner, "tie");
	assert_int_equal(v.agrees, 1);
	assert_true(fabs(v.best_fetch_fraction - 0.5) < 1e-12);
	/* every field the record carries, as written (a generated mutant read "source" from another key) */
	assert_string_equal(v.source, "engine");
	assert_string_equal(v.engine_name, "freetoken");
	assert_string_equal(v.engine_version, "0.1.2");
	assert_true(fabs(v.measured_epoch - 1001) < 1e-9 && fabs(v.profile_epoch - 1000) < 1e-9);
	assert_int_equal(ftprof_validation(p, "bf16", "0.1.2", &v), 0);
	assert_int_equal(v.state, FTPROF_VALIDATION_CURRENT);
	assert_int_equal(ftprof_validation(p, "bf16", "0.1.3", &v), 0);
	assert_int_equal(v.state, FTPROF_VALIDATION_STALE_ENGINE);
	assert_string_equal(ftprof_validation_state_name(v.state), "stale_engine");
	/* the reader's alias; agrees unknown; a record without a version is stale to a versioned caller */
	assert_int_equal(ftprof_validation(p, "mxfp4", NULL, &v), 0);
	assert_int_equal(v.agrees, -1);
	assert_string_equal(v.source, "replay");
	assert_null(v.engine_name);
	assert_true(isnan(v.best_fetch_fraction));
	assert_int_equal(ftprof_validation(p, "mxfp4", "1", &v), 0);
	assert_int_equal(v.state, FTPROF_VALIDATION_STALE_ENGINE);
	assert_int_equal(ftprof_validation(p, "nvfp4", NULL, &v), -ENODATA);
	/* no record: *v cleared (an engine that reads it anyway finds NULL strings, not the last ones) */
	assert_true(!v.source && !v.engine_name && !v.engine_version && !v.winner && v.agrees == 0 && v.state == 0);
	assert_int_equal(ftprof_validation(NULL, "bf16", NULL, &v), -EINVAL);
	ftprof_free(p);
	/* run before the profile was measured; compared with another profile; no epoch */
	const char *cases[][2] = {{"999", "1000"}, {"1001", "900"}, {"null", "1000"}};
	for (int i = 0; i < 3; i++) {
		snprintf(text, sizeof text, rec, cases[i][0], cases[i][1]);
		p = load(text);
		assert_int_equal(ftprof_validation(p, "bf16", "0.1.2", &v), 0);
		assert_int_equal(v.state, FTPROF_VALIDATION_STALE_PROFILE);
		ftprof_free(p);
	}
	p = load("{\"version\":4,\"epoch\":1}");
	assert_int_equal(ftprof_validation(p, "bf16", NULL, &v), -ENODATA);
	ftprof_free(p);
}

static void test_probe_split(void **s)
{
	char **a, err[200];
	assert_int_equal(ftprobe_split("  python3 'a b' \"c \\\"d\\\"\" e\\ f x\"y z\"  ", &a, err, sizeof err), 0);
	const char *want[] = {"python3", "a b", "c \"d\"", "e f", "xy z"};
	for (int i = 0; i < 5; i++)
		assert_string_equal(a[i], want[i]);
	assert_null(a[5]);
	ftprobe_free_argv(a);
	assert_int_equal(ftprobe_split("p ''", &a, err, sizeof err), 0);
	assert_string_equal(a[1], "");
	ftprobe_free_argv(a);
	assert_int_equal(ftprobe_split("   ", &a, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "empty"));
	assert_int_equal(ftprobe_split("p 'x", &a, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "unbalanced"));
}

/* Each case of bad[] (subst in good replaced by with) fails ftprobe_parse with want in its
 * message and leaves no samples. */
struct bad_case {
	const char *subst, *with, *want;
};
static void expect_parse_errors(const char *good, const struct ftprobe_request *q, const struct bad_case *bad, size_t n)
{
	struct ftprobe_result r;
	char err[300];
	for (size_t i = 0; i < n; i++) {
		char doc[1400];
		const char *at = strstr(good, bad[i].subst);
		assert_non_null(at);
		snprintf(doc, sizeof doc, "%.*s%s%s", (int)(at - good), good, bad[i].with, at + strlen(bad[i].subst));
		assert_int_equal(ftprobe_parse(doc, strlen(doc), q, &r, err, sizeof err), -EPROTO);
		if (!strstr(err, bad[i].want))
			fail_msg("case %zu: the message was: %s", i, err);
		assert_null(r.samples);
	}
}

static void test_probe_parse(void **s)
{
	struct ftprobe_request q = {.format = "bf16", .expert_bytes = 100};
	struct ftprobe_result r;
	char err[300];
	const char *good = "log line\n{not the result\n"
			   "{\"protocol\":\"ftbench-cpu-kernel\",\"version\":1,\"engine\":{\"name\":\"e\",\"version\":\"1\"},"
			   "\"format\":\"bf16\",\"gbs\":10,\"samples\":[9,10,11],\"threads\":2,\"isa\":\"x\","
			   "\"expert_bytes\":100}\ntrailing words\n";
	assert_int_equal(ftprobe_parse(good, strlen(good), &q, &r, err, sizeof err), 0);
	assert_int_equal(r.supported, 1);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.engine_name, "e");
	assert_int_equal(r.threads, 2);
	ftprobe_result_release(&r);
	/* each defect named */
	static const struct bad_case bad[] = {
		{"\"expert_bytes\":100", "\"expert_bytes\":99", "experts of 99 bytes"},
		{"\"samples\":[9,10,11]", "\"samples\":[9,-1]", "\"samples\"[1]"},
		{"\"samples\":[9,10,11]", "\"samples\":[]", "lacks \"samples\""},
		{"\"threads\":2", "\"threads\":0", "lacks \"threads\""},
		{"\"isa\":\"x\"", "\"isa\":\"\"", "lacks \"isa\""},
		{"\"version\":1,\"engine\"", "\"version\":2,\"engine\"", "\"version\" is not 1"},
		{"\"name\":\"e\"", "\"name\":\"\"", "\"engine\".\"name\""},
		{"\"gbs\":10", "\"gbs\":10,\"gbs\":11", "not JSON"},
		{"\"format\":\"bf16\"", "\"format\":\"nvfp4\"", "answered for format \"nvfp4\""},
	};
	expect_parse_errors(good, &q, bad, sizeof bad / sizeof *bad);
	const char *none = "only logs\n";
	assert_int_equal(ftprobe_parse(none, strlen(none), &q, &r, err, sizeof err), -EPROTO);
	const char *unsup = "{\"protocol\":\"ftbench-cpu-kernel\",\"version\":1,\"engine\":{\"name\":\"e\",\"version\":\"1\"},"
			    "\"format\":\"bf16\",\"supported\":false,\"error\":\"no bf16 path\"}";
	assert_int_equal(ftprobe_parse(unsup, strlen(unsup), &q, &r, err, sizeof err), 0);
	assert_int_equal(r.supported, 0);
	assert_string_equal(r.note, "no bf16 path");
	/* the request line carries the geometry */
	struct ftprobe_request rq = {.format = "nvfp4", .hidden = 3072, .inter = 1536, .experts = 128, .top_k = 8,
				     .synth_experts = 128, .expert_bytes = 7974912, .activation = "silu",
				     .swiglu_limit = NAN, .threads = 0, .warmup = 8, .steps = 64};
	char *line = ftprobe_request_line(&rq);
	assert_non_null(line);
	assert_non_null(strstr(line, "\"format\":\"nvfp4\",\"hidden\":3072,\"inter\":1536"));
	assert_non_null(strstr(line, "\"swiglu_limit\":null"));
	assert_null(strchr(line, '\n'));
	free(line);
}

/* layer steps (replay --cpu-kernel): the result's checks, and the curves the replay holds to */
static void test_probe_layer_steps(void **s)
{
	static const int routes[] = {0, 1, 2, 4, 8}, fetches[] = {1, 2, 8};
	struct ftprobe_request q = {.format = "bf16", .layer_step = 1, .layers = 16, .batch = 1, .top_k = 8,
				    .routes = routes, .nroutes = 5, .fetches = fetches, .nfetches = 3};
	struct ftprobe_result r;
	char err[300];
	const char *good =
		"{\"protocol\":\"ftbench-cpu-kernel\",\"version\":1,\"engine\":{\"name\":\"e\",\"version\":\"1\"},"
		"\"format\":\"bf16\",\"measure\":\"layer_step\",\"layer_step\":{\"base_us\":40,\"steps\":32,\"routes\":["
		"{\"routes\":0,\"us\":100},{\"routes\":1,\"us\":500},{\"routes\":2,\"us\":600},{\"routes\":4,\"us\":1000},"
		"{\"routes\":8,\"us\":1800}],\"fetch\":[{\"fetched\":1,\"us\":400,\"offload_us\":200},"
		"{\"fetched\":2,\"us\":500,\"offload_us\":400},{\"fetched\":8,\"us\":1500,\"offload_us\":1600}]},"
		"\"threads\":15,\"isa\":\"avx512bf16\"}\n";
	assert_int_equal(ftprobe_parse(good, strlen(good), &q, &r, err, sizeof err), 0);
	assert_int_equal(r.nroutes, 5);
	assert_int_equal(r.nfetch, 3);
	assert_true(r.base_us == 40);
	assert_int_equal(r.steps_timed, 32);
	/* added time: us(n) - base, linear between measured counts, past the last with its slope */
	double pad[13], fp[13];
	assert_int_equal(ftprobe_layer_pad(&r, 12, pad), 0);
	static const double want[] = {60, 460, 560, 760, 960, 1160, 1360, 1560, 1760, 1960, 2160, 2360, 2560};
	for (int n = 0; n <= 12; n++)
		assert_true(fabs(pad[n] - want[n]) < 1e-9);
	/* fetch overhead: hybrid - offload through (0, 0), each point at least 0 (m = 8 measured -100) */
	assert_int_equal(ftprobe_fetch_pad(&r, 9, fp), 0);
	static const double fwant[] = {0, 200, 100, 500.0 / 6, 400.0 / 6, 50, 200.0 / 6, 100.0 / 6, 0, 0};
	for (int m = 0; m <= 9; m++)
		if (fabs(fp[m] - fwant[m]) > 1e-9)
			fail_msg("fetch pad %d: %g, want %g", m, fp[m], fwant[m]);
	ftprobe_result_release(&r);
	static const struct bad_case bad[] = {
		{"\"measure\":\"layer_step\",", "", "\"measure\" is not \"layer_step\""},
		{"\"base_us\":40", "\"base_us\":0", "\"base_us\""},
		{"{\"routes\":1,\"us\":500},", "", "an array of 5 entries"},
		{"{\"routes\":2,", "{\"routes\":3,", "[2] is not for 2 routes"},
		{"{\"routes\":4,\"us\":1000}", "{\"routes\":4,\"us\":\"x\"}", "[3].\"us\""},
		{"{\"fetched\":2,\"us\":500,\"offload_us\":400},", "", "an array of 3 entries"},
		{"\"offload_us\":200", "\"offload_us\":-1", "\"offload_us\""},
		{"\"steps\":32", "\"steps\":0", "\"steps\""},
	};
	expect_parse_errors(good, &q, bad, sizeof bad / sizeof *bad);
	/* the request line says what to measure */
	char *line = ftprobe_request_line(&q);
	assert_non_null(line);
	assert_non_null(strstr(line, "\"measure\":\"layer_step\""));
	assert_non_null(strstr(line, "\"routes\":[0,1,2,4,8]"));
	assert_non_null(strstr(line, "\"fetches\":[1,2,8]"));
	free(line);
	struct ftprobe_request k = {.format = "bf16"};
	line = ftprobe_request_line(&k);
	assert_non_null(strstr(line, "\"measure\":\"kernel\""));
	assert_null(strstr(line, "\"routes\""));
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_harness_point_choice), cmocka_unit_test(test_judge), cmocka_unit_test(test_compare_summary),
		cmocka_unit_test(test_stale), cmocka_unit_test(test_probe_split), cmocka_unit_test(test_probe_parse),
		cmocka_unit_test(test_probe_layer_steps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
