/* attention_mma.cu: the sliding-window causal attention of kernels/attention.cu
 * for head width 128 on tensor cores through mma.sync (m16n8k16, bf16
 * inputs, fp32 accumulation) with the scores, probabilities and output
 * accumulators held in registers: FlashAttention-2's layout.
 *
 * q, k, v (and dy) are rounded to bf16 copies first (one pass each, nearest
 * even); tiles then move
 * global -> shared with cp.async, the next tile's loads in flight while the
 * current one is computed (two buffers), and shared -> registers with
 * ldmatrix. Each block has 4 warps; each warp owns 16 rows of a 64-row tile.
 *   forward  block per (64 queries, b, h), key tiles of 64: S = Q K^T (Q's
 *            fragments kept in registers), online softmax on the
 *            accumulators (a row's 4 lanes combine by shuffles), P rounded
 *            to bf16 straight into the A fragments of O += P V;
 *   dK, dV   block per (64 keys, b, h), query tiles of 64: S^T = K Q^T,
 *            P^T, dV += P^T dY, dP^T = V dY^T, dS^T = P^T (dP^T - D),
 *            dK += dS^T Q, both accumulators in registers;
 *   dQ       block per (64 queries, b, h), key tiles of 64: dQ += dS K
 *            from the dS tiles the dK, dV kernel kept (5 tile products a
 *            pair in the backward, not the 7 of recomputing S, P, dP and
 *            dS; tests/emu/attn_harness.h keeps that recomputing kernel
 *            as the reference the kept dS is checked against).
 * Rounding points: q, k, v, dy, P and dS in bf16,
 * products accumulated in fp32, softmax statistics and lse in fp32 (a
 * lane's share of a row sum is kept apart and the four shares added at the
 * end). The exponentials run in base 2 (scores scaled by scale log2 e,
 * exp2f; lse stored in nats), and a warp's tile that lies wholly inside
 * every row's window skips the per-element mask on a code path of its own
 * (no branch per element). The forward keeps the running maximum in raw
 * scores and forms P = exp2(s sl2 - m sl2) with one fma (softmax_tile), as
 * the backward forms P from lse (the emulator test and tests/gpu bound the
 * results against the CPU). Every output element is
 * written once by one thread with a fixed order of additions: bitwise
 * reproducible, no atomics.
 *
 * Fragment layouts (PTX ISA, mma.m16n8k16 .bf16; g = lane / 4, c = lane % 4):
 * A (16 x 16, row) regs a0..a3 = (row g, cols 2c..2c+1), (row g+8, same),
 * (row g, cols 2c+8..), (row g+8, cols 2c+8..); B (16 x 8, k x n) b0, b1 =
 * (k 2c..2c+1, n g), (k 2c+8.., n g); C (16 x 8) c0..c3 = (row g, cols 2c,
 * 2c+1), (row g+8, cols 2c, 2c+1). So the C fragments of two adjacent
 * 8-column blocks are, packed in pairs, the A fragment of a 16-wide k step
 * (how P and dS feed the next product without shared memory).
 *
 * The backend's kernels for head width 128 (SUPKIT_CUDA_ATTN=mma, the default). On an
 * H200 (2026-11-29): 102-108 TFLOP/s forward and 114-123 backward at B 64,
 * T 2048, H 4 (the WMMA kernels 58-61 and 48-52); the kept dS, the bf16
 * reads and writes of q, k, v, y and their gradients and the heavy-first
 * tile order came after that run (kernels/README.md says what ran where).
 * 255 registers a thread in dK/dV, 226-242 in the others, no spills
 * (k_attn_dq_ds_mma: 128; nvcc 13, sm_90a).
 * The device helpers (PTX wrappers, tile loads, fragments, the online
 * softmax step, the kept dS's layout) are in kernels/attention_mma.cuh,
 * which the variants of dev/cuda (not in the product) share.
 * Left out: head widths other than 128 (the fp32 kernels), wgmma, TMA and
 * warp specialisation (FlashAttention-3's producer and consumer
 * warpgroups), one backward kernel with dQ
 * summed by atomics (not reproducible; dQ reads the kept dS instead, a
 * second pass over 8 KiB a tile pair).
 * Reference: Dao, FlashAttention-2 (2023), Algorithms 1 and 2 and section
 * 3.3 (warp partitioning); PTX ISA, Warp-level matrix instructions
 * (mma.m16n8k16, ldmatrix) and cp.async.
 */
#include "kernels/attention_mma.cuh"

__global__ void __launch_bounds__(MM_THREADS)
k_attn_fwd_mma(float *y, bf *yb, float *lse, const bf *q, const bf *k, const bf *v, int T, int H,
	       int64_t window, float scale)
{
	DYN_SMEM(smraw);
	bf *Qs = (bf *)smraw, *Ks = Qs + MM_TILE, *Vs = Ks + 2 * MM_TILE;
	const qblock qb = query_block(MM_R, T, H, window);
	const int bh = qb.bh, q0 = qb.q0, kfirst = qb.kfirst, ntile = qb.ntile;
	const int64_t ld = qb.ld, base = qb.base;
	const int w = threadIdx.x >> 5;
	const float sl2 = scale * LOG2E;

	tile_load(Qs, q + base, ld, q0, T);
	tile_load(Ks, k + base, ld, kfirst, T);
	tile_load(Vs, v + base, ld, kfirst, T);
	cp_commit();
	cp_wait<0>();
	__syncthreads();
	uint32_t qf[8][4];
#pragma unroll
	for (int kk = 0; kk < 8; kk++)
		frag_a(qf[kk], Qs, w * 16, kk * 16);

	float o[16][4], m[2] = { -INFINITY, -INFINITY }, l[2] = { 0.f, 0.f };
	zero_frags<16>(o);
	const int t0 = q0 + w * 16;   /* this warp's first row */
	for (int it = 0; it < ntile; it++) {
		const int s0 = kfirst + it * MM_R, cur = it & 1;
		const bf *Kc = Ks + cur * MM_TILE, *Vc = Vs + cur * MM_TILE;
		pair_next(Ks, Vs, k + base, v + base, ld, it, ntile, s0, T);   /* the next tile flies */
		__syncthreads();
		float s[8][4];
		prod_abt(s, qf, NULL, 0, Kc);
		softmax_tile(s, m, l, o, all_vis(t0, t0 + 15, s0, s0 + MM_R - 1, T, window), t0, s0, T,
			     window, sl2);
		prod_px(o, s, Vc);
		__syncthreads();   /* every warp is done with this buffer before it is refilled */
	}
	softmax_end(lse + (int64_t)bh * T, o, m, l, t0, T, sl2);
	store_rows(y ? y + base : NULL, yb ? yb + base : NULL, o, 1.f, ld, t0, T);
}

__global__ void __launch_bounds__(MM_THREADS)
k_attn_dkdv_mma(float *dk, float *dv, bf *dkb, bf *dvb, bf *dsg, const bf *dy, const bf *q,
		const bf *k, const bf *v, const float *lse, const float *Dd, int T, int H,
		int64_t window, float scale)
{
	DYN_SMEM(smraw);
	bf *Ks = (bf *)smraw, *Vs = Ks + MM_TILE, *Qs = Vs + MM_TILE, *Gs = Qs + 2 * MM_TILE;
	float *Ls = (float *)(Gs + 2 * MM_TILE), *Ds = Ls + 2 * MM_R;   /* 2 x 64 each */
	const int bh = blockIdx.y, b = bh / H, h = bh % H;
	const int k0 = blockIdx.x * MM_R, w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int c = lane & 3, g = lane >> 2;
	const int ks[2] = { k0 + w * 16 + g, k0 + w * 16 + g + 8 };
	const int64_t ld = (int64_t)H * MM_D, base = (int64_t)b * T * ld + (int64_t)h * MM_D;
	const int64_t tend = (int64_t)k0 + MM_R - 1 + window;
	const int tlast = (int)(tend < T - 1 ? tend : T - 1);
	const int ntile = (tlast - k0) / MM_R + 1;

	tile_load(Ks, k + base, ld, k0, T);
	tile_load(Vs, v + base, ld, k0, T);
	tile_load(Qs, q + base, ld, k0, T);
	tile_load(Gs, dy + base, ld, k0, T);
	cp_commit();
	const float sl2 = scale * LOG2E;   /* P = exp2(s scale log2 e - lse log2 e) */
	if (threadIdx.x < MM_R) {
		int t = k0 + threadIdx.x;
		Ls[threadIdx.x] = t < T ? lse[(int64_t)bh * T + t] * LOG2E : 0.f;
		Ds[threadIdx.x] = t < T ? Dd[(int64_t)bh * T + t] : 0.f;
	}
	float gk[16][4], gv[16][4];
	zero_frags<16>(gk);
	zero_frags<16>(gv);
	/* the kept dS (dsg): this lane's place in its warp's 16 rows of the
	 * slot of pair (i, j), i = j + it (j = blockIdx.x): slot ds_off(i) +
	 * j - jlo(i) of the (b, h), one step at a time */
	bf *keep = NULL;
	if (dsg) {
		const int64_t wt = ds_wt(window), j = blockIdx.x;
		keep = dsg + ((int64_t)bh * ds_slots(T, window) + ds_off(j, wt) + (j > wt ? wt : j)) *
				     (DS_T * DS_T) + (w * 16 + g) * DS_T + 2 * c;
	}
	for (int it = 0; it < ntile; it++) {
		const int t0 = k0 + it * MM_R, cur = it & 1;
		const bf *Qc = Qs + cur * MM_TILE, *Gc = Gs + cur * MM_TILE;
		const float *Lc = Ls + cur * MM_R, *Dc = Ds + cur * MM_R;
		if (it + 1 < ntile && threadIdx.x < MM_R) {   /* the next tile's lse and D */
			int t = t0 + MM_R + threadIdx.x;
			Ls[(cur ^ 1) * MM_R + threadIdx.x] = t < T ? lse[(int64_t)bh * T + t] * LOG2E : 0.f;
			Ds[(cur ^ 1) * MM_R + threadIdx.x] = t < T ? Dd[(int64_t)bh * T + t] : 0.f;
		}
		pair_next(Qs, Gs, q + base, dy + base, ld, it, ntile, t0, T);
		__syncthreads();
		/* P^T (16 keys x 64 queries): lane holds keys ks[e >> 1], queries
		 * t0 + 8 j + 2c + (e & 1) */
		float p[8][4];
		prod_abt(p, NULL, Ks, w * 16, Qc);
		probs_t(p, Lc, t0, k0 + w * 16, ks, T, window, sl2);
		prod_px(gv, p, Gc);          /* dV += P^T dY */
		float ds[8][4];
		prod_abt(ds, NULL, Vs, w * 16, Gc);   /* dP^T = V dY^T */
		dscores_t(ds, p, Dc);
		prod_px(gk, ds, Qc, keep);   /* dK += dS^T Q */
		if (keep) {   /* to pair (i + 1, j): ds_off(i + 1) - ds_off(i) - (jlo(i + 1) - jlo(i)) */
			const int i = blockIdx.x + it, wt = (int)ds_wt(window);
			keep += (int64_t)(i < wt ? i + 1 : wt) * (DS_T * DS_T);
		}
		__syncthreads();
	}
	store_rows(dk ? dk + base : NULL, dkb ? dkb + base : NULL, gk, scale, ld, k0 + w * 16, T);
	store_rows(dv ? dv + base : NULL, dvb ? dvb + base : NULL, gv, 1.f, ld, k0 + w * 16, T);
}

/* ---- backward: dQ from the kept dS ----
 * A block per (64 queries: tile i, b, h), 4 warps of 16 rows: dQ = scale
 * sum over key tiles j = jlo(i) .. i of dS_ij K_j, with dS_ij read from its
 * slot (dS^T row-major: ldmatrix .trans gives dS's A fragments) and K_j, the
 * next tile pair's loads in flight (two buffers each). The key tiles in
 * k_attn_dq_mma's order where the window is a multiple of 64 or covers T
 * (then its kfirst is aligned) with the same dS bits: dQ equal to its dQ
 * element by element (test_mma_emu). */

__global__ void __launch_bounds__(MM_THREADS)
k_attn_dq_ds_mma(float *dq, bf *dqb, const bf *dsg, const bf *k, int T, int H, int64_t window,
		 float scale)
{
	DYN_SMEM(smraw);
	bf *Ks = (bf *)smraw, *Ss = Ks + 2 * MM_TILE;   /* Ss: 2 x 64 x DS_LD */
	const int bh = blockIdx.y, b = bh / H, h = bh % H, w = threadIdx.x >> 5;
	const int lane = threadIdx.x & 31;
	const int64_t ld = (int64_t)H * MM_D, base = (int64_t)b * T * ld + (int64_t)h * MM_D;
	const int64_t i = heavy_first(T, MM_R), wt = ds_wt(window), jlo = i - wt > 0 ? i - wt : 0;
	const int ntile = (int)(i - jlo + 1);
	const bf *S0 = dsg + ((int64_t)bh * ds_slots(T, window) + ds_off(i, wt)) * (DS_T * DS_T);
	const bf *kb = k + base;

	ds_tile_load(Ss, S0);
	tile_load(Ks, kb, ld, (int)jlo * MM_R, T);
	cp_commit();
	float gq[16][4];
	zero_frags<16>(gq);
	for (int it = 0; it < ntile; it++) {
		const int cur = it & 1;
		const bf *Kc = Ks + cur * MM_TILE, *Sc = Ss + cur * DS_T * DS_LD;
		if (it + 1 < ntile) {
			ds_tile_load(Ss + (cur ^ 1) * DS_T * DS_LD, S0 + (int64_t)(it + 1) * DS_T * DS_T);
			tile_load(Ks + (cur ^ 1) * MM_TILE, kb, ld, (int)(jlo + it + 1) * MM_R, T);
			cp_commit();
			cp_wait<1>();
		} else {
			cp_wait<0>();
		}
		__syncthreads();
#pragma unroll
		for (int kk = 0; kk < 4; kk++) {
			/* dS's A fragment (queries 16 w.., keys 16 kk..) from dS^T's
			 * rows: matrix m = lane / 8 at keys + 8 (m >> 1), queries + 8 (m & 1) */
			uint32_t a[4];
			const int m = lane >> 3;
			ldsm4t(a, Sc + (kk * 16 + (lane & 7) + (m >> 1) * 8) * DS_LD + w * 16 + (m & 1) * 8);
			prod_ax(gq, a, Kc, kk);   /* dQ += dS K */
		}
		__syncthreads();
	}
	store_rows(dq ? dq + base : NULL, dqb ? dqb + base : NULL, gq, scale, ld,
		   (int)i * MM_R + w * 16, T);
}

/* ---- launchers ---- */

static size_t mm_smem_dkdv(void)
{
	return (size_t)6 * MM_TILE * sizeof(bf) + (size_t)4 * MM_R * sizeof(float);
}

static size_t mm_smem_dq_ds(void)
{
	return (size_t)(2 * MM_TILE + 2 * DS_T * DS_LD) * sizeof(bf);
}

#if !defined(SUPKIT_EMU) || defined(SUPKIT_EMU_RT)   /* test_mma_emu launches the kernels itself */
/* A forward kernel over blocks of `rows` queries with sm bytes of shared
 * memory, on bf16 copies of q, k, v. */
typedef void (*fwd_kernel)(float *, bf *, float *, const bf *, const bf *, const bf *, int, int,
			   int64_t, float);

static void fwd_run(fwd_kernel kern, int rows, size_t sm, float *y, void *yb, float *lse,
		    const float *q, const float *k, const float *v, int B, int T, int H, int D,
		    int64_t window, float scale, const void *const *qkvb)
{
	dim3 gr = attn128_grid("attn_fwd", B, T, H, D);
	gr.x = (unsigned)((T + rows - 1) / rows);
	int64_t n = (int64_t)B * T * H * D;
	const float *src[3] = { q, k, v };
	size_t nb = 0;
	bf *cp = qkvb ? NULL : mm_cast("attn_fwd", src, 3, n, &nb);   /* else the caller's */
	const bf *g[3];
	qkv_of(g, qkvb, cp, n);
	CUDA_CK("attn_fwd", cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
						 (int)sm));
	kern<<<gr, MM_THREADS, sm, cuda_stream()>>>(y, (bf *)yb, lse, g[0], g[1], g[2], T, H, window,
						      scale);
	CUDA_CK("attn_fwd", cudaGetLastError());
	cuda_scratch_free(cp, nb);
}
void attn_fwd_mma_launch(float *y, void *yb, float *lse, const float *q, const float *k,
			 const float *v, int B, int T, int H, int D, int64_t window, float scale,
			 const void *const *qkvb)
{
	fwd_run(k_attn_fwd_mma, MM_R, (size_t)5 * MM_TILE * sizeof(bf), y, yb, lse, q, k, v, B, T,
		H, D, window, scale, qkvb);
}

void attn_bwd_mma_launch(float *dq, float *dk, float *dv, void *const *gb, const float *dy,
			 const void *dyb, const float *q, const float *k, const float *v,
			 const float *Dd, const float *lse, int B, int T, int H, int D,
			 int64_t window, float scale, const void *const *qkvb)
{
	dim3 gr = attn128_grid("attn_bwd", B, T, H, D);
	int64_t n = (int64_t)B * T * H * D;
	const float *src[4] = { dy, q, k, v };
	size_t nb = 0;
	/* bf16 copies: none with dy in bf16 (dyb: q, k, v given too), dy's alone
	 * with q, k, v given, else all four */
	bf *cp = dyb ? NULL : mm_cast("attn_bwd", src, qkvb ? 1 : 4, n, &nb);
	const bf *gdy = dyb ? (const bf *)dyb : cp, *g[3];
	qkv_of(g, qkvb, cp ? cp + n : NULL, n);
	const bf *gq = g[0], *gk = g[1], *gv = g[2];
	cudaStream_t st = cuda_stream();
	size_t s1 = mm_smem_dkdv(), s2 = mm_smem_dq_ds();
	/* the kept dS tiles: B H ds_slots x 8 KiB, freed with the op */
	size_t nds = (size_t)B * H * (size_t)ds_slots(T, window) * DS_T * DS_T * sizeof(bf);
	bf *dsg = (bf *)cuda_scratch_alloc("attn_bwd", nds);
	CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dkdv_mma,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)s1));
	k_attn_dkdv_mma<<<gr, MM_THREADS, s1, st>>>(dk, dv, (bf *)gb[1], (bf *)gb[2], dsg, gdy, gq, gk,
						    gv, lse, Dd, T, H, window, scale);
	CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dq_ds_mma,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)s2));
	k_attn_dq_ds_mma<<<gr, MM_THREADS, s2, st>>>(dq, (bf *)gb[0], dsg, gk, T, H, window, scale);
	CUDA_CK("attn_bwd", cudaGetLastError());
	cuda_scratch_free(dsg, nds);
	cuda_scratch_free(cp, nb);
}
#endif /* !SUPKIT_EMU || SUPKIT_EMU_RT */
