/* attention.cu: causal sliding-window attention forward and backward on the
 * GPU for head widths up to 128 (trainer/backend.h attn_fwd / attn_bwd), in
 * the FlashAttention manner: the T x T score matrix never exists; the
 * forward walks key tiles with an online softmax and keeps the log-sum-exp
 * per query row; the backward recomputes the probabilities from q, k and
 * that log-sum-exp.
 *
 * Work split (256 threads = 8 warps per block; warp w owns the tile rows
 * w, w+8, ..., w+56, lane j the j-th column of a 32-wide tile, so a row's
 * softmax statistics stay inside one warp and need no block barrier):
 *   forward  one block per (64 queries, b, h), key tiles of 32;
 *   dK, dV   one block per (64 keys, b, h), query tiles of 32;
 *   dQ       one block per (64 queries, b, h), key tiles of 32;
 *   D_t = rowsum(dY * Y) first, one warp per row.
 * A warp's probabilities (and dP) reach its lanes through its own 8 x 32
 * tile of shared memory (warp_pm: one store a lane a row, one
 * __syncwarp) rather than a shuffle a value: the same values, so the same
 * sums, at 8 KiB more a block.
 * Every output element is written by one thread that sums in a fixed order:
 * no atomics, so results are bitwise reproducible run to run.
 *
 * Left out: tensor cores here (scores and products run in fp32 on the CUDA
 * cores; kernels/attention_mma.cu, mma.sync, is the bf16 kernel set for
 * D = 128, the default there), head widths above 128, dropout, non-causal
 * masks.
 * Reference: Dao et al., FlashAttention (2022), Algorithms 1 and 2; Dao,
 * FlashAttention-2 (2023) section 3 (work split over query and key blocks);
 * the CPU reference trainer/backend_cpu_ops.h attn_fwd / attn_bwd.
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kernels/bf16_io.cuh"
#include "kernels/cuda_internal.h"

#define AT_THREADS 256
#define AT_ROWS 64      /* rows of the block's own tile (8 per warp) */
#define AT_COLS 32      /* columns of the streamed tile (one per lane) */
#define AT_NJ (ATTN_MAX_D / 32)

__device__ static inline float warp_max_f(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

__device__ static inline float warp_sum_f(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

#define AT_PS (AT_THREADS / 32 * 8 * AT_COLS)   /* the warps' staging tiles, floats */

/* acc[i][j] += sum over the tile's columns c (in order) of lane c's v[i]
 * times M[c * sm + d], d = lane + 32 j (0 past D): a warp's rows of P M
 * (or dS M). Each lane's v[i] goes first into the warp's staging tile Pw
 * (row i, column lane), where every lane reads what __shfl_sync(v[i], c)
 * would give it */
__device__ static __forceinline__ void warp_pm(float (*acc)[AT_NJ], float *Pw, const float *v,
					       const float *M, int sm, int D, int lane)
{
	__syncwarp();   /* every lane has read the tile's previous values */
#pragma unroll
	for (int i = 0; i < 8; i++)
		Pw[i * AT_COLS + lane] = v[i];
	__syncwarp();
	for (int c = 0; c < AT_COLS; c++) {
		float mm[AT_NJ];
		for (int j = 0; j < AT_NJ; j++) {
			int d = lane + 32 * j;
			mm[j] = d < D ? M[c * sm + d] : 0.0f;
		}
#pragma unroll
		for (int i = 0; i < 8; i++) {
			float pc = Pw[i * AT_COLS + c];
			for (int j = 0; j < AT_NJ; j++)
				acc[i][j] += pc * mm[j];
		}
	}
}

/* rows [r0, r0+nr) of a (B,T,H,D) tensor at (b, h) into smem with stride sd;
 * rows past T read as 0 */
__device__ static void tile_load(float *dst, int sd, const float *src, int64_t ld, int r0,
				 int nr, int T, int D)
{
	for (int e = threadIdx.x; e < nr * D; e += blockDim.x) {
		int r = e / D, c = e % D, t = r0 + r;
		dst[r * sd + c] = t < T ? src[(int64_t)t * ld + c] : 0.0f;
	}
}

__global__ void __launch_bounds__(AT_THREADS)
k_attn_fwd(float *y, float *lse, const float *q, const float *k, const float *v, int T, int H,
	   int D, int64_t window, float scale)
{
	DYN_SMEM(smraw);
	float *sm = (float *)smraw;
	const int Dp = D + 1;
	float *Qs = sm;                      /* AT_ROWS x D */
	float *Ks = Qs + AT_ROWS * D;        /* AT_COLS x Dp */
	float *Vs = Ks + AT_COLS * Dp;       /* AT_COLS x D */
	const int bh = blockIdx.y, b = bh / H, h = bh % H;
	const int q0 = blockIdx.x * AT_ROWS, w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	float *Pw = Vs + AT_COLS * D + w * 8 * AT_COLS;   /* this warp's staging tile */
	const int64_t ld = (int64_t)H * D, base = (int64_t)b * T * ld + (int64_t)h * D;

	tile_load(Qs, D, q + base, ld, q0, AT_ROWS, T, D);
	float acc[8][AT_NJ], m[8], l[8];
	for (int i = 0; i < 8; i++) {
		m[i] = -INFINITY;
		l[i] = 0;
		for (int j = 0; j < AT_NJ; j++)
			acc[i][j] = 0;
	}
	const int qlast = min(q0 + AT_ROWS, T) - 1;
	const int64_t kfirst = (int64_t)q0 - window > 0 ? (int64_t)q0 - window : 0;
	for (int s0 = (int)kfirst; s0 <= qlast; s0 += AT_COLS) {
		__syncthreads();   /* the previous tile (and the Q load) is done */
		tile_load(Ks, Dp, k + base, ld, s0, AT_COLS, T, D);
		tile_load(Vs, D, v + base, ld, s0, AT_COLS, T, D);
		__syncthreads();
		const int s = s0 + lane;
		float sc[8];
		for (int i = 0; i < 8; i++)
			sc[i] = 0;
		for (int d = 0; d < D; d++) {
			float kd = Ks[lane * Dp + d];
#pragma unroll
			for (int i = 0; i < 8; i++)
				sc[i] += Qs[(w + 8 * i) * D + d] * kd;
		}
#pragma unroll
		for (int i = 0; i < 8; i++) {
			const int t = q0 + w + 8 * i;
			float x = attn_visible(t, s, T, window) ? sc[i] * scale : -INFINITY;
			float mnew = fmaxf(m[i], warp_max_f(x));
			float p = 0, alpha = 1;
			if (mnew != -INFINITY) {
				p = expf(x - mnew);
				alpha = expf(m[i] - mnew);
			}
			l[i] = l[i] * alpha + warp_sum_f(p);
			m[i] = mnew;
			for (int j = 0; j < AT_NJ; j++)
				acc[i][j] *= alpha;
			sc[i] = p;
		}
		warp_pm(acc, Pw, sc, Vs, D, D, lane);
	}
	for (int i = 0; i < 8; i++) {
		const int t = q0 + w + 8 * i;
		if (t >= T)
			continue;
		float inv = 1.0f / l[i];
		for (int j = 0; j < AT_NJ; j++) {
			int d = lane + 32 * j;
			if (d < D)
				y[base + (int64_t)t * ld + d] = acc[i][j] * inv;
		}
		if (lane == 0)
			lse[(int64_t)bh * T + t] = m[i] + logf(l[i]);
	}
}

/* Dd[(b*H + h)*T + t] = sum_d dy*y over row (b, t, h); one warp per row;
 * dy and y fp32, or bf16 (backend.h attn_bf16) */
template <typename E, typename G>
__global__ void k_attn_rowdot(float *Dd, const G *dy, const E *y, int64_t rows, int T, int H,
			      int D)
{
	int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
	int lane = threadIdx.x & 31;
	if (r >= rows)
		return;
	double s = 0;
	for (int c = lane; c < D; c += 32)
		s += (double)ldf(dy, r * D + c) * ldf(y, r * D + c);
	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (lane == 0) {
		int64_t b = r / ((int64_t)T * H), t = (r / H) % T, h = r % H;
		Dd[(b * H + h) * T + t] = (float)s;
	}
}

__global__ void __launch_bounds__(AT_THREADS)
k_attn_dkdv(float *dk, float *dv, const float *dy, const float *q, const float *k,
	    const float *v, const float *lse, const float *Dd, int T, int H, int D,
	    int64_t window, float scale)
{
	DYN_SMEM(smraw);
	float *sm = (float *)smraw;
	const int Dp = D + 1;
	float *Ks = sm;                      /* AT_ROWS x D */
	float *Vs = Ks + AT_ROWS * D;        /* AT_ROWS x D */
	float *Qs = Vs + AT_ROWS * D;        /* AT_COLS x Dp */
	float *Gs = Qs + AT_COLS * Dp;       /* AT_COLS x Dp (dY) */
	float *Ls = Gs + AT_COLS * Dp;       /* AT_COLS */
	float *Ds = Ls + AT_COLS;            /* AT_COLS */
	const int bh = blockIdx.y, b = bh / H, h = bh % H;
	const int k0 = blockIdx.x * AT_ROWS, w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	float *Pw = Ds + AT_COLS + w * 8 * AT_COLS;   /* this warp's staging tile */
	const int64_t ld = (int64_t)H * D, base = (int64_t)b * T * ld + (int64_t)h * D;

	tile_load(Ks, D, k + base, ld, k0, AT_ROWS, T, D);
	tile_load(Vs, D, v + base, ld, k0, AT_ROWS, T, D);
	float gk[8][AT_NJ], gv[8][AT_NJ];
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < AT_NJ; j++)
			gk[i][j] = gv[i][j] = 0;
	int64_t tend = (int64_t)k0 + AT_ROWS - 1 + window;
	const int tlast = (int)(tend < T - 1 ? tend : T - 1);
	for (int t0 = k0; t0 <= tlast; t0 += AT_COLS) {
		__syncthreads();
		tile_load(Qs, Dp, q + base, ld, t0, AT_COLS, T, D);
		tile_load(Gs, Dp, dy + base, ld, t0, AT_COLS, T, D);
		if (threadIdx.x < AT_COLS) {
			int t = t0 + threadIdx.x;
			Ls[threadIdx.x] = t < T ? lse[(int64_t)bh * T + t] : 0.0f;
			Ds[threadIdx.x] = t < T ? Dd[(int64_t)bh * T + t] : 0.0f;
		}
		__syncthreads();
		const int t = t0 + lane;
		float sc[8], dp[8];
		for (int i = 0; i < 8; i++)
			sc[i] = dp[i] = 0;
		for (int d = 0; d < D; d++) {
			float qd = Qs[lane * Dp + d], gd = Gs[lane * Dp + d];
#pragma unroll
			for (int i = 0; i < 8; i++) {
				sc[i] += Ks[(w + 8 * i) * D + d] * qd;
				dp[i] += Vs[(w + 8 * i) * D + d] * gd;
			}
		}
		const float lt = Ls[lane], dt = Ds[lane];
#pragma unroll
		for (int i = 0; i < 8; i++) {
			const int s = k0 + w + 8 * i;
			float p = attn_visible(t, s, T, window) ? expf(sc[i] * scale - lt) : 0.0f;
			sc[i] = p;
			dp[i] = p * (dp[i] - dt);
		}
		/* dV += P^T dY, then dK += dS^T Q (each sum over c in order) */
		warp_pm(gv, Pw, sc, Gs, Dp, D, lane);
		warp_pm(gk, Pw, dp, Qs, Dp, D, lane);
	}
	for (int i = 0; i < 8; i++) {
		const int s = k0 + w + 8 * i;
		if (s >= T)
			continue;
		for (int j = 0; j < AT_NJ; j++) {
			int d = lane + 32 * j;
			if (d < D) {
				dk[base + (int64_t)s * ld + d] = scale * gk[i][j];
				dv[base + (int64_t)s * ld + d] = gv[i][j];
			}
		}
	}
}

__global__ void __launch_bounds__(AT_THREADS)
k_attn_dq(float *dq, const float *dy, const float *q, const float *k, const float *v,
	  const float *lse, const float *Dd, int T, int H, int D, int64_t window, float scale)
{
	DYN_SMEM(smraw);
	float *sm = (float *)smraw;
	const int Dp = D + 1;
	float *Qs = sm;                      /* AT_ROWS x D */
	float *Gs = Qs + AT_ROWS * D;        /* AT_ROWS x D (dY) */
	float *Ks = Gs + AT_ROWS * D;        /* AT_COLS x Dp */
	float *Vs = Ks + AT_COLS * Dp;       /* AT_COLS x Dp */
	const int bh = blockIdx.y, b = bh / H, h = bh % H;
	const int q0 = blockIdx.x * AT_ROWS, w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	float *Pw = Vs + AT_COLS * Dp + w * 8 * AT_COLS;   /* this warp's staging tile */
	const int64_t ld = (int64_t)H * D, base = (int64_t)b * T * ld + (int64_t)h * D;

	tile_load(Qs, D, q + base, ld, q0, AT_ROWS, T, D);
	tile_load(Gs, D, dy + base, ld, q0, AT_ROWS, T, D);
	float gq[8][AT_NJ], lt[8], dt[8];
	for (int i = 0; i < 8; i++) {
		const int t = q0 + w + 8 * i;
		lt[i] = t < T ? lse[(int64_t)bh * T + t] : 0.0f;
		dt[i] = t < T ? Dd[(int64_t)bh * T + t] : 0.0f;
		for (int j = 0; j < AT_NJ; j++)
			gq[i][j] = 0;
	}
	const int qlast = min(q0 + AT_ROWS, T) - 1;
	const int64_t kfirst = (int64_t)q0 - window > 0 ? (int64_t)q0 - window : 0;
	for (int s0 = (int)kfirst; s0 <= qlast; s0 += AT_COLS) {
		__syncthreads();
		tile_load(Ks, Dp, k + base, ld, s0, AT_COLS, T, D);
		tile_load(Vs, Dp, v + base, ld, s0, AT_COLS, T, D);
		__syncthreads();
		const int s = s0 + lane;
		float sc[8], dp[8];
		for (int i = 0; i < 8; i++)
			sc[i] = dp[i] = 0;
		for (int d = 0; d < D; d++) {
			float kd = Ks[lane * Dp + d], vd = Vs[lane * Dp + d];
#pragma unroll
			for (int i = 0; i < 8; i++) {
				sc[i] += Qs[(w + 8 * i) * D + d] * kd;
				dp[i] += Gs[(w + 8 * i) * D + d] * vd;
			}
		}
#pragma unroll
		for (int i = 0; i < 8; i++) {
			const int t = q0 + w + 8 * i;
			float p = attn_visible(t, s, T, window) ? expf(sc[i] * scale - lt[i]) : 0.0f;
			dp[i] = p * (dp[i] - dt[i]);
		}
		warp_pm(gq, Pw, dp, Ks, Dp, D, lane);
	}
	for (int i = 0; i < 8; i++) {
		const int t = q0 + w + 8 * i;
		if (t >= T)
			continue;
		for (int j = 0; j < AT_NJ; j++) {
			int d = lane + 32 * j;
			if (d < D)
				dq[base + (int64_t)t * ld + d] = scale * gq[i][j];
		}
	}
}

void attn_rowdot_launch(float *Dd, const float *dy, const void *dyb, const float *y,
			const void *yb, int B, int T, int H, int D)
{
	int64_t rows = (int64_t)B * T * H;
	int64_t nb = (rows + AT_THREADS / 32 - 1) / (AT_THREADS / 32);
	cudaStream_t st = cuda_stream();
	if (y)
		k_attn_rowdot<float, float><<<(unsigned)nb, AT_THREADS, 0, st>>>(Dd, dy, y, rows, T,
									     H, D);
	else if (dy)
		k_attn_rowdot<__nv_bfloat16, float><<<(unsigned)nb, AT_THREADS, 0, st>>>(
			Dd, dy, (const __nv_bfloat16 *)yb, rows, T, H, D);
	else
		k_attn_rowdot<__nv_bfloat16, __nv_bfloat16><<<(unsigned)nb, AT_THREADS, 0, st>>>(
			Dd, (const __nv_bfloat16 *)dyb, (const __nv_bfloat16 *)yb, rows, T, H, D);
}

static void attn_grid(const char *op, int B, int T, int H, int D, dim3 *g)
{
	if (D < 1 || D > ATTN_MAX_D || (int64_t)B * H > 65535) {
		fprintf(stderr, "backend_cuda: %s: unsupported shape B*H=%lld D=%d\n", op,
			(long long)B * H, D);
		abort();
	}
	*g = dim3((unsigned)((T + AT_ROWS - 1) / AT_ROWS), (unsigned)(B * H));
}

/* bf16 copies in or out (ob, qkvb), or bf16 storage alone (y or q NULL:
 * backend.h attn_bf16, with qkvb the bf16 q, k, v), asked of kernels that
 * read and write none */
static void no_cast(const char *op, const void *ob, const void *const *qkvb, const void *y,
		    const void *q, enum cuda_attn_mode mode, int D)
{
	if ((ob || qkvb || !y || !q) && (!attn_has_cast(mode, D) || (!q && !qkvb))) {
		fprintf(stderr, "backend_cuda: %s: no bf16 copies in or out of attention mode %s, D %d\n",
			op, cuda_attn_mode_name(mode), D);
		abort();
	}
}

void attn_fwd_launch(const struct attn_shape *s, float *y, void *ob, float *lse, const float *q,
		     const float *k, const float *v, const void *const *qkvb)
{
	int B = s->B, T = s->T, H = s->H, D = s->D;
	int64_t window = s->window;
	float scale = s->scale;
	enum cuda_attn_mode mode = s->mode;
	no_cast("attn_fwd", ob, qkvb, y, q, mode, D);
	if (window > T)   /* the same keys; keeps the kernels' tile bounds in range */
		window = T;
	if (mode == CUDA_ATTN_MMA && D == 128) {
		attn_fwd_mma_launch(y, ob, lse, q, k, v, B, T, H, D, window, scale, qkvb);
		return;
	}
	dim3 g;
	attn_grid("attn_fwd", B, T, H, D, &g);
	size_t sm = (size_t)(AT_ROWS * D + AT_COLS * (D + 1) + AT_COLS * D + AT_PS) * sizeof(float);
	CUDA_CK("attn_fwd", cudaFuncSetAttribute(k_attn_fwd,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm));
	k_attn_fwd<<<g, AT_THREADS, sm, cuda_stream()>>>(y, lse, q, k, v, T, H, D, window, scale);
	CUDA_CK("attn_fwd", cudaGetLastError());
}

void attn_bwd_launch(const struct attn_shape *s, float *dq, float *dk, float *dv,
		     void *const *gb, const float *dy, const void *dyb, const float *q,
		     const float *k, const float *v, const float *y, const void *yb,
		     const float *lse, const void *const *qkvb)
{
	int B = s->B, T = s->T, H = s->H, D = s->D;
	int64_t window = s->window;
	float scale = s->scale;
	enum cuda_attn_mode mode = s->mode;
	no_cast("attn_bwd", gb[0] || gb[1] || gb[2] ? gb : NULL, qkvb, y, q, mode, D);
	if ((dyb != NULL) == (dy != NULL) || (dyb && q)) {
		fprintf(stderr, "backend_cuda: attn_bwd: dy in bf16 only with q, k, v, y in bf16\n");
		abort();
	}
	if (!(dq || gb[0]) || !(dk || gb[1]) || !(dv || gb[2]) || ((gb[0] || gb[1]) && q)) {
		fprintf(stderr, "backend_cuda: attn_bwd: a gradient with no output, or dq, dk in bf16 "
				"beside fp32 q, k, v\n");
		abort();
	}
	if (window > T)   /* the same keys; keeps the kernels' tile bounds in range */
		window = T;
	dim3 g;
	attn_grid("attn_bwd", B, T, H, D, &g);
	cudaStream_t st = cuda_stream();
	size_t nd = (size_t)B * T * H * sizeof(float);
	float *Dd = (float *)cuda_scratch_alloc("attn_bwd", nd);
	attn_rowdot_launch(Dd, dy, dyb, y, yb, B, T, H, D);
	if (mode == CUDA_ATTN_MMA && D == 128) {
		attn_bwd_mma_launch(dq, dk, dv, gb, dy, dyb, q, k, v, Dd, lse, B, T, H, D, window,
				    scale, qkvb);
		cuda_scratch_free(Dd, nd);
		return;
	}
	size_t s1 = (size_t)(2 * AT_ROWS * D + 2 * AT_COLS * (D + 1) + 2 * AT_COLS + AT_PS) *
		    sizeof(float);
	size_t s2 = (size_t)(2 * AT_ROWS * D + 2 * AT_COLS * (D + 1) + AT_PS) * sizeof(float);
	CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dkdv,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)s1));
	CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dq,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)s2));
	k_attn_dkdv<<<g, AT_THREADS, s1, st>>>(dk, dv, dy, q, k, v, lse, Dd, T, H, D, window, scale);
	k_attn_dq<<<g, AT_THREADS, s2, st>>>(dq, dy, q, k, v, lse, Dd, T, H, D, window, scale);
	CUDA_CK("attn_bwd", cudaGetLastError());
	cuda_scratch_free(Dd, nd);
}
