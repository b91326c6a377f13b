/* The CPU MoE executor (reference §6): routes grouped by expert, two passes on the pool. */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "moe/cpu/cpumoe.h"
#include "moe/cpu/kern.h"
#include "util/timeutil.h"

/* Rows per kernel call: bounds the per-worker scratch (FTCMOE_MAX_BATCH * 2 * CHUNK floats). */
#define CHUNK 64
/* Vector tiers read K in groups of this many elements. */
#define KALIGN 64
#define MAX_SLOTS (FTCMOE_MAX_BATCH * FTCMOE_MAX_TOPK)
/* Dynamic schedule: weight bytes per work item. Pass 1's is the largest power of two from
 * DYN_ITEM_MIN_KB to DYN_ITEM_MAX_KB that leaves every worker at least DYN_ITEMS_PER_WORKER
 * pass-1 items of a batch-1 step (max_topk experts); pass 2's is DYN_ITEM2_KB.
 * FREETOKEN_CPU_MOE_ITEM_KB (A/B runs) sets both, FREETOKEN_CPU_MOE_ITEM2_KB pass 2's apart.
 * Each item costs ~1 us of claiming and restarting its streams, and too few leave the workers
 * finishing apart. H200 host, 16 workers, points of the read ceiling (bench/RESULTS.md
 * sessions 5 and 6): pass 2 at 64 KiB -5.1 against 128 (q4_0). Pass 1 against 256 KiB, pass 2
 * at 128: q4_0 (885 KiB of pass 1 per worker) 128 KiB -0.6, 384 -4.1, 512 -8.5; nvfp4 (2.6 MiB)
 * 128 -1.3, 512 +1.0; bf16 (3.1 MiB) 512 +4.6. */
#define DYN_ITEM_MIN_KB 128
#define DYN_ITEM_MAX_KB 512
#define DYN_ITEMS_PER_WORKER 3
#define DYN_ITEM2_KB 128
/* ... and of the mxfp4_triton K split, pass 1 (each call of its kernel costs a pass over N
 * partial sums; H200 host A/B: 512 KiB +2.1 points of the read ceiling over 1 MiB, 256 KiB
 * -1.8) and pass 2 (those items end the step: 128 KiB +3.9 over 1 MiB, 64 KiB -2.0, 256 KiB
 * within noise); bench/RESULTS.md */
#define DYN_ITEM_T_KB 512
#define DYN_ITEM2_T_KB 128
/* The last group's pass-2 items are made this many times smaller, so that a step ends with
 * short items and the workers finish close together (FREETOKEN_CPU_MOE_TAIL_DIV=1..64 for A/B
 * runs; H200 host: 4 against 1 +0.5 to +1.1 points for q4_0, bf16, nvfp4, never lower; 8 no
 * better) */
#define DYN_TAIL_DIV 4
/* Pools smaller than this keep the static split by default (see ftcmoe_create) */
#define DYN_MIN_THREADS 8

/* Per-worker sums over traced steps (ns): start after the driver posted the run, in items,
 * spinning for a group's pass 1, from the last item to leaving the barrier, after it. */
struct wtrace {
	_Alignas(64) uint64_t wake, items, wait, idle, after, nitems;
	uint64_t end; /* this step: when the worker was done */
};

struct ftcmoe {
	struct ftcmoe_cfg cfg;
	const void **banks;           /* [layers * nbanks] */
	struct ftbank_shape shape[FT_MAX_BANKS];
	int nbanks;
	unsigned cpu_isa;
	enum ftcmoe_isa isa;
	const struct ftk_ops *ops;
	ftk_act_fn *vact;             /* the tier's vector activation, or NULL (scalar act) */
	int nthreads;
	size_t xq_stride, hq_stride;  /* prepared bytes per token / per slot */
	uint8_t *xq;                  /* [max_batch][xq_stride] */
	float *h;                     /* [max_batch * max_topk][I] */
	uint8_t *hq;                  /* [slots][hq_stride] */
	float *tmp;                   /* [threads][2][max_batch][2*CHUNK] */
	size_t tmp_stride;            /* floats per worker */
	float *part;                  /* K-split partials: [threads][3][part_cap][part_n] */
	long part_n;
	int part_cap;                 /* slots per partial buffer (>= max_batch) */
	/* this call */
	int layer, B, topk;
	const float *xin, *rw;
	float *out;
	int nuniq;
	int uniq_e[MAX_SLOTS];
	int uniq_start[MAX_SLOTS + 1];
	int slot_of[MAX_SLOTS];       /* slots (b * topk + k) grouped by expert */
	int *uidx;                    /* [E]: expert -> its uniq index during a call, else -1 */
	/* slot groups of this call: an expert's slots, at most max_batch per group */
	int ngrp;
	int grp_u[MAX_SLOTS], grp_s0[MAX_SLOTS], grp_nb[MAX_SLOTS];
	int flat;                     /* row-major split: 1 flattened over (group, row), 0 per row */
	float *pout;                  /* flattened pass 2: per-worker partial out [threads][max_batch][H] */
	/* In the dynamic schedule each worker zeroes only the 16-row chunks of its pout that its
	 * pass-2 items write, marks them in ptouch ([threads][pchunk_stride], [max_batch][nchunk]
	 * used), and the reduction adds only marked chunks: at top-8 a worker writes about half of
	 * its pout, so the zeroing (lines the other workers read in the last reduction) and the
	 * remote reads halve. Against zeroing and adding every pout whole: q4_0 +1.7 points of the
	 * read ceiling, bf16 +1.6, nvfp4 0.0 (H200 host, bench/RESULTS.md session 6). */
	uint8_t *ptouch;
	size_t pchunk_stride;
	long nchunk;
	int lean_ok;                  /* FREETOKEN_CPU_MOE_LEAN unset or 1 (read at create) */
	int lean;                     /* this call: batch 1, x prepared per worker (no barrier) */
	int lean_h;                   /* this call: also h per worker, the slots it reads in pass 2 */
	uint8_t *xpriv;               /* lean: per-worker prepared x [threads][xq_stride] */
	uint8_t *hpriv;               /* lean: per-worker prepared h [threads][max_topk][hq_stride] */
	/* dynamic schedule (row-major formats; FREETOKEN_CPU_MOE_SCHED=static turns it off) */
	int dyn_ok;                   /* read at create */
	int dyn;                      /* this call */
	long ch1, ch2;                /* rows per work item: pass 1 (gate+up pairs), pass 2 (down) */
	int n1, n2, nitems;           /* items per group in pass 1 / pass 2; items of this call */
	long ch2f;                    /* pass 2 of the last group: finer items (the step's tail) */
	int n2f;
	int dyn_t;                    /* this call: dynamic K split (mxfp4_triton, one round) */
	long ch1t, ch2t;              /* K split: bank rows per item (multiples of 16) */
	int n1t, n2t;
	uint8_t *touch;               /* K split: [threads][part_cap] partial written this call */
	uint8_t *hslice;              /* K split: prepared h slices [threads][part_cap][hq_stride] */
	/* FREETOKEN_CPU_MOE_TRACE=1 (read at create): where the dynamic steps' time goes */
	int trace;
	uint64_t t_post;              /* this call: when the driver started the run */
	struct wtrace *tr;            /* [threads] */
	uint64_t tr_steps, tr_step_ns, tr_last_ns; /* tr_last_ns: sum of (last worker done - post) */
	_Alignas(64) atomic_int next; /* next unclaimed item */
	/* pass-1 items finished per group; row-major: n1 + 1 once h is prepared, K split: n1t */
	_Alignas(64) atomic_int done1[MAX_SLOTS];
};

static void free_aligned(void *p)
{
	free(p);
}

static void *alloc_aligned(size_t n)
{
	n = (n + 63) / 64 * 64;
	void *p = aligned_alloc(64, n ? n : 64);
	if (p)
		memset(p, 0, n ? n : 64);
	return p;
}

/* Weight bytes of one row of K elements (row-major formats; scales not counted). */
static size_t wrow_bytes(enum ftfmt_id f, long K)
{
	switch (f) {
	case FTFMT_BF16: return (size_t)K * 2;
	case FTFMT_Q4_0: return (size_t)(K / 32) * 18;
	default: return (size_t)(K / 2);
	}
}

static int choose_ops(struct ftcmoe *x, enum ftcmoe_isa want)
{
	enum ftcmoe_isa isa;
	int r = ftcmoe_isa_resolve(want, x->cfg.format, x->cpu_isa, &isa);
	if (r < 0)
		return r;
	if (isa != FTCMOE_ISA_SCALAR && (x->cfg.hidden % KALIGN || x->cfg.inter % KALIGN)) {
		if (want != FTCMOE_ISA_AUTO)
			return -EINVAL; /* vector tiers need H and I multiples of 64 */
		isa = FTCMOE_ISA_SCALAR;
	}
	const struct ftk_ops *ops = ftk_select(isa, x->cfg.format, x->cpu_isa);
	if (!ops || (!ops->rows && !(ops->rows_t && x->part)))
		return -EINVAL;
	size_t xs = ops->xbytes ? ops->xbytes(x->cfg.hidden) : 0;
	size_t hs = ops->xbytes ? ops->xbytes(x->cfg.inter) : 0;
	if (xs > x->xq_stride || hs > x->hq_stride)
		return -EINVAL; /* scratch sized at create for the largest layout */
	x->isa = isa;
	x->ops = ops;
	x->vact = isa >= FTCMOE_ISA_AVX512 ? ftk_act_avx512 : NULL;
	return 0;
}

/* ---------------------------------------------------------------- FREETOKEN_CPU_MOE_* */

/* The A/B settings of cpumoe.h, read once per create. */
struct env {
	int sched;      /* SCHED: -1 by pool size, 0 static, 1 dynamic */
	int split_rows; /* SPLIT=rows */
	int lean;       /* LEAN (1) */
	int streams;    /* STREAMS: 0 each kernel's choice, 1, 2 */
	int mxpf;       /* MXPF: 0 rows, 1 seq, 2 none */
	int pf_dist;    /* PF_DIST bytes */
	int mx_pf_dist; /* MX_PF_DIST bytes */
	long item_kb;   /* ITEM_KB (0: each split's default) */
	long item2_kb;  /* ITEM2_KB: pass-2 items (0: the split's default) */
	int tail_div;   /* TAIL_DIV (0: the split's default) */
	int trace;      /* TRACE */
	int pf_far;     /* PF_FAR bytes */
	int rowblk;     /* ROWBLK: 1 or 4 rows per W4A8 block at batch 1, 0 each format's */
};

/* A word-valued variable: *out = the index of its value in words ("a|b|c"), unchanged when
 * unset. -EINVAL with why when the value is not one of them. */
static int env_word(const char *var, const char *words, int *out, char *why, size_t whylen)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	int i = 0;
	for (const char *w = words; *w; i++) {
		size_t n = strcspn(w, "|");
		if (strlen(v) == n && !strncmp(v, w, n)) {
			*out = i;
			return 0;
		}
		w += n + (w[n] == '|');
	}
	if (why)
		snprintf(why, whylen, "%s='%s': expected one of %s", var, v, words);
	return -EINVAL;
}

/* An integer variable in [lo, hi]: *out, unchanged when unset; -EINVAL with why otherwise. */
static int env_long(const char *var, long lo, long hi, long *out, char *why, size_t whylen)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (!*v || *end || errno || n < lo || n > hi) {
		if (why)
			snprintf(why, whylen, "%s='%s': expected an integer from %ld to %ld", var, v, lo, hi);
		return -EINVAL;
	}
	*out = n;
	return 0;
}

/* Every FREETOKEN_CPU_MOE_* name this build reads (ISA: isa.c). A name not among them (a typo,
 * or an A/B switch measured and removed) is refused, not ignored: a run that sets it would
 * otherwise measure the defaults under its name. */
static const char *const env_names = "ISA|SCHED|SPLIT|LEAN|STREAMS|MXPF|SPIN|TRACE|ROWBLK|PF_DIST|"
				     "MX_PF_DIST|ITEM_KB|ITEM2_KB|TAIL_DIV|PF_FAR";

extern char **environ;

static int env_unknown(char *why, size_t whylen)
{
	static const char pre[] = "FREETOKEN_CPU_MOE_";
	for (char **v = environ; v && *v; v++) {
		if (strncmp(*v, pre, sizeof pre - 1))
			continue;
		const char *name = *v + sizeof pre - 1;
		size_t n = strcspn(name, "=");
		const char *w = env_names;
		for (; *w; w += strcspn(w, "|") + (w[strcspn(w, "|")] == '|'))
			if (strcspn(w, "|") == n && !strncmp(w, name, n))
				break;
		if (!*w) {
			if (why)
				snprintf(why, whylen, "%.*s: not a setting of this build (FREETOKEN_CPU_MOE_ + one of %s)",
					 (int)(sizeof pre - 1 + n), *v, env_names);
			return -EINVAL;
		}
	}
	return 0;
}

static int env_read(struct env *e, char *why, size_t whylen)
{
	int sched = -1, split = 1, lean = 1, streams = 0, mxpf = 0, spin = 0, trace = 0;
	int rowblk = -1;
	long pf = FTK_PF_DIST, mxd = FTK_MX_PF_DIST, kb = 0, kb2 = 0, tail = 0;
	long far = FTK_PF_FAR;
	int r = env_unknown(why, whylen);
	if (r)
		return r;
	/* SPIN is the pool's (pool.c), checked here so that a bad value is named */
	if ((r = env_word("FREETOKEN_CPU_MOE_SCHED", "static|dynamic", &sched, why, whylen)) ||
	    (r = env_word("FREETOKEN_CPU_MOE_SPLIT", "rows|flat", &split, why, whylen)) ||
	    (r = env_word("FREETOKEN_CPU_MOE_LEAN", "0|1", &lean, why, whylen)) ||
	    (r = env_word("FREETOKEN_CPU_MOE_STREAMS", "0|1|2", &streams, why, whylen)) ||
	    (r = env_word("FREETOKEN_CPU_MOE_MXPF", "rows|seq|none", &mxpf, why, whylen)) ||
	    (r = env_word("FREETOKEN_CPU_MOE_SPIN", "pause|busy", &spin, why, whylen)) ||
	    (r = env_word("FREETOKEN_CPU_MOE_TRACE", "0|1", &trace, why, whylen)) ||
	    (r = env_word("FREETOKEN_CPU_MOE_ROWBLK", "1|4", &rowblk, why, whylen)) ||
	    (r = env_long("FREETOKEN_CPU_MOE_PF_DIST", 0, 65536, &pf, why, whylen)) ||
	    (r = env_long("FREETOKEN_CPU_MOE_MX_PF_DIST", 64, 8192, &mxd, why, whylen)) ||
	    (r = env_long("FREETOKEN_CPU_MOE_ITEM_KB", 16, 65536, &kb, why, whylen)) ||
	    (r = env_long("FREETOKEN_CPU_MOE_ITEM2_KB", 16, 65536, &kb2, why, whylen)) ||
	    (r = env_long("FREETOKEN_CPU_MOE_TAIL_DIV", 0, 64, &tail, why, whylen)) ||
	    (r = env_long("FREETOKEN_CPU_MOE_PF_FAR", 0, 65536, &far, why, whylen)))
		return r;
	*e = (struct env){.sched = sched, .split_rows = split == 0, .lean = lean, .streams = streams,
			  .mxpf = mxpf, .pf_dist = (int)pf, .mx_pf_dist = (int)(mxd / 64 * 64), .item_kb = kb, .item2_kb = kb2,
			  .tail_div = (int)tail, .trace = trace,
			  .pf_far = (int)far, .rowblk = rowblk < 0 ? 0 : rowblk ? 4 : 1};
	return 0;
}

int ftcmoe_env_check(char *why, size_t whylen)
{
	struct env e;
	return env_read(&e, why, whylen);
}

int ftcmoe_create(const struct ftcmoe_cfg *cfg, struct ftcmoe **out)
{
	if (!cfg || !out || !cfg->banks || !cfg->pool || !cfg->cpu || cfg->layers < 1 ||
	    cfg->experts < 1 || cfg->max_batch < 1 || cfg->max_batch > FTCMOE_MAX_BATCH ||
	    cfg->max_topk < 1 || cfg->max_topk > FTCMOE_MAX_TOPK)
		return -EINVAL;
	const struct ftformat *f = ftfmt_get(cfg->format);
	struct env env;
	if (!f || !f->cpu_path || env_read(&env, NULL, 0) < 0)
		return -EINVAL;
	/* process-wide kernel settings (A/B runs) */
	ftk_mx_seq_prefetch = env.mxpf;
	ftk_streams = env.streams;
	ftk_pf_dist = env.pf_dist;
	ftk_pf_far = env.pf_far;
	ftk_rowblk = env.rowblk;
	ftk_mx_pf_dist = env.mx_pf_dist;
	struct ftcmoe *x = alloc_aligned(sizeof *x); /* 64-byte aligned members */
	if (!x)
		return -ENOMEM;
	int r = -ENOMEM;
	x->cfg = *cfg;
	x->nbanks = ftfmt_banks(f, cfg->hidden, cfg->inter, x->shape);
	if (x->nbanks < 0) {
		r = x->nbanks;
		goto fail;
	}
	x->banks = calloc((size_t)cfg->layers * (size_t)x->nbanks, sizeof *x->banks);
	if (!x->banks)
		goto fail;
	for (int i = 0; i < cfg->layers * x->nbanks; i++) {
		if (!cfg->banks[i]) {
			r = -EINVAL;
			goto fail;
		}
		x->banks[i] = cfg->banks[i];
	}
	x->cfg.banks = NULL;
	x->cfg.cpu = NULL;
	x->cpu_isa = cfg->cpu->isa;
	x->uidx = malloc((size_t)cfg->experts * sizeof *x->uidx);
	if (!x->uidx)
		goto fail;
	for (int e = 0; e < cfg->experts; e++)
		x->uidx[e] = -1;
	x->nthreads = ftpool_size(cfg->pool);
	/* scratch for the largest prepared layout of any tier this CPU can run */
	for (int t = 0; t < FTCMOE_ISA_COUNT; t++) {
		if (!ftcmoe_isa_supported((enum ftcmoe_isa)t, x->cpu_isa))
			continue;
		const struct ftk_ops *o = ftk_select(t, cfg->format, x->cpu_isa);
		if (o && o->xbytes) {
			size_t a = (o->xbytes(cfg->hidden) + 63) / 64 * 64;
			size_t b = (o->xbytes(cfg->inter) + 63) / 64 * 64;
			if (a > x->xq_stride)
				x->xq_stride = a;
			if (b > x->hq_stride)
				x->hq_stride = b;
		}
	}
	size_t slots = (size_t)cfg->max_batch * (size_t)cfg->max_topk;
	x->tmp_stride = (size_t)2 * cfg->max_batch * 2 * CHUNK;
	x->xq = alloc_aligned((size_t)cfg->max_batch * x->xq_stride);
	x->h = alloc_aligned(slots * (size_t)cfg->inter * sizeof(float));
	x->hq = alloc_aligned(slots * x->hq_stride);
	x->tmp = alloc_aligned((size_t)x->nthreads * x->tmp_stride * sizeof(float));
	if (!x->xq || !x->h || !x->hq || !x->tmp)
		goto fail;
	x->pout = alloc_aligned((size_t)x->nthreads * (size_t)cfg->max_batch * (size_t)cfg->hidden * sizeof(float));
	x->nchunk = (cfg->hidden + 15) / 16;
	x->pchunk_stride = ((size_t)cfg->max_batch * (size_t)x->nchunk + 63) / 64 * 64;
	x->ptouch = alloc_aligned((size_t)x->nthreads * x->pchunk_stride);
	if (!x->pout || !x->ptouch)
		goto fail;
	{
		/* dynamic by default from DYN_MIN_THREADS workers (measured: +15..+28 points of the
		 * read ceiling on 16 and 32 cores, -5..-20 on a 2-core box) */
		x->flat = !env.split_rows;
		x->lean_ok = env.lean;
		x->dyn_ok = env.sched >= 0 ? env.sched : x->nthreads >= DYN_MIN_THREADS;
		size_t r1 = 2 * wrow_bytes(cfg->format, cfg->hidden), r2 = wrow_bytes(cfg->format, cfg->inter);
		size_t item = (size_t)env.item_kb * 1024;
		size_t per = (size_t)cfg->max_topk * r1 * (size_t)cfg->inter / (size_t)x->nthreads;
		if (!item)
			for (item = DYN_ITEM_MIN_KB * 1024;
			     item < DYN_ITEM_MAX_KB * 1024 && per / (2 * item) >= DYN_ITEMS_PER_WORKER;)
				item *= 2;
		size_t item2 = env.item2_kb ? (size_t)env.item2_kb * 1024 : env.item_kb ? item : DYN_ITEM2_KB * 1024;
		x->ch1 = r1 ? (long)(item / r1) : cfg->inter;
		x->ch2 = r2 ? (long)(item2 / r2) : cfg->hidden;
		x->ch1 = x->ch1 < 8 ? 8 : x->ch1;
		x->ch2 = x->ch2 < 8 ? 8 : x->ch2;
		x->n1 = (int)((cfg->inter + x->ch1 - 1) / x->ch1);
		x->n2 = (int)((cfg->hidden + x->ch2 - 1) / x->ch2);
		x->ch2f = x->ch2 / (env.tail_div ? env.tail_div : DYN_TAIL_DIV);
		x->ch2f = x->ch2f < 8 ? 8 : x->ch2f;
		x->n2f = (int)((cfg->hidden + x->ch2f - 1) / x->ch2f);
	}
	x->trace = env.trace;
	x->tr = alloc_aligned((size_t)x->nthreads * sizeof *x->tr);
	if (!x->tr)
		goto fail;
	x->xpriv = alloc_aligned((size_t)x->nthreads * x->xq_stride);
	x->hpriv = alloc_aligned((size_t)x->nthreads * (size_t)cfg->max_topk * x->hq_stride);
	if (!x->xpriv || !x->hpriv)
		goto fail;
	if (cfg->format == FTFMT_MXFP4_TRITON) { /* transposed banks: workers split K (rows_t) */
		x->part_n = 2 * cfg->inter > cfg->hidden ? 2 * cfg->inter : cfg->hidden;
		x->part_n = (x->part_n + 15) / 16 * 16;
		/* a round of slot groups shares one barrier: up to part_cap slots (all routes of a
		 * small batch, e.g. gpt-oss top-4 at batch 1 in one round) */
		int cap = cfg->max_batch * cfg->max_topk;
		int lim = cfg->max_batch > 16 ? cfg->max_batch : 16;
		x->part_cap = cap < lim ? cap : lim;
		x->part = alloc_aligned((size_t)x->nthreads * 3 * (size_t)x->part_cap *
					(size_t)x->part_n * sizeof(float)); /* 2 partials + scratch */
		x->touch = alloc_aligned((size_t)x->nthreads * (size_t)x->part_cap);
		x->hslice = alloc_aligned((size_t)x->nthreads * (size_t)x->part_cap * x->hq_stride);
		if (!x->part || !x->touch || !x->hslice)
			goto fail;
		long item = (env.item_kb ? env.item_kb : DYN_ITEM_T_KB) * 1024;
		x->ch1t = item / (2 * cfg->inter) / 16 * 16;
		x->ch2t = (env.item2_kb ? env.item2_kb : DYN_ITEM2_T_KB) * 1024 / cfg->hidden / 16 * 16;
		x->ch1t = x->ch1t < 16 ? 16 : x->ch1t;
		x->ch2t = x->ch2t < 16 ? 16 : x->ch2t;
		x->n1t = (int)((cfg->hidden / 2 + x->ch1t - 1) / x->ch1t);
		x->n2t = (int)((cfg->inter / 2 + x->ch2t - 1) / x->ch2t);
	}
	r = choose_ops(x, cfg->isa);
	if (r < 0)
		goto fail;
	*out = x;
	return 0;
fail:
	ftcmoe_free(x);
	return r;
}

void ftcmoe_free(struct ftcmoe *x)
{
	if (!x)
		return;
	free(x->banks);
	free(x->uidx);
	free_aligned(x->xq);
	free_aligned(x->h);
	free_aligned(x->hq);
	free_aligned(x->tmp);
	free_aligned(x->part);
	free_aligned(x->touch);
	free_aligned(x->tr);
	free_aligned(x->hslice);
	free_aligned(x->pout);
	free_aligned(x->ptouch);
	free_aligned(x->xpriv);
	free_aligned(x->hpriv);
	free_aligned(x);
}

int ftcmoe_set_isa(struct ftcmoe *x, enum ftcmoe_isa isa)
{
	return choose_ops(x, isa);
}

enum ftcmoe_isa ftcmoe_isa(const struct ftcmoe *x)
{
	return x->isa;
}

/* ---------------------------------------------------------------- the two passes */

static inline float act(enum ftact a, float g, float u, float lim)
{
	switch (a) {
	case FTACT_SILU:
		return g / (1.0f + expf(-g)) * u;
	case FTACT_GELU:
		return 0.5f * g * (1.0f + erff(g * 0.70710678118654752f)) * u;
	case FTACT_GELU_TANH:
		return 0.5f * g * (1.0f + tanhf(0.79788456080286536f * (g + 0.044715f * g * g * g))) * u;
	case FTACT_SWIGLU_OAI:
		g = fminf(g, lim);
		u = fminf(fmaxf(u, -lim), lim);
		return g / (1.0f + expf(-1.702f * g)) * (u + 1.0f);
	}
	return 0;
}

/* The matrices of expert e in layer l: pass 1 (gate_up) or pass 2 (down). */
static void expert_mat(const struct ftcmoe *x, int layer, int e, int down, struct ftk_mat *m,
		       const uint16_t **bias)
{
	const void *const *bk = x->banks + (size_t)layer * x->nbanks;
#define BANK(i) ((const uint8_t *)bk[i] + (size_t)e * x->shape[i].expert_bytes)
	long H = x->cfg.hidden, I = x->cfg.inter;
	memset(m, 0, sizeof *m);
	*bias = NULL;
	m->K = down ? I : H;
	m->N = down ? H : 2 * I;
	switch (x->cfg.format) {
	case FTFMT_BF16:
	case FTFMT_Q4_0:
		m->w = BANK(down ? 1 : 0);
		break;
	case FTFMT_NVFP4:
		m->w = BANK(down ? 3 : 0);
		m->s = BANK(down ? 4 : 1);
		m->g = BANK(down ? 5 : 2);
		break;
	case FTFMT_DS_FP4:
		m->w = BANK(down ? 2 : 0);
		m->s = BANK(down ? 3 : 1);
		break;
	case FTFMT_MXFP4_TRITON:
		m->w = BANK(down ? 3 : 0);
		m->s = BANK(down ? 4 : 1);
		*bias = (const uint16_t *)BANK(down ? 5 : 2);
		break;
	default:
		break;
	}
#undef BANK
}

/* Where row r of a row-major matrix (or bank row kk of a transposed one) starts. */
static const uint8_t *row_addr(const struct ftcmoe *x, const struct ftk_mat *m, long r)
{
	size_t stride = x->cfg.format == FTFMT_MXFP4_TRITON ? (size_t)m->N : wrow_bytes(x->cfg.format, m->K);
	return m->w + (size_t)r * stride;
}

/* The kernels prefetch ahead inside a stream; the first PF_AHEAD bytes of the next stream a
 * worker will read are requested here, before the current one ends (1 KiB or none instead:
 * -2.2 / -2.8 points of the read ceiling on q4_0, bf16 -0.6, mxfp4 -0.3 / 0.0; H200 host,
 * bench/RESULTS.md session 5). */
#define PF_AHEAD 4096
static void prefetch_start(const void *p)
{
	for (int i = 0; i < PF_AHEAD; i += 64)
		__builtin_prefetch((const char *)p + i, 0, 3);
}

static void slot_inputs(const struct ftcmoe *x, int tid, int g, int down, const void **xs)
{
	const struct ftk_ops *ops = x->ops;
	for (int i = 0; i < x->grp_nb[g]; i++) {
		int s = x->slot_of[x->grp_s0[g] + i];
		if (down && x->lean_h && ops->prep) /* batch 1: slot s */
			xs[i] = x->hpriv + ((size_t)tid * (size_t)x->cfg.max_topk + (size_t)s) * x->hq_stride;
		else if (!down && x->lean && ops->prep) /* batch 1: token 0 */
			xs[i] = x->xpriv + (size_t)tid * x->xq_stride;
		else if (down)
			xs[i] = ops->prep ? (const void *)(x->hq + (size_t)s * x->hq_stride)
					  : (const void *)(x->h + (size_t)s * x->cfg.inter);
		else
			xs[i] = ops->prep ? (const void *)(x->xq + (size_t)(s / x->topk) * x->xq_stride)
					  : (const void *)(x->xin + (size_t)(s / x->topk) * x->cfg.hidden);
	}
}

/* Where row r of group g's gate/up (down = 0) or down matrix starts. */
static const void *group_row(const struct ftcmoe *x, int g, int down, long r)
{
	struct ftk_mat m;
	const uint16_t *bias;
	expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], down, &m, &bias);
	return row_addr(x, &m, r);
}

/* Start streaming row `r` of the next group's matrix (gate/up or down) while this one runs. */
static void prefetch_group(const struct ftcmoe *x, int g, int down, long r)
{
	prefetch_start(group_row(x, g, down, r));
}

/* Gate/up outputs [j0, j1) of group g into h (activation applied). Row-major formats: gate rows
 * [j0, j1) and up rows [I + j0, I + j1); mxfp4_triton on the tiers without its K split: output
 * columns [2 j0, 2 j1), gate and up interleaved, plus their biases. next (may be NULL): the
 * first bytes of the stream this worker reads after this one, requested up front. */
static void gate_up_rows(struct ftcmoe *x, int tid, int g, long j0, long j1, float *tmp, const void *next)
{
	long I = x->cfg.inter;
	int inter = x->cfg.format == FTFMT_MXFP4_TRITON;
	const struct ftk_ops *ops = x->ops;
	struct ftk_mat m;
	const uint16_t *bias;
	expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], 0, &m, &bias);
	if (!inter)
		prefetch_start(row_addr(x, &m, I + j0));
	if (next)
		prefetch_start(next);
	int nb = x->grp_nb[g];
	const void *xs[FTCMOE_MAX_BATCH];
	float *yg[FTCMOE_MAX_BATCH], *yu[FTCMOE_MAX_BATCH];
	slot_inputs(x, tid, g, 0, xs);
	for (int i = 0; i < nb; i++) {
		yg[i] = tmp + (size_t)i * 4 * CHUNK;
		yu[i] = yg[i] + 2 * CHUNK;
	}
	for (long c0 = j0; c0 < j1; c0 += CHUNK) {
		long c1 = c0 + CHUNK < j1 ? c0 + CHUNK : j1;
		if (inter) {
			ops->rows(&m, 2 * c0, 2 * c1, nb, xs, yg);
		} else {
			ops->rows(&m, c0, c1, nb, xs, yg);
			ops->rows(&m, I + c0, I + c1, nb, xs, yu);
		}
		for (int i = 0; i < nb; i++) {
			float *h = x->h + (size_t)x->slot_of[x->grp_s0[g] + i] * I;
			if (!inter && x->vact &&
			    !x->vact(x->cfg.act, yg[i], yu[i], c1 - c0, 1.0f, x->cfg.swiglu_limit, h + c0))
				continue;
			for (long j = c0; j < c1; j++) {
				float gt = inter ? yg[i][2 * (j - c0)] + ftk_bf16(bias[2 * j]) : yg[i][j - c0];
				float up = inter ? yg[i][2 * (j - c0) + 1] + ftk_bf16(bias[2 * j + 1]) : yu[i][j - c0];
				h[j] = act(x->cfg.act, gt, up, x->cfg.swiglu_limit);
			}
		}
	}
}

/* FREETOKEN_CPU_MOE_SPLIT=rows (and mxfp4_triton below the avx512 tiers): every worker takes
 * the same share of the gate/up outputs of every routed expert. */
static void pass1(struct ftcmoe *x, int tid, int n, float *tmp)
{
	long I = x->cfg.inter;
	long j0 = I * tid / n, j1 = I * (tid + 1) / n;
	if (j1 <= j0)
		return;
	for (int g = 0; g < x->ngrp; g++) {
		int pf = g + 1 < x->ngrp && x->cfg.format != FTFMT_MXFP4_TRITON;
		gate_up_rows(x, tid, g, j0, j1, tmp, pf ? group_row(x, g + 1, 0, j0) : NULL);
	}
}

/* Pass 2 of group g over down rows [n0, n1): out[token] += route weight * (down . h (+ bias)).
 * out is the full output (row split) or this worker's partial (flattened split, bias NULL:
 * reduce_pout adds it). */
static void down_rows(struct ftcmoe *x, int tid, int g, const struct ftk_mat *m, const uint16_t *bias,
		      long n0, long n1, float *tmp, float *out)
{
	long H = x->cfg.hidden;
	int nb = x->grp_nb[g];
	const void *xs[FTCMOE_MAX_BATCH];
	float *y[FTCMOE_MAX_BATCH];
	slot_inputs(x, tid, g, 1, xs);
	for (int i = 0; i < nb; i++)
		y[i] = tmp + (size_t)i * 2 * CHUNK;
	for (long c0 = n0; c0 < n1; c0 += CHUNK) {
		long c1 = c0 + CHUNK < n1 ? c0 + CHUNK : n1;
		x->ops->rows(m, c0, c1, nb, xs, y);
		for (int i = 0; i < nb; i++) {
			int s = x->slot_of[x->grp_s0[g] + i];
			float wgt = x->rw[s];
			float *o = out + (size_t)(s / x->topk) * H;
			if (bias)
				for (long r = c0; r < c1; r++)
					o[r] += wgt * (y[i][r - c0] + ftk_bf16(bias[r]));
			else
				for (long r = c0; r < c1; r++)
					o[r] += wgt * y[i][r - c0];
		}
	}
}

static void pass2(struct ftcmoe *x, int tid, int n, float *tmp)
{
	long H = x->cfg.hidden;
	long n0 = H * tid / n, n1 = H * (tid + 1) / n;
	for (int b = 0; b < x->B; b++)
		memset(x->out + (size_t)b * H + n0, 0, (size_t)(n1 - n0) * sizeof(float));
	for (int g = 0; g < x->ngrp; g++) {
		struct ftk_mat m;
		const uint16_t *bias;
		expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], 1, &m, &bias);
		if (n1 > n0 && g + 1 < x->ngrp)
			prefetch_group(x, g + 1, 1, n0);
		down_rows(x, tid, g, &m, bias, n0, n1, tmp, x->out);
	}
}


/* Row-major formats, flattened split: the rows of all slot groups of a pass, laid end to end,
 * are cut into one contiguous range per worker, so each worker streams one or two long runs
 * per matrix instead of a short run of every expert, and all get the same number of rows. */
static void pass1_flat(struct ftcmoe *x, int tid, int n, float *tmp)
{
	long I = x->cfg.inter, R = (long)x->ngrp * I;
	long f0 = R * tid / n, f1 = R * (tid + 1) / n;
	for (long f = f0; f < f1;) {
		int g = (int)(f / I);
		long j0 = f % I, j1 = I < j0 + (f1 - f) ? I : j0 + (f1 - f);
		int pf = f + (j1 - j0) < f1 && g + 1 < x->ngrp; /* the next group's gate run */
		gate_up_rows(x, tid, g, j0, j1, tmp, pf ? group_row(x, g + 1, 0, 0) : NULL);
		f += j1 - j0;
	}
}

static void pass2_flat(struct ftcmoe *x, int tid, int n, float *tmp)
{
	long H = x->cfg.hidden, R = (long)x->ngrp * H;
	long f0 = R * tid / n, f1 = R * (tid + 1) / n;
	float *po = x->pout + (size_t)tid * (size_t)x->cfg.max_batch * (size_t)H;
	memset(po, 0, (size_t)x->B * (size_t)H * sizeof(float));
	for (long f = f0; f < f1;) {
		int g = (int)(f / H);
		long n0 = f % H, n1 = H < n0 + (f1 - f) ? H : n0 + (f1 - f);
		struct ftk_mat m;
		const uint16_t *bias;
		expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], 1, &m, &bias);
		if (f + (n1 - n0) < f1 && g + 1 < x->ngrp)
			prefetch_group(x, g + 1, 1, 0);
		down_rows(x, tid, g, &m, NULL, n0, n1, tmp, po);
		f += n1 - n0;
	}
}

/* Out rows of this worker = the sum of every worker's partial output: token b of worker t at
 * p + t * wstride + b * bstride (after pass2_flat and the dynamic schedules' items), in worker
 * order. touch (may be NULL: all written): worker t wrote 16-row chunk c of token b iff
 * touch[t * x->pchunk_stride + b * x->nchunk + c]; the others are skipped (they would add 0). */
static void reduce_out(struct ftcmoe *x, int tid, int n, const float *p, size_t wstride, size_t bstride,
		       const uint8_t *touch)
{
	long H = x->cfg.hidden, n0 = H * tid / n, n1 = H * (tid + 1) / n;
	for (int b = 0; b < x->B; b++) {
		float *o = x->out + (size_t)b * H;
		const float *pb = p + (size_t)b * bstride;
		for (long r0 = n0, r1; r0 < n1; r0 = r1) {
			long c = r0 / 16;
			r1 = (c + 1) * 16 < n1 ? (c + 1) * 16 : n1;
			int first = 1;
			for (int t = 0; t < n; t++) {
				if (touch && !touch[(size_t)t * x->pchunk_stride + (size_t)b * (size_t)x->nchunk + (size_t)c])
					continue;
				const float *q = pb + (size_t)t * wstride;
				if (first)
					for (long r = r0; r < r1; r++)
						o[r] = q[r];
				else
					for (long r = r0; r < r1; r++)
						o[r] += q[r];
				first = 0;
			}
			if (first)
				for (long r = r0; r < r1; r++)
					o[r] = 0.0f;
		}
	}
}

/* reduce_out over the per-worker outputs of pass2_flat and dyn_run (pout; dyn_run's: only the
 * chunks written, x->ptouch). */
static void reduce_pout(struct ftcmoe *x, int tid, int n, int lazy)
{
	reduce_out(x, tid, n, x->pout, (size_t)x->cfg.max_batch * (size_t)x->cfg.hidden, (size_t)x->cfg.hidden,
		   lazy ? x->ptouch : NULL);
}

/* Before a pass-2 item of group g adds down rows [n0, n1) into this worker's pout (po): the
 * 16-row chunks of each of its tokens that this worker has not written yet this step are
 * zeroed and marked. */
static void pout_claim(struct ftcmoe *x, int tid, int g, long n0, long n1, float *po)
{
	long H = x->cfg.hidden;
	uint8_t *tc = x->ptouch + (size_t)tid * x->pchunk_stride;
	for (int i = 0; i < x->grp_nb[g]; i++) {
		int b = x->slot_of[x->grp_s0[g] + i] / x->topk;
		for (long c = n0 / 16; c * 16 < n1; c++)
			if (!tc[(size_t)b * (size_t)x->nchunk + (size_t)c]) {
				tc[(size_t)b * (size_t)x->nchunk + (size_t)c] = 1;
				long e = (c + 1) * 16 < H ? (c + 1) * 16 : H;
				memset(po + (size_t)b * (size_t)H + (size_t)(c * 16), 0, (size_t)(e - c * 16) * sizeof(float));
			}
	}
}

/* Transposed banks split along K: every worker streams whole bank rows [kk0, kk1) of each
 * routed expert into its partials, then adds up all workers' partials for its own outputs.
 * Slot groups go in rounds of at most part_cap slots, one barrier per round (double-buffered
 * per round, so one barrier separates writing from reading): at batch 1 a whole pass is one
 * round, so the workers' streams are not broken by a barrier and a reduction per expert. */
static float *part_of(const struct ftcmoe *x, int t, int buf, int i)
{
	return x->part + (((size_t)t * 3 + (size_t)buf) * (size_t)x->part_cap + (size_t)i) * (size_t)x->part_n;
}

/* The groups [g0, *g1) of the round starting at g0 (at least one group). */
static int round_end(const struct ftcmoe *x, int g0)
{
	int g = g0, ns = 0;
	while (g < x->ngrp && (g == g0 || ns + x->grp_nb[g] <= x->part_cap))
		ns += x->grp_nb[g++];
	return g;
}

static void pass_t(struct ftcmoe *x, int tid, int n, int *buf, int down)
{
	long H = x->cfg.hidden, I = x->cfg.inter;
	long KK = down ? I / 2 : H / 2, N = down ? H : 2 * I;
	long kk0 = KK * tid / n, kk1 = KK * (tid + 1) / n;
	long o0 = (down ? H : I) * tid / n, o1 = (down ? H : I) * (tid + 1) / n;
	const struct ftk_ops *ops = x->ops;
	if (down)
		for (int b = 0; b < x->B; b++)
			memset(x->out + (size_t)b * H + o0, 0, (size_t)(o1 - o0) * sizeof(float));
	for (int g0 = 0; g0 < x->ngrp;) {
		int g1 = round_end(x, g0);
		for (int g = g0, base = 0; g < g1; base += x->grp_nb[g++]) {
			struct ftk_mat m;
			const uint16_t *bias;
			expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], down, &m, &bias);
			if (kk1 > kk0 && g + 1 < x->ngrp && x->grp_u[g + 1] != x->grp_u[g])
				prefetch_group(x, g + 1, down, kk0);
			int nb = x->grp_nb[g];
			const void *xs[FTCMOE_MAX_BATCH];
			float *ps[FTCMOE_MAX_BATCH];
			slot_inputs(x, tid, g, down, xs);
			for (int i = 0; i < nb; i++) {
				ps[i] = part_of(x, tid, *buf, base + i);
				memset(ps[i], 0, sizeof(float) * (size_t)N);
			}
			if (kk1 > kk0)
				ops->rows_t(&m, kk0, kk1, nb, xs, ps, part_of(x, tid, 2, 0));
		}
		ftpool_barrier(x->cfg.pool);
		for (int g = g0, base = 0; g < g1; base += x->grp_nb[g++]) {
			struct ftk_mat m;
			const uint16_t *bias;
			expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], down, &m, &bias);
			for (int i = 0; i < x->grp_nb[g]; i++) {
				int s = x->slot_of[x->grp_s0[g] + i];
				if (!down) {
					float *h = x->h + (size_t)s * I;
					for (long j = o0; j < o1; j++) {
						float gt = ftk_bf16(bias[2 * j]), up = ftk_bf16(bias[2 * j + 1]);
						for (int t = 0; t < n; t++) {
							const float *p = part_of(x, t, *buf, base + i);
							gt += p[2 * j];
							up += p[2 * j + 1];
						}
						h[j] = act(x->cfg.act, gt, up, x->cfg.swiglu_limit);
					}
				} else {
					float wgt = x->rw[s];
					float *o = x->out + (size_t)(s / x->topk) * H;
					for (long r = o0; r < o1; r++) {
						float v = ftk_bf16(bias[r]);
						for (int t = 0; t < n; t++)
							v += part_of(x, t, *buf, base + i)[r];
						o[r] += wgt * v;
					}
				}
			}
		}
		*buf ^= 1;
		g0 = g1;
	}
}

/* FREETOKEN_CPU_MOE_TRACE=1: per-worker sums (struct wtrace) */
static void trace_start(struct ftcmoe *x, int tid)
{
	if (x->trace)
		x->tr[tid].wake += ft_now_ns() - x->t_post;
}

static void trace_item(struct ftcmoe *x, int tid, uint64_t t0)
{
	if (x->trace) {
		x->tr[tid].items += ft_now_ns() - t0;
		x->tr[tid].nitems++;
	}
}

static void trace_end(struct ftcmoe *x, int tid, uint64_t t_last, uint64_t t_bar)
{
	if (x->trace) {
		uint64_t t = ft_now_ns();
		x->tr[tid].idle += t_bar - t_last;
		x->tr[tid].after += t - t_bar;
		x->tr[tid].end = t;
	}
}

/* Row-major formats, dynamic schedule (default): the step is a list of work items, the
 * pass-1 items of every slot group (ch1 gate+up row pairs each) and then the pass-2 items
 * (ch2 down rows each), claimed in order from one atomic counter; a worker that is done with
 * an item takes the next free one, so a worker the memory system serves slower does fewer
 * and none idles at a pass boundary. Pass 2 of a group waits only for that group's pass 1: the
 * worker finishing its last pass-1 item prepares the group's h and marks it ready (done1 =
 * n1 + 1); by then the other workers are still streaming pass 1 of later groups. Pass-2 items
 * add into per-worker partial outputs, summed after the step's one barrier. While an item is
 * walked, the next one is claimed and its first bytes requested (not in the last 2n items, so
 * the tail is not held by claimed but unstarted work). */
static int dyn_claim(struct ftcmoe *x)
{
	return atomic_fetch_add_explicit(&x->next, 1, memory_order_relaxed);
}

/* Pass-2 item i (counted from the first pass-2 item): its group and down rows [*r0, *r1). */
static int dyn_down_item(const struct ftcmoe *x, int i, long *r0, long *r1)
{
	long H = x->cfg.hidden, ch = x->ch2;
	int g, last = (x->ngrp - 1) * x->n2;
	if (i < last) {
		g = i / x->n2;
		*r0 = (long)(i % x->n2) * ch;
	} else {
		g = x->ngrp - 1;
		ch = x->ch2f;
		*r0 = (long)(i - last) * ch;
	}
	*r1 = *r0 + ch < H ? *r0 + ch : H;
	return g;
}

static const void *dyn_item_start(struct ftcmoe *x, int i)
{
	int p1 = x->ngrp * x->n1;
	if (i < p1)
		return group_row(x, i / x->n1, 0, (long)(i % x->n1) * x->ch1);
	long r0, r1;
	int g = dyn_down_item(x, i - p1, &r0, &r1);
	return group_row(x, g, 1, r0);
}

static void dyn_h_ready(struct ftcmoe *x, int g)
{
	const struct ftk_ops *ops = x->ops;
	if (ops->prep)
		for (int i = 0; i < x->grp_nb[g]; i++) {
			int s = x->slot_of[x->grp_s0[g] + i];
			ops->prep(x->h + (size_t)s * x->cfg.inter, x->cfg.inter, x->hq + (size_t)s * x->hq_stride);
		}
	atomic_store_explicit(&x->done1[g], x->n1 + 1, memory_order_release);
}

static void dyn_item(struct ftcmoe *x, int tid, int cur, const void *ahead, float *tmp, float *po)
{
	long I = x->cfg.inter;
	int p1 = x->ngrp * x->n1;
	if (cur < p1) {
		int g = cur / x->n1;
		long j0 = (long)(cur % x->n1) * x->ch1, j1 = j0 + x->ch1 < I ? j0 + x->ch1 : I;
		gate_up_rows(x, tid, g, j0, j1, tmp, ahead);
		if (atomic_fetch_add_explicit(&x->done1[g], 1, memory_order_acq_rel) == x->n1 - 1)
			dyn_h_ready(x, g);
	} else {
		long n0, n1;
		int g = dyn_down_item(x, cur - p1, &n0, &n1);
		struct ftk_mat m;
		const uint16_t *bias;
		expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], 1, &m, &bias);
		prefetch_start(row_addr(x, &m, n0));
		if (ahead)
			prefetch_start(ahead);
		uint64_t t0 = x->trace ? ft_now_ns() : 0;
		for (int k = 0; atomic_load_explicit(&x->done1[g], memory_order_acquire) != x->n1 + 1;)
			ftpool_relax(x->cfg.pool, &k);
		if (x->trace)
			x->tr[tid].wait += ft_now_ns() - t0;
		pout_claim(x, tid, g, n0, n1, po);
		down_rows(x, tid, g, &m, NULL, n0, n1, tmp, po);
	}
}

/* A worker waiting in pass 2 waits only for pass-1 items, which never wait, and the items
 * are claimed in order, so a waited-for item is always claimed: no deadlock. (Handing the
 * first items out round-robin, without the shared counter, measured no better: RESULTS.) */
static void dyn_run(struct ftcmoe *x, int tid, int n, float *tmp)
{
	long H = x->cfg.hidden;
	int total = x->nitems;
	float *po = x->pout + (size_t)tid * (size_t)x->cfg.max_batch * (size_t)H;
	trace_start(x, tid);
	/* the previous step's reductions are over: ftpool_run returned after every worker's */
	memset(x->ptouch + (size_t)tid * x->pchunk_stride, 0, (size_t)x->B * (size_t)x->nchunk);
	int cur = dyn_claim(x);
	while (cur < total) {
		int nxt = -1;
		if (atomic_load_explicit(&x->next, memory_order_relaxed) < total - 2 * n)
			nxt = dyn_claim(x);
		uint64_t t0 = x->trace ? ft_now_ns() : 0;
		dyn_item(x, tid, cur, nxt >= 0 && nxt < total ? dyn_item_start(x, nxt) : NULL, tmp, po);
		trace_item(x, tid, t0);
		cur = nxt >= 0 ? nxt : dyn_claim(x);
	}
	uint64_t t1 = x->trace ? ft_now_ns() : 0;
	ftpool_barrier(x->cfg.pool);
	uint64_t t2 = x->trace ? ft_now_ns() : 0;
	reduce_pout(x, tid, n, 1);
	trace_end(x, tid, t1, t2);
}

/* Pass-2 item over down bank rows [kk0, kk1) of group g: its inputs are h elements [2 kk0,
 * 2 kk1), which it computes itself from the pass-1 partials of the workers that touched each
 * slot (bias, activation, route weight), writes into h and prepares into this worker's slice
 * buffer; *m is narrowed to those bank rows (kk0 is a multiple of 16: whole scale blocks and
 * activation blocks). No worker reduces a whole group, so nothing waits on one. */
static void dyn_t_slice(struct ftcmoe *x, int tid, int g, int n, long kk0, long kk1, struct ftk_mat *m,
			const void **xs, float *acc)
{
	long I = x->cfg.inter, j0 = 2 * kk0, len = 2 * (kk1 - kk0);
	struct ftk_mat gu;
	const uint16_t *bias;
	expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], 0, &gu, &bias);
	for (int i = 0; i < x->grp_nb[g]; i++) {
		int si = x->grp_s0[g] + i, s = x->slot_of[si];
		float *h = x->h + (size_t)s * I + j0, w = x->rw[s];
		for (long j = 0; j < 2 * len; j++)
			acc[j] = ftk_bf16(bias[2 * j0 + j]);
		for (int t = 0; t < n; t++)
			if (x->touch[(size_t)t * x->part_cap + si]) {
				const float *p = part_of(x, t, 0, si) + 2 * j0;
				for (long j = 0; j < 2 * len; j++)
					acc[j] += p[j];
			}
		if (!x->vact || x->vact(x->cfg.act, acc, NULL, len, w, x->cfg.swiglu_limit, h))
			for (long j = 0; j < len; j++)
				h[j] = w * act(x->cfg.act, acc[2 * j], acc[2 * j + 1], x->cfg.swiglu_limit);
		if (x->ops->prep) {
			uint8_t *q = x->hslice + ((size_t)tid * (size_t)x->part_cap + (size_t)i) * x->hq_stride;
			x->ops->prep(h, len, q);
			xs[i] = q;
		} else {
			xs[i] = h;
		}
	}
	m->w += (size_t)kk0 * (size_t)m->N;
	m->s += (size_t)(kk0 / 16) * (size_t)m->N;
	m->K = len;
}

/* K-split item i: its pass (*down), group (returned) and bank rows [*kk0, *kk1). (The last
 * group's pass-2 items 2x or 4x smaller, as in the row split: -0.2 / -0.4 points of the read
 * ceiling, H200 host, bench/RESULTS.md session 6.) */
static int dyn_t_item(const struct ftcmoe *x, int i, int *down, long *kk0, long *kk1)
{
	int p1 = x->ngrp * x->n1t, g;
	long ch, KK;
	if (i < p1) {
		*down = 0;
		g = i / x->n1t;
		ch = x->ch1t;
		*kk0 = (long)(i % x->n1t) * ch;
		KK = x->cfg.hidden / 2;
	} else {
		*down = 1;
		i -= p1;
		g = i / x->n2t;
		ch = x->ch2t;
		*kk0 = (long)(i % x->n2t) * ch;
		KK = x->cfg.inter / 2;
	}
	*kk1 = *kk0 + ch < KK ? *kk0 + ch : KK;
	return g;
}

/* mxfp4_triton, dynamic K split (default while a call's routes fit one round of partials):
 * the items are runs of ch1t / ch2t bank rows of each group's gate_up and down matrices,
 * claimed in order like dyn_run. A worker adds every pass-1 item into its own partial of each
 * slot (zeroed when it first touches the slot in a call) and counts it done. A pass-2 item
 * waits for its group's pass 1 and computes the slice of h its bank rows read (dyn_t_slice);
 * h is scaled by the route weight, so pass 2 adds all routes of a token into one vector, the
 * worker's partial of that token. (One worker reducing a whole group when its pass 1 ended,
 * the first form, held every pass-2 item of the group behind it: 7.2 points of the read
 * ceiling lower on the H200 host, bench/RESULTS.md.) After the step's one barrier each worker
 * sums its output rows over the workers, adds the route-weighted down biases, and clears its
 * touched flags for the next call. */
static void dyn_t_run(struct ftcmoe *x, int tid, int n)
{
	long H = x->cfg.hidden, I = x->cfg.inter;
	int total = x->nitems, live = x->uniq_start[x->nuniq];
	uint8_t *touch = x->touch + (size_t)tid * x->part_cap;
	float *tmp = part_of(x, tid, 2, 0);
	trace_start(x, tid);
	for (int b = 0; b < x->B; b++)
		memset(part_of(x, tid, 1, b), 0, sizeof(float) * (size_t)H);
	int cur = dyn_claim(x);
	while (cur < total) {
		int nxt = -1;
		if (atomic_load_explicit(&x->next, memory_order_relaxed) < total - 2 * n)
			nxt = dyn_claim(x);
		int down;
		long kk0, kk1;
		int g = dyn_t_item(x, cur, &down, &kk0, &kk1);
		struct ftk_mat m;
		const uint16_t *bias;
		expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], down, &m, &bias);
		if (nxt >= 0 && nxt < total) { /* the next item's first bank rows */
			int dn;
			long n0, n1;
			int gn = dyn_t_item(x, nxt, &dn, &n0, &n1);
			prefetch_group(x, gn, dn, n0);
		}
		int nb = x->grp_nb[g];
		const void *xs[FTCMOE_MAX_BATCH];
		float *ps[FTCMOE_MAX_BATCH];
		uint64_t t0 = x->trace ? ft_now_ns() : 0;
		if (down)
			for (int k = 0; atomic_load_explicit(&x->done1[g], memory_order_acquire) != x->n1t;)
				ftpool_relax(x->cfg.pool, &k);
		if (x->trace)
			x->tr[tid].wait += ft_now_ns() - t0;
		if (down) {
			dyn_t_slice(x, tid, g, n, kk0, kk1, &m, xs, tmp);
			kk1 -= kk0;
			kk0 = 0;
		} else {
			slot_inputs(x, tid, g, down, xs);
		}
		for (int i = 0; i < nb; i++) {
			int si = x->grp_s0[g] + i;
			if (down) {
				ps[i] = part_of(x, tid, 1, x->slot_of[si] / x->topk);
			} else {
				ps[i] = part_of(x, tid, 0, si);
				if (!touch[si]) {
					memset(ps[i], 0, sizeof(float) * (size_t)(2 * I));
					touch[si] = 1;
				}
			}
		}
		x->ops->rows_t(&m, kk0, kk1, nb, xs, ps, tmp);
		if (!down)
			atomic_fetch_add_explicit(&x->done1[g], 1, memory_order_release);
		trace_item(x, tid, t0);
		cur = nxt >= 0 ? nxt : dyn_claim(x);
	}
	uint64_t t1 = x->trace ? ft_now_ns() : 0;
	ftpool_barrier(x->cfg.pool);
	uint64_t t2 = x->trace ? ft_now_ns() : 0;
	/* cleared after the barrier, not at the start: a pass-2 item (dyn_t_slice) may read the
	 * flags of a worker that has not started this call yet */
	memset(touch, 0, (size_t)live);
	long o0 = H * tid / n, o1 = H * (tid + 1) / n;
	reduce_out(x, tid, n, part_of(x, 0, 1, 0), (size_t)3 * (size_t)x->part_cap * (size_t)x->part_n,
		   (size_t)x->part_n, NULL); /* buffer 1 of each worker */
	for (int u = 0; u < x->nuniq; u++) {
		struct ftk_mat m;
		const uint16_t *bias;
		expert_mat(x, x->layer, x->uniq_e[u], 1, &m, &bias);
		for (int i = x->uniq_start[u]; i < x->uniq_start[u + 1]; i++) {
			int s = x->slot_of[i];
			float w = x->rw[s], *o = x->out + (size_t)(s / x->topk) * H;
			for (long r = o0; r < o1; r++)
				o[r] += w * ftk_bf16(bias[r]);
		}
	}
	trace_end(x, tid, t1, t2);
}

/* One step on worker tid. Barriers: after the prep of x, after pass 1, after the prep of h,
 * and (flattened split) before the reduction of the per-worker outputs. At batch 1 ("lean",
 * FREETOKEN_CPU_MOE_LEAN=0 turns it off) each worker prepares x for itself (a few hundred ns)
 * instead of sharing the work behind a barrier, and for the row-major formats also the h of
 * the slots its pass-2 range reads (one or two at top-8 on 16 workers): two barriers per step
 * instead of four, the same streams. (A first form also split pass 2 by rows of every expert to
 * drop the last barrier; its shorter streams lost 2-6 points of the read ceiling on the H200
 * host while saving ~5 us per step: bench/RESULTS.md, "CPU MoE".) */
static void forward_worker(void *arg, int tid, int n)
{
	struct ftcmoe *x = arg;
	float *tmp = x->tmp + (size_t)tid * x->tmp_stride;
	const struct ftk_ops *ops = x->ops;
	if (ops->prep) {
		if (x->lean) {
			ops->prep(x->xin, x->cfg.hidden, x->xpriv + (size_t)tid * x->xq_stride);
		} else {
			for (int b = tid; b < x->B; b += n)
				ops->prep(x->xin + (size_t)b * x->cfg.hidden, x->cfg.hidden,
					  x->xq + (size_t)b * x->xq_stride);
			ftpool_barrier(x->cfg.pool);
		}
	}
	if (x->dyn) {
		dyn_run(x, tid, n, tmp);
		return;
	}
	if (x->dyn_t) {
		dyn_t_run(x, tid, n);
		return;
	}
	int ksplit = ops->rows_t && x->part, buf = 0;
	int flat = !ksplit && x->flat && x->cfg.format != FTFMT_MXFP4_TRITON; /* no bias, gate/up rows */
	if (ksplit)
		pass_t(x, tid, n, &buf, 0);
	else if (flat)
		pass1_flat(x, tid, n, tmp);
	else
		pass1(x, tid, n, tmp);
	int flat2 = flat;
	if (x->nuniq > 0) { /* pass 2's first stream, requested while waiting at the barrier */
		struct ftk_mat m;
		const uint16_t *bias;
		expert_mat(x, x->layer, x->uniq_e[0], 1, &m, &bias);
		long r = ksplit ? x->cfg.inter / 2 * tid / n : x->cfg.hidden * tid / n;
		if (flat2) {
			long R = (long)x->ngrp * x->cfg.hidden, f0 = R * tid / n;
			expert_mat(x, x->layer, x->uniq_e[x->grp_u[f0 / x->cfg.hidden]], 1, &m, &bias);
			r = f0 % x->cfg.hidden;
		}
		prefetch_start(row_addr(x, &m, r));
	}
	ftpool_barrier(x->cfg.pool);
	if (ops->prep) {
		int live = x->uniq_start[x->nuniq];
		if (x->lean_h) { /* batch 1: only the groups this worker reads (an id routed twice: two slots) */
			int ga = 0, gb = x->ngrp;
			if (flat2) {
				long R = (long)x->ngrp * x->cfg.hidden;
				long f0 = R * tid / n, f1 = R * (tid + 1) / n;
				ga = (int)(f0 / x->cfg.hidden);
				gb = f1 > f0 ? (int)((f1 - 1) / x->cfg.hidden) + 1 : ga;
			}
			for (int g = ga; g < gb; g++)
				for (int i = 0; i < x->grp_nb[g]; i++) {
					int s = x->slot_of[x->grp_s0[g] + i];
					ops->prep(x->h + (size_t)s * x->cfg.inter, x->cfg.inter,
						  x->hpriv + ((size_t)tid * (size_t)x->cfg.max_topk + (size_t)s) * x->hq_stride);
				}
		} else {
			for (int i = tid; i < live; i += n) {
				int s = x->slot_of[i];
				ops->prep(x->h + (size_t)s * x->cfg.inter, x->cfg.inter,
					  x->hq + (size_t)s * x->hq_stride);
			}
			ftpool_barrier(x->cfg.pool);
		}
	}
	if (ksplit) {
		pass_t(x, tid, n, &buf, 1);
	} else if (flat2) {
		pass2_flat(x, tid, n, tmp);
		ftpool_barrier(x->cfg.pool);
		reduce_pout(x, tid, n, 0);
	} else {
		pass2(x, tid, n, tmp);
	}
}

int ftcmoe_forward(struct ftcmoe *x, int layer, int B, int topk, const float *xin,
		   const int32_t *ids, const float *weights, float *out)
{
	if (!x || layer < 0 || layer >= x->cfg.layers || B < 1 || B > x->cfg.max_batch ||
	    topk < 1 || topk > x->cfg.max_topk || !xin || !ids || !weights || !out)
		return -EINVAL;
	int ns = B * topk;
	for (int s = 0; s < ns; s++)
		if (ids[s] < -1 || ids[s] >= x->cfg.experts)
			return -EINVAL;
	/* group live slots by expert, experts in first-seen order (counting sort, no allocation) */
	int cnt[MAX_SLOTS], fill[MAX_SLOTS];
	x->nuniq = 0;
	for (int s = 0; s < ns; s++) {
		if (ids[s] < 0)
			continue;
		int u = x->uidx[ids[s]];
		if (u < 0) {
			u = x->uidx[ids[s]] = x->nuniq++;
			x->uniq_e[u] = ids[s];
			cnt[u] = 0;
		}
		cnt[u]++;
	}
	x->uniq_start[0] = 0;
	for (int u = 0; u < x->nuniq; u++) {
		x->uniq_start[u + 1] = x->uniq_start[u] + cnt[u];
		fill[u] = x->uniq_start[u];
	}
	for (int s = 0; s < ns; s++)
		if (ids[s] >= 0)
			x->slot_of[fill[x->uidx[ids[s]]]++] = s;
	for (int u = 0; u < x->nuniq; u++)
		x->uidx[x->uniq_e[u]] = -1;
	x->ngrp = 0;
	for (int u = 0; u < x->nuniq; u++)
		for (int s0 = x->uniq_start[u]; s0 < x->uniq_start[u + 1]; s0 += x->cfg.max_batch) {
			int nb = x->uniq_start[u + 1] - s0;
			x->grp_u[x->ngrp] = u;
			x->grp_s0[x->ngrp] = s0;
			x->grp_nb[x->ngrp++] = nb < x->cfg.max_batch ? nb : x->cfg.max_batch;
		}
	x->layer = layer;
	x->B = B;
	x->topk = topk;
	x->xin = xin;
	x->rw = weights;
	x->out = out;
	x->lean = x->lean_ok && B == 1;
	x->dyn = x->dyn_ok && !(x->ops->rows_t && x->part) && x->cfg.format != FTFMT_MXFP4_TRITON;
	x->lean_h = x->lean && !(x->ops->rows_t && x->part) && !x->dyn;
	int live = x->uniq_start[x->nuniq];
	x->dyn_t = x->dyn_ok && x->ops->rows_t && x->part && live <= x->part_cap && B <= x->part_cap;
	if (x->dyn || x->dyn_t) {
		x->nitems = x->dyn ? x->ngrp * (x->n1 + x->n2) - x->n2 + x->n2f : x->ngrp * (x->n1t + x->n2t);
		atomic_store_explicit(&x->next, 0, memory_order_relaxed);
		for (int g = 0; g < x->ngrp; g++)
			atomic_store_explicit(&x->done1[g], 0, memory_order_relaxed);
	}
	int traced = x->trace && (x->dyn || x->dyn_t);
	if (traced)
		x->t_post = ft_now_ns();
	ftpool_run(x->cfg.pool, forward_worker, x);
	if (traced) {
		uint64_t t = ft_now_ns(), last = x->t_post;
		for (int i = 0; i < x->nthreads; i++)
			last = x->tr[i].end > last ? x->tr[i].end : last;
		x->tr_step_ns += t - x->t_post;
		x->tr_last_ns += last - x->t_post;
		x->tr_steps++;
	}
	return 0;
}

int ftcmoe_trace(struct ftcmoe *x, struct ftcmoe_trace *out, int reset)
{
	if (!x || !x->trace)
		return -ENODATA;
	if (out) {
		memset(out, 0, sizeof *out);
		out->steps = (long)x->tr_steps;
		double d = x->tr_steps ? 1e3 * (double)x->tr_steps * x->nthreads : 1; /* us per worker-step */
		for (int t = 0; t < x->nthreads; t++) {
			const struct wtrace *w = &x->tr[t];
			out->start_us += (double)w->wake / d;
			out->items_us += (double)(w->items - w->wait) / d;
			out->wait_us += (double)w->wait / d;
			out->idle_us += (double)w->idle / d;
			out->after_us += (double)w->after / d;
			out->items_per_worker += (double)w->nitems / (x->tr_steps ? (double)x->tr_steps * x->nthreads : 1);
		}
		out->step_us = x->tr_steps ? (double)x->tr_step_ns / 1e3 / (double)x->tr_steps : 0;
		out->last_us = x->tr_steps ? (double)x->tr_last_ns / 1e3 / (double)x->tr_steps : 0;
	}
	if (reset) {
		memset(x->tr, 0, (size_t)x->nthreads * sizeof *x->tr);
		x->tr_steps = x->tr_step_ns = x->tr_last_ns = 0;
	}
	return 0;
}
