/* ensure_experts on the H200, per phase: the slot-cache kernel compiled with FTSC_PROF (thread 0
 * adds each phase's SM cycles to ftsc_prof[]) and timed with CUDA events, for the eight
 * cache-copy profiles at batch 32 and C = 0.4*L*E, in three states:
 *   start  cache-copy's start state (slot s held by a layer-1 expert, usage s + 1), ids i % active
 *          on layer 0, 8 calls back to back each on its own fresh copy (cache-copy's ensure_us);
 *   steady the GPU test's all-miss cycle over the layers (every call misses min(n, E)), back to
 *          back, and the same captured as a CUDA graph of L layers;
 *   random the GPU test's random ids (about 107 misses of 128 for qwen3-30B's shape).
 * An empty kernel of the same launch shape (1 block, FTSC_BLOCK threads, the same dynamic shared
 * memory) gives the floor of a launch.
 *
 * Built by `make bench-tools` (CUDA builds) as build/bench/ensure_prof (FTSC_PROF: each phase's
 * cycles, which add about 400 cycles per phase to the times) and build/bench/ensure_time (the
 * times alone). By hand, e.g. another block size or another copy of the kernel for an A/B:
 *   nvcc -O3 -std=c++17 -arch=sm_90 [-DFTSC_PROF] [-DFTSC_BLOCK=512] [-DKFILE='"path.cu"']
 *        -I. -Ikernels -Isrc bench/ensure_prof.cu -o ensure_prof
 * usage: ensure_prof [REPEATS]   (default 15; prints one block per profile) */
#ifndef KFILE
#define KFILE "slot_cache.cu"
#endif
#include KFILE
#ifndef FTSC_DYN_BYTES
#define FTSC_DYN_BYTES(C) ((size_t)(C) * 8)
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void __launch_bounds__(FTSC_BLOCK, 1) empty_kernel(struct ftsc_dev d, int layer, int32_t *ids, int n)
{
	extern __shared__ long long dyn[];
	if (threadIdx.x == 0 && n < 0)
		dyn[0] = layer; /* never: keeps the arguments */
}

struct prof {
	double cyc[32];
	long calls;
};

#ifdef FTSC_PROF
static void prof_reset(void)
{
	long long z[32] = {0};
	CK(cudaMemcpyToSymbol(ftsc_prof, z, sizeof z));
}

static void prof_read(struct prof *p, long calls)
{
	long long v[32];
	CK(cudaMemcpyFromSymbol(v, ftsc_prof, sizeof v));
	for (int i = 0; i < 32; i++)
		p->cyc[i] = (double)v[i] / calls;
	p->calls = calls;
}
#else /* timings only */
static void prof_reset(void)
{
}

static void prof_read(struct prof *p, long calls)
{
	memset(p, 0, sizeof *p);
	p->calls = calls;
}
#endif

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0 : v[v.size() / 2];
}

static unsigned long long rng = 88172645463325252ull;
static unsigned rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng >> 11);
}

struct model {
	const char *name;
	int L, E, topk;
};

static const model models[] = {
	{"qwen3.5-35B", 40, 256, 8},  {"qwen3-30B", 48, 128, 8},   {"gemma4-26B", 30, 128, 8},
	{"minimax-m2.5", 62, 256, 8}, {"glm4.7-nvfp4", 89, 160, 8}, {"gpt-oss-20b", 24, 32, 4},
	{"gpt-oss-120b", 36, 128, 4},
};

static void print_prof(const char *what, const struct prof *p, double us)
{
	double tot = 0;
	for (int i = 1; i < 16; i++)
		tot += p->cyc[i];
	printf("    %-8s %7.2f us/call, kernel %6.0f cyc:", what, us, tot);
	for (int i = 1; i < 16; i++)
		if (p->cyc[i] >= 0.5)
			printf(" p%d=%.0f", i, p->cyc[i]);
	printf(" ordered=%.2f", p->cyc[20]);
	printf("\n");
}

int main(int argc, char **argv)
{
	const int reps = argc > 1 ? atoi(argv[1]) : 15, K = 8;
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	int dev, clk;
	CK(cudaGetDevice(&dev));
	CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev));
	printf("FTSC_BLOCK %d, kernel file %s, SM clock attribute %d MHz\n", FTSC_BLOCK, KFILE, clk / 1000);
	for (const model &m : models) {
		const int L = m.L, E = m.E, C = (int)(0.4 * L * E), n = 32 * m.topk;
		const int active = n < E ? n : E;
		printf("%s L%d E%d C%d n%d\n", m.name, L, E, C, n);
		/* start state, K fresh copies, b2b */
		std::vector<int32_t> sf((size_t)L * E, -1), is(C), hid(n);
		std::vector<int64_t> us(C), ls((size_t)L * E, 0);
		for (int c = 0; c < C; c++) {
			int id = E + c % E;
			is[c] = id;
			sf[id] = c;
			us[c] = c + 1;
		}
		for (int i = 0; i < n; i++)
			hid[i] = i % active;
		struct ftsc_dev init, bb[8];
		CK(ftsc_dev_create(&init, L, E, C));
		for (int k = 0; k < K; k++)
			CK(ftsc_dev_create(&bb[k], L, E, C));
		CK(ftsc_dev_upload(&init, sf.data(), is.data(), us.data(), ls.data(), C, s));
		int32_t *d_ids0, *d_bids;
		CK(cudaMalloc((void **)&d_ids0, 4 * n));
		CK(cudaMalloc((void **)&d_bids, 4 * (size_t)n * K));
		CK(cudaMemcpy(d_ids0, hid.data(), 4 * n, cudaMemcpyHostToDevice));
		std::vector<double> t;
		struct prof p;
		prof_reset();
		for (int r = -2; r < reps; r++) {
			for (int k = 0; k < K; k++) {
				CK(ftsc_dev_copy(&bb[k], &init, s));
				CK(cudaMemcpyAsync(d_bids + (size_t)k * n, d_ids0, 4 * n, cudaMemcpyDeviceToDevice, s));
			}
			if (r == 0) {
				CK(cudaStreamSynchronize(s));
				prof_reset();
			}
			CK(cudaEventRecord(e0, s));
			for (int k = 0; k < K; k++)
				CK(ftsc_dev_ensure(&bb[k], 0, d_bids + (size_t)k * n, n, s));
			CK(cudaEventRecord(e1, s));
			CK(cudaEventSynchronize(e1));
			float ms;
			CK(cudaEventElapsedTime(&ms, e0, e1));
			if (r >= 0)
				t.push_back(ms * 1e3 / K);
		}
		prof_read(&p, (long)reps * K);
		int32_t counts[3];
		CK(cudaMemcpy(counts, bb[0].counts, 12, cudaMemcpyDeviceToHost));
		if (counts[2] || counts[0] != active)
			printf("    start: error %d, %d planned (want %d)\n", counts[2], counts[0], active);
		print_prof("start", &p, median(t));
		/* the same launch shape, empty */
		size_t dyn = C <= init.smem_slots ? FTSC_DYN_BYTES(C) : 0;
		CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
		t.clear();
		for (int r = -2; r < reps; r++) {
			CK(cudaEventRecord(e0, s));
			for (int k = 0; k < K; k++)
				empty_kernel<<<1, FTSC_BLOCK, dyn, s>>>(bb[k], 0, d_bids, n);
			CK(cudaEventRecord(e1, s));
			CK(cudaEventSynchronize(e1));
			float ms;
			CK(cudaEventElapsedTime(&ms, e0, e1));
			if (r >= 0)
				t.push_back(ms * 1e3 / K);
		}
		printf("    empty    %7.2f us/call\n", median(t));
		/* steady: all-miss cycle and random ids, b2b and in a graph of L layers */
		for (int mode = 0; mode < 2; mode++) {
			const int iters = 960;
			struct ftsc_dev d;
			CK(ftsc_dev_create(&d, L, E, C));
			std::vector<int32_t> h((size_t)n * iters);
			for (int i = 0; i < iters; i++)
				for (int j = 0; j < n; j++)
					h[(size_t)i * n + j] = mode == 0 ? (int)((i / L * n + j) % E) : (int)(rnd() % E);
			int32_t *d_ids, *d_idsA;
			CK(cudaMalloc((void **)&d_ids, 4 * (size_t)n * iters));
			CK(cudaMalloc((void **)&d_idsA, 4 * (size_t)n * iters));
			CK(cudaMemcpy(d_idsA, h.data(), 4 * (size_t)n * iters, cudaMemcpyHostToDevice));
			float ms = 0;
			for (int w = 0; w < 2; w++) {
				CK(cudaMemcpyAsync(d_ids, d_idsA, 4 * (size_t)n * iters, cudaMemcpyDeviceToDevice, s));
				CK(cudaStreamSynchronize(s));
				prof_reset();
				CK(cudaEventRecord(e0, s));
				for (int i = 0; i < iters; i++)
					CK(ftsc_dev_ensure(&d, i % L, d_ids + (size_t)i * n, n, s));
				CK(cudaEventRecord(e1, s));
				CK(cudaEventSynchronize(e1));
			}
			CK(cudaEventElapsedTime(&ms, e0, e1));
			prof_read(&p, iters);
			CK(cudaMemcpy(counts, d.counts, 12, cudaMemcpyDeviceToHost));
			char what[32];
			snprintf(what, sizeof what, "%s%d", mode ? "rand" : "steady", counts[1]);
			if (counts[2])
				printf("    %s: error %d\n", what, counts[2]);
			print_prof(what, &p, ms * 1e3 / iters);
			cudaGraph_t g;
			cudaGraphExec_t ge;
			CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
			CK(cudaMemcpyAsync(d_ids, d_idsA, 4 * (size_t)n * L, cudaMemcpyDeviceToDevice, s));
			for (int l = 0; l < L; l++)
				CK(ftsc_dev_ensure(&d, l, d_ids + (size_t)l * n, n, s));
			CK(cudaStreamEndCapture(s, &g));
			CK(cudaGraphInstantiate(&ge, g, 0));
			CK(cudaGraphLaunch(ge, s));
			CK(cudaEventRecord(e0, s));
			for (int i = 0; i < 20; i++)
				CK(cudaGraphLaunch(ge, s));
			CK(cudaEventRecord(e1, s));
			CK(cudaEventSynchronize(e1));
			CK(cudaEventElapsedTime(&ms, e0, e1));
			printf("    %-8s %7.2f us/layer in a graph of %d layers\n", mode ? "rand" : "steady",
			       ms * 1e3 / (20.0 * L), L);
			cudaGraphExecDestroy(ge);
			cudaGraphDestroy(g);
			cudaFree(d_ids);
			cudaFree(d_idsA);
			ftsc_dev_destroy(&d);
		}
		for (int k = 0; k < K; k++)
			ftsc_dev_destroy(&bb[k]);
		ftsc_dev_destroy(&init);
		cudaFree(d_ids0);
		cudaFree(d_bids);
	}
	return 0;
}
