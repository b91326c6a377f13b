/* libFuzzer target for what ftbenchd makes of a POST /benchmark/start body: the request JSON
 * (ftd_request_start_parse), the kind's argument table (ftd_kind_build: types, bounds, names, lists,
 * paths, GPUs, decode servers and URLs, decode comparisons) and the bodies sent back. Every body produced, an error
 * (ftd_request_error_json) or the accepted argv and args, must be built (no NULL from jansson) and be
 * well-formed UTF-8 that parses back. Input: the body bytes. Build and run: `make fuzz-request`
 * (clang over the sources below, the Makefile's FUZZ_REQUEST; FT_FUZZ_SECONDS=60).
 * tests/integration/fuzz.sh runs it in `make test` (seeds tests/fuzz/request/, the same dict):
 * fuzz-srcs: daemon/request.c daemon/kinds.c daemon/config.c src/hw/gpu.c src/util/strutil.c src/util/fsutil.c src/util/jobargs.c src/hw/pci.c
 * fuzz-srcs: src/decode/compare.c src/decode/server.c src/util/proc.c src/util/timeutil.c
 * fuzz-srcs: src/moe/formats.c src/moe/models.c src/replay/verdict.c
 * fuzz-srcs: daemon/kindarg.c daemon/jobflags.c @BUILD@/gen/job_flags.c
 * fuzz-libs: -ljansson -lm
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"
#include "util/strutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A body as the daemon would send it: built, dumped, well-formed UTF-8, parses back. */
static void check_body(json_t *o)
{
	if (!o)
		__builtin_trap();
	char *s = json_dumps(o, JSON_COMPACT);
	if (!s || !ftstr_utf8_valid(s, strlen(s)))
		__builtin_trap();
	json_t *back = json_loads(s, 0, NULL);
	if (!back)
		__builtin_trap();
	json_decref(back);
	free(s);
	json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ftd_config cfg;
	static struct ftgpu_info gpus[2];
	static char *roots[] = {"/tmp"};
	static char *servers[] = {"ft=ft serve {model} --port {port}", "sg=python3 -m sglang --model-path={model}"};
	static char *urls[] = {"http://gpu-box.example:30000/", "http://127.0.0.1:9/"}; /* decode-urls */
	if (!cfg.n_model_roots) {
		cfg.model_roots = roots;
		cfg.n_model_roots = 1;
		cfg.decode_servers = servers;
		cfg.n_decode_servers = 2;
		cfg.decode_urls = urls;
		cfg.n_decode_urls = 2;
		for (int i = 0; i < 2; i++) {
			gpus[i].index = i;
			snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "GPU-%d1111111-aaaa-bbbb-cccc-000000000000", i + 1);
			snprintf(gpus[i].name, sizeof gpus[i].name, "Fake H200");
		}
	}
	struct ftd_err err;
	const char *kind;
	json_t *args;
	long timeout;
	json_t *req = ftd_request_start_parse((const char *)data, size, 86400, &kind, &args, &timeout, &err);
	if (!req) {
		check_body(ftd_request_error_json(err.code, err.field, "%s", err.message));
		return 0;
	}
	const struct ftd_kind *k = ftd_kind_find(kind);
	if (!k) {
		ftd_kind_err_set(&err, 400, "unknown_kind", "kind", "unknown kind '%.*s'", ftstr_utf8_cut(kind, 64), kind);
		check_body(ftd_request_error_json(err.code, err.field, "%s", err.message));
		json_decref(req);
		return 0;
	}
	char **argv;
	int gpu;
	if (ftd_kind_build(k, args, &cfg, "/usr/bin/ftbench", gpus, 2, &gpu, &argv, &err) < 0) {
		if (err.status < 400 || err.status > 503 || !*err.code)
			__builtin_trap();
		check_body(ftd_request_error_json(err.code, err.field, "%s", err.message));
	} else {
		json_t *a = json_array();
		for (char **p = argv; *p; p++)
			if (json_array_append_new(a, json_string(*p)) < 0)
				__builtin_trap(); /* an argv string jansson would not take */
		/* "o" steals: a reference of args (owned by req) or the new empty object */
		check_body(json_pack("{s:o,s:o,s:I}", "argv", a, "args", args ? json_incref(args) : json_object(),
				     "timeout_s", (json_int_t)timeout));
		ftd_kind_argv_free(argv);
	}
	json_decref(req);
	return 0;
}
