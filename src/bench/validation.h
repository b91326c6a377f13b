/* validation: a profile's validation.<fmt> record (api/schemas/profile.schema.json) built from
 * what an engine run measured, for `ftbench profile validate --from FILE`. libftprofile reads the
 * record back (ftprof_validation: winner, agrees, current or stale).
 *
 * Inputs understood (ftval_build):
 *  - the seed engine harness (bench/engines/freetoken_moe.py, "format": "ftbench-engine-moe"):
 *    the engine's own MoE decode per (format, workload, cache size) and arm; one point is taken;
 *  - `ftbench decode --compare` (its summary row, "kind": "decode_compare", or the
 *    --output-format json document holding it under "compare"): arms of the engine's server
 *    differing in moe-backend; the format is the caller's;
 *  - a record already in the schema's shape ("source" and "winner"), e.g. from a replay run:
 *    taken as it is, agrees and profile_epoch set here.
 * Nothing here logs or exits; errors are -errno with one line in err. */
#ifndef FT_BENCH_VALIDATION_H
#define FT_BENCH_VALIDATION_H
#include <jansson.h>
#include <stddef.h>

struct ftval_opts {
	const char *workload;        /* harness point: this workload (NULL: "uniform" if present, else the first) */
	double cache_fraction;       /* harness point: this cache size (NAN: the first of the workload) */
	const char *engine_version;  /* decode --compare: the engine's version (its summary has none) */
	double measured_epoch;       /* NAN: the document's "epoch" (the caller may pass a file's mtime) */
};
void ftval_opts_default(struct ftval_opts *o);

/* Build validation.<format> from doc (borrowed) for a profile whose epoch is profile_epoch, not
 * yet judged (verdict and agrees null: ftval_judge or ftval_judge_profile next). 0 and a new
 * *out; -EINVAL with err when doc is none of the inputs above, has no point for format
 * (workload, cache size), no usable arms, or no time it was measured; -ENOMEM. */
int ftval_build(const json_t *doc, const char *format, const struct ftval_opts *o, double profile_epoch,
		json_t **out, char *err, size_t errlen);

/* Compare rec's winner with verdict ("hybrid", "offload", or NULL: agrees null): sets verdict,
 * agrees (a tie agrees) and verdict_point, the profile's replay point (cache fraction, reuse) the
 * verdict came from (ftprof_recommend_workload), or null when either is NAN (the profile's
 * verdict for its default workload). */
void ftval_judge(json_t *rec, const char *verdict, double point_cache, double point_reuse);

/* Judge rec against profile p's answer for format: a run that says its workload (rec's
 * cache_fraction and reuse) by p's replay point nearest it (ftprof_recommend_workload) when p
 * has replay points for format; else by p's verdict (ftprof_recommend; none: agrees null). */
struct ftprof;
void ftval_judge_profile(json_t *rec, const struct ftprof *p, const char *format);

/* The formats a harness document has points for, into names (at most max, borrowed from doc);
 * the count (0 for other documents). */
int ftval_formats(const json_t *doc, const char **names, int max);
#endif
