/* ftbench decode: client-side decode tok/s, TTFT and event gaps per MoE backend against an
 * OpenAI-compatible server (reference §8). See src/bench/decode.h for the measurement. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "bench/decode.h"
#include "bench/decode_compare.h"
#include "cli/cli.h"
#include "decode/compare.h"
#include "decode/prompts.h"
#include "util/fsutil.h"
#include "util/strutil.h"

#define MAX_BACKENDS 16

static volatile sig_atomic_t cancel_flag;

static void on_signal(int sig)
{
	cancel_flag = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ftbench decode --model PATH [options]\n"
		"       ftbench decode --url http://127.0.0.1:30000 [--server-kind K] [--backend LABEL] [options]\n"
		"       ftbench decode --model PATH --compare KEY=V1,V2 [--compare ...] [--cycles N] [options]\n"
		"\n"
		"Per backend: start the server (own process group), wait until it is ready, read the model id\n"
		"from /v1/models, stream warm-up request(s), then the measured one; VRAM from /v1/stats; stop\n"
		"the server (SIGTERM to the group, grace, SIGKILL, grace, driver wait). The seed's flags\n"
		"(bench_decode_moe.py) are taken as they are: --decode, --server-timeout, --num-token-override,\n"
		"--gpu, --aime (default $FREETOKEN_AIME25_JSONL).\n"
		"\n"
		"  --model PATH          checkpoint ({model} in the server command; its generation_config.json)\n"
		"  --backend LIST        MoE backends, e.g. offload,cpu,hybrid (default offload); a failing one\n"
		"                        does not stop the others; the exit status is 1 when any failed. With\n"
		"                        --url: the row's label (default: the server kind)\n"
		"  --decode D            decode tokens per request, ignore_eos (default %d; aliases --tokens,\n"
		"                        --max-tokens)\n"
		"  --allow-short         a run that ends before D tokens is recorded as ok (default: it fails;\n"
		"                        finish_reason \"length\" = full context, other = ignore_eos ignored)\n"
		"  --url URL             use a server that is already running (one backend; nothing is started)\n"
		"  --server-kind K       " FTSRV_KIND_NAMES ": readiness (/health with\n"
		"                        maintenance, /health, /v1/models), the flags {flags} stands for, how\n"
		"                        top_k \"off\" is sent. Default: freetoken when ftbench starts the\n"
		"                        server, detected from what the server answers with --url\n"
		"  --server-cmd TMPL     server command template, split into argv without a shell; placeholders\n"
		"                        {model} {port} {backend} {host} and {flags} (the kind's mapped flags).\n"
		"                        Default: the kind's launcher; freetoken: \"%s\"\n"
		"                        (python3 where there is no python)\n"
		"  --append-flags        append the mapped flags to a --server-cmd without {flags} (default: none)\n"
		"  --port N              server port (default: a free loopback port per backend)\n"
		"  --gpu UUID|INDEX      --gpu for the FreeToken server (recorded in the row)\n"
		"  --num-token-override N  --num-token-override for the FreeToken server\n"
		"  --mem-ratio R         --memory-ratio (default 0.9)\n"
		"  --cache N             --moe-cache-size N      \\  one of them; default\n"
		"  --cache-rate X        --moe-cache-rate X      /  --moe-cache-auto\n"
		"  --hybrid-fetch N      --moe-hybrid-max-fetch (default -1: from the bw profile)\n"
		"  --no-graph            --cuda-graph-max-bs 0 (default 1)\n"
		"  --aime FILE           jsonl with \"problem\" or \"prompt\" (default $FREETOKEN_AIME25_JSONL, else\n"
		"                        the embedded problems)\n"
		"  --problem N           problem index, 0-based (default 0)\n"
		"  --greedy              temperature 0, top_p 1, top_k -1 (default: generation_config.json,\n"
		"                        fallbacks temperature 1.0, top_p 0.95, top_k 64)\n"
		"  --no-thinking         do not ask for thinking (default on)\n"
		"  --warmup N            warm-up requests before the measured one (default 1)\n"
		"  --compare KEY=V1,V2   compare arms: one fresh server per arm and cycle, the same prompt,\n"
		"                        warm-up per server; per arm tok/s, TTFT and cold TTFT as median\n"
		"                        [min-max] over the cycles; the winner named only where the gap\n"
		"                        exceeds the spread (the ranges do not overlap and the medians differ\n"
		"                        by --min-gap), else \"tie\". Repeatable: several keys give the cross\n"
		"                        product of their values (at most %d arms). Keys: moe-backend,\n"
		"                        moe-hybrid-max-fetch, moe-cache-size (N or auto) for freetoken;\n"
		"                        n-cpu-moe, override-tensor, GGML_OP_OFFLOAD_MIN_BATCH (environment) for\n"
		"                        llama.cpp; server-arg:--FLAG (passes --FLAG V) and env:NAME (sets\n"
		"                        NAME=V) for any server. \"\\,\" is a comma inside a value; an empty\n"
		"                        value is the arm without the key (flag not passed, variable unset).\n"
		"                        A failing arm is reported and not run again; the others go on; exit 1\n"
		"  --cycles N            --compare: rounds over the arms, each starting at the next arm (default 3)\n"
		"  --min-gap PCT         --compare: the least difference of medians a winner needs (default 2)\n"
		"  --output-format F     table (the summary, default), json (on stdout: {kind, rows, failed},\n"
		"                        rows as --json FILE writes them), csv or md: one row per backend\n"
		"                        (tok/s, ms, GiB); with --compare json adds \"compare\" (the summary)\n"
		"                        and csv/md give one row per arm (median, min, max per figure)\n"
		"  --json FILE           append one JSON line per backend (failed ones too): the seed's row\n"
		"                        (decode_steps, decode_tok_s, event_ms_p50/p99 by rank, ttft_ms, ...)\n"
		"                        and ours (ttft_cold_ms, tokens_from usage|chunks, finish_reason, short,\n"
		"                        server_kind, server_tok_s and server_timings from llama.cpp, ...);\n"
		"                        with --compare each row has \"compare\" {arm, settings, cycle, cycles}\n"
		"                        and one \"decode_compare\" row (the summary) follows them\n"
		"  --server-timeout S    deadline for the server to be ready (default 1800; alias --health-timeout)\n"
		"  --request-timeout S   per request (default 1800)\n"
		"  --term-grace S        after SIGTERM (default 90)\n"
		"  --kill-grace S        after SIGKILL (default 30)\n"
		"  --driver-wait S       then, for the driver to release VRAM (default 3)\n"
		"  --log-dir DIR         server logs (default $TMPDIR or /tmp)\n"
		"  --result-fd N         worker protocol: progress/result/error JSON lines on fd N\n",
		FTDECODE_DEFAULT_TOKENS, FTSRV_DEFAULT_TEMPLATE, FTCMP_MAX_ARMS);
}

enum {
	O_MODEL = 256, O_BACKEND, O_TOKENS, O_URL, O_SERVER_CMD, O_PORT, O_MEM, O_CACHE, O_CACHE_RATE, O_FETCH,
	O_NO_GRAPH, O_AIME, O_PROBLEM, O_GREEDY, O_NO_THINK, O_WARMUP, O_JSON, O_HEALTH_TO, O_REQ_TO, O_TERM,
	O_KILL, O_DRIVER, O_LOGDIR, O_RESULT_FD, O_HELP, O_KIND, O_APPEND_FLAGS, O_SHORT, O_GPU, O_NTO, O_FMT,
	O_COMPARE, O_CYCLES, O_MIN_GAP
};

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

static void print_summary(const struct ftdecode_cfg *c, const struct ftdecode_result *res, int n)
{
	printf("\ndecode: model %s, D=%ld, %s, sampling temperature %g top_p %g top_k %ld (%s)\n",
	       res[0].model_id[0] ? res[0].model_id : (c->model ? c->model : "?"), c->serve.max_tokens,
	       c->prompt_source, c->sampling.temperature, c->sampling.top_p, c->sampling.top_k, c->sampling.source);
	printf("%-10s %9s %8s %8s %8s %9s %9s %7s %7s %7s %9s %9s  %s\n", "backend", "tok/s", "ms/tok", "p50 ms", "p99 ms",
	       "ttft ms", "cold ms", "prompt", "tokens", "from", "srv tok/s", "vram GiB", "sha1");
	for (int i = 0; i < n; i++) {
		const struct ftdecode_result *r = &res[i];
		if (!r->has_metrics) {
			printf("%-10s FAILED: ", r->backend);
			print_error_lines(r->error);
			continue;
		}
		char prompt[24] = "-", vram[24] = "-", srv[24] = "-", cold[24] = "-";
		if (r->m.prompt_tokens >= 0)
			snprintf(prompt, sizeof prompt, "%ld", r->m.prompt_tokens);
		if (r->vram_bytes >= 0)
			snprintf(vram, sizeof vram, "%.2f", (double)r->vram_bytes / 1073741824.0);
		if (r->timings.have && r->timings.predicted_per_second > 0)
			snprintf(srv, sizeof srv, "%.2f", r->timings.predicted_per_second);
		if (r->ttft_cold_ms >= 0)
			snprintf(cold, sizeof cold, "%.1f", r->ttft_cold_ms);
		printf("%-10s %9.2f %8.2f %8.2f %8.2f %9.1f %9s %7s %7ld %7s %9s %9s  %s\n", r->backend, r->m.decode_tok_s,
		       r->m.ms_per_token, r->m.event_ms_p50, r->m.event_ms_p99, r->m.ttft_ms, cold, prompt,
		       r->m.completion_tokens, r->m.tokens_from, srv, vram, r->output_sha1);
		if (!r->ok) {
			printf("%-10s FAILED: ", "");
			print_error_lines(r->error);
		}
	}
	const char *first = NULL;
	int differ = 0;
	for (int i = 0; i < n; i++)
		if (res[i].ok) {
			if (first && strcmp(first, res[i].output_sha1))
				differ = 1;
			if (!first)
				first = res[i].output_sha1;
		}
	if (differ)
		printf("note: output_sha1 differs across backends (expected equal for the same model and requests)\n");
	fflush(stdout);
}

/* --output-format csv|md: the summary's columns, one row per backend, from the JSON rows. */
static void print_rows(enum ftcli_format fmt, const json_t *rows)
{
	static const char *const head[] = {"backend", "decode_tok_s", "ms_per_token", "event_ms_p50", "event_ms_p99",
					   "ttft_ms", "ttft_cold_ms", "prompt_tokens", "completion_tokens",
					   "tokens_from", "server_tok_s", "vram_gib", "output_sha1", "ok", "error"};
	static const char *const num[] = {"decode_tok_s", "ms_per_token", "event_ms_p50", "event_ms_p99", "ttft_ms",
					  "ttft_cold_ms", "prompt_tokens", "completion_tokens"};
	size_t i;
	const json_t *r;
	ftcli_print_row(fmt, head, 15, 1);
	json_array_foreach(rows, i, r) {
		char c[10][32];
		for (int k = 0; k < 8; k++)
			ftcli_cell(c[k], sizeof c[k], json_object_get(r, num[k]), k < 6 ? "%.2f" : "%.0f");
		ftcli_cell(c[8], sizeof c[8], json_object_get(r, "server_tok_s"), "%.2f");
		ftcli_cell(c[9], sizeof c[9], json_object_get(r, "vram_gib"), "%.2f");
		const char *row[] = {json_string_value(json_object_get(r, "backend")), c[0], c[1], c[2], c[3], c[4],
				     c[5], c[6], c[7], json_string_value(json_object_get(r, "tokens_from")), c[8], c[9],
				     json_string_value(json_object_get(r, "output_sha1")),
				     json_is_true(json_object_get(r, "ok")) ? "yes" : "no",
				     json_string_value(json_object_get(r, "error"))};
		ftcli_print_row(fmt, row, 15, 0);
	}
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

/* --output-format csv|md with --compare: one row per arm. */
static void print_compare_rows(enum ftcli_format fmt, const json_t *sum)
{
	static const char *const head[] = {"arm", "cycles_ok", "cycles", "decode_tok_s", "decode_tok_s_min",
					   "decode_tok_s_max", "ttft_ms", "ttft_ms_min", "ttft_ms_max", "ttft_cold_ms",
					   "rank", "result", "error"};
	static const char *const figs[] = {"decode_tok_s", "ttft_ms"};
	ftcli_print_row(fmt, head, 13, 1);
	size_t i;
	const json_t *a;
	const char *winner = json_string_value(json_object_get(sum, "winner"));
	json_array_foreach(json_object_get(sum, "arms"), i, a) {
		char cell[10][32];
		for (int f = 0; f < 2; f++) {
			const json_t *o = json_object_get(a, figs[f]);
			ftcli_cell(cell[3 * f], sizeof cell[0], json_object_get(o, "median"), "%.2f");
			ftcli_cell(cell[3 * f + 1], sizeof cell[0], json_object_get(o, "min"), "%.2f");
			ftcli_cell(cell[3 * f + 2], sizeof cell[0], json_object_get(o, "max"), "%.2f");
		}
		ftcli_cell(cell[6], sizeof cell[6], json_object_get(json_object_get(a, "ttft_cold_ms"), "median"), "%.2f");
		ftcli_cell(cell[7], sizeof cell[7], json_object_get(a, "cycles_ok"), "%.0f");
		ftcli_cell(cell[8], sizeof cell[8], json_object_get(sum, "cycles"), "%.0f");
		ftcli_cell(cell[9], sizeof cell[9], json_object_get(a, "rank"), "%.0f");
		const char *label = json_string_value(json_object_get(a, "arm"));
		const char *result = json_is_string(json_object_get(a, "error")) ? "failed" :
				     winner && !strcmp(winner, label) ? "winner" :
				     !strcmp(json_string_value(json_object_get(sum, "decision")), "tie") ? "tie" : "-";
		const char *row[] = {label, cell[7], cell[8], cell[0], cell[1], cell[2], cell[3], cell[4], cell[5], cell[6],
				     cell[9], result, json_string_value(json_object_get(a, "error"))};
		ftcli_print_row(fmt, row, 13, 0);
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

int ftcli_cmd_decode(int argc, char **argv)
{
	static const struct option opts[] = {
		{"model", required_argument, NULL, O_MODEL}, {"backend", required_argument, NULL, O_BACKEND},
		{"backends", required_argument, NULL, O_BACKEND}, {"tokens", required_argument, NULL, O_TOKENS},
		{"max-tokens", required_argument, NULL, O_TOKENS}, {"url", required_argument, NULL, O_URL},
		{"server-cmd", required_argument, NULL, O_SERVER_CMD}, {"port", required_argument, NULL, O_PORT},
		{"mem-ratio", required_argument, NULL, O_MEM}, {"cache", required_argument, NULL, O_CACHE},
		{"cache-rate", required_argument, NULL, O_CACHE_RATE}, {"hybrid-fetch", required_argument, NULL, O_FETCH},
		{"no-graph", no_argument, NULL, O_NO_GRAPH}, {"aime", required_argument, NULL, O_AIME},
		{"problem", required_argument, NULL, O_PROBLEM}, {"greedy", no_argument, NULL, O_GREEDY},
		{"no-thinking", no_argument, NULL, O_NO_THINK}, {"warmup", required_argument, NULL, O_WARMUP},
		{"json", required_argument, NULL, O_JSON}, {"health-timeout", required_argument, NULL, O_HEALTH_TO},
		{"request-timeout", required_argument, NULL, O_REQ_TO}, {"term-grace", required_argument, NULL, O_TERM},
		{"kill-grace", required_argument, NULL, O_KILL}, {"driver-wait", required_argument, NULL, O_DRIVER},
		{"log-dir", required_argument, NULL, O_LOGDIR}, {"result-fd", required_argument, NULL, O_RESULT_FD},
		{"help", no_argument, NULL, O_HELP}, {"decode", required_argument, NULL, O_TOKENS},
		{"server-timeout", required_argument, NULL, O_HEALTH_TO}, {"server-kind", required_argument, NULL, O_KIND},
		{"append-flags", no_argument, NULL, O_APPEND_FLAGS}, {"allow-short", no_argument, NULL, O_SHORT},
		{"gpu", required_argument, NULL, O_GPU}, {"num-token-override", required_argument, NULL, O_NTO},
		{"output-format", required_argument, NULL, O_FMT}, {"compare", required_argument, NULL, O_COMPARE},
		{"cycles", required_argument, NULL, O_CYCLES}, {"min-gap", required_argument, NULL, O_MIN_GAP}, {0}};
	struct ftdecode_cfg c = {
		.serve = {.max_tokens = FTDECODE_DEFAULT_TOKENS, .mem_ratio = 0.9, .hybrid_fetch = -1, .cache_size = 0,
			  .cache_rate = -1},
		.grace = FTSRV_GRACE_DEFAULT,
		.warmup = 1,
		.health_timeout_s = 1800,
		.health_interval_s = 0.5,
		.request_timeout_s = 1800,
		.thinking = 1,
		.kind = -1,
	};
	const char *backends = NULL, *aime = NULL, *json_path = NULL;
	enum ftcli_format fmt = FTCLI_FMT_TABLE;
	int greedy = 0, ch, li = 0, cycles = 3, cmp_opt = 0;
	double min_gap = FTCMP_DEFAULT_MIN_GAP;
	struct ftcmp_plan plan = {0};
	char cerr[512];
	long lv;
	double dv;
	opterr = 0;
	optind = 1;
#define BAD(...) do { ftcli_error(__VA_ARGS__); ftcmp_release(&plan); return FTCLI_EXIT_USAGE; } while (0)
	while ((ch = getopt_long(argc, argv, "h", opts, &li)) != -1) {
		switch (ch) {
		case O_MODEL: c.model = optarg; break;
		case O_BACKEND: backends = optarg; break;
		case O_TOKENS:
			if (ftstr_parse_long(optarg, 2, 1 << 20, &lv) < 0)
				BAD("--%s: '%s' is not an integer in [2, 1048576]", opts[li].name, optarg);
			c.serve.max_tokens = lv;
			break;
		case O_URL: c.url = optarg; break;
		case O_SERVER_CMD: c.server_cmd = optarg; break;
		case O_PORT:
			if (ftstr_parse_long(optarg, 1, 65535, &lv) < 0)
				BAD("--port: '%s' is not a port", optarg);
			c.port = (int)lv;
			break;
		case O_MEM:
			if (ftstr_parse_double(optarg, 0.01, 1.0, &c.serve.mem_ratio) < 0)
				BAD("--mem-ratio: '%s' is not in (0, 1]", optarg);
			break;
		case O_CACHE:
			if (ftstr_parse_long(optarg, 0, 1000000, &c.serve.cache_size) < 0)
				BAD("--cache: '%s' is not an integer in 0..1000000", optarg);
			break;
		case O_CACHE_RATE:
			if (ftstr_parse_double(optarg, 0.0, 1.0, &c.serve.cache_rate) < 0)
				BAD("--cache-rate: '%s' is not in [0, 1]", optarg);
			break;
		case O_FETCH:
			if (ftstr_parse_long(optarg, -1, 1 << 20, &c.serve.hybrid_fetch) < 0)
				BAD("--hybrid-fetch: '%s' is not an integer >= -1", optarg);
			break;
		case O_NO_GRAPH: c.serve.no_graph = 1; break;
		case O_AIME: aime = optarg; break;
		case O_PROBLEM:
			if (ftstr_parse_long(optarg, 0, 100000, &lv) < 0)
				BAD("--problem: '%s' is not an index in 0..100000", optarg);
			c.problem = (int)lv;
			break;
		case O_GREEDY: greedy = 1; break;
		case O_NO_THINK: c.thinking = 0; break;
		case O_WARMUP:
			if (ftstr_parse_long(optarg, 0, 100, &lv) < 0)
				BAD("--warmup: '%s' is not in [0, 100]", optarg);
			c.warmup = (int)lv;
			break;
		case O_JSON: json_path = optarg; break;
		case O_COMPARE:
			if (ftcmp_add(&plan, optarg, 0, cerr, sizeof cerr) < 0)
				BAD("%s", cerr);
			break;
		case O_CYCLES:
			if (ftstr_parse_long(optarg, 1, FTDCMP_MAX_CYCLES, &lv) < 0)
				BAD("--cycles: '%s' is not an integer in [1, %d]", optarg, FTDCMP_MAX_CYCLES);
			cycles = (int)lv;
			cmp_opt = 1;
			break;
		case O_MIN_GAP:
			if (ftstr_parse_double(optarg, 0, 1000, &dv) < 0)
				BAD("--min-gap: '%s' is not a percentage in [0, 1000]", optarg);
			min_gap = dv / 100;
			cmp_opt = 1;
			break;
		case O_FMT:
			if (ftcli_parse_format("--output-format", optarg, &fmt) < 0)
				return FTCLI_EXIT_USAGE;
			break;
		case O_HEALTH_TO:
		case O_REQ_TO:
		case O_TERM:
		case O_KILL:
		case O_DRIVER:
			if (ftstr_parse_double(optarg, 0.0, 864000, &dv) < 0)
				BAD("--%s: '%s' is not a number of seconds",
				    ch == O_HEALTH_TO ? opts[li].name : ch == O_REQ_TO ? "request-timeout" :
				    ch == O_TERM ? "term-grace" : ch == O_KILL ? "kill-grace" : "driver-wait", optarg);
			if (ch == O_HEALTH_TO) c.health_timeout_s = dv;
			else if (ch == O_REQ_TO) c.request_timeout_s = dv > 0.001 ? dv : 0.001;
			else if (ch == O_TERM) c.grace.term_s = dv;
			else if (ch == O_KILL) c.grace.kill_s = dv;
			else c.grace.driver_s = dv;
			break;
		case O_LOGDIR: c.log_dir = optarg; break;
		case O_KIND:
			if ((c.kind = ftsrv_kind_parse(optarg)) < 0)
				BAD("--server-kind: '%s' is not one of " FTSRV_KIND_NAMES, optarg);
			break;
		case O_APPEND_FLAGS: c.append_flags = 1; break;
		case O_SHORT: c.allow_short = 1; break;
		case O_GPU:
			if (!*optarg || strlen(optarg) > 80 || strpbrk(optarg, " \t\n'\"\\"))
				BAD("--gpu: '%s' is not a GPU index or UUID", optarg);
			c.serve.gpu = optarg;
			break;
		case O_NTO:
			if (ftstr_parse_long(optarg, 1, 1L << 30, &c.serve.num_token_override) < 0)
				BAD("--num-token-override: '%s' is not a positive integer", optarg);
			break;
		case O_RESULT_FD:
			if (ftcli_opt_result_fd(optarg) < 0)
				return FTCLI_EXIT_USAGE;
			break;
		case O_HELP:
		case 'h': usage(stdout); return 0;
		default:
			ftcli_error("unknown or incomplete option '%s' (see ftbench decode --help)", argv[optind - 1]);
			return FTCLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		BAD("unexpected argument '%s'", argv[optind]);
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
		print_summary(&c, res, ran);
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
