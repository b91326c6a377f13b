/* gather_variants: every copy_missing variant against one linear pinned cudaMemcpyAsync of the
 * same bytes, interleaved in the same run (bench/RESULTS.md, section 2).
 * Built by `make bench-tools` (CUDA=1). usage: gather_variants MODEL BATCH[,BATCH..] REPS [VARIANTS [seq]]
 * VARIANTS: comma list of names below (default: all but bulk). Plan: random distinct rows and
 * slots; "seq": src = dst = 0..n-1 (one consecutive run, as cache-copy's plan). Every variant's
 * last pass is checked byte for byte against the source rows: "VERIFY FAILED: name" and exit 1
 * when one differs (the check of bench/copy_variants.cu's kernels). GATHER_IDLE_US (default 1000):
 * the idle before each pass that is not back to back (a proxy thread then sleeps: past its poll). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "bench/gather.h"
#include "copy_variants.h"
#include "bench/pcie.h"
#include "copy_missing.h"
#include "moe/models.h"
#include "util/stats.h"
#include "util/strutil.h"

struct variant {
	const char *name;
	enum ftgather_path path;
	int var, blocks_per_sm, blocks; /* var: V_PRODUCT or BV(enum ftcv_variant); blocks: absolute count when > 0 */
	/* proxy options (path FTGATHER_PROXY): split bytes (-1 default), merge, signal, sleep ns */
	long split;
	int merge, signal, sleep;
	int spin;  /* opts.spin_us + 2 (0: the default) */
	int warm;  /* 1: one untimed pass right before the timed one (a proxy thread still polling:
		    * back-to-back layers); 0: the pass follows the other variants' (a proxy thread
		    * asleep: the first gather after idle) */
	int graph; /* 1: the pass captured once in a CUDA graph, timed as a graph launch */
	long head;  /* opts.sm_head (path FTGATHER_PROXY; 0: the default, -1: none) */
	long entry; /* opts.sm_head_entry (path FTGATHER_PROXY; 0: the default, -1: none) */
};
#define V_PRODUCT 0     /* the product's fused kernel */
#define BV(v) (1 + (v)) /* a variant of bench/copy_variants.cu */
#define PX_DEF -1, 1, FTMISSING_SIGNAL_MEMOP, FTMISSING_PROXY_WAIT_SLEEP_NS

static const struct variant all[] = {
	{"fused", FTGATHER_FUSED, V_PRODUCT, 0, 0},
	{"fused_1sm", FTGATHER_FUSED, V_PRODUCT, 1, 0},
	{"fused_4sm", FTGATHER_FUSED, V_PRODUCT, 4, 0},
	{"fused_32b", FTGATHER_FUSED, V_PRODUCT, 0, 32},
	{"fused_8b", FTGATHER_FUSED, V_PRODUCT, 0, 8},
	{"l2_256", FTGATHER_FUSED, BV(FTCV_L2_256), 0, 0},
	{"unroll4", FTGATHER_FUSED, BV(FTCV_UNROLL4), 0, 0},
	{"unroll16", FTGATHER_FUSED, BV(FTCV_UNROLL16), 0, 0},
	{"bulk", FTGATHER_FUSED, BV(FTCV_BULK), 0, 0},
	{"bulk_1sm", FTGATHER_FUSED, BV(FTCV_BULK), 1, 0},
	{"per_bank", FTGATHER_PER_BANK, 0, 0, 0},
	{"memcpy", FTGATHER_MEMCPY, 0, 0, 0},
	{"memcpy_batch", FTGATHER_MEMCPY_BATCH, 0, 0, 0},
	{"proxy", FTGATHER_PROXY, 0, 0, 0, PX_DEF},
	{"proxy_v0", FTGATHER_PROXY, 0, 0, 0, 0, 0, FTMISSING_SIGNAL_KERNEL, 256}, /* the first proxy */
	{"proxy_nosplit", FTGATHER_PROXY, 0, 0, 0, 0, 1, FTMISSING_SIGNAL_MEMOP, FTMISSING_PROXY_WAIT_SLEEP_NS},
	{"proxy_nomerge", FTGATHER_PROXY, 0, 0, 0, -1, 0, FTMISSING_SIGNAL_MEMOP, FTMISSING_PROXY_WAIT_SLEEP_NS},
	{"proxy_s16k", FTGATHER_PROXY, 0, 0, 0, 16 << 10, 1, FTMISSING_SIGNAL_MEMOP, FTMISSING_PROXY_WAIT_SLEEP_NS},
	{"proxy_s512k", FTGATHER_PROXY, 0, 0, 0, 512 << 10, 1, FTMISSING_SIGNAL_MEMOP, FTMISSING_PROXY_WAIT_SLEEP_NS},
	{"proxy_s1m", FTGATHER_PROXY, 0, 0, 0, 1 << 20, 1, FTMISSING_SIGNAL_MEMOP, FTMISSING_PROXY_WAIT_SLEEP_NS},
	{"proxy_kernsig", FTGATHER_PROXY, 0, 0, 0, -1, 1, FTMISSING_SIGNAL_KERNEL, FTMISSING_PROXY_WAIT_SLEEP_NS},
	{"proxy_sleep0", FTGATHER_PROXY, 0, 0, 0, -1, 1, FTMISSING_SIGNAL_MEMOP, 0},
	{"proxy_sleep1k", FTGATHER_PROXY, 0, 0, 0, -1, 1, FTMISSING_SIGNAL_MEMOP, 1000},
	/* idle policies (opts.spin_us): the default, doorbell only, always polling; _b2b: after a pass */
	{"proxy_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1},
	{"proxy_bell", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0 + 2, 0},
	{"proxy_bell_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0 + 2, 1},
	{"proxy_spin", FTGATHER_PROXY, 0, 0, 0, PX_DEF, FTMISSING_PROXY_SPIN_ALWAYS + 2, 0},
	/* the head: the SM kernel copies the rows' heads while the thread wakes, SM work of
	 * max(opts.sm_head, n * opts.sm_head_entry) bytes, the SM banks' rows counted (the default:
	 * max(4 MiB, n * 256 KiB)). hNm: N MiB per plan alone (for bf16, h4m was the default of round
	 * 3, which did not count the SM banks' rows); eNk: N KiB per entry alone */
	{"proxy_h0", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 0, 0, -1, -1},
	{"proxy_h1m", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 0, 0, 1 << 20, -1},
	{"proxy_h2m", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 0, 0, 2 << 20, -1},
	{"proxy_h4m", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 0, 0, 4 << 20, -1},
	{"proxy_h8m", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 0, 0, 8 << 20, -1},
	{"proxy_h0_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1, 0, -1, -1},
	{"proxy_h1m_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1, 0, 1 << 20, -1},
	{"proxy_h2m_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1, 0, 2 << 20, -1},
	{"proxy_h4m_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1, 0, 4 << 20, -1},
	{"proxy_h8m_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1, 0, 8 << 20, -1},
	{"proxy_e128k", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 0, 0, -1, 128 << 10},
	{"proxy_e256k", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 0, 0, -1, 256 << 10},
	{"proxy_e384k", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 0, 0, -1, 384 << 10},
	{"proxy_e512k", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 0, 0, -1, 512 << 10},
	{"proxy_e128k_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1, 0, -1, 128 << 10},
	{"proxy_e256k_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1, 0, -1, 256 << 10},
	{"proxy_e384k_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1, 0, -1, 384 << 10},
	{"proxy_e512k_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1, 0, -1, 512 << 10},
	{"fused_b2b", FTGATHER_FUSED, V_PRODUCT, 0, 0, 0, 0, 0, 0, 0, 1},
	{"memcpy_b2b", FTGATHER_MEMCPY, 0, 0, 0, 0, 0, 0, 0, 0, 1},
	/* captured in a graph: the doorbell is a host node */
	{"proxy_graph", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 0, 1},
	{"proxy_graph_b2b", FTGATHER_PROXY, 0, 0, 0, PX_DEF, 0, 1, 1},
	{"fused_graph", FTGATHER_FUSED, V_PRODUCT, 0, 0, 0, 0, 0, 0, 0, 0, 1},
	{"linear", -2, 0, 0, 0},
};
#define NV (int)(sizeof all / sizeof all[0])

/* One pass of path captured (first call) in *ge, launched warm + 1 times, the last between
 * events. 0 or a CUDA error code. */
static int time_graph(struct ftgather *g, cudaGraphExec_t *ge, enum ftgather_path path, int warm, double *sec)
{
	cudaStream_t s = ftgather_stream(g);
	cudaError_t e = cudaSuccess;
	if (!*ge) {
		cudaGraph_t gr;
		if ((e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)))
			return e;
		int r = ftgather_run(g, path);
		if ((e = cudaStreamEndCapture(s, &gr)) || r)
			return r ? r : (int)e;
		e = cudaGraphInstantiate(ge, gr, 0);
		cudaGraphDestroy(gr);
		if (e)
			return e;
	}
	static cudaEvent_t ev[2];
	if (!ev[0] && ((e = cudaEventCreate(&ev[0])) || (e = cudaEventCreate(&ev[1]))))
		return e;
	for (int i = 0; i < warm && !e; i++)
		e = cudaGraphLaunch(*ge, s);
	float ms = 0;
	if (e || (e = cudaEventRecord(ev[0], s)) || (e = cudaGraphLaunch(*ge, s)) || (e = cudaEventRecord(ev[1], s)) ||
	    (e = cudaEventSynchronize(ev[1])) || (e = cudaEventElapsedTime(&ms, ev[0], ev[1])))
		return e;
	*sec = ms / 1e3;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s MODEL BATCHES REPS [VARIANTS [seq]]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* a timeout must not lose the finished tables */
	const struct ftmodel *m = ftmodel_find(ftmodel_cache_profiles, ftmodel_cache_profiles_count, argv[1]);
	long batches[8];
	int nb = ftstr_parse_long_list(argv[2], 1, 4096, batches, 8);
	int reps = atoi(argv[3]);
	int use[NV];
	const int seq = argc > 5 && !strcmp(argv[5], "seq");
	/* before each pass that is not back to back: this long idle, so that a proxy thread has
	 * left its poll after the last plan (spin_us past that plan's end) and sleeps */
	const char *idle_env = getenv("GATHER_IDLE_US");
	const int idle_us = idle_env ? atoi(idle_env) : 1000;
	for (int v = 0; v < NV; v++)
		use[v] = argc > 4 ? 0 : strncmp(all[v].name, "bulk", 4) != 0;
	if (argc > 4) {
		char **items;
		int n = ftstr_split(argv[4], &items, 32);
		for (int i = 0; i < n; i++)
			for (int v = 0; v < NV; v++)
				if (!strcmp(items[i], all[v].name))
					use[v] = 1;
		ftstr_free_list(items, n);
	}
	if (!m || nb <= 0 || reps <= 0) {
		fprintf(stderr, "bad arguments\n");
		return 2;
	}
	int dev, sms;
	cudaGetDevice(&dev);
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	struct ftgather *g;
	struct ftgather_geom geom = {ftfmt_get(m->format), m->hidden, m->inter, m->experts, 1, m->experts,
				     m->experts};
	int failed = 0; /* a variant copied wrong bytes: exit 1 */
	int r = ftgather_create(&g, &geom, NULL);
	if (r) {
		fprintf(stderr, "create: %d\n", r);
		return 1;
	}
	size_t eb = ftgather_expert_bytes(g);
	void *scratch;
	if (cudaMalloc(&scratch, eb * m->experts)) {
		fprintf(stderr, "no scratch\n");
		return 1;
	}
	int32_t *src = malloc(4 * m->experts), *dst = malloc(4 * m->experts);
	unsigned seed = 7;
	for (int bi = 0; bi < nb; bi++) {
		int n = (int)(batches[bi] * m->topk < m->experts ? batches[bi] * m->topk : m->experts);
		for (int i = 0; i < m->experts; i++)
			src[i] = dst[i] = i;
		for (int i = m->experts - 1; i > 0; i--) { /* random distinct rows and slots */
			seed = seed * 1103515245u + 12345u;
			int j = (int)((seed >> 8) % (unsigned)(i + 1)), t = src[i];
			src[i] = src[j];
			src[j] = t;
			seed = seed * 1103515245u + 12345u;
			j = (int)((seed >> 8) % (unsigned)(i + 1));
			t = dst[i];
			dst[i] = dst[j];
			dst[j] = t;
		}
		for (int i = 0; seq && i < m->experts; i++)
			src[i] = dst[i] = i;
		if ((r = ftgather_set_plan(g, 0, src, dst, n))) {
			fprintf(stderr, "plan: %d\n", r);
			return 1;
		}
		size_t bytes = (size_t)n * eb;
		double *t = calloc((size_t)NV * reps, sizeof *t);
		cudaGraphExec_t graphs[NV] = {0};
		for (int it = -2; it < reps; it++)
			for (int v = 0; v < NV; v++) {
				if (!use[v])
					continue;
				double sec = 0;
				if (all[v].path == (enum ftgather_path)-2) {
					r = ftpcie_linear_on(FTPCIE_H2D, scratch, ftgather_host_bank(g, 0, 0), bytes, 0, 1, &sec,
							     ftgather_stream(g));
				} else {
					int blocks = all[v].blocks ? all[v].blocks : all[v].blocks_per_sm * sms;
					ftgather_set_fused(g, all[v].var ? ftcv_fn(all[v].var - 1) : NULL, blocks);
					if (all[v].path == FTGATHER_PROXY) {
						struct ftmissing_proxy_opts po;
						ftmissing_proxy_default_opts(&po);
						if (all[v].split >= 0)
							po.sm_below = (size_t)all[v].split;
						po.merge = all[v].merge;
						po.signal = all[v].signal;
						po.wait_sleep_ns = all[v].sleep;
						if (all[v].spin)
							po.spin_us = all[v].spin - 2;
						if (all[v].head)
							po.sm_head = all[v].head < 0 ? 0 : (size_t)all[v].head;
						if (all[v].entry)
							po.sm_head_entry = all[v].entry < 0 ? 0 : (size_t)all[v].entry;
						ftgather_set_proxy_opts(g, &po);
					}
					if (!all[v].warm && idle_us > 0)
						usleep((useconds_t)idle_us);
					r = all[v].graph ? time_graph(g, &graphs[v], all[v].path, all[v].warm, &sec)
							 : ftgather_time(g, all[v].path, all[v].warm, 1, &sec);
				}
				if (r) {
					fprintf(stderr, "%s: error %d\n", all[v].name, r);
					use[v] = 0;
					continue;
				}
				if (it >= 0)
					t[v * reps + it] = sec;
				if (it == reps - 1 && all[v].path != (enum ftgather_path)-2) {
					ftgather_poison(g);
					ftgather_time(g, all[v].path, 0, 1, &sec);
					if (ftgather_verify(g)) {
						printf("VERIFY FAILED: %s\n", all[v].name);
						failed = 1;
					}
				}
			}
		double lin = 0;
		for (int v = 0; v < NV; v++)
			if (use[v] && all[v].path == (enum ftgather_path)-2)
				lin = ftstat_of(t + v * reps, reps).median;
		printf("%s %s bs=%ld n=%d bytes=%.1f MiB, %s plan (%d reps, median; min..max GB/s)\n", m->name,
		       ftfmt_get(m->format)->name, batches[bi], n, bytes / 1048576.0, seq ? "consecutive" : "random",
		       reps);
		for (int v = 0; v < NV; v++) {
			if (!use[v])
				continue;
			struct ftstat s = ftstat_of(t + v * reps, reps);
			printf("  %-16s %8.3f ms %7.2f GB/s (%6.2f..%6.2f) %6.1f%% of linear\n", all[v].name,
			       s.median * 1e3, ftpcie_gbs(bytes, s.median), ftpcie_gbs(bytes, s.max),
			       ftpcie_gbs(bytes, s.min), lin > 0 ? 100 * lin / s.median : 0);
		}
		free(t);
		for (int v = 0; v < NV; v++)
			if (graphs[v])
				cudaGraphExecDestroy(graphs[v]);
	}
	cudaFree(scratch);
	ftgather_free(g);
	return failed;
}
