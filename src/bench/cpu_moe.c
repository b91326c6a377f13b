#include "bench/cpu_moe.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/timeutil.h"

#define GIB (1024ull * 1024ull * 1024ull)

struct ftmoebench {
	struct ftmoebench_cfg cfg;
	struct ftpool *pool;
	struct ftcpumoe *x;
	unsigned cpu_isa;
	int nbanks;
	struct ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
	uint8_t *bank[FTFMT_MAX_BANKS];
	size_t bank_bytes[FTFMT_MAX_BANKS];
	int es;                 /* synthetic experts */
	size_t eb;              /* expert bytes */
	int *perm;              /* [es] */
	long pos;
	float *xin, *out, *out2, *w;
	int32_t *ids;
	uint64_t seed;
	uint64_t rng;           /* FTMOEBENCH_ROUTE_MODEL's draws */
	int batch;              /* tokens per step (<= cfg.batch) */
};

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- bank fill: random codes, realistic never-zero scales (see header) ---- */
struct fill_job {
	struct ftmoebench *b;
	int bank;
};

void ftmoebench_fill(enum ftfmt_id f, const struct ftfmt_bank_shape *sh, uint8_t *p, size_t n, uint64_t s)
{
	switch (sh->dtype) {
	case FTFMT_DT_BF16: { /* |w| in [2^-8, 2^-4), random sign: bf16 weights and biases */
		for (size_t i = 0; i + 1 < n; i += 2) {
			uint64_t r = mix(&s);
			unsigned v = (unsigned)(r & 0x807f) | (unsigned)(119 + (r >> 16) % 4) << 7;
			p[i] = (uint8_t)v;
			p[i + 1] = (uint8_t)(v >> 8);
		}
		break;
	}
	case FTFMT_DT_FP16: /* nvfp4 per-row global: amax/(6*448)-like, 2^-12 .. 2^-10 */
		for (size_t i = 0; i + 1 < n; i += 2) {
			uint64_t r = mix(&s);
			unsigned v = (unsigned)(3 + r % 3) << 10 | (unsigned)(r >> 8 & 1023);
			p[i] = (uint8_t)v;
			p[i + 1] = (uint8_t)(v >> 8);
		}
		break;
	case FTFMT_DT_FP8_E4M3: /* block scales 2^0 .. 2^7 (e4m3 exponent 7..14) */
		for (size_t i = 0; i < n; i++) {
			uint64_t r = mix(&s);
			p[i] = (uint8_t)((7 + r % 8) << 3 | (r >> 8 & 7));
			if (p[i] == 0x7f)
				p[i] = 0x7e;
		}
		break;
	case FTFMT_DT_E8M0: /* 2^-10 .. 2^-5 */
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)(117 + mix(&s) % 6);
		break;
	default:
		for (size_t i = 0; i < n; i += 8) {
			uint64_t r = mix(&s);
			memcpy(p + i, &r, n - i < 8 ? n - i : 8);
		}
		if (f == FTFMT_Q4_0) /* 18-byte blocks: fp16 d in 2^-9 .. 2^-6 (p starts on a block) */
			for (size_t i = 0; i + 2 <= n; i += 18) {
				uint64_t r = mix(&s);
				unsigned v = (unsigned)(6 + r % 4) << 10 | (unsigned)(r >> 8 & 1023);
				p[i] = (uint8_t)v;
				p[i + 1] = (uint8_t)(v >> 8);
			}
		break;
	}
}

static void fill_work(void *arg, int tid, int n)
{
	struct fill_job *j = arg;
	struct ftmoebench *b = j->b;
	size_t total = b->bank_bytes[j->bank];
	size_t unit = b->cfg.format == FTFMT_Q4_0 ? 18 * 4096 : 4096; /* q4_0: whole blocks */
	size_t units = (total + unit - 1) / unit;
	size_t a = units * (size_t)tid / (size_t)n * unit, e = units * (size_t)(tid + 1) / (size_t)n * unit;
	if (e > total)
		e = total;
	if (a >= e)
		return;
	ftmoebench_fill(b->cfg.format, &b->sh[j->bank], b->bank[j->bank] + a, e - a,
		   b->seed * 1000003u + (uint64_t)j->bank * 7919u + a);
}

int ftmoebench_create(const struct ftmoebench_cfg *cfg, const struct ftcpu_info *ci, struct ftmoebench **out)
{
	if (!cfg || !ci || !out || cfg->batch < 1 || cfg->batch > FTCPUMOE_MAX_BATCH || cfg->topk < 1 ||
	    cfg->topk > FTCPUMOE_MAX_TOPK || cfg->experts < 1 || cfg->experts < cfg->topk ||
	    (cfg->routing != FTMOEBENCH_ROUTE_DISTINCT && cfg->routing != FTMOEBENCH_ROUTE_MODEL))
		return -EINVAL;
	const struct ftfmt *f = ftfmt_get(cfg->format);
	if (!f || !f->cpu_path)
		return -EINVAL;
	struct ftmoebench *b = calloc(1, sizeof *b);
	if (!b)
		return -ENOMEM;
	int r = -ENOMEM;
	b->cfg = *cfg;
	b->cpu_isa = ci->isa;
	b->seed = cfg->seed ? cfg->seed : 0x5eed;
	b->rng = b->seed ^ 0x726f757465ull;
	b->batch = cfg->batch;
	b->nbanks = ftfmt_banks(f, cfg->hidden, cfg->inter, b->sh);
	if (b->nbanks < 0) {
		r = b->nbanks;
		goto fail;
	}
	b->eb = ftfmt_expert_bytes(f, cfg->hidden, cfg->inter);
	size_t ws = cfg->working_set_min ? cfg->working_set_min : 4 * ci->llc_bytes;
	if (!cfg->working_set_min && ws < GIB)
		ws = GIB;
	long es = (long)((ws + b->eb - 1) / b->eb);
	long need = cfg->routing == FTMOEBENCH_ROUTE_MODEL ? cfg->experts : (long)cfg->topk * cfg->batch;
	if (es < need)
		es = need;
	/* more synthetic experts than the model has where its E does not cover 4x LLC: the
	 * bandwidth depends on the expert's shape, not on how many the model has */
	size_t avail = ftcpu_mem_available();
	while (avail && es > need && (size_t)es * b->eb > avail / 4)
		es--;
	b->es = (int)es;
	r = cfg->cpus ? ftpool_create_on(cfg->cpus, cfg->ncpus, &b->pool)
		      : ftpool_create(ci, cfg->threads, cfg->numa_node, &b->pool);
	if (r < 0)
		goto fail;
	ftpool_pin_caller(b->pool);
	r = -ENOMEM;
	for (int i = 0; i < b->nbanks; i++) {
		b->bank_bytes[i] = b->sh[i].expert_bytes * (size_t)b->es;
		size_t len = (b->bank_bytes[i] + 4095) / 4096 * 4096;
		b->bank[i] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b->bank[i] == MAP_FAILED) {
			b->bank[i] = NULL;
			goto fail;
		}
		madvise(b->bank[i], len, MADV_HUGEPAGE);
		struct fill_job j = {b, i};
		ftpool_run(b->pool, fill_work, &j);
	}
	b->perm = calloc((size_t)b->es, sizeof *b->perm);
	size_t nx = (size_t)cfg->batch * (size_t)cfg->hidden;
	b->xin = calloc(nx, sizeof(float));
	b->out = calloc(nx, sizeof(float));
	b->out2 = calloc(nx, sizeof(float));
	b->w = calloc((size_t)cfg->batch * (size_t)cfg->topk, sizeof(float));
	b->ids = calloc((size_t)cfg->batch * (size_t)cfg->topk, sizeof(int32_t));
	if (!b->perm || !b->xin || !b->out || !b->out2 || !b->w || !b->ids)
		goto fail;
	uint64_t s = b->seed;
	for (int i = 0; i < b->es; i++)
		b->perm[i] = i;
	for (int i = b->es - 1; i > 0; i--) {
		int k = (int)(mix(&s) % (uint64_t)(i + 1)), t = b->perm[i];
		b->perm[i] = b->perm[k];
		b->perm[k] = t;
	}
	for (size_t i = 0; i < nx; i++) /* ~N(0,1)-like, never zero */
		b->xin[i] = (float)((double)(mix(&s) >> 11) / 9007199254740992.0 * 3.0 - 1.5) + 1e-3f;
	const void *ptrs[FTFMT_MAX_BANKS];
	for (int i = 0; i < b->nbanks; i++)
		ptrs[i] = b->bank[i];
	struct ftcpumoe_cfg xc = {.format = cfg->format, .hidden = cfg->hidden, .inter = cfg->inter,
				.experts = b->es, .layers = 1, .banks = ptrs, .act = cfg->act,
				.swiglu_limit = cfg->swiglu_limit, .max_batch = cfg->batch,
				.max_topk = cfg->topk, .isa = FTCPUMOE_ISA_AUTO, .pool = b->pool, .cpu = ci,
				.tune = cfg->tune};
	r = ftcpumoe_create(&xc, &b->x);
	if (r < 0)
		goto fail;
	*out = b;
	return 0;
fail:
	ftmoebench_free(b);
	return r;
}

void ftmoebench_free(struct ftmoebench *b)
{
	if (!b)
		return;
	ftcpumoe_free(b->x);
	ftpool_free(b->pool);
	for (int i = 0; i < b->nbanks; i++)
		if (b->bank[i])
			munmap(b->bank[i], (b->bank_bytes[i] + 4095) / 4096 * 4096);
	free(b->perm);
	free(b->xin);
	free(b->out);
	free(b->out2);
	free(b->w);
	free(b->ids);
	free(b);
}

int ftmoebench_synth_experts(const struct ftmoebench *b) { return b->es; }
size_t ftmoebench_expert_bytes(const struct ftmoebench *b) { return b->eb; }
size_t ftmoebench_working_set_bytes(const struct ftmoebench *b) { return b->eb * (size_t)b->es; }
int ftmoebench_threads(const struct ftmoebench *b) { return ftpool_size(b->pool); }
struct ftcpumoe *ftmoebench_moe(struct ftmoebench *b) { return b->x; }
struct ftpool *ftmoebench_pool(struct ftmoebench *b) { return b->pool; }

int ftmoebench_isa_list(const char *spec, const struct ftcpumoe_tune *tune, enum ftfmt_id f, unsigned cpu_isa,
		   enum ftcpumoe_isa *out, int max, char *why, size_t whylen)
{
	int n = 0;
	enum ftcpumoe_isa forced = tune ? (enum ftcpumoe_isa)tune->isa : FTCPUMOE_ISA_AUTO;
	if (!spec || !strcmp(spec, "auto")) {
		enum ftcpumoe_isa t;
		int r = ftcpumoe_isa_resolve(forced, f, cpu_isa, &t);
		if (r < 0) {
			snprintf(why, whylen, "isa=%s: %s", ftcpumoe_isa_name(forced),
				 r == -ENOTSUP ? "this CPU lacks that ISA" : "unknown tier");
			return r;
		}
		out[n++] = t;
		return n;
	}
	if (!strcmp(spec, "all")) {
		for (int t = 0; t < FTCPUMOE_ISA_COUNT && n < max; t++)
			if (ftcpumoe_isa_supported((enum ftcpumoe_isa)t, cpu_isa))
				out[n++] = (enum ftcpumoe_isa)t;
		return n;
	}
	char buf[256];
	snprintf(buf, sizeof buf, "%s", spec);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		enum ftcpumoe_isa t;
		if (ftcpumoe_isa_lookup(tok, &t) < 0) {
			snprintf(why, whylen, "unknown ISA tier '%s' (scalar, avx2, avx512, avx512vnni, avx512bf16)", tok);
			return -EINVAL;
		}
		if (t == FTCPUMOE_ISA_AUTO && ftcpumoe_isa_resolve(forced, f, cpu_isa, &t) < 0) {
			snprintf(why, whylen, "isa=%s is not usable here", ftcpumoe_isa_name(forced));
			return -EINVAL;
		}
		if (!ftcpumoe_isa_supported(t, cpu_isa)) {
			snprintf(why, whylen, "ISA tier '%s' is not supported by this CPU", tok);
			return -ENOTSUP;
		}
		if (n < max)
			out[n++] = t;
	}
	if (!n) {
		snprintf(why, whylen, "empty ISA list");
		return -EINVAL;
	}
	return n;
}

/* Routes of the next step (b->batch tokens, cfg.routing); returns the distinct experts it reads. */
static int next_routes(struct ftmoebench *b)
{
	int B = b->batch, K = b->cfg.topk, E = b->cfg.experts, uniq = 0;
	for (int t = 0; t < B; t++)
		for (int k = 0; k < K; k++) {
			long at = (long)t * K + k;
			if (b->cfg.routing == FTMOEBENCH_ROUTE_MODEL) { /* k-th distinct pick of E for token t */
				int dup;
				do {
					at = (long)(mix(&b->rng) % (uint64_t)E);
					dup = 0;
					for (int j = 0; j < k && !dup; j++)
						dup = b->ids[t * K + j] == b->perm[(b->pos + at) % b->es];
				} while (dup);
			}
			b->ids[t * K + k] = b->perm[(b->pos + at) % b->es];
			b->w[t * K + k] = 1.0f / (float)(k + 1);
		}
	for (int i = 0; i < B * K; i++) {
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = b->ids[j] == b->ids[i];
		uniq += !seen;
	}
	b->pos = (b->pos + (b->cfg.routing == FTMOEBENCH_ROUTE_MODEL ? (long)E : (long)B * K)) % b->es;
	return uniq;
}

int ftmoebench_set_batch(struct ftmoebench *b, int batch)
{
	if (!b || batch < 1 || batch > b->cfg.batch)
		return -EINVAL;
	b->batch = batch;
	return 0;
}

static int set_isa(struct ftmoebench *b, enum ftcpumoe_isa isa, enum ftcpumoe_isa *used)
{
	int r = ftcpumoe_set_isa(b->x, isa);
	if (r < 0)
		return r;
	if (used)
		*used = ftcpumoe_isa(b->x);
	return 0;
}

int ftmoebench_time(struct ftmoebench *b, enum ftcpumoe_isa isa, int warmup, int iters, double *step_s,
	       double *step_bytes, enum ftcpumoe_isa *used)
{
	if (!b || iters < 1 || warmup < 0 || !step_s)
		return -EINVAL;
	int r = set_isa(b, isa, used);
	if (r < 0)
		return r;
	int B = b->batch, K = b->cfg.topk;
	for (int i = 0; i < warmup + iters; i++) {
		int uniq = next_routes(b);
		double t0 = fttime_now_s();
		r = ftcpumoe_forward(b->x, 0, B, K, b->xin, b->ids, b->w, b->out);
		double t = fttime_now_s() - t0;
		if (r < 0)
			return r;
		if (i >= warmup) {
			step_s[i - warmup] = t;
			if (step_bytes)
				step_bytes[i - warmup] = (double)uniq * (double)b->eb;
		}
	}
	return 0;
}

int ftmoebench_run_until(struct ftmoebench *b, enum ftcpumoe_isa isa, const atomic_int *stop, double max_s,
		    double *bytes, double *secs)
{
	if (!b || !bytes || !secs)
		return -EINVAL;
	int r = set_isa(b, isa, NULL);
	if (r < 0)
		return r;
	double t0 = fttime_now_s(), t = t0, sum = 0;
	while (!(stop && atomic_load(stop)) && !(max_s > 0 && t - t0 >= max_s)) {
		int uniq = next_routes(b);
		r = ftcpumoe_forward(b->x, 0, b->batch, b->cfg.topk, b->xin, b->ids, b->w, b->out);
		if (r < 0)
			return r;
		sum += (double)uniq * (double)b->eb;
		t = fttime_now_s();
	}
	*bytes = sum;
	*secs = t - t0;
	return 0;
}

int ftmoebench_verify(struct ftmoebench *b, enum ftcpumoe_isa isa, double *rel)
{
	if (!b || !rel)
		return -EINVAL;
	enum ftcpumoe_isa keep = ftcpumoe_isa(b->x);
	int B = b->batch, K = b->cfg.topk;
	next_routes(b);
	int r = ftcpumoe_set_isa(b->x, FTCPUMOE_ISA_SCALAR);
	if (!r)
		r = ftcpumoe_forward(b->x, 0, B, K, b->xin, b->ids, b->w, b->out2);
	if (!r)
		r = ftcpumoe_set_isa(b->x, isa);
	if (!r)
		r = ftcpumoe_forward(b->x, 0, B, K, b->xin, b->ids, b->w, b->out);
	ftcpumoe_set_isa(b->x, keep);
	if (r < 0)
		return r;
	double num = 0, den = 0;
	size_t n = (size_t)B * (size_t)b->cfg.hidden;
	for (size_t i = 0; i < n; i++) {
		double d = (double)b->out[i] - b->out2[i];
		num += d * d;
		den += (double)b->out2[i] * b->out2[i];
	}
	*rel = isfinite(num) && den > 0 ? sqrt(num / den) : INFINITY;
	return 0;
}
