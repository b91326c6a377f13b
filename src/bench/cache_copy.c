#include "bench/cache_copy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gather.h"
#include "bench/pcie.h"
#include "moe/slot_cache.h"
#include "util/stats.h"

void ftcc_defaults(struct ftcc_opts *o)
{
	memset(o, 0, sizeof *o);
	for (int i = 0; i < ftmodel_cache_profiles_count && i < FTCC_MAX_LIST; i++)
		o->models[o->nmodels++] = &ftmodel_cache_profiles[i];
	static const long bs[] = {1, 4, 16, 32};
	static const double mr[] = {0, 0.25, 0.5, 1};
	for (int i = 0; i < 4; i++) {
		o->batch[o->nbatch++] = bs[i];
		o->miss[o->nmiss++] = mr[i];
	}
	o->repeat = FTCC_DEFAULT_REPEAT;
}

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "copy_missing.h"
#include "slot_cache.h"

#define WARMUP 2 /* untimed passes of every path before a configuration's repeats */

static int cuerr(cudaError_t e)
{
	if (e == cudaSuccess)
		return 0;
	return e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO;
}

/* Per model: the objects every configuration shares. */
struct bench {
	const struct ftmodel *m;
	struct ftgather *g;
	struct ftcm *cm;
	struct ftcm_proxy *proxy;
	cudaStream_t s;
	cudaEvent_t ev[3];
	size_t expert_bytes;
	void *scratch;         /* device destination of the linear copy */
	int32_t *d_ids, *d_ids0, *d_warm;
	int32_t *h_src, *h_dst;
	struct ftsc_dev st, init;
};

static double ms_between(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;
	cudaEventElapsedTime(&ms, a, b);
	return ms;
}

static json_t *spread(const double *v, int n, double *median)
{
	struct ftstat st = ftstat_of(v, n);
	*median = st.median;
	return ftstat_json(&st);
}

/* Reset the state, make the resident experts resident, restore the ids (all on b->s). */
static cudaError_t prepare(struct bench *b, int n, int nwarm)
{
	cudaError_t e;
	if ((e = ftsc_dev_copy(&b->st, &b->init, b->s)))
		return e;
	if (nwarm > 0 && (e = ftsc_dev_ensure(&b->st, 0, b->d_warm, nwarm, b->s)))
		return e;
	return cudaMemcpyAsync(b->d_ids, b->d_ids0, (size_t)n * 4, cudaMemcpyDeviceToDevice, b->s);
}

static int run_config(struct bench *b, int C, long bs, double rate, int repeat, json_t *row)
{
	const struct ftmodel *m = b->m;
	const int E = m->experts, n = (int)bs * m->topk;
	const int active = n < E ? n : E;
	const int misses = (int)rint(active * rate);
	const int nwarm = active - misses;
	const size_t bytes = (size_t)misses * b->expert_bytes;
	json_object_set_new(row, "bs", json_integer(bs));
	json_object_set_new(row, "active", json_integer(active));
	json_object_set_new(row, "miss_rate", json_real(rate));
	json_object_set_new(row, "misses", json_integer(misses));
	if (active > C) {
		json_object_set_new(row, "error", json_string("cache smaller than the active set"));
		return 0;
	}
	int32_t *ids = malloc(sizeof *ids * (size_t)(n > E ? n : E));
	double *t = calloc((size_t)repeat * 7, sizeof *t);
	if (!ids || !t) {
		free(ids);
		free(t);
		return -ENOMEM;
	}
	double *t_all = t, *t_ens = t + repeat, *t_copy = t + 2 * repeat, *t_pb = t + 3 * repeat,
	       *t_mc = t + 4 * repeat, *t_lin = t + 5 * repeat, *t_px = t + 6 * repeat;
	cudaError_t e;
	int r = 0;
	for (int i = 0; i < n; i++)
		ids[i] = i % active;
	if ((e = cudaMemcpy(b->d_ids0, ids, (size_t)n * 4, cudaMemcpyHostToDevice)))
		goto cuda_fail;
	for (int i = 0; i < nwarm; i++)
		ids[i] = i;
	if (nwarm && (e = cudaMemcpy(b->d_warm, ids, (size_t)nwarm * 4, cudaMemcpyHostToDevice)))
		goto cuda_fail;
	/* The plan on the host (for the memcpy loop and the check): it is the same every repeat. */
	if ((e = prepare(b, n, nwarm)) || (e = ftsc_dev_ensure(&b->st, 0, b->d_ids, n, b->s)) ||
	    (e = cudaStreamSynchronize(b->s)))
		goto cuda_fail;
	int32_t counts[3];
	if ((e = cudaMemcpy(counts, b->st.counts, sizeof counts, cudaMemcpyDeviceToHost)) ||
	    (e = cudaMemcpy(b->h_src, b->st.src_indices, (size_t)E * 4, cudaMemcpyDeviceToHost)) ||
	    (e = cudaMemcpy(b->h_dst, b->st.evict_slots, (size_t)E * 4, cudaMemcpyDeviceToHost)))
		goto cuda_fail;
	if (counts[2] || counts[0] != misses) {
		char msg[128];
		snprintf(msg, sizeof msg, "ensure_experts: error %d, %d misses planned (want %d)", counts[2],
			 counts[0], misses);
		json_object_set_new(row, "error", json_string(msg));
		r = -EIO;
		goto out;
	}
	if ((r = ftgather_set_plan(b->g, 0, b->h_src, b->h_dst, misses)))
		goto out;
	const void *lin_src = ftgather_host_bank(b->g, 0, 0);
	for (int it = -WARMUP; it < repeat; it++) {
		int k = it < 0 ? 0 : it;
		/* ensure + default copy path: the §4 figure */
		if ((e = prepare(b, n, nwarm)) || (e = cudaEventRecord(b->ev[0], b->s)) ||
		    (e = ftsc_dev_ensure(&b->st, 0, b->d_ids, n, b->s)) || (e = cudaEventRecord(b->ev[1], b->s)) ||
		    (e = ftcm_copy(b->cm, 0, b->st.src_indices, b->st.evict_slots, b->st.counts, E, b->s)) ||
		    (e = cudaEventRecord(b->ev[2], b->s)) || (e = cudaEventSynchronize(b->ev[2])))
			goto cuda_fail;
		t_all[k] = ms_between(b->ev[0], b->ev[2]);
		t_ens[k] = ms_between(b->ev[0], b->ev[1]);
		t_copy[k] = ms_between(b->ev[1], b->ev[2]);
		/* per-bank path on the same plan */
		if ((e = prepare(b, n, nwarm)) || (e = ftsc_dev_ensure(&b->st, 0, b->d_ids, n, b->s)) ||
		    (e = cudaEventRecord(b->ev[0], b->s)) ||
		    (e = ftcm_copy_path(b->cm, 0, 0, 0, 0, b->st.src_indices, b->st.evict_slots, b->st.counts, E,
					b->s)) ||
		    (e = cudaEventRecord(b->ev[1], b->s)) || (e = cudaEventSynchronize(b->ev[1])))
			goto cuda_fail;
		t_pb[k] = ms_between(b->ev[0], b->ev[1]);
		/* copy engines driven from the device plan through the proxy thread */
		if ((e = prepare(b, n, nwarm)) || (e = ftsc_dev_ensure(&b->st, 0, b->d_ids, n, b->s)) ||
		    (e = cudaEventRecord(b->ev[0], b->s)) ||
		    (e = ftcm_proxy_copy(b->proxy, 0, b->st.src_indices, b->st.evict_slots, b->st.counts, b->s)) ||
		    (e = cudaEventRecord(b->ev[1], b->s)) || (e = cudaEventSynchronize(b->ev[1])))
			goto cuda_fail;
		t_px[k] = ms_between(b->ev[0], b->ev[1]);
		/* per-expert cudaMemcpyAsync loop, plan on the host */
		if (misses) {
			double sec;
			if ((r = ftgather_time(b->g, FTGATHER_MEMCPY, 0, 1, &sec)))
				goto out;
			t_mc[k] = sec * 1e3;
			if ((r = ftpcie_linear_on(FTPCIE_H2D, b->scratch, lin_src, bytes, 0, 1, &sec, b->s)))
				goto out;
			t_lin[k] = sec * 1e3;
		}
	}
	/* A proxy copy that was never issued or a wait that timed out makes its timings meaningless. */
	if (ftcm_proxy_errors(b->proxy)) {
		json_object_set_new(row, "error", json_string("proxy copy-engine path: a copy was not issued or "
							      "its wait timed out (10 s)"));
		r = -EIO;
		goto out;
	}
	/* Check: zero the planned slots, copy once more with the default path, compare. */
	if ((e = prepare(b, n, nwarm)) || (e = ftsc_dev_ensure(&b->st, 0, b->d_ids, n, b->s)) ||
	    (e = cudaStreamSynchronize(b->s)))
		goto cuda_fail;
	if ((r = ftgather_poison(b->g)))
		goto out;
	if ((e = ftcm_copy(b->cm, 0, b->st.src_indices, b->st.evict_slots, b->st.counts, E, b->s)) ||
	    (e = cudaStreamSynchronize(b->s)))
		goto cuda_fail;
	r = ftgather_verify(b->g);
	json_object_set_new(row, "verified", json_boolean(r == 0));
	/* ids must now be the slots of the plan / the resident slots */
	double med_all, med_ens, med_copy, med_pb, med_mc = 0, med_lin = 0;
	json_t *sp_all = spread(t_all, repeat, &med_all);
	json_t *sp_ens = spread(t_ens, repeat, &med_ens);
	json_t *sp_copy = spread(t_copy, repeat, &med_copy);
	json_t *sp_pb = spread(t_pb, repeat, &med_pb);
	const double mib = (double)bytes / (1 << 20);
	json_object_set_new(row, "time_ms", json_real(med_all));
	json_object_set_new(row, "copy_MiB", json_real(mib));
	json_object_set_new(row, "bw_GBps", json_real(med_all > 0 ? bytes / (med_all * 1e-3) / 1e9 : 0));
	json_object_set_new(row, "tok_ms", json_real(med_all * m->layers));
	json_object_set_new(row, "time_ms_spread", sp_all);
	json_object_set_new(row, "ensure_us", json_real(med_ens * 1e3));
	json_object_set_new(row, "ensure_ms_spread", sp_ens);
	json_object_set_new(row, "copy_ms", json_real(med_copy));
	json_object_set_new(row, "copy_ms_spread", sp_copy);
	json_object_set_new(row, "per_bank_ms", json_real(med_pb));
	json_object_set_new(row, "per_bank_ms_spread", sp_pb);
	if (misses) {
		json_object_set_new(row, "memcpy_ms_spread", spread(t_mc, repeat, &med_mc));
		json_object_set_new(row, "linear_ms_spread", spread(t_lin, repeat, &med_lin));
		double med_px;
		json_object_set_new(row, "proxy_ms_spread", spread(t_px, repeat, &med_px));
		json_object_set_new(row, "proxy_ms", json_real(med_px));
		json_object_set_new(row, "proxy_GBps", json_real(bytes / (med_px * 1e-3) / 1e9));
		json_object_set_new(row, "memcpy_ms", json_real(med_mc));
		json_object_set_new(row, "linear_ms", json_real(med_lin));
		json_object_set_new(row, "copy_GBps", json_real(bytes / (med_copy * 1e-3) / 1e9));
		json_object_set_new(row, "per_bank_GBps", json_real(bytes / (med_pb * 1e-3) / 1e9));
		json_object_set_new(row, "memcpy_GBps", json_real(bytes / (med_mc * 1e-3) / 1e9));
		json_object_set_new(row, "linear_GBps", json_real(bytes / (med_lin * 1e-3) / 1e9));
		json_object_set_new(row, "pct_of_linear", json_real(100.0 * med_lin / med_all));
		json_object_set_new(row, "fused_over_per_bank", json_real(med_pb / med_copy));
	} else {
		json_object_set_new(row, "memcpy_ms", json_null());
		json_object_set_new(row, "linear_ms", json_null());
	}
	goto out;
cuda_fail:
	r = cuerr(e);
out:
	free(ids);
	free(t);
	return r;
}

static void bench_release(struct bench *b)
{
	for (int i = 0; i < 3; i++)
		if (b->ev[i])
			cudaEventDestroy(b->ev[i]);
	ftcm_proxy_destroy(b->proxy);
	cudaFree(b->scratch);
	cudaFree(b->d_ids);
	cudaFree(b->d_ids0);
	cudaFree(b->d_warm);
	free(b->h_src);
	free(b->h_dst);
	ftsc_dev_destroy(&b->st);
	ftsc_dev_destroy(&b->init);
	ftgather_free(b->g);
	memset(b, 0, sizeof *b);
}

/* The §4 start state: slot s owned by layer-1 expert s % E with usage s + 1; step = C. */
static int init_state(struct bench *b, int C)
{
	const struct ftmodel *m = b->m;
	struct ftsc sc;
	int r = ftsc_init(&sc, m->layers, m->experts, C);
	if (r)
		return r;
	for (int s = 0; s < C; s++) {
		int id = m->experts + s % m->experts;
		sc.id_of_slot[s] = id;
		sc.slot_for_id[id] = s;
		sc.usage[s] = s + 1;
	}
	sc.step = C;
	cudaError_t e;
	ftsc_dev_destroy(&b->st);
	ftsc_dev_destroy(&b->init);
	if ((e = ftsc_dev_create(&b->st, m->layers, m->experts, C)) ||
	    (e = ftsc_dev_create(&b->init, m->layers, m->experts, C)) ||
	    (e = ftsc_dev_upload(&b->init, sc.slot_for_id, sc.id_of_slot, sc.usage, sc.last_seen, sc.step, b->s)))
		r = cuerr(e);
	ftsc_release(&sc);
	return r;
}

static int run_model(const struct ftcc_opts *o, const struct ftmodel *m, const struct ftreport *rep,
		     json_t *results, int *done, int total, int *bad)
{
	long slots[FTCC_MAX_LIST];
	int nslots = o->nslots;
	if (nslots)
		memcpy(slots, o->slots, sizeof slots[0] * nslots);
	else {
		slots[0] = m->experts;
		slots[1] = (long)(0.4 * m->layers * m->experts);
		nslots = slots[1] > slots[0] ? 2 : 1;
	}
	long maxc = 0, maxbs = 0;
	for (int i = 0; i < nslots; i++)
		maxc = slots[i] > maxc ? slots[i] : maxc;
	for (int i = 0; i < o->nbatch; i++)
		maxbs = o->batch[i] > maxbs ? o->batch[i] : maxbs;
	if (m->layers < 2 || maxc <= 0 || maxc >= FTSC_MAX_SLOTS)
		return -EINVAL;
	struct bench b = {.m = m};
	struct ftgather_geom geom = {ftfmt_get(m->format), m->hidden, m->inter, m->experts, 1, (int)maxc, m->experts};
	int r = ftgather_create(&b.g, &geom, rep);
	if (r)
		return r;
	b.cm = ftgather_copier(b.g);
	b.s = ftgather_stream(b.g);
	b.expert_bytes = ftgather_expert_bytes(b.g);
	const int E = m->experts, nmax = (int)(maxbs * m->topk > E ? maxbs * m->topk : E);
	const long maxact = maxbs * m->topk < E ? maxbs * m->topk : E;
	cudaError_t e;
	b.h_src = malloc((size_t)E * 4);
	b.h_dst = malloc((size_t)E * 4);
	if (!b.h_src || !b.h_dst) {
		r = -ENOMEM;
		goto out;
	}
	if ((e = cudaMalloc(&b.scratch, (size_t)maxact * b.expert_bytes)) ||
	    (e = cudaMalloc((void **)&b.d_ids, (size_t)nmax * 4)) ||
	    (e = cudaMalloc((void **)&b.d_ids0, (size_t)nmax * 4)) ||
	    (e = cudaMalloc((void **)&b.d_warm, (size_t)nmax * 4)))
		goto cuda_fail;
	for (int i = 0; i < 3; i++)
		if ((e = cudaEventCreate(&b.ev[i])))
			goto cuda_fail;
	if ((e = ftcm_proxy_create(&b.proxy, b.cm, E)))
		goto cuda_fail;
	for (int si = 0; si < nslots; si++) {
		char label[128];
		snprintf(label, sizeof label, "%s:%ld", m->name, slots[si]);
		ftreport_progress(rep, *done, total, label);
		if (slots[si] <= 0 || (r = init_state(&b, (int)slots[si])))
			goto out;
		json_t *res = json_pack("{s:s,s:s,s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:[]}", "model", m->name, "format",
					ftfmt_get(m->format)->name, "layers", m->layers, "experts", m->experts,
					"topk", m->topk, "hidden", (json_int_t)m->hidden, "inter",
					(json_int_t)m->inter, "expert_bytes", (json_int_t)b.expert_bytes,
					"cache_slots", (json_int_t)slots[si], "rows");
		json_object_set_new(res, "path", json_string(ftcm_is_fused(b.cm) ? "fused" : "per_bank"));
		json_array_append_new(results, res);
		json_t *rows = json_object_get(res, "rows");
		for (int bi = 0; bi < o->nbatch; bi++)
			for (int mi = 0; mi < o->nmiss; mi++) {
				json_t *row = json_object();
				json_array_append_new(rows, row);
				r = run_config(&b, (int)slots[si], o->batch[bi], o->miss[mi], o->repeat, row);
				if (r == -EBADMSG) {
					*bad = 1;
					r = 0;
				}
				if (r)
					goto out;
			}
		(*done)++;
	}
	goto out;
cuda_fail:
	r = cuerr(e);
out:
	bench_release(&b);
	return r;
}

int ftcc_run(const struct ftcc_opts *o, const struct ftreport *rep, json_t **out)
{
	*out = NULL;
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
		return -ENODEV;
	if (o->nmodels <= 0 || o->nbatch <= 0 || o->nmiss <= 0 || o->repeat <= 0)
		return -EINVAL;
	for (int i = 0; i < o->nbatch; i++)
		if (o->batch[i] <= 0)
			return -EINVAL;
	for (int i = 0; i < o->nmiss; i++)
		if (!(o->miss[i] >= 0 && o->miss[i] <= 1))
			return -EINVAL;
	json_t *results = json_array();
	int total = 0, done = 0, bad = 0, r = 0;
	for (int i = 0; i < o->nmodels; i++) {
		const struct ftmodel *m = o->models[i];
		total += o->nslots ? o->nslots : (long)(0.4 * m->layers * m->experts) > m->experts ? 2 : 1;
	}
	for (int i = 0; i < o->nmodels && !r; i++)
		r = run_model(o, o->models[i], rep, results, &done, total, &bad);
	ftreport_progress(rep, total, total, "done");
	*out = json_pack("{s:o}", "results", results);
	if (r)
		return r;
	return bad ? -EBADMSG : 0;
}
#else
int ftcc_run(const struct ftcc_opts *o, const struct ftreport *rep, json_t **out)
{
	*out = NULL;
	return -ENODEV;
}
#endif
