/* ftbench profile path|show|history|recommend FORMAT|fetch-fraction FORMAT|max-batch FORMAT|validate [--gpu G] [--json]
 *
 * Reads the bandwidth profile that applies to a GPU through libftprofile, exactly as an engine
 * would (search order, GPU check, aliases, rules of reference §5). --gpu takes an index, a uuid or
 * a unique uuid prefix; a full "GPU-..." uuid works without CUDA. No GPU: host.json.
 * The answers are the seed reader's (libftprofile): recommend prints none when there is no
 * profile or no data, the format name goes to the reader as typed.
 * Exit: 0 found; 1 no profile / no data for the format / invalid profile (message names the
 * file); 2 usage (missing format, bad --gpu). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>
#include <sys/stat.h>

#include "bench/validation.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/profile_print.h"
#include "ftprofile.h"
#include "moe/formats.h"
#include "util/fsutil.h"
#include "util/strutil.h"

struct profile_cli {
	const char *gpu, *from, *vdtype;
	int json, deployment, limit;
	double reuse;
	enum ftcli_format fmt;
	struct ftval_opts vo;
};
#define O(m) FTF_FIELD(struct profile_cli, m)

static const struct ftflag flag_rows[] = {
	{"gpu", FTF_STR, O(gpu), .meta = "G", .short_name = 'g', .def_help = "the first GPU; none: host.json",
	 .help = "GPU index, uuid or unique uuid prefix"},
	{"json", FTF_BOOL, O(json), .short_name = 'j',
	 .help = "machine-readable output (the same as --output-format json; it wins over --output-format)"},
	{"output-format", FTF_ENUM, O(fmt), .meta = "F", .choices = "table|json|csv|md", .def = "table",
	 .alias = "format",
	 .help = "table, json, csv or md (csv, md: show, one row per format; history, one row per profile and "
		 "format)"},
	{"limit", FTF_INT, O(limit), .meta = "N", .lo = 1, .hi = 1000, .def_help = "all kept, at most 20",
	 .help = "history: the newest N profiles only"},
	{"deployment", FTF_ENUM, O(deployment), .choices = "isolated|concurrent|profile", .def = "profile",
	 .help = "recommend / fetch-fraction for that deployment (profile: the one the profile records, by the "
		 "seed's rules)"},
	{"from", FTF_STR, O(from), .meta = "FILE", .help = "validate: the engine run to record (below)"},
	{"dtype", FTF_STR, O(vdtype), .meta = "F",
	 .def_help = "every format of the harness run the profile has", .help = "validate: the format"},
	{"workload", FTF_STR, O(vo.workload), .meta = "W", .def_help = "uniform",
	 .help = "validate: the harness run's point of that workload"},
	{"cache-fraction", FTF_DOUBLE, O(vo.cache_fraction), .meta = "X", .lo = 1e-6, .hi = 1, .def_help = "the first",
	 .help = "recommend (with --reuse): the answer for that workload from the profile's replay map "
		 "(ftbench replay): the nearest point's winner (a tie: offload) and its best fetch fraction; X = GPU "
		 "slot cache / (layers x experts). validate: the harness run's point of that cache fraction"},
	{"reuse", FTF_DOUBLE, O(reuse), .meta = "R", .lo = 0, .hi = 1,
	 .help = "recommend (with --cache-fraction): the workload's share of a layer's experts kept from one "
		 "token to the next"},
	{"engine-version", FTF_STR, O(vo.engine_version), .meta = "V",
	 .help = "validate: the engine's version (decode --compare records none)"},
	{"measured-epoch", FTF_DOUBLE, O(vo.measured_epoch), .meta = "T", .lo = 1, .hi = 1e11, .unit = "s",
	 .def_help = "the file's \"epoch\", else its mtime", .help = "validate: when the run was measured"},
};

const struct ftflag_cmd ftcli_flags_profile = {
	"profile", flag_rows, FTF_COUNT(flag_rows),
	.args = "path|show|history|recommend FORMAT [--cache-fraction C --reuse R]|fetch-fraction FORMAT|max-batch "
		"FORMAT|validate",
	.min_args = 1, .max_args = 2,
	.about = "  path            the profile file that applies (or where `ftbench bw` would write it)\n"
		 "  show            what the profile says: every figure with its spread (median, min-max,\n"
		 "                  samples), valid, drift, stale (--json: the whole file)\n"
		 "  history         the profiles of the GPU the per-user store kept (oldest first; valid and\n"
		 "                  invalid runs alike): time, read ceiling, per format CPU MoE / gather /\n"
		 "                  verdict, valid, drift (--json: the array of profiles)\n"
		 "  recommend F     offload | hybrid | none for format F (the reader's alias: mxfp4)\n"
		 "  fetch-fraction F  share of a hybrid step's missing experts fetched over PCIe\n"
		 "  max-batch F     the largest batch at which hybrid still wins for F (bw --batch-sweep)\n"
		 "  validate --from FILE  record what an engine run measured as the profile's validation.<fmt>:\n"
		 "                  the seed engine harness (bench/engines/freetoken_moe.py: one point, by\n"
		 "                  --workload W, default uniform, and --cache-fraction X, default the first),\n"
		 "                  a decode --compare summary (arms of moe-backend; needs --dtype), or a\n"
		 "                  validation record as it is (e.g. from replay). Per format: the winner, the\n"
		 "                  best fetch fraction, agrees with the profile's verdict (a tie agrees), when;\n"
		 "                  rewrites the profile file in place (atomically)",
	.notes = "GB/s is 10^9 bytes per second everywhere.\n"
		 "env: FREETOKEN_BENCHBW_PATH (the file), XDG_CACHE_HOME\n",
};

/* A full uuid in nvidia-smi form: GPU- and 36 characters of hex and dashes. */
static int literal_uuid(const char *s)
{
	if (strncmp(s, "GPU-", 4) || strlen(s) != 40)
		return 0;
	for (const char *p = s + 4; *p; p++)
		if (!(*p == '-' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
		      (*p >= 'A' && *p <= 'F')))
			return 0;
	return 1;
}

/* When a name the reader does not alias (fp8) finds nothing but its canonical name would. */
static const char *alias_hint(const struct ftprof *p, const char *format, int rec)
{
	static char hint[160];
	const char *canon = ftprof_canonical_format(format);
	double f;
	if (!strcmp(canon, format) || !strcmp(format, "mxfp4"))
		return "";
	if (rec ? ftprof_recommend(p, canon) == FTPROF_REC_NONE : ftprof_fetch_fraction(p, canon, &f) < 0)
		return "";
	snprintf(hint, sizeof hint, "; the reader (as the seed's) does not alias '%s': engines ask for '%s', "
		 "which has data", format, canon);
	return hint;
}

/* Read FILE: one JSON document, or JSON lines (decode --json): the last line that is a decode
 * --compare summary or a harness run. A new reference or NULL with err. */
static json_t *load_run(const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (doc)
		return doc;
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	char *line = NULL;
	size_t cap = 0;
	json_t *pick = NULL;
	while (getline(&line, &cap, f) > 0) {
		json_t *j = json_loads(line, 0, NULL);
		const char *kind = json_string_value(json_object_get(j, "kind"));
		if (j && ((kind && !strcmp(kind, "decode_compare")) || json_object_get(j, "points"))) {
			json_decref(pick);
			pick = j;
		} else {
			json_decref(j);
		}
	}
	free(line);
	fclose(f);
	if (!pick)
		snprintf(err, errlen, "%s: not JSON (%s at line %d), nor JSON lines with a decode --compare summary",
			 path, je.text, je.line);
	return pick;
}

static int validate(const struct ftprof *p, const char *from, const char *dtype, struct ftval_opts *vo, int json)
{
	char err[512];
	json_t *doc = load_run(from, err, sizeof err), *root = NULL, *all, *done = json_object();
	int rc = FTCLI_EXIT_FAIL;
	const char *names[FTFMT_COUNT + 8];
	int n = 0;
	if (!doc) {
		ftcli_error("%s", err);
		goto out;
	}
	struct stat st;
	if (!isfinite(vo->measured_epoch) && !json_is_number(json_object_get(doc, "epoch")) &&
	    !json_is_number(json_object_get(json_object_get(doc, "compare"), "epoch")) && stat(from, &st) == 0)
		vo->measured_epoch = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
	if (dtype) {
		names[n++] = dtype;
	} else {
		n = ftval_formats(doc, names, (int)(sizeof names / sizeof *names));
		if (n == 0) {
			ftcli_error("%s: give --dtype (the run does not say which expert format it measured)", from);
			rc = FTCLI_EXIT_USAGE;
			goto out;
		}
	}
	root = json_deep_copy(ftprof_json(p));
	all = json_object_get(root, "validation");
	if (!json_is_object(all)) {
		all = json_object();
		json_object_set_new(root, "validation", all);
	}
	double epoch = json_number_value(json_object_get(root, "epoch"));
	int added = 0;
	for (int i = 0; i < n; i++) {
		if (!dtype && !json_object_get(json_object_get(root, "dtypes"), names[i])) {
			ftcli_note("%s: not in the profile, skipped", names[i]);
			continue;
		}
		json_t *v;
		if (ftval_build(doc, names[i], vo, epoch, &v, err, sizeof err) < 0) {
			ftcli_error("%s: %s: %s", from, names[i], err);
			goto out;
		}
		ftval_judge_profile(v, p, names[i]);
		json_object_set_new(all, names[i], v);
		json_object_set(done, names[i], v);
		added++;
		if (!json) {
			const json_t *ag = json_object_get(v, "agrees");
			printf("%s: %s %s (%s%s%s): winner %s", names[i],
			       json_string_value(json_object_get(json_object_get(v, "engine"), "name")) ?: "?",
			       json_string_value(json_object_get(json_object_get(v, "engine"), "version")) ?: "?",
			       json_string_value(json_object_get(v, "level")) ?: json_string_value(json_object_get(v, "source")) ?: "?",
			       json_is_string(json_object_get(v, "workload")) ? ", " : "",
			       json_string_value(json_object_get(v, "workload")) ?: "",
			       json_string_value(json_object_get(v, "winner")));
			if (json_is_number(json_object_get(v, "best_fetch_fraction")))
				printf(", best fetch fraction %.3f", json_number_value(json_object_get(v, "best_fetch_fraction")));
			const json_t *vp = json_object_get(v, "verdict_point");
			printf("; the profile says %s", json_string_value(json_object_get(v, "verdict")) ?: "none");
			if (json_is_object(vp))
				printf(" at cache %.2f, reuse %.2f (its replay point nearest the run's)",
				       json_number_value(json_object_get(vp, "cache_fraction")),
				       json_number_value(json_object_get(vp, "reuse")));
			printf(": %s\n", json_is_true(ag) ? "agrees" : json_is_false(ag) ? "DISAGREES" : "not compared");
		}
	}
	if (!added) {
		ftcli_error("%s: nothing to record (none of its formats is in %s)", from, ftprof_source(p));
		goto out;
	}
	char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!text) {
		ftcli_error("out of memory");
		goto out;
	}
	size_t len = strlen(text);
	text[len] = '\n';
	int r = ftfs_write_atomic(ftprof_source(p), text, len + 1, 0644);
	free(text);
	if (r < 0) {
		ftcli_error("writing %s: %s", ftprof_source(p), strerror(-r));
		goto out;
	}
	if (json) {
		json_t *o = json_pack("{s:s,s:O}", "profile", ftprof_source(p), "validation", done);
		ftcli_print_json(o);
		json_decref(o);
	} else {
		printf("written: %s\n", ftprof_source(p));
	}
	rc = 0;
out:
	json_decref(doc);
	json_decref(root);
	json_decref(done);
	return rc;
}

/* The action of argv[pos] (and its FORMAT) into *action, *format: 0, or the exit status after
 * saying what is wrong. */
static int profile_action(int argc, char **argv, int pos, const char *from, const char **actionp,
			  const char **formatp)
{
	const char *action, *format = NULL;
	action = argv[pos++];
	if (!strcmp(action, "recommend") || !strcmp(action, "fetch-fraction") || !strcmp(action, "max-batch")) {
		if (pos >= argc) {
			ftcli_error("%s needs a FORMAT (one of %s)", action, ftfmt_all_names());
			return FTCLI_EXIT_USAGE;
		}
		format = argv[pos++];
		if (!*format) {
			ftcli_error("%s: empty FORMAT (one of %s)", action, ftfmt_all_names());
			return FTCLI_EXIT_USAGE;
		}
		/* Asked the way an engine asks: the name goes to the reader as it is (a profile may hold
		 * formats ftbench does not know; the reader's only alias is mxfp4). */
		if (!ftfmt_lookup(format))
			ftcli_note("'%s' is not a format ftbench knows (%s); the profile is asked as it is", format,
				   ftfmt_all_names());
	} else if (!strcmp(action, "validate")) {
		if (!from) {
			ftcli_error("validate needs --from FILE (a harness run, a decode --compare summary or a record)");
			return FTCLI_EXIT_USAGE;
		}
	} else if (strcmp(action, "path") && strcmp(action, "show") && strcmp(action, "history")) {
		ftcli_error("unknown action '%s'", action);
		ftflags_help(&ftcli_flags_profile, stderr);
		return FTCLI_EXIT_USAGE;
	}
	if (pos < argc) {
		ftcli_error("unexpected argument '%s'", argv[pos]);
		return FTCLI_EXIT_USAGE;
	}
	*actionp = action;
	*formatp = format;
	return 0;
}

/* One question to the profile: what was asked, of which GPU, how to answer. */
struct profile_req {
	const char *action, *format; /* format: recommend, fetch-fraction, max-batch */
	const char *uuid, *name;     /* the GPU (NULL: the host) */
	int json;
	enum ftcli_format fmt;
	enum ftprof_deployment dep;
	int dep_given;
	double wl_cache, wl_reuse;   /* recommend --cache-fraction --reuse (NaN: not given) */
};

/* path: where the profile that applies is (or would be written); r, err: what loading it said. */
static int act_path(const struct profile_req *q, const struct ftprof *p, int r, const char *err)
{
	char path[4096];
	const char *found = r ? NULL : ftprof_source(p);
	int pr = ftprof_path(q->uuid, path, sizeof path);
	if (q->json) {
		json_t *o = json_pack("{s:s?,s:s?,s:s?,s:b}", "gpu_uuid", q->uuid, "path", found, "write_path",
				      pr ? NULL : path, "exists", found != NULL);
		if (r && err[0])
			json_object_set_new(o, "error", json_string(err));
		ftcli_print_json(o);
		json_decref(o);
	} else if (found) {
		printf("%s\n", found);
	} else if (!pr) {
		printf("%s\n", path);
	}
	if (r == -ENOENT)
		ftcli_note("%s", err);
	else if (r)
		ftcli_error("%s", err);
	return r ? FTCLI_EXIT_FAIL : 0;
}

/* No profile, or one the seed's reader cannot read either: its answer is none. */
static int no_profile(const struct profile_req *q, int r, const char *err)
{
	const char *msg = err[0] ? err : strerror(-r);
	if (r == -ENOENT)
		ftcli_note("%s", msg);
	else
		ftcli_error("%s", msg);
	if (q->json) {
		json_t *o = json_pack("{s:s?,s:s}", "gpu_uuid", q->uuid, "error", msg);
		if (q->format && !strcmp(q->action, "recommend"))
			json_object_set_new(o, "recommendation", json_string("none"));
		else if (q->format)
			json_object_set_new(o, "fetch_fraction", json_null());
		if (q->format)
			json_object_set_new(o, "format", json_string(q->format));
		ftcli_print_json(o);
		json_decref(o);
	} else if (q->format && !strcmp(q->action, "recommend")) {
		printf("none\n");
	}
	return FTCLI_EXIT_FAIL;
}

/* recommend --cache-fraction --reuse: the replay map's answer for that workload. */
static int act_recommend_workload(const struct profile_req *q, const struct ftprof *p)
{
	double f = NAN, pc = NAN, pu = NAN, sp = NAN;
	enum ftprof_rec rec = ftprof_recommend_workload(p, q->format, q->wl_cache, q->wl_reuse, &f);
	ftprof_workload_point(p, q->format, q->wl_cache, q->wl_reuse, &pc, &pu, &sp);
	if (q->json) {
		json_t *o = json_pack("{s:s,s:s,s:f,s:f,s:o,s:s}", "format", q->format, "recommendation",
				      ftprof_rec_name(rec), "cache_fraction", q->wl_cache, "reuse", q->wl_reuse,
				      "fetch_fraction", isnan(f) ? json_null() : json_real(f), "profile", ftprof_source(p));
		if (rec != FTPROF_REC_NONE)
			json_object_set_new(o, "point", json_pack("{s:f,s:f,s:o}", "cache_fraction", pc, "reuse", pu,
								  "speedup", isnan(sp) ? json_null() : json_real(sp)));
		ftcli_print_json(o);
		json_decref(o);
	} else if (rec != FTPROF_REC_NONE) {
		printf("%s", ftprof_rec_name(rec));
		if (!isnan(f))
			printf(" fetch_fraction=%.4g", f);
		printf(" (replay point: cache %.3g, reuse %.3g, hybrid/offload %.3gx)\n", pc, pu, sp);
	} else {
		printf("none\n");
	}
	if (rec == FTPROF_REC_NONE)
		ftcli_note("%s: no replay map for %s (run ftbench replay, or bw with a GPU); the bandwidth rule says %s",
			   ftprof_source(p), q->format, ftprof_rec_name(ftprof_recommend(p, q->format)));
	return rec == FTPROF_REC_NONE ? FTCLI_EXIT_FAIL : 0;
}

/* recommend: the bandwidth rule's verdict, under --deployment when given. */
static int act_recommend(const struct profile_req *q, const struct ftprof *p)
{
	enum ftprof_rec rec = q->dep_given ? ftprof_recommend_deployment(p, q->format, q->dep)
					   : ftprof_recommend(p, q->format);
	enum ftprof_deployment used = q->dep == FTPROF_DEPLOY_PROFILE ? ftprof_deployment(p) : q->dep;
	if (q->json) {
		json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "format", q->format, "recommendation", ftprof_rec_name(rec),
				      "deployment", ftprof_deployment_name(used), "profile", ftprof_source(p));
		ftcli_print_json(o);
		json_decref(o);
	} else {
		printf("%s\n", ftprof_rec_name(rec));
	}
	if (rec == FTPROF_REC_NONE)
		ftcli_note("%s: no %s data for %s (engines keep offload)%s", ftprof_source(p),
			   ftprof_deployment_name(used), q->format, alias_hint(p, q->format, 1));
	return rec == FTPROF_REC_NONE ? FTCLI_EXIT_FAIL : 0;
}

/* max-batch: the largest batch the sweep found hybrid for. */
static int act_max_batch(const struct profile_req *q, const struct ftprof *p)
{
	int mb = 0;
	int r = ftprof_hybrid_max_batch(p, q->format, &mb);
	if (q->json) {
		json_t *o = json_pack("{s:s,s:o,s:s}", "format", q->format, "hybrid_max_batch",
				      r ? json_null() : json_integer(mb), "profile", ftprof_source(p));
		ftcli_print_json(o);
		json_decref(o);
	} else if (!r) {
		printf("%d\n", mb);
	}
	if (r)
		ftcli_error("%s: no batch sweep for %s (run ftbench bw --batch-sweep 1,2,4,8,16,32)", ftprof_source(p),
			    q->format);
	return r ? FTCLI_EXIT_FAIL : 0;
}

/* fetch-fraction: the hybrid fetch fraction, under --deployment when given. */
static int act_fetch_fraction(const struct profile_req *q, const struct ftprof *p)
{
	double f = 0;
	int r = q->dep_given ? ftprof_fetch_fraction_deployment(p, q->format, q->dep, &f)
			     : ftprof_fetch_fraction(p, q->format, &f);
	enum ftprof_deployment used = !q->dep_given ? FTPROF_DEPLOY_ISOLATED
				      : q->dep == FTPROF_DEPLOY_PROFILE ? ftprof_deployment(p) : q->dep;
	if (q->json) {
		json_t *o = json_pack("{s:s,s:o,s:s,s:s}", "format", q->format, "fetch_fraction",
				      r ? json_null() : json_real(f), "deployment", ftprof_deployment_name(used),
				      "profile", ftprof_source(p));
		ftcli_print_json(o);
		json_decref(o);
	} else if (!r) {
		printf("%.4f\n", f);
	}
	if (r)
		ftcli_error("%s: no bandwidth pair for %s (engines use a fixed cap of 1)%s", ftprof_source(p), q->format,
			    alias_hint(p, q->format, 0));
	return r ? FTCLI_EXIT_FAIL : 0;
}

int ftcli_cmd_profile(int argc, char **argv)
{
	struct profile_cli po = {0};
	struct ftflag_state fs;
	struct profile_req q = {0};
	struct ftgpu_info gi;
	char why[256] = "", err[2048] = "";
	struct ftprof *p = NULL;

	ftval_opts_default(&po.vo);
	int r = ftflags_parse(&ftcli_flags_profile, argc, argv, &po, &fs);
	if (r)
		return r > 0 ? 0 : FTCLI_EXIT_USAGE;
	argc = fs.argc;
	argv = fs.argv;
	int optind = fs.pos;
	struct ftval_opts vo = po.vo;
	q.json = po.json;
	q.fmt = po.fmt;
	int fmt_given = ftflags_given(&ftcli_flags_profile, &fs, "output-format");
	q.wl_cache = ftflags_given(&ftcli_flags_profile, &fs, "cache-fraction") ? po.vo.cache_fraction : NAN;
	q.wl_reuse = ftflags_given(&ftcli_flags_profile, &fs, "reuse") ? po.reuse : NAN;
	q.dep_given = ftflags_given(&ftcli_flags_profile, &fs, "deployment");
	ftflags_release(&fs); /* no joined lists: argv stays the caller's */
	ftprof_deployment_parse(po.deployment == 0 ? "isolated" : po.deployment == 1 ? "concurrent" : "profile", &q.dep);
	if ((r = profile_action(argc, argv, optind, po.from, &q.action, &q.format)))
		return r;
	if (q.json)
		q.fmt = FTCLI_FMT_JSON;
	else if (q.fmt == FTCLI_FMT_JSON)
		q.json = 1;
	if (fmt_given && (q.fmt == FTCLI_FMT_CSV || q.fmt == FTCLI_FMT_MD) && strcmp(q.action, "history") &&
	    strcmp(q.action, "show")) {
		ftcli_error("--output-format %s is for show and history only (the others: table or json)",
			    q.fmt == FTCLI_FMT_CSV ? "csv" : "md");
		return FTCLI_EXIT_USAGE;
	}
	/* --cache-fraction: with recommend (and --reuse) the replay map's answer; with validate the
	 * point of the engine's run to record */
	if (!strcmp(q.action, "validate") && isnan(q.wl_reuse)) {
		if (!isnan(q.wl_cache))
			vo.cache_fraction = q.wl_cache;
		q.wl_cache = NAN;
	} else if (isnan(q.wl_cache) != isnan(q.wl_reuse) || (!isnan(q.wl_cache) && strcmp(q.action, "recommend"))) {
		ftcli_error("--cache-fraction and --reuse go together, with recommend only (validate takes --cache-fraction)");
		return FTCLI_EXIT_USAGE;
	}
	if (!isnan(q.wl_cache) && q.dep_given) {
		ftcli_error("--cache-fraction/--reuse (the replay's answer) and --deployment do not mix");
		return FTCLI_EXIT_USAGE;
	}
	if (q.json)
		ftcli_set_quiet(1);

	/* Which GPU: a literal uuid needs no CUDA; otherwise the shared resolver. */
	if (po.gpu && literal_uuid(po.gpu)) {
		q.uuid = po.gpu;
	} else {
		r = ftcli_select_gpu(po.gpu, &gi, why, sizeof why);
		if (r < 0)
			return FTCLI_EXIT_USAGE; /* logged by the resolver */
		if (r == 0) {
			q.uuid = gi.uuid;
			q.name = gi.name;
		}
	}

	if (!strcmp(q.action, "history"))
		return ftcli_profile_history(q.uuid, po.limit, q.fmt);
	if (po.limit) {
		ftcli_error("--limit is for history only");
		return FTCLI_EXIT_USAGE;
	}
	r = ftprof_load(q.uuid, q.name, &p, err, sizeof err);
	int rc;
	if (!strcmp(q.action, "path"))
		rc = act_path(&q, p, r, err);
	else if (r)
		rc = no_profile(&q, r, err);
	else if (!strcmp(q.action, "validate"))
		rc = validate(p, po.from, po.vdtype, &vo, q.json);
	else if (!strcmp(q.action, "show")) {
		if (q.json)
			ftcli_print_json((json_t *)ftprof_json(p));
		else
			ftcli_profile_show(p, q.fmt);
		rc = 0;
	} else if (!strcmp(q.action, "recommend"))
		rc = isnan(q.wl_cache) ? act_recommend(&q, p) : act_recommend_workload(&q, p);
	else if (!strcmp(q.action, "max-batch"))
		rc = act_max_batch(&q, p);
	else
		rc = act_fetch_fraction(&q, p);
	ftprof_free(p);
	return rc;
}
