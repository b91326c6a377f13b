/* act: the gated activation of one element, act(g) * u (reference §6), one definition for the
 * CPU MoE executor (src/moe/cpu) and the GPU expert GEMV (kernels/expert_gemv.cu): the GPU
 * tests compare the kernels with the executor's scalar tier bit for bit, so both compile this
 * same text (nvcc: __host__ __device__). a: an enum ftfmt_act (others: swiglu_oai). */
#ifndef FT_MOE_ACT_H
#define FT_MOE_ACT_H
#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "moe/formats.h" /* C declarations, no guards of their own */
#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#define FTMOE_ACT_HD __host__ __device__
#else
#define FTMOE_ACT_HD
#endif

static inline FTMOE_ACT_HD float ftmoe_act(int a, float g, float u, float lim)
{
	switch (a) {
	case FTFMT_ACT_SILU:
		return g / (1.0f + expf(-g)) * u;
	case FTFMT_ACT_GELU:
		return 0.5f * g * (1.0f + erff(g * 0.70710678118654752f)) * u;
	case FTFMT_ACT_GELU_TANH:
		return 0.5f * g * (1.0f + tanhf(0.79788456080286536f * (g + 0.044715f * g * g * g))) * u;
	default: /* FTFMT_ACT_SWIGLU_OAI (the callers validated a) */
		g = fminf(g, lim);
		u = fminf(fmaxf(u, -lim), lim);
		return g / (1.0f + expf(-1.702f * g)) * (u + 1.0f);
	}
}

#endif
