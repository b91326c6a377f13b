/* compare: the arms of `ftbench decode --compare KEY=V1,V2[,...]` and the verdict over them.
 * Prefix ftcmp_. Library code: returns 0 or -errno with a one-line reason in err, never logs.
 *
 * A comparison is one or more keys, each with its values; the arms are the cross product of the
 * values (first key slowest: moe-backend=a,b and moe-hybrid-max-fetch=2,4 give a/2 a/4 b/2 b/4),
 * at most FTCMP_MAX_ARMS. A key maps to the server's own flag or environment:
 *
 *   key                          server kind          what an arm's value V does
 *   moe-backend                  freetoken            --moe-backend V (the row's backend, {backend})
 *   moe-hybrid-max-fetch         freetoken            --moe-hybrid-max-fetch V (an integer >= -1)
 *   moe-cache-size               freetoken            --moe-cache-size V (>= 1), or "auto":
 *                                                     --moe-cache-auto (instead of --cache/--cache-rate)
 *   n-cpu-moe                    llama.cpp            --n-cpu-moe V (an integer >= 0)
 *   override-tensor              llama.cpp            --override-tensor V
 *   GGML_OP_OFFLOAD_MIN_BATCH    llama.cpp, openai    the environment GGML_OP_OFFLOAD_MIN_BATCH=V
 *   server-arg:--FLAG            any                  --FLAG V
 *   env:NAME                     any                  the environment NAME=V
 *
 * Values are split at commas; "\," is a comma inside a value (override-tensor's lists), "\\" a
 * backslash. An empty value is the arm without the key: the freetoken keys keep what --backend,
 * --hybrid-fetch and --cache/--cache-rate say, a flag is not passed, an environment variable is
 * removed from the server's environment. Restricted parsing (daemon jobs) takes only the named
 * keys, never server-arg: or env:, and values of printable ASCII without spaces. */
#ifndef FT_DECODE_COMPARE_H
#define FT_DECODE_COMPARE_H
#include <stddef.h>

#include <jansson.h>

#include "decode/server.h"

#define FTCMP_MAX_KEYS 4
#define FTCMP_MAX_VALUES 16
#define FTCMP_MAX_ARMS 16
#define FTCMP_VALUE_MAX 256   /* bytes of one value */
#define FTCMP_DEFAULT_MIN_GAP 0.02

enum ftcmp_key_type {
	FTCMP_MOE_BACKEND,
	FTCMP_HYBRID_FETCH,
	FTCMP_CACHE_SIZE,
	FTCMP_N_CPU_MOE,
	FTCMP_OVERRIDE_TENSOR,
	FTCMP_GGML_MIN_BATCH,
	FTCMP_SERVER_ARG,
	FTCMP_ENV,
};

struct ftcmp_key {
	enum ftcmp_key_type type;
	char name[128];   /* as the user wrote it: "moe-backend", "server-arg:--foo", "env:NAME" */
	char target[96];  /* the flag ("--n-cpu-moe") or the environment variable's name */
	char *values[FTCMP_MAX_VALUES]; /* owned; "" = the arm without the key */
	int nvalues;
};

struct ftcmp_plan {
	struct ftcmp_key keys[FTCMP_MAX_KEYS];
	int nkeys;
};

/* Parse one "KEY=V1,V2[,...]" and add it to p (zero it before the first call). restricted: only
 * the named keys, values without spaces or control characters. -EINVAL (err says what: the key
 * unknown, given twice, a value that does not fit, fewer than two arms in all), -E2BIG (more than
 * FTCMP_MAX_KEYS keys, FTCMP_MAX_VALUES values or FTCMP_MAX_ARMS arms), -ENOMEM. */
int ftcmp_add(struct ftcmp_plan *p, const char *spec, int restricted, char *err, size_t n);
/* The keys against the server kind: a FreeToken key for another kind, a llama.cpp key for
 * another kind is -EINVAL with err. Also -EINVAL when there are fewer than two arms. */
int ftcmp_check(const struct ftcmp_plan *p, enum ftsrv_kind kind, char *err, size_t n);
void ftcmp_release(struct ftcmp_plan *p);
/* The number of arms (1 with no key). */
int ftcmp_arms(const struct ftcmp_plan *p);

/* What arm i (0 <= i < ftcmp_arms) changes. The strings point into p (borrowed). */
struct ftcmp_arm {
	const char *value[FTCMP_MAX_KEYS]; /* per key */
	char label[512];                   /* "moe-backend=hybrid moe-hybrid-max-fetch=4"; an empty
					    * value shows as KEY=(default) */
};
void ftcmp_arm(const struct ftcmp_plan *p, int i, struct ftcmp_arm *a);

/* Arm a applied to a server start: serve's FreeToken fields and *backend changed in place (the
 * strings borrowed from p), *args (words added to the server's flags) and *set_env ("NAME=V")
 * and *unset_env ("NAME=") new NULL-terminated lists (free with ftsrv_free_argv; never NULL on
 * success). -ENOMEM. */
int ftcmp_apply(const struct ftcmp_plan *p, const struct ftcmp_arm *a, struct ftsrv_serve_cfg *serve,
		const char **backend, char ***args, char ***set_env, char ***unset_env);
/* {"KEY": "V" or null (the arm without it), ...}: a new reference, NULL on allocation failure. */
json_t *ftcmp_arm_settings(const struct ftcmp_plan *p, const struct ftcmp_arm *a);

/* The verdict over arms. */
enum ftcmp_decision { FTCMP_WINNER, FTCMP_TIE, FTCMP_NO_DATA };
const char *ftcmp_decision_name(enum ftcmp_decision d); /* "winner", "tie", "no_data" */

/* The arm that wins on a figure, given each arm's median, min, max and how many cycles it
 * measured; eligible[i] 0 leaves arm i out (a failed arm). The best arm by median (the highest,
 * or the lowest when !higher_better) wins only where the gap exceeds the spread: its worst cycle
 * beat the runner-up's best (the min-max ranges do not overlap), the medians differ by at least
 * min_gap (a fraction of the runner-up's), and both measured at least 2 cycles. Else FTCMP_TIE
 * (*winner the best arm all the same, for the report), or FTCMP_NO_DATA with fewer than two
 * eligible arms (*winner the only one, or -1). *runner_up gets the second best (-1 if none); why
 * (size wn) says it in words: "+23.4 % over moe-backend=offload; ranges apart" or why a tie. */
struct ftcmp_fig {
	double median, min, max;
	int samples;
};
enum ftcmp_decision ftcmp_decide(const struct ftcmp_fig *f, const int *eligible, const char *const *labels, int n,
				 int higher_better, double min_gap, int *winner, int *runner_up, char *why,
				 size_t wn);
#endif
