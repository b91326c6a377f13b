#include "bench/cache_copy.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gather.h"
#include "bench/pcie.h"
#include "moe/slot_cache.h"
#include "util/stats.h"
#include "util/strutil.h"

void ftcc_defaults(struct ftcc_opts *o)
{
	memset(o, 0, sizeof *o);
	for (int i = 0; i < ftmodel_cache_profiles_count && i < FTCC_MAX_LIST; i++)
		o->models[o->nmodels++] = &ftmodel_cache_profiles[i];
	o->nbatch = ftstr_parse_long_list(FTCC_DEFAULT_BATCH_SIZES, 1, LONG_MAX, o->batch, FTCC_MAX_LIST);
	o->nmiss = ftstr_parse_double_list(FTCC_DEFAULT_MISS_RATES, 0, 1, o->miss, FTCC_MAX_LIST);
	o->repeat = FTCC_DEFAULT_REPEAT;
	o->copy = FTCC_COPY_PROXY;
}

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "copy_missing.h"
#include "slot_cache.h"

#define WARMUP 2 /* untimed passes of every path before a configuration's repeats */
#define ENS_K 8  /* ensure_us: this many back-to-back calls, each on a fresh copy of the state */

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
	struct ftmissing *cm;
	struct ftmissing_proxy *proxy;
	cudaStream_t s;
	cudaEvent_t ev[3];
	size_t expert_bytes;
	void *scratch;         /* device destination of the linear copy */
	int32_t *d_ids, *d_ids0, *d_warm;
	int32_t *d_bids; /* [ENS_K][nmax] ids of the back-to-back ensure calls */
	int nmax;
	int32_t *h_src, *h_dst;
	struct ftsc_dev st, init, bb[ENS_K];
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

/* ENS_K back-to-back ensure calls, each on its own state prepared as `prepare` does (untimed):
 * the per-call cost of the kernel, without the event/launch gaps of an isolated call. The same
 * method as test_slot_cache_gpu's start state (tests/gpu/ensure_bench.h): the round runs twice
 * and *us is the second, which, like the test's rounds, follows a round of the same calls;
 * *first_us is the first, right after the copy passes (the figure ensure_us was before). */
static cudaError_t time_ensure_b2b(struct bench *b, int n, int nwarm, double *us, double *first_us)
{
	cudaError_t e;
	for (int pass = 0; pass < 2; pass++) {
		for (int k = 0; k < ENS_K; k++) {
			int32_t *ids = b->d_bids + (size_t)k * b->nmax;
			if ((e = ftsc_dev_copy(&b->bb[k], &b->init, b->s)) ||
			    (nwarm > 0 && (e = ftsc_dev_ensure(&b->bb[k], 0, b->d_warm, nwarm, b->s))) ||
			    (e = cudaMemcpyAsync(ids, b->d_ids0, (size_t)n * 4, cudaMemcpyDeviceToDevice, b->s)))
				return e;
		}
		if ((e = cudaEventRecord(b->ev[0], b->s)))
			return e;
		for (int k = 0; k < ENS_K; k++)
			if ((e = ftsc_dev_ensure(&b->bb[k], 0, b->d_bids + (size_t)k * b->nmax, n, b->s)))
				return e;
		if ((e = cudaEventRecord(b->ev[1], b->s)) || (e = cudaEventSynchronize(b->ev[1])))
			return e;
		*(pass ? us : first_us) = ms_between(b->ev[0], b->ev[1]) * 1e3 / ENS_K;
	}
	return cudaSuccess;
}

/* One copy of the device plan with the chosen copy path on b->s. */
static cudaError_t copy_with(struct bench *b, enum ftcc_copy c)
{
	if (c == FTCC_COPY_PROXY)
		return ftmissing_proxy_copy(b->proxy, 0, b->st.src_indices, b->st.evict_slots, b->st.counts, b->s);
	return ftmissing_copy(b->cm, 0, b->st.src_indices, b->st.evict_slots, b->st.counts, b->m->experts, b->s);
}

/* Zero the planned slots, ensure + copy once more with path c, compare with the source rows. */
static int check_copy(struct bench *b, enum ftcc_copy c, int n, int nwarm)
{
	cudaError_t e;
	int r;
	if ((e = prepare(b, n, nwarm)) || (e = ftsc_dev_ensure(&b->st, 0, b->d_ids, n, b->s)) ||
	    (e = cudaStreamSynchronize(b->s)))
		return cuerr(e);
	if ((r = ftgather_poison(b->g)))
		return r;
	if ((e = copy_with(b, c)) || (e = cudaStreamSynchronize(b->s)))
		return cuerr(e);
	return ftgather_verify(b->g);
}

static void set_ms(json_t *row, const char *name, const double *v, int n, double *med)
{
	char k[64];
	snprintf(k, sizeof k, "%s_ms_spread", name);
	json_object_set_new(row, k, spread(v, n, med));
	snprintf(k, sizeof k, "%s_ms", name);
	json_object_set_new(row, k, json_real(*med));
}

static void set_gbps(json_t *row, const char *name, size_t bytes, double ms, double lin_ms)
{
	char k[64];
	snprintf(k, sizeof k, "%s_GBps", name);
	json_object_set_new(row, k, json_real(ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0));
	snprintf(k, sizeof k, "%s_pct_of_linear", name);
	json_object_set_new(row, k, json_real(ms > 0 ? 100.0 * lin_ms / ms : 0));
}

static int run_config(struct bench *b, int C, long bs, double rate, int repeat, enum ftcc_copy copy, json_t *row)
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
	enum { T_ALL, T_ENS1, T_COPY, T_FUSED, T_PB, T_MC, T_LIN, T_PX, T_ENS, T_ENSF, T_N };
	int32_t *ids = malloc(sizeof *ids * (size_t)(n > E ? n : E));
	double *t = calloc((size_t)repeat * T_N, sizeof *t);
	if (!ids || !t) {
		free(ids);
		free(t);
		return -ENOMEM;
	}
#define TT(i) (t + (size_t)(i) * repeat)
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
	const enum ftcc_copy other = copy == FTCC_COPY_PROXY ? FTCC_COPY_FUSED : FTCC_COPY_PROXY;
	for (int it = -WARMUP; it < repeat; it++) {
		int k = it < 0 ? 0 : it;
		/* ensure + the chosen copy path: the §4 figure */
		if ((e = prepare(b, n, nwarm)) || (e = cudaEventRecord(b->ev[0], b->s)) ||
		    (e = ftsc_dev_ensure(&b->st, 0, b->d_ids, n, b->s)) || (e = cudaEventRecord(b->ev[1], b->s)) ||
		    (e = copy_with(b, copy)) || (e = cudaEventRecord(b->ev[2], b->s)) ||
		    (e = cudaEventSynchronize(b->ev[2])))
			goto cuda_fail;
		TT(T_ALL)[k] = ms_between(b->ev[0], b->ev[2]);
		TT(T_ENS1)[k] = ms_between(b->ev[0], b->ev[1]);
		TT(T_COPY)[k] = ms_between(b->ev[1], b->ev[2]);
		TT(copy == FTCC_COPY_PROXY ? T_PX : T_FUSED)[k] = TT(T_COPY)[k];
		/* the other of fused / proxy, then the per-bank path, on the same plan (copy only) */
		if ((e = prepare(b, n, nwarm)) || (e = ftsc_dev_ensure(&b->st, 0, b->d_ids, n, b->s)) ||
		    (e = cudaEventRecord(b->ev[0], b->s)) || (e = copy_with(b, other)) ||
		    (e = cudaEventRecord(b->ev[1], b->s)) || (e = cudaEventSynchronize(b->ev[1])))
			goto cuda_fail;
		TT(other == FTCC_COPY_PROXY ? T_PX : T_FUSED)[k] = ms_between(b->ev[0], b->ev[1]);
		if ((e = prepare(b, n, nwarm)) || (e = ftsc_dev_ensure(&b->st, 0, b->d_ids, n, b->s)) ||
		    (e = cudaEventRecord(b->ev[0], b->s)) ||
		    (e = ftmissing_copy_path(b->cm, 0, 0, 0, b->st.src_indices, b->st.evict_slots, b->st.counts, E,
					b->s)) ||
		    (e = cudaEventRecord(b->ev[1], b->s)) || (e = cudaEventSynchronize(b->ev[1])))
			goto cuda_fail;
		TT(T_PB)[k] = ms_between(b->ev[0], b->ev[1]);
		/* ensure_experts alone, back to back */
		if ((e = time_ensure_b2b(b, n, nwarm, &TT(T_ENS)[k], &TT(T_ENSF)[k])))
			goto cuda_fail;
		/* per-expert cudaMemcpyAsync loop (plan on the host) and the linear copy */
		if (misses) {
			double sec;
			if ((r = ftgather_time(b->g, FTGATHER_MEMCPY, 0, 1, &sec)))
				goto out;
			TT(T_MC)[k] = sec * 1e3;
			if ((r = ftpcie_linear_on(FTPCIE_H2D, b->scratch, lin_src, bytes, 0, 1, &sec, b->s)))
				goto out;
			TT(T_LIN)[k] = sec * 1e3;
		}
	}
	/* A proxy copy that was never issued or a wait that timed out makes its timings meaningless. */
	if (ftmissing_proxy_errors(b->proxy)) {
		char msg[640];
		int u = snprintf(msg, sizeof msg, "proxy copy-engine path: a copy was not issued or its wait timed out "
				 "(10 s): ");
		ftmissing_proxy_diag(b->proxy, msg + u, sizeof msg - (size_t)u);
		json_object_set_new(row, "error", json_string(msg));
		r = -EIO;
		goto out;
	}
	/* Check both the chosen path and the other one. */
	r = check_copy(b, copy, n, nwarm);
	if (!r || r == -EBADMSG) {
		int r2 = check_copy(b, other, n, nwarm);
		r = r ? r : r2;
	}
	if (r && r != -EBADMSG)
		goto out;
	json_object_set_new(row, "verified", json_boolean(r == 0));
	double med_all, med_ens1, med_ens, med_copy, med_fu, med_pb, med_px, med_mc = 0, med_lin = 0;
	const double mib = (double)bytes / (1 << 20);
	json_object_set_new(row, "time_ms_spread", spread(TT(T_ALL), repeat, &med_all));
	json_object_set_new(row, "time_ms", json_real(med_all));
	json_object_set_new(row, "copy_MiB", json_real(mib));
	json_object_set_new(row, "bw_GBps", json_real(med_all > 0 ? bytes / (med_all * 1e-3) / 1e9 : 0));
	json_object_set_new(row, "tok_ms", json_real(med_all * m->layers));
	for (int i = 0; i < repeat; i++) {
		TT(T_ENS)[i] /= 1e3; /* us -> ms for the spread */
		TT(T_ENSF)[i] /= 1e3;
	}
	json_object_set_new(row, "ensure_ms_spread", spread(TT(T_ENS), repeat, &med_ens));
	json_object_set_new(row, "ensure_us", json_real(med_ens * 1e3));
	json_object_set_new(row, "ensure_first_round_ms_spread", spread(TT(T_ENSF), repeat, &med_ens));
	json_object_set_new(row, "ensure_first_round_us", json_real(med_ens * 1e3));
	json_object_set_new(row, "ensure_isolated_ms_spread", spread(TT(T_ENS1), repeat, &med_ens1));
	json_object_set_new(row, "ensure_isolated_us", json_real(med_ens1 * 1e3));
	set_ms(row, "copy", TT(T_COPY), repeat, &med_copy);
	set_ms(row, "fused", TT(T_FUSED), repeat, &med_fu);
	set_ms(row, "per_bank", TT(T_PB), repeat, &med_pb);
	set_ms(row, "proxy", TT(T_PX), repeat, &med_px);
	json_object_set_new(row, "fused_over_per_bank", json_real(med_fu > 0 ? med_pb / med_fu : 0));
	if (misses) {
		set_ms(row, "memcpy", TT(T_MC), repeat, &med_mc);
		set_ms(row, "linear", TT(T_LIN), repeat, &med_lin);
		json_object_set_new(row, "pct_of_linear", json_real(100.0 * med_lin / med_all));
		set_gbps(row, "copy", bytes, med_copy, med_lin);
		set_gbps(row, "fused", bytes, med_fu, med_lin);
		set_gbps(row, "per_bank", bytes, med_pb, med_lin);
		set_gbps(row, "proxy", bytes, med_px, med_lin);
		set_gbps(row, "memcpy", bytes, med_mc, med_lin);
		json_object_set_new(row, "linear_GBps", json_real(bytes / (med_lin * 1e-3) / 1e9));
	} else {
		json_object_set_new(row, "memcpy_ms", json_null());
		json_object_set_new(row, "linear_ms", json_null());
	}
#undef TT
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
	ftmissing_proxy_destroy(b->proxy);
	cudaFree(b->scratch);
	cudaFree(b->d_ids);
	cudaFree(b->d_ids0);
	cudaFree(b->d_warm);
	cudaFree(b->d_bids);
	for (int k = 0; k < ENS_K; k++)
		ftsc_dev_destroy(&b->bb[k]);
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
	for (int k = 0; k < ENS_K; k++) {
		ftsc_dev_destroy(&b->bb[k]);
		if (!r && (e = ftsc_dev_create(&b->bb[k], m->layers, m->experts, C)))
			r = cuerr(e);
	}
	if (!r && ((e = ftsc_dev_create(&b->st, m->layers, m->experts, C)) ||
		   (e = ftsc_dev_create(&b->init, m->layers, m->experts, C)) ||
		   (e = ftsc_dev_upload(&b->init, sc.slot_for_id, sc.id_of_slot, sc.usage, sc.last_seen, sc.step,
					b->s))))
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
	    (e = cudaMalloc((void **)&b.d_warm, (size_t)nmax * 4)) ||
	    (e = cudaMalloc((void **)&b.d_bids, (size_t)nmax * 4 * ENS_K)))
		goto cuda_fail;
	b.nmax = nmax;
	for (int i = 0; i < 3; i++)
		if ((e = cudaEventCreate(&b.ev[i])))
			goto cuda_fail;
	if ((e = ftmissing_proxy_create(&b.proxy, b.cm, E)))
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
		json_object_set_new(res, "path", json_string(ftmissing_is_fused(b.cm) ? "fused" : "per_bank"));
		json_object_set_new(res, "copy", json_string(o->copy == FTCC_COPY_PROXY ? "proxy" : "fused"));
		json_object_set_new(res, "proxy_split_bytes", json_integer(FTMISSING_PROXY_SPLIT_BYTES));
		json_object_set_new(res, "proxy_signal",
				    json_string(ftmissing_proxy_signal(b.proxy) == FTMISSING_SIGNAL_MEMOP ? "memop" : "kernel"));
		json_array_append_new(results, res);
		json_t *rows = json_object_get(res, "rows");
		for (int bi = 0; bi < o->nbatch; bi++)
			for (int mi = 0; mi < o->nmiss; mi++) {
				json_t *row = json_object();
				json_array_append_new(rows, row);
				r = run_config(&b, (int)slots[si], o->batch[bi], o->miss[mi], o->repeat, o->copy, row);
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
	if (!ftmissing_proxy_usable()) { /* every row times the proxy (a column, or the default path) */
		ftreport_note(rep, "CUDA_DEVICE_MAX_CONNECTIONS=1 puts every stream on one hardware queue, where the "
				   "copy-engine proxy cannot run: unset it or set it to 2 or more");
		return -EOPNOTSUPP;
	}
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
