/* slot_cache: the C reference of ensure_experts and the hybrid split (reference §3), on cases
 * worked out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "moe/slot_cache.h"

#define CAP 64
static int32_t src_buf[CAP], dst_buf[CAP];

static struct ftsc_plan plan(void)
{
	return (struct ftsc_plan){src_buf, dst_buf, CAP, -7, -7};
}

static void ids_eq(const int32_t *got, const int32_t *want, int n)
{
	for (int i = 0; i < n; i++)
		if (got[i] != want[i])
			fail_msg("ids[%d] = %d, want %d", i, got[i], want[i]);
}

static void check_consistent(const struct ftsc *sc)
{
	for (int s = 0; s < sc->slots; s++)
		if (sc->id_of_slot[s] >= 0)
			assert_int_equal(sc->slot_for_id[sc->id_of_slot[s]], s);
	for (int f = 0; f < sc->layers * sc->experts; f++)
		if (sc->slot_for_id[f] >= 0)
			assert_int_equal(sc->id_of_slot[sc->slot_for_id[f]], f);
}

/* L=2, E=4, C=3: misses, hits, duplicates, evictions across layers, ties. */
static void test_sequence(void **st)
{
	struct ftsc sc;
	assert_int_equal(ftsc_init(&sc, 2, 4, 3), 0);
	struct ftsc_plan p = plan();

	/* step 1: {0,2} miss in ascending id, empty slots 0,1 (usage 0, lowest slot) */
	int32_t a[] = {2, 0, 2};
	assert_int_equal(ftsc_ensure(&sc, 0, a, 3, &p), 0);
	ids_eq(a, (int32_t[]){1, 0, 1}, 3);
	assert_int_equal(p.num_indices, 2);
	assert_int_equal(p.num_missing_full, 2);
	ids_eq(p.src_indices, (int32_t[]){0, 2}, 2);
	ids_eq(p.evict_slots, (int32_t[]){0, 1}, 2);
	assert_int_equal(sc.step, 1);
	assert_int_equal(sc.usage[0], 1);
	assert_int_equal(sc.usage[1], 1);

	/* step 2: layer 1 expert 1 (flat 5) takes the only unused slot 2; layer 0's expert 1 is a
	 * different id and does not hit */
	int32_t b[] = {1};
	assert_int_equal(ftsc_ensure(&sc, 1, b, 1, &p), 0);
	assert_int_equal(b[0], 2);
	assert_int_equal(sc.id_of_slot[2], 5);
	assert_int_equal(sc.slot_for_id[5], 2);
	assert_int_equal(sc.slot_for_id[1], -1);

	/* step 3: 0 hits (slot 0 -> usage 3); 3 misses: slot 1 (usage 1) is colder than slot 2
	 * (usage 2): layer 0 expert 2 is evicted */
	int32_t c[] = {3, 0};
	assert_int_equal(ftsc_ensure(&sc, 0, c, 2, &p), 0);
	ids_eq(c, (int32_t[]){1, 0}, 2);
	assert_int_equal(p.num_indices, 1);
	assert_int_equal(p.src_indices[0], 3);
	assert_int_equal(p.evict_slots[0], 1);
	assert_int_equal(sc.slot_for_id[2], -1);
	assert_int_equal(sc.usage[0], 3);

	/* step 4: 2 misses, slot 2 (usage 2) is coldest: layer 1's expert is evicted */
	int32_t d[] = {2};
	assert_int_equal(ftsc_ensure(&sc, 0, d, 1, &p), 0);
	assert_int_equal(d[0], 2);
	assert_int_equal(sc.slot_for_id[5], -1);
	assert_int_equal(sc.id_of_slot[2], 2);

	/* step 5: usage = {3,3,4}; a tie between slots 0 and 1 goes to the lower slot */
	int32_t e[] = {0};
	assert_int_equal(ftsc_ensure(&sc, 1, e, 1, &p), 0);
	assert_int_equal(e[0], 0);
	assert_int_equal(sc.slot_for_id[0], -1); /* layer 0 expert 0 evicted */
	assert_int_equal(sc.id_of_slot[0], 4);

	/* step 6: all hits (with duplicates and ignored -1): no plan entries */
	int32_t f[] = {3, -1, 2, 3};
	assert_int_equal(ftsc_ensure(&sc, 0, f, 4, &p), 0);
	ids_eq(f, (int32_t[]){1, -1, 2, 1}, 4);
	assert_int_equal(p.num_indices, 0);
	assert_int_equal(p.num_missing_full, 0);
	assert_int_equal(sc.usage[1], 6);
	assert_int_equal(sc.usage[2], 6);
	assert_int_equal(sc.usage[0], 5);
	assert_int_equal(sc.last_seen[3], 6);
	check_consistent(&sc);
	ftsc_release(&sc);
}

/* A miss may not take a slot used (hit or filled) in the same step. */
static void test_not_used_this_step(void **st)
{
	struct ftsc sc;
	assert_int_equal(ftsc_init(&sc, 1, 8, 3), 0);
	struct ftsc_plan p = plan();
	int32_t a[] = {7};
	assert_int_equal(ftsc_ensure(&sc, 0, a, 1, &p), 0); /* 7 -> slot 0, usage 1 */
	/* step 2: 7 hits slot 0; 1, 4 miss and take slots 1, 2 (usage 0 < 2) even though slot 0 is
	 * "colder" by nothing: it was used in this step */
	int32_t b[] = {4, 7, 1};
	assert_int_equal(ftsc_ensure(&sc, 0, b, 3, &p), 0);
	ids_eq(b, (int32_t[]){2, 0, 1}, 3);
	ids_eq(p.src_indices, (int32_t[]){1, 4}, 2);
	ids_eq(p.evict_slots, (int32_t[]){1, 2}, 2);
	/* step 3: 0 and 5 miss; all usage 2 -> slots 0 and 1 by lowest slot */
	int32_t c[] = {5, 0};
	assert_int_equal(ftsc_ensure(&sc, 0, c, 2, &p), 0);
	ids_eq(c, (int32_t[]){1, 0}, 2);
	ids_eq(p.src_indices, (int32_t[]){0, 5}, 2);
	ids_eq(p.evict_slots, (int32_t[]){0, 1}, 2);
	assert_int_equal(sc.slot_for_id[7], -1);
	assert_int_equal(sc.slot_for_id[1], -1);
	assert_int_equal(sc.slot_for_id[4], 2);
	check_consistent(&sc);
	ftsc_release(&sc);
}

/* A cache smaller than the active set: -ENOSPC, state unchanged, ids -1. */
static void test_too_small(void **st)
{
	struct ftsc sc, before;
	assert_int_equal(ftsc_init(&sc, 2, 4, 3), 0);
	assert_int_equal(ftsc_init(&before, 2, 4, 3), 0);
	struct ftsc_plan p = plan();
	int32_t a[] = {1};
	assert_int_equal(ftsc_ensure(&sc, 1, a, 1, &p), 0);
	assert_int_equal(ftsc_copy(&before, &sc), 0);
	int32_t b[] = {0, 1, 2, 3, 1};
	assert_int_equal(ftsc_ensure(&sc, 0, b, 5, &p), -ENOSPC);
	ids_eq(b, (int32_t[]){-1, -1, -1, -1, -1}, 5);
	assert_int_equal(p.num_indices, 0);
	assert_int_equal(sc.step, before.step);
	assert_memory_equal(sc.slot_for_id, before.slot_for_id, 8 * sizeof(int32_t));
	assert_memory_equal(sc.id_of_slot, before.id_of_slot, 3 * sizeof(int32_t));
	assert_memory_equal(sc.usage, before.usage, 3 * sizeof(int64_t));
	assert_memory_equal(sc.last_seen, before.last_seen, 8 * sizeof(int64_t));
	/* 3 distinct of 5 entries fit */
	int32_t c[] = {0, 1, 2, 1, 0};
	assert_int_equal(ftsc_ensure(&sc, 0, c, 5, &p), 0);
	/* bad ids and layers */
	int32_t d[] = {4};
	assert_int_equal(ftsc_ensure(&sc, 0, d, 1, &p), -EINVAL);
	assert_int_equal(d[0], -1);
	int32_t e[] = {0};
	assert_int_equal(ftsc_ensure(&sc, 2, e, 1, &p), -EINVAL);
	/* a plan too small for the misses */
	struct ftsc_plan small = {src_buf, dst_buf, 1, 0, 0};
	int32_t f[] = {3, 1};
	assert_int_equal(ftsc_ensure(&sc, 0, f, 2, &small), 0); /* 1 hits, 3 misses: one entry */
	assert_int_equal(small.num_indices, 1);
	int32_t g[] = {0, 2};
	assert_int_equal(ftsc_ensure(&sc, 1, g, 2, &small), -EINVAL);
	check_consistent(&sc);
	ftsc_release(&before);
	ftsc_release(&sc);
	ftsc_release(NULL);
}

/* Q16 split: hand values and a brute-force argmin for M = 0..64 and several fractions. */
static void test_hybrid_split(void **st)
{
	assert_int_equal(ftsc_q16(0.5), 32768);
	assert_int_equal(ftsc_q16(-1), 0);
	assert_int_equal(ftsc_q16(2), 65536);
	assert_int_equal(ftsc_q16(1.0 / 3), 21845);
	assert_int_equal(ftsc_hybrid_fetch(8, 32768), 4);
	assert_int_equal(ftsc_hybrid_fetch(7, 32768), 3); /* tie between 3 and 4 -> lo */
	assert_int_equal(ftsc_hybrid_fetch(10, 16384), 2);
	assert_int_equal(ftsc_hybrid_fetch(3, ftsc_q16(0.9)), 3);
	assert_int_equal(ftsc_hybrid_fetch(64, 65536), 64);
	assert_int_equal(ftsc_hybrid_fetch(64, 0), 0);
	assert_int_equal(ftsc_hybrid_fetch(0, 40000), 0);
	const double fr[] = {0, 0.01, 0.1, 0.25, 1.0 / 3, 0.5, 0.6180339, 0.7, 0.9, 0.999, 1};
	for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) {
		int64_t q = ftsc_q16(fr[i]);
		for (int M = 0; M <= 64; M++) {
			int best = 0;
			int64_t bc = INT64_MAX;
			for (int x = 0; x <= M; x++) {
				int64_t a = x * (65536 - q), b = (M - x) * q, c = a > b ? a : b;
				if (c < bc) {
					bc = c;
					best = x;
				}
			}
			if (ftsc_hybrid_fetch(M, (int)q) != best)
				fail_msg("M=%d f=%g: %d, want %d", M, fr[i], ftsc_hybrid_fetch(M, (int)q), best);
		}
	}
}

/* Hybrid ensure: fetch order by recency and by lowest id, the clamp to free slots. */
static void hybrid_setup(struct ftsc *sc)
{
	struct ftsc_plan p = plan();
	assert_int_equal(ftsc_init(sc, 1, 8, 2), 0);
	int32_t a[] = {5}, b[] = {3}, c[] = {6, 7};
	assert_int_equal(ftsc_ensure(sc, 0, a, 1, &p), 0); /* 5 -> 0 */
	assert_int_equal(ftsc_ensure(sc, 0, b, 1, &p), 0); /* 3 -> 1 */
	assert_int_equal(ftsc_ensure(sc, 0, c, 2, &p), 0); /* 6 -> 0, 7 -> 1 */
	/* last_seen: 5:1 3:2 6:3 7:3, others 0 */
}

static void test_hybrid_orders(void **st)
{
	struct ftsc sc;
	struct ftsc_plan p = plan();
	hybrid_setup(&sc);
	struct ftsc_hybrid h = {1, 0, FTSC_ORDER_RECENCY};
	int32_t a[] = {1, 3, 5, 6, 3};
	assert_int_equal(ftsc_ensure_hybrid(&sc, 0, a, 5, &h, &p), 0);
	/* 6 hits slot 0; misses 1 (seen 0), 3 (seen 2), 5 (seen 1): recency fetches 3 into slot 1 */
	ids_eq(a, (int32_t[]){-1, 1, -1, 0, 1}, 5);
	assert_int_equal(p.num_indices, 1);
	assert_int_equal(p.num_missing_full, 3);
	assert_int_equal(p.src_indices[0], 3);
	assert_int_equal(p.evict_slots[0], 1);
	assert_int_equal(sc.slot_for_id[7], -1);
	assert_int_equal(sc.slot_for_id[1], -1);
	assert_int_equal(sc.last_seen[1], 4); /* asked, though computed on the CPU */
	ftsc_release(&sc);

	hybrid_setup(&sc);
	h.order = FTSC_ORDER_LOWEST_ID;
	h.max_fetch = 5; /* clamped to the one slot left after the hit */
	int32_t b[] = {1, 3, 5, 6};
	assert_int_equal(ftsc_ensure_hybrid(&sc, 0, b, 4, &h, &p), 0);
	ids_eq(b, (int32_t[]){1, -1, -1, 0}, 4);
	assert_int_equal(p.num_indices, 1);
	assert_int_equal(p.src_indices[0], 1);
	ftsc_release(&sc);

	/* recency ties -> lower id; fraction split; max_fetch 0 sends all to the CPU */
	assert_int_equal(ftsc_init(&sc, 2, 8, 8), 0);
	h = (struct ftsc_hybrid){-1, ftsc_q16(0.5), FTSC_ORDER_RECENCY};
	int32_t c[] = {7, 2, 4, 6};
	assert_int_equal(ftsc_ensure_hybrid(&sc, 1, c, 4, &h, &p), 0);
	/* M = 4, f = .5 -> 2; all last_seen 0 -> ids 2 and 4, into slots 0 and 1 */
	ids_eq(c, (int32_t[]){-1, 0, 1, -1}, 4);
	ids_eq(p.src_indices, (int32_t[]){2, 4}, 2);
	ids_eq(p.evict_slots, (int32_t[]){0, 1}, 2);
	assert_int_equal(p.num_missing_full, 4);
	/* now 7 and 6 were seen at step 1, 3 never: of {3, 6, 7} recency takes 6 then 7 */
	h.q16 = ftsc_q16(0.7); /* M = 3: lo = 2, cost(2) = max(2*19661, 45875) < cost(3) -> 2 */
	int32_t d[] = {3, 7, 6, 2};
	assert_int_equal(ftsc_ensure_hybrid(&sc, 1, d, 4, &h, &p), 0);
	ids_eq(d, (int32_t[]){-1, 3, 2, 0}, 4);
	ids_eq(p.src_indices, (int32_t[]){6, 7}, 2);
	ids_eq(p.evict_slots, (int32_t[]){2, 3}, 2);
	h.max_fetch = 0;
	int32_t e[] = {5};
	assert_int_equal(ftsc_ensure_hybrid(&sc, 1, e, 1, &h, &p), 0);
	assert_int_equal(e[0], -1);
	assert_int_equal(p.num_indices, 0);
	assert_int_equal(p.num_missing_full, 1);
	check_consistent(&sc);
	ftsc_release(&sc);
}

/* Random steps: the state stays a bijection and every id maps to its own expert. */
static void test_random_invariants(void **st)
{
	struct ftsc sc;
	assert_int_equal(ftsc_init(&sc, 3, 16, 20), 0);
	struct ftsc_plan p = plan();
	uint32_t rng = 12345;
	for (int it = 0; it < 20000; it++) {
		int layer = (int)((rng = rng * 1664525u + 1013904223u) >> 8) % 3;
		int n = 1 + (int)((rng = rng * 1664525u + 1013904223u) >> 8) % 24;
		int32_t ids[24], orig[24];
		for (int i = 0; i < n; i++)
			orig[i] = ids[i] = (int)((rng = rng * 1664525u + 1013904223u) >> 8) % 16;
		int r;
		if (it & 1) {
			struct ftsc_hybrid h = {-1, ftsc_q16((it % 7) / 6.0), (enum ftsc_order)(it % 3 == 0)};
			r = ftsc_ensure_hybrid(&sc, layer, ids, n, &h, &p);
			assert_int_equal(r, 0);
		} else {
			r = ftsc_ensure(&sc, layer, ids, n, &p);
			int distinct = 0;
			for (int e = 0; e < 16; e++)
				for (int i = 0; i < n; i++)
					if (orig[i] == e) {
						distinct++;
						break;
					}
			assert_int_equal(r, distinct > 20 ? -ENOSPC : 0);
			if (r)
				continue;
		}
		for (int i = 0; i < n; i++)
			if (ids[i] >= 0)
				assert_int_equal(sc.id_of_slot[ids[i]], layer * 16 + orig[i]);
			else
				assert_true(it & 1);
		for (int i = 0; i < p.num_indices; i++)
			assert_int_equal(sc.usage[p.evict_slots[i]], sc.step);
	}
	check_consistent(&sc);
	ftsc_release(&sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequence),
		cmocka_unit_test(test_not_used_this_step),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_hybrid_split),
		cmocka_unit_test(test_hybrid_orders),
		cmocka_unit_test(test_random_invariants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
