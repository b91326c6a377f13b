/* The real ftbench with a fault injected through the bw operations: linked with
 * -Wl,--wrap=ftbw_real_ops (Makefile: $(BUILD)/tests/integration/ftbench_bwfault), so `ftbench bw`
 * gets the real measurements with one of them failing as a real one can (a sticky CUDA error, a
 * failed allocation): the run must stop and leave no profile, partial or whole, anywhere.
 * FT_TEST_BW_FAIL=measure:N   the Nth item's measure() fails with -EIO (the items before it
 *                             are measured for real)
 * FT_TEST_BW_FAIL=cpu_read    the CPU read ceiling fails with -EIO
 * Unset: the real operations, unchanged. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bw.h"
#include "bench/bw_ops.h"

struct ftbw_ops __real_ftbw_real_ops(struct ftbw_real *r);
struct ftbw_ops __wrap_ftbw_real_ops(struct ftbw_real *r);

static struct ftbw_ops real;
static int fail_item, items;

static int faulty_measure(void *ctx, const struct ftbw_env *env, const struct ftbw_config *c,
			  const struct ftbw_item *it, struct ftbw_meas *m, char *err, size_t errlen)
{
	if (++items == fail_item) {
		snprintf(err, errlen, "injected failure measuring %s", it->label);
		return -EIO;
	}
	return real.measure(ctx, env, c, it, m, err, errlen);
}

static int faulty_cpu_read(void *ctx, const struct ftbw_env *env, int passes, double *gbs, char *err,
			   size_t errlen)
{
	snprintf(err, errlen, "injected failure of the CPU read ceiling");
	return -EIO;
}

struct ftbw_ops __wrap_ftbw_real_ops(struct ftbw_real *r)
{
	real = __real_ftbw_real_ops(r);
	struct ftbw_ops o = real;
	const char *f = getenv("FT_TEST_BW_FAIL");
	if (f && !strncmp(f, "measure:", 8)) {
		fail_item = atoi(f + 8);
		o.measure = faulty_measure;
	} else if (f && !strcmp(f, "cpu_read")) {
		o.cpu_read = faulty_cpu_read;
	}
	return o;
}
