/* attention_mma.cuh: the device helpers of the mma.sync attention kernels
 * (kernels/attention_mma.cu, which describes the layouts and the
 * arithmetic): the PTX wrappers (cp.async, ldmatrix, mma.m16n8k16; on the
 * SIMT emulator of tests/emu with SUPKIT_EMU), tile loads, fragment reads,
 * tile products, the online softmax step and its end, a block's place, the
 * kept dS's slots and the backward's P^T and dS^T; and the launchers' host
 * helpers (bf16 copies of the inputs). No launches (tests/emu/launch.sed
 * rewrites those of .cu files only). Included by
 * kernels/attention_mma.cu and by the variants of dev/cuda, which are not
 * in the product. Everything here is static inline: each file that
 * includes it gets its own copy.
 * Reference: PTX ISA, Warp-level matrix instructions (mma.m16n8k16,
 * ldmatrix) and cp.async; Dao, FlashAttention-2 (2023), Algorithm 1.
 */
#ifndef SUPKIT_ATTENTION_MMA_CUH
#define SUPKIT_ATTENTION_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kernels/cuda_internal.h"

typedef __nv_bfloat16 bf;

#define MM_D 128
#define MM_R 64           /* rows of a tile */
#define MM_LD 136         /* bf16 row stride in shared memory (272 bytes: ldmatrix rows
			     fall in distinct 16-byte bank groups) */
#define MM_THREADS 128
#define MM_TILE (MM_R * MM_LD)
#define DS_T 64           /* a kept dS tile: 64 keys x 64 queries, row-major (8 KiB) */
#define DS_LD 72          /* its row stride in shared memory (144 bytes) */
static_assert(MM_R == 64, "attn128_grid makes blocks of 64 rows");

/* ---- PTX wrappers ----
 * With SUPKIT_EMU the source is compiled as host C++ for the SIMT emulator
 * of tests/emu (make test runs these kernels there: test_mma_emu). */

#ifdef SUPKIT_EMU
__device__ static inline void cp16(void *dst, const void *src, bool valid)
{
	emu_cp16(dst, src, valid);
}
__device__ static inline void cp_commit(void) { emu_cp_commit(); }
template <int N> __device__ static inline void cp_wait(void) { emu_cp_wait(N); }
__device__ static inline void ldsm4(uint32_t *r, const bf *p) { emu_ldsm(r, p, 4, false); }
__device__ static inline void ldsm2(uint32_t *r, const bf *p) { emu_ldsm(r, p, 2, false); }
__device__ static inline void ldsm4t(uint32_t *r, const bf *p) { emu_ldsm(r, p, 4, true); }
__device__ static inline void mma(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
	emu_mma(c, a, b0, b1);
}
__device__ static inline unsigned smem_addr(const void *p) { return emu_smem_addr(p); }
#else

__device__ static inline unsigned smem_addr(const void *p)
{
	return (unsigned)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared, zero-filled when !valid (src not read) */
__device__ static inline void cp16(void *dst, const void *src, bool valid)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
		     "l"(src), "r"(valid ? 16 : 0));
}

__device__ static inline void cp_commit(void)
{
	asm volatile("cp.async.commit_group;\n" ::);
}

template <int N> __device__ static inline void cp_wait(void)
{
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ static inline void ldsm4(uint32_t *r, const bf *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(smem_addr(p)));
}

__device__ static inline void ldsm2(uint32_t *r, const bf *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
		     : "=r"(r[0]), "=r"(r[1])
		     : "r"(smem_addr(p)));
}

__device__ static inline void ldsm4t(uint32_t *r, const bf *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(smem_addr(p)));
}

/* c (16 x 8) += a (16 x 16) b (16 x 8) */
__device__ static inline void mma(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#endif


__device__ static inline uint32_t pack(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
	return *(uint32_t *)&v;
}

/* The A fragment (16 x 16, bf16, nearest even) of k step kk of a 16 x 64
 * product whose fp32 C fragments are c[8][4]: blocks 2 kk and 2 kk + 1,
 * packed in pairs (the C-to-A layout the header describes). */
__device__ static inline void afrag(uint32_t *a, const float (*c)[4], int kk)
{
	a[0] = pack(c[2 * kk][0], c[2 * kk][1]);
	a[1] = pack(c[2 * kk][2], c[2 * kk][3]);
	a[2] = pack(c[2 * kk + 1][0], c[2 * kk + 1][1]);
	a[3] = pack(c[2 * kk + 1][2], c[2 * kk + 1][3]);
}

/* ---- tiles ---- */

/* rows [r0, r0 + 64) of a (B,T,H,128) bf16 tensor at src (= its (b, h)
 * origin, row stride ld elements) into dst (stride MM_LD); rows past T
 * are zero. Asynchronous: the caller commits and waits. */
__device__ static inline void tile_load(bf *dst, const bf *src, int64_t ld, int r0, int T)
{
#pragma unroll
	for (int u = 0; u < MM_R * MM_D / 8 / MM_THREADS; u++) {
		int e = threadIdx.x + u * MM_THREADS, r = e >> 4, c = (e & 15) * 8, t = r0 + r;
		bool ok = t < T;
		cp16(dst + r * MM_LD + c, ok ? src + (int64_t)t * ld + c : src, ok);
	}
}

/* Before computing on tile `it` of ntile (its rows from r0; buffers it & 1
 * of A and B): start the loads of tile it + 1 of a and b (rows r0 + 64)
 * into the other buffers, then wait for tile it's own loads. The caller
 * synchronises the block next. */
__device__ static inline void pair_next(bf *A, bf *B, const bf *a, const bf *b, int64_t ld,
					int it, int ntile, int r0, int T)
{
	if (it + 1 < ntile) {
		const int nx = (it & 1) ^ 1;
		tile_load(A + nx * MM_TILE, a, ld, r0 + MM_R, T);
		tile_load(B + nx * MM_TILE, b, ld, r0 + MM_R, T);
		cp_commit();
		cp_wait<1>();
	} else {
		cp_wait<0>();
	}
}

/* The A fragment of rows [r, r + 16), columns [k, k + 16) of a tile. */
__device__ static inline void frag_a(uint32_t *a, const bf *tile, int r, int k)
{
	int lane = threadIdx.x & 31;
	ldsm4(a, tile + (r + (lane & 7) + ((lane >> 3) & 1) * 8) * MM_LD + k + (lane >> 4) * 8);
}

/* B fragments for X^T where X's rows [n, n + 8) are the n index and its
 * columns [k, k + 32) the k index (k steps k and k + 16): b[0..1], b[2..3]. */
__device__ static inline void frag_bt(uint32_t *b, const bf *tile, int n, int k)
{
	int lane = threadIdx.x & 31;
	ldsm4(b, tile + (n + (lane & 7)) * MM_LD + k + (lane >> 3) * 8);
}

/* The B fragment for X^T of one k step: X's rows [n, n + 8), columns
 * [k, k + 16): b[0..1]. */
__device__ static inline void frag_bt1(uint32_t *b, const bf *tile, int n, int k)
{
	int lane = threadIdx.x & 31;
	ldsm2(b, tile + (n + (lane & 7)) * MM_LD + k + ((lane >> 3) & 1) * 8);
}

/* B fragments for X where X's rows [k, k + 16) are the k index and its
 * columns [n, n + 16) two n blocks: b[0..1] for columns n, b[2..3] for n + 8. */
__device__ static inline void frag_b(uint32_t *b, const bf *tile, int k, int n)
{
	int lane = threadIdx.x & 31;
	ldsm4t(b, tile + (k + (lane & 7) + ((lane >> 3) & 1) * 8) * MM_LD + n + (lane >> 4) * 8);
}

/* n accumulator fragments (C fragments of mma, 4 values each) set to 0 */
template <int N> __device__ static inline void zero_frags(float (*a)[4])
{
#pragma unroll
	for (int j = 0; j < N; j++)
#pragma unroll
		for (int e = 0; e < 4; e++)
			a[j][e] = 0.f;
}

/* acc (16 x 64, 8 blocks) = A B^T with A's 16 rows (fragments from
 * shared, rows ra of ta) or aq (eight k steps in registers) and the 64
 * rows of tb as B^T, over the 128 columns. */
__device__ static inline void prod_abt(float (*acc)[4], const uint32_t (*aq)[4], const bf *ta,
				       int ra, const bf *tb)
{
	zero_frags<8>(acc);
#pragma unroll
	for (int kk = 0; kk < 8; kk += 2) {
		uint32_t a0[4], a1[4];
		if (!aq) {
			frag_a(a0, ta, ra, kk * 16);
			frag_a(a1, ta, ra, kk * 16 + 16);
		}
#pragma unroll
		for (int j = 0; j < 8; j++) {
			uint32_t b[4];
			frag_bt(b, tb, j * 8, kk * 16);
			mma(acc[j], aq ? aq[kk] : a0, b[0], b[1]);
			mma(acc[j], aq ? aq[kk + 1] : a1, b[2], b[3]);
		}
	}
}

/* out (16 x 128, 16 blocks) += A X over one 16-wide k step (kk) of the
 * 64 x 128 tile tx, A's fragment given. */
__device__ static inline void prod_ax(float (*out)[4], const uint32_t *a, const bf *tx, int kk)
{
#pragma unroll
	for (int nb = 0; nb < 16; nb += 2) {
		uint32_t b[4];
		frag_b(b, tx, kk * 16, nb * 8);
		mma(out[nb], a, b[0], b[1]);
		mma(out[nb + 1], a, b[2], b[3]);
	}
}

/* out (16 x 128, 16 blocks) += P X with P (16 x 64) given as fp32 C
 * fragments p[8][4] (rounded to bf16 here) and X the 64 x 128 tile tx.
 * keep: NULL, or where the rounded P goes as well, row-major 64 x 64
 * (the kept dS): row g, column 2c of the warp's 16 rows (this lane's first
 * element; g = lane / 4, c = lane % 4). */
__device__ static inline void prod_px(float (*out)[4], const float (*p)[4], const bf *tx,
				      bf *keep = NULL)
{
#pragma unroll
	for (int kk = 0; kk < 4; kk++) {
		uint32_t a[4];
		afrag(a, p, kk);
		if (keep) {   /* A's regs: (row g | g + 8, cols 16 kk + 2c | + 8 + 2c) */
#pragma unroll
			for (int r = 0; r < 4; r++)
				*(uint32_t *)(keep + 8 * (r & 1) * DS_T + kk * 16 + 8 * (r >> 1)) = a[r];
		}
		prod_ax(out, a, tx, kk);
	}
}

/* Every query of [t_lo, t_hi] sees every key of [s_lo, s_hi] (then the
 * per-element mask is skipped: most tiles of a long window). */
__device__ static inline bool all_vis(int t_lo, int t_hi, int s_lo, int s_hi, int T,
				      int64_t window)
{
	return t_hi < T && s_hi <= t_lo && (int64_t)s_lo >= (int64_t)t_hi - window;
}

#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* acc (16 x 128) times s into rows [r0, r0 + 16) of dst (fp32, stride ld),
 * rows < T: lane (g, c) writes (row g / g+8, columns 8 nb + 2c, +1); with
 * db, the same values rounded to bf16 (nearest even) at the same places of
 * db (the output's cast for the GEMMs that read it, kept by the backend);
 * dst NULL: db alone (bf16 storage, backend.h attn_bf16). */
__device__ static inline void store_rows(float *dst, bf *db, const float (*acc)[4], float s,
					 int64_t ld, int r0, int T)
{
	int lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
	int ta = r0 + g, tb = ta + 8;
#pragma unroll
	for (int nb = 0; nb < 16; nb++) {
		int col = nb * 8 + 2 * c;
		float v[4] = { acc[nb][0] * s, acc[nb][1] * s, acc[nb][2] * s, acc[nb][3] * s };
		if (ta < T) {
			if (dst)
				*(float2 *)(dst + (int64_t)ta * ld + col) = make_float2(v[0], v[1]);
			if (db)
				*(__nv_bfloat162 *)(db + (int64_t)ta * ld + col) = __floats2bfloat162_rn(v[0], v[1]);
		}
		if (tb < T) {
			if (dst)
				*(float2 *)(dst + (int64_t)tb * ld + col) = make_float2(v[2], v[3]);
			if (db)
				*(__nv_bfloat162 *)(db + (int64_t)tb * ld + col) = __floats2bfloat162_rn(v[2], v[3]);
		}
	}
}

/* ---- a block's place ---- */

/* The query tile of `rows` rows of a block whose work grows with its tile
 * (the forward's and dQ's: a later tile sees more keys): the last first.
 * A grid's blocks start in order of blockIdx.x within a (b, h), so the
 * heaviest start first and the light ones fill the last wave, as
 * FlashAttention-2 orders its forward (the dK, dV kernel's key tiles
 * start heaviest first too). Each tile is
 * still done by one block in the same way: the outputs are the same bits.
 * The launches make ceil(T / rows) blocks in x; the order counts from T. */
__device__ static inline int heavy_first(int T, int rows)
{
	return (T + rows - 1) / rows - 1 - (int)blockIdx.x;
}

/* A block of `rows` queries (tile heavy_first) of one (b, h)
 * (blockIdx.y): its first query q0, the (b, h) origin base of the
 * (B,T,H,128) tensors (row stride ld), and the key tiles of 64 its
 * queries see: from kfirst, ntile of them. */
struct qblock {
	int bh, q0, kfirst, ntile;
	int64_t ld, base;
};

__device__ static inline qblock query_block(int rows, int T, int H, int64_t window)
{
	qblock r;
	r.bh = blockIdx.y;
	const int b = r.bh / H, h = r.bh % H;
	r.q0 = heavy_first(T, rows) * rows;
	r.ld = (int64_t)H * MM_D;
	r.base = (int64_t)b * T * r.ld + (int64_t)h * MM_D;
	const int qlast = min(r.q0 + rows, T) - 1;
	r.kfirst = (int)((int64_t)r.q0 - window > 0 ? (int64_t)r.q0 - window : 0);
	r.ntile = (qlast - r.kfirst) / MM_R + 1;
	return r;
}

/* ---- forward ---- */

/* One key tile's step of the online softmax for a warp's 16 query rows
 * (rows t0 + g and t0 + g + 8 of this lane; keys s0 + 8 j + 2 c + (e & 1)),
 * in base 2 as FlashAttention-2 does it: s holds the raw scores q.k; unless
 * the tile is inner (every row sees every key) the hidden ones become -inf,
 * on a path of its own so that the common unmasked tile is straight-line
 * code; the running maximum m stays in raw scores; P = exp2(s sl2 - m sl2)
 * with one fma (sl2 = scale log2 e) replaces s; the sums l and the output
 * accumulators o are rescaled by exp2((m_old - m_new) sl2). A row with no
 * visible key yet keeps m = -inf, P = 0 and its rescale 1. */
__device__ static inline void softmax_tile(float (*s)[4], float *m, float *l, float (*o)[4],
					   bool inner, int t0, int s0, int T, int64_t window,
					   float sl2)
{
	const int lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
	float mx[2] = { -INFINITY, -INFINITY };
	if (inner) {
#pragma unroll
		for (int j = 0; j < 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				mx[e >> 1] = fmaxf(mx[e >> 1], s[j][e]);
	} else {
#pragma unroll
		for (int j = 0; j < 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				int i = e >> 1, key = s0 + j * 8 + 2 * c + (e & 1);
				if (!attn_visible(t0 + g + 8 * i, key, T, window))
					s[j][e] = -INFINITY;
				mx[i] = fmaxf(mx[i], s[j][e]);
			}
	}
	float alpha[2], msc[2];
#pragma unroll
	for (int i = 0; i < 2; i++) {
		mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
		mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
		float mnew = fmaxf(m[i], mx[i]);
		alpha[i] = mnew == -INFINITY ? 1.f : exp2f((m[i] - mnew) * sl2);
		msc[i] = mnew == -INFINITY ? 0.f : mnew * sl2;
		m[i] = mnew;
	}
	float ps[2] = { 0.f, 0.f };
#pragma unroll
	for (int j = 0; j < 8; j++)
#pragma unroll
		for (int e = 0; e < 4; e++) {
			float p = exp2f(fmaf(s[j][e], sl2, -msc[e >> 1]));
			s[j][e] = p;
			ps[e >> 1] += p;
		}
#pragma unroll
	for (int i = 0; i < 2; i++)
		l[i] = l[i] * alpha[i] + ps[i];
#pragma unroll
	for (int nb = 0; nb < 16; nb++) {
		o[nb][0] *= alpha[0];
		o[nb][1] *= alpha[0];
		o[nb][2] *= alpha[1];
		o[nb][3] *= alpha[1];
	}
}

/* The end of a warp's 16 rows: lse (nats) of rows < T from the raw maximum
 * and the sum (the four lanes of a row add their shares), o scaled by 1/l. */
__device__ static inline void softmax_end(float *lse, float (*o)[4], const float *m, float *l,
					  int t0, int T, float sl2)
{
	const int lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
	float inv[2];
#pragma unroll
	for (int i = 0; i < 2; i++) {
		l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
		l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
		inv[i] = 1.f / l[i];
		int t = t0 + g + 8 * i;
		if (c == 0 && t < T)
			lse[t] = (m[i] * sl2 + log2f(l[i])) * LN2;
	}
#pragma unroll
	for (int nb = 0; nb < 16; nb++) {
		o[nb][0] *= inv[0];
		o[nb][1] *= inv[0];
		o[nb][2] *= inv[1];
		o[nb][3] *= inv[1];
	}
}


/* ---- the backward's kept dS ----
 * k_attn_dkdv_mma forms dS^T for every (key tile, query tile) pair it
 * visits. Given a buffer (dsg), it also stores the bf16 dS^T it multiplies
 * into dK, the same bits, and k_attn_dq_ds_mma then forms dQ = scale dS K
 * from those tiles alone. That is one tile product per pair where
 * recomputing dQ (tests/emu/attn_harness.h's k_attn_dq_mma) recomputes S, P and dP (three products and the
 * exponentials): 5 products a pair in the backward, FlashAttention-2's
 * count, instead of 7, for 8 KiB of dS a pair written once and read once.
 * Tiles are 64-aligned on both sides. Query tile i needs key tiles
 * jlo(i) = max(0, i - wt) .. i, wt = ceil(window / 64) (window clamped to T
 * by the launcher), which are exactly the query tiles the dK/dV block of key
 * tile j visits for j in that range. Per (b, h) the tiles lie query tile
 * after query tile: pair (i, j) in slot ds_off(i) + j - jlo(i), and a
 * (b, h) holds ds_off(nt) slots, nt = ceil(T / 64). Each slot is a 64 x 64
 * row-major tile: row = key, column = query; rows or columns past T hold 0. */
__host__ __device__ static inline int64_t ds_off(int64_t i, int64_t wt)
{
	int64_t m = i < wt + 1 ? i : wt + 1;   /* tiles i' < i with min(i', wt) = i' */
	return i + m * (m - 1) / 2 + (i - m) * wt;
}

__host__ __device__ static inline int64_t ds_wt(int64_t window)
{
	return (window + MM_R - 1) / MM_R;
}

/* The slots of one (b, h). */
__host__ __device__ static inline int64_t ds_slots(int T, int64_t window)
{
	return ds_off((T + MM_R - 1) / MM_R, ds_wt(window));
}

/* ---- backward: dK, dV ---- */

/* P^T of a warp's 16 keys (from kr; this lane's ks[0] = kr + g, ks[1] =
 * kr + g + 8) and the 64 queries of a tile from t0 (this lane's t0 + 8 j +
 * 2 c + (e & 1)): s, the raw scores, becomes exp2(s sl2 - L[query]) (L: lse log2 e of the
 * tile's queries), 0 where the key is hidden; an inner tile (every query
 * sees every key) on a path of its own, straight-line code without the
 * mask. */
__device__ static inline void probs_t(float (*s)[4], const float *L, int t0, int kr,
				      const int *ks, int T, int64_t window, float sl2)
{
	const int c = threadIdx.x & 3;
	if (all_vis(t0, t0 + MM_R - 1, kr, kr + 15, T, window)) {
#pragma unroll
		for (int j = 0; j < 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				s[j][e] = exp2f(fmaf(s[j][e], sl2, -L[j * 8 + 2 * c + (e & 1)]));
	} else {
#pragma unroll
		for (int j = 0; j < 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				int qi = j * 8 + 2 * c + (e & 1);
				s[j][e] = attn_visible(t0 + qi, ks[e >> 1], T, window)
						  ? exp2f(fmaf(s[j][e], sl2, -L[qi])) : 0.f;
			}
	}
}

/* dS^T = P^T (dP^T - D[query]) in place of dP^T (dp), in probs_t's layout */
__device__ static inline void dscores_t(float (*dp)[4], const float (*p)[4], const float *Dq)
{
	const int c = threadIdx.x & 3;
#pragma unroll
	for (int j = 0; j < 8; j++)
#pragma unroll
		for (int e = 0; e < 4; e++)
			dp[j][e] = p[j][e] * (dp[j][e] - Dq[j * 8 + 2 * c + (e & 1)]);
}


__device__ static inline void ds_tile_load(bf *dst, const bf *src)
{
#pragma unroll
	for (int u = 0; u < DS_T * DS_T / 8 / MM_THREADS; u++) {
		int e = threadIdx.x + u * MM_THREADS, r = e >> 3, c = (e & 7) * 8;
		cp16(dst + r * DS_LD + c, src + r * DS_T + c, true);
	}
}

#if !defined(SUPKIT_EMU) || defined(SUPKIT_EMU_RT)   /* test_mma_emu launches the kernels itself */
/* bf16 copies (nearest even) of n-element fp32 tensors, one scratch block */
static inline bf *mm_cast(const char *op, const float *const *src, int cnt, int64_t n, size_t *bytes)
{
	*bytes = (size_t)cnt * (size_t)n * sizeof(bf);
	bf *p = (bf *)cuda_scratch_alloc(op, *bytes);
	for (int i = 0; i < cnt; i++)
		cuda_cast_bf16(p + (size_t)i * n, src[i], n);
	return p;
}

/* g = q's, k's and v's bf16 copies: the caller's (qkvb) or cp's, n apart */
static inline void qkv_of(const bf **g, const void *const *qkvb, const bf *cp, int64_t n)
{
	for (int i = 0; i < 3; i++)
		g[i] = qkvb ? (const bf *)qkvb[i] : cp + i * n;
}

#endif /* !SUPKIT_EMU || SUPKIT_EMU_RT */

#endif
