/* bw over several GPUs (ftbw_run_host) on fake measurements: the core split, the engines running
 * every phase at once, the concurrent blocks and their verdicts, the deployment, the schema; and
 * the placement on a fake sysfs tree of two NUMA nodes (CPU probe, GPU nodes, PCIe relations). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bw.h"
#include "cli/bw_print.h"
#include "bw_fake.h"
#include "../lib/tmpdir.h"
#include "hw/topo.h"
#include "util/fsutil.h"
#include "../schema.h"

/* ---------------------------------------------------------------- fake sysfs of two nodes */

/* Two sockets, one NUMA node each, 2 cores x 2 SMT threads per socket (cpus 0-3: node 0; 4-7:
 * node 1). PCIe: host bridge pci0000:00 (node 0) with a root port 00:01.0 above a switch
 * (01:00.0 up, 02:00.0 and 02:01.0 down) holding GPU A (03:00.0) and GPU B (04:00.0), a second
 * switch under the same root port holding GPU D (06:00.0), and GPU E on root port 00:02.0;
 * host bridge pci0000:80 (node 1) with GPU C (81:00.0). */
static char root[256];

static void put(const char *rel, const char *text)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	assert_int_equal(tmpdir_put(path, text, strlen(text)), 0);
}

static void pci_dev(const char *devpath, const char *id, int node)
{
	char rel[512], link[1024], target[512], buf[16];
	snprintf(rel, sizeof rel, "sys/devices/%s/numa_node", devpath);
	snprintf(buf, sizeof buf, "%d\n", node);
	put(rel, buf);
	snprintf(rel, sizeof rel, "sys/devices/%s/current_link_speed", devpath);
	put(rel, "32.0 GT/s PCIe\n");
	snprintf(rel, sizeof rel, "sys/devices/%s/current_link_width", devpath);
	put(rel, "16\n");
	snprintf(link, sizeof link, "%s/sys/bus/pci/devices", root);
	assert_int_equal(ftfs_mkdir_p(link, 0755), 0);
	snprintf(link, sizeof link, "%s/sys/bus/pci/devices/%s", root, id);
	snprintf(target, sizeof target, "../../../devices/%s", devpath);
	assert_int_equal(symlink(target, link), 0);
}

static int make_tree(void **s)
{
	if (tmpdir_make(root, sizeof root, "ftbw_host_sysfs") < 0)
		return -1;
	put("sys/devices/system/cpu/online", "0-7\n");
	for (int c = 0; c < 8; c++) {
		char rel[256], buf[16];
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/core_id", c);
		snprintf(buf, sizeof buf, "%d\n", c % 2); /* cpu c and c+2 are SMT siblings */
		put(rel, buf);
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		snprintf(buf, sizeof buf, "%d\n", c / 4);
		put(rel, buf);
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/node%d/.keep", c, c / 4);
		put(rel, "");
	}
	put("sys/devices/system/node/node0/cpulist", "0-3\n");
	put("sys/devices/system/node/node1/cpulist", "4-7\n");
	pci_dev("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", "0000:03:00.0", 0);
	pci_dev("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", "0000:04:00.0", 0);
	pci_dev("pci0000:00/0000:00:01.0/0000:05:00.0/0000:06:00.0", "0000:06:00.0", 0);
	pci_dev("pci0000:00/0000:00:02.0/0000:07:00.0", "0000:07:00.0", 0);
	pci_dev("pci0000:80/0000:80:01.0/0000:81:00.0", "0000:81:00.0", 1);
	return 0;
}

static int remove_tree(void **s)
{
	return tmpdir_remove(root);
}

static struct ftgpu_info gpu_at(int index, const char *bus, const char *uuid)
{
	struct ftgpu_info g;
	memset(&g, 0, sizeof g);
	g.index = index;
	snprintf(g.uuid, sizeof g.uuid, "%s", uuid);
	strcpy(g.name, "NVIDIA H200");
	snprintf(g.pci_bus_id, sizeof g.pci_bus_id, "%s", bus);
	g.mem_total = 1ull << 37;
	g.cc_major = 9;
	ftgpu_read_link_root(&g, root);
	g.link_gen_max = 5;
	g.link_width_max = 16;
	return g;
}

static void test_fake_tree_probe(void **s)
{
	struct ftcpu_info ci;
	assert_int_equal(ftcpu_probe_root(&ci, root), 0);
	assert_int_equal(ci.logical_cpus, 8);
	assert_int_equal(ci.physical_cores, 4); /* SMT siblings excluded */
	assert_int_equal(ci.numa_nodes, 2);
	int want_cpu[4] = {0, 1, 4, 5}, want_node[4] = {0, 0, 1, 1};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ci.core_cpu[i], want_cpu[i]);
		assert_int_equal(ci.core_node[i], want_node[i]);
	}
	ftcpu_release(&ci);
	struct ftgpu_info a = gpu_at(0, "00000000:03:00.0", "GPU-a"), c = gpu_at(2, "00000000:81:00.0", "GPU-c");
	assert_int_equal(a.numa_node, 0);
	assert_int_equal(c.numa_node, 1);
	assert_int_equal(a.link_gen_cur, 5);
	assert_int_equal(fttopo_node_package(root, 0), 0);
	assert_int_equal(fttopo_node_package(root, 1), 1);
	assert_int_equal(fttopo_node_package(root, 7), -1);
}

static void test_fake_tree_relations(void **s)
{
	const char *A = "00000000:03:00.0", *B = "00000000:04:00.0", *C = "00000000:81:00.0";
	const char *D = "00000000:06:00.0", *E = "00000000:07:00.0";
	assert_int_equal(fttopo_relation(root, A, 0, B, 0), FTTOPO_SAME_SWITCH);
	assert_int_equal(fttopo_relation(root, B, 0, A, 0), FTTOPO_SAME_SWITCH);
	assert_int_equal(fttopo_relation(root, A, 0, D, 0), FTTOPO_SAME_ROOT_PORT);
	assert_int_equal(fttopo_relation(root, A, 0, E, 0), FTTOPO_SAME_HOST_BRIDGE);
	assert_int_equal(fttopo_relation(root, A, 0, C, 1), FTTOPO_ACROSS_SOCKETS);
	assert_int_equal(fttopo_relation(root, A, 0, C, 0), FTTOPO_SAME_NODE);
	assert_int_equal(fttopo_relation(root, A, -1, C, -1), FTTOPO_ACROSS_HOST_BRIDGES);
	assert_int_equal(fttopo_relation(root, A, 0, "00000000:99:00.0", 0), FTTOPO_UNKNOWN);
	assert_string_equal(fttopo_rel_name(FTTOPO_SAME_SWITCH), "same_switch");
	assert_string_equal(fttopo_rel_name(FTTOPO_ACROSS_SOCKETS), "across_sockets");
}

/* ---------------------------------------------------------------- core split */

static void test_engine_plan(void **s)
{
	/* cores 0-3 on node 0, 4-7 on node 1 (as listed by the probe: interleaved here) */
	int cpu[8] = {0, 4, 1, 5, 2, 6, 3, 7}, node[8] = {0, 1, 0, 1, 0, 1, 0, 1};
	struct ftcpu_info ci = {.physical_cores = 8, .core_cpu = cpu, .core_node = node, .numa_nodes = 2};
	struct ftgpu_info g[2] = {{.index = 0, .numa_node = 1}, {.index = 1, .numa_node = 0}};
	struct ftbw_engine e[8];
	int store[8];
	char err[256];
	assert_int_equal(ftbw_engine_plan(&ci, g, 2, 2, 0, e, store, err, sizeof err), 0);
	/* engine 0 serves GPU 0 (node 1): node 1's cores; engine 1 GPU 1 (node 0) */
	assert_int_equal(e[0].gpu, 0);
	assert_int_equal(e[0].ncpus, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(e[0].cpus[i], 4 + i);
		assert_int_equal(e[1].cpus[i], i);
	}
	assert_int_equal(e[0].mem_node, 1);
	assert_int_equal(e[1].mem_node, 0);
	assert_int_equal(e[1].count, 2);
	/* four engines, two per GPU: two cores each, all on their GPU's node */
	assert_int_equal(ftbw_engine_plan(&ci, g, 2, 4, 0, e, store, err, sizeof err), 0);
	int seen[8] = {0};
	for (int k = 0; k < 4; k++) {
		assert_int_equal(e[k].gpu, k % 2);
		assert_int_equal(e[k].ncpus, 2);
		for (int i = 0; i < 2; i++) {
			int c = e[k].cpus[i];
			assert_int_equal(c >= 4 ? 1 : 0, g[k % 2].numa_node);
			assert_int_equal(seen[c]++, 0); /* disjoint */
		}
	}
	/* three engines on 8 cores: 2 each; the third (GPU 0 again) still gets node 1 cores */
	assert_int_equal(ftbw_engine_plan(&ci, g, 2, 3, 0, e, store, err, sizeof err), 0);
	assert_int_equal(e[2].ncpus, 2);
	assert_true(e[2].cpus[0] >= 4 && e[2].cpus[1] >= 4);
	/* more cores than the node has: the rest from the other node, after the near ones */
	assert_int_equal(ftbw_engine_plan(&ci, g, 2, 2, 3, e, store, err, sizeof err), 0);
	assert_int_equal(e[0].ncpus, 3);
	assert_int_equal(e[1].cpus[0], 0);
	assert_int_equal(ftbw_engine_plan(&ci, g, 1, 1, 6, e, store, err, sizeof err), 0);
	assert_int_equal(e[0].cpus[4], 0); /* node 1's four, then node 0 in order */
	assert_int_equal(e[0].cpus[5], 1);
	/* errors */
	assert_int_equal(ftbw_engine_plan(&ci, g, 2, 1, 0, e, store, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "at least one engine per GPU"));
	assert_int_equal(ftbw_engine_plan(&ci, g, 2, 9, 0, e, store, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "fewer than one core each"));
	assert_int_equal(ftbw_engine_plan(&ci, g, 2, 2, 5, e, store, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "need 10 physical cores"));
	assert_int_equal(ftbw_engine_plan(&ci, g, 2, 0, 0, e, store, err, sizeof err), -EINVAL);
	/* one node (or unknown): no memory placement */
	ci.numa_nodes = 1;
	assert_int_equal(ftbw_engine_plan(&ci, g, 2, 2, 0, e, store, err, sizeof err), 0);
	assert_int_equal(e[0].mem_node, -1);
	g[0].numa_node = g[1].numa_node = -1;
	ci.numa_nodes = 2;
	assert_int_equal(ftbw_engine_plan(&ci, g, 2, 2, 0, e, store, err, sizeof err), 0);
	assert_int_equal(e[0].cpus[0], 0); /* in order */
	assert_int_equal(e[1].cpus[0], 2);
	assert_int_equal(e[1].mem_node, -1);
}

static void test_hold(void **s)
{
	struct ftbw_hold h;
	ftbw_hold_init(&h, 3);
	assert_false(atomic_load(ftbw_hold_flag(&h)));
	ftbw_hold_arrive(&h, 1);
	ftbw_hold_arrive(&h, 1); /* twice counts once */
	ftbw_hold_arrive(&h, 0);
	assert_false(atomic_load(ftbw_hold_flag(&h)));
	ftbw_hold_arrive(&h, 2);
	assert_true(atomic_load(ftbw_hold_flag(&h)));
	ftbw_hold_arrive(&h, 99); /* out of range: ignored */
}

/* ---------------------------------------------------------------- fake measurements */

/* Isolated: CPU MoE cpu_gbs[fmt] on all cores, gather 50 GB/s. Concurrent: each engine's CPU
 * share is cpu_gbs * conc_cpu_scale, its gather 47 + GPU position; the overlap 0.8 / 0.9 of
 * those. The engines check that every phase really runs on all of them at once. */
struct fake {
	double cpu_gbs[FTFMT_COUNT];
	double conc_cpu_scale;
	int fail_engine_cpu;           /* engine index + 1 whose CPU phase fails */
	int fail_gpu_read;             /* GPU index + 1 whose own run's CPU read fails */
	int no_engines;                /* ops without engine calls */
	pthread_mutex_t mu;
	int opened, closed, phases;
	int most_inside[FTBW_PHASES];  /* most engines seen inside a phase at once */
	atomic_int inside[FTBW_PHASES];
	int mem_node[FTBW_MAX_ENGINES], ncpus[FTBW_MAX_ENGINES], first_cpu[FTBW_MAX_ENGINES];
};

static int fake_read(void *ctx, const struct ftbw_env *env, int passes, double *gbs, char *err, size_t n)
{
	const struct fake *f = ctx;
	if (f && f->fail_gpu_read && env->gpu && env->gpu->index + 1 == f->fail_gpu_read) {
		snprintf(err, n, "the read buffer could not be pinned");
		return -ENOMEM;
	}
	for (int i = 0; i < passes; i++)
		gbs[i] = 200.0;
	return 0;
}

static int fake_pcie(void *ctx, const struct ftbw_env *env, bool h2d, size_t bytes, int iters, double *gbs,
		     char *err, size_t n)
{
	for (int i = 0; i < iters; i++)
		gbs[i] = 55.0;
	return 0;
}

static int fake_measure(void *ctx, const struct ftbw_env *env, const struct ftbw_config *c,
			const struct ftbw_item *it, struct ftbw_meas *m, char *err, size_t n)
{
	struct fake *f = ctx;
	double cpu = f->cpu_gbs[it->fmt->id];
	set_part(&m->gather, 50.0, c->kernel_pcie_iters);
	if (it->fmt->cpu_path && cpu > 0) {
		set_part(&m->cpu, cpu, c->kernel_cpu_iters);
		strcpy(m->cpu_isa, "avx512");
		set_part(&m->ov_cpu, cpu * 0.8, 3);
		set_part(&m->ov_gather, 45.0, 3);
	}
	return 0;
}

struct fake_engine {
	struct fake *f;
	const struct ftbw_engine *e;
	const struct ftbw_item *it;
};

static int fake_engine_open(void *ctx, const struct ftbw_engine *e, const struct ftbw_config *c,
			    const struct ftbw_item *it, void **h, char *err, size_t n)
{
	struct fake *f = ctx;
	struct fake_engine *fe = calloc(1, sizeof *fe);
	fe->f = f;
	fe->e = e;
	fe->it = it;
	*h = fe;
	pthread_mutex_lock(&f->mu);
	f->opened++;
	f->mem_node[e->index] = e->mem_node;
	f->ncpus[e->index] = e->ncpus;
	f->first_cpu[e->index] = e->cpus[0];
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static int fake_engine_phase(void *hv, enum ftbw_phase ph, const struct ftbw_config *c, struct ftbw_meas *m,
			     struct ftbw_hold *hold, char *err, size_t n)
{
	struct fake_engine *fe = hv;
	struct fake *f = fe->f;
	const struct ftbw_engine *e = fe->e;
	int now = atomic_fetch_add(&f->inside[ph], 1) + 1;
	double cpu = f->cpu_gbs[fe->it->fmt->id] * f->conc_cpu_scale, gather = 47.0 + e->gpu;
	switch (ph) {
	case FTBW_PHASE_GATHER: set_part(&m->gather, gather, c->kernel_pcie_iters); break;
	case FTBW_PHASE_CPU:
		if (f->fail_engine_cpu == e->index + 1) {
			m->cpu.rc = -ENOMEM;
			snprintf(m->cpu.err, sizeof m->cpu.err, "engine %d: out of memory", e->index);
		} else if (cpu > 0) {
			set_part(&m->cpu, cpu, c->kernel_cpu_iters);
			strcpy(m->cpu_isa, "avx512");
		}
		break;
	case FTBW_PHASE_OVERLAP:
		if (m->cpu.rc == 0 && m->gather.rc == 0) {
			set_part(&m->ov_cpu, cpu * 0.8, 3);
			set_part(&m->ov_gather, gather * 0.9, 3);
		}
		break;
	default: break;
	}
	ftbw_hold_arrive(hold, e->index);
	/* the load goes on until every engine has its samples: then all are inside */
	struct timespec ts = {0, 100000};
	while (!atomic_load(ftbw_hold_flag(hold))) {
		int k = atomic_load(&f->inside[ph]);
		now = k > now ? k : now;
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&f->mu);
	if (now > f->most_inside[ph])
		f->most_inside[ph] = now;
	f->phases++;
	pthread_mutex_unlock(&f->mu);
	atomic_fetch_sub(&f->inside[ph], 1);
	return 0;
}

static void fake_engine_close(void *hv)
{
	struct fake_engine *fe = hv;
	if (!fe)
		return;
	pthread_mutex_lock(&fe->f->mu);
	fe->f->closed++;
	pthread_mutex_unlock(&fe->f->mu);
	free(fe);
}

static void config_small(struct ftbw_config *c)
{
	config_small_base(c);
	c->dtypes[c->ndtypes++] = FTFMT_BF16;
	c->dtypes[c->ndtypes++] = FTFMT_NVFP4;
	c->dtypes[c->ndtypes++] = FTFMT_FP8_BLOCK;
}

/* A host of ngpus fake GPUs on the fake tree (ci from it). */
struct host {
	struct ftcpu_info ci;
	struct ftgpu_info gpus[3];
	struct ftbw_env envs[3];
	int cpus[3][8];
	struct ftbw_host h;
};

static void host_init(struct host *x, int ngpus)
{
	assert_int_equal(ftcpu_probe_root(&x->ci, root), 0);
	static const char *bus[3] = {"00000000:03:00.0", "00000000:81:00.0", "00000000:04:00.0"};
	static const char *uuid[3] = {"GPU-aaaaaaaa-0000-0000-0000-000000000000", "GPU-cccccccc-0000-0000-0000-000000000000",
				      "GPU-bbbbbbbb-0000-0000-0000-000000000000"};
	for (int g = 0; g < ngpus; g++) {
		x->gpus[g] = gpu_at(g, bus[g], uuid[g]);
		int n = ftcpu_cores_near(&x->ci, x->gpus[g].numa_node, x->cpus[g], x->ci.physical_cores);
		x->envs[g] = (struct ftbw_env){.cpu = &x->ci, .gpu = &x->gpus[g], .cpus = x->cpus[g], .ncpus = n};
	}
	x->h = (struct ftbw_host){.cpu = &x->ci, .gpus = x->gpus, .ngpus = ngpus, .envs = x->envs, .sysroot = root};
}

static int run_host(struct fake *f, struct ftbw_config *c, struct host *x, json_t **out, char *err)
{
	struct ftbw_ops ops = {fake_read, fake_pcie, fake_measure, f};
	if (!f->no_engines) {
		ops.engine_open = fake_engine_open;
		ops.engine_phase = fake_engine_phase;
		ops.engine_close = fake_engine_close;
	}
	return ftbw_run_host(c, &x->h, &ops, NULL, out, err, 256);
}

static double num(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void assert_schema(json_t *p)
{
	char err[512] = "";
	int r = ftt_schema_validate("api/schemas/profile.schema.json", p, err, sizeof err);
	if (r)
		print_error("%s\n", err);
	assert_int_equal(r, 0);
}

static void test_run_host_two_gpus(void **s)
{
	struct fake f = {.conc_cpu_scale = 0.6, .mu = PTHREAD_MUTEX_INITIALIZER};
	f.cpu_gbs[FTFMT_BF16] = 120.0; /* alone 2.4x gather: hybrid; at once 72 / 47-48: offload */
	f.cpu_gbs[FTFMT_NVFP4] = 200.0; /* hybrid both ways: 120 / 47 = 2.55 */
	struct ftbw_config c;
	config_small(&c);
	struct host x;
	host_init(&x, 2);
	json_t *p[2];
	char err[256];
	assert_int_equal(run_host(&f, &c, &x, p, err), 0);
	/* 3 items x 2 engines opened and closed; phases: gather (3 items), cpu (2), overlap (2) */
	assert_int_equal(f.opened, 6);
	assert_int_equal(f.closed, 6);
	assert_int_equal(f.phases, 2 * (3 + 2 + 2));
	for (int ph = 0; ph < FTBW_PHASES; ph++)
		assert_int_equal(f.most_inside[ph], 2); /* both engines inside at once */
	/* the placement: engine 0 on GPU 0's node (0), engine 1 on node 1; 2 cores each */
	assert_int_equal(f.mem_node[0], 0);
	assert_int_equal(f.mem_node[1], 1);
	assert_int_equal(f.ncpus[0], 2);
	assert_int_equal(f.first_cpu[0], 0);
	assert_int_equal(f.first_cpu[1], 4);
	for (int g = 0; g < 2; g++) {
		json_t *q = p[g];
		assert_string_equal(str(json_object_get(q, "gpu"), "uuid"), x.gpus[g].uuid);
		assert_string_equal(str(q, "deployment"), "concurrent"); /* the default with 2 GPUs */
		json_t *e = entry_of(q, "bf16"), *b = json_object_get(e, "concurrent");
		/* the seed's figures stay the isolated ones */
		assert_true(fabs(num(e, "cpu_moe_gbs") - 120.0) < 1e-9);
		assert_true(fabs(num(e, "pcie_gather_gbs") - 50.0) < 1e-9);
		assert_string_equal(str(e, "recommended_isolated"), "hybrid");
		/* the concurrent block: this GPU's engine while both run */
		assert_true(fabs(num(b, "cpu_moe_gbs") - 72.0) < 1e-9);
		assert_true(fabs(num(b, "pcie_gather_gbs") - (47.0 + g)) < 1e-9);
		assert_true(fabs(num(b, "ratio") - 72.0 / (47.0 + g)) < 1e-9);
		assert_string_equal(str(b, "recommended"), "offload");
		double fr = (47.0 + g) * 0.9 / ((47.0 + g) * 0.9 + 72.0 * 0.8);
		assert_true(fabs(num(b, "fetch_fraction") - fr) < 1e-9);
		assert_int_equal(json_integer_value(json_object_get(b, "engines")), 2);
		assert_int_equal(json_integer_value(json_object_get(b, "threads")), 2);
		/* the seed's verdict fields follow the deployment */
		assert_string_equal(str(e, "recommended"), "offload");
		assert_string_equal(str(json_object_get(q, "dtypes"), "bf16"), "offload");
		assert_string_equal(str(json_object_get(q, "dtypes"), "nvfp4"), "hybrid");
		assert_string_equal(str(json_object_get(entry_of(q, "nvfp4"), "concurrent"), "recommended"), "hybrid");
		/* fp8_block: gather only, offload */
		b = json_object_get(entry_of(q, "fp8_block"), "concurrent");
		assert_true(json_is_null(json_object_get(b, "cpu_moe_gbs")));
		assert_string_equal(str(b, "recommended"), "offload");
		/* N and the core sets; the topology */
		json_t *conc = json_object_get(q, "concurrent");
		assert_int_equal(json_integer_value(json_object_get(conc, "engines")), 2);
		assert_int_equal(json_integer_value(json_object_get(conc, "cores_per_engine")), 2);
		json_t *mine = json_array_get(json_object_get(conc, "engines_of_gpu"), 0);
		assert_int_equal(json_integer_value(json_object_get(mine, "index")), g);
		assert_int_equal(json_integer_value(json_object_get(mine, "mem_node")), g);
		assert_int_equal(json_integer_value(json_array_get(json_object_get(mine, "cpu_ids"), 0)), g ? 4 : 0);
		json_t *topo = json_object_get(q, "topology");
		assert_int_equal(json_integer_value(json_object_get(topo, "numa_node")), g);
		json_t *peer = json_array_get(json_object_get(topo, "peers"), 0);
		assert_string_equal(str(peer, "uuid"), x.gpus[1 - g].uuid);
		assert_string_equal(str(peer, "relation"), "across_sockets");
		assert_int_equal(json_array_size(json_object_get(topo, "cpu_ids_concurrent")), 2);
		assert_schema(q);
	}
	/* the summary shows both rows */
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	ftcli_bw_summary(m, p[0]);
	fclose(m);
	assert_non_null(strstr(buf, "deployment concurrent"));
	assert_non_null(strstr(buf, "concurrent x2"));
	free(buf);
	json_decref(p[0]);
	json_decref(p[1]);

	/* deployment isolated: the blocks stay, the seed's fields carry the isolated verdict */
	c.deployment = FTBW_DEPLOY_ISOLATED;
	assert_int_equal(run_host(&f, &c, &x, p, err), 0);
	assert_string_equal(str(p[1], "deployment"), "isolated");
	assert_string_equal(str(json_object_get(p[1], "dtypes"), "bf16"), "hybrid");
	assert_string_equal(str(entry_of(p[1], "bf16"), "recommended"), "hybrid");
	assert_string_equal(str(json_object_get(entry_of(p[1], "bf16"), "concurrent"), "recommended"), "offload");
	/* and back, on the profile itself */
	int missing = -1;
	assert_int_equal(ftbw_apply_deployment(p[1], FTBW_DEPLOY_CONCURRENT, &missing), 0);
	assert_int_equal(missing, 0);
	assert_string_equal(str(json_object_get(p[1], "dtypes"), "bf16"), "offload");
	assert_int_equal(ftbw_apply_deployment(p[1], 7, NULL), -EINVAL);
	json_decref(p[0]);
	json_decref(p[1]);
	ftcpu_release(&x.ci);
}

static void test_run_host_engines(void **s)
{
	struct fake f = {.conc_cpu_scale = 0.5, .mu = PTHREAD_MUTEX_INITIALIZER};
	f.cpu_gbs[FTFMT_BF16] = 120.0;
	struct ftbw_config c;
	config_small(&c);
	c.ndtypes = 1;
	c.engines = 4; /* two per GPU, one core each */
	struct host x;
	host_init(&x, 2);
	json_t *p[2];
	char err[256];
	int r = run_host(&f, &c, &x, p, err);
	if (r)
		print_error("%s\n", err);
	assert_int_equal(r, 0);
	assert_int_equal(f.opened, 4);
	assert_int_equal(f.most_inside[FTBW_PHASE_CPU], 4);
	json_t *b = json_object_get(entry_of(p[0], "bf16"), "concurrent");
	assert_int_equal(json_integer_value(json_object_get(b, "engines")), 4);
	assert_int_equal(json_integer_value(json_object_get(b, "engines_on_gpu")), 2);
	/* both engines' samples together */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "cpu_moe_gbs_spread"), "samples")),
			 2 * c.kernel_cpu_iters);
	assert_int_equal(json_array_size(json_object_get(json_object_get(p[0], "concurrent"), "engines_of_gpu")), 2);
	assert_schema(p[0]);
	json_decref(p[0]);
	json_decref(p[1]);

	/* one GPU's own run fails: the host run fails, naming the GPU and what failed */
	f.fail_gpu_read = 2;
	char ferr[256] = "";
	assert_true(run_host(&f, &c, &x, p, ferr) < 0);
	if (!strstr(ferr, "GPU 1: ") || !strstr(ferr, "the read buffer could not be pinned"))
		fail_msg("a GPU's failed run said: '%s'", ferr);
	f.fail_gpu_read = 0;

	/* one engine's CPU phase fails: its GPU's concurrent block has no verdict, and the reason */
	memset(&f.most_inside, 0, sizeof f.most_inside);
	f.fail_engine_cpu = 2; /* engine 1: GPU 1 */
	c.engines = 2;
	assert_int_equal(run_host(&f, &c, &x, p, err), 0);
	b = json_object_get(entry_of(p[1], "bf16"), "concurrent");
	assert_true(json_is_null(json_object_get(b, "recommended")));
	assert_non_null(strstr(str(b, "note"), "engine 1: out of memory"));
	assert_true(has_warning(p[1], "dtype:bf16: concurrent: CPU MoE measurement failed"));
	assert_schema(p[1]);
	json_decref(p[0]);
	json_decref(p[1]);

	/* refusals */
	c.engines = 1; /* fewer than the GPUs */
	assert_int_equal(run_host(&f, &c, &x, p, err), -EINVAL);
	assert_non_null(strstr(err, "at least one engine per GPU"));
	assert_null(p[0]);
	c.engines = 2;
	f.no_engines = 1;
	assert_int_equal(run_host(&f, &c, &x, p, err), -ENOTSUP);
	ftcpu_release(&x.ci);
}

static void test_run_host_one_gpu(void **s)
{
	struct fake f = {.conc_cpu_scale = 0.5, .mu = PTHREAD_MUTEX_INITIALIZER, .no_engines = 1};
	f.cpu_gbs[FTFMT_BF16] = 120.0;
	struct ftbw_config c;
	config_small(&c);
	struct host x;
	host_init(&x, 1);
	json_t *p[1];
	char err[256];
	/* one GPU, one engine: no concurrent phase (no engine calls needed), deployment isolated */
	assert_int_equal(run_host(&f, &c, &x, p, err), 0);
	assert_string_equal(str(p[0], "deployment"), "isolated");
	assert_true(json_is_null(json_object_get(p[0], "concurrent")));
	assert_null(json_object_get(entry_of(p[0], "bf16"), "concurrent"));
	assert_string_equal(str(json_object_get(p[0], "dtypes"), "bf16"), "hybrid");
	assert_int_equal(json_array_size(json_object_get(json_object_get(p[0], "topology"), "peers")), 0);
	assert_schema(p[0]);
	json_decref(p[0]);
	/* concurrent asked, but nothing ran at once: isolated verdicts, said so */
	c.deployment = FTBW_DEPLOY_CONCURRENT;
	assert_int_equal(run_host(&f, &c, &x, p, err), 0);
	assert_string_equal(str(p[0], "deployment"), "isolated");
	assert_true(has_warning(p[0], "deployment concurrent asked"));
	json_decref(p[0]);
	/* two engines on one GPU: they share its gather */
	f.no_engines = 0;
	c.engines = 2;
	assert_int_equal(run_host(&f, &c, &x, p, err), 0);
	assert_string_equal(str(p[0], "deployment"), "concurrent");
	json_t *b = json_object_get(entry_of(p[0], "bf16"), "concurrent");
	assert_int_equal(json_integer_value(json_object_get(b, "engines_on_gpu")), 2);
	assert_schema(p[0]);
	json_decref(p[0]);
	ftcpu_release(&x.ci);
}

static void test_mem_prefer(void **s)
{
	/* the real policy call (the placement itself needs a host of two nodes) */
	int r = ftcpu_mem_prefer(0);
	assert_true(r == 0 || r == -EPERM || r == -ENOSYS);
	assert_true(ftcpu_mem_prefer(-1) == 0 || r != 0);
	assert_int_equal(ftcpu_mem_prefer(100000), -EINVAL);
}

/* ftbw_apply_deployment walks every entry that carries a verdict: the dtype entries (their map
 * "dtypes") and each model's workload entries (their map "recommended_moe_backend"), each with
 * an isolated and a concurrent verdict that differ, and one entry without concurrent figures
 * per scope (it keeps its verdict and is counted missing). */
static void test_apply_deployment_walk(void **s)
{
	(void)s;
	static const char *fmts[] = {"bf16", "nvfp4", "mxfp4_triton"};
	static const char *models[] = {NULL, "qwen3-30b", "gpt-oss-120b"};
	const int nf = 3, nm = 3;
	json_t *p = json_object(), *wl = json_object(), *dk = json_object(), *dt = json_object();
	json_object_set_new(p, "dtype_kernels", dk);
	json_object_set_new(p, "dtypes", dt);
	json_object_set_new(p, "workloads", wl);
	for (int m = 0; m < nm; m++) {
		json_t *kern = dk, *map = dt;
		if (models[m]) {
			json_t *w = json_object();
			kern = json_object();
			map = json_object();
			json_object_set_new(w, "kernels", kern);
			json_object_set_new(w, "recommended_moe_backend", map);
			json_object_set_new(wl, models[m], w);
		}
		for (int f = 0; f < nf; f++) {
			/* isolated hybrid, concurrent offload on even (m + f), the reverse on odd */
			const char *iso = (m + f) % 2 ? "offload" : "hybrid", *con = (m + f) % 2 ? "hybrid" : "offload";
			json_t *e = json_object();
			json_object_set_new(e, "recommended", json_string(iso));
			if (f != nf - 1) { /* the last format of each scope: no concurrent figures */
				json_t *c = json_object();
				json_object_set_new(c, "recommended", json_string(con));
				json_object_set_new(e, "concurrent", c);
			}
			json_object_set_new(kern, fmts[f], e);
			json_object_set_new(map, fmts[f], json_string(iso));
		}
	}
	for (int round = 0; round < 3; round++) {
		int d = round == 1 ? FTBW_DEPLOY_ISOLATED : FTBW_DEPLOY_CONCURRENT, missing = -1;
		assert_int_equal(ftbw_apply_deployment(p, d, &missing), 0);
		/* concurrent: one entry per scope lacks its figures; isolated: every entry has them */
		assert_int_equal(missing, d == FTBW_DEPLOY_CONCURRENT ? nm : 0);
		assert_string_equal(str(p, "deployment"), ftbw_deployment_name(d));
		for (int m = 0; m < nm; m++)
			for (int f = 0; f < nf; f++) {
				const char *iso = (m + f) % 2 ? "offload" : "hybrid", *con = (m + f) % 2 ? "hybrid" : "offload";
				const char *want = d == FTBW_DEPLOY_CONCURRENT && f != nf - 1 ? con : iso;
				json_t *scope = models[m] ? json_object_get(json_object_get(p, "workloads"), models[m]) : p;
				json_t *e = json_object_get(json_object_get(scope, models[m] ? "kernels" : "dtype_kernels"), fmts[f]);
				json_t *map = json_object_get(scope, models[m] ? "recommended_moe_backend" : "dtypes");
				const char *got = str(e, "recommended"), *gm = str(map, fmts[f]);
				if (strcmp(got, want) || strcmp(gm, want))
					fail_msg("deployment %s, %s %s: entry %s, map %s; want %s", ftbw_deployment_name(d),
						 models[m] ? models[m] : "dtype", fmts[f], got, gm, want);
				assert_string_equal(str(e, "recommended_isolated"), iso);
			}
	}
	json_decref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fake_tree_probe),  cmocka_unit_test(test_fake_tree_relations),
		cmocka_unit_test(test_engine_plan),      cmocka_unit_test(test_hold),
		cmocka_unit_test(test_apply_deployment_walk),
		cmocka_unit_test(test_run_host_two_gpus), cmocka_unit_test(test_run_host_engines),
		cmocka_unit_test(test_run_host_one_gpu), cmocka_unit_test(test_mem_prefer),
	};
	return cmocka_run_group_tests_name("bw_host", tests, make_tree, remove_tree);
}
