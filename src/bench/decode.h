/* decode: client-side decode throughput of one MoE backend against an OpenAI-compatible server
 * (reference §8): start the server for the backend (or use one already running), wait until
 * /health says serving, read the model id, stream warm-up requests, then the measured one, read
 * VRAM from /v1/stats, stop the server's process group.
 *
 * decode_tok_s = (completion_tokens - 1) / (t_last_event - t_first_event), where the events are
 * those that carry text: right even when one event carries several tokens, since the window is
 * anchored on the first and last token's arrival. */
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
#define FTDECODE_MAX_WARNINGS 6

struct ftdecode_cfg {
	const char *model;          /* checkpoint ({model}); may be NULL with url */
	const char *url;            /* a server that is already running: nothing started or stopped */
	const char *server_cmd;     /* template (NULL: FTSRV_DEFAULT_TEMPLATE) */
	int port;                   /* 0: a free loopback port per backend */
	struct ftsrv_serve_cfg serve;
	struct ftsrv_grace grace;
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
	long prompt_tokens;         /* -1 when the server sent no usage */
	long completion_tokens;
	long events;                /* events that carried text */
	int max_tokens_per_event;   /* -1 when the server did not say per event */
	int usage_missing;          /* completion_tokens was estimated from the events */
};

/* From a finished stream and the time the request was sent. -ENODATA when fewer than two text
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

/* The request body for the measured (and warm-up) request: a new reference. */
json_t *ftdecode_request(const struct ftdecode_cfg *c, const char *model_id);
#endif
