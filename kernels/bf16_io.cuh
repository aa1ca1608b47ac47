/* bf16_io.cuh: an element of fp32 or bf16 storage read as fp32, and an fp32
 * value stored (bf16: rounded to nearest even), for the kernels templated on
 * their storage type (backend.h mlp_bf16, attn_bf16): they run the fp32
 * arithmetic on the widened values, so on bf16 storage each result is the
 * fp32 kernel's on the same values, rounded once. Shared by
 * kernels/backend_kernels.cuh and kernels/attention.cu.
 */
#ifndef SUPKIT_BF16_IO_CUH
#define SUPKIT_BF16_IO_CUH

#include <cuda_bf16.h>
#include <stdint.h>

__device__ static inline float ldf(const float *p, int64_t i) { return p[i]; }
__device__ static inline float ldf(const __nv_bfloat16 *p, int64_t i)
{
	return __bfloat162float(p[i]);
}
__device__ static inline void stf(float *p, int64_t i, float v) { p[i] = v; }
__device__ static inline void stf(__nv_bfloat16 *p, int64_t i, float v)
{
	p[i] = __float2bfloat16_rn(v);
}

#endif
