/* ftbenchd kinds: typed job arguments -> the worker's argv, or a 4xx naming the field. The
 * modules come from libftbenchd.a. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/config.h"
#include "../../daemon/kinds.h"
#include "../lib/tmpdir.h"

static struct ftd_config cfg;
static struct ftgpu_info gpus[2];
static char root[] = "/tmp/ftd-kinds-XXXXXX";

static int build(const char *kind, const char *args_json, int ngpus, char ***argv, int *gpu, struct ftd_err *e)
{
	json_t *a = json_loads(args_json, 0, NULL);
	assert_non_null(a);
	int r = ftd_kind_build(ftd_kind_find(kind), a, &cfg, "/w/ftbench", gpus, ngpus, gpu, argv, e);
	json_decref(a);
	return r;
}

static int has(char **argv, const char *s)
{
	for (; *argv; argv++)
		if (!strcmp(*argv, s))
			return 1;
	return 0;
}

static void expect_err(const char *kind, const char *args, int status, const char *code, const char *field)
{
	char **argv;
	int gpu;
	struct ftd_err e;
	if (build(kind, args, 2, &argv, &gpu, &e) == 0)
		fail_msg("%s %s was accepted", kind, args);
	assert_int_equal(e.status, status);
	assert_string_equal(e.code, code);
	assert_string_equal(e.field, field);
}

static void test_bw_argv(void **s)
{
	char **argv;
	int gpu;
	struct ftd_err e;
	assert_int_equal(build("bw", "{\"dtype\":[\"bf16\",\"fp8\"],\"model\":\"qwen3-30b\",\"threshold\":2.5,"
				     "\"cpu_iters\":3,\"gather\":\"sm\",\"batch_sweep\":[1,4,32],\"gpu\":1}", 2, &argv,
				     &gpu, &e), 0);
	assert_int_equal(gpu, 1);
	assert_string_equal(argv[0], "/w/ftbench");
	assert_string_equal(argv[1], "bw");
	assert_true(has(argv, "--dtype=bf16,fp8"));
	assert_true(has(argv, "--model=qwen3-30b"));
	assert_true(has(argv, "--threshold=2.5"));
	assert_true(has(argv, "--cpu-iters=3"));
	assert_true(has(argv, "--gather=sm"));
	assert_true(has(argv, "--batch-sweep=1,4,32"));
	assert_true(has(argv, "--gpu=GPU-22222222-0000"));
	int n = 0;
	while (argv[n])
		n++;
	assert_string_equal(argv[n - 1], "--result-fd=3");
	ftd_kind_argv_free(argv);
	/* no gpu: the first; no GPU on the host: none */
	assert_int_equal(build("bw", "{}", 2, &argv, &gpu, &e), 0);
	assert_int_equal(gpu, 0);
	ftd_kind_argv_free(argv);
	assert_int_equal(build("bw", "{}", 0, &argv, &gpu, &e), 0);
	assert_int_equal(gpu, -1);
	for (char **p = argv; *p; p++)
		assert_null(strstr(*p, "--gpu"));
	assert_false(has(argv, "--no-legacy-copy")); /* the daemon settles the legacy copy itself */
	ftd_kind_argv_free(argv);
	/* cpu_threads 0 = all cores (the seed's meaning) */
	assert_int_equal(build("bw", "{\"cpu_threads\":0}", 2, &argv, &gpu, &e), 0);
	assert_true(has(argv, "--cpu-threads=0"));
	ftd_kind_argv_free(argv);
	/* bw-legacy-copy = 0: the worker is not told (it writes -o only; the daemon settles the
	 * profile and the legacy copy) */
	cfg.bw_legacy_copy = 0;
	assert_int_equal(build("bw", "{}", 2, &argv, &gpu, &e), 0);
	assert_false(has(argv, "--no-legacy-copy"));
	ftd_kind_argv_free(argv);
	cfg.bw_legacy_copy = 1;
}

static void test_cache_copy_and_flags(void **s)
{
	char **argv;
	int gpu;
	struct ftd_err e;
	assert_int_equal(build("cache-copy", "{\"cache_slots\":[64,128],\"miss_rates\":[0,0.25,1],\"repeat\":5,"
					     "\"copy\":\"proxy\",\"gpu\":\"GPU-1111\"}", 2, &argv, &gpu, &e), 0);
	assert_int_equal(gpu, 0);
	assert_true(has(argv, "--cache-slots=64,128"));
	assert_true(has(argv, "--miss-rates=0,0.25,1"));
	assert_true(has(argv, "--repeat=5"));
	assert_true(has(argv, "--copy=proxy"));
	ftd_kind_argv_free(argv);
	assert_int_not_equal(build("cache-copy", "{\"copy\":\"dma\"}", 2, &argv, &gpu, &e), 0);
	assert_false(ftd_kind_find("bw")->host_exclusive == 0);
	assert_true(ftd_kind_find("load-weights")->host_exclusive);
	assert_false(ftd_kind_find("cache-copy")->host_exclusive);
	assert_false(ftd_kind_find("decode")->host_exclusive);
	assert_null(ftd_kind_find("rm"));
}

static void test_rejections(void **s)
{
	expect_err("bw", "{\"colour\":1}", 400, "unknown_field", "args.colour");
	expect_err("bw", "{\"cpu_iters\":\"3\"}", 400, "invalid_argument", "args.cpu_iters");
	expect_err("bw", "{\"cpu_iters\":0}", 400, "invalid_argument", "args.cpu_iters");
	expect_err("bw", "{\"cpu_iters\":1.5}", 400, "invalid_argument", "args.cpu_iters");
	expect_err("bw", "{\"threshold\":true}", 400, "invalid_argument", "args.threshold");
	expect_err("bw", "{\"dtype\":\"--output=/etc/passwd\"}", 400, "invalid_argument", "args.dtype");
	expect_err("bw", "{\"dtype\":[]}", 400, "invalid_argument", "args.dtype");
	expect_err("bw", "{\"dtype\":[\"a,b\"]}", 400, "invalid_argument", "args.dtype");
	expect_err("bw", "{\"gpu\":5}", 400, "unknown_gpu", "args.gpu");
	expect_err("bw", "{\"gpu\":\"GPU-\"}", 400, "unknown_gpu", "args.gpu"); /* ambiguous prefix */
	expect_err("bw", "{\"gpu\":-1}", 400, "invalid_argument", "args.gpu");
	expect_err("cache-copy", "{\"miss_rates\":[0.5,\"x\"]}", 400, "invalid_argument", "args.miss_rates");
	expect_err("cache-copy", "{\"batch_sizes\":[0]}", 400, "invalid_argument", "args.batch_sizes");
	expect_err("load-weights", "{}", 400, "missing_field", "args.model");
	expect_err("load-weights", "{\"model\":\"/etc\"}", 403, "forbidden", "args.model");
	expect_err("load-weights", "{\"model\":\"/nonexistent\"}", 403, "forbidden", "args.model");
	expect_err("load-weights", "{\"modes\":[\"fast\"],\"model\":\"/tmp\"}", 400, "invalid_argument", "args.modes");
	expect_err("decode", "{}", 400, "missing_field", "args.server");
	expect_err("decode", "{\"server\":\"rogue\"}", 403, "forbidden", "args.server");
	expect_err("decode", "{\"url\":\"http://10.0.0.1:30000\"}", 403, "forbidden", "args.url");
	expect_err("decode", "{\"url\":\"http://user@127.0.0.1:1/\"}", 400, "invalid_argument", "args.url");
	expect_err("decode", "{\"url\":\"ftp://127.0.0.1/\"}", 400, "invalid_argument", "args.url");
	expect_err("decode", "{\"url\":\"http://127.0.0.1.evil.com/\"}", 403, "forbidden", "args.url");
	/* only decode-urls, loopback is not implied; a URL is well-formed */
	expect_err("decode", "{\"url\":\"http://127.0.0.1:30000/v1\"}", 403, "forbidden", "args.url");
	expect_err("decode", "{\"url\":\"http://127.0.0.1:10/\"}", 403, "forbidden", "args.url"); /* not :1 */
	expect_err("decode", "{\"url\":\"http://LOCALHOST:30000/v1 x\"}", 400, "invalid_argument", "args.url");
	expect_err("decode", "{\"url\":\"http://LOCALHOST:30000/v1\\nHost: x\"}", 400, "invalid_argument", "args.url");
	expect_err("decode", "{\"url\":\"http://LOCALHOST:30000/\\u0001\"}", 400, "invalid_argument", "args.url");
	expect_err("decode", "{\"url\":\"http://LOCALHOST:99999/\"}", 400, "invalid_argument", "args.url");
	expect_err("decode", "{\"url\":\"http://LOCALHOST:30000/#x\"}", 400, "invalid_argument", "args.url");
	/* the server name is matched exactly and must be [A-Za-z0-9_.-]{1,64} */
	expect_err("decode", "{\"server\":\"ft=ft serve {model}\"}", 400, "invalid_argument", "args.server");
	expect_err("decode", "{\"server\":\"f\"}", 403, "forbidden", "args.server");
	expect_err("decode", "{\"server\":\"\"}", 400, "invalid_argument", "args.server");
	char longname[128];
	snprintf(longname, sizeof longname, "{\"server\":\"%065d\"}", 0);
	expect_err("decode", longname, 400, "invalid_argument", "args.server");
	snprintf(longname, sizeof longname, "{\"server\":\"%064d\"}", 0);
	expect_err("decode", longname, 403, "forbidden", "args.server");
}

static void test_paths_and_decode(void **s)
{
	char **argv, path[300], link[300], want[400];
	int gpu;
	struct ftd_err e;
	snprintf(path, sizeof path, "%s/model", root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(link, sizeof link, "%s/out", root);
	assert_int_equal(symlink("/etc", link), 0);
	char args[800];
	snprintf(args, sizeof args, "{\"model\":\"%s/./model\",\"modes\":[\"baseline\",\"ftw\"],\"keep_ftw\":true,"
				    "\"no_drop_cache\":false}", root);
	assert_int_equal(build("load-weights", args, 2, &argv, &gpu, &e), 0);
	snprintf(want, sizeof want, "--model=%s", path);
	assert_true(has(argv, want));
	assert_true(has(argv, "--modes=baseline,ftw"));
	assert_true(has(argv, "--keep-ftw"));
	assert_false(has(argv, "--no-drop-cache"));
	ftd_kind_argv_free(argv);
	snprintf(args, sizeof args, "{\"model\":\"%s/out\"}", root); /* a symlink out of the root */
	expect_err("load-weights", args, 403, "forbidden", "args.model");
	snprintf(args, sizeof args, "{\"model\":\"%s/model/../..\"}", root);
	expect_err("load-weights", args, 403, "forbidden", "args.model");
	snprintf(args, sizeof args, "{\"model\":\"%s\",\"server\":\"ft\",\"backends\":[\"cpu\",\"hybrid\"],"
				    "\"max_tokens\":64,\"memory_ratio\":0.8,\"no_graph\":true}", path);
	assert_int_equal(build("decode", args, 2, &argv, &gpu, &e), 0);
	assert_true(has(argv, "--server-cmd=ft serve {model} --port {port}"));
	assert_true(has(argv, "--backend=cpu,hybrid"));
	assert_true(has(argv, "--tokens=64"));
	assert_true(has(argv, "--mem-ratio=0.8"));
	assert_true(has(argv, "--no-graph"));
	ftd_kind_argv_free(argv);
	/* the server kind and the short-run policy reach the worker */
	assert_int_equal(build("decode", "{\"url\":\"http://127.0.0.1:8080\",\"server_kind\":\"llama.cpp\","
					 "\"allow_short\":true,\"num_token_override\":512}", 2, &argv, &gpu, &e), 0);
	assert_true(has(argv, "--server-kind=llama.cpp"));
	assert_true(has(argv, "--allow-short"));
	assert_true(has(argv, "--num-token-override=512"));
	ftd_kind_argv_free(argv);
	expect_err("decode", "{\"url\":\"http://127.0.0.1:8080\",\"server_kind\":\"tgi\"}", 400, "invalid_argument",
		   "args.server_kind");
	assert_int_equal(build("decode", "{\"url\":\"http://LOCALHOST:30000/v1\"}", 2, &argv, &gpu, &e), 0);
	ftd_kind_argv_free(argv);
	assert_int_equal(build("decode", "{\"url\":\"http://[::1]:30000\"}", 2, &argv, &gpu, &e), 0);
	ftd_kind_argv_free(argv);
	assert_int_equal(build("decode", "{\"url\":\"https://gpu-7.lab:443/\"}", 2, &argv, &gpu, &e), 0);
	ftd_kind_argv_free(argv);
	snprintf(args, sizeof args, "{\"server\":\"ft\",\"url\":\"http://127.0.0.1:1\",\"model\":\"%s\"}", path);
	expect_err("decode", args, 400, "invalid_argument", "args.server");
	/* compare: one --compare per comparison (a string is one), with cycles and min_gap */
	snprintf(args, sizeof args, "{\"server\":\"ft\",\"model\":\"%s\",\"compare\":[\"moe-backend=offload,hybrid\","
		 "\"moe-hybrid-max-fetch=,4\"],\"cycles\":5,\"min_gap\":1.5}", path);
	assert_int_equal(build("decode", args, 2, &argv, &gpu, &e), 0);
	assert_true(has(argv, "--compare=moe-backend=offload,hybrid"));
	assert_true(has(argv, "--compare=moe-hybrid-max-fetch=,4"));
	assert_true(has(argv, "--cycles=5"));
	assert_true(has(argv, "--min-gap=1.5"));
	ftd_kind_argv_free(argv);
	snprintf(args, sizeof args, "{\"server\":\"ft\",\"model\":\"%s\",\"compare\":\"override-tensor=exps=CPU\\\\,x=CPU,\"}",
		 path);
	assert_int_equal(build("decode", args, 2, &argv, &gpu, &e), 0);
	assert_true(has(argv, "--compare=override-tensor=exps=CPU\\,x=CPU,"));
	ftd_kind_argv_free(argv);
	/* never another flag or the environment through a job; values as the worker checks them */
	const char *bad[] = {"\"server-arg:--model=/etc/shadow,x\"", "\"env:LD_PRELOAD=/tmp/x.so,\"",
			     "\"override-tensor=a b,c\"", "[\"n-cpu-moe=1,2\",\"n-cpu-moe=3,4\"]", "\"moe-backend\"", "[]",
			     "[\"a=1\",\"b=2\",\"c=3\",\"d=4\",\"e=5\"]", "7", "[7]", "\"moe-cache-size=0,1\""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(args, sizeof args, "{\"server\":\"ft\",\"model\":\"%s\",\"compare\":%s}", path, bad[i]);
		expect_err("decode", args, 400, "invalid_argument", "args.compare");
	}
	/* arms are fresh servers: not with a running one */
	expect_err("decode", "{\"url\":\"http://127.0.0.1:8080\",\"compare\":\"moe-backend=a,b\"}", 400, "invalid_argument",
		   "args.compare");
	expect_err("decode", "{\"url\":\"http://127.0.0.1:8080\",\"cycles\":0}", 400, "invalid_argument", "args.cycles");
}

static const char *with_prefix(char **argv, const char *prefix)
{
	for (; *argv; argv++)
		if (!strncmp(*argv, prefix, strlen(prefix)))
			return *argv;
	return NULL;
}

/* a kept FTW conversion lives in the daemon's ftw directory, one per checkpoint (the
 * same path twice, spelt differently, gets the same place; a client's ftw_dir beside keep_ftw is
 * refused); a decode job's server logs go to the job's own directory under the state. */
static void test_job_dirs(void **s)
{
	(void)s;
	char path[300], other[300], want[400], **argv;
	int gpu;
	struct ftd_err e;
	snprintf(path, sizeof path, "%s/ckpt", root);
	snprintf(other, sizeof other, "%s/ckpt2", root);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(mkdir(other, 0700), 0);
	struct ftd_kind_ctx c = {.cfg = &cfg, .worker = "/w/ftbench", .gpus = gpus, .ngpus = 2,
				 .job_id = "0123456789abcdef", .out_dir = "/s/logs", .ftw_dir = "/s/ftw"};
	const struct ftd_kind *lw = ftd_kind_find("load-weights");
	char first[400] = "";
	const char *models[] = {path, "%s/./ckpt", other};
	for (int i = 0; i < 3; i++) {
		char m[320];
		snprintf(m, sizeof m, models[i], root);
		json_t *a = json_pack("{s:s,s:b}", "model", m, "keep_ftw", 1);
		assert_int_equal(ftd_kind_argv(lw, a, &c, &gpu, &argv, &e), 0);
		json_decref(a);
		const char *f = with_prefix(argv, "--ftw-dir=/s/ftw/");
		assert_non_null(f);
		if (i == 0)
			snprintf(first, sizeof first, "%s", f);
		else if (i == 1)
			assert_string_equal(f, first);
		else
			assert_string_not_equal(f, first);
		ftd_kind_argv_free(argv);
	}
	json_t *a = json_pack("{s:s,s:b,s:s}", "model", path, "keep_ftw", 1, "ftw_dir", root);
	assert_int_equal(ftd_kind_argv(lw, a, &c, &gpu, &argv, &e), -1);
	assert_int_equal(e.status, 400);
	assert_string_equal(e.field, "args.ftw_dir");
	json_decref(a);
	a = json_pack("{s:s}", "model", path); /* not kept: the worker's own temporary place */
	assert_int_equal(ftd_kind_argv(lw, a, &c, &gpu, &argv, &e), 0);
	assert_null(with_prefix(argv, "--ftw-dir="));
	ftd_kind_argv_free(argv);
	json_decref(a);
	a = json_pack("{s:s}", "url", "http://127.0.0.1:8080");
	assert_int_equal(ftd_kind_argv(ftd_kind_find("decode"), a, &c, &gpu, &argv, &e), 0);
	snprintf(want, sizeof want, "--log-dir=/s/logs/0123456789abcdef.decode");
	assert_true(has(argv, want));
	ftd_kind_argv_free(argv);
	json_decref(a);
}

/* bw with gpu "all": every GPU (FTD_KIND_GPU_ALL, --gpu=all, no uuid); engines and deployment; the
 * config's deployment when the job names none. */
static void test_bw_all_gpus(void **s)
{
	char **argv;
	int gpu;
	struct ftd_err e;
	assert_int_equal(build("bw", "{\"gpu\":\"all\",\"engines\":4,\"engine_threads\":8,\"deployment\":\"isolated\"}", 2,
			       &argv, &gpu, &e), 0);
	assert_int_equal(gpu, FTD_KIND_GPU_ALL);
	assert_true(has(argv, "--gpu=all"));
	assert_true(has(argv, "--engines=4"));
	assert_true(has(argv, "--engine-threads=8"));
	assert_true(has(argv, "--deployment=isolated"));
	for (char **p = argv; *p; p++)
		assert_null(strstr(*p, gpus[0].uuid));
	ftd_kind_argv_free(argv);
	/* the config's deployment when the job names none */
	char *old = cfg.deployment;
	cfg.deployment = (char *)"concurrent";
	assert_int_equal(build("bw", "{\"gpu\":\"all\"}", 2, &argv, &gpu, &e), 0);
	assert_true(has(argv, "--deployment=concurrent"));
	ftd_kind_argv_free(argv);
	assert_int_equal(build("bw", "{\"deployment\":\"isolated\"}", 2, &argv, &gpu, &e), 0);
	assert_true(has(argv, "--deployment=isolated"));
	assert_false(has(argv, "--deployment=concurrent"));
	ftd_kind_argv_free(argv);
	cfg.deployment = old;
	/* all is bw's only; no GPU, no "all"; bad values named */
	expect_err("cache-copy", "{\"gpu\":\"all\"}", 400, "unknown_gpu", "args.gpu");
	assert_int_equal(build("bw", "{\"gpu\":\"all\"}", 0, &argv, &gpu, &e), -1);
	assert_string_equal(e.code, "unknown_gpu");
	expect_err("bw", "{\"deployment\":\"both\"}", 400, "invalid_argument", "args.deployment");
	expect_err("bw", "{\"engines\":0}", 400, "invalid_argument", "args.engines");
	expect_err("bw", "{\"gather\":\"fused\"}", 400, "invalid_argument", "args.gather");
	expect_err("bw", "{\"batch_sweep\":[1,33]}", 400, "invalid_argument", "args.batch_sweep");
	expect_err("bw", "{\"batch_sweep\":[]}", 400, "invalid_argument", "args.batch_sweep");
	expect_err("bw", "{\"batch_sweep\":[1,2,3,4,5,6,7,8,9]}", 400, "invalid_argument", "args.batch_sweep");
	/* the config refuses a deployment it does not know */
	struct ftd_config bad = cfg;
	bad.deployment = (char *)"sometimes";
	bad.token_file = (char *)"";
	assert_int_equal(ftd_config_check(&bad), -EINVAL);
}

/* replay: --no-store on the worker; on success the blocks go into the GPU's stored profile, whose
 * seed-read verdict then follows the replay's default point; no stored profile, no store. */
struct rstore {
	int calls;
	json_t *got;
};

static int rstore_cb(const json_t *profile, const char *uuid, char **path_out, void *ctx)
{
	struct rstore *st = ctx;
	st->calls++;
	json_decref(st->got);
	st->got = json_deep_copy(profile);
	*path_out = strdup("/store/x.json");
	return 0;
}

static json_t *rload_cb(const char *uuid, void *ctx)
{
	(void)ctx;
	char file[400];
	snprintf(file, sizeof file, "%s/store/%s.json", root, uuid);
	return json_load_file(file, 0, NULL);
}

static void test_replay(void **st)
{
	char **argv = NULL;
	int gpu = -1;
	struct ftd_err e;
	assert_int_equal(build("replay", "{\"format\":\"bf16,nvfp4\",\"cache\":[0.4,0.7],\"workloads\":\"uniform,reuse:0.6\"}",
			       2, &argv, &gpu, &e), 0);
	assert_true(has(argv, "--no-store"));
	assert_true(has(argv, "--format=bf16,nvfp4"));
	assert_true(has(argv, "--cache=0.4,0.7"));
	assert_true(has(argv, "--workloads=uniform,reuse:0.6"));
	assert_true(ftd_kind_find("replay")->host_exclusive);
	ftd_kind_argv_free(argv);
	expect_err("replay", "{\"cache\":[2]}", 400, "invalid_argument", "args.cache");
	expect_err("replay", "{\"size\":\"huge\"}", 400, "invalid_argument", "args.size");

	char dir[300], file[400];
	snprintf(dir, sizeof dir, "%s/store", root);
	mkdir(dir, 0755);
	const char *uuid = "GPU-11111111-0000";
	json_t *full = json_load_file("tests/fixtures/profiles/full.json", 0, NULL);
	json_t *rp = json_load_file("tests/fixtures/profiles/replay.json", 0, NULL);
	assert_non_null(full);
	assert_non_null(rp);
	json_t *result = json_pack("{s:{s:O}}", "replay", "bf16", json_object_get(json_object_get(rp, "replay"), "bf16"));
	struct rstore rs = {0};
	struct ftd_kind_done d = {.job_id = "00ff00ff00ff00ff", .result = result, .gpu_uuid = uuid, .store = rstore_cb,
				  .load = rload_cb, .ctx = &rs, .store_dir = dir};
	const struct ftd_kind *k = ftd_kind_find("replay");
	assert_int_equal(k->on_success(&d), 0); /* nothing stored yet: nothing to add to */
	assert_int_equal(rs.calls, 0);
	assert_null(d.profile_path);
	/* full.json says bf16 hybrid; the fixture's replay default point (0.4, 0.6) is hybrid too; make
	 * the rule say offload so the verdict visibly follows the replay */
	json_object_set_new(json_object_get(full, "dtypes"), "bf16", json_string("offload"));
	json_object_set_new(json_object_get(json_object_get(full, "dtype_kernels"), "bf16"), "recommended", json_string("offload"));
	snprintf(file, sizeof file, "%s/%s.json", dir, uuid);
	assert_int_equal(json_dump_file(full, file, 0), 0);
	assert_int_equal(k->on_success(&d), 0);
	assert_int_equal(rs.calls, 1);
	assert_string_equal(d.profile_path, "/store/x.json");
	free(d.profile_path);
	assert_non_null(json_object_get(json_object_get(rs.got, "replay"), "bf16"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(rs.got, "dtypes"), "bf16")), "hybrid");
	json_t *ent = json_object_get(json_object_get(rs.got, "dtype_kernels"), "bf16");
	assert_string_equal(json_string_value(json_object_get(ent, "recommended_bandwidth")), "offload");
	assert_string_equal(json_string_value(json_object_get(ent, "recommended_by")), "replay");
	json_decref(rs.got);
	json_decref(result);
	json_decref(full);
	json_decref(rp);
}

int main(void)
{
	if (!mkdtemp(root))
		return 1;
	const char *argv[] = {"ftbenchd", "-c", "", "--decode-server", "ft=ft serve {model} --port {port}",
			      "--decode-urls", "http://LOCALHOST:30000,http://[::1]:30000,https://gpu-7.lab:443/,http://127.0.0.1:1,http://127.0.0.1:8080",
			      "--model-roots", root};
	if (ftd_config_load(&cfg, 9, (char **)argv) != 0 || ftd_config_check(&cfg) != 0)
		return 1;
	for (int i = 0; i < 2; i++) {
		gpus[i].index = i;
		snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "GPU-%d%d%d%d%d%d%d%d-0000", i + 1, i + 1, i + 1, i + 1,
			 i + 1, i + 1, i + 1, i + 1);
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bw_argv), cmocka_unit_test(test_bw_all_gpus),
		cmocka_unit_test(test_cache_copy_and_flags),
		cmocka_unit_test(test_rejections), cmocka_unit_test(test_paths_and_decode),
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_job_dirs),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	ftd_config_release(&cfg);
	if (tmpdir_remove(root) != 0)
		r = r ? r : 1;
	return r;
}
