/* exec: the CPU MoE executor's state and the pieces its schedules share (internal to moe/cpu).
 *
 * executor.c creates the executor, groups a call's routes by expert and picks one schedule per
 * call; each schedule (sched_static.c, sched_dyn.c, ksplit.c) is a worker function run on every
 * pool worker after the activations are prepared. passes.c holds what they share (one
 * expert's matrices, the gate/up and down row runs, the reduction of per-worker outputs);
 * trace.c the timing of the dynamic steps. Everything here runs inside ftpool_run unless said
 * otherwise; nothing allocates. */
#ifndef FT_MOE_CPU_EXEC_H
#define FT_MOE_CPU_EXEC_H
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "moe/cpu/cpumoe.h"
#include "moe/act.h"
#include "moe/cpu/kern.h"
#include "util/timeutil.h"

/* Rows per kernel call: bounds the per-worker scratch (FTCPUMOE_MAX_BATCH * 2 * CHUNK floats). */
#define FTCPUMOE_CHUNK 64
/* Vector tiers read K in groups of this many elements. */
#define FTCPUMOE_KALIGN 64
#define FTCPUMOE_MAX_SLOTS (FTCPUMOE_MAX_BATCH * FTCPUMOE_MAX_TOPK)

/* The schedules (one per call; ftcpumoe_forward picks). */
enum ftcpumoe_sched_kind {
	FTCPUMOE_RUN_DYN,      /* dynamic, row-major formats (sched_dyn.c) */
	FTCPUMOE_RUN_DYN_K,    /* dynamic K split, mxfp4_triton (ksplit.c) */
	FTCPUMOE_RUN_FLAT,     /* static, rows of all groups end to end (sched_static.c) */
	FTCPUMOE_RUN_K,        /* static K split (ksplit.c) */
	FTCPUMOE_RUN_ROWS,     /* static, every group's rows cut per worker (sched_static.c) */
};

/* Per-worker sums over traced steps (ns): start after the driver posted the run (prep: of it,
 * preparing x), in items, spinning for a group's pass 1, from the last item to leaving the
 * barrier, after it. */
struct ftcpumoe_wtrace {
	_Alignas(64) uint64_t wake, prep, items, wait, idle, after, nitems;
	uint64_t arrive, left, end; /* this step: reached the barrier, left it, was done */
};
/* Per-step figures kept for the medians (trace.c): up to FTCPUMOE_TRACE_STEPS steps. */
#define FTCPUMOE_TRACE_STEPS 4096
enum { FTCPUMOE_TR_STEP, FTCPUMOE_TR_LAST, FTCPUMOE_TR_START, FTCPUMOE_TR_PREP, FTCPUMOE_TR_ITEMS,
       FTCPUMOE_TR_WAIT, FTCPUMOE_TR_IDLE, FTCPUMOE_TR_BAR, FTCPUMOE_TR_AFTER, FTCPUMOE_TR_N };

struct ftcpumoe {
	struct ftcpumoe_cfg cfg;
	struct ftcpumoe_tune tune;
	struct ftkern_knobs knobs;    /* from tune; every ftkern_mat of this executor points here */
	const void **banks;           /* [layers * nbanks] */
	struct ftfmt_bank_shape shape[FTFMT_MAX_BANKS];
	int nbanks;
	unsigned cpu_isa;
	enum ftcpumoe_isa isa;
	const struct ftkern_ops *ops;
	ftkern_act_fn *vact;             /* the tier's vector activation, or NULL (scalar act) */
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
	enum ftcpumoe_sched_kind run;
	int nuniq;
	int uniq_e[FTCPUMOE_MAX_SLOTS];
	int uniq_start[FTCPUMOE_MAX_SLOTS + 1];
	int slot_of[FTCPUMOE_MAX_SLOTS]; /* slots (b * topk + k) grouped by expert */
	int *uidx;                    /* [E]: expert -> its uniq index during a call, else -1 */
	/* slot groups of this call: an expert's slots, at most max_batch per group */
	int ngrp;
	int grp_u[FTCPUMOE_MAX_SLOTS], grp_s0[FTCPUMOE_MAX_SLOTS], grp_nb[FTCPUMOE_MAX_SLOTS];
	float *pout;                  /* per-worker partial out [threads][max_batch][H] */
	/* In the dynamic schedule each worker zeroes only the 16-row chunks of its pout that its
	 * pass-2 items write, marks them in ptouch ([threads][pchunk_stride], [max_batch][nchunk]
	 * used), and the reduction adds only marked chunks. */
	uint8_t *ptouch;
	size_t pchunk_stride;
	long nchunk;
	int lean;                     /* this call: batch 1, x prepared per worker (no barrier) */
	int lean_h;                   /* this call: also h per worker, the slots it reads in pass 2 */
	uint8_t *xpriv;               /* lean: per-worker prepared x [threads][xq_stride] */
	uint8_t *hpriv;               /* lean: per-worker prepared h [threads][max_topk][hq_stride] */
	int dyn_ok;                   /* the dynamic schedules are on (tune.sched, pool size) */
	long ch1, ch2;                /* rows per work item: pass 1 (gate+up pairs), pass 2 (down) */
	int n1, n2, nitems;           /* items per group in pass 1 / pass 2; items of this call */
	long ch2f;                    /* pass 2 of the last group: finer items (the step's tail) */
	int n2f;
	long ch1t, ch2t;              /* K split: bank rows per item (multiples of 16) */
	int n1t, n2t;
	long ch2tf;                   /* K split, pass 2 of the last group: finer items (the tail) */
	int n2tf;
	uint8_t *touch;               /* K split: [threads][part_cap] partial written this call */
	uint8_t *hslice;              /* K split: prepared h slices [threads][part_cap][hq_stride] */
	/* tune.trace: where the dynamic steps' time goes (trace.c) */
	int trace;
	uint64_t t_post;              /* this call: when the driver started the run */
	struct ftcpumoe_wtrace *tr;     /* [threads] */
	uint64_t tr_steps, tr_step_ns, tr_last_ns; /* tr_last_ns: sum of (last worker done - post) */
	uint64_t tr_bar_ns;           /* sum over steps and workers: left the barrier - last arrival */
	uint64_t tr_prev[FTCPUMOE_TR_N]; /* the sums over workers after the previous traced step */
	double *tr_rec;               /* [FTCPUMOE_TR_N][FTCPUMOE_TRACE_STEPS]: per step, us per worker */
	_Alignas(64) atomic_int next; /* next unclaimed item */
	/* pass-1 items finished per group; row-major: n1 + 1 once h is prepared, K split: n1t */
	_Alignas(64) atomic_int done1[FTCPUMOE_MAX_SLOTS];
};

/* ---- passes.c: shared by the schedules (the small ones inline: they run per element or row) */
/* Weight bytes of one row of K elements (row-major formats; scales not counted). */
static inline size_t ftcpumoe_wrow_bytes(enum ftfmt_id f, long K)
{
	switch (f) {
	case FTFMT_BF16: return (size_t)K * 2;
	case FTFMT_Q4_0: return (size_t)(K / 32) * 18;
	default: return (size_t)(K / 2);
	}
}

/* Where row r of a row-major matrix (or bank row kk of a transposed one) starts. */
static inline const uint8_t *ftcpumoe_row_addr(const struct ftcpumoe *x, const struct ftkern_mat *m, long r)
{
	size_t stride = x->cfg.format == FTFMT_MXFP4_TRITON ? (size_t)m->N : ftcpumoe_wrow_bytes(x->cfg.format, m->K);
	return m->w + (size_t)r * stride;
}

/* The kernels prefetch ahead inside a stream; the first FTCPUMOE_PF_AHEAD bytes of the next
 * stream a worker will read are requested before the current one ends. */
#define FTCPUMOE_PF_AHEAD 4096
static inline void ftcpumoe_prefetch_start(const void *p)
{
	for (int i = 0; i < FTCPUMOE_PF_AHEAD; i += 64)
		__builtin_prefetch((const char *)p + i, 0, 3);
}

/* K split: worker t's partial buffer buf (0, 1: partials, 2: scratch), slot i. */
static inline float *ftcpumoe_part(const struct ftcpumoe *x, int t, int buf, int i)
{
	return x->part + (((size_t)t * 3 + (size_t)buf) * (size_t)x->part_cap + (size_t)i) * (size_t)x->part_n;
}

/* The dynamic schedules' claim of their next item. */
static inline int ftcpumoe_dyn_claim(struct ftcpumoe *x)
{
	return atomic_fetch_add_explicit(&x->next, 1, memory_order_relaxed);
}

/* The matrices of expert e in layer l: pass 1 (gate_up) or pass 2 (down); *bias: mxfp4's, else
 * NULL. */
void ftcpumoe_expert_mat(const struct ftcpumoe *x, int layer, int e, int down, struct ftkern_mat *m,
		       const uint16_t **bias);
/* Where row r of group g's gate/up (down = 0) or down matrix starts. */
const void *ftcpumoe_group_row(const struct ftcpumoe *x, int g, int down, long r);
/* The prepared (or fp32) inputs of group g's slots for pass 1 (x) or pass 2 (h). */
void ftcpumoe_slot_inputs(const struct ftcpumoe *x, int tid, int g, int down, const void **xs);
/* Gate/up outputs [j0, j1) of group g into h, activation applied. next (may be NULL): the first
 * bytes of the stream this worker reads after this one, requested up front. */
void ftcpumoe_gate_up_rows(struct ftcpumoe *x, int tid, int g, long j0, long j1, float *tmp, const void *next);
/* Pass 2 of group g over down rows [n0, n1): out[token] += route weight * (down . h (+ bias)). */
void ftcpumoe_down_rows(struct ftcpumoe *x, int tid, int g, const struct ftkern_mat *m, const uint16_t *bias,
		      long n0, long n1, float *tmp, float *out);
/* This worker's share of x->out = the sum of every worker's partial output: token b of worker
 * t at p + t * wstride + b * bstride. touch (may be NULL: all written): worker t wrote 16-row
 * chunk c of token b iff touch[t * pchunk_stride + b * nchunk + c]; the others are skipped. */
void ftcpumoe_reduce_out(struct ftcpumoe *x, int tid, int n, const float *p, size_t wstride, size_t bstride,
		       const uint8_t *touch);
/* ftcpumoe_reduce_out over pout (lazy: only the chunks marked in ptouch). */
void ftcpumoe_reduce_pout(struct ftcpumoe *x, int tid, int n, int lazy);
/* Prepare h of group g's slots for pass 2 into hq (NULL ops->prep: nothing to do). */
void ftcpumoe_prep_group_h(struct ftcpumoe *x, int g);
/* Before pass 2: h prepared for the slots of groups [ga, gb) into this worker's hpriv (lean_h,
 * no barrier), or every live slot's shared between the workers, then a barrier. */
void ftcpumoe_prep_h(struct ftcpumoe *x, int tid, int n, int ga, int gb);

/* ---- the schedules: one call's work on worker tid of n, after x is prepared */
void ftcpumoe_run_dyn(struct ftcpumoe *x, int tid, int n);    /* sched_dyn.c */
void ftcpumoe_run_flat(struct ftcpumoe *x, int tid, int n);   /* sched_static.c */
void ftcpumoe_run_rows(struct ftcpumoe *x, int tid, int n);   /* sched_static.c */
void ftcpumoe_run_k(struct ftcpumoe *x, int tid, int n);      /* ksplit.c */
void ftcpumoe_run_dyn_k(struct ftcpumoe *x, int tid, int n);  /* ksplit.c */

/* ---- tracing (tune.trace): per-worker sums, inline no-ops unless x->trace; trace.c */
/* The clock when tracing, else 0. */
static inline uint64_t ftcpumoe_trace_now(const struct ftcpumoe *x)
{
	return x->trace ? fttime_now_ns() : 0;
}

static inline void ftcpumoe_trace_start(struct ftcpumoe *x, int tid)
{
	if (x->trace)
		x->tr[tid].wake += fttime_now_ns() - x->t_post;
}

static inline void ftcpumoe_trace_item(struct ftcpumoe *x, int tid, uint64_t t0)
{
	if (x->trace) {
		x->tr[tid].items += fttime_now_ns() - t0;
		x->tr[tid].nitems++;
	}
}

static inline void ftcpumoe_trace_wait(struct ftcpumoe *x, int tid, uint64_t t0)
{
	if (x->trace)
		x->tr[tid].wait += fttime_now_ns() - t0;
}

static inline void ftcpumoe_trace_prep(struct ftcpumoe *x, int tid, uint64_t t0)
{
	if (x->trace)
		x->tr[tid].prep += fttime_now_ns() - t0;
}

static inline void ftcpumoe_trace_end(struct ftcpumoe *x, int tid, uint64_t t_last, uint64_t t_bar)
{
	if (x->trace) {
		uint64_t t = fttime_now_ns();
		x->tr[tid].idle += t_bar - t_last;
		x->tr[tid].after += t - t_bar;
		x->tr[tid].arrive = t_last;
		x->tr[tid].left = t_bar;
		x->tr[tid].end = t;
	}
}

/* Driver side, around ftpool_run of a traced step: when it was posted, and the step's sums. */
void ftcpumoe_trace_post(struct ftcpumoe *x);
void ftcpumoe_trace_step(struct ftcpumoe *x);
#endif
