/* slot_cache: the C reference of the GPU slot cache (reference §3): ensure_experts and the
 * hybrid fetch split. CI tests it on hand-worked cases and the GPU kernels (kernels/slot_cache.h)
 * must match it bit for bit.
 *
 * State (owned by struct ftsc, allocated by ftsc_init, freed by ftsc_release):
 *   slot_for_id [L*E]  slot of flat id layer*E + expert, -1 = not resident
 *   id_of_slot  [C]    flat id held by a slot, -1 = empty
 *   usage       [C]    step at which the slot was last used (0 = never)
 *   last_seen   [L*E]  step at which the flat id was last asked for (0 = never): the "recency"
 *                      of the hybrid fetch order (reference §3 says only "most recently active")
 *   step               incremented once per successful call
 *
 * ensure_experts(layer, ids[n]) — ids are expert numbers within the layer, rewritten in place:
 *   step += 1; negative ids are ignored (stay -1); duplicates collapse; a hit sets
 *   usage[slot] = step and rewrites the id to its slot; misses, in ascending id, each take the
 *   coldest slot (lowest usage, then lowest slot) among slots not used in this step
 *   (usage < step); the evicted owner's slot_for_id becomes -1. The plan lists, in that order,
 *   src_indices[i] (the expert row within the layer) and evict_slots[i] (its new slot);
 *   num_indices = misses copied, num_missing_full = all misses. last_seen of every asked id
 *   becomes step.
 *
 * Hybrid (ensure_experts_hybrid): hits as above; of the M misses only `fetched` get slots and a
 * plan entry, the others are rewritten to -1 (computed on the CPU). fetched = min(M, max_fetch)
 * when max_fetch >= 0, else the Q16 split of ftsc_hybrid_fetch(M, q16); in both cases at most the
 * slots left after the hits (C - hits). Which misses: FTSC_ORDER_RECENCY = largest last_seen
 * first, ties lower id; FTSC_ORDER_LOWEST_ID = lowest id first. The fetched misses then take
 * their slots in ascending id, exactly as in ensure_experts.
 *
 * Errors (state, step and plan unchanged except num_indices = num_missing_full = 0; every id
 * set to -1 so nothing downstream reads a stale slot): -ENOSPC when the distinct ids asked for
 * exceed C (a cache smaller than the active set; plain ensure only), -EINVAL when an id >= E,
 * the layer is out of range or the plan cannot hold the entries this call would emit.
 * Limits shared with the GPU: E <= FTSC_MAX_EXPERTS, C < 2^24, step < 2^39. */
#ifndef FT_MOE_SLOT_CACHE_H
#define FT_MOE_SLOT_CACHE_H
#include <stdint.h>

#define FTSC_MAX_EXPERTS 2048
#define FTSC_MAX_SLOTS ((1 << 24) - 1)

enum ftsc_order { FTSC_ORDER_RECENCY = 0, FTSC_ORDER_LOWEST_ID = 1 };

struct ftsc {
	int layers, experts, slots;
	int32_t *slot_for_id;
	int32_t *id_of_slot;
	int64_t *usage;
	int64_t *last_seen;
	int64_t step;
};

struct ftsc_plan {
	int32_t *src_indices; /* caller's arrays of cap entries */
	int32_t *evict_slots;
	int cap;
	int num_indices;
	int num_missing_full;
};

struct ftsc_hybrid {
	int max_fetch;        /* >= 0: fixed cap; < 0: the Q16 split with q16 */
	int q16;              /* ftsc_q16(fraction) */
	enum ftsc_order order;
};

/* Empty cache: every slot empty (-1), usage 0, step 0. 0, -EINVAL or -ENOMEM. */
int ftsc_init(struct ftsc *sc, int layers, int experts, int slots);
void ftsc_release(struct ftsc *sc); /* accepts NULL and a zeroed struct */
/* Deep copy of src into dst (dst initialised by ftsc_init with the same geometry). */
int ftsc_copy(struct ftsc *dst, const struct ftsc *src);

int ftsc_ensure(struct ftsc *sc, int layer, int32_t *ids, int n, struct ftsc_plan *plan);
int ftsc_ensure_hybrid(struct ftsc *sc, int layer, int32_t *ids, int n, const struct ftsc_hybrid *h,
		       struct ftsc_plan *plan);

/* q = round(f * 65536) clamped to [0, 65536] (NaN -> 0). */
int ftsc_q16(double fraction);
/* The Q16 split of reference §3: lo = (M*q)>>16; cost(x) = max(x*(65536-q), (M-x)*q);
 * fetch = lo if cost(lo) <= cost(lo+1) else lo+1; returns min(M, fetch). M >= 0. */
int ftsc_hybrid_fetch(int misses, int q16);

/* The ordering key of a slot: (usage, slot) as one integer, smaller = colder. */
static inline uint64_t ftsc_slot_key(int64_t usage, int slot)
{
	return ((uint64_t)usage << 24) | (uint64_t)slot;
}
#endif
