/* decode: client-side decode throughput of one MoE backend against an OpenAI-compatible server
 * (reference §8): start the server for the backend (or use one already running), wait until it
 * is ready (per server kind: /health with "maintenance", plain /health, or /v1/models; a /health
 * that is 404 falls back to /v1/models), read the model id, stream warm-up requests, then the
 * measured one, read VRAM from /v1/stats, stop the server's process group.
 *
 * decode_tok_s = decode_steps / (t_last - t_first), decode_steps = completion_tokens - 1. With a
 * usage chunk (tokens_from "usage") the events are those that carry text, as the seed times them:
 * right even when one event carries several tokens, since the window is anchored on the first
 * and last token's arrival. Without usage (tokens_from "chunks") every token chunk counts as one
 * token at batch 1, text or empty (a server that holds back the bytes of an unfinished character
 * still sends one chunk per step), and the window runs from the first to the last chunk.
 * event_ms_p50/p99 are the seed's ranks over the sorted gaps (gaps[n/2], gaps[(int)(n*0.99)]);
 * the interpolated ones are event_ms_p50_interp/p99_interp.
 *
 * A run that ends with fewer than D tokens is not ok (unless allow_short): finish_reason
 * "length" means the context filled up, anything else that the server ignored ignore_eos. */
#ifndef FT_BENCH_DECODE_H
#define FT_BENCH_DECODE_H
#include <signal.h>
#include <stdint.h>

#include <jansson.h>

#include "decode/chat.h"
#include "decode/sampling.h"
#include "decode/server.h"
#include "util/report.h"

#define FTDECODE_DEFAULT_TOKENS 256
#define FTDECODE_MAX_WARNINGS 8

struct ftdecode_cfg {
	const char *model;          /* checkpoint ({model}); may be NULL with url */
	const char *url;            /* a server that is already running: nothing started or stopped */
	const char *server_cmd;     /* template (NULL: the kind's ftsrv_default_template) */
	int kind;                   /* enum ftsrv_kind; -1 with url: detected */
	int append_flags;           /* append {flags} to a template that has no {flags} word */
	int allow_short;            /* fewer than D tokens is a warning, not a failure */
	const char *label;          /* --backend as given: with url or a kind other than freetoken the
				     * row's label; NULL: the server kind */
	int port;                   /* 0: a free loopback port per backend */
	struct ftsrv_serve_cfg serve;
	struct ftsrv_grace grace;
	char *const *extra_args;    /* words passed after the mapped flags, also to a template without
				     * {flags} (a --compare arm's); NULL-terminated, NULL: none */
	char *const *env_set;       /* "NAME=V" set in the server's environment; NULL: none */
	char *const *env_unset;     /* "NAME=" removed from it; NULL: none */
	const char *log_dir;        /* server logs go to a fresh <log_dir>/ftbench-decode-<backend>.XXXXXX/server.log */
	int warmup;                 /* warm-up requests before the measured one */
	double health_timeout_s;    /* deadline for /health to say serving */
	double health_interval_s;
	double request_timeout_s;
	const char *prompt;         /* the user message (instruction already applied) */
	const char *prompt_source;  /* "builtin:0", "aime25.jsonl:3" */
	int problem;
	struct ftsampling sampling;
	int thinking;               /* chat_template_kwargs.enable_thinking */
	const volatile sig_atomic_t *cancel;
	const struct ftreport *rep; /* progress per phase (FTDECODE_PHASES per backend) */
};
#define FTDECODE_PHASES 5 /* start, health, warm-up, measure, stop */

struct ftdecode_metrics {
	double decode_tok_s, ms_per_token, event_ms_p50, event_ms_p99, ttft_ms, tokens_per_event;
	double event_ms_p50_interp, event_ms_p99_interp;
	long prompt_tokens;         /* -1 when the server sent no usage */
	long completion_tokens;
	long decode_steps;          /* completion_tokens - 1 */
	long events;                /* events that carried text */
	long chunks;                /* token chunks (text or empty) */
	long empty_chunks;          /* token chunks without text */
	long timed;                 /* the events the window and gaps are taken over */
	int max_tokens_per_event;   /* -1 when the server did not say per event */
	int usage_missing;          /* completion_tokens was counted from the chunks */
	const char *tokens_from;    /* "usage" or "chunks" */
};

/* From a finished stream and the time the request was sent. -ENODATA when fewer than two
 * events arrived (no window to measure). */
int ftdecode_metrics(const struct ftchat_stream *s, uint64_t t_request_ns, struct ftdecode_metrics *m);

struct ftdecode_result {
	char backend[32];
	int ok;
	char error[1536];           /* why it failed (with the server log's tail when useful) */
	char model_id[256];
	struct ftdecode_metrics m;
	int has_metrics;
	long long vram_bytes;       /* -1 when the server does not say */
	char output_sha1[13];       /* first 12 hex of sha1(text) */
	char finish_reason[32];
	char short_reason[32];      /* "ignored_eos", "context_full" or "" */
	char server_kind[16];
	char kind_how[200];         /* "--server-kind", "default", or which probe decided */
	char readiness[64];         /* how readiness was asked */
	double ttft_cold_ms;        /* first request's TTFT (-1: none) */
	struct ftchat_timings timings; /* the server's own, measured request */
	char warnings[FTDECODE_MAX_WARNINGS][256];
	int nwarnings;
	int started;                /* we started (and stopped) the server */
	char server_cmd[2048];      /* argv as one line */
	char server_stop[256];      /* how it stopped */
	char server_log[512];
	char url[256];
	double wall_s;
};

/* Run one backend. Returns 0 when it was measured (r->ok), or -errno with r->error set; never
 * leaves a started server running. */
int ftdecode_run(const struct ftdecode_cfg *c, const char *backend, struct ftdecode_result *r);

/* The JSONL row for a result, with every field (null where not known): a new reference. */
json_t *ftdecode_row(const struct ftdecode_cfg *c, const struct ftdecode_result *r);

/* The request body for the measured (and warm-up) request to a server of kind: a new
 * reference. top_k "off" (-1) is sent as -1 to freetoken, vllm and sglang, as 0 (its "off") to
 * llama.cpp, and left out for openai (servers that refuse -1, like llama-cpp-python's). */
json_t *ftdecode_request(const struct ftdecode_cfg *c, int kind, const char *model_id);
#endif
