/* attention_mma.cu: the sliding-window causal attention of kernels/attention.cu
 * for head width 128 on tensor cores through mma.sync (m16n8k16, bf16
 * inputs, fp32 accumulation) with the scores, probabilities and output
 * accumulators held in registers: FlashAttention-2's layout, where
 * kernels/attention_tc.cu (WMMA) passes every score tile and the output
 * through shared memory.
 *
 * q, k, v (and dy) are rounded to bf16 copies first (one pass each, nearest
 * even: the same values the WMMA kernels round per tile); tiles then move
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
 *            from the dS tiles the dK, dV kernel kept (the default: 5
 *            tile products a pair in the backward, not 7),
 *            or (SUPKIT_CUDA_ATTN_DS=0) recomputing S, P, dP = dY V^T and
 *            dS first.
 * Rounding points as in attention_tc.cu: q, k, v, dy, P and dS in bf16,
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
 * The backend's default for head width 128 (SUPKIT_CUDA_ATTN=mma). On an
 * H200 (2026-11-29): 102-108 TFLOP/s forward and 114-123 backward at B 64,
 * T 2048, H 4 (the WMMA kernels 58-61 and 48-52); the kept dS, the bf16
 * reads and writes of q, k, v, y and their gradients and the heavy-first
 * tile order came after that run (kernels/README.md says what ran where).
 * 255 registers a thread in dK/dV, 226-242 in the others, no spills
 * (k_attn_dq_ds_mma: 128; nvcc 13, sm_90a).
 * SUPKIT_CUDA_ATTN=mma2 (off by default; checked on the emulated device):
 * k_attn_fwd_mma2, the forward with 32 rows a warp (FlashAttention-2's
 * split for this head width), so that a K or V fragment read from shared
 * memory serves two mma row tiles; 255 registers and 4 bytes of spill
 * stores (nvcc 13, sm_90a; P is rounded to bf16 fragments before
 * O += P V, so that the fp32 P dies first); the backward stays mma's.
 * SUPKIT_CUDA_ATTN=wg (off by default; checked on the emulated device):
 * k_attn_fwd_wg, k_attn_dkdv_wg
 * and k_attn_dq_ds_wg, the forward, the dK, dV kernel and dQ from the kept
 * dS on Hopper's asynchronous warpgroup MMA (wgmma; their sections below;
 * dQ recomputed, SUPKIT_CUDA_ATTN_DS=0, stays mma's).
 * Left out: head widths other than 128 (the fp32 kernels), the
 * recomputing dQ on wgmma, TMA and warp specialisation (FlashAttention-3's producer and
 * consumer warpgroups), one backward kernel with dQ
 * summed by atomics (not reproducible; dQ reads the kept dS instead, a
 * second pass over 8 KiB a tile pair).
 * Reference: Dao, FlashAttention-2 (2023), Algorithms 1 and 2 and section
 * 3.3 (warp partitioning); PTX ISA, Warp-level matrix instructions
 * (mma.m16n8k16, ldmatrix) and cp.async.
 */
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

/* wgmma exists in the sm_90a code only (nvcc -arch=sm_90a also makes
 * compute_90 PTX, where these trap; the backend refuses SUPKIT_CUDA_ATTN=wg
 * on a device other than 9.0 at setup, so that PTX never runs them) */
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
__device__ static void tile_load(bf *dst, const bf *src, int64_t ld, int r0, int T)
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
 * The launches make ceil(T / rows) blocks in x; counting from T rather than
 * gridDim.x leaves k_attn_fwd_mma2 4 bytes of spill where it would have
 * 20. */
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

/* ---- forward, 32 rows a warp (SUPKIT_CUDA_ATTN=mma2) ----
 * A block per (128 queries, b, h), 4 warps of 32 rows (two 16-row m-tiles
 * each, FlashAttention-2's split for head width 128): each K or V fragment
 * read from shared memory feeds both m-tiles' mma, half the shared-memory
 * traffic of k_attn_fwd_mma per product, and a key tile is loaded once per
 * 128 queries. Q's fragments are read from shared memory at each k step
 * (two m-tiles of registers would not fit). The arithmetic per output
 * element is k_attn_fwd_mma's, in the same order, with the same key tiles
 * where the window is a multiple of 64 or covers T (the benchmark's: the two
 * are then equal element by element, which test_cuda_ops checks; otherwise
 * a 128-row block's tiles start where the first of its 64-row halves' do,
 * so the softmax's running maxima, and the bf16 roundings of P, can differ);
 * a warp skips a key tile none of its rows sees (the tail of the diagonal,
 * the head of the window): exact, as those rows' statistics and sums would
 * not move. */
#define M2_R 128   /* queries a block */

__global__ void __launch_bounds__(MM_THREADS)
k_attn_fwd_mma2(float *y, bf *yb, float *lse, const bf *q, const bf *k, const bf *v, int T, int H,
		int64_t window, float scale)
{
	DYN_SMEM(smraw);
	bf *Qs = (bf *)smraw, *Ks = Qs + 2 * MM_TILE, *Vs = Ks + 2 * MM_TILE;
	const qblock qb = query_block(M2_R, T, H, window);
	const int bh = qb.bh, q0 = qb.q0, kfirst = qb.kfirst, ntile = qb.ntile;
	const int64_t ld = qb.ld, base = qb.base;
	const int w = threadIdx.x >> 5;
	const float sl2 = scale * LOG2E;
	const int wr = q0 + w * 32;   /* this warp's first row; Qs rows w * 32 .. */

	tile_load(Qs, q + base, ld, q0, T);
	tile_load(Qs + MM_TILE, q + base, ld, q0 + MM_R, T);
	tile_load(Ks, k + base, ld, kfirst, T);
	tile_load(Vs, v + base, ld, kfirst, T);
	cp_commit();

	float o[2][16][4], m[2][2], l[2][2];
#pragma unroll
	for (int mt = 0; mt < 2; mt++) {
		zero_frags<16>(o[mt]);
#pragma unroll
		for (int i = 0; i < 2; i++) {
			m[mt][i] = -INFINITY;
			l[mt][i] = 0.f;
		}
	}
	for (int it = 0; it < ntile; it++) {
		const int s0 = kfirst + it * MM_R, cur = it & 1;
		const bf *Kc = Ks + cur * MM_TILE, *Vc = Vs + cur * MM_TILE;
		pair_next(Ks, Vs, k + base, v + base, ld, it, ntile, s0, T);   /* the next tile flies */
		__syncthreads();
		/* no row of this warp sees a key of the tile: rows past T, keys
		 * past the diagonal or before every row's window */
		const bool none = wr >= T || s0 > min(wr + 31, T - 1) ||
				  (int64_t)s0 + MM_R - 1 < (int64_t)wr - window;
		if (!none) {
			/* S = Q K^T, both m-tiles per K fragment, one k step at a
			 * time (the k steps of each product in k_attn_fwd_mma's order) */
			float s[2][8][4];
			zero_frags<8>(s[0]);
			zero_frags<8>(s[1]);
#pragma unroll
			for (int kk = 0; kk < 8; kk++) {
				uint32_t a[2][4];
#pragma unroll
				for (int mt = 0; mt < 2; mt++)
					frag_a(a[mt], Qs, w * 32 + mt * 16, kk * 16);
#pragma unroll
				for (int j = 0; j < 8; j++) {
					uint32_t bb[2];
					frag_bt1(bb, Kc, j * 8, kk * 16);
#pragma unroll
					for (int mt = 0; mt < 2; mt++)
						mma(s[mt][j], a[mt], bb[0], bb[1]);
				}
			}
			/* the online softmax, per m-tile as k_attn_fwd_mma */
#pragma unroll
			for (int mt = 0; mt < 2; mt++) {
				const int r0 = wr + mt * 16;
				softmax_tile(s[mt], m[mt], l[mt], o[mt],
					     all_vis(r0, r0 + 15, s0, s0 + MM_R - 1, T, window), r0, s0, T,
					     window, sl2);
			}
			/* P rounded to bf16 A fragments first (half the registers of
			 * the fp32 P, which dies here), then O += P V, both m-tiles
			 * per V fragment */
			uint32_t pa[2][4][4];
#pragma unroll
			for (int mt = 0; mt < 2; mt++)
#pragma unroll
				for (int kk = 0; kk < 4; kk++) {
					afrag(pa[mt][kk], s[mt], kk);
				}
#pragma unroll
			for (int kk = 0; kk < 4; kk++) {
#pragma unroll
				for (int nb = 0; nb < 16; nb += 2) {
					uint32_t bb[4];
					frag_b(bb, Vc, kk * 16, nb * 8);
#pragma unroll
					for (int mt = 0; mt < 2; mt++) {
						mma(o[mt][nb], pa[mt][kk], bb[0], bb[1]);
						mma(o[mt][nb + 1], pa[mt][kk], bb[2], bb[3]);
					}
				}
			}
		}
		__syncthreads();   /* every warp is done with this buffer before it is refilled */
	}
#pragma unroll
	for (int mt = 0; mt < 2; mt++) {
		softmax_end(lse + (int64_t)bh * T, o[mt], m[mt], l[mt], wr + mt * 16, T, sl2);
		store_rows(y ? y + base : NULL, yb ? yb + base : NULL, o[mt], 1.f, ld, wr + mt * 16, T);
	}
}

/* ---- forward on wgmma (SUPKIT_CUDA_ATTN=wg) ----
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

/* ---- the backward's kept dS (SUPKIT_CUDA_ATTN_DS=1, the default) ----
 * k_attn_dkdv_mma forms dS^T for every (key tile, query tile) pair it
 * visits. Given a buffer (dsg), it also stores the bf16 dS^T it multiplies
 * into dK, the same bits, and k_attn_dq_ds_mma then forms dQ = scale dS K
 * from those tiles alone. That is one tile product per pair where
 * k_attn_dq_mma first recomputes S, P and dP (three products and the
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

/* ---- backward: dK, dV on wgmma (SUPKIT_CUDA_ATTN=wg) ----
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

/* ---- backward: dQ ---- */

__global__ void __launch_bounds__(MM_THREADS)
k_attn_dq_mma(float *dq, bf *dqb, const bf *dy, const bf *q, const bf *k, const bf *v,
	      const float *lse, const float *Dd, int T, int H, int64_t window, float scale)
{
	DYN_SMEM(smraw);
	bf *Qs = (bf *)smraw, *Gs = Qs + MM_TILE, *Ks = Gs + MM_TILE, *Vs = Ks + 2 * MM_TILE;
	const qblock qb = query_block(MM_R, T, H, window);
	const int bh = qb.bh, q0 = qb.q0, kfirst = qb.kfirst, ntile = qb.ntile;
	const int64_t ld = qb.ld, base = qb.base;
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int c = lane & 3, g = lane >> 2;

	tile_load(Qs, q + base, ld, q0, T);
	tile_load(Gs, dy + base, ld, q0, T);
	tile_load(Ks, k + base, ld, kfirst, T);
	tile_load(Vs, v + base, ld, kfirst, T);
	cp_commit();
	const int tr[2] = { q0 + w * 16 + g, q0 + w * 16 + g + 8 };
	const float sl2 = scale * LOG2E;   /* P = exp2(s scale log2 e - lse log2 e) */
	float L[2], Dr[2];
#pragma unroll
	for (int i = 0; i < 2; i++) {
		L[i] = tr[i] < T ? lse[(int64_t)bh * T + tr[i]] * LOG2E : 0.f;
		Dr[i] = tr[i] < T ? Dd[(int64_t)bh * T + tr[i]] : 0.f;
	}
	float gq[16][4];
	zero_frags<16>(gq);
	for (int it = 0; it < ntile; it++) {
		const int s0 = kfirst + it * MM_R, cur = it & 1;
		const bf *Kc = Ks + cur * MM_TILE, *Vc = Vs + cur * MM_TILE;
		pair_next(Ks, Vs, k + base, v + base, ld, it, ntile, s0, T);
		__syncthreads();
		float p[8][4], ds[8][4];
		prod_abt(p, NULL, Qs, w * 16, Kc);    /* S */
		if (all_vis(q0 + w * 16, q0 + w * 16 + 15, s0, s0 + MM_R - 1, T, window)) {
#pragma unroll
			for (int j = 0; j < 8; j++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					p[j][e] = exp2f(fmaf(p[j][e], sl2, -L[e >> 1]));
		} else {
#pragma unroll
			for (int j = 0; j < 8; j++)
#pragma unroll
				for (int e = 0; e < 4; e++) {
					int i = e >> 1, key = s0 + j * 8 + 2 * c + (e & 1);
					p[j][e] = attn_visible(tr[i], key, T, window)
							  ? exp2f(fmaf(p[j][e], sl2, -L[i])) : 0.f;
				}
		}
		prod_abt(ds, NULL, Gs, w * 16, Vc);   /* dP = dY V^T */
#pragma unroll
		for (int j = 0; j < 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				ds[j][e] = p[j][e] * (ds[j][e] - Dr[e >> 1]);
		prod_px(gq, ds, Kc);                  /* dQ += dS K */
		__syncthreads();
	}
	store_rows(dq ? dq + base : NULL, dqb ? dqb + base : NULL, gq, scale, ld, q0 + w * 16, T);
}

/* ---- backward: dQ from the kept dS ----
 * A block per (64 queries: tile i, b, h), 4 warps of 16 rows: dQ = scale
 * sum over key tiles j = jlo(i) .. i of dS_ij K_j, with dS_ij read from its
 * slot (dS^T row-major: ldmatrix .trans gives dS's A fragments) and K_j, the
 * next tile pair's loads in flight (two buffers each). The key tiles in
 * k_attn_dq_mma's order where the window is a multiple of 64 or covers T
 * (then its kfirst is aligned) with the same dS bits: dQ equal to its dQ
 * element by element (test_mma_emu). */
__device__ static void ds_tile_load(bf *dst, const bf *src)
{
#pragma unroll
	for (int u = 0; u < DS_T * DS_T / 8 / MM_THREADS; u++) {
		int e = threadIdx.x + u * MM_THREADS, r = e >> 3, c = (e & 7) * 8;
		cp16(dst + r * DS_LD + c, src + r * DS_T + c, true);
	}
}

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

/* dQ from the kept dS on wgmma (SUPKIT_CUDA_ATTN=wg): k_attn_dq_ds_mma's
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

static size_t mm_smem_dkdv(void)
{
	return (size_t)6 * MM_TILE * sizeof(bf) + (size_t)4 * MM_R * sizeof(float);
}

static size_t mm_smem_dq(void)
{
	return (size_t)6 * MM_TILE * sizeof(bf);
}

static size_t mm_smem_dq_ds(void)
{
	return (size_t)(2 * MM_TILE + 2 * DS_T * DS_LD) * sizeof(bf);
}

#if !defined(SUPKIT_EMU) || defined(SUPKIT_EMU_RT)   /* test_mma_emu launches the kernels itself */
/* bf16 copies (nearest even) of n-element fp32 tensors, one scratch block */
static bf *mm_cast(const char *op, const float *const *src, int cnt, int64_t n, size_t *bytes)
{
	*bytes = (size_t)cnt * (size_t)n * sizeof(bf);
	bf *p = (bf *)cuda_scratch_alloc(op, *bytes);
	for (int i = 0; i < cnt; i++)
		cuda_cast_bf16(p + (size_t)i * n, src[i], n);
	return p;
}

/* g = q's, k's and v's bf16 copies: the caller's (qkvb) or cp's, n apart */
static void qkv_of(const bf **g, const void *const *qkvb, const bf *cp, int64_t n)
{
	for (int i = 0; i < 3; i++)
		g[i] = qkvb ? (const bf *)qkvb[i] : cp + i * n;
}

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

void attn_fwd_mma2_launch(float *y, void *yb, float *lse, const float *q, const float *k,
			  const float *v, int B, int T, int H, int D, int64_t window, float scale,
			  const void *const *qkvb)
{
	fwd_run(k_attn_fwd_mma2, M2_R, (size_t)6 * MM_TILE * sizeof(bf), y, yb, lse, q, k, v, B, T,
		H, D, window, scale, qkvb);
}

/* dst = src (B, T, H, 128) transposed per (b, h) by k_attn_vt */
static void vt_copy(bf *dst, const bf *src, int B, int T, int H, cudaStream_t st)
{
	int64_t Tp = wg_tp(T);
	dim3 gt((unsigned)(Tp / MM_R), (unsigned)(B * H));
	k_attn_vt<<<gt, MM_THREADS, MM_TILE * sizeof(bf), st>>>(dst, src, T, H, Tp);
}

void attn_fwd_wg_launch(float *y, void *yb, float *lse, const float *q, const float *k,
			const float *v, int B, int T, int H, int D, int64_t window, float scale,
			const void *const *qkvb)
{
	dim3 gr = attn128_grid("attn_fwd", B, T, H, D);
	int64_t n = (int64_t)B * T * H * D, Tp = wg_tp(T);
	const float *src[3] = { q, k, v };
	size_t nb = 0;
	bf *cp = qkvb ? NULL : mm_cast("attn_fwd", src, 3, n, &nb);   /* else the caller's */
	const bf *g[3];
	qkv_of(g, qkvb, cp, n);
	cudaStream_t st = cuda_stream();
	size_t nvt = (size_t)B * H * MM_D * (size_t)Tp * sizeof(bf);
	bf *vt = (bf *)cuda_scratch_alloc("attn_fwd", nvt);
	vt_copy(vt, g[2], B, T, H, st);
	CUDA_CK("attn_fwd", cudaFuncSetAttribute(k_attn_fwd_wg,
						 cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
	k_attn_fwd_wg<<<gr, MM_THREADS, WG_SMEM, st>>>(y, (bf *)yb, lse, g[0], g[1], vt, T, H,
						       window, scale);
	CUDA_CK("attn_fwd", cudaGetLastError());
	cuda_scratch_free(vt, nvt);
	cuda_scratch_free(cp, nb);
}

void attn_bwd_mma_launch(float *dq, float *dk, float *dv, void *const *gb, const float *dy,
			 const void *dyb, const float *q, const float *k, const float *v,
			 const float *Dd, const float *lse, int B, int T, int H, int D,
			 int64_t window, float scale, const void *const *qkvb, int keep_ds, int wg)
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
	size_t s1 = mm_smem_dkdv(), s2 = keep_ds ? mm_smem_dq_ds() : mm_smem_dq();
	/* the kept dS tiles (keep_ds): B H ds_slots x 8 KiB, freed with the op */
	size_t nds = keep_ds ? (size_t)B * H * (size_t)ds_slots(T, window) * DS_T * DS_T * sizeof(bf)
			     : 0;
	bf *dsg = keep_ds ? (bf *)cuda_scratch_alloc("attn_bwd", nds) : NULL;
	/* wg: transposed copies of q and dy (dK, dV on wgmma) and, with the
	 * kept dS, of k (dQ on wgmma) */
	size_t nt = wg ? (size_t)B * H * MM_D * (size_t)wg_tp(T) : 0, ntb = (keep_ds ? 3 : 2) * nt * sizeof(bf);
	bf *qt = wg ? (bf *)cuda_scratch_alloc("attn_bwd", ntb) : NULL;
	if (wg) {
		vt_copy(qt, gq, B, T, H, st);
		vt_copy(qt + nt, gdy, B, T, H, st);
		if (keep_ds)
			vt_copy(qt + 2 * nt, gk, B, T, H, st);
		CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dkdv_wg,
							 cudaFuncAttributeMaxDynamicSharedMemorySize,
							 WG_BWD_SMEM));
		k_attn_dkdv_wg<<<gr, MM_THREADS, WG_BWD_SMEM, st>>>(dk, dv, (bf *)gb[1], (bf *)gb[2], dsg,
								    gdy, gq, gk, gv, qt, qt + nt, lse,
								    Dd, T, H, window, scale);
	} else {
		CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dkdv_mma,
							 cudaFuncAttributeMaxDynamicSharedMemorySize,
							 (int)s1));
		k_attn_dkdv_mma<<<gr, MM_THREADS, s1, st>>>(dk, dv, (bf *)gb[1], (bf *)gb[2], dsg, gdy,
							    gq, gk, gv, lse, Dd, T, H, window, scale);
	}
	if (keep_ds && wg) {
		CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dq_ds_wg,
							 cudaFuncAttributeMaxDynamicSharedMemorySize,
							 WG_DQ_SMEM));
		k_attn_dq_ds_wg<<<gr, MM_THREADS, WG_DQ_SMEM, st>>>(dq, (bf *)gb[0], dsg, qt + 2 * nt, T,
								    H, window, scale);
	} else if (keep_ds) {
		CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dq_ds_mma,
							 cudaFuncAttributeMaxDynamicSharedMemorySize,
							 (int)s2));
		k_attn_dq_ds_mma<<<gr, MM_THREADS, s2, st>>>(dq, (bf *)gb[0], dsg, gk, T, H, window,
							     scale);
	} else {
		CUDA_CK("attn_bwd", cudaFuncSetAttribute(k_attn_dq_mma,
							 cudaFuncAttributeMaxDynamicSharedMemorySize,
							 (int)s2));
		k_attn_dq_mma<<<gr, MM_THREADS, s2, st>>>(dq, (bf *)gb[0], gdy, gq, gk, gv, lse, Dd, T,
							  H, window, scale);
	}
	CUDA_CK("attn_bwd", cudaGetLastError());
	cuda_scratch_free(qt, ntb);
	cuda_scratch_free(dsg, nds);
	cuda_scratch_free(cp, nb);
}
#endif /* !SUPKIT_EMU || SUPKIT_EMU_RT */
