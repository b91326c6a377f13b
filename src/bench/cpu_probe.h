/* cpu_probe: an engine's own CPU MoE executor measured through the CPU kernel probe protocol
 * (docs/CPU_KERNEL_PROBE.md), for `ftbench bw --cpu-kernel CMD`.
 *
 * CMD is split into argv without a shell (ftprobe_split) and run once per format with one
 * request line (JSON: the workload's geometry, threads, steps) on its stdin; it prints one result
 * line (JSON) on stdout: the engine's name and version, its figure (GB/s), the samples behind it,
 * its threads and ISA. ftprobe_apply then puts the engine's figure into the seed-read fields of a
 * profile entry (cpu_moe_gbs, the overlap pair, ratio, recommended) and keeps ours beside them
 * (cpu_moe_gbs_ftbench, ...).
 *
 * Every function returns 0 or -errno and never logs or exits; where it takes (err, errlen), err
 * receives one line saying what was wrong. Strings passed in are borrowed. */
#ifndef FT_BENCH_CPU_PROBE_H
#define FT_BENCH_CPU_PROBE_H
#include <jansson.h>
#include <stddef.h>

#define FTPROBE_PROTOCOL "ftbench-cpu-kernel"
#define FTPROBE_VERSION 1
#define FTPROBE_MAX_SAMPLES 100000
#define FTPROBE_MAX_STDOUT (1u << 20)   /* more on stdout is an error */
#define FTPROBE_DEFAULT_TIMEOUT 300.0   /* seconds per format */

/* What the probe is asked to measure (the bw workload of one format). */
struct ftprobe_request {
	const char *format;      /* canonical format name ("bf16", "nvfp4", "mxfp4_triton", ...) */
	long hidden, inter;      /* H, I */
	int experts, top_k;      /* E, top-k of the workload */
	int synth_experts;       /* experts in the banks (ours: min(E, max(1, 2 GiB / expert_bytes))) */
	long long expert_bytes;  /* bytes of one expert in the format (our layout) */
	const char *activation;  /* "silu", "gelu_tanh", "gpt_oss_swiglu", ... */
	double swiglu_limit;     /* NAN: none */
	int threads;             /* 0: the engine's own default (what it runs when serving) */
	int warmup, steps;       /* untimed, then timed batch-1 decode steps (layer_step: decode steps of
				  * `layers` layers) */
	/* measure "layer_step" instead of "kernel": the engine's own CPU path inside its decode step
	 * (docs/CPU_KERNEL_PROBE.md §Layer steps), for `ftbench replay --cpu-kernel`. */
	int layer_step;
	int layers, batch;       /* MoE layers of the step, tokens per step */
	const int *routes;       /* CPU routes per layer-step to measure, ascending, routes[0] == 0 */
	int nroutes;             /* 2..FTPROBE_MAX_ROUTES */
	const int *fetches;      /* experts fetched per layer-step to measure the engine's hybrid fetch at */
	int nfetches;            /* 0..FTPROBE_MAX_ROUTES (0: none asked) */
};
#define FTPROBE_MAX_ROUTES 64

/* What it answered. samples: malloc'ed GB/s per timed step (ftprobe_result_release). */
struct ftprobe_result {
	int supported;           /* 0: the engine has no CPU path for the format (note says why) */
	char engine_name[64], engine_version[64];
	char isa[64];
	int threads;
	double gbs;              /* the engine's own figure (its median) */
	double *samples;
	int n;
	char note[200];
	/* layer_step: per requested route count, the engine's decode step divided by its layers (us,
	 * median over the timed steps) with that many routes per layer on its CPU path and the rest
	 * resident on the GPU; base_us the same step with every route resident and no CPU path
	 * (offload). steps_timed: the timed steps behind each figure. */
	int nroutes;
	int routes[FTPROBE_MAX_ROUTES];
	double route_us[FTPROBE_MAX_ROUTES];
	double base_us;
	int steps_timed;
	/* per requested fetch count m: the engine's hybrid step (f = 1, no CPU route) and its offload
	 * step, each per layer (us), with m misses per layer-step, every one fetched */
	int nfetch;
	int fetched[FTPROBE_MAX_ROUTES];
	double fetch_hyb_us[FTPROBE_MAX_ROUTES], fetch_off_us[FTPROBE_MAX_ROUTES];
};
void ftprobe_result_release(struct ftprobe_result *r);

/* Split cmd into a new NULL-terminated argv (ftprobe_free_argv): words separated by blanks;
 * '...' is taken literally; "..." and bare words take \c as c; quotes join with what is beside
 * them (a"b c" is one word). -EINVAL with err for an empty command or an unbalanced quote. */
int ftprobe_split(const char *cmd, char ***argv, char *err, size_t errlen);
void ftprobe_free_argv(char **argv);

/* The request line (no newline) as a new string (free()); NULL when out of memory. */
char *ftprobe_request_line(const struct ftprobe_request *q);

/* Parse what the probe printed (out[0..len)): its result is the LAST line that begins with '{'
 * (other lines are ignored: an engine may log there). Checks: JSON object; "protocol" and
 * "version" as above; "format" equal to the request's; "engine" an object with non-empty string
 * "name" and string "version". Then either "supported": false (with an optional "error" string:
 * the engine has no CPU path for the format), or "gbs" a finite number > 0, "samples" a
 * non-empty array (at most FTPROBE_MAX_SAMPLES) of finite numbers > 0, "threads" an integer
 * >= 1, "isa" a non-empty string, and "expert_bytes", when present, equal to the request's.
 * 0 and *res filled, or -EPROTO with err naming the first problem. */
int ftprobe_parse(const char *out, size_t len, const struct ftprobe_request *q, struct ftprobe_result *res,
		  char *err, size_t errlen);

/* Run argv (argv[0] searched in PATH) as its own process group with the request on stdin, read
 * stdout (at most FTPROBE_MAX_STDOUT) and stderr (its last line is kept for messages) until both
 * close and it exits, then ftprobe_parse. Errors (err names argv[0]): it cannot be started
 * (-ENOENT, -EACCES, ...), it runs past timeout_s (-ETIMEDOUT: its group gets SIGTERM, then
 * SIGKILL), it exits non-zero or dies of a signal (-EPROTO, with its stderr's last line), too
 * much output (-EFBIG), or what ftprobe_parse says. */
int ftprobe_run(char *const *argv, const struct ftprobe_request *q, double timeout_s, struct ftprobe_result *res,
		char *err, size_t errlen);

/* A layer_step result as what the engine's CPU path adds to one layer-step with n routes on it,
 * for n = 0..maxn: pad_us[n] = max(0, route_us(n) - base_us), route_us linear between the
 * measured route counts and extended past the last one with the slope of the last two. 0, or
 * -EINVAL when res holds no layer steps. */
int ftprobe_layer_pad(const struct ftprobe_result *res, int maxn, double *pad_us);
/* What the engine's hybrid path adds to a layer-step that fetches m experts, beyond its offload
 * step's fetch, for m = 0..maxm: fetch_us[0] = 0, fetch_us[m] = max(0, hyb - off) linear between
 * the measured counts (from 0 at m = 0) and extended with the last two's slope. 0, or -EINVAL
 * when res holds no fetch steps. */
int ftprobe_fetch_pad(const struct ftprobe_result *res, int maxm, double *fetch_us);

/* The engine's CPU path for a replay (ftbench replay --cpu-kernel, bw --cpu-kernel's replay):
 * run argv with q (layer_step is set here; q->routes NULL: 0..top_k, all of them up to 8, else
 * 0, 1, 2, 4, ... top_k) and describe what it answered: *path (new reference) is the replay
 * block's "cpu_path" ({"source": "engine", name, version, isa, threads, command, base_us,
 * layer_step_us, added_us, fetch_steps, fetch_added_us, steps}), pad_us[0..q->batch * q->top_k]
 * what the engine's path adds to a layer-step (ftprobe_layer_pad) and fetch_us[0..q->batch *
 * q->top_k] what its hybrid fetch adds (ftprobe_fetch_pad; q->fetches NULL: 1, 2, 4, ... top_k). Returns 0; 1 when the engine has no CPU path for the
 * format (*path: {"source": "ftbench", "note": why}, pad_us untouched); or -errno with err (then
 * *path is NULL). Only batch 1 (-EINVAL otherwise). */
int ftprobe_engine_path(char *const *argv, const struct ftprobe_request *q, double timeout_s, json_t **path,
			double *pad_us, double *fetch_us, char *err, size_t errlen);

/* Put a measured engine kernel into a profile ENTRY (borrowed, modified in place):
 *  - ours move beside: cpu_moe_gbs_ftbench (+_spread), cpu_moe_isa_ftbench,
 *    cpu_moe_overlap_gbs_ftbench (+_spread), ratio_ftbench, recommended_ftbench,
 *    fetch_fraction_ftbench (the reader's fraction from our figures), cpu_moe_kernel_ftbench;
 *  - cpu_moe_gbs (+_spread from the engine's samples), cpu_moe_isa: the engine's;
 *  - cpu_moe_overlap_gbs: the engine's isolated figure scaled by our kernel's contention
 *    (ours overlapped / ours alone; the engine is not run during our gather), its spread
 *    scaled alike; pcie_gather_overlap_gbs stays (the gather is ours in both);
 *  - ratio, recommended, recommended_isolated: from the engine's figure against our gather,
 *    threshold as bw's (unmeasured gather: null, as before);
 *  - cpu_moe_kernel: {"source": "engine", "name", "version", "isa", "threads", "samples",
 *    "overlap": how the overlap figure was made}.
 * A result with supported == 0 changes nothing but cpu_moe_kernel_note. 0, -EINVAL (not an
 * object), -ENOMEM. */
int ftprobe_apply(json_t *entry, const struct ftprobe_result *res, double threshold);

/* cpu_moe_kernel for a figure of ours: {"source": "ftbench", "name": "ftbench", "version",
 * "isa"} (a new reference), or json_null() when isa is NULL or "" (no CPU figure). */
json_t *ftprobe_ours_json(const char *isa);
#endif
