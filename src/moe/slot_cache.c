#include "moe/slot_cache.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int ftsc_init(struct ftsc *sc, int layers, int experts, int slots)
{
	memset(sc, 0, sizeof *sc);
	if (layers <= 0 || experts <= 0 || experts > FTSC_MAX_EXPERTS || slots <= 0 ||
	    slots > FTSC_MAX_SLOTS || (long long)layers * experts > (1LL << 30))
		return -EINVAL;
	size_t ids = (size_t)layers * (size_t)experts;
	sc->layers = layers;
	sc->experts = experts;
	sc->slots = slots;
	sc->slot_for_id = malloc(ids * sizeof *sc->slot_for_id);
	sc->last_seen = calloc(ids, sizeof *sc->last_seen);
	sc->id_of_slot = malloc((size_t)slots * sizeof *sc->id_of_slot);
	sc->usage = calloc((size_t)slots, sizeof *sc->usage);
	if (!sc->slot_for_id || !sc->last_seen || !sc->id_of_slot || !sc->usage) {
		ftsc_release(sc);
		return -ENOMEM;
	}
	memset(sc->slot_for_id, 0xff, ids * sizeof *sc->slot_for_id);
	memset(sc->id_of_slot, 0xff, (size_t)slots * sizeof *sc->id_of_slot);
	return 0;
}

void ftsc_release(struct ftsc *sc)
{
	if (!sc)
		return;
	free(sc->slot_for_id);
	free(sc->last_seen);
	free(sc->id_of_slot);
	free(sc->usage);
	memset(sc, 0, sizeof *sc);
}

int ftsc_copy(struct ftsc *dst, const struct ftsc *src)
{
	if (dst->layers != src->layers || dst->experts != src->experts || dst->slots != src->slots)
		return -EINVAL;
	size_t ids = (size_t)src->layers * (size_t)src->experts;
	memcpy(dst->slot_for_id, src->slot_for_id, ids * sizeof *dst->slot_for_id);
	memcpy(dst->last_seen, src->last_seen, ids * sizeof *dst->last_seen);
	memcpy(dst->id_of_slot, src->id_of_slot, (size_t)src->slots * sizeof *dst->id_of_slot);
	memcpy(dst->usage, src->usage, (size_t)src->slots * sizeof *dst->usage);
	dst->step = src->step;
	return 0;
}

int ftsc_q16(double f)
{
	if (!(f > 0)) /* NaN and <= 0 */
		return 0;
	if (f >= 1)
		return 65536;
	double q = round(f * 65536.0);
	return q > 65536 ? 65536 : (int)q;
}

static int64_t split_cost(int64_t x, int64_t m, int64_t q)
{
	int64_t a = x * (65536 - q), b = (m - x) * q;
	return a > b ? a : b;
}

int ftsc_hybrid_fetch(int misses, int q16)
{
	if (misses <= 0)
		return 0;
	int64_t q = q16 < 0 ? 0 : q16 > 65536 ? 65536 : q16;
	int64_t m = misses, lo = (m * q) >> 16;
	int64_t fetch = split_cost(lo, m, q) <= split_cost(lo + 1, m, q) ? lo : lo + 1;
	return (int)(fetch < m ? fetch : m);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Put the k smallest of v[0..n) (distinct) in v[0..k), ascending. */
static void smallest_k(uint64_t *v, int n, int k)
{
	int lo = 0, hi = n - 1;
	while (lo < hi) { /* quickselect: v[k-1] ends at its sorted place */
		uint64_t p = v[lo + (hi - lo) / 2];
		int i = lo, j = hi;
		while (i <= j) {
			while (v[i] < p)
				i++;
			while (v[j] > p)
				j--;
			if (i <= j) {
				uint64_t t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		if (k - 1 <= j)
			hi = j;
		else if (k - 1 >= i)
			lo = i;
		else
			break;
	}
	qsort(v, (size_t)k, sizeof *v, cmp_u64);
}

static void fail_ids(int32_t *ids, int n, struct ftsc_plan *plan)
{
	for (int i = 0; i < n; i++)
		ids[i] = -1;
	if (plan) {
		plan->num_indices = 0;
		plan->num_missing_full = 0;
	}
}

/* The common body; h == NULL: plain ensure_experts. */
static int ensure(struct ftsc *sc, int layer, int32_t *ids, int n, const struct ftsc_hybrid *h,
		  struct ftsc_plan *plan)
{
	int E = sc->experts, C = sc->slots, r = 0;
	if (n < 0 || (n > 0 && !ids) || !plan)
		return -EINVAL;
	if (layer < 0 || layer >= sc->layers) {
		fail_ids(ids, n, plan);
		return -EINVAL;
	}
	const int64_t base = (int64_t)layer * E;
	int32_t *slot_for = sc->slot_for_id + base;
	int64_t *seen = sc->last_seen + base;
	/* Distinct ids in ascending order, split into hits and misses. */
	unsigned char *want = calloc((size_t)E, 1);
	int32_t *miss = malloc((size_t)E * sizeof *miss);
	uint64_t *keys = malloc(((size_t)(E > C ? E : C)) * sizeof *keys);
	if (!want || !miss || !keys) {
		r = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (ids[i] >= E) {
			fail_ids(ids, n, plan);
			r = -EINVAL;
			goto out;
		}
		if (ids[i] >= 0)
			want[ids[i]] = 1;
	}
	int distinct = 0, hits = 0, M = 0;
	for (int e = 0; e < E; e++) {
		if (!want[e])
			continue;
		distinct++;
		if (slot_for[e] >= 0)
			hits++;
		else
			miss[M++] = e;
	}
	int fetched = M;
	if (h) {
		fetched = h->max_fetch >= 0 ? (h->max_fetch < M ? h->max_fetch : M)
					    : ftsc_hybrid_fetch(M, h->q16);
		if (fetched > C - hits)
			fetched = C - hits;
	} else if (distinct > C) {
		fail_ids(ids, n, plan);
		r = -ENOSPC;
		goto out;
	}
	if (fetched > plan->cap) {
		fail_ids(ids, n, plan);
		r = -EINVAL;
		goto out;
	}
	const int64_t step = ++sc->step;
	for (int e = 0; e < E; e++)
		if (want[e] && slot_for[e] >= 0)
			sc->usage[slot_for[e]] = step;
	if (h && fetched < M) {
		/* Choose which misses are fetched; the rest stay -1. */
		if (h->order == FTSC_ORDER_RECENCY) {
			/* key: larger last_seen first, then lower id */
			for (int i = 0; i < M; i++)
				keys[i] = ((uint64_t)((INT64_C(1) << 39) - 1 - seen[miss[i]]) << 12) |
					  (uint64_t)miss[i];
			qsort(keys, (size_t)M, sizeof *keys, cmp_u64);
			memset(want, 0, (size_t)E); /* reuse as "selected" */
			for (int i = 0; i < fetched; i++)
				want[keys[i] & 0xfff] = 2;
			int k = 0;
			for (int i = 0; i < M; i++)
				if (want[miss[i]] == 2)
					miss[k++] = miss[i];
			/* restore want for last_seen below */
			memset(want, 0, (size_t)E);
			for (int i = 0; i < n; i++)
				if (ids[i] >= 0)
					want[ids[i]] = 1;
		}
		/* lowest id: the first `fetched` of miss[] (ascending) */
	}
	/* The coldest `fetched` slots not used in this step, ascending (usage, slot). */
	int ne = 0;
	for (int s = 0; s < C; s++)
		if (sc->usage[s] < step)
			keys[ne++] = ftsc_slot_key(sc->usage[s], s);
	if (fetched > 0)
		smallest_k(keys, ne, fetched);
	for (int i = 0; i < fetched; i++) {
		int s = (int)(keys[i] & 0xffffff), e = miss[i];
		int32_t old = sc->id_of_slot[s];
		if (old >= 0)
			sc->slot_for_id[old] = -1;
		sc->id_of_slot[s] = (int32_t)(base + e);
		slot_for[e] = s;
		sc->usage[s] = step;
		plan->src_indices[i] = e;
		plan->evict_slots[i] = s;
	}
	plan->num_indices = fetched;
	plan->num_missing_full = M;
	for (int e = 0; e < E; e++)
		if (want[e])
			seen[e] = step;
	for (int i = 0; i < n; i++)
		ids[i] = ids[i] >= 0 ? slot_for[ids[i]] : -1;
out:
	free(want);
	free(miss);
	free(keys);
	return r;
}

int ftsc_ensure(struct ftsc *sc, int layer, int32_t *ids, int n, struct ftsc_plan *plan)
{
	return ensure(sc, layer, ids, n, NULL, plan);
}

int ftsc_ensure_hybrid(struct ftsc *sc, int layer, int32_t *ids, int n, const struct ftsc_hybrid *h,
		       struct ftsc_plan *plan)
{
	if (!h)
		return -EINVAL;
	return ensure(sc, layer, ids, n, h, plan);
}
