#include "replay/policy.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define FTRP_MAX_ROUTES (32 * 16) /* FTCPUMOE_MAX_BATCH * FTCPUMOE_MAX_TOPK */

void ftrp_policy_fraction(struct ftrp_policy *p, double f)
{
	memset(p, 0, sizeof *p);
	p->mode = FTRP_MODE_FRACTION;
	p->fraction = f;
	p->order = FTSC_ORDER_RECENCY;
	p->overlap = 1;
}

void ftrp_policy_cap(struct ftrp_policy *p, int cap)
{
	ftrp_policy_fraction(p, 0);
	p->mode = FTRP_MODE_CAP;
	p->cap = cap;
}

void ftrp_policy_offload(struct ftrp_policy *p)
{
	ftrp_policy_fraction(p, 0);
	p->mode = FTRP_MODE_OFFLOAD;
}

int ftrp_policy_hybrid_at(const struct ftrp_policy *p, int B)
{
	if (p->mode == FTRP_MODE_OFFLOAD)
		return 0;
	return !(p->offload_from_batch > 0 && B >= p->offload_from_batch);
}

const char *ftrp_mode_name(enum ftrp_mode m)
{
	switch (m) {
	case FTRP_MODE_OFFLOAD: return "offload";
	case FTRP_MODE_CAP: return "hybrid_cap";
	case FTRP_MODE_FRACTION: return "hybrid_fraction";
	}
	return "?";
}

int ftrp_policy_check(const struct ftrp_policy *p)
{
	if (!p || (p->mode != FTRP_MODE_OFFLOAD && p->mode != FTRP_MODE_CAP && p->mode != FTRP_MODE_FRACTION))
		return -EINVAL;
	if (p->mode == FTRP_MODE_CAP && p->cap < 0)
		return -EINVAL;
	if (p->mode == FTRP_MODE_FRACTION && !(p->fraction >= 0 && p->fraction <= 1))
		return -EINVAL;
	if (p->order != FTSC_ORDER_RECENCY && p->order != FTSC_ORDER_LOWEST_ID)
		return -EINVAL;
	if (p->offload_from_batch < 0)
		return -EINVAL;
	return 0;
}

void ftrp_counts_add(struct ftrp_counts *a, const struct ftrp_counts *b)
{
	a->layer_steps += b->layer_steps;
	a->active += b->active;
	a->misses += b->misses;
	a->fetched += b->fetched;
	a->cpu += b->cpu;
	a->cpu_routes += b->cpu_routes;
}

double ftrp_counts_miss_rate(const struct ftrp_counts *c)
{
	return c->active > 0 ? (double)c->misses / (double)c->active : NAN;
}

int ftrp_ref_layer(struct ftsc *sc, const struct ftrp_policy *p, int layer, int B, int K, const int32_t *ids,
		   int32_t *slots, int32_t *cpu_ids, struct ftsc_plan *plan, struct ftrp_counts *c)
{
	int n = B * K, r;
	if (ftrp_policy_check(p) || B < 1 || K < 1 || n > FTRP_MAX_ROUTES || !ids || !slots || !cpu_ids || !plan)
		return -EINVAL;
	/* distinct ids asked for (the active count the seed's stats keep) */
	int distinct = 0;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = ids[j] == ids[i];
		distinct += !seen && ids[i] >= 0;
	}
	memcpy(slots, ids, (size_t)n * sizeof *slots);
	if (ftrp_policy_hybrid_at(p, B)) {
		struct ftsc_hybrid h = {.max_fetch = p->mode == FTRP_MODE_CAP ? p->cap : -1,
					.q16 = p->mode == FTRP_MODE_FRACTION ? ftsc_q16(p->fraction) : 0,
					.order = p->order};
		r = ftsc_ensure_hybrid(sc, layer, slots, n, &h, plan);
	} else {
		r = ftsc_ensure(sc, layer, slots, n, plan);
	}
	if (r < 0)
		return r;
	int cpu_routes = 0;
	for (int i = 0; i < n; i++) {
		cpu_ids[i] = slots[i] < 0 ? ids[i] : -1;
		cpu_routes += slots[i] < 0 && ids[i] >= 0;
	}
	if (c) {
		c->layer_steps++;
		c->active += distinct;
		c->misses += plan->num_missing_full;
		c->fetched += plan->num_indices;
		c->cpu += plan->num_missing_full - plan->num_indices;
		c->cpu_routes += cpu_routes;
	}
	return 0;
}
