/* bw_probe: see bw_probe.h. */
#include "bench/bw_probe.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void ftbw_probes_free(struct ftbw_probe_done *p, int n)
{
	for (int i = 0; p && i < n; i++)
		ftprobe_result_release(&p[i].res);
	free(p);
}

int ftbw_probe_all(const struct ftbw_config *c, char **argv, double timeout, const struct ftreport *rep,
		   struct ftbw_probe_done **out, int *nout, char *err, size_t errlen)
{
	struct ftbw_item *items = calloc(FTBW_MAX_ITEMS, sizeof *items);
	struct ftbw_probe_done *d = calloc(FTBW_MAX_ITEMS, sizeof *d);
	char skipped[512];
	int n = 0, r = 0;
	*out = NULL;
	*nout = 0;
	if (!items || !d) {
		free(items);
		free(d);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int k = ftbw_plan(c, items, FTBW_MAX_ITEMS, skipped, sizeof skipped);
	for (int i = 0; i < k && r == 0; i++) {
		const struct ftbw_item *it = &items[i];
		if (!it->fmt->cpu_path)
			continue;
		struct ftprobe_request q = {
			.format = it->fmt->name, .hidden = it->model->hidden, .inter = it->model->inter,
			.experts = it->model->experts, .top_k = it->model->topk, .synth_experts = it->synth_experts,
			.expert_bytes = (long long)it->expert_bytes, .activation = ftfmt_act_name(it->model->act),
			.swiglu_limit = it->model->swiglu_limit > 0 ? it->model->swiglu_limit : NAN, .threads = 0,
			.warmup = c->kernel_cpu_warmup, .steps = c->kernel_cpu_iters};
		char label[128];
		snprintf(label, sizeof label, "cpu-kernel %s", it->label);
		ftreport_note(rep, label);
		d[n].it = *it;
		r = ftprobe_run(argv, &q, timeout, &d[n].res, err, errlen);
		if (r == 0)
			n++;
	}
	free(items);
	if (r < 0) {
		ftbw_probes_free(d, n);
		return r;
	}
	*out = d;
	*nout = n;
	return 0;
}

int ftbw_probe_apply_all(json_t *prof, const struct ftbw_config *c, char **argv, struct ftbw_probe_done *d, int n)
{
	json_t *engines = json_array(), *cmd = json_array();
	if (!engines || !cmd) {
		json_decref(engines);
		json_decref(cmd);
		return -ENOMEM;
	}
	for (char **a = argv; *a; a++)
		json_array_append_new(cmd, json_string(*a));
	for (int i = 0; i < n; i++) {
		const struct ftbw_item *it = &d[i].it;
		json_t *e, *verdicts;
		if (it->is_dtype) {
			e = json_object_get(json_object_get(prof, "dtype_kernels"), it->fmt->name);
			verdicts = json_object_get(prof, "dtypes");
		} else {
			json_t *w = json_object_get(json_object_get(prof, "workloads"), it->model->name);
			e = json_object_get(json_object_get(w, "kernels"), it->fmt->name);
			verdicts = json_object_get(w, "recommended_moe_backend");
		}
		if (!e)
			continue;
		int r = ftprobe_apply(e, &d[i].res, c->threshold);
		if (r < 0) {
			json_decref(engines);
			json_decref(cmd);
			return r;
		}
		json_t *rec = json_object_get(e, "recommended");
		if (json_is_object(verdicts))
			json_object_set_new(verdicts, it->fmt->name,
					    json_is_string(rec) ? json_incref(rec) : json_string("unmeasured"));
		json_array_append_new(engines, json_pack("{s:s,s:s,s:s,s:b}", "format", it->fmt->name, "name",
							 d[i].res.engine_name, "version", d[i].res.engine_version,
							 "supported", d[i].res.supported));
	}
	json_object_set_new(prof, "cpu_kernel", json_pack("{s:o,s:o,s:s}", "command", cmd, "measured", engines,
							  "seed_fields", "engine"));
	if (json_object_get(prof, "valid"))
		ftbw_check_valid(prof, c->max_spread);
	return 0;
}

