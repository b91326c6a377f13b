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
	int warmup, steps;       /* untimed, then timed batch-1 decode steps */
};

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
