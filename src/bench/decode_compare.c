#include "bench/decode_compare.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/stats.h"
#include "util/timeutil.h"

void ftdcmp_record(struct ftdcmp_arm *a, int cycle, const struct ftdecode_result *r)
{
	if (cycle < 0 || cycle >= FTDCMP_MAX_CYCLES)
		return;
	a->cycles_run++;
	a->ok[cycle] = r->ok;
	if (r->ok) {
		a->cycles_ok++;
		a->tok_s[cycle] = r->m.decode_tok_s;
		a->ttft_ms[cycle] = r->m.ttft_ms;
		a->ttft_cold_ms[cycle] = r->ttft_cold_ms;
	} else if (!a->failed_cycle) {
		a->failed_cycle = cycle + 1;
		snprintf(a->error, sizeof a->error, "%s", r->error[0] ? r->error : "failed");
	}
}

/* The measured cycles' values of one figure (which: 0 tok/s, 1 TTFT, 2 cold TTFT). */
static int values(const struct ftdcmp_arm *a, int cycles, int which, double *v)
{
	int n = 0;
	for (int i = 0; i < cycles; i++) {
		double x = which == 0 ? a->tok_s[i] : which == 1 ? a->ttft_ms[i] : a->ttft_cold_ms[i];
		if (a->ok[i] && x >= 0)
			v[n++] = x;
	}
	return n;
}

static struct ftcmp_fig fig_of(const struct ftdcmp_arm *a, int cycles, int which)
{
	double v[FTDCMP_MAX_CYCLES];
	struct ftstat s = ftstat_of(v, values(a, cycles, which, v));
	return (struct ftcmp_fig){s.median, s.min, s.max, s.samples};
}

/* {"median","min","max","samples","values":[per cycle, null where not measured]} or null. */
static json_t *fig_json(const struct ftdcmp_arm *a, int cycles, int which)
{
	struct ftcmp_fig f = fig_of(a, cycles, which);
	json_t *vals = json_array();
	for (int i = 0; i < cycles; i++) {
		double x = which == 0 ? a->tok_s[i] : which == 1 ? a->ttft_ms[i] : a->ttft_cold_ms[i];
		json_array_append_new(vals, a->ok[i] && x >= 0 ? json_real(x) : json_null());
	}
	if (!f.samples) {
		json_decref(vals);
		return json_null();
	}
	return json_pack("{s:f,s:f,s:f,s:i,s:o}", "median", f.median, "min", f.min, "max", f.max, "samples", f.samples,
			 "values", vals);
}

static json_t *label_or_null(const struct ftdcmp_arm *arms, int i)
{
	return i >= 0 ? json_string(arms[i].arm.label) : json_null();
}

json_t *ftdcmp_summary(const struct ftdecode_cfg *c, const struct ftcmp_plan *p, const struct ftdcmp_arm *arms,
		       int narms, int cycles, double min_gap, const char *server_kind)
{
	struct ftcmp_fig tok[FTCMP_MAX_ARMS] = {0}, ttft[FTCMP_MAX_ARMS] = {0};
	int eligible[FTCMP_MAX_ARMS] = {0};
	const char *labels[FTCMP_MAX_ARMS] = {0};
	int stopped = 0;
	if (narms > FTCMP_MAX_ARMS)
		narms = FTCMP_MAX_ARMS;
	for (int i = 0; i < narms; i++) {
		tok[i] = fig_of(&arms[i], cycles, 0);
		ttft[i] = fig_of(&arms[i], cycles, 1);
		eligible[i] = (!arms[i].failed_cycle || arms[i].stopped) && arms[i].cycles_ok > 0;
		stopped |= arms[i].stopped;
		labels[i] = arms[i].arm.label;
	}
	int w, ru, tw, tru;
	char why[600], twhy[600];
	enum ftcmp_decision d = ftcmp_decide(tok, eligible, labels, narms, 1, min_gap, &w, &ru, why, sizeof why);
	enum ftcmp_decision td = ftcmp_decide(ttft, eligible, labels, narms, 0, min_gap, &tw, &tru, twhy, sizeof twhy);
	const char *pre = stopped ? "stopped before the last cycle, over the cycles measured: " : "";

	char ts[32], host[256] = "";
	fttime_wall_iso8601(ts, sizeof ts);
	gethostname(host, sizeof host - 1);
	json_t *j = json_object(), *keys = json_array(), *ja = json_array(), *failed = json_array();
	if (!j || !keys || !ja || !failed) {
		json_decref(j);
		json_decref(keys);
		json_decref(ja);
		json_decref(failed);
		return NULL;
	}
	for (int k = 0; k < p->nkeys; k++) {
		json_t *vals = json_array();
		for (int v = 0; v < p->keys[k].nvalues; v++)
			json_array_append_new(vals, *p->keys[k].values[v] ? json_string(p->keys[k].values[v]) : json_null());
		json_array_append_new(keys, json_pack("{s:s,s:s,s:o}", "key", p->keys[k].name, "target", p->keys[k].target,
						      "values", vals));
	}
	for (int i = 0; i < narms; i++) {
		const struct ftdcmp_arm *a = &arms[i];
		/* rank by median tok/s among the measured arms (failed ones too, after the others) */
		int rank = 0;
		if (tok[i].samples) {
			rank = 1;
			for (int o = 0; o < narms; o++)
				if (o != i && tok[o].samples &&
				    (eligible[o] > eligible[i] || (eligible[o] == eligible[i] && tok[o].median > tok[i].median)))
					rank++;
		}
		json_t *row = json_object();
		json_object_set_new(row, "arm", json_string(a->arm.label));
		json_object_set_new(row, "settings", ftcmp_arm_settings(p, &a->arm));
		json_object_set_new(row, "ok", json_boolean(!a->failed_cycle && a->cycles_ok == cycles));
		json_object_set_new(row, "cycles_run", json_integer(a->cycles_run));
		json_object_set_new(row, "cycles_ok", json_integer(a->cycles_ok));
		json_object_set_new(row, "rank", rank ? json_integer(rank) : json_null());
		json_object_set_new(row, "decode_tok_s", fig_json(a, cycles, 0));
		json_object_set_new(row, "ttft_ms", fig_json(a, cycles, 1));
		json_object_set_new(row, "ttft_cold_ms", fig_json(a, cycles, 2));
		json_object_set_new(row, "failed_cycle", a->failed_cycle ? json_integer(a->failed_cycle) : json_null());
		json_object_set_new(row, "error", a->failed_cycle ? json_string(a->error) : json_null());
		json_object_set_new(row, "stopped", json_boolean(a->stopped));
		json_array_append_new(ja, row);
		if (a->failed_cycle && !a->stopped)
			json_array_append_new(failed, json_string(a->arm.label));
	}
	json_object_set_new(j, "kind", json_string("decode_compare"));
	json_object_set_new(j, "timestamp", json_string(ts));
	json_object_set_new(j, "epoch", json_real(fttime_wall_epoch()));
	json_object_set_new(j, "host", json_string(host));
	json_object_set_new(j, "tool", json_pack("{s:s,s:s}", "name", "ftbench", "version", FT_VERSION));
	json_object_set_new(j, "server_kind", server_kind && *server_kind ? json_string(server_kind) : json_null());
	json_object_set_new(j, "model", c->model ? json_string(c->model) : json_null());
	json_object_set_new(j, "max_tokens", json_integer(c->serve.max_tokens));
	json_object_set_new(j, "warmup_requests", json_integer(c->warmup));
	json_object_set_new(j, "prompt_source", c->prompt_source ? json_string(c->prompt_source) : json_null());
	json_object_set_new(j, "cycles", json_integer(cycles));
	json_object_set_new(j, "order", json_string("rotated"));
	json_object_set_new(j, "min_gap", json_real(min_gap));
	json_object_set_new(j, "keys", keys);
	json_object_set_new(j, "arms", ja);
	json_object_set_new(j, "winner", d == FTCMP_WINNER ? label_or_null(arms, w) : json_null());
	json_object_set_new(j, "decision", json_string(ftcmp_decision_name(d)));
	json_object_set_new(j, "best", label_or_null(arms, w));
	json_object_set_new(j, "runner_up", label_or_null(arms, ru));
	char reason[700];
	snprintf(reason, sizeof reason, "%s%s", pre, why);
	json_object_set_new(j, "reason", json_string(reason));
	json_object_set_new(j, "ttft_winner", td == FTCMP_WINNER ? label_or_null(arms, tw) : json_null());
	json_object_set_new(j, "ttft_decision", json_string(ftcmp_decision_name(td)));
	snprintf(reason, sizeof reason, "%s%s", pre, twhy);
	json_object_set_new(j, "ttft_reason", json_string(reason));
	json_object_set_new(j, "failed", failed);
	json_object_set_new(j, "stopped", json_boolean(stopped));
	return j;
}
