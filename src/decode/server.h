/* server: the inference server `ftbench decode` starts per backend, as a child in its own
 * process group, from a command template; and its orderly stop.
 *
 * Template: words split like a shell would split them (whitespace, '...' and "..." quoting,
 * backslash escapes) but never run by a shell. In each word {model}, {port}, {backend} and
 * {host} are replaced; a word that is exactly {flags} becomes the mapped server flags (several
 * words); without a {flags} word the flags are left out unless the caller asks for them to be
 * appended. {port} is required; an unknown {name} is an error. FTSRV_DEFAULT_TEMPLATE is the
 * seed's launcher (reference §8: the model only as --model, never positionally).
 *
 * Server kinds: FreeToken (the seed's own: /health with "maintenance", the §8 engine flags),
 * llama.cpp's llama-server, vLLM, SGLang, or any other OpenAI-compatible server ("openai"). A
 * kind decides the default template, what {flags} stands for and how readiness is asked (see
 * decode/client.h).
 *
 * Functions return 0 or -errno and write a reason into err; none logs. */
#ifndef FT_DECODE_SERVER_H
#define FT_DECODE_SERVER_H
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/proc.h"

#define FTSRV_DEFAULT_TEMPLATE "python -m freetoken.cli serve --model {model} --host {host} --port {port} {flags}"
#define FTSRV_HOST "127.0.0.1"

enum ftsrv_kind { FTSRV_FREETOKEN, FTSRV_LLAMACPP, FTSRV_VLLM, FTSRV_SGLANG, FTSRV_OPENAI, FTSRV_NKINDS };
#define FTSRV_KIND_NAMES "freetoken|llama.cpp|vllm|sglang|openai"

/* "freetoken", "llama.cpp", "vllm", "sglang", "openai". */
const char *ftsrv_kind_name(enum ftsrv_kind k);
/* The kind named s (also "llamacpp", "llama-server", "ft"), or -EINVAL. */
int ftsrv_kind_parse(const char *s);
/* The launch template for a kind: the seed's for freetoken, `llama-server -m {model} ...`,
 * `vllm serve {model} ...`, `python3 -m sglang.launch_server --model-path {model} ...`;
 * NULL for openai (no standard launcher: --server-cmd or --url). */
const char *ftsrv_default_template(enum ftsrv_kind k);

/* What the server flags are made from (reference §8 for freetoken). */
struct ftsrv_serve_cfg {
	long max_tokens;     /* D: --max-seq-len-override 8192+D */
	double mem_ratio;    /* --memory-ratio */
	int no_graph;        /* --cuda-graph-max-bs 0 instead of 1 */
	long hybrid_fetch;   /* --moe-hybrid-max-fetch (-1: from the bw profile) */
	long cache_size;     /* > 0: --moe-cache-size N */
	double cache_rate;   /* >= 0 (and no size): --moe-cache-rate X; else --moe-cache-auto */
	const char *gpu;     /* --gpu G (freetoken only); NULL: none */
	long num_token_override; /* > 0: --num-token-override N (freetoken only) */
};

/* The mapped flags of a kind for backend as a new NULL-terminated argv (free with
 * ftsrv_free_argv); *n gets the count. freetoken: the seed's (reference §8, in its order);
 * llama.cpp: --ctx-size 8192+D --parallel 1; vllm: --max-model-len 8192+D --max-num-seqs 1
 * --gpu-memory-utilization R; sglang: --context-length 8192+D --max-running-requests 1
 * --mem-fraction-static R; openai: none. -ENOMEM. */
int ftsrv_serve_flags(const struct ftsrv_serve_cfg *c, enum ftsrv_kind kind, const char *backend, char ***flags,
		      int *n);

/* Expand tmpl into a new NULL-terminated argv (free with ftsrv_free_argv). flags replace a
 * {flags} word; without one they are appended only when append_flags is set. -EINVAL with err
 * on an empty template, unbalanced quotes, an unknown placeholder or a missing {port}. */
int ftsrv_expand(const char *tmpl, const char *model, int port, const char *backend, char *const *flags,
		 int append_flags, char ***argv, char *err, size_t errlen);
/* 1 when tmpl has a word that is exactly {flags}. */
int ftsrv_template_has_flags(const char *tmpl);
void ftsrv_free_argv(char **argv);
/* argv as one shell-quoted line (for logs and reports) into buf. */
void ftsrv_argv_string(char *const *argv, char *buf, size_t n);

/* A free TCP port on 127.0.0.1 (bound then released; the usual small race). */
int ftsrv_free_port(int *port);

struct ftsrv_grace {
	double term_s;   /* after SIGTERM to the group (90) */
	double kill_s;   /* after SIGKILL to the group (30) */
	double driver_s; /* then, for the GPU driver to release memory (3) */
};
#define FTSRV_GRACE_DEFAULT ((struct ftsrv_grace){90.0, 30.0, 3.0})

struct ftsrv {
	struct ftproc proc; /* pid: leader = process group id, 0 when none (and after ftsrv_stop);
			     * reaped, status: the leader's wait status once reaped */
	char log_path[512];
};

/* Start argv[0] (PATH searched) with stdin from /dev/null and stdout+stderr appended to
 * log_path (created 0640; a symbolic link there is an error, -ELOOP, never followed), in the
 * caller's environment, through ftproc_spawn: the leader of a new process group, with SIGTERM as
 * its parent-death signal. -ENOENT/-EACCES... when it cannot be executed ("not found" is an error
 * here, not an exit status later). */
int ftsrv_start(struct ftsrv *s, char *const *argv, const char *log_path, char *err, size_t errlen);
/* The same with the child's whole environment envp (NULL: the caller's; borrowed, not kept). */
int ftsrv_start_env(struct ftsrv *s, char *const *argv, char *const *envp, const char *log_path, char *err,
		    size_t errlen);

/* 1 while the leader runs, 0 once it has exited (s->status set). */
int ftsrv_alive(struct ftsrv *s);

/* Stop the whole group: SIGTERM, up to g->term_s for every member to go, SIGKILL, up to
 * g->kill_s, then sleep g->driver_s. how (size n) says what it took ("exited after SIGTERM in
 * 0.1 s", "killed with SIGKILL after 90 s"). -ETIMEDOUT when members survived SIGKILL.
 * Safe on a never-started or already-stopped server. */
int ftsrv_stop(struct ftsrv *s, const struct ftsrv_grace *g, char *how, size_t n);

/* The last lines (at most max_lines, at most n-1 bytes) of the server log into buf. */
void ftsrv_log_tail(const char *path, int max_lines, char *buf, size_t n);
#endif
