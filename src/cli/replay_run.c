/* replay_run: one format replayed (replay_run.h). */
#include "cli/replay_run.h"

#include <math.h>
#include <stdio.h>

#include "bench/cpu_probe.h"
#include "cli/cli.h"
#include "moe/formats.h"

int ftcli_replay_format(const struct ftrp_config *cfg, struct ftrp_gpu_opts go, char *const *probe_argv,
			double probe_timeout, const struct ftreport *rep, json_t **blk, int *probe_failed, char *err,
			size_t errlen)
{
	double pad[FTPROBE_MAX_ROUTES + 1], fpad[FTPROBE_MAX_ROUTES + 1];
	const struct ftmodel *m = cfg->model;
	json_t *path = NULL;
	int npad = 0, r;
	*blk = NULL;
	*probe_failed = 0;
	if (probe_argv) {
		struct ftprobe_request q = {
			.format = cfg->fmt->name, .hidden = m->hidden, .inter = m->inter, .experts = m->experts,
			.top_k = m->topk, .synth_experts = m->experts,
			.expert_bytes = (long long)ftfmt_expert_bytes(cfg->fmt, m->hidden, m->inter),
			.activation = ftfmt_act_name(m->act), .swiglu_limit = m->swiglu_limit > 0 ? m->swiglu_limit : NAN,
			.threads = 0, .warmup = 8, .steps = 32, .layers = cfg->layers, .batch = cfg->batch};
		char label[160];
		snprintf(label, sizeof label, "cpu-kernel %s: the engine's layer steps (%s)", cfg->fmt->name, probe_argv[0]);
		ftreport_note(rep, label);
		r = ftprobe_engine_path(probe_argv, &q, probe_timeout, &path, pad, fpad, err, errlen);
		if (r < 0) {
			*probe_failed = 1;
			return r;
		}
		if (r == 1)
			ftcli_note("%s", json_string_value(json_object_get(path, "note")));
		else
			npad = cfg->batch * m->topk + 1;
	}
	go.cpu_pad_us = npad ? pad : NULL;
	go.cpu_pad_n = npad;
	go.fetch_pad_us = npad ? fpad : NULL;
	go.fetch_pad_n = npad;
	struct ftrp_ops ops;
	int fake = ftcli_fake_gpus() >= 0;
	if (fake ? ftrp_fake_ops_paced(0, go.cpu_pad_us, npad, go.fetch_pad_us, &ops) : ftrp_gpu_ops(&go, &ops)) {
		json_decref(path);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = ftrp_run(cfg, &ops, rep, blk, err, errlen);
	if (*blk)
		json_object_set_new(*blk, "cpu_path", path ? path : json_pack("{s:s}", "source", "ftbench"));
	else
		json_decref(path);
	if (fake)
		ftrp_fake_ops_free(&ops);
	else
		ftrp_gpu_ops_free(&ops);
	return r;
}
