/* ftbench decode: client-side decode tok/s, TTFT and event gaps per MoE backend against an
 * OpenAI-compatible server (reference §8). See src/bench/decode.h for the measurement. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "bench/decode.h"
#include "bench/decode_compare.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "decode/compare.h"
#include "cli/table.h"
#include "decode/prompts.h"
#include "util/fsutil.h"
#include "util/strutil.h"

#define MAX_BACKENDS 16

static volatile sig_atomic_t cancel_flag;

static void on_signal(int sig)
{
	cancel_flag = sig;
}

struct progress_ctx {
	int index, n;
	const char *backend;
};

static void rep_progress(void *ctx, int done, int total, const char *label)
{
	struct progress_ctx *p = ctx;
	char l[160];
	snprintf(l, sizeof l, "%s: %s", p->backend, label);
	ftcli_progress(p->index * FTDECODE_PHASES + done, p->n * FTDECODE_PHASES, l);
}

static void rep_note(void *ctx, const char *msg)
{
	struct progress_ctx *p = ctx;
	ftcli_note("%s: %s", p->backend, msg);
}

static int append_line(const char *path, json_t *row)
{
	char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s)
		return -ENOMEM;
	size_t l = strlen(s);
	s[l] = '\n';
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	int r = fd < 0 ? -errno : ftfs_write_all(fd, s, l + 1);
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	free(s);
	return r;
}

static int valid_backend(const char *b)
{
	if (!*b || strlen(b) >= 32)
		return 0;
	for (const char *p = b; *p; p++)
		if (!(*p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return 0;
	return 1;
}


/* A backend's row: the summary table, csv and md. */
static const struct ftcol row_cols[] = {
	{"backend", "backend", NULL, -10},
	{"decode_tok_s", "tok/s", "tok/s", 9, "%.2f"},
	{"ms_per_token", "ms/tok", "ms", 8, "%.2f"},
	{"event_ms_p50", "p50 ms", "ms", 8, "%.2f"},
	{"event_ms_p99", "p99 ms", "ms", 8, "%.2f"},
	{"ttft_ms", "ttft ms", "ms", 9, "%.1f", "%.2f"},
	{"ttft_cold_ms", "cold ms", "ms", 9, "%.1f", "%.2f"},
	{"prompt_tokens", "prompt", NULL, 7, "%.0f"},
	{"completion_tokens", "tokens", NULL, 7, "%.0f"},
	{"tokens_from", "from", NULL, 7},
	{"server_tok_s", "srv tok/s", "tok/s", 9, "%.2f"},
	{"vram_gib", "vram GiB", "GiB", 9, "%.2f"},
	{"output_sha1", "sha1", NULL, 0, .gap = 1},
	{"ok"},
	{"error"},
};

static void row_of(const struct fttable *t, const json_t *r)
{
	struct ftcell c[FTCOL_COUNT(row_cols)];
	for (int k = 0; k < FTCOL_COUNT(row_cols) - 2; k++)
		c[k] = ftcell_json(json_object_get(r, row_cols[k].name));
	c[FTCOL_COUNT(row_cols) - 2] = FTCELL_S(json_is_true(json_object_get(r, "ok")) ? "yes" : "no");
	c[FTCOL_COUNT(row_cols) - 1] = ftcell_json(json_object_get(r, "error"));
	fttable_row(t, c);
}

/* An error's first lines, the later ones indented under the first. */
static void print_error_lines(const char *e)
{
	int lines = 0;
	for (const char *p = e; *p && lines < 10; lines++) {
		const char *nl = strchr(p, '\n');
		int l = nl ? (int)(nl - p) : (int)strlen(p);
		printf("%s%.*s\n", lines ? "           " : "", l, p);
		p += l + (nl ? 1 : 0);
	}
}

/* The summary: the run's settings, a row per backend that measured, FAILED: and its error under a
 * backend that failed. */
static void print_summary(const struct ftdecode_cfg *c, const struct ftdecode_result *res, int n, const json_t *rows)
{
	struct fttable t = {row_cols, FTCOL_COUNT(row_cols), FTCLI_FMT_TABLE};
	printf("\ndecode: model %s, D=%ld, %s, sampling temperature %g top_p %g top_k %ld (%s)\n",
	       res[0].model_id[0] ? res[0].model_id : (c->model ? c->model : "?"), c->serve.max_tokens,
	       c->prompt_source, c->sampling.temperature, c->sampling.top_p, c->sampling.top_k, c->sampling.source);
	fttable_head(&t);
	size_t i;
	const json_t *r;
	for (int k = 0; k < n; k++) {
		/* a backend not run (cancelled) has no row */
		r = (size_t)k < json_array_size(rows) ? json_array_get(rows, (size_t)k) : NULL;
		int measured = json_is_number(json_object_get(r, "decode_tok_s"));
		if (measured)
			row_of(&t, r);
		if (!res[k].ok) {
			printf("%-10s FAILED: ", measured ? "" : res[k].backend);
			print_error_lines(res[k].error);
		}
	}
	const char *first = NULL;
	int differ = 0;
	json_array_foreach(rows, i, r)
		if (json_is_true(json_object_get(r, "ok"))) {
			const char *sha = json_string_value(json_object_get(r, "output_sha1"));
			if (first && sha && strcmp(first, sha))
				differ = 1;
			if (!first)
				first = sha;
		}
	if (differ)
		printf("note: output_sha1 differs across backends (expected equal for the same model and requests)\n");
	fflush(stdout);
}

/* --output-format csv|md: the summary's columns, one row per backend, from the JSON rows. */
static void print_rows(enum ftcli_format fmt, const json_t *rows)
{
	struct fttable t = {row_cols, FTCOL_COUNT(row_cols), fmt};
	size_t i;
	const json_t *r;
	fttable_head(&t);
	json_array_foreach(rows, i, r)
		row_of(&t, r);
}

/* ---------------------------------------------------------------- --compare */
static void fig_cell(char *buf, size_t n, const json_t *f, const char *fmt)
{
	if (!json_is_object(f)) {
		snprintf(buf, n, "-");
		return;
	}
	char a[32], b[32], c[32];
	snprintf(a, sizeof a, fmt, json_number_value(json_object_get(f, "median")));
	snprintf(b, sizeof b, fmt, json_number_value(json_object_get(f, "min")));
	snprintf(c, sizeof c, fmt, json_number_value(json_object_get(f, "max")));
	snprintf(buf, n, "%s [%s-%s]", a, b, c);
}

static void print_compare(const struct ftdecode_cfg *c, const json_t *sum)
{
	const json_t *arms = json_object_get(sum, "arms");
	printf("\ndecode --compare: model %s, server %s, D=%ld, %s, %lld cycle(s), arms in rotated order, warm-up %d\n",
	       c->model ? c->model : "?", json_string_value(json_object_get(sum, "server_kind")) ?
	       json_string_value(json_object_get(sum, "server_kind")) : "?", c->serve.max_tokens, c->prompt_source,
	       (long long)json_integer_value(json_object_get(sum, "cycles")), c->warmup);
	int w = 24;
	size_t i;
	const json_t *a;
	json_array_foreach(arms, i, a) {
		int l = (int)strlen(json_string_value(json_object_get(a, "arm")));
		if (l > w)
			w = l < 60 ? l : 60;
	}
	printf("%-*s %6s  %-26s %-26s %-26s\n", w, "arm", "cycles", "tok/s median [min-max]", "ttft ms median [min-max]",
	       "cold ttft ms");
	json_array_foreach(arms, i, a) {
		char tok[128], ttft[128], cold[128], cyc[32];
		fig_cell(tok, sizeof tok, json_object_get(a, "decode_tok_s"), "%.2f");
		fig_cell(ttft, sizeof ttft, json_object_get(a, "ttft_ms"), "%.1f");
		fig_cell(cold, sizeof cold, json_object_get(a, "ttft_cold_ms"), "%.1f");
		snprintf(cyc, sizeof cyc, "%lld/%lld", (long long)json_integer_value(json_object_get(a, "cycles_ok")),
			 (long long)json_integer_value(json_object_get(sum, "cycles")));
		printf("%-*s %6s  %-26s %-26s %-26s\n", w, json_string_value(json_object_get(a, "arm")), cyc, tok, ttft, cold);
		if (json_is_string(json_object_get(a, "error"))) {
			printf("%-*s FAILED in cycle %lld: ", w, "",
			       (long long)json_integer_value(json_object_get(a, "failed_cycle")));
			print_error_lines(json_string_value(json_object_get(a, "error")));
		}
	}
	const char *d = json_string_value(json_object_get(sum, "decision"));
	const char *td = json_string_value(json_object_get(sum, "ttft_decision"));
	if (!strcmp(d, "winner"))
		printf("winner (tok/s): %s: %s\n", json_string_value(json_object_get(sum, "winner")),
		       json_string_value(json_object_get(sum, "reason")));
	else
		printf("tok/s: %s: %s\n", !strcmp(d, "tie") ? "tie" : "no decision",
		       json_string_value(json_object_get(sum, "reason")));
	if (!strcmp(td, "winner"))
		printf("winner (ttft): %s: %s\n", json_string_value(json_object_get(sum, "ttft_winner")),
		       json_string_value(json_object_get(sum, "ttft_reason")));
	else
		printf("ttft: %s: %s\n", !strcmp(td, "tie") ? "tie" : "no decision",
		       json_string_value(json_object_get(sum, "ttft_reason")));
	fflush(stdout);
}

/* --output-format csv|md with --compare: one row per arm (the human table is print_compare's). */
static const struct ftcol compare_cols[] = {
	{"arm", NULL},
	{"cycles_ok", NULL, NULL, 0, "%.0f"},
	{"cycles", NULL, NULL, 0, "%.0f"},
	{"decode_tok_s", NULL, "tok/s", 0, "%.2f"},
	{"decode_tok_s_min", NULL, "tok/s", 0, "%.2f"},
	{"decode_tok_s_max", NULL, "tok/s", 0, "%.2f"},
	{"ttft_ms", NULL, "ms", 0, "%.2f"},
	{"ttft_ms_min", NULL, "ms", 0, "%.2f"},
	{"ttft_ms_max", NULL, "ms", 0, "%.2f"},
	{"ttft_cold_ms", NULL, "ms", 0, "%.2f"},
	{"rank", NULL, NULL, 0, "%.0f"},
	{"result", NULL},
	{"error", NULL},
};

static void print_compare_rows(enum ftcli_format fmt, const json_t *sum)
{
	struct fttable t = {compare_cols, FTCOL_COUNT(compare_cols), fmt};
	size_t i;
	const json_t *a;
	const char *winner = json_string_value(json_object_get(sum, "winner"));
	fttable_head(&t);
	json_array_foreach(json_object_get(sum, "arms"), i, a) {
		const json_t *tok = json_object_get(a, "decode_tok_s"), *ttft = json_object_get(a, "ttft_ms");
		const char *label = json_string_value(json_object_get(a, "arm"));
		const char *result = json_is_string(json_object_get(a, "error")) ? "failed" :
				     winner && label && !strcmp(winner, label) ? "winner" :
				     !strcmp(json_string_value(json_object_get(sum, "decision")), "tie") ? "tie" : "-";
		struct ftcell c[] = {
			FTCELL_S(label),
			ftcell_json(json_object_get(a, "cycles_ok")),
			ftcell_json(json_object_get(sum, "cycles")),
			ftcell_json(json_object_get(tok, "median")),
			ftcell_json(json_object_get(tok, "min")),
			ftcell_json(json_object_get(tok, "max")),
			ftcell_json(json_object_get(ttft, "median")),
			ftcell_json(json_object_get(ttft, "min")),
			ftcell_json(json_object_get(ttft, "max")),
			ftcell_json(json_object_get(json_object_get(a, "ttft_cold_ms"), "median")),
			ftcell_json(json_object_get(a, "rank")),
			FTCELL_S(result),
			FTCELL_S(json_string_value(json_object_get(a, "error"))),
		};
		_Static_assert(FTCOL_COUNT(c) == FTCOL_COUNT(compare_cols), "a cell per column");
		fttable_row(&t, c);
	}
}

/* The arms of plan, interleaved over cycles (cycle k starts at arm k mod n), each a fresh server
 * through ftdecode_run; a failing arm is not run again. */
static int run_compare(const struct ftdecode_cfg *base, const struct ftcmp_plan *plan, const char *backend, int cycles,
		       double min_gap, enum ftcli_format fmt, const char *json_path)
{
	int narms = ftcmp_arms(plan), r, rc = FTCLI_EXIT_OK;
	struct ftdcmp_arm *arms = calloc((size_t)narms, sizeof *arms);
	struct ftdecode_result *res = malloc(sizeof *res);
	json_t *rows = json_array();
	char server_kind[16] = "";
	if (!arms || !res || !rows) {
		ftcli_error("out of memory");
		free(arms);
		free(res);
		json_decref(rows);
		return FTCLI_EXIT_FAIL;
	}
	for (int a = 0; a < narms; a++)
		ftcmp_arm(plan, a, &arms[a].arm);
	for (int cy = 0; cy < cycles; cy++) {
		for (int k = 0; k < narms; k++) {
			int a = (cy + k) % narms;
			struct ftdcmp_arm *arm = &arms[a];
			if (arm->failed_cycle)
				continue;
			if (cancel_flag) {
				arm->failed_cycle = cy + 1;
				arm->stopped = 1;
				snprintf(arm->error, sizeof arm->error, "not run: cancelled by signal %d", (int)cancel_flag);
				continue;
			}
			struct ftdecode_cfg c = *base;
			const char *be = backend;
			char **args = NULL, **set = NULL, **unset = NULL;
			if (ftcmp_apply(plan, &arm->arm, &c.serve, &be, &args, &set, &unset) < 0) {
				ftcli_error("out of memory");
				rc = FTCLI_EXIT_FAIL;
				goto out;
			}
			c.extra_args = args;
			c.env_set = set;
			c.env_unset = unset;
			char label[600];
			snprintf(label, sizeof label, "cycle %d/%d, %s", cy + 1, cycles, arm->arm.label);
			struct progress_ctx pc = {cy * narms + k, cycles * narms, label};
			struct ftreport rep = {rep_progress, rep_note, &pc};
			c.rep = &rep;
			ftdecode_run(&c, be, res);
			ftsrv_free_argv(args);
			ftsrv_free_argv(set);
			ftsrv_free_argv(unset);
			ftdcmp_record(arm, cy, res);
			if (!res->ok && cancel_flag) /* its failure is the stop's */
				arm->stopped = 1;
			if (res->server_kind[0] && !server_kind[0])
				snprintf(server_kind, sizeof server_kind, "%s", res->server_kind);
			if (!res->ok)
				ftcli_error("%s: arm %s failed: %s", label, arm->arm.label, res->error);
			for (int w = 0; w < res->nwarnings; w++)
				ftcli_note("%s: %s", label, res->warnings[w]);
			json_t *row = ftdecode_row(&c, res);
			json_object_set_new(row, "compare", json_pack("{s:s,s:o,s:i,s:i,s:i}", "arm", arm->arm.label,
								      "settings", ftcmp_arm_settings(plan, &arm->arm),
								      "cycle", cy + 1, "cycles", cycles, "position", k + 1));
			json_array_append(rows, row);
			if (json_path && (r = append_line(json_path, row)) < 0)
				ftcli_error("--json %s: %s", json_path, strerror(-r));
			json_decref(row);
		}
	}
	json_t *sum = ftdcmp_summary(base, plan, arms, narms, cycles, min_gap,
				     server_kind[0] ? server_kind : ftsrv_kind_name((enum ftsrv_kind)(base->kind < 0 ?
												 FTSRV_FREETOKEN : base->kind)));
	if (!sum) {
		ftcli_error("out of memory");
		rc = FTCLI_EXIT_FAIL;
		goto out;
	}
	if (json_path && (r = append_line(json_path, sum)) < 0)
		ftcli_error("--json %s: %s", json_path, strerror(-r));
	if (fmt == FTCLI_FMT_TABLE)
		print_compare(base, sum);
	else if (fmt != FTCLI_FMT_JSON)
		print_compare_rows(fmt, sum);
	json_t *failed = json_object_get(sum, "failed");
	if (cancel_flag) {
		ftcli_error("stopped by signal %d before the last cycle: the decision is over the cycles measured",
			    (int)cancel_flag);
		rc = FTCLI_EXIT_FAIL;
	}
	if (json_array_size(failed)) {
		char names[1024] = "";
		size_t l = 0, i;
		json_t *f;
		json_array_foreach(failed, i, f)
			if (l < sizeof names)
				l += (size_t)snprintf(names + l, sizeof names - l, "%s%s", l ? "; " : "", json_string_value(f));
		if (fmt == FTCLI_FMT_TABLE) {
			printf("failed: %s\n", names);
			fflush(stdout);
		}
		ftcli_error("%zu of %d arm(s) failed: %s", json_array_size(failed), narms, names);
		rc = FTCLI_EXIT_FAIL;
	}
	json_t *result = json_pack("{s:s,s:O,s:O,s:O}", "kind", "decode", "rows", rows, "failed", failed, "compare", sum);
	ftcli_result(result);
	if (fmt == FTCLI_FMT_JSON)
		ftcli_print_json(result);
	json_decref(result);
	json_decref(sum);
out:
	json_decref(rows);
	free(arms);
	free(res);
	return rc;
}

struct decode_cli {
	struct ftdecode_cfg c;
	const char *backends, *aime, *json_path;
	int greedy, no_thinking;
	enum ftcli_format fmt;
	struct ftcmp_plan plan; /* --compare, owned: ftcmp_release */
	int cycles;
	double min_gap_pct;
};
#define O(m) FTF_FIELD(struct decode_cli, m)

static int set_kind(const struct ftflag *f, const char *arg, void *opts)
{
	int *kind = (int *)((char *)opts + f->off);
	if ((*kind = ftsrv_kind_parse(arg)) < 0) {
		ftcli_error("--server-kind: '%s' is not one of " FTSRV_KIND_NAMES, arg);
		return -1;
	}
	return 0;
}

static int set_gpu(const struct ftflag *f, const char *arg, void *opts)
{
	if (!*arg || strlen(arg) > 80 || strpbrk(arg, " \t\n'\"\\")) {
		ftcli_error("--gpu: '%s' is not a GPU index or UUID", arg);
		return -1;
	}
	*(const char **)((char *)opts + f->off) = arg;
	return 0;
}

_Static_assert((int)(FTCMP_DEFAULT_MIN_GAP * 100 + 0.5) == 2, "--min-gap's row default is FTCMP_DEFAULT_MIN_GAP in %");

/* --compare KEY=V1,V2, repeatable: each one a key of the plan (all of them: the cross product). */
static int set_compare(const struct ftflag *f, const char *arg, void *opts)
{
	char why[512];
	if (ftcmp_add((struct ftcmp_plan *)((char *)opts + f->off), arg, 0, why, sizeof why) < 0) {
		ftcli_error("%s", why);
		return -1;
	}
	return 0;
}

static const struct ftflag decode_rows[] = {
	{"model", FTF_STR, O(c.model), .meta = "PATH",
	 .help = "checkpoint ({model} in the server command; its generation_config.json)"},
	{"backend", FTF_STR, O(backends), .meta = "LIST", .alias = "backends", .def_help = "offload",
	 .help = "MoE backends, e.g. offload,cpu,hybrid; a failing one does not stop the others; the exit "
		 "status is 1 when any failed. With --url: the row's label (default: the server kind)"},
	{"decode", FTF_INT, O(c.serve.max_tokens), .meta = "D", .lo = 2, .hi = 1 << 20,
	 .def = FTF_XSTR(FTDECODE_DEFAULT_TOKENS), .alias = "tokens|max-tokens",
	 .help = "decode tokens per request, ignore_eos"},
	{"allow-short", FTF_BOOL, O(c.allow_short),
	 .help = "a run that ends before D tokens is recorded as ok (default: it fails; finish_reason \"length\" "
		 "= full context, other = ignore_eos ignored)"},
	{"url", FTF_STR, O(c.url), .meta = "URL",
	 .help = "use a server that is already running (one backend; nothing is started)"},
	{"server-kind", FTF_CALL, O(c.kind), .meta = "K", .choices = FTSRV_KIND_NAMES, .set = set_kind,
	 .def_help = "freetoken when ftbench starts the server, detected from what the server answers with --url",
	 .help = "readiness (/health with maintenance, /health, /v1/models), the flags {flags} stands for, how "
		 "top_k \"off\" is sent"},
	{"server-cmd", FTF_STR, O(c.server_cmd), .meta = "TMPL",
	 .def_help = "the kind's launcher; freetoken: \"" FTSRV_DEFAULT_TEMPLATE "\" (python3 where there is no python)",
	 .help = "server command template, split into argv without a shell; placeholders {model} {port} "
		 "{backend} {host} and {flags} (the kind's mapped flags)"},
	{"append-flags", FTF_BOOL, O(c.append_flags),
	 .help = "append the mapped flags to a --server-cmd without {flags} (default: none)"},
	{"port", FTF_INT, O(c.port), .meta = "N", .lo = 1, .hi = 65535, .def_help = "a free loopback port per backend",
	 .help = "server port"},
	{"gpu", FTF_CALL, O(c.serve.gpu), .meta = "UUID|INDEX", .set = set_gpu,
	 .help = "--gpu for the FreeToken server (recorded in the row)"},
	{"num-token-override", FTF_INT, O(c.serve.num_token_override), .meta = "N", .lo = 1, .hi = 1L << 30,
	 .help = "--num-token-override for the FreeToken server"},
	{"mem-ratio", FTF_DOUBLE, O(c.serve.mem_ratio), .meta = "R", .lo = 0.01, .hi = 1, .def = "0.9",
	 .help = "--memory-ratio"},
	{"cache", FTF_INT, O(c.serve.cache_size), .meta = "N", .lo = 0, .hi = 1000000, .def = "0",
	 .help = "--moe-cache-size N (0, and no --cache-rate: --moe-cache-auto); not with --cache-rate"},
	{"cache-rate", FTF_DOUBLE, O(c.serve.cache_rate), .meta = "X", .lo = 0, .hi = 1,
	 .help = "--moe-cache-rate X; not with --cache"},
	{"hybrid-fetch", FTF_INT, O(c.serve.hybrid_fetch), .meta = "N", .lo = -1, .hi = 1 << 20, .def = "-1",
	 .help = "--moe-hybrid-max-fetch (-1: from the bw profile)"},
	{"no-graph", FTF_BOOL, O(c.serve.no_graph), .help = "--cuda-graph-max-bs 0 (default 1)"},
	{"aime", FTF_STR, O(aime), .meta = "FILE",
	 .def_help = "$FREETOKEN_AIME25_JSONL, else the embedded problems",
	 .help = "jsonl with \"problem\" or \"prompt\""},
	{"problem", FTF_INT, O(c.problem), .meta = "N", .lo = 0, .hi = 100000, .def = "0",
	 .help = "problem index, 0-based"},
	{"greedy", FTF_BOOL, O(greedy),
	 .help = "temperature 0, top_p 1, top_k -1 (default: generation_config.json, fallbacks temperature "
		 "1.0, top_p 0.95, top_k 64)"},
	{"no-thinking", FTF_BOOL, O(no_thinking), .help = "do not ask for thinking (default on)"},
	{"warmup", FTF_INT, O(c.warmup), .meta = "N", .lo = 0, .hi = 100, .def = "1",
	 .help = "warm-up requests before the measured one"},
	{"compare", FTF_CALL, O(plan), .meta = "KEY=V1,V2", .set = set_compare,
	 .help = "compare arms: one fresh server per arm and cycle, the same prompt, warm-up per server; per "
		 "arm tok/s, TTFT and cold TTFT as median [min-max] over the cycles; the winner named only "
		 "where the gap exceeds the spread (the ranges do not overlap and the medians differ by "
		 "--min-gap), else \"tie\". Repeatable: several keys give the cross product of their values (at "
		 "most " FTF_XSTR(FTCMP_MAX_ARMS) " arms, " FTF_XSTR(FTCMP_MAX_KEYS) " keys). Keys: moe-backend, "
		 "moe-hybrid-max-fetch, moe-cache-size (N or auto) for freetoken; n-cpu-moe, override-tensor, "
		 "GGML_OP_OFFLOAD_MIN_BATCH (environment) for llama.cpp; server-arg:--FLAG (passes --FLAG V) "
		 "and env:NAME (sets NAME=V) for any server. \"\\,\" is a comma inside a value; an empty value "
		 "is the arm without the key (flag not passed, variable unset). A failing arm is reported and "
		 "not run again; the others go on; exit 1"},
	{"cycles", FTF_INT, O(cycles), .meta = "N", .lo = 1, .hi = FTDCMP_MAX_CYCLES, .def = "3",
	 .help = "--compare: rounds over the arms, each starting at the next arm"},
	{"min-gap", FTF_DOUBLE, O(min_gap_pct), .meta = "PCT", .lo = 0, .hi = 1000, .unit = "%", .def = "2",
	 .help = "--compare: the least difference of medians a winner needs"},
	FTF_FORMAT_ROW(struct decode_cli, fmt,
		       "table (the summary), json (on stdout: {kind, rows, failed}, rows as --json FILE writes "
		       "them), csv or md: one row per backend (tok/s, ms, GiB); with --compare json adds "
		       "\"compare\" (the summary) and csv/md give one row per arm (median, min, max per figure)"),
	{"json", FTF_STR, O(json_path), .meta = "FILE",
	 .help = "append one JSON line per backend (failed ones too): the seed's row (decode_steps, "
		 "decode_tok_s, event_ms_p50/p99 by rank, ttft_ms, ...) and ours (ttft_cold_ms, tokens_from "
		 "usage|chunks, finish_reason, short, server_kind, server_tok_s and server_timings from "
		 "llama.cpp, ...); with --compare each row has \"compare\" {arm, settings, cycle, cycles} and one "
		 "\"decode_compare\" row (the summary) follows them"},
	{"server-timeout", FTF_DOUBLE, O(c.health_timeout_s), .meta = "S", .lo = 0, .hi = 864000, .unit = "s",
	 .def = "1800", .alias = "health-timeout", .help = "deadline for the server to be ready"},
	{"request-timeout", FTF_DOUBLE, O(c.request_timeout_s), .meta = "S", .lo = 0, .hi = 864000, .unit = "s",
	 .def = "1800", .help = "per request"},
	{"term-grace", FTF_DOUBLE, O(c.grace.term_s), .meta = "S", .lo = 0, .hi = 864000, .unit = "s",
	 .def = FTF_XSTR(FTSRV_DEF_TERM_S), .help = "after SIGTERM"},
	{"kill-grace", FTF_DOUBLE, O(c.grace.kill_s), .meta = "S", .lo = 0, .hi = 864000, .unit = "s",
	 .def = FTF_XSTR(FTSRV_DEF_KILL_S), .help = "after SIGKILL"},
	{"driver-wait", FTF_DOUBLE, O(c.grace.driver_s), .meta = "S", .lo = 0, .hi = 864000, .unit = "s",
	 .def = FTF_XSTR(FTSRV_DEF_DRIVER_S), .help = "then, for the driver to release VRAM"},
	{"log-dir", FTF_STR, O(c.log_dir), .meta = "DIR", .def_help = "$TMPDIR or /tmp", .help = "server logs"},
	FTF_RESULT_FD_ROW,
};

const struct ftflag_cmd ftcli_flags_decode = {
	"decode", decode_rows, FTF_COUNT(decode_rows),
	.about = "       ftbench decode --url http://127.0.0.1:30000 [--server-kind K] [--backend LABEL] [options]\n"
		 "       ftbench decode --model PATH --compare KEY=V1,V2 [--compare ...] [--cycles N] [options]\n"
		 "\n"
		 "Per backend: start the server (own process group), wait until it is ready, read the model id\n"
		 "from /v1/models, stream warm-up request(s), then the measured one; VRAM from /v1/stats; stop\n"
		 "the server (SIGTERM to the group, grace, SIGKILL, grace, driver wait). The seed's flags\n"
		 "(bench_decode_moe.py) are taken as they are: --decode, --server-timeout, --num-token-override,\n"
		 "--gpu, --aime (default $FREETOKEN_AIME25_JSONL).\n",
};

int ftcli_cmd_decode(int argc, char **argv)
{
	struct decode_cli dc = {
		.c = {.serve = {.cache_rate = -1}, .health_interval_s = 0.5, .kind = -1},
	};
	struct ftflag_state fs;
	int pr = ftflags_parse(&ftcli_flags_decode, argc, argv, &dc, &fs);
	if (pr) {
		ftcmp_release(&dc.plan);
		return pr > 0 ? 0 : FTCLI_EXIT_USAGE;
	}
	int cmp_opt = ftflags_given(&ftcli_flags_decode, &fs, "cycles") ||
		      ftflags_given(&ftcli_flags_decode, &fs, "min-gap");
	ftflags_release(&fs);
	struct ftcmp_plan plan = dc.plan; /* released at out: */
	int cycles = dc.cycles;
	double min_gap = dc.min_gap_pct / 100;
	char cerr[512];
	struct ftdecode_cfg c = dc.c;
	const char *backends = dc.backends, *aime = dc.aime, *json_path = dc.json_path;
	enum ftcli_format fmt = dc.fmt;
	int greedy = dc.greedy;
	c.thinking = !dc.no_thinking;
	if (c.request_timeout_s < 0.001)
		c.request_timeout_s = 0.001;
#define BAD(...) do { ftcli_error(__VA_ARGS__); ftcmp_release(&plan); return FTCLI_EXIT_USAGE; } while (0)
	if (!c.url && !c.model)
		BAD("--model PATH is required (or --url for a server that is already running)");
	if (c.url && c.server_cmd)
		BAD("--url and --server-cmd exclude each other");
	if (c.url && strncmp(c.url, "http://", 7) && strncmp(c.url, "https://", 8))
		BAD("--url: '%s' is not an http(s) URL", c.url);
	if (c.serve.cache_size > 0 && c.serve.cache_rate >= 0)
		BAD("--cache and --cache-rate exclude each other");
	if (!c.url && c.kind == FTSRV_OPENAI && !c.server_cmd)
		BAD("--server-kind openai has no standard launcher: give --server-cmd TEMPLATE or --url");
	c.label = backends; /* NULL: rows of a --url or non-FreeToken server are labelled by its kind */
	if (!backends)
		backends = "offload";
	if (!aime && getenv("FREETOKEN_AIME25_JSONL") && *getenv("FREETOKEN_AIME25_JSONL"))
		aime = getenv("FREETOKEN_AIME25_JSONL");
	char **bl = NULL;
	int nb = ftstr_split(backends, &bl, MAX_BACKENDS);
	if (nb <= 0)
		BAD("--backend: '%s' is not a list of backends (at most %d)", backends, MAX_BACKENDS);
	for (int i = 0; i < nb; i++)
		if (!valid_backend(bl[i])) {
			ftstr_free_list(bl, nb);
			BAD("--backend: '%s' is not a backend name", bl[i]);
		}
	if (c.url && nb > 1) {
		ftstr_free_list(bl, nb);
		BAD("--url names one running server: give at most one --backend (its label)");
	}
	if (plan.nkeys) {
		int kind = c.kind < 0 ? FTSRV_FREETOKEN : c.kind;
		if (c.url) {
			ftstr_free_list(bl, nb);
			BAD("--compare starts a fresh server per arm: give --model (and --server-cmd), not --url");
		}
		if (nb > 1) {
			ftstr_free_list(bl, nb);
			BAD("--compare and a --backend list exclude each other: compare backends with --compare "
			    "moe-backend=%s", backends);
		}
		for (int k = 0; k < plan.nkeys; k++)
			if (plan.keys[k].type == FTCMP_MOE_BACKEND && c.label) {
				ftstr_free_list(bl, nb);
				BAD("--backend %s and --compare moe-backend=... exclude each other: the arms name the "
				    "backends", c.label);
			}
		if (ftcmp_check(&plan, (enum ftsrv_kind)kind, cerr, sizeof cerr) < 0) {
			ftstr_free_list(bl, nb);
			BAD("%s", cerr);
		}
	} else if (cmp_opt) {
		ftstr_free_list(bl, nb);
		BAD("--cycles and --min-gap go with --compare");
	}
	if (!c.log_dir)
		c.log_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
#undef BAD

	int rc = FTCLI_EXIT_OK;
	char err[1024], source[256];
	char *prompt = NULL;
	struct ftdecode_result *res = NULL;
	json_t *rows = json_array(), *failed = json_array();
	int r = ftprompt_load(aime, c.problem, &prompt, source, sizeof source, err, sizeof err);
	if (r < 0) {
		ftcli_error("prompt: %s", err);
		rc = r == -ENOMEM ? FTCLI_EXIT_FAIL : FTCLI_EXIT_USAGE;
		goto out;
	}
	c.prompt = prompt;
	c.prompt_source = source;
	if ((r = ftsampling_resolve(c.model, greedy, &c.sampling, err, sizeof err)) < 0) {
		ftcli_error("sampling: %s", err);
		rc = FTCLI_EXIT_USAGE;
		goto out;
	}
	res = calloc((size_t)nb, sizeof *res);
	if (!res || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		ftcli_error("out of memory");
		rc = FTCLI_EXIT_FAIL;
		goto out;
	}
	struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	c.cancel = &cancel_flag;
	if (plan.nkeys) {
		rc = run_compare(&c, &plan, bl[0], cycles, min_gap, fmt, json_path);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		curl_global_cleanup();
		goto out;
	}
	int ran = 0;
	for (int i = 0; i < nb; i++) {
		if (cancel_flag) {
			snprintf(res[i].backend, sizeof res[i].backend, "%s", bl[i]);
			snprintf(res[i].error, sizeof res[i].error, "not run: cancelled by signal %d", (int)cancel_flag);
			ran++;
			continue;
		}
		struct progress_ctx pc = {i, nb, bl[i]};
		struct ftreport rep = {rep_progress, rep_note, &pc};
		c.rep = &rep;
		ftdecode_run(&c, bl[i], &res[i]);
		ran++;
		if (!res[i].ok)
			ftcli_error("backend %s failed: %s", bl[i], res[i].error);
		for (int w = 0; w < res[i].nwarnings; w++)
			ftcli_note("%s: %s", bl[i], res[i].warnings[w]);
		json_t *row = ftdecode_row(&c, &res[i]);
		json_array_append(rows, row);
		if (json_path && (r = append_line(json_path, row)) < 0)
			ftcli_error("--json %s: %s", json_path, strerror(-r));
		json_decref(row);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	int nfail = 0;
	for (int i = 0; i < ran; i++)
		if (!res[i].ok) {
			json_array_append_new(failed, json_string(res[i].backend));
			nfail++;
		}
	if (fmt == FTCLI_FMT_TABLE)
		print_summary(&c, res, ran, rows);
	else if (fmt != FTCLI_FMT_JSON)
		print_rows(fmt, rows);
	if (nfail && fmt != FTCLI_FMT_TABLE) {
		ftcli_error("%d of %d backend(s) failed", nfail, nb);
		rc = FTCLI_EXIT_FAIL;
	} else if (nfail) {
		char names[512] = "";
		size_t l = 0;
		for (int i = 0; i < ran; i++)
			if (!res[i].ok && l < sizeof names)
				l += (size_t)snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", res[i].backend);
		printf("failed: %s\n", names);
		fflush(stdout);
		ftcli_error("%d of %d backend(s) failed: %s", nfail, nb, names);
		rc = FTCLI_EXIT_FAIL;
	}
	json_t *result = json_pack("{s:s,s:O,s:O}", "kind", "decode", "rows", rows, "failed", failed);
	ftcli_result(result);
	if (fmt == FTCLI_FMT_JSON)
		ftcli_print_json(result);
	json_decref(result);
	curl_global_cleanup();
out:
	json_decref(rows);
	json_decref(failed);
	free(res);
	free(prompt);
	ftstr_free_list(bl, nb);
	ftcmp_release(&plan);
	return rc;
}
