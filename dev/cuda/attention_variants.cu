/* attention_variants.cu: wg, a variant of the product's mma.sync attention
 * (kernels/attention_mma.cu) for head width 128 that is not in the product
 * (dev/cuda/README.md says what it did on a GPU and what stands between it
 * and the product): the forward, the dK, dV kernel and dQ from the kept dS
 * on Hopper's warpgroup MMA (wgmma, sm_90a code only). Its launchers, and
 * the dispatch of dev/cuda/attention_variants.h over it and the product's
 * mma kernels, are at the end.
 *
 * The device helpers (PTX wrappers, tiles, fragments, the online softmax
 * step, the kept dS's slots) are the product's (kernels/attention_mma.cuh),
 * so the variant differs from the product in its own kernels only.
 *
 * wg: k_attn_fwd_wg, k_attn_dkdv_wg and k_attn_dq_ds_wg (their sections
 * below); dQ always from the kept dS (the product's default).
 * Left out: the recomputing dQ on wgmma, TMA and warp specialisation
 * (FlashAttention-3's producer and consumer warpgroups), bf16 inputs and
 * outputs (the product's kept casts and bf16 storage): the launchers read
 * and write fp32 tensors and make bf16 copies of q, k, v and dy first.
 * Reference: PTX ISA, "Asynchronous Warpgroup Level Matrix
 * Multiply-Accumulate Instructions"; Shah et al., FlashAttention-3 (2024).
 */
#include "dev/cuda/attention_variants.h"
#include "kernels/attention_mma.cuh"

#ifdef SUPKIT_EMU
__device__ static inline void wg_fence(void) { emu_wgmma_fence(); }
__device__ static inline void wg_commit(void) { emu_wgmma_commit(); }
template <int N> __device__ static inline void wg_wait(void) { emu_wgmma_wait(N); }
__device__ static inline void proxy_fence(void) {}
template <int N> __device__ static inline void acc_fence(float (*)[4]) {}
__device__ static inline void wg_ss64(float (*d)[4], uint64_t da, uint64_t db, int scale_d)
{
	emu_wgmma(&d[0][0], 64, NULL, da, db, scale_d);
}
__device__ static inline void wg_rs128(float (*d)[4], const uint32_t *a, uint64_t db)
{
	emu_wgmma(&d[0][0], 128, a, 0, db, 1);
}
#else

/* wgmma exists in the sm_90a code only (nvcc -arch=sm_90a also makes
 * compute_90 PTX, where these trap; attn_variant_runs_here says no to wg
 * on a device other than compute capability 9.0, so that PTX never runs
 * them) */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WG_ASM(...) asm volatile(__VA_ARGS__)
#else
#define WG_ASM(...) __trap()
#endif

/* wgmma (sm_90a): the warpgroup's asynchronous MMA. wg_fence before the
 * first of a batch (and after other code touched its registers), wg_commit
 * after it, wg_wait<N> until at most N batches are in flight; acc_fence
 * then keeps the compiler from reading the accumulators before the wait
 * (the wgmma asm names them as written at issue). proxy_fence makes this
 * thread's cp.async writes to shared memory visible to wgmma's reads. */
__device__ static inline void wg_fence(void)
{
	WG_ASM("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ static inline void wg_commit(void)
{
	WG_ASM("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N> __device__ static inline void wg_wait(void)
{
	WG_ASM("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

__device__ static inline void proxy_fence(void)
{
	WG_ASM("fence.proxy.async.shared::cta;\n" ::: "memory");
}

template <int N> __device__ static inline void acc_fence(float (*d)[4])
{
#pragma unroll
	for (int j = 0; j < N; j++)
#pragma unroll
		for (int e = 0; e < 4; e++)
			asm volatile("" : "+f"(d[j][e])::"memory");
}

/* the asm operands of accumulator fragment j of d */
#define ACC4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])

/* d (64 x 64 of the warpgroup; this thread's 32 values as 8 C fragments)
 * = A B (+ d if scale_d), A (64 x 16) and B^T (64 x 16) by descriptor */
__device__ static inline void wg_ss64(float (*d)[4], uint64_t da, uint64_t db, int scale_d)
{
	WG_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
		     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
		     : ACC4(0), ACC4(1), ACC4(2), ACC4(3),
		       ACC4(4), ACC4(5), ACC4(6), ACC4(7)
		     : "l"(da), "l"(db), "r"(scale_d));
}

/* d (64 x 128; 16 C fragments) += A B, A (64 x 16) from registers (this
 * warp's 16 rows as mma's A fragment), B^T (128 x 16) by descriptor */
__device__ static inline void wg_rs128(float (*d)[4], const uint32_t *a, uint64_t db)
{
	WG_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
		     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 0;\n}\n"
		     : ACC4(0), ACC4(1), ACC4(2), ACC4(3),
		       ACC4(4), ACC4(5), ACC4(6), ACC4(7),
		       ACC4(8), ACC4(9), ACC4(10), ACC4(11),
		       ACC4(12), ACC4(13), ACC4(14), ACC4(15)
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
}

#endif

/* ---- forward on wgmma (variant wg) ----
 * k_attn_fwd_mma's block (64 queries, b, h; 4 warps of 16 rows: one
 * warpgroup) with its two tile products on Hopper's asynchronous warpgroup
 * MMA (wgmma, sm_90a) instead of mma.sync: S = Q K^T as 8 k steps of
 * m64n64k16 with Q and K read by the tensor cores from shared memory (no
 * ldmatrix, no Q fragments in registers), O += P V as 4 k steps of
 * m64n128k16 with P from registers (the C-to-A repacking of mma's) and V^T
 * from shared memory. The accumulators have mma's C layout (a warp's 16
 * rows, 8 columns a fragment), so the online softmax, its end and the
 * stores are k_attn_fwd_mma's. Tiles sit in shared memory K-major with the
 * 128-byte swizzle (16-byte chunk c of row r of a 64-column atom at chunk
 * c ^ (r % 8), atoms 1024-byte aligned): Q and K as two atoms of 64
 * columns, V^T (head dimension x 64 keys) as one, from a transposed copy of
 * v made first (k_attn_vt: (B, H, 128, Tp) bf16, Tp = T rounded up to 64,
 * zeros past T), since wgmma reads a K-major B without the transposing
 * layouts. Key tiles start at multiples of 64 (the transposed rows' 16-byte
 * copies stay aligned): where the window is a multiple of 64 or covers T
 * (the benchmark's), k_attn_fwd_mma's tiles, and on the emulator its
 * results bit for bit (the emulator sums each k16 step as mma's); else one
 * tile more at the start, partly hidden, so roundings can differ. Checked
 * on the emulated device (tests/emu), whose wgmma implements this one
 * layout from the PTX ISA's description (Matrix Descriptor Format; the
 * 128-byte swizzle mode).
 * Reference: PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-
 * Accumulate Instructions" (wgmma.mma_async, the descriptor, the register
 * fragments of A and D, wgmma.fence / commit_group / wait_group, the async
 * proxy); Shah et al., FlashAttention-3 (2024) for the use of wgmma. */
#define WG_ATOM 8192    /* bytes of a 64-row x 64-column bf16 atom (128 bytes a row) */
#define WG_VT 16384     /* bytes of a V^T tile: 128 rows (head dimension) x 64 keys */
#define WG_SMEM (1024 + 2 * WG_ATOM + 2 * 2 * WG_ATOM + 2 * WG_VT)   /* Q, K x 2, V^T x 2 */

/* the row length of k_attn_vt's transposed copies: T rounded up to 64 */
__host__ __device__ static inline int64_t wg_tp(int T)
{
	return (int64_t)(T + MM_R - 1) / MM_R * MM_R;
}

/* Before computing on a tile of a double-buffered pipeline: with more
 * tiles to come, start the next one's loads (load()) and wait for the
 * current one's, else wait for all; then make the copies visible to
 * wgmma and synchronise the block. */
template <class F> __device__ static inline void wg_next(bool more, F load)
{
	if (more) {
		load();
		cp_commit();
		cp_wait<1>();
	} else {
		cp_wait<0>();
	}
	proxy_fence();
	__syncthreads();
}

/* the byte offset of 16-byte chunk cc (0..7) of row r in a swizzled atom */
__device__ static inline int sw128(int r, int cc)
{
	return (r >> 3) * 1024 + (r & 7) * 128 + ((cc ^ (r & 7)) << 4);
}

/* The descriptor of a K-major, 128-byte-swizzled operand at p: start
 * address / 16 (bits 0-13), leading byte offset 1 (unused by this
 * layout), stride byte offset 1024 / 16 between 8-row groups (bits
 * 32-45), base offset 0 (the atoms are 1024-byte aligned), layout type 1:
 * the 128-byte swizzle (bits 62-63). p + 32 kk is the kk-th k step of 16
 * bf16 values within an atom's 128-byte rows. */
__device__ static inline uint64_t wg_desc(const void *p)
{
	return (uint64_t)((smem_addr(p) & 0x3ffff) >> 4) | (uint64_t)1 << 16 | (uint64_t)64 << 32 |
	       (uint64_t)1 << 62;
}

/* d (64 x 64) = A B^T over 128 columns: 8 k steps of wg_ss64 (issued, not
 * committed), A and B 64-row tiles of two swizzled atoms each */
__device__ static inline void wg_abt(float (*d)[4], const unsigned char *a,
				     const unsigned char *b)
{
#pragma unroll
	for (int kk = 0; kk < 8; kk++) {
		const int off = (kk >> 2) * WG_ATOM + (kk & 3) * 32;
		wg_ss64(d, wg_desc(a + off), wg_desc(b + off), kk > 0);
	}
}

/* rows [r0, r0 + 64) of a (B,T,H,128) bf16 tensor at src (its (b, h)
 * origin, row stride ld) into two swizzled atoms at dst (columns 0-63,
 * 64-127); rows past T are zero. Asynchronous. */
__device__ static void wg_tile_load(unsigned char *dst, const bf *src, int64_t ld, int r0, int T)
{
#pragma unroll
	for (int u = 0; u < MM_R * MM_D / 8 / MM_THREADS; u++) {
		int e = threadIdx.x + u * MM_THREADS, r = e >> 4, c = e & 15, t = r0 + r;
		bool ok = t < T;
		cp16(dst + (c >> 3) * WG_ATOM + sw128(r, c & 7),
		     ok ? src + (int64_t)t * ld + c * 8 : src, ok);
	}
}

/* keys [s0, s0 + 64) (s0 a multiple of 64) of the 128 rows of a (b, h)'s
 * V^T (row stride Tp) into a swizzled 128-row atom at dst. Asynchronous. */
__device__ static void wg_vt_load(unsigned char *dst, const bf *vt, int64_t Tp, int s0)
{
#pragma unroll
	for (int u = 0; u < MM_D * MM_R / 8 / MM_THREADS; u++) {
		int e = threadIdx.x + u * MM_THREADS, d = e >> 3, cc = e & 7;
		cp16(dst + sw128(d, cc), vt + (int64_t)d * Tp + s0 + cc * 8, true);
	}
}

/* vt (B, H, 128, Tp) = v (B, T, H, 128) transposed per (b, h), zeros for
 * keys T .. Tp - 1: a block per (64 keys, b, h), through shared memory. */
__global__ void __launch_bounds__(MM_THREADS)
k_attn_vt(bf *vt, const bf *v, int T, int H, int64_t Tp)
{
	DYN_SMEM(smraw);
	bf *Vs = (bf *)smraw;   /* 64 keys x MM_LD */
	const int bh = blockIdx.y, b = bh / H, h = bh % H, s0 = blockIdx.x * MM_R;
	const int64_t ld = (int64_t)H * MM_D;
	const bf *src = v + (int64_t)b * T * ld + (int64_t)h * MM_D;
	for (int e = threadIdx.x; e < MM_R * MM_D / 8; e += MM_THREADS) {
		int r = e >> 4, c = (e & 15) * 8, t = s0 + r;
		uint4 x = { 0u, 0u, 0u, 0u };
		if (t < T)
			x = *(const uint4 *)(src + (int64_t)t * ld + c);
		*(uint4 *)(Vs + r * MM_LD + c) = x;
	}
	__syncthreads();
	bf *dst = vt + (int64_t)bh * MM_D * Tp + s0;
	for (int e = threadIdx.x; e < MM_D * MM_R / 8; e += MM_THREADS) {
		int d = e >> 3, k0 = (e & 7) * 8;
		uint32_t w[4];
		for (int i = 0; i < 4; i++) {
			unsigned short lo = __bfloat16_as_ushort(Vs[(k0 + 2 * i) * MM_LD + d]);
			unsigned short hi = __bfloat16_as_ushort(Vs[(k0 + 2 * i + 1) * MM_LD + d]);
			w[i] = (uint32_t)lo | (uint32_t)hi << 16;
		}
		uint4 x = { w[0], w[1], w[2], w[3] };
		*(uint4 *)(dst + (int64_t)d * Tp + k0) = x;
	}
}

__global__ void __launch_bounds__(MM_THREADS)
k_attn_fwd_wg(float *y, bf *yb, float *lse, const bf *q, const bf *k, const bf *vt, int T,
	      int H, int64_t window, float scale)
{
	DYN_SMEM(smraw);
	/* the atoms 1024-byte aligned in the shared window (the swizzle's
	 * pattern follows the address bits) */
	unsigned char *sm = smraw + ((1024u - (smem_addr(smraw) & 1023u)) & 1023u);
	unsigned char *Qs = sm, *Ks = Qs + 2 * WG_ATOM, *Vs = Ks + 2 * 2 * WG_ATOM;
	const qblock qb = query_block(MM_R, T, H, window);
	const int bh = qb.bh, q0 = qb.q0, kfirst = qb.kfirst & ~(MM_R - 1);
	const int ntile = (min(q0 + MM_R, T) - 1 - kfirst) / MM_R + 1;
	const int64_t ld = qb.ld, base = qb.base, Tp = wg_tp(T);
	const bf *vtb = vt + (int64_t)bh * MM_D * Tp;
	const int w = threadIdx.x >> 5;
	const float sl2 = scale * LOG2E;

	wg_tile_load(Qs, q + base, ld, q0, T);
	wg_tile_load(Ks, k + base, ld, kfirst, T);
	wg_vt_load(Vs, vtb, Tp, kfirst);
	cp_commit();
	float o[16][4], m[2] = { -INFINITY, -INFINITY }, l[2] = { 0.f, 0.f };
	zero_frags<16>(o);
	const int t0 = q0 + w * 16;   /* this warp's first row */
	for (int it = 0; it < ntile; it++) {
		const int s0 = kfirst + it * MM_R, cur = it & 1;
		const unsigned char *Kc = Ks + cur * 2 * WG_ATOM, *Vc = Vs + cur * WG_VT;
		wg_next(it + 1 < ntile, [&] {   /* the next tile flies */
			wg_tile_load(Ks + (cur ^ 1) * 2 * WG_ATOM, k + base, ld, s0 + MM_R, T);
			wg_vt_load(Vs + (cur ^ 1) * WG_VT, vtb, Tp, s0 + MM_R);
		});
		float s[8][4];
		zero_frags<8>(s);
		wg_fence();
		wg_abt(s, Qs, Kc);
		wg_commit();
		wg_wait<0>();
		acc_fence<8>(s);
		softmax_tile(s, m, l, o, all_vis(t0, t0 + 15, s0, s0 + MM_R - 1, T, window), t0, s0, T,
			     window, sl2);
		uint32_t pa[4][4];
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
			afrag(pa[kk], s, kk);
		wg_fence();   /* o was rescaled, pa written */
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
			wg_rs128(o, pa[kk], wg_desc(Vc + kk * 32));
		wg_commit();
		wg_wait<0>();
		acc_fence<16>(o);
		__syncthreads();   /* every warp is done with this buffer before it is refilled */
	}
	softmax_end(lse + (int64_t)bh * T, o, m, l, t0, T, sl2);
	store_rows(y ? y + base : NULL, yb ? yb + base : NULL, o, 1.f, ld, t0, T);
}


/* ---- backward: dK, dV on wgmma (variant wg) ----
 * k_attn_dkdv_mma's block (64 keys, one warpgroup of 4 warps, each 16 keys)
 * and arithmetic with its four tile products on wgmma: S^T = K Q^T and
 * dP^T = V dY^T as 8 m64n64k16 steps each with K, V, Q and dY read from
 * shared memory by descriptor (issued together; P^T is formed while dP^T
 * finishes), dV += P^T dY and dK += dS^T Q as 4 m64n128k16 steps each with
 * P^T and dS^T from registers and dY^T, Q^T from shared memory: transposed
 * copies of dy and q (k_attn_vt) make every operand K-major. One buffer a
 * tile (96 KiB of tiles: two blocks an SM), refilled after the block's
 * barrier. The sums run in k_attn_dkdv_mma's order (on the emulator the
 * same bits, kept dS included); dQ from the kept dS is k_attn_dq_ds_wg's,
 * the recomputing dQ mma's. */
#define WG_BWD_SMEM (1024 + 6 * 2 * WG_ATOM + 2 * MM_R * (int)sizeof(float))

__global__ void __launch_bounds__(MM_THREADS)
k_attn_dkdv_wg(float *dk, float *dv, bf *dkb, bf *dvb, bf *dsg, const bf *dy, const bf *q,
	       const bf *k, const bf *v, const bf *qt, const bf *dyt, const float *lse,
	       const float *Dd, int T, int H, int64_t window, float scale)
{
	DYN_SMEM(smraw);
	unsigned char *sm = smraw + ((1024u - (smem_addr(smraw) & 1023u)) & 1023u);
	unsigned char *Ks = sm, *Vs = Ks + 2 * WG_ATOM, *Qs = Vs + 2 * WG_ATOM, *Gs = Qs + 2 * WG_ATOM;
	unsigned char *QTs = Gs + 2 * WG_ATOM, *GTs = QTs + WG_VT;
	float *Ls = (float *)(GTs + WG_VT), *Ds = Ls + MM_R;
	const int bh = blockIdx.y, b = bh / H, h = bh % H;
	const int k0 = blockIdx.x * MM_R, w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int c = lane & 3, g = lane >> 2;
	const int ks[2] = { k0 + w * 16 + g, k0 + w * 16 + g + 8 };
	const int64_t ld = (int64_t)H * MM_D, base = (int64_t)b * T * ld + (int64_t)h * MM_D;
	const int64_t Tp = wg_tp(T);
	const bf *qtb = qt + (int64_t)bh * MM_D * Tp, *dytb = dyt + (int64_t)bh * MM_D * Tp;
	const int64_t tend = (int64_t)k0 + MM_R - 1 + window;
	const int tlast = (int)(tend < T - 1 ? tend : T - 1);
	const int ntile = (tlast - k0) / MM_R + 1;
	const float sl2 = scale * LOG2E;   /* P = exp2(s scale log2 e - lse log2 e) */

	wg_tile_load(Ks, k + base, ld, k0, T);
	wg_tile_load(Vs, v + base, ld, k0, T);
	float gk[16][4], gv[16][4];
	zero_frags<16>(gk);
	zero_frags<16>(gv);
	bf *keep = NULL;   /* the kept dS, as k_attn_dkdv_mma's */
	if (dsg) {
		const int64_t wt = ds_wt(window), j = blockIdx.x;
		keep = dsg + ((int64_t)bh * ds_slots(T, window) + ds_off(j, wt) + (j > wt ? wt : j)) *
				     (DS_T * DS_T) + (w * 16 + g) * DS_T + 2 * c;
	}
	for (int it = 0; it < ntile; it++) {
		const int t0 = k0 + it * MM_R;
		if (it > 0)
			__syncthreads();   /* every warp is done with the tiles before they are refilled */
		wg_tile_load(Qs, q + base, ld, t0, T);
		wg_tile_load(Gs, dy + base, ld, t0, T);
		wg_vt_load(QTs, qtb, Tp, t0);
		wg_vt_load(GTs, dytb, Tp, t0);
		cp_commit();
		if (threadIdx.x < MM_R) {
			int t = t0 + threadIdx.x;
			Ls[threadIdx.x] = t < T ? lse[(int64_t)bh * T + t] * LOG2E : 0.f;
			Ds[threadIdx.x] = t < T ? Dd[(int64_t)bh * T + t] : 0.f;
		}
		cp_wait<0>();
		proxy_fence();
		__syncthreads();
		/* S^T (16 keys x 64 queries a warp), then dP^T = V dY^T: lane holds
		 * keys ks[e >> 1], queries t0 + 8 j + 2c + (e & 1) */
		float p[8][4], ds[8][4];
		zero_frags<8>(p);
		zero_frags<8>(ds);
		wg_fence();
		wg_abt(p, Ks, Qs);
		wg_commit();
		wg_abt(ds, Vs, Gs);
		wg_commit();
		wg_wait<1>();   /* S^T done; dP^T may still run */
		acc_fence<8>(p);
		probs_t(p, Ls, t0, k0 + w * 16, ks, T, window, sl2);
		wg_wait<0>();
		acc_fence<8>(ds);
		dscores_t(ds, p, Ds);
		/* P^T and dS^T rounded to bf16 A fragments (as prod_px does), dS^T
		 * kept as k_attn_dkdv_mma keeps it */
		uint32_t pa[4][4], da[4][4];
#pragma unroll
		for (int kk = 0; kk < 4; kk++) {
			afrag(pa[kk], p, kk);
			afrag(da[kk], ds, kk);
			if (keep) {
#pragma unroll
				for (int r = 0; r < 4; r++)
					*(uint32_t *)(keep + 8 * (r & 1) * DS_T + kk * 16 + 8 * (r >> 1)) = da[kk][r];
			}
		}
		if (keep) {   /* to pair (i + 1, j), as k_attn_dkdv_mma */
			const int i = blockIdx.x + it, wt = (int)ds_wt(window);
			keep += (int64_t)(i < wt ? i + 1 : wt) * (DS_T * DS_T);
		}
		wg_fence();
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
			wg_rs128(gv, pa[kk], wg_desc(GTs + kk * 32));   /* dV += P^T dY */
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
			wg_rs128(gk, da[kk], wg_desc(QTs + kk * 32));   /* dK += dS^T Q */
		wg_commit();
		wg_wait<0>();
		acc_fence<16>(gv);
		acc_fence<16>(gk);
	}
	store_rows(dk ? dk + base : NULL, dkb ? dkb + base : NULL, gk, scale, ld, k0 + w * 16, T);
	store_rows(dv ? dv + base : NULL, dvb ? dvb + base : NULL, gv, 1.f, ld, k0 + w * 16, T);
}


/* dQ from the kept dS on wgmma (variant wg): k_attn_dq_ds_mma's
 * block and loads, the dS fragments read by ldmatrix as there, and dQ += dS
 * K as 4 m64n128k16 steps with dS from registers and K^T (a transposed copy
 * of k, k_attn_vt) from shared memory by descriptor: the same sums in the
 * same order. */
#define WG_DQ_SMEM (1024 + 2 * WG_VT + 2 * DS_T * DS_LD * (int)sizeof(bf))

__global__ void __launch_bounds__(MM_THREADS)
k_attn_dq_ds_wg(float *dq, bf *dqb, const bf *dsg, const bf *kt, int T, int H, int64_t window,
		float scale)
{
	DYN_SMEM(smraw);
	unsigned char *sm = smraw + ((1024u - (smem_addr(smraw) & 1023u)) & 1023u);
	unsigned char *KTs = sm;                 /* 2 x V^T-shaped tiles of k */
	bf *Ss = (bf *)(sm + 2 * WG_VT);         /* 2 x 64 x DS_LD */
	const int bh = blockIdx.y, b = bh / H, h = bh % H, w = threadIdx.x >> 5;
	const int lane = threadIdx.x & 31;
	const int64_t ld = (int64_t)H * MM_D, base = (int64_t)b * T * ld + (int64_t)h * MM_D;
	const int64_t Tp = wg_tp(T);
	const int64_t i = heavy_first(T, MM_R), wt = ds_wt(window), jlo = i - wt > 0 ? i - wt : 0;
	const int ntile = (int)(i - jlo + 1);
	const bf *S0 = dsg + ((int64_t)bh * ds_slots(T, window) + ds_off(i, wt)) * (DS_T * DS_T);
	const bf *ktb = kt + (int64_t)bh * MM_D * Tp;

	ds_tile_load(Ss, S0);
	wg_vt_load(KTs, ktb, Tp, (int)jlo * MM_R);
	cp_commit();
	float gq[16][4];
	zero_frags<16>(gq);
	for (int it = 0; it < ntile; it++) {
		const int cur = it & 1;
		const unsigned char *KTc = KTs + cur * WG_VT;
		const bf *Sc = Ss + cur * DS_T * DS_LD;
		wg_next(it + 1 < ntile, [&] {
			ds_tile_load(Ss + (cur ^ 1) * DS_T * DS_LD, S0 + (int64_t)(it + 1) * DS_T * DS_T);
			wg_vt_load(KTs + (cur ^ 1) * WG_VT, ktb, Tp, (int)(jlo + it + 1) * MM_R);
		});
		uint32_t a[4][4];
		const int m = lane >> 3;
#pragma unroll
		for (int kk = 0; kk < 4; kk++)   /* as k_attn_dq_ds_mma */
			ldsm4t(a[kk], Sc + (kk * 16 + (lane & 7) + (m >> 1) * 8) * DS_LD + w * 16 +
					      (m & 1) * 8);
		wg_fence();
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
			wg_rs128(gq, a[kk], wg_desc(KTc + kk * 32));   /* dQ += dS K */
		wg_commit();
		wg_wait<0>();
		acc_fence<16>(gq);
		__syncthreads();
	}
	store_rows(dq ? dq + base : NULL, dqb ? dqb + base : NULL, gq, scale, ld,
		   (int)i * MM_R + w * 16, T);
}

/* ---- launchers ---- */

#if !defined(SUPKIT_EMU) || defined(SUPKIT_EMU_RT)

/* dst = src (B, T, H, 128) transposed per (b, h) by k_attn_vt */
static void vt_copy(bf *dst, const bf *src, int B, int T, int H, cudaStream_t st)
{
	int64_t Tp = wg_tp(T);
	dim3 gt((unsigned)(Tp / MM_R), (unsigned)(B * H));
	k_attn_vt<<<gt, MM_THREADS, MM_TILE * sizeof(bf), st>>>(dst, src, T, H, Tp);
}

/* wg's forward: v^T first (k_attn_vt), then k_attn_fwd_wg */
static void fwd_wg(float *y, float *lse, const float *q, const float *k, const float *v, int B,
		   int T, int H, int64_t window, float scale)
{
	dim3 gr = attn128_grid("attn_fwd", B, T, H, MM_D);
	int64_t n = (int64_t)B * T * H * MM_D, Tp = wg_tp(T);
	const float *src[3] = { q, k, v };
	size_t nb = 0;
	bf *cp = mm_cast("attn_fwd", src, 3, n, &nb);
	cudaStream_t st = cuda_stream();
	size_t nvt = (size_t)B * H * MM_D * (size_t)Tp * sizeof(bf);
	bf *vt = (bf *)cuda_scratch_alloc("attn_fwd", nvt);
	vt_copy(vt, cp + 2 * n, B, T, H, st);
	CUDA_CK("attn_fwd", cudaFuncSetAttribute(k_attn_fwd_wg,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
	k_attn_fwd_wg<<<gr, MM_THREADS, WG_SMEM, st>>>(y, NULL, lse, cp, cp + n, vt, T, H, window,
						       scale);
	CUDA_CK("attn_fwd", cudaGetLastError());
	cuda_scratch_free(vt, nvt);
	cuda_scratch_free(cp, nb);
}

/* wg's backward on fp32 tensors, Dd = rowsum(dy * y) given: transposed
 * copies of q, dy and k, dK and dV on wgmma keeping dS, dQ from it on
 * wgmma */
static void bwd_wg(float *dq, float *dk, float *dv, const float *dy, const float *q,
		   const float *k, const float *v, const float *Dd, const float *lse, int B, int T,
		   int H, int64_t window, float scale)
{
	dim3 gr = attn128_grid("attn_bwd", B, T, H, MM_D);
	int64_t n = (int64_t)B * T * H * MM_D;
	const float *src[4] = { dy, q, k, v };
	size_t nb = 0;
	bf *cp = mm_cast("attn_bwd", src, 4, n, &nb);
	const bf *gdy = cp, *gq = cp + n, *gk = cp + 2 * n, *gv = cp + 3 * n;
	cudaStream_t st = cuda_stream();
	size_t nds = (size_t)B * H * (size_t)ds_slots(T, window) * DS_T * DS_T * sizeof(bf);
	bf *dsg = (bf *)cuda_scratch_alloc("attn_bwd", nds);
	size_t nt = (size_t)B * H * MM_D * (size_t)wg_tp(T), ntb = 3 * nt * sizeof(bf);
	bf *qt = (bf *)cuda_scratch_alloc("attn_bwd", ntb);
	vt_copy(qt, gq, B, T, H, st);
	vt_copy(qt + nt, gdy, B, T, H, st);
	vt_copy(qt + 2 * nt, gk, B, T, H, st);
	CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dkdv_wg,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, WG_BWD_SMEM));
	k_attn_dkdv_wg<<<gr, MM_THREADS, WG_BWD_SMEM, st>>>(dk, dv, NULL, NULL, dsg, gdy, gq, gk, gv,
							    qt, qt + nt, lse, Dd, T, H, window,
							    scale);
	CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dq_ds_wg,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, WG_DQ_SMEM));
	k_attn_dq_ds_wg<<<gr, MM_THREADS, WG_DQ_SMEM, st>>>(dq, NULL, dsg, qt + 2 * nt, T, H, window,
							    scale);
	CUDA_CK("attn_bwd", cudaGetLastError());
	cuda_scratch_free(qt, ntb);
	cuda_scratch_free(dsg, nds);
	cuda_scratch_free(cp, nb);
}

static const char *const var_names[ATTN_VAR_N] = { "mma", "wg" };

extern "C" const char *attn_variant_name(enum attn_variant v)
{
	return (unsigned)v < ATTN_VAR_N ? var_names[v] : "?";
}

extern "C" int attn_variant_runs_here(enum attn_variant v)
{
	if (v != ATTN_VAR_WG)
		return 1;
	int dev = 0;
	cudaDeviceProp pr;
	CUDA_CK("attn_variant", cudaGetDevice(&dev));
	CUDA_CK("attn_variant", cudaGetDeviceProperties(&pr, dev));
	return pr.major == 9 && pr.minor == 0;
}

/* the kernels' tile bounds need window <= T (the same keys) */
static int64_t clamp_window(int64_t window, int T)
{
	return window > T ? T : window;
}

static void runs_here_or_abort(enum attn_variant v)
{
	if (!attn_variant_runs_here(v)) {
		fprintf(stderr, "attn_variant: %s needs a compute capability 9.0 device (wgmma)\n",
			attn_variant_name(v));
		abort();
	}
}

extern "C" void attn_variant_fwd(enum attn_variant var, float *y, float *lse, const float *q,
				 const float *k, const float *v, int B, int T, int H,
				 int64_t window, float scale)
{
	runs_here_or_abort(var);
	window = clamp_window(window, T);
	switch (var) {
	case ATTN_VAR_MMA:
		attn_fwd_mma_launch(y, NULL, lse, q, k, v, B, T, H, MM_D, window, scale, NULL);
		break;
	case ATTN_VAR_WG:
		fwd_wg(y, lse, q, k, v, B, T, H, window, scale);
		break;
	default:
		fprintf(stderr, "attn_variant: no variant %d\n", (int)var);
		abort();
	}
}

extern "C" void attn_variant_bwd(enum attn_variant var, float *dq, float *dk, float *dv,
				 const float *dy, const float *q, const float *k, const float *v,
				 const float *y, const float *lse, int B, int T, int H,
				 int64_t window, float scale)
{
	runs_here_or_abort(var);
	window = clamp_window(window, T);
	size_t nd = (size_t)B * T * H * sizeof(float);
	float *Dd = (float *)cuda_scratch_alloc("attn_bwd", nd);
	attn_rowdot_launch(Dd, dy, NULL, y, NULL, B, T, H, MM_D);
	void *const none[3] = { NULL, NULL, NULL };
	switch (var) {
	case ATTN_VAR_MMA:
		attn_bwd_mma_launch(dq, dk, dv, none, dy, NULL, q, k, v, Dd, lse, B, T, H, MM_D,
				    window, scale, NULL);
		break;
	case ATTN_VAR_WG:
		bwd_wg(dq, dk, dv, dy, q, k, v, Dd, lse, B, T, H, window, scale);
		break;
	default:
		fprintf(stderr, "attn_variant: no variant %d\n", (int)var);
		abort();
	}
	cuda_scratch_free(Dd, nd);
}

extern "C" void attn_variant_sync(void)
{
	CUDA_CK("attn_variant", cudaStreamSynchronize(cuda_stream()));
}
#endif /* !SUPKIT_EMU || SUPKIT_EMU_RT */
