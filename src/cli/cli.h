/* cli: the ftbench command table and what every subcommand shares: the worker protocol on
 * --result-fd, progress on a terminal, errors logged once, GPU selection.
 *
 * Exit status: 0 success; 1 the work failed (a measurement, a checksum, a server); 2 bad usage
 * or a missing prerequisite (no GPU where one is required).
 *
 * The bottom of src/cli: the option tables (cli/flags.h) report through ftcli_error and the
 * result fd declared here, so this header names their types only; a file that declares or
 * expands rows (FTCLI_LOADER_ROWS) includes cli/flags.h itself. */
#ifndef FT_CLI_CLI_H
#define FT_CLI_CLI_H
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "hw/gpu.h"
#include "moe/cpu/cpumoe.h"
#include "util/report.h"
#include "util/workermsg.h"

/* the worker protocol's exit statuses (util/workermsg.h), which ftbenchd reads */
#define FTCLI_EXIT_OK FTWMSG_EXIT_OK
#define FTCLI_EXIT_FAIL FTWMSG_EXIT_FAIL
#define FTCLI_EXIT_USAGE FTWMSG_EXIT_USAGE
#define FTCLI_EXIT_INVALID FTWMSG_EXIT_INVALID /* bw: measured, but the profile's own checks failed */

struct ftflag;
struct ftflag_cmd;

struct ftcli_cmd {
	const char *name;
	const char *summary; /* NULL: not listed by --help (ftbench flags) */
	int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
	const struct ftflag_cmd *flags;    /* its option table (src/cli/flags.h) */
};

/* The option tables of the commands (each in its cmd_<name>.c). */
extern const struct ftflag_cmd ftcli_flags_gpus, ftcli_flags_cpu_moe, ftcli_flags_bw,
	ftcli_flags_cache_copy, ftcli_flags_load_weights, ftcli_flags_make_checkpoint, ftcli_flags_ftw,
	ftcli_flags_decode, ftcli_flags_cpu, ftcli_flags_profile, ftcli_flags_submit, ftcli_flags_jobs,
	ftcli_flags_wait, ftcli_flags_cancel, ftcli_flags_replay,
	ftcli_flags_health;

/* Commands (one file each: src/cli/cmd_<name>.c). */
int ftcli_cmd_gpus(int argc, char **argv);
int ftcli_cmd_cpu(int argc, char **argv);
int ftcli_cmd_profile(int argc, char **argv);
int ftcli_cmd_bw(int argc, char **argv);
int ftcli_cmd_cache_copy(int argc, char **argv);
int ftcli_cmd_cpu_moe(int argc, char **argv);
int ftcli_cmd_load_weights(int argc, char **argv);
int ftcli_cmd_make_checkpoint(int argc, char **argv);
int ftcli_cmd_ftw(int argc, char **argv);
int ftcli_cmd_decode(int argc, char **argv);
int ftcli_cmd_replay(int argc, char **argv);
int ftcli_cmd_submit(int argc, char **argv);
int ftcli_cmd_jobs(int argc, char **argv);
int ftcli_cmd_wait(int argc, char **argv);
int ftcli_cmd_cancel(int argc, char **argv);
int ftcli_cmd_health(int argc, char **argv);
/* ftbench flags [--json] [COMMAND...]: the option tables as JSON (tests, docs). */
int ftcli_cmd_flags(int argc, char **argv);

/* The subcommand being run ("bw"), for messages. */
extern const char *ftcli_prog;

/* Worker protocol: after ftcli_set_result_fd(n), progress/result/error are also written to fd
 * n as JSON lines {"type":"progress","done":d,"total":t,"label":l}, {"type":"result",
 * "result":{...}}, {"type":"error","message":m}. Returns 0 or -EBADF when n is not open. */
int ftcli_set_result_fd(int fd);
int ftcli_result_fd(void);
/* Quiet: no progress bar even on a terminal (--json on stdout sets it). */
void ftcli_set_quiet(int quiet);

void ftcli_progress(int done, int total, const char *label);
/* The output format of every table-printing command: --output-format table|json|csv|md (--json:
 * json; profile and jobs also take it as --format). csv and md print the table's rows, one
 * header row first, nothing else on stdout; json is the command's --json document. */
enum ftcli_format { FTCLI_FMT_TABLE, FTCLI_FMT_JSON, FTCLI_FMT_CSV, FTCLI_FMT_MD };
/* Parse s into *f: 0, or -1 after saying what is wrong (naming opt). */
int ftcli_parse_format(const char *opt, const char *s, enum ftcli_format *f);
/* A cell of a CSV/Markdown row: the number v printed with fmt ("%.2f"), or "" when v is not a
 * number (a figure not measured). Returns buf. */
const char *ftcli_cell(char *buf, size_t n, const json_t *v, const char *fmt);
/* One row of n cells on stdout as CSV (RFC 4180 quoting) or Markdown (| escaped); header: a
 * Markdown header also gets its |---| line. Other formats print nothing. */
void ftcli_print_row(enum ftcli_format f, const char *const *cells, int n, int header);
/* The same on o. */
void ftcli_fprint_row(FILE *o, enum ftcli_format f, const char *const *cells, int n, int header);

/* Take the progress bar off the terminal (before a line on stdout; the next progress redraws it). */
void ftcli_progress_clear(void);
/* Send the result object on the result fd (borrowed; not printed on stdout). */
void ftcli_result(json_t *result);
/* Send an error message on the result fd only, not on stderr (a --worker child whose parent
 * says it, once, with its context). */
void ftcli_result_error(const char *message);
/* Log "ftbench <cmd>: message" on stderr once, and send it on the result fd. */
void ftcli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A note on stderr ("ftbench <cmd>: note: ...") that is not an error. */
void ftcli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A reporter for library code that forwards to ftcli_progress / ftcli_note. */
struct ftreport ftcli_reporter(void);

/* Select a GPU by --gpu spec (NULL: the first). Returns 0 and fills *out, 1 when this host has
 * no GPU (why says why), or -errno after logging the resolver's error. */
int ftcli_select_gpu(const char *spec, struct ftgpu_info *out, char *why, size_t whylen);

/* Test doubles, in test builds only (objects compiled with FT_TEST_HOOKS and linked into the
 * Makefile's ftbench_hooks with tests/lib/fake_gpus.c; the product has none): an environment
 * variable (tests/lib/fake_gpus.c names it) makes the host look like one with N fake GPUs
 * ("Fake GPU") and `bw` measure with fixed figures (no CUDA, no CPU load); `cache-copy` prints
 * what it would run and stops. In the product each seam below says "no fake". */
struct ftbw_ops;
#ifdef FT_TEST_HOOKS
/* N fake GPUs (0..16) when the test build is asked for them, else -1. */
int ftcli_fake_gpus(void);
/* The list of n fake GPUs (why says why when n is 0). */
int ftcli_fake_gpu_list(int n, struct ftgpu_info **out, int *count, char *why, size_t whylen);
/* 0 and the fixed-figure bw operations in *ops when fake GPUs are asked for, else -1. */
int ftcli_fake_bw_ops(struct ftbw_ops *ops);
#else
static inline int ftcli_fake_gpus(void)
{
	return -1;
}
static inline int ftcli_fake_gpu_list(int n, struct ftgpu_info **out, int *count, char *why, size_t whylen)
{
	(void)n, (void)out, (void)count, (void)why, (void)whylen;
	return -ENODEV;
}
static inline int ftcli_fake_bw_ops(struct ftbw_ops *ops)
{
	(void)ops;
	return -1;
}
#endif
/* ftgpu_list, or the fake list. */
int ftcli_gpu_list(struct ftgpu_info **out, int *n, char *why, size_t whylen);
/* GPUs of this host whatever CUDA_VISIBLE_DEVICES says: the larger of what CUDA lists and what
 * the driver knows (ftgpu_count_host), or the fake count. */
int ftcli_host_gpu_count(void);

/* Print JSON to stdout, indented, with a trailing newline. */
void ftcli_print_json(json_t *j);

/* Parse "--result-fd N" value and apply it; returns 0 or logs and returns -1. */
int ftcli_opt_result_fd(const char *arg);

/* The seed's list spelling: argparse takes `--batch-sizes 1 4 16 32`, ours `--batch-sizes 1,4`.
 * ftcli_args_join_lists copies argv into a (argv[argc] NULL), joining into one comma list the
 * value of every option of opts whose val is in list_vals (0-terminated) with the arguments
 * after it that do not start with '-' ("--" ends the options). Options are matched the way
 * getopt_long matches them (exact name or unique prefix, "--name=v" too). Returns 0 or
 * -ENOMEM; release with ftcli_args_release (argv strings are borrowed, joined ones owned). */
struct ftcli_args {
	int argc;
	char **argv;
	char **owned;
	int nowned;
};
int ftcli_args_join_lists(struct ftcli_args *a, int argc, char **argv, const struct option *opts,
			  const int *list_vals);
void ftcli_args_release(struct ftcli_args *a);

/* Parse --device N (the seed's released spelling of --gpu N: a CUDA device index) into spec
 * (at least 16 bytes); *gpu_spec, when already set by --gpu to something else, is an error.
 * Returns 0, or logs and returns -1. */
int ftcli_opt_device(const char *arg, char *spec, size_t n, const char **gpu_spec);

/* The loader rows that load-weights and ftw convert share. --shard-gib X (a number of GiB, as the
 * seed takes it: 0.5) or --shard-mib N into a uint64_t of bytes, in whole MiB (at least 1), within
 * the row's bounds (ftcli_set_shard, an FTF_CALL); --expert-load into an enum ftload_mode. */
int ftcli_set_shard(const struct ftflag *f, const char *arg, void *opts);
#define FTCLI_LOADER_ROWS(T, workers, chunk_mib, shard, expert_load)                                  \
	{"workers", FTF_INT, FTF_FIELD(T, workers), .meta = "N", .lo = 1, .hi = 256,                  \
	 .def = FTF_XSTR(FTLOAD_DEFAULT_WORKERS), .help = "reader threads"},                          \
	{"chunk-mib", FTF_INT, FTF_FIELD(T, chunk_mib), .meta = "N", .lo = 1, .hi = 1024, .unit = "MiB", \
	 .def = "8", .help = "bytes each reader asks for at once"},                                   \
	{"shard-gib", FTF_CALL, FTF_FIELD(T, shard), .meta = "X", .lo = 0.001, .hi = 1024, .unit = "GiB", \
	 .def = "8", .set = ftcli_set_shard,                                                          \
	 .help = "FTW shard limit, a number as in the seed (0.5 is fine; whole MiB)"},                        \
	{"shard-mib", FTF_CALL, FTF_FIELD(T, shard), .meta = "N", .lo = 1, .hi = 1048576, .unit = "MiB", \
	 .set = ftcli_set_shard, .help = "the FTW shard limit in MiB"},                              \
	{"expert-load", FTF_ENUM, FTF_FIELD(T, expert_load), .choices = "auto|serial|parallel",       \
	 .def = "auto", .help = "the loader of the FTW conversion (and of load-weights' auto mode): "  \
				 "auto is parallel when the experts are scattered"}

/* FREETOKEN_BENCH_PROGRESS=1 (also true/yes/on): every progress step is also printed on stdout
 * as the seed's line "FTBENCH <done> <total> <label>" (what the seed's daemon and desktop app
 * parse); steps that move less than 1% of the total are not repeated. Read on first use;
 * ftcli_set_progress_lines overrides it (a --worker child whose stdout is a result channel). */
void ftcli_set_progress_lines(int on);

/* --tune key=value (hidden) on the commands that run the CPU MoE executor: the arguments in
 * order. ftcli_opt_tune takes one: "help" prints the knob table on stdout and returns 1 (the
 * command exits 0); else kept, 0; -1 logged when there are too many. */
#define FTCLI_MAX_TUNE 32
struct ftcli_tune {
	const char *kv[FTCLI_MAX_TUNE]; /* borrowed argv strings */
	int n;
};
int ftcli_opt_tune(struct ftcli_tune *o, const char *arg);
/* The executor's knobs: defaults, FREETOKEN_CPU_MOE_ISA (the seed's variable, read here once)
 * onto isa, then every --tune of o (may be NULL) in order. 0, or logs the first bad one (key,
 * value and range named) and returns -1; any other FREETOKEN_CPU_MOE_* variable is refused so. */
int ftcli_tune_build(const struct ftcli_tune *o, struct ftcpumoe_tune *t);
#endif
