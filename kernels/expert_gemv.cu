/* expert_gemv (GPU): see expert_gemv.h.
 *
 * Both kernels are GEMVs of 16-row tiles on the tensor cores (mma.sync m16n8k16, FP32
 * accumulators): lane L of a warp holds rows g = L/4 and g + 8 of the tile and, per K
 * iteration, 16 contiguous bytes of each (its "chunk" c = L%4: the 4 lanes of a row read 64
 * contiguous bytes), which become the A fragments of 2 (bf16) or 8 (4-bit) mma steps. The
 * products are invariant under a permutation of k, so the A fragment positions are simply the
 * chunk's elements in the order the decode yields them, and the activation vector (B, staged
 * once per block in shared memory as hi + lo 16-bit halves) is stored in that same order.
 *
 *  - bf16: A = the stored bf16 pairs; B column 0 = x hi, column 1 = x lo (bf16).
 *  - nvfp4, ds_fp4: A = e2m1 codes as f16 bits (sign to bit 15, the 3 magnitude bits to 9-11:
 *    exactly value * 2^-14, 0.5 a subnormal), two logic operations a code: no conversion
 *    instruction (cvt.rn.f16x2.e4m3x2, tried first, capped the 4-bit formats at about 0.55 of
 *    the HBM rate on the conversion pipe: bench/RESULTS.md). Every step mixes the 4 chunks of
 *    a row, i.e. 4 (ds_fp4) or 8 (nvfp4) scale blocks, so B column n holds x only at the
 *    positions of chunk n % 4 (hi for n < 4, lo for n >= 4): D[row][n] is the sum over one chunk,
 *    and each block's sum is scaled in FP32 (nvfp4: a second accumulator for the chunk's second
 *    block). The 4-bit formats' B is f16, as block floating point: each chunk (32 elements) scaled
 *    by the power of two that puts its largest magnitude in [2^14, 2^15), undone with the
 *    weight scale on that column's sums (no maximum over a whole vector is needed).
 * A row's sum is the sum over all 8 columns: two quad shuffles.
 *
 * gate_up kernel: tile rows 0-7 are gate rows j, rows 8-15 the up rows I + j, so lane g holds
 * gate and up of row j + g and applies the activation itself. bf16: block = one tile (8 rows j)
 * of route r of token b, its warps split K and are summed; 4-bit: block = FTGEMV_GU_WARPS tiles,
 * a warp each, K whole (x staged once for all). Writes h as the down kernel stages it (hi / lo;
 * 4-bit: each 32 rows with their block factor).
 * down kernel: block = (FTGEMV_DN_WARPS tiles of 16 output rows, route r, token b), a warp a
 * tile, K whole (bf16: two warps a tile, each half of K, summed in a fixed order); writes w[b, r]
 * * its rows to the scratch; the last block of the row group to finish (a counter) adds the live
 * routes up in route order into y (deterministic). A tile's K parts (blk_cfg) and the warps an SM
 * holds are set per format: for bf16 at batch 1, two K parts in the down kernel, 24 warps an SM
 * and one iteration per load buffer gave 25.7 against 27.6 us a step on the H200 (more warps,
 * shorter per-warp chains of loads); every such change measured slower for the 4-bit formats.
 * Both kernels double-buffer their loads in registers (unroll<F> iterations per buffer) and
 * issue their first loads before they stage their vector (the down kernel: before it waits for
 * the gate_up kernel, whose end it overlaps as a programmatic dependent launch), so that the
 * memory system is busy from a block's start. The fused kernel (fz_kernel) runs the same
 * blocks (gu_block, dn_block) in one cooperative launch, a grid barrier between the phases.
 * The tile loop is in expert_gemv_tile.cuh, the device helpers in expert_gemv_dev.cuh. */
#include "expert_gemv_dev.cuh"

#include <cooperative_groups.h>

#ifndef FTGEMV_GU_WARPS
#define FTGEMV_GU_WARPS 4   /* warps of a gate_up block (bf16: split K; 4-bit: a tile each) */
#endif
#ifndef FTGEMV_DN_WARPS
#define FTGEMV_DN_WARPS 4   /* warps of a down block: one 16-row tile each, K whole */
#endif
/* Per format (bf16: _BF16; the 4-bit formats: no suffix), chosen on the H200 (bench/RESULTS.md,
 * "GPU expert GEMV"): K parts of a tile (warps that split its K), warps an SM must hold (the
 * register budget), K iterations per load buffer (two buffers in flight). */
#ifndef FTGEMV_GU_KS
#define FTGEMV_GU_KS 1      /* 4-bit gate_up K parts (bf16: FTGEMV_GU_WARPS) */
#endif
#ifndef FTGEMV_DN_KS
#define FTGEMV_DN_KS 1
#endif
#ifndef FTGEMV_DN_KS_BF16
#define FTGEMV_DN_KS_BF16 2
#endif
#ifndef FTGEMV_GU_WPSM
#define FTGEMV_GU_WPSM 16
#endif
#ifndef FTGEMV_GU_WPSM_BF16
#define FTGEMV_GU_WPSM_BF16 24
#endif
#ifndef FTGEMV_DN_WPSM
#define FTGEMV_DN_WPSM 16
#endif
#ifndef FTGEMV_DN_WPSM_BF16
#define FTGEMV_DN_WPSM_BF16 24
#endif
#ifndef FTGEMV_UNROLL
#define FTGEMV_UNROLL 2
#endif
#ifndef FTGEMV_UNROLL_BF16
#define FTGEMV_UNROLL_BF16 1
#endif
#ifndef FTGEMV_FZ_WPSM_BF16
#define FTGEMV_FZ_WPSM_BF16 FTGEMV_GU_WPSM_BF16 /* the fused kernel's warps an SM */
#endif
#ifndef FTGEMV_FZ_WPSM
#define FTGEMV_FZ_WPSM FTGEMV_GU_WPSM
#endif
#ifndef FTGEMV_FUSED_B
#define FTGEMV_FUSED_B 1    /* 4-bit calls of at most this many tokens: the fused kernel */
#endif
#define FTGEMV_PAD 8        /* u16 elements between staged vectors (spreads shared-memory banks) */

struct gv_params {
	const uint8_t *gu_w, *gu_s, *gu_g, *dn_w, *dn_s, *dn_g; /* pool bases (NULL: no such bank) */
	size_t gu_wb, gu_sb, gu_gb, dn_wb, dn_sb, dn_gb;        /* bytes of one expert in each */
	int H, I, C, topk, act, B;
	float lim;
	const int32_t *slots;
	const float *w, *x;
	float *h, *y;
};

#include "expert_gemv_tile.cuh"

/* ------------------------------------------------------------------ kernels */

/* Intermediate rows of a gate_up block: bf16 one tile (8 gate + 8 up rows) whose K the warps
 * split; 4-bit formats one tile per warp, K whole (x is staged once for all of them, and the
 * block's 32 rows are one 32-element block of h). */
template <int F> struct gu_rows { static constexpr int v = F == KF_BF16 ? 8 : 8 * FTGEMV_GU_WARPS; };
static_assert(FTGEMV_GU_WARPS % 4 == 0, "a 4-bit gate_up block writes h in blocks of 32 rows");

/* A kernel's block: tiles x ks warps (warp w: tile w % tiles, K part w / tiles of ks); minb
 * blocks an SM must hold (the register budget __launch_bounds__ gives). gate_up bf16: one tile,
 * FTGEMV_GU_WARPS K parts; 4-bit: FTGEMV_GU_WARPS tiles, FTGEMV_GU_KS parts; down:
 * FTGEMV_DN_WARPS tiles, FTGEMV_DN_KS(_BF16) parts. */
template <int TL, int KS, int WPSM> struct blk_cfg {
	static constexpr int tiles = TL, ks = KS, warps = TL * KS;
	static constexpr int minb = WPSM / warps > 0 ? WPSM / warps : 1;
};
template <int F>
struct gu_cfg : blk_cfg<F == KF_BF16 ? 1 : FTGEMV_GU_WARPS, F == KF_BF16 ? FTGEMV_GU_WARPS : FTGEMV_GU_KS,
			F == KF_BF16 ? FTGEMV_GU_WPSM_BF16 : FTGEMV_GU_WPSM> {
};
template <int F>
struct dn_cfg : blk_cfg<FTGEMV_DN_WARPS, F == KF_BF16 ? FTGEMV_DN_KS_BF16 : FTGEMV_DN_KS,
			F == KF_BF16 ? FTGEMV_DN_WPSM_BF16 : FTGEMV_DN_WPSM> {
};

/* Scratch: h of every (token, route) as staged (hi [I], lo [I] u16), then the 4-bit formats'
 * block factors (post [I / 32] float). */
__host__ __device__ static inline size_t h16_bytes(size_t B, size_t topk, size_t I)
{
	return B * topk * I * 4;
}

/* The down kernel's row groups: FTGEMV_DN_WARPS tiles of 16 rows (the last one may be short). */
#define FTGEMV_DN_GROUP (16 * FTGEMV_DN_WARPS)
__host__ __device__ static inline int dn_groups(long H)
{
	return (int)((H + FTGEMV_DN_GROUP - 1) / FTGEMV_DN_GROUP);
}

/* Scratch after h: the 4-bit formats' block factors of h [B, topk, I / 32] f32, each route's
 * down output [B, topk, H] f32, the row groups' counters [B, dn_groups] u32. */
__device__ static inline float *h_post(const gv_params &p)
{
	return reinterpret_cast<float *>(reinterpret_cast<char *>(p.h) + h16_bytes(p.B, p.topk, p.I));
}
__device__ static inline float *dn_part(const gv_params &p)
{
	return h_post(p) + (size_t)p.B * p.topk * (p.I / 32);
}
__device__ static inline unsigned *dn_counters(const gv_params &p)
{
	return reinterpret_cast<unsigned *>(dn_part(p) + (size_t)p.B * p.topk * p.H);
}
static inline size_t scratch_bytes(size_t B, size_t topk, long H, long I)
{
	return h16_bytes(B, topk, (size_t)I) + B * topk * (size_t)(I / 32) * 4 + B * topk * (size_t)H * 4 +
	       B * (size_t)dn_groups(H) * 4;
}

/* gate_up + activation of one block: rows j of block jb of (token b, route r), gu_cfg's warps;
 * dynamic shared memory sm_gu: 3 staged vectors of H and their block factors. h of (b, r),
 * rows j: act(gate_j . x_b, up_j . x_b), written to the scratch ready to stage (and its block
 * factor). Block 0 of route 0 also zeroes token b's down counters (and y[b] if it has no live
 * route). */
template <int F>
__device__ __forceinline__ void gu_block(const gv_params &p, int jb, int r, int b, uint16_t *sm_gu)
{
	constexpr int TL = gu_cfg<F>::tiles, KS = gu_cfg<F>::ks;
	__shared__ float red[KS][TL][16];
	__shared__ float hv[gu_rows<F>::v];
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int tw = KS == 1 ? warp : warp % TL, ks = KS == 1 ? 0 : warp / TL;
	constexpr int NT = gu_cfg<F>::warps * 32;
	const int j0 = jb * gu_rows<F>::v;
	const long H = p.H, I = p.I;
	if (jb == 0 && r == 0) {
		/* this call's down counters of token b start at 0; a token without a live route gets
		 * zeros (no down block writes it) */
		unsigned *cnt = dn_counters(p) + (size_t)b * dn_groups(H);
		for (int i = tid; i < dn_groups(H); i += NT)
			cnt[i] = 0;
		int live = 0;
		for (int i = 0; i < p.topk; i++)
			live += p.slots[b * p.topk + i] >= 0 && p.slots[b * p.topk + i] < p.C;
		if (!live)
			for (long i = tid; i < H; i += NT)
				p.y[(size_t)b * H + i] = 0.0f;
	}
	const int slot = p.slots[b * p.topk + r];
	if (slot < 0 || slot >= p.C)
		return;
	const size_t ve = vec_elems(H);
	uint16_t *hi = sm_gu, *lo = sm_gu + ve, *zero = sm_gu + 2 * ve;
	float *xpost = reinterpret_cast<float *>(sm_gu + 3 * ve);
	const float *x = p.x + (size_t)b * H;
	/* tile rows 0-7: gate rows jt + g, rows 8-15: up rows I + jt + g (I rows further on) */
	const int NI = (int)(H / kiter<F>::v);
	const int jt = j0 + 8 * tw;
	const int i0 = NI * ks / KS, i1 = NI * (ks + 1) / KS;
	const tile<F> t(p.gu_w + (size_t)slot * p.gu_wb, p.gu_s ? p.gu_s + (size_t)slot * p.gu_sb : NULL, H, jt, I,
			lane, hi, lo, zero, xpost);
	/* the first loads go out before x is staged */
	frag A[unroll<F>::v];
	t.load(A, i0, i1);

	/* stage x: thread tid takes elements 8 tid .. 8 tid + 7 of each round; the 4 threads of a
	 * 32-element block agree on its scale (4-bit formats) */
	for (long k0 = 0; k0 < H; k0 += 8 * NT) {
		const long k = k0 + 8 * tid;
		float e[8] = {0, 0, 0, 0, 0, 0, 0, 0};
		if (k < H) {
			const float4 u0 = *reinterpret_cast<const float4 *>(x + k), u1 = *reinterpret_cast<const float4 *>(x + k + 4);
			e[0] = u0.x, e[1] = u0.y, e[2] = u0.z, e[3] = u0.w, e[4] = u1.x, e[5] = u1.y, e[6] = u1.z, e[7] = u1.w;
		}
		float sc = 1.0f, post = 1.0f;
		if (F != KF_BF16) {
			float m = 0;
#pragma unroll
			for (int i = 0; i < 8; i++)
				m = fmaxf(m, fabsf(e[i]));
			m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, 1));
			m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, 2));
			sc = blk_scale(m, &post);
		}
		if (k < H) {
			stage8<F>(e, k, sc, hi, lo);
			*reinterpret_cast<uint4 *>(zero + k) = make_uint4(0, 0, 0, 0);
			if (F != KF_BF16 && (tid & 3) == 0)
				xpost[k / 32] = post;
		}
	}
	__syncthreads();

	float acc[4] = {0, 0, 0, 0};
	t.run(A, i0, i1, acc);
	float gt, up;
	tile_rows(acc, &gt, &up);
	if (KS > 1) {
		/* the K parts of each tile added up in part order (deterministic) */
		if ((lane & 3) == 0) {
			red[ks][tw][lane >> 2] = gt;
			red[ks][tw][8 + (lane >> 2)] = up;
		}
		__syncthreads();
		gt = 0;
		up = 0;
		for (int i = 0; i < KS; i++) {
			gt += red[i][tw][lane >> 2];
			up += red[i][tw][8 + (lane >> 2)];
		}
	}
	uint16_t *h16 = reinterpret_cast<uint16_t *>(p.h) + ((size_t)b * p.topk + r) * 2 * I;
	if (F == KF_BF16) {
		if (warp == 0 && (lane & 3) == 0) {
			const int j = j0 + (lane >> 2);
			uint32_t vh, vl;
			split_bf16(ftmoe_act(p.act, gt, up, p.lim), &vh, &vl);
			h16[j] = (uint16_t)vh;
			h16[I + j] = (uint16_t)vl;
		}
	} else {
		if (ks == 0 && (lane & 3) == 0) {
			float g = gt, u = up;
			if (F == KF_NVFP4) {
				const uint8_t *gl = p.gu_g + (size_t)slot * p.gu_gb;
				g *= FP4_POST * fp16_f(gl + 2 * (size_t)(jt + (lane >> 2)));
				u *= FP4_POST * fp16_f(gl + 2 * (size_t)(I + jt + (lane >> 2)));
			}
			hv[8 * tw + (lane >> 2)] = ftmoe_act(p.act, g, u, p.lim);
		}
		__syncthreads();
		/* each 32 rows of h are one block of the staged h: warp w < rows / 32 scales and
		 * writes block w */
		if (warp < gu_rows<F>::v / 32) {
			const int j = 32 * warp + lane;
			const float v = hv[j];
			float m = fabsf(v), post;
			for (int o = 16; o; o >>= 1)
				m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, o));
			uint32_t vh, vl;
			split_f16(v * blk_scale(m, &post), &vh, &vl);
			const int pos = j0 + (j & ~7) + ftgemv_fp4_pos(j & 7);
			h16[pos] = (uint16_t)vh;
			h16[I + pos] = (uint16_t)vl;
			if (lane == 0)
				h_post(p)[((size_t)b * p.topk + r) * (I / 32) + (j0 + 32 * warp) / 32] = post;
		}
	}
}

template <int F>
__global__ void __launch_bounds__(gu_cfg<F>::warps * 32, gu_cfg<F>::minb) gu_kernel(const gv_params p)
{
	extern __shared__ __align__(16) uint16_t sm_gu[];
	grid_wait();
	grid_release();
	gu_block<F>(p, blockIdx.x, blockIdx.y, blockIdx.z, sm_gu);
}

/* Bytes of a down block's dynamic shared memory: the zero region, hi / lo of its route's h,
 * their block factors. */
static size_t dn_smem(long I)
{
	return 3 * ((size_t)I + FTGEMV_PAD) * 2 + (size_t)(I / 32) * 4;
}

/* How a down block waits for the gate_up results (h) it stages: DN_NONE (the caller did),
 * DN_GRID_DEP (programmatic dependent launch), DN_GRID_SYNC (the fused kernel's grid barrier;
 * every block calls it once, also one whose route is not live). */
enum { DN_NONE = 0, DN_GRID_DEP = 1, DN_GRID_SYNC = 2 };

__device__ static inline void grid_sync(void)
{
	cooperative_groups::this_grid().sync();
}

/* down of one block: row group grp of (token b, route r), dn_cfg's tiles x K parts as tasks of
 * NW warps (warp w: tasks w, w + NW, ..., task t tile t % tiles, K part t / tiles); dynamic
 * shared memory dn_smem(I). Writes w[b, r] * (down_r . h[b, r]) for its rows to the scratch;
 * the last block of a row group to finish (a counter per group, zeroed by gate_up block 0 of
 * route 0) adds the routes up in route order (deterministic) into y[b] and leaves the counter. */
template <int F, int NW, int WAIT>
__device__ __forceinline__ void dn_block(const gv_params &p, int grp, int r, int b, uint16_t *sm_dn)
{
	constexpr int TL = dn_cfg<F>::tiles, KS = dn_cfg<F>::ks, PER = TL * KS / NW;
	static_assert(PER * NW == TL * KS, "a down block's tasks in equal shares of its warps");
	__shared__ int s_slot[FTGEMV_MAX_TOPK];
	__shared__ int s_last;
	__shared__ float red[KS][TL][16];
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	constexpr int NT = NW * 32;
	const int topk = p.topk;
	const long H = p.H, I = p.I;
	const size_t ve = vec_elems(I);
	uint16_t *zero = sm_dn, *hi = sm_dn + ve, *lo = sm_dn + 2 * ve;
	float *spost = reinterpret_cast<float *>(sm_dn + 3 * ve);

	/* slots, weights and the pools were written before the gate_up kernel started (it waited
	 * for them): read before waiting for the gate_up kernel, which only h depends on */
	if (tid < topk) {
		const int sl = p.slots[b * topk + tid];
		s_slot[tid] = sl < 0 || sl >= p.C ? -1 : sl;
	}
	__syncthreads();
	const int slot = s_slot[r];
	if (slot < 0) {
		if (WAIT == DN_GRID_SYNC)
			grid_sync();
		return;
	}
	const int NI = (int)(I / kiter<F>::v);
	/* task k of this warp: tile (warp + k NW) % TL (rows n0 .. n0 + 15), K part (warp + k NW) / TL */
	const int tw = KS == 1 ? warp : warp % TL, ks = KS == 1 ? 0 : warp / TL;
	const int i0 = NI * ks / KS, i1 = NI * (ks + 1) / KS;
	const long n0 = (long)grp * FTGEMV_DN_GROUP + 16 * tw;
	const bool rows = n0 < H;
	const uint8_t *wbase = p.dn_w + (size_t)slot * p.dn_wb, *sbase = p.dn_s ? p.dn_s + (size_t)slot * p.dn_sb : NULL;
	const tile<F> t(wbase, sbase, I, rows ? n0 : 0, 8, lane, hi, lo, zero, spost);
	/* the first loads go out now */
	frag A[unroll<F>::v];
	if (rows)
		t.load(A, i0, i1);
	if (WAIT == DN_GRID_DEP) {
		grid_wait(); /* h of the gate_up kernel */
		grid_release();
	} else if (WAIT == DN_GRID_SYNC) {
		grid_sync();
	}

	/* stage this route's h: a copy of what the gate_up kernel wrote */
	const uint16_t *src = reinterpret_cast<const uint16_t *>(p.h) + ((size_t)b * topk + r) * 2 * I;
	for (long k = 8 * tid; k < 2 * I; k += 8 * NT)
		*reinterpret_cast<uint4 *>(sm_dn + ve + k + (k >= I ? FTGEMV_PAD : 0)) =
			*reinterpret_cast<const uint4 *>(src + k);
	for (long k = 8 * tid; k < I; k += 8 * NT)
		*reinterpret_cast<uint4 *>(zero + k) = make_uint4(0, 0, 0, 0);
	if (F != KF_BF16) {
		const float *hp = h_post(p) + ((size_t)b * topk + r) * (I / 32);
		for (long k = tid; k < I / 32; k += NT)
			spost[k] = hp[k];
	}
	__syncthreads();

	float *part = dn_part(p) + ((size_t)b * topk + r) * H;
	/* rows m + g and m + g + 8 (sums t0, t1) of this route into the scratch */
	auto put = [&](long m, float t0, float t1) {
		const long ra = m + (lane >> 2), rb = ra + 8;
		float f0 = p.w[b * topk + r] * (F == KF_NVFP4 ? FP4_POST : 1.0f), f1 = f0;
		if (F == KF_NVFP4) {
			const uint8_t *gl = p.dn_g + (size_t)slot * p.dn_gb;
			f0 *= fp16_f(gl + 2 * (size_t)ra);
			f1 *= fp16_f(gl + 2 * (size_t)rb);
		}
		part[ra] = t0 * f0;
		part[rb] = t1 * f1;
	};
	if (KS == 1) {
		if (rows) {
			float acc[4] = {0, 0, 0, 0};
			t.run(A, i0, i1, acc);
			float t0, t1;
			tile_rows(acc, &t0, &t1);
			if ((lane & 3) == 0)
				put(n0, t0, t1);
		}
	} else {
		float t0 = 0, t1 = 0;
		if (rows) {
			float acc[4] = {0, 0, 0, 0};
			t.run(A, i0, i1, acc);
			tile_rows(acc, &t0, &t1);
		}
		if ((lane & 3) == 0) {
			red[ks][tw][lane >> 2] = t0;
			red[ks][tw][8 + (lane >> 2)] = t1;
		}
		/* this warp's further tasks (a block of fewer warps than tasks) */
#pragma unroll
		for (int k = 1; k < PER; k++) {
			const int tk = warp + k * NW, twk = tk % TL, ksk = tk / TL;
			const long nk = (long)grp * FTGEMV_DN_GROUP + 16 * twk;
			t0 = 0, t1 = 0;
			if (nk < H) {
				const tile<F> u(wbase, sbase, I, nk, 8, lane, hi, lo, zero, spost);
				const int j0 = NI * ksk / KS, j1 = NI * (ksk + 1) / KS;
				frag Ak[unroll<F>::v];
				u.load(Ak, j0, j1);
				float acc[4] = {0, 0, 0, 0};
				u.run(Ak, j0, j1, acc);
				tile_rows(acc, &t0, &t1);
			}
			if ((lane & 3) == 0) {
				red[ksk][twk][lane >> 2] = t0;
				red[ksk][twk][8 + (lane >> 2)] = t1;
			}
		}
		/* the K parts of each tile added up in part order (deterministic); the task of K
		 * part 0 writes it */
		__syncthreads();
#pragma unroll
		for (int k = 0; k < PER; k++) {
			const int tk = warp + k * NW, twk = tk % TL;
			const long nk = (long)grp * FTGEMV_DN_GROUP + 16 * twk;
			t0 = 0;
			t1 = 0;
			for (int i = 0; i < KS; i++) {
				t0 += red[i][twk][lane >> 2];
				t1 += red[i][twk][8 + (lane >> 2)];
			}
			if (nk < H && tk / TL == 0 && (lane & 3) == 0)
				put(nk, t0, t1);
		}
	}
	/* the last block of the row group adds the live routes up, in route order */
	__threadfence();
	__syncthreads();
	if (tid == 0) {
		int live = 0;
		for (int i = 0; i < topk; i++)
			live += s_slot[i] >= 0;
		s_last = atomicAdd(dn_counters(p) + (size_t)b * dn_groups(H) + grp, 1u) == (unsigned)live - 1;
	}
	__syncthreads();
	if (!s_last)
		return;
	__threadfence();
	for (long row = (long)grp * FTGEMV_DN_GROUP + tid; row < H && row < (long)(grp + 1) * FTGEMV_DN_GROUP;
	     row += NT) {
		float v = 0;
		for (int i = 0; i < topk; i++)
			if (s_slot[i] >= 0)
				v += __ldcg(dn_part(p) + ((size_t)b * topk + i) * H + row);
		p.y[(size_t)b * H + row] = v;
	}
}

template <int F>
__global__ void __launch_bounds__(dn_cfg<F>::warps * 32, dn_cfg<F>::minb) dn_kernel(const gv_params p)
{
	extern __shared__ __align__(16) uint16_t sm_dn[];
	dn_block<F, dn_cfg<F>::warps, DN_GRID_DEP>(p, blockIdx.x, blockIdx.y, blockIdx.z, sm_dn);
}

/* Both phases in one cooperative launch: each block takes gate_up blocks i = blockIdx.x,
 * blockIdx.x + gridDim.x, ... (i = (jb, r, b) in that order), then down blocks the same way;
 * the first down block of each waits at the grid barrier, its first loads already issued (no
 * kernel boundary, no second launch). A gate_up block's warps (4) run the down tasks; the same
 * arithmetic as the two kernels: bit-identical results. Dynamic shared memory: the larger of
 * the two. */
template <int F> struct fz_cfg {
	static constexpr int warps = gu_cfg<F>::warps;
	static constexpr int minb = (F == KF_BF16 ? FTGEMV_FZ_WPSM_BF16 : FTGEMV_FZ_WPSM) / warps;
};
template <int F>
__global__ void __launch_bounds__(fz_cfg<F>::warps * 32, fz_cfg<F>::minb) fz_kernel(const gv_params p)
{
	extern __shared__ __align__(16) uint16_t sm_fz[];
	const int nj = p.I / gu_rows<F>::v, ng = dn_groups(p.H), topk = p.topk;
	const int ngu = nj * topk * p.B, ndn = ng * topk * p.B;
	for (int i = blockIdx.x; i < ngu; i += gridDim.x) {
		gu_block<F>(p, i % nj, (i / nj) % topk, i / (nj * topk), sm_fz);
		__syncthreads();
	}
	int i = blockIdx.x;
	if (i >= ndn) {
		grid_sync();
		return;
	}
	dn_block<F, fz_cfg<F>::warps, DN_GRID_SYNC>(p, i % ng, (i / ng) % topk, i / (ng * topk), sm_fz);
	for (i += gridDim.x; i < ndn; i += gridDim.x) {
		__syncthreads();
		dn_block<F, fz_cfg<F>::warps, DN_NONE>(p, i % ng, (i / ng) % topk, i / (ng * topk), sm_fz);
	}
}

/* ------------------------------------------------------------------ host side */

static int kfmt_of(enum ftfmt_id f)
{
	return f == FTFMT_BF16 ? KF_BF16 : f == FTFMT_NVFP4 ? KF_NVFP4 : f == FTFMT_DS_FP4 ? KF_DSFP4 : -1;
}

static size_t gu_smem(long H)
{
	return 3 * ((size_t)H + FTGEMV_PAD) * 2 + (size_t)(H / 32) * 4;
}

/* The kernels' shared memory limits; *fz: blocks of the fused kernel an SM holds. */
template <int F> static cudaError_t set_attrs(size_t gu, size_t dn, int *fz)
{
	const size_t m = gu > dn ? gu : dn;
	cudaError_t e = cudaFuncSetAttribute(gu_kernel<F>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gu);
	if (!e)
		e = cudaFuncSetAttribute(dn_kernel<F>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dn);
	if (!e)
		e = cudaFuncSetAttribute(fz_kernel<F>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)m);
	if (!e)
		e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(fz, fz_kernel<F>, fz_cfg<F>::warps * 32, m);
	return e;
}

extern "C" cudaError_t ftgemv_init(struct ftgemv_experts *e)
{
	if (!e)
		return cudaErrorInvalidValue;
	const int F = kfmt_of(e->fmt);
	const long mult = F == KF_BF16 ? 32 : 128;
	if (F < 0 || e->H <= 0 || e->I <= 0 || e->H % mult || e->I % mult || e->H > (1L << 20) ||
	    e->I > (1L << 20) || e->slots < 1 || (unsigned)e->act > FTFMT_ACT_SWIGLU_OAI)
		return cudaErrorInvalidValue;
	struct ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
	const int n = ftfmt_banks(ftfmt_get(e->fmt), e->H, e->I, sh);
	if (n <= 0)
		return cudaErrorInvalidValue;
	for (int i = 0; i < FTFMT_MAX_BANKS; i++) {
		if (i < n && !e->pool[i])
			return cudaErrorInvalidValue;
		e->bank_bytes[i] = i < n ? sh[i].expert_bytes : 0;
	}
	e->nbanks = n;
	int dev, major, optin, sms, coop, fz = 0;
	cudaError_t err;
	if ((err = cudaGetDevice(&dev)) || (err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)) ||
	    (err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) ||
	    (err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
	    (err = cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev)))
		return err;
	const size_t gu = gu_smem(e->H), dn = dn_smem(e->I);
	const size_t lim = (size_t)optin - 1024; /* the kernels' static shared memory */
	if (gu > lim || dn > lim)
		return cudaErrorInvalidValue;
	e->dn_smem_max = dn;
	/* programmatic launches: for bf16 (27.2 against 28.1 us a step at batch 1 on the H200); the
	 * 4-bit formats' batch-1 steps were 11-17 % faster without them (equal from batch 4):
	 * bench/RESULTS.md, "GPU expert GEMV" */
	e->pdl = major >= 9 && F == KF_BF16;
	switch (F) {
	case KF_BF16: err = set_attrs<KF_BF16>(gu, dn, &fz); break;
	case KF_NVFP4: err = set_attrs<KF_NVFP4>(gu, dn, &fz); break;
	default: err = set_attrs<KF_DSFP4>(gu, dn, &fz); break;
	}
	e->fz_blocks = coop ? fz * sms : 0;
	/* the fused kernel: 4-bit formats at batch 1 (nvfp4 30.4 against 31.0 us a step, ds_fp4 36.0
	 * against 36.5 on the H200); 2-10 % slower from batch 4, and bf16 21 % slower at batch 1 */
	e->fused_b = e->fz_blocks > 0 && F != KF_BF16 ? FTGEMV_FUSED_B : 0;
	return err;
}

extern "C" size_t ftgemv_scratch_bytes(const struct ftgemv_experts *e, int B, int topk)
{
	if (!e || B < 1 || topk < 1)
		return 0;
	return (scratch_bytes((size_t)B, (size_t)topk, e->H, e->I) + 15) & ~(size_t)15;
}

template <int F>
static cudaError_t launch(const struct ftgemv_experts *e, const gv_params &p, int B, cudaStream_t s)
{
	cudaLaunchAttribute at;
	cudaLaunchConfig_t cfg = {};
	cfg.stream = s;
	if (B <= e->fused_b) {
		const long items = (long)B * p.topk * (e->I / gu_rows<F>::v > dn_groups(e->H) ? e->I / gu_rows<F>::v : dn_groups(e->H));
		at.id = cudaLaunchAttributeCooperative;
		at.val.cooperative = 1;
		cfg.attrs = &at;
		cfg.numAttrs = 1;
		cfg.gridDim = dim3((unsigned)(items < e->fz_blocks ? items : e->fz_blocks));
		cfg.blockDim = dim3(fz_cfg<F>::warps * 32);
		cfg.dynamicSmemBytes = gu_smem(e->H) > dn_smem(e->I) ? gu_smem(e->H) : dn_smem(e->I);
		const cudaError_t err = cudaLaunchKernelEx(&cfg, fz_kernel<F>, p);
		return err ? err : cudaGetLastError();
	}
	at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at.val.programmaticStreamSerializationAllowed = 1;
	if (e->pdl) {
		cfg.attrs = &at;
		cfg.numAttrs = 1;
	}
	cfg.gridDim = dim3((unsigned)(e->I / gu_rows<F>::v), (unsigned)p.topk, (unsigned)B);
	cfg.blockDim = dim3(gu_cfg<F>::warps * 32);
	cfg.dynamicSmemBytes = gu_smem(e->H);
	cudaError_t err = cudaLaunchKernelEx(&cfg, gu_kernel<F>, p);
	if (err)
		return err;
	cfg.gridDim = dim3((unsigned)dn_groups(e->H), (unsigned)p.topk, (unsigned)B);
	cfg.blockDim = dim3(dn_cfg<F>::warps * 32);
	cfg.dynamicSmemBytes = dn_smem(e->I);
	err = cudaLaunchKernelEx(&cfg, dn_kernel<F>, p);
	return err ? err : cudaGetLastError();
}

extern "C" cudaError_t ftgemv_moe(const struct ftgemv_experts *e, int B, int topk, const int32_t *d_slots,
				  const float *d_w, const float *d_x, float *d_y, void *d_scratch, cudaStream_t s)
{
	const int F = e ? kfmt_of(e->fmt) : -1;
	if (F < 0 || e->nbanks <= 0 || B < 1 || B > 65535 || topk < 1 || topk > FTGEMV_MAX_TOPK || !d_slots ||
	    !d_w || !d_x || !d_y || !d_scratch || (B <= e->fused_b && e->fz_blocks < 1))
		return cudaErrorInvalidValue;
	gv_params p = {};
	const uint8_t *const *pl = (const uint8_t *const *)e->pool;
	switch (F) {
	case KF_BF16:
		p.gu_w = pl[0];
		p.dn_w = pl[1];
		break;
	case KF_NVFP4:
		p.gu_w = pl[0], p.gu_s = pl[1], p.gu_g = pl[2];
		p.dn_w = pl[3], p.dn_s = pl[4], p.dn_g = pl[5];
		break;
	default:
		p.gu_w = pl[0], p.gu_s = pl[1];
		p.dn_w = pl[2], p.dn_s = pl[3];
		break;
	}
	const size_t *bb = e->bank_bytes;
	if (F == KF_BF16) {
		p.gu_wb = bb[0], p.dn_wb = bb[1];
	} else if (F == KF_NVFP4) {
		p.gu_wb = bb[0], p.gu_sb = bb[1], p.gu_gb = bb[2], p.dn_wb = bb[3], p.dn_sb = bb[4], p.dn_gb = bb[5];
	} else {
		p.gu_wb = bb[0], p.gu_sb = bb[1], p.dn_wb = bb[2], p.dn_sb = bb[3];
	}
	p.H = (int)e->H;
	p.I = (int)e->I;
	p.C = e->slots;
	p.topk = topk;
	p.B = B;
	p.act = (int)e->act;
	p.lim = e->swiglu_limit;
	p.slots = d_slots;
	p.w = d_w;
	p.x = d_x;
	p.h = (float *)d_scratch;
	p.y = d_y;
	switch (F) {
	case KF_BF16: return launch<KF_BF16>(e, p, B, s);
	case KF_NVFP4: return launch<KF_NVFP4>(e, p, B, s);
	default: return launch<KF_DSFP4>(e, p, B, s);
	}
}
