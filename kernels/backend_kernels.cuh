/* backend_kernels.cuh: the CUDA backend's own kernels but attention and the
 * scatter's plan (kernels/backend_cuda.cu includes this once; the launch
 * shapes and host code are there). A header of its own so that
 * tests/emu/test_elem_emu.cc runs the same kernels on the CPU through the
 * SIMT emulator of tests/emu (SUPKIT_EMU), against the CPU backend.
 * Reference: kernels/backend_cuda.cu, trainer/backend_cpu_ops.h.
 */
#ifndef SUPKIT_BACKEND_KERNELS_CUH
#define SUPKIT_BACKEND_KERNELS_CUH

#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include "kernels/bf16_io.cuh"   /* ldf, stf: the kernels templated on E below */

#define NT 256   /* threads a block of the element-wise and row kernels */

#define GSTRIDE(i, n) \
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
	     i += (int64_t)gridDim.x * blockDim.x)

__device__ static double warp_sum(double v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* Sum over the block (blockDim.x a multiple of 32), the same in every thread. */
__device__ static double block_sum(double v)
{
	__shared__ double sh[32];
	__shared__ double res;
	int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = blockDim.x >> 5;
	v = warp_sum(v);
	__syncthreads();
	if (l == 0)
		sh[w] = v;
	__syncthreads();
	if (w == 0) {
		double t = l < nw ? sh[l] : 0.0;
		t = warp_sum(t);
		if (l == 0)
			res = t;
	}
	__syncthreads();
	return res;
}

__device__ static float block_max(float v)
{
	__shared__ float sh[32];
	__shared__ float res;
	int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = blockDim.x >> 5;
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	__syncthreads();
	if (l == 0)
		sh[w] = v;
	__syncthreads();
	if (w == 0) {
		float t = l < nw ? sh[l] : -INFINITY;
		for (int o = 16; o > 0; o >>= 1)
			t = fmaxf(t, __shfl_xor_sync(0xffffffffu, t, o));
		if (l == 0)
			res = t;
	}
	__syncthreads();
	return res;
}

#define WARP_ROW(row, N)                                                             \
	int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); \
	int lane = threadIdx.x & 31;                                                 \
	if (row >= (N))                                                              \
		return;

/* ---- elementwise kernels ---- */

/* y = a x (b = 0, y not read: it may hold NaN), y += a x (b = 1), or
 * y = a x + b y; each product and sum rounded on its own (__fmul_rn,
 * __fadd_rn: nvcc contracts a x + y into one FMA otherwise), as the CPU
 * reference computes them and as k_mix_rms_fwd and k_mix_bwd do, so that
 * those fused kernels give these ops' bits on a GPU too */
enum axpby_mode { AXPBY_SET, AXPBY_ADD, AXPBY_BLEND };
__global__ static void k_axpby(float *y, const float *x, float a, float b, enum axpby_mode mode,
			       int64_t n)
{
	GSTRIDE(i, n) {
		if (mode == AXPBY_SET)
			y[i] = __fmul_rn(a, x[i]);
		else if (mode == AXPBY_ADD)
			y[i] = __fadd_rn(y[i], __fmul_rn(a, x[i]));
		else
			y[i] = __fadd_rn(__fmul_rn(a, x[i]), __fmul_rn(b, y[i]));
	}
}

#define DOT_BLOCKS 1024   /* at most, a dot's partial sums (4 blocks of NT an SM on
			     a 132-SM H100 at the cap, a full one at 8) */
#define DOT_PER_THREAD 16   /* at least, elements a thread of k_dot_part (small dots: fewer blocks) */

__global__ static void k_dot_part(const float *x, const float *y, int64_t n, double *part)
{
	double s = 0;
	GSTRIDE(i, n)
		s += (double)x[i] * (double)y[i];
	s = block_sum(s);
	if (threadIdx.x == 0)
		part[blockIdx.x] = s;
}

/* *out = the sum of part (np); with acc, *acc += (float)sum instead */
__global__ static void k_dot_final(const double *part, int np, double *out, float *acc)
{
	double s = 0;
	for (int i = threadIdx.x; i < np; i += blockDim.x)
		s += part[i];
	s = block_sum(s);
	if (threadIdx.x == 0) {
		if (acc)
			*acc += (float)s;
		else
			*out = s;
	}
}

/* backend.h mix_bwd: k_dot_part's partial sums of dx . xin, dx . x0 (and
 * dx . x0w) over the same elements in the same order (the same grid), at
 * part[0..nb), [nb..2nb) (, [2nb..3nb)); then k_axpby's dx0 += c1 dx (dx0w
 * += c2 dx) and dx = 0 dx + c0 dx, the same expressions; ob (may be NULL):
 * the new dx's bf16 cast. */
__global__ static void k_mix_bwd(float *dx, __nv_bfloat16 *ob, float *dx0, float *dx0w,
				 const float *xin, const float *x0, const float *x0w, float c0,
				 float c1, float c2, int64_t n, double *part)
{
	double s0 = 0, s1 = 0, s2 = 0;
	GSTRIDE(i, n) {
		float d = dx[i];
		s0 += (double)d * (double)xin[i];
		s1 += (double)d * (double)x0[i];
		dx0[i] = __fadd_rn(dx0[i], __fmul_rn(c1, d));
		if (x0w) {
			s2 += (double)d * (double)x0w[i];
			dx0w[i] = __fadd_rn(dx0w[i], __fmul_rn(c2, d));
		}
		float v = __fadd_rn(__fmul_rn(0.0f, d), __fmul_rn(c0, d));
		dx[i] = v;
		if (ob)
			ob[i] = __float2bfloat16_rn(v);
	}
	s0 = block_sum(s0);
	s1 = block_sum(s1);
	if (x0w)
		s2 = block_sum(s2);
	if (threadIdx.x == 0) {
		part[blockIdx.x] = s0;
		part[gridDim.x + blockIdx.x] = s1;
		if (x0w)
			part[2 * gridDim.x + blockIdx.x] = s2;
	}
}

/* E: x's storage (float, or bf16: backend.h norm_bf16) */
template <typename E>
__global__ static void k_cols_get(float *o, const E *x, int64_t N, int64_t C, int64_t k,
				  int64_t c0, int accum)
{
	GSTRIDE(i, N * k) {
		int64_t n = i / k, c = i % k;
		float v = ldf(x, n * C + c0 + c);
		o[i] = accum ? o[i] + v : v;
	}
}

__global__ static void k_cols_add(float *o, const float *x, int64_t N, int64_t C, int64_t k,
				  int64_t c0)
{
	GSTRIDE(i, N * k) {
		int64_t n = i / k, c = i % k;
		o[n * C + c0 + c] += x[i];
	}
}

/* four values rounded to bf16, nearest even, at o (8-byte aligned) */
__device__ static inline void bf4_store(__nv_bfloat16 *o, float4 v)
{
	__nv_bfloat162 *d = (__nv_bfloat162 *)o;
	d[0] = __floats2bfloat162_rn(v.x, v.y);
	d[1] = __floats2bfloat162_rn(v.z, v.w);
}

/* Round to bf16, nearest even. v4 = 1: x 16-byte and o 8-byte aligned,
 * four values a thread (one float4 in, two bf16 pairs out), then the tail. */
__global__ static void k_f32_to_bf16(__nv_bfloat16 *o, const float *x, int64_t n, int v4)
{
	int64_t n4 = v4 ? n / 4 : 0;
	GSTRIDE(i, n4)
		bf4_store(o + 4 * i, ((const float4 *)x)[i]);
	GSTRIDE(j, n - 4 * n4)
		o[4 * n4 + j] = __float2bfloat16_rn(x[4 * n4 + j]);
}

/* ---- normalisation ---- */

/* ob (may be NULL): the output's bf16 cast (cc_fresh), for every kernel
 * below that takes one; k_rms_fwd's and k_mix_rms_fwd's out may be NULL
 * where ob is the output (backend.h norm_bf16).
 * rms_row_out: the end of a row's RMSNorm (a warp a row): from this lane's
 * share ss of the row's sum of squares, rstd[row] and the row r (C values)
 * normalised into out and/or ob. */
__device__ static inline void rms_row_out(float *out, __nv_bfloat16 *ob, float *rstd,
					  const float *r, int64_t row, int64_t C, double ss,
					  double eps, int lane)
{
	ss = warp_sum(ss);
	float s = (float)(1.0 / sqrt(ss / (double)C + eps));
	if (lane == 0)
		rstd[row] = s;
	for (int64_t c = lane; c < C; c += 32) {
		float v = r[c] * s;
		if (out)
			out[row * C + c] = v;
		if (ob)
			ob[row * C + c] = __float2bfloat16_rn(v);
	}
}

__global__ static void k_rms_fwd(float *out, __nv_bfloat16 *ob, float *rstd, const float *x,
				 int64_t N, int64_t C, double eps)
{
	WARP_ROW(row, N)
	const float *r = x + row * C;
	double ss = 0;
	for (int64_t c = lane; c < C; c += 32)
		ss += (double)r[c] * r[c];
	rms_row_out(out, ob, rstd, r, row, C, ss, eps, lane);
}

/* E: out's storage (float, or bf16: backend.h norm_bf16) */
template <typename E>
__global__ static void k_rms_bwd(float *dx, __nv_bfloat16 *ob, const float *dout, const E *out,
				 const float *rstd, int64_t N, int64_t C, int accum)
{
	WARP_ROW(row, N)
	const float *a = dout + row * C;
	const E *b = out + row * C;
	double s = 0;
	for (int64_t c = lane; c < C; c += 32)
		s += (double)a[c] * ldf(b, c);
	s = warp_sum(s);
	float m = (float)(s / (double)C), r = rstd[row];
	float *d = dx + row * C;
	for (int64_t c = lane; c < C; c += 32) {
		float v = r * (a[c] - ldf(b, c) * m);
		v = accum ? d[c] + v : v;
		d[c] = v;
		if (ob)
			ob[row * C + c] = __float2bfloat16_rn(v);
	}
}

/* backend.h mix_rmsnorm_fwd: a row of x = c0 xin + c1 x0 (+ c2 x0w) with
 * k_axpby's expressions and roundings, then k_rms_fwd on it (out may be NULL, ob the
 * output) */
__global__ static void k_mix_rms_fwd(float *x, float *out, __nv_bfloat16 *ob, float *rstd,
				     const float *xin, const float *x0, const float *x0w, float c0,
				     float c1, float c2, int64_t N, int64_t C, double eps)
{
	WARP_ROW(row, N)
	float *r = x + row * C;
	double ss = 0;
	for (int64_t c = lane; c < C; c += 32) {
		int64_t i = row * C + c;
		float v = __fmul_rn(c0, xin[i]);
		v = __fadd_rn(v, __fmul_rn(c1, x0[i]));
		if (x0w)
			v = __fadd_rn(v, __fmul_rn(c2, x0w[i]));
		r[c] = v;
		ss += (double)v * v;
	}
	rms_row_out(out, ob, rstd, r, row, C, ss, eps, lane);
}

__global__ static void k_rms_ref_fwd(float *out, float *rr, const float *x, const float *s,
				     int64_t N, int64_t C, double eps)
{
	WARP_ROW(row, N)
	double ss = 0;
	for (int64_t c = lane; c < C; c += 32)
		ss += (double)s[row * C + c] * s[row * C + c];
	ss = warp_sum(ss);
	float q = (float)(1.0 / sqrt(ss / (double)C + eps));
	if (lane == 0)
		rr[row] = q;
	for (int64_t c = lane; c < C; c += 32)
		out[row * C + c] = x[row * C + c] * q;
}

__global__ static void k_rms_ref_bwd(float *dx, float *ds, const float *dy, const float *x,
				     const float *s, const float *rr, int64_t N, int64_t C, int accum)
{
	WARP_ROW(row, N)
	double t = 0;
	for (int64_t c = lane; c < C; c += 32)
		t += (double)dy[row * C + c] * x[row * C + c];
	t = warp_sum(t);
	float q = rr[row];
	float f = (float)(-(double)q * q * q * t / (double)C);
	for (int64_t c = lane; c < C; c += 32) {
		int64_t i = row * C + c;
		float a = q * dy[i], b = f * s[i];
		dx[i] = accum ? dx[i] + a : a;
		ds[i] = accum ? ds[i] + b : b;
	}
}

/* ---- rotary embedding ---- */

__global__ static void k_rope(float *x, const float *cs, const float *sn, int64_t N, int64_t H,
			      int64_t D, int64_t T, float sgn)
{
	int64_t h2 = D / 2;
	GSTRIDE(i, N * H * h2) {
		int64_t n = i / (H * h2), rem = i % (H * h2), h = rem / h2, c = rem % h2;
		int64_t t = n % T;
		float co = cs[t * h2 + c], si = sgn * sn[t * h2 + c];
		float *r = x + (n * H + h) * D;
		float x1 = r[c], x2 = r[c + h2];
		r[c] = x1 * co + x2 * si;
		r[c + h2] = -x1 * si + x2 * co;
	}
}

/* ---- rotary embedding then QK-norm (then q_tau's column scale), fused: one warp
 * per (token, head) ---- */

/* Lane l holds the pairs c = l + 32 j (c < D/2, D <= 128: j < 2) in
 * registers; the sums run over the first halves, then the second halves,
 * which for D = 128 is k_rms_fwd's order (c = l, l+32, l+64, l+96). */
#define ROPE_RMS_J 2
/* E: x's, out's and xn's storage (float, or bf16: backend.h attn_bf16) */
template <typename E>
__global__ static void k_rope_rms_fwd(E *out, __nv_bfloat16 *ob, float *rstd, E *xn,
				      const E *x, const float *sc, const float *cs,
				      const float *sn, int64_t rows, int64_t H, int64_t D, int64_t T,
				      double eps)
{
	WARP_ROW(row, rows)
	int64_t h2 = D / 2, t = (row / H) % T;
	const E *r = x + row * D;
	const float *cr = cs + t * h2, *sr = sn + t * h2;
	float v1[ROPE_RMS_J], v2[ROPE_RMS_J];
	double ss = 0;
	for (int j = 0; j < ROPE_RMS_J; j++) {
		int64_t c = lane + 32 * j;
		if (c < h2) {
			float x1 = ldf(r, c), x2 = ldf(r, c + h2), co = cr[c], si = sr[c];
			v1[j] = x1 * co + x2 * si;
			v2[j] = -x1 * si + x2 * co;
			ss += (double)v1[j] * v1[j];
		}
	}
	for (int j = 0; j < ROPE_RMS_J; j++)
		if (lane + 32 * j < h2)
			ss += (double)v2[j] * v2[j];
	ss = warp_sum(ss);   /* every lane has read its x before any writes out */
	float s = (float)(1.0 / sqrt(ss / (double)D + eps));
	if (lane == 0)
		rstd[row] = s;
	E *o = out + row * D, *on = sc ? xn + row * D : NULL;
	const float *k = sc ? sc + (row % H) * D : NULL;
	for (int j = 0; j < ROPE_RMS_J; j++) {
		int64_t c = lane + 32 * j;
		if (c < h2) {
			float y1 = v1[j] * s, y2 = v2[j] * s;
			if (k) {   /* q_tau: xn keeps the normalised values */
				stf(on, c, y1);
				stf(on, c + h2, y2);
				y1 *= k[c];
				y2 *= k[c + h2];
			}
			stf(o, c, y1);
			stf(o, c + h2, y2);
			if (ob) {   /* out's bf16 copy, which the mma attention reads */
				ob[row * D + c] = __float2bfloat16_rn(y1);
				ob[row * D + c + h2] = __float2bfloat16_rn(y2);
			}
		}
	}
}

/* E: out's storage (the forward's out or xn); G: dout's and dx's (float,
 * or bf16: backend.h attn_bf16, then no ob) */
template <typename E, typename G>
__global__ static void k_rope_rms_bwd(G *dx, __nv_bfloat16 *ob, const G *dout, const E *out,
				      const float *rstd, const float *sc, const float *cs,
				      const float *sn, int64_t rows, int64_t H, int64_t D, int64_t T)
{
	WARP_ROW(row, rows)
	int64_t h2 = D / 2, t = (row / H) % T;
	const G *a = dout + row * D;
	const float *cr = cs + t * h2, *sr = sn + t * h2;
	const E *b = out + row * D;
	const float *k = sc ? sc + (row % H) * D : NULL;
	float a1[ROPE_RMS_J], a2[ROPE_RMS_J];
	double s = 0;
	for (int j = 0; j < ROPE_RMS_J; j++) {
		int64_t c = lane + 32 * j;
		if (c < h2) {
			float x1 = ldf(a, c), x2 = ldf(a, c + h2);
			a1[j] = k ? x1 * k[c] : x1;   /* q_tau: mul_cols_bwd's dx */
			a2[j] = k ? x2 * k[c + h2] : x2;
			s += (double)a1[j] * ldf(b, c);
		}
	}
	for (int j = 0; j < ROPE_RMS_J; j++) {
		int64_t c = lane + 32 * j;
		if (c < h2)
			s += (double)a2[j] * ldf(b, c + h2);
	}
	s = warp_sum(s);   /* every lane has read its dout before any writes dx */
	float m = (float)(s / (double)D), r = rstd[row];
	G *d = dx + row * D;
	for (int j = 0; j < ROPE_RMS_J; j++) {
		int64_t c = lane + 32 * j;
		if (c < h2) {
			float g1 = r * (a1[j] - ldf(b, c) * m), g2 = r * (a2[j] - ldf(b, c + h2) * m);
			float co = cr[c], si = -sr[c];
			float v1 = g1 * co + g2 * si, v2 = -g1 * si + g2 * co;
			stf(d, c, v1);
			stf(d, c + h2, v2);
			if (ob) {
				ob[row * D + c] = __float2bfloat16_rn(v1);
				ob[row * D + c + h2] = __float2bfloat16_rn(v2);
			}
		}
	}
}

/* ---- loss: one block per row ----
 * The CPU reference's fp32 arithmetic (trainer/backend_cpu_ops.h
 * softcap_rows), step for step: z = cap tanh(l / cap) with fp32 tanhf and
 * the reciprocal of cap, exp(z - max) in fp32 summed in fp64, the loss
 * lse - z[t] in fp64, the gradient (exp f)(1 - th^2) with f = dscale / sum
 * and the target's dscale (1 - ht^2) taken off after; fp32 exponentials are
 * recomputed in the gradient pass instead of kept (fp64 tanh and exp run
 * at 1/64 of the fp32 rate on an H200: 340 us a 4,096 x 8,192 chunk, 5% of
 * a depth-8 step).
 * bf (softcap_ce_bf16): each raw logit rounded to bf16 before the cap, the
 * gradient rounded to bf16 (the benchmark's bf16 lm_head output). */
__global__ static void k_softcap_ce(float *logits, __nv_bfloat16 *ob, float *loss,
				    const int32_t *tg, int64_t V, double cap, double dscale, int *bad,
				    int bf)
{
	int64_t row = blockIdx.x;
	float *z = logits + row * V;
	__nv_bfloat16 *zb = ob ? ob + row * V : NULL;   /* the gradient's cast (dscale != 0) */
	const float rcap = (float)cap, icap = (float)(1.0 / cap);
	float mx = -INFINITY;
	for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
		float l = bf ? __bfloat162float(__float2bfloat16_rn(z[j])) : z[j];
		float v = __fmul_rn(rcap, tanhf(__fmul_rn(l, icap)));
		z[j] = v;
		mx = fmaxf(mx, v);
	}
	mx = block_max(mx);
	double s = 0;
	for (int64_t j = threadIdx.x; j < V; j += blockDim.x)
		s += (double)expf(__fsub_rn(z[j], mx));
	s = block_sum(s);
	double lse = mx + log(s);
	int32_t t = tg[row];
	if (t >= V) {   /* flagged (the op aborts at the next synchronisation); no read past the row */
		if (threadIdx.x == 0)
			*bad = 1;
		t = -1;
	}
	if (t < 0) {
		if (threadIdx.x == 0)
			loss[row] = 0;
		if (dscale != 0)
			for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
				z[j] = 0;
				if (zb)
					zb[j] = __float2bfloat16_rn(0.f);
			}
		return;
	}
	float zt = z[t];
	__syncthreads();   /* every thread has read z[t] before the gradient overwrites it */
	if (threadIdx.x == 0)
		loss[row] = (float)(lse - (double)zt);
	if (dscale == 0)
		return;
	const float f = (float)(dscale / s), ht = __fmul_rn(zt, icap);
	const float dt = __fmul_rn((float)dscale, __fsub_rn(1.f, __fmul_rn(ht, ht)));
	for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
		float zz = z[j], th = __fmul_rn(zz, icap);
		float g = __fmul_rn(__fmul_rn(expf(__fsub_rn(zz, mx)), f),
				    __fsub_rn(1.f, __fmul_rn(th, th)));
		g = j == t ? __fsub_rn(g, dt) : g;
		if (bf)
			g = __bfloat162float(__float2bfloat16_rn(g));
		z[j] = g;
		if (zb)
			zb[j] = __float2bfloat16_rn(g);
	}
}

/* ---- embeddings ---- */

/* One warp per output row n, its lanes along the k columns (no division
 * per element); an index outside [0, Vt) sets *bad and the row is skipped
 * (the op then aborts). */
__global__ static void k_gather(float *out, const void *table, int bf, const int32_t *idx,
				int64_t N, int64_t C, int64_t k, int64_t c0, int rnd, int accum,
				int64_t Vt, int *bad)
{
	WARP_ROW(n, N)
	int64_t r = idx[n];
	if (r < 0 || r >= Vt) {
		if (lane == 0)
			*bad = 1;
		return;
	}
	float *o = out + n * C + c0;
	for (int64_t c = lane; c < k; c += 32) {
		float v = bf ? __bfloat162float(((const __nv_bfloat16 *)table)[r * k + c])
			     : ((const float *)table)[r * k + c];
		if (rnd)
			v = __bfloat162float(__float2bfloat16_rn(v));
		o[c] = accum ? o[c] + v : v;
	}
}

/* Rows keys[u] of g get the rows order[start[u] .. start[u+1]) of d added
 * in order, for u < *Up; a key outside [0, Vt) is skipped (its plan flagged
 * it). Block b does run b / S, columns [(b % S) blockDim.x, ...) of its k:
 * a thread one column, its additions in token order, as the CPU's loop, a
 * run's slices side by side: a frequent token's run (2.5-3.4% of a
 * 131,072-row pass on the demo corpus, over 4,000 rows) takes one slice's
 * time, not four slices' in one block. nvcc 13 unrolls the row loop by 16,
 * the loads ahead of the additions. An fp32 table's row sums from its
 * value; a bf16 table's run sums in fp32 from zero, is rounded to bf16,
 * added to the row in fp32 and rounded again (backend.h). */
#define SC_THREADS 128   /* at most, threads a block (columns of a slice) */

__device__ static inline float sc_init(const float *g)
{
	return *g;
}

__device__ static inline float sc_init(const __nv_bfloat16 *)
{
	return 0.f;
}

__device__ static inline void sc_put(float *g, float acc)
{
	*g = acc;
}

__device__ static inline void sc_put(__nv_bfloat16 *g, float acc)
{
	*g = __float2bfloat16_rn(__bfloat162float(*g) + __bfloat162float(__float2bfloat16_rn(acc)));
}

/* k_scatter's block shape for rows of k columns: nt threads a block (k
 * rounded up to a warp, at most SC_THREADS), S slices a run; a launch
 * gives it runs x S blocks (fewer: the kernel strides over the rest) */
struct sc_shape {
	int nt, S;
};

static inline sc_shape sc_launch(int64_t k)
{
	sc_shape s;
	s.nt = k >= SC_THREADS ? SC_THREADS : k > 32 ? (int)((k + 31) / 32 * 32) : 32;
	s.S = (int)((k + s.nt - 1) / s.nt);
	return s;
}

template <typename Tg>   /* Tg: the table's storage (float or bf16) */
__global__ static void __launch_bounds__(SC_THREADS)
k_scatter(Tg *g, const float *d, const int32_t *order, const int32_t *start, const int32_t *keys,
	  const int *Up, int64_t k, int64_t C, int64_t c0, int64_t Vt, int S)
{
	const int64_t U = *Up;   /* the plan's run count, made on the device */
	for (int64_t b = blockIdx.x; b < U * S; b += gridDim.x) {
		const int64_t u = b / S, c = (b % S) * blockDim.x + threadIdx.x;
		const int32_t key = keys[u];
		if (c >= k || key < 0 || key >= Vt)
			continue;
		const float *dc = d + c0 + c;
		Tg *gp = g + (int64_t)key * k + c;
		float acc = sc_init(gp);
		for (int32_t j = start[u], j1 = start[u + 1]; j < j1; j++)
			acc += dc[(int64_t)order[j] * C];
		sc_put(gp, acc);
	}
}

/* ---- activations and gates ---- */

__device__ static inline float relu2_f(float h)
{
	float r = h > 0 ? h : 0;
	return r * r;
}

__device__ static inline float relu2_b(float h, float d)
{
	return h > 0 ? 2 * h * d : 0;
}

/* The output o (when set) as float4 and, when ob is set, rounded to bf16
 * into ob too (cc_fresh: the GEMMs' operand). */
__device__ static inline void put4(float *o, __nv_bfloat16 *ob, int64_t i, float4 v)
{
	if (o)
		((float4 *)o)[i] = v;
	if (ob)
		bf4_store(ob + 4 * i, v);
}

__device__ static inline void put1(float *o, __nv_bfloat16 *ob, int64_t i, float v)
{
	if (o)
		o[i] = v;
	if (ob)
		ob[i] = __float2bfloat16_rn(v);
}

/* Eight bf16 values at p (16-byte aligned) widened to fp32 into f, and
 * eight fp32 values rounded to nearest even into p: one 16-byte access. */
__device__ static inline void bf8_load(float *f, const __nv_bfloat16 *p)
{
	uint4 r = *(const uint4 *)p;
	unsigned w[4] = { r.x, r.y, r.z, r.w };
	for (int k = 0; k < 4; k++) {
		f[2 * k] = __uint_as_float(w[k] << 16);
		f[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
	}
}

__device__ static inline void bf8_store(__nv_bfloat16 *p, const float *f)
{
	unsigned w[4];
	for (int k = 0; k < 4; k++)
		w[k] = (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(f[2 * k])) |
		       (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(f[2 * k + 1])) << 16;
	uint4 r;
	r.x = w[0], r.y = w[1], r.z = w[2], r.w = w[3];
	*(uint4 *)p = r;
}

/* v4 = 1: every operand 16-byte aligned, a float4 a thread, then the tail */
__global__ static void k_relu2_fwd(float *o, __nv_bfloat16 *ob, const float *h, int64_t n, int v4)
{
	int64_t n4 = v4 ? n / 4 : 0;
	GSTRIDE(i, n4) {
		float4 a = ((const float4 *)h)[i];
		put4(o, ob, i, make_float4(relu2_f(a.x), relu2_f(a.y), relu2_f(a.z), relu2_f(a.w)));
	}
	GSTRIDE(j, n - 4 * n4)
		put1(o, ob, 4 * n4 + j, relu2_f(h[4 * n4 + j]));
}

__global__ static void k_relu2_bwd(float *dh, __nv_bfloat16 *ob, const float *d, const float *h,
				   int64_t n, int v4)
{
	int64_t n4 = v4 ? n / 4 : 0;
	GSTRIDE(i, n4) {
		float4 a = ((const float4 *)h)[i], b = ((const float4 *)d)[i];
		put4(dh, ob, i, make_float4(relu2_b(a.x, b.x), relu2_b(a.y, b.y), relu2_b(a.z, b.z),
					    relu2_b(a.w, b.w)));
	}
	GSTRIDE(j, n - 4 * n4)
		put1(dh, ob, 4 * n4 + j, relu2_b(h[4 * n4 + j], d[4 * n4 + j]));
}

/* The same on bf16 storage (backend.h mlp_bf16): h, d and the output
 * bf16, the arithmetic the fp32 kernels' on the widened values, the result
 * rounded once. v8 = 1: every operand 16-byte aligned, eight values a
 * thread, then the tail. */
__global__ static void k_relu2_fwd_bf(__nv_bfloat16 *o, const __nv_bfloat16 *h, int64_t n, int v8)
{
	int64_t n8 = v8 ? n / 8 : 0;
	GSTRIDE(i, n8) {
		float a[8];
		bf8_load(a, h + 8 * i);
		for (int k = 0; k < 8; k++)
			a[k] = relu2_f(a[k]);
		bf8_store(o + 8 * i, a);
	}
	GSTRIDE(j, n - 8 * n8) {
		int64_t t = 8 * n8 + j;
		o[t] = __float2bfloat16_rn(relu2_f(__bfloat162float(h[t])));
	}
}

__global__ static void k_relu2_bwd_bf(__nv_bfloat16 *dh, const __nv_bfloat16 *d,
				      const __nv_bfloat16 *h, int64_t n, int v8)
{
	int64_t n8 = v8 ? n / 8 : 0;
	GSTRIDE(i, n8) {
		float a[8], b[8];
		bf8_load(a, h + 8 * i);
		bf8_load(b, d + 8 * i);
		for (int k = 0; k < 8; k++)
			a[k] = relu2_b(a[k], b[k]);
		bf8_store(dh + 8 * i, a);
	}
	GSTRIDE(j, n - 8 * n8) {
		int64_t t = 8 * n8 + j;
		dh[t] = __float2bfloat16_rn(relu2_b(__bfloat162float(h[t]), __bfloat162float(d[t])));
	}
}

/* The value embeddings the gate reads: a materialised (N, H*D) ve, or
 * (ve NULL) the rows idx[n] of table (Vt, H*D; fp32, or bf16 when bf),
 * each value rounded to bf16 first when rnd: what embed_gather (k_gather)
 * writes into ve, so the same values. ve_row gives row (n, h)'s D values'
 * start, or NULL for an index outside the table (flagged in *bad; the row
 * is skipped, as k_gather skips it). */
struct ve_src {
	const float *ve;
	const void *table;
	const int32_t *idx;
	int64_t Vt;
	int bf, rnd;
	int *bad;
};

__device__ static inline bool ve_row(const ve_src &s, int64_t row, int64_t H, int64_t D,
				     int64_t *base, int lane)
{
	if (s.ve) {
		*base = row * D;
		return true;
	}
	int64_t r = s.idx[row / H];
	if (r < 0 || r >= s.Vt) {
		if (lane == 0)
			*s.bad = 1;
		return false;
	}
	*base = r * H * D + (row % H) * D;
	return true;
}

__device__ static inline float ve_at(const ve_src &s, int64_t j)
{
	if (s.ve)
		return s.ve[j];
	float v = s.bf ? __bfloat162float(((const __nv_bfloat16 *)s.table)[j])
		       : ((const float *)s.table)[j];
	return s.rnd ? __bfloat162float(__float2bfloat16_rn(v)) : v;
}

/* one warp per (n, h): the gate once, then its D values */
template <typename E>   /* E: v's storage */
__global__ static void k_ve_gate_fwd(E *v, const float *gl, ve_src src, int64_t NH, int64_t H,
				     int64_t D)
{
	WARP_ROW(row, NH)
	int64_t e0;
	if (!ve_row(src, row, H, D, &e0, lane))
		return;
	float g = (float)(2.0 / (1.0 + exp(-(double)gl[row])));
	for (int64_t c = lane; c < D; c += 32) {
		int64_t i = row * D + c;
		stf(v, i, ldf(v, i) + g * ve_at(src, e0 + c));
	}
}

/* one warp per (n, h) */
template <typename G>   /* G: dv's storage */
__global__ static void k_ve_gate_bwd(float *dgl, float *dve, const G *dv, const float *gl,
				     ve_src src, int64_t NH, int64_t H, int64_t D)
{
	WARP_ROW(row, NH)
	int64_t e0;
	if (!ve_row(src, row, H, D, &e0, lane))
		return;
	double s = 1.0 / (1.0 + exp(-(double)gl[row]));
	float g = (float)(2 * s);
	double acc = 0;
	for (int64_t c = lane; c < D; c += 32) {
		int64_t i = row * D + c;
		float d = ldf(dv, i);
		acc += (double)d * ve_at(src, e0 + c);
		dve[i] = g * d;
	}
	acc = warp_sum(acc);
	if (lane == 0)
		dgl[row] = (float)(acc * 2 * s * (1 - s));
}

__global__ static void k_mul_cols(float *o, const float *x, const float *s, int64_t n, int64_t K)
{
	GSTRIDE(i, n)
		o[i] = x[i] * s[i % K];
}

#define MC_ROWS 256   /* rows per partial column sum */

template <typename G, typename E>   /* G: d's storage, E: x's */
__global__ static void k_mul_cols_part(double *part, const G *d, const E *x, int64_t N,
				       int64_t K)
{
	int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= K)
		return;
	int64_t n0 = (int64_t)blockIdx.y * MC_ROWS, n1 = n0 + MC_ROWS < N ? n0 + MC_ROWS : N;
	double s = 0;
	for (int64_t n = n0; n < n1; n++)
		s += (double)ldf(d, n * K + k) * ldf(x, n * K + k);
	part[(int64_t)blockIdx.y * K + k] = s;
}

__global__ static void k_mul_cols_sum(float *ds, const double *part, int64_t nchunk, int64_t K)
{
	GSTRIDE(k, K) {
		double s = 0;
		for (int64_t j = 0; j < nchunk; j++)
			s += part[j * K + k];
		ds[k] = (float)(ds[k] + s);
	}
}

/* ---- OE rows and visit counts ---- */

__global__ static void k_ngram_rows(int32_t *rows, const int32_t *idx, int64_t n, int64_t T,
				    uint64_t V, int order, uint64_t nrows)
{
	GSTRIDE(i, n) {
		int64_t t = i % T;
		uint64_t id = (uint64_t)idx[i], f = 1;
		for (int r = 1; r < order; r++) {
			f *= V + 1;
			id += f * (t - r >= 0 ? (uint64_t)idx[i - r] : V);
		}
		rows[i] = (int32_t)(id % nrows);
	}
}

/* integer atomics: the counts are the same in any order */
__global__ static void k_count_rows(unsigned int *counts, const int32_t *rows, int64_t N)
{
	GSTRIDE(i, N)
		atomicAdd(&counts[rows[i]], 1u);
}

#endif
