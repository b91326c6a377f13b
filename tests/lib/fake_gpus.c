/* The CLI's test doubles (cli.h): fake GPUs and fixed-figure bw measurements. Linked only into
 * test builds (the Makefile's ftbench_hooks, whose CLI objects are compiled with FT_TEST_HOOKS);
 * the product ftbench has none of this.
 *
 * FTBENCH_TEST_FAKE_GPUS=N (0..16) makes the host look like one with N fake GPUs ("Fake GPU",
 * uuids GPU-fa4e0000-...-0000000000NN) and `bw` measure with fake, fixed figures (no CUDA, no CPU
 * load); `cache-copy` prints what it would run and stops. */
#ifndef FT_TEST_HOOKS
#error "tests/lib/fake_gpus.c belongs to test builds (FT_TEST_HOOKS) only"
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/bw.h"
#include "cli/cli.h"
#include "util/strutil.h"

#define FAKE_GPUS_ENV "FTBENCH_TEST_FAKE_GPUS"

int ftcli_fake_gpus(void)
{
	const char *e = getenv(FAKE_GPUS_ENV);
	long v;
	if (!e || !*e)
		return -1;
	return ftstr_parse_long(e, 0, 16, &v) < 0 ? -1 : (int)v;
}

int ftcli_fake_gpu_list(int fake, struct ftgpu_info **out, int *n, char *why, size_t whylen)
{
	*n = fake;
	*out = NULL;
	if (!fake) {
		snprintf(why, whylen, "no CUDA device (%s=0)", FAKE_GPUS_ENV);
		return 0;
	}
	struct ftgpu_info *v = calloc((size_t)fake, sizeof *v);
	if (!v)
		return -ENOMEM;
	for (int i = 0; i < fake; i++) {
		v[i].index = i;
		snprintf(v[i].uuid, sizeof v[i].uuid, "GPU-fa4e0000-0000-4000-8000-0000000000%02d", i);
		snprintf(v[i].name, sizeof v[i].name, "Fake GPU");
		snprintf(v[i].pci_bus_id, sizeof v[i].pci_bus_id, "0000DEAD:%02X:00.0", i);
		v[i].mem_total = 1ull << 34;
		v[i].cc_major = 9;
		v[i].numa_node = -1;
	}
	*out = v;
	return 0;
}

/* Fixed figures instead of measurements (the variable above): the whole command runs in
 * milliseconds, without CUDA, with the real planning, decision and profile. */
static double *fake_samples(double v, int n)
{
	double *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
	for (int i = 0; a && i < n; i++)
		a[i] = v * (0.99 + 0.01 * (i % 3));
	return a;
}

static int fake_cpu_read(void *ctx, const struct ftbw_env *env, int passes, double *gbs, char *err, size_t n)
{
	for (int i = 0; i < passes; i++)
		gbs[i] = 100.0 * (0.99 + 0.01 * (i % 3));
	return 0;
}

static int fake_pcie(void *ctx, const struct ftbw_env *env, bool h2d, size_t bytes, int iters, double *gbs,
		     char *err, size_t n)
{
	for (int i = 0; i < iters; i++)
		gbs[i] = h2d ? 55.0 : 53.0;
	return 0;
}

static int fake_part(struct ftbw_part *p, double v, int n)
{
	if (!(p->gbs = fake_samples(v, n)))
		return -ENOMEM;
	p->rc = 0;
	p->n = n;
	return 0;
}

static int fake_measure(void *ctx, const struct ftbw_env *env, const struct ftbw_config *c,
			const struct ftbw_item *it, struct ftbw_meas *m, char *err, size_t n)
{
	/* CPU MoE 30..70 GB/s by format, gather 25 GB/s: some formats hybrid, some offload */
	double cpu = 30.0 + 10.0 * (it->fmt->id % 5), gather = 25.0;
	int r = 0;
	if (it->fmt->cpu_path) {
		r = fake_part(&m->cpu, cpu, c->kernel_cpu_iters);
		snprintf(m->cpu_isa, sizeof m->cpu_isa, "scalar");
	}
	if (r == 0 && env->gpu)
		r = fake_part(&m->gather, gather, c->kernel_pcie_iters);
	if (r == 0 && env->gpu && it->fmt->cpu_path && c->overlap_s > 0) {
		r = fake_part(&m->ov_cpu, 0.8 * cpu, 3);
		if (r == 0)
			r = fake_part(&m->ov_gather, 0.8 * gather, 3);
	}
	if (r < 0)
		snprintf(err, n, "out of memory");
	return r;
}

int ftcli_fake_bw_ops(struct ftbw_ops *ops)
{
	if (ftcli_fake_gpus() < 0)
		return -1;
	*ops = (struct ftbw_ops){.cpu_read = fake_cpu_read, .pcie_linear = fake_pcie, .measure = fake_measure};
	return 0;
}
