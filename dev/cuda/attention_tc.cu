/* attention_tc.cu: the sliding-window causal attention of kernels/attention.cu
 * on tensor cores (WMMA 16x16x16, bf16 inputs, fp32 accumulation) for head
 * width 128: the bf16 variant the benchmark's flash attention computes.
 * Same contract and work split (FlashAttention-2 style, no T x T matrix,
 * recomputation in the backward, no atomics: bitwise reproducible):
 *   forward  block per (64 queries, b, h); key tiles of 64: S = Q K^T on
 *            tensor cores into shared memory, online softmax by warps (a
 *            warp owns 8 rows), P rounded to bf16, O += P V on tensor cores
 *            with O kept in shared memory so rows can be rescaled;
 *   dK, dV   block per (64 keys, b, h); query tiles of 64: S^T = K Q^T,
 *            dP^T = V dY^T, then dV += P^T dY, dK += dS^T Q with the
 *            accumulators held in WMMA fragments across tiles;
 *   dQ       block per (64 queries, b, h); key tiles of 64: dQ += dS K.
 * Rounding points: q, k, v, dy and the probabilities P, dS are rounded to
 * bf16; every product accumulates in fp32; softmax statistics, lse and the
 * row dots D = rowsum(dY * Y) are fp32.
 *
 * A variant of dev/cuda (dev/cuda/attention_variants.h, ATTN_VAR_TC), not
 * in the product, whose kernels for head width 128 are
 * kernels/attention_mma.cu (the same rounding points, scores in
 * registers). On an H200 at the benchmark's size (2026-11-29, when these
 * were in the backend and passed its GPU tests) these ran 58-61 TFLOP/s
 * forward, 48-52 backward (the mma.sync ones 102-108 and 114-123, the fp32
 * ones 10 and 4-6).
 * Left out: head widths other than 128, wgmma/TMA (Hopper-specific)
 * pipelining, register-resident O.
 * Reference: Dao, FlashAttention-2 (2023), Algorithms 1 and 2; CUDA C++
 * Programming Guide, Warp Matrix Functions (nvcuda::wmma).
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <mma.h>
#include <stdint.h>

#include "dev/cuda/attention_variants.h"
#include "kernels/cuda_internal.h"

using namespace nvcuda;
typedef __nv_bfloat16 bf;

/* D = rowsum(dY * Y) comes from kernels/attention.cu (attn_rowdot_launch). */

#define TC_D 128
#define TC_R 64           /* rows of a tile */
#define TC_LH 136         /* bf16 row stride (TC_D + 8) */
#define TC_LS 68          /* fp32 stride of a 64-wide score tile */
#define TC_LP 72          /* bf16 stride of a 64-wide probability tile */
#define TC_LO 132         /* fp32 stride of a 128-wide output tile */
#define TC_THREADS 256
static_assert(TC_R == 64, "attn128_grid makes blocks of 64 rows");

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf, wmma::row_major> frag_br;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf, wmma::col_major> frag_bc;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

/* rows [r0, r0 + 64) of a (B,T,H,128) tensor at (b, h) into bf16 smem
 * (stride TC_LH); rows past T are 0. Each thread issues all its loads (8
 * float4, 16-byte aligned rows: ld and the head offset are multiples of 4)
 * before converting any, so a tile costs about one memory latency; an
 * unaligned tensor takes the scalar path. Every value is rounded to nearest
 * even either way. */
#define TC_LOAD_V (TC_R * TC_D / 4 / TC_THREADS)
__device__ static void tc_load(bf *dst, const float *src, int64_t ld, int r0, int T)
{
	if (((uintptr_t)src & 15) != 0 || (ld & 3) != 0) {
		for (int e = threadIdx.x; e < TC_R * TC_D; e += blockDim.x) {
			int r = e / TC_D, c = e % TC_D, t = r0 + r;
			dst[r * TC_LH + c] = __float2bfloat16_rn(t < T ? src[(int64_t)t * ld + c] : 0.0f);
		}
		return;
	}
	float4 v[TC_LOAD_V];
#pragma unroll
	for (int u = 0; u < TC_LOAD_V; u++) {
		int e = threadIdx.x + u * TC_THREADS, r = e >> 5, c = (e & 31) * 4, t = r0 + r;
		v[u] = t < T ? *(const float4 *)(src + (int64_t)t * ld + c) : make_float4(0, 0, 0, 0);
	}
#pragma unroll
	for (int u = 0; u < TC_LOAD_V; u++) {
		int e = threadIdx.x + u * TC_THREADS, r = e >> 5, c = (e & 31) * 4;
		__nv_bfloat162 *d = (__nv_bfloat162 *)(dst + r * TC_LH + c);
		d[0] = __floats2bfloat162_rn(v[u].x, v[u].y);
		d[1] = __floats2bfloat162_rn(v[u].z, v[u].w);
	}
}

/* C (64 x 64, fp32, stride TC_LS) = A B^T with A, B (64 x 128) bf16 rows */
__device__ static void tc_abt(float *C, const bf *A, const bf *B)
{
	const int w = threadIdx.x >> 5, i = w >> 1;
	for (int jj = 0; jj < 2; jj++) {
		const int j = (w & 1) * 2 + jj;
		frag_c acc;
		wmma::fill_fragment(acc, 0.0f);
		for (int k = 0; k < TC_D; k += 16) {
			frag_a fa;
			frag_bc fb;
			wmma::load_matrix_sync(fa, A + i * 16 * TC_LH + k, TC_LH);
			wmma::load_matrix_sync(fb, B + j * 16 * TC_LH + k, TC_LH);
			wmma::mma_sync(acc, fa, fb, acc);
		}
		wmma::store_matrix_sync(C + i * 16 * TC_LS + j * 16, acc, TC_LS, wmma::mem_row_major);
	}
}

/* acc[jj] (the warp's 16 x 64 slice of a 64 x 128 product) += P X with
 * P (64 x 64, bf16, stride TC_LP) and X (64 x 128, bf16 rows) */
__device__ static void tc_pacc(frag_c *acc, const bf *P, const bf *X)
{
	const int w = threadIdx.x >> 5, i = w >> 1;
	for (int k = 0; k < TC_R; k += 16) {
		frag_a fa;
		wmma::load_matrix_sync(fa, P + i * 16 * TC_LP + k, TC_LP);
		for (int jj = 0; jj < 4; jj++) {
			frag_br fb;
			wmma::load_matrix_sync(fb, X + k * TC_LH + ((w & 1) * 4 + jj) * 16, TC_LH);
			wmma::mma_sync(acc[jj], fa, fb, acc[jj]);
		}
	}
}

/* the warp's slice of a 64 x 128 result, times s, into fp32 smem O (stride
 * TC_LO) and then rows < T of the global tensor */
__device__ static void tc_store(float *O, frag_c *acc, float s, float *dst, int64_t ld, int r0,
				int T)
{
	const int w = threadIdx.x >> 5, i = w >> 1;
	for (int jj = 0; jj < 4; jj++) {
		for (int e = 0; e < acc[jj].num_elements; e++)
			acc[jj].x[e] *= s;
		wmma::store_matrix_sync(O + i * 16 * TC_LO + ((w & 1) * 4 + jj) * 16, acc[jj], TC_LO,
					wmma::mem_row_major);
	}
	__syncthreads();
	for (int e = threadIdx.x; e < TC_R * TC_D; e += blockDim.x) {
		int r = e / TC_D, c = e % TC_D, t = r0 + r;
		if (t < T)
			dst[(int64_t)t * ld + c] = O[r * TC_LO + c];
	}
}

__global__ void __launch_bounds__(TC_THREADS)
k_attn_fwd_tc(float *y, float *lse, const float *q, const float *k, const float *v, int T, int H,
	      int64_t window, float scale)
{
	DYN_SMEM(smraw);
	bf *Qb = (bf *)smraw, *Kb = Qb + TC_R * TC_LH, *Vb = Kb + TC_R * TC_LH;
	bf *Pb = Vb + TC_R * TC_LH;                          /* 64 x TC_LP */
	float *S = (float *)(Pb + TC_R * TC_LP);             /* 64 x TC_LS */
	float *O = S + TC_R * TC_LS;                         /* 64 x TC_LO */
	const int bh = blockIdx.y, b = bh / H, h = bh % H;
	const int q0 = blockIdx.x * TC_R, w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int64_t ld = (int64_t)H * TC_D, base = (int64_t)b * T * ld + (int64_t)h * TC_D;

	tc_load(Qb, q + base, ld, q0, T);
	for (int e = threadIdx.x; e < TC_R * TC_LO; e += blockDim.x)
		O[e] = 0;
	float m[8], l[8];
	for (int i = 0; i < 8; i++) {
		m[i] = -INFINITY;
		l[i] = 0;
	}
	const int qlast = min(q0 + TC_R, T) - 1;
	const int64_t kfirst = (int64_t)q0 - window > 0 ? (int64_t)q0 - window : 0;
	for (int s0 = (int)kfirst; s0 <= qlast; s0 += TC_R) {
		__syncthreads();
		tc_load(Kb, k + base, ld, s0, T);
		tc_load(Vb, v + base, ld, s0, T);
		__syncthreads();
		tc_abt(S, Qb, Kb);
		__syncthreads();
		/* warp w owns rows w*8 .. w*8+7; lane owns columns lane, lane+32 */
		for (int i = 0; i < 8; i++) {
			const int r = w * 8 + i, t = q0 + r;
			float x0 = attn_visible(t, s0 + lane, T, window) ? S[r * TC_LS + lane] * scale : -INFINITY;
			float x1 = attn_visible(t, s0 + lane + 32, T, window) ? S[r * TC_LS + lane + 32] * scale
									     : -INFINITY;
			float mx = fmaxf(x0, x1);
			for (int o = 16; o > 0; o >>= 1)
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
			float mnew = fmaxf(m[i], mx), p0 = 0, p1 = 0, alpha = 1;
			if (mnew != -INFINITY) {
				p0 = expf(x0 - mnew);
				p1 = expf(x1 - mnew);
				alpha = expf(m[i] - mnew);
			}
			float ps = p0 + p1;
			for (int o = 16; o > 0; o >>= 1)
				ps += __shfl_xor_sync(0xffffffffu, ps, o);
			l[i] = l[i] * alpha + ps;
			m[i] = mnew;
			Pb[r * TC_LP + lane] = __float2bfloat16_rn(p0);
			Pb[r * TC_LP + lane + 32] = __float2bfloat16_rn(p1);
			for (int d = lane; d < TC_D; d += 32)
				O[r * TC_LO + d] *= alpha;
		}
		__syncthreads();
		/* O += P V: the warp's 16 x 64 slice, through fragments */
		{
			const int i = w >> 1;
			frag_c acc[4];
			for (int jj = 0; jj < 4; jj++)
				wmma::load_matrix_sync(acc[jj], O + i * 16 * TC_LO + ((w & 1) * 4 + jj) * 16,
						       TC_LO, wmma::mem_row_major);
			tc_pacc(acc, Pb, Vb);
			for (int jj = 0; jj < 4; jj++)
				wmma::store_matrix_sync(O + i * 16 * TC_LO + ((w & 1) * 4 + jj) * 16, acc[jj],
							TC_LO, wmma::mem_row_major);
		}
	}
	__syncthreads();
	for (int i = 0; i < 8; i++) {
		const int r = w * 8 + i, t = q0 + r;
		if (t >= T)
			continue;
		float inv = 1.0f / l[i];
		for (int d = lane; d < TC_D; d += 32)
			y[base + (int64_t)t * ld + d] = O[r * TC_LO + d] * inv;
		if (lane == 0)
			lse[(int64_t)bh * T + t] = m[i] + logf(l[i]);
	}
}

__global__ void __launch_bounds__(TC_THREADS)
k_attn_dkdv_tc(float *dk, float *dv, const float *dy, const float *q, const float *k,
	       const float *v, const float *lse, const float *Dd, int T, int H, int64_t window,
	       float scale)
{
	DYN_SMEM(smraw);
	bf *Kb = (bf *)smraw, *Vb = Kb + TC_R * TC_LH, *Qb = Vb + TC_R * TC_LH, *Gb = Qb + TC_R * TC_LH;
	bf *Pt = Gb + TC_R * TC_LH, *dSt = Pt + TC_R * TC_LP;   /* 64 keys x 64 queries */
	float *St = (float *)(dSt + TC_R * TC_LP);             /* 64 x TC_LS */
	float *dPt = St + TC_R * TC_LS;                        /* 64 x TC_LS */
	float *Ls = dPt + TC_R * TC_LS, *Ds = Ls + TC_R;       /* 64 each */
	const int bh = blockIdx.y, b = bh / H, h = bh % H;
	const int k0 = blockIdx.x * TC_R;
	const int64_t ld = (int64_t)H * TC_D, base = (int64_t)b * T * ld + (int64_t)h * TC_D;

	tc_load(Kb, k + base, ld, k0, T);
	tc_load(Vb, v + base, ld, k0, T);
	frag_c gk[4], gv[4];
	for (int jj = 0; jj < 4; jj++) {
		wmma::fill_fragment(gk[jj], 0.0f);
		wmma::fill_fragment(gv[jj], 0.0f);
	}
	int64_t tend = (int64_t)k0 + TC_R - 1 + window;
	const int tlast = (int)(tend < T - 1 ? tend : T - 1);
	for (int t0 = k0; t0 <= tlast; t0 += TC_R) {
		__syncthreads();
		tc_load(Qb, q + base, ld, t0, T);
		tc_load(Gb, dy + base, ld, t0, T);
		if (threadIdx.x < TC_R) {
			int t = t0 + threadIdx.x;
			Ls[threadIdx.x] = t < T ? lse[(int64_t)bh * T + t] : 0.0f;
			Ds[threadIdx.x] = t < T ? Dd[(int64_t)bh * T + t] : 0.0f;
		}
		__syncthreads();
		tc_abt(St, Kb, Qb);     /* St[s][t] = k_s . q_t */
		tc_abt(dPt, Vb, Gb);    /* dPt[s][t] = v_s . dy_t */
		__syncthreads();
		for (int e = threadIdx.x; e < TC_R * TC_R; e += blockDim.x) {
			int r = e / TC_R, c = e % TC_R;
			float p = attn_visible(t0 + c, k0 + r, T, window)
					  ? expf(St[r * TC_LS + c] * scale - Ls[c]) : 0.0f;
			Pt[r * TC_LP + c] = __float2bfloat16_rn(p);
			dSt[r * TC_LP + c] = __float2bfloat16_rn(p * (dPt[r * TC_LS + c] - Ds[c]));
		}
		__syncthreads();
		tc_pacc(gv, Pt, Gb);    /* dV += P^T dY (Pt is already P^T) */
		tc_pacc(gk, dSt, Qb);   /* dK += dS^T Q */
	}
	__syncthreads();
	float *O = St;              /* 64 x TC_LO fits in St + dPt */
	tc_store(O, gk, scale, dk + base, ld, k0, T);
	__syncthreads();
	tc_store(O, gv, 1.0f, dv + base, ld, k0, T);
}

__global__ void __launch_bounds__(TC_THREADS)
k_attn_dq_tc(float *dq, const float *dy, const float *q, const float *k, const float *v,
	     const float *lse, const float *Dd, int T, int H, int64_t window, float scale)
{
	DYN_SMEM(smraw);
	bf *Qb = (bf *)smraw, *Gb = Qb + TC_R * TC_LH, *Kb = Gb + TC_R * TC_LH, *Vb = Kb + TC_R * TC_LH;
	bf *dS = Vb + TC_R * TC_LH;                            /* 64 x TC_LP */
	float *S = (float *)(dS + TC_R * TC_LP);               /* 64 x TC_LS */
	float *dP = S + TC_R * TC_LS;                          /* 64 x TC_LS */
	float *Ls = dP + TC_R * TC_LS, *Ds = Ls + TC_R;
	const int bh = blockIdx.y, b = bh / H, h = bh % H;
	const int q0 = blockIdx.x * TC_R;
	const int64_t ld = (int64_t)H * TC_D, base = (int64_t)b * T * ld + (int64_t)h * TC_D;

	tc_load(Qb, q + base, ld, q0, T);
	tc_load(Gb, dy + base, ld, q0, T);
	if (threadIdx.x < TC_R) {
		int t = q0 + threadIdx.x;
		Ls[threadIdx.x] = t < T ? lse[(int64_t)bh * T + t] : 0.0f;
		Ds[threadIdx.x] = t < T ? Dd[(int64_t)bh * T + t] : 0.0f;
	}
	frag_c gq[4];
	for (int jj = 0; jj < 4; jj++)
		wmma::fill_fragment(gq[jj], 0.0f);
	const int qlast = min(q0 + TC_R, T) - 1;
	const int64_t kfirst = (int64_t)q0 - window > 0 ? (int64_t)q0 - window : 0;
	for (int s0 = (int)kfirst; s0 <= qlast; s0 += TC_R) {
		__syncthreads();
		tc_load(Kb, k + base, ld, s0, T);
		tc_load(Vb, v + base, ld, s0, T);
		__syncthreads();
		tc_abt(S, Qb, Kb);      /* S[t][s] = q_t . k_s */
		tc_abt(dP, Gb, Vb);     /* dP[t][s] = dy_t . v_s */
		__syncthreads();
		for (int e = threadIdx.x; e < TC_R * TC_R; e += blockDim.x) {
			int r = e / TC_R, c = e % TC_R;
			float p = attn_visible(q0 + r, s0 + c, T, window)
					  ? expf(S[r * TC_LS + c] * scale - Ls[r]) : 0.0f;
			dS[r * TC_LP + c] = __float2bfloat16_rn(p * (dP[r * TC_LS + c] - Ds[r]));
		}
		__syncthreads();
		tc_pacc(gq, dS, Kb);    /* dQ += dS K */
	}
	__syncthreads();
	tc_store(S, gq, scale, dq + base, ld, q0, T);
}

static size_t tc_smem_fwd(void)
{
	return (size_t)(3 * TC_R * TC_LH + TC_R * TC_LP) * sizeof(bf) +
	       (size_t)(TC_R * TC_LS + TC_R * TC_LO) * sizeof(float);
}

static size_t tc_smem_bwd(void)
{
	return (size_t)(4 * TC_R * TC_LH + 2 * TC_R * TC_LP) * sizeof(bf) +
	       (size_t)(2 * TC_R * TC_LS + 2 * TC_R) * sizeof(float);
}

void attn_fwd_tc_launch(float *y, float *lse, const float *q, const float *k, const float *v,
			int B, int T, int H, int D, int64_t window, float scale)
{
	dim3 g = attn128_grid("attn_fwd", B, T, H, D);
	size_t sm = tc_smem_fwd();
	CUDA_CK("attn_fwd", cudaFuncSetAttribute(k_attn_fwd_tc,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm));
	k_attn_fwd_tc<<<g, TC_THREADS, sm, cuda_stream()>>>(y, lse, q, k, v, T, H, window, scale);
	CUDA_CK("attn_fwd", cudaGetLastError());
}

void attn_bwd_tc_launch(float *dq, float *dk, float *dv, const float *dy, const float *q,
			const float *k, const float *v, const float *Dd, const float *lse,
			int B, int T, int H, int D, int64_t window, float scale)
{
	dim3 g = attn128_grid("attn_bwd", B, T, H, D);
	cudaStream_t st = cuda_stream();
	size_t s1 = tc_smem_bwd();
	/* dQ uses two fewer bf16 tiles than dK/dV (no P^T / dS^T pair, one dS) */
	size_t s2 = (size_t)(4 * TC_R * TC_LH + TC_R * TC_LP) * sizeof(bf) +
		    (size_t)(2 * TC_R * TC_LS + 2 * TC_R) * sizeof(float);
	CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dkdv_tc,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)s1));
	CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dq_tc,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)s2));
	k_attn_dkdv_tc<<<g, TC_THREADS, s1, st>>>(dk, dv, dy, q, k, v, lse, Dd, T, H, window, scale);
	k_attn_dq_tc<<<g, TC_THREADS, s2, st>>>(dq, dy, q, k, v, lse, Dd, T, H, window, scale);
	CUDA_CK("attn_bwd", cudaGetLastError());
}
