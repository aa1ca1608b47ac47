/* gemm.h: the arithmetic of the emulated cuBLAS GEMMs (tests/emu/cudart.cc):
 * C = alpha op(A) op(B) + beta C with BLAS's column-major arguments, in
 * fp32 (T float) or fp64 (T double), each entry computed in one fixed
 * order:
 *   s = 0; then for p = 0, 1, .., k - 1 in turn: s = s + a_ip b_pj
 *   c_ij = alpha s                  (beta 0: C is not read)
 *   c_ij = alpha s + beta c_ij      (otherwise)
 * every product, sum and scaling rounded to T on its own (no fused
 * multiply-add, no other grouping). An entry's bits therefore depend on
 * its row of op(A), its column of op(B), alpha, beta and its old value
 * only: not on m, n, the leading dimensions, where the entry lies in C,
 * the processor or a BLAS library's choice of kernel, so results that
 * the emulated backend computes through GEMMs of different shapes (a chunk
 * of 4,096 rows or of 16,384) can be compared bit for bit on any x86-64
 * machine.
 *
 * Speed: op(A) is packed in panels of MR rows and op(B) in panels of NR
 * columns (each k long, zero-padded), and a tile of MR x NR entries is
 * summed in vector registers, one entry a lane, each lane in the order
 * above; vector width does not change a lane's arithmetic. The AVX
 * version (8 floats or 4 doubles a register; no FMA instructions in its
 * target) is chosen at run time where the processor has AVX, the SSE2
 * version (every x86-64) otherwise; EMU_GEMM=sse2 forces the latter. The
 * compiler may not contract a product and a sum into a multiply-add: the
 * Makefile compiles cudart.cc (and test_cudart_emu, which includes it) with
 * -ffp-contract=off, and each product is a statement of its own.
 * test_cudart_emu checks both versions against a plain loop in this order. */
#ifndef SUPKIT_EMU_GEMM_H
#define SUPKIT_EMU_GEMM_H

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

namespace emu_gemm {

typedef float v4f __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));
typedef double v2d __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));

/* t (MR x NR, column-major, ld MR) = the sums over p < k, in order, of
 * a[p MR + i] b[p NR + j] */
template <class T, class V, int MR, int NR>
inline __attribute__((always_inline)) void tile(int k, const T *a, const T *b, T *t)
{
	constexpr int L = (int)(sizeof(V) / sizeof(T)), MV = MR / L;
	static_assert(MR % L == 0, "MR a multiple of the vector width");
	V acc[NR][MV];
#pragma GCC unroll 16
	for (int j = 0; j < NR; j++)
#pragma GCC unroll 16
		for (int v = 0; v < MV; v++)
			acc[j][v] = V{};
	for (int p = 0; p < k; p++) {
		V av[MV];
#pragma GCC unroll 16
		for (int v = 0; v < MV; v++)
			memcpy(&av[v], a + (size_t)p * MR + v * L, sizeof(V));
#pragma GCC unroll 16
		for (int j = 0; j < NR; j++) {
			V bv;
			T x = b[(size_t)p * NR + j];
#pragma GCC unroll 16
			for (int l = 0; l < L; l++)
				bv[l] = x;
#pragma GCC unroll 16
			for (int v = 0; v < MV; v++) {
				V pr = av[v] * bv;
				acc[j][v] = acc[j][v] + pr;
			}
		}
	}
#pragma GCC unroll 16
	for (int j = 0; j < NR; j++)
#pragma GCC unroll 16
		for (int v = 0; v < MV; v++)
			memcpy(t + (size_t)j * MR + v * L, &acc[j][v], sizeof(V));
}

/* C = alpha op(A) op(B) + beta C as the header says, op(X) = X^T where
 * its flag is set; m, n, k >= 0 and the leading dimensions valid */
template <class T, class V, int MR, int NR>
inline __attribute__((always_inline)) void run(bool ta, bool tb, int m, int n, int k, T alpha,
					       const T *A, int lda, const T *B, int ldb, T beta,
					       T *C, int ldc)
{
	if (m <= 0 || n <= 0)
		return;
	size_t mp = ((size_t)m + MR - 1) / MR * MR, np = ((size_t)n + NR - 1) / NR * NR;
	size_t K = (size_t)k;
	std::vector<T> ap(mp * K), bp(np * K);
	for (size_t i0 = 0; i0 < mp; i0 += MR)
		for (size_t p = 0; p < K; p++)
			for (size_t r = 0; r < (size_t)MR; r++) {
				size_t i = i0 + r;
				ap[i0 * K + p * MR + r] = i >= (size_t)m ? T(0)
							  : ta	     ? A[i * lda + p]
								     : A[p * lda + i];
			}
	for (size_t j0 = 0; j0 < np; j0 += NR)
		for (size_t p = 0; p < K; p++)
			for (size_t c = 0; c < (size_t)NR; c++) {
				size_t j = j0 + c;
				bp[j0 * K + p * NR + c] = j >= (size_t)n ? T(0)
							  : tb	     ? B[p * ldb + j]
								     : B[j * ldb + p];
			}
	/* row blocks of op(A) of about 128 KiB, reused across op(B)'s panels */
	size_t mc = std::max((size_t)MR, 131072 / sizeof(T) / std::max(K, (size_t)1) / MR * MR);
	T t[MR * NR];
	for (size_t i1 = 0; i1 < mp; i1 += mc)
		for (size_t j0 = 0; j0 < np; j0 += NR)
			for (size_t i0 = i1; i0 < std::min(mp, i1 + mc); i0 += MR) {
				tile<T, V, MR, NR>(k, ap.data() + i0 * K, bp.data() + j0 * K, t);
				size_t rows = std::min((size_t)MR, (size_t)m - i0);
				size_t cols = std::min((size_t)NR, (size_t)n - j0);
				for (size_t c = 0; c < cols; c++)
					for (size_t r = 0; r < rows; r++) {
						T *o = C + (j0 + c) * ldc + i0 + r;
						T v = alpha * t[c * MR + r];
						if (beta != T(0)) {
							T w = beta * *o;
							v = v + w;
						}
						*o = v;
					}
			}
}

__attribute__((target("avx"))) inline void sgemm_avx(bool ta, bool tb, int m, int n, int k,
						      float alpha, const float *A, int lda,
						      const float *B, int ldb, float beta, float *C,
						      int ldc)
{
	run<float, v8f, 8, 8>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

inline void sgemm_sse2(bool ta, bool tb, int m, int n, int k, float alpha, const float *A,
		       int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
	run<float, v4f, 8, 4>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

__attribute__((target("avx"))) inline void dgemm_avx(bool ta, bool tb, int m, int n, int k,
						      double alpha, const double *A, int lda,
						      const double *B, int ldb, double beta, double *C,
						      int ldc)
{
	run<double, v4d, 4, 8>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

inline void dgemm_sse2(bool ta, bool tb, int m, int n, int k, double alpha, const double *A,
		       int lda, const double *B, int ldb, double beta, double *C, int ldc)
{
	run<double, v2d, 4, 4>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* the AVX versions: where the processor has AVX and EMU_GEMM is not sse2 */
inline bool use_avx()
{
	static const bool a = __builtin_cpu_supports("avx") &&
			      !(getenv("EMU_GEMM") && !strcmp(getenv("EMU_GEMM"), "sse2"));
	return a;
}

inline void sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *A, int lda,
		  const float *B, int ldb, float beta, float *C, int ldc)
{
	(use_avx() ? sgemm_avx : sgemm_sse2)(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

inline void dgemm(bool ta, bool tb, int m, int n, int k, double alpha, const double *A, int lda,
		  const double *B, int ldb, double beta, double *C, int ldc)
{
	(use_avx() ? dgemm_avx : dgemm_sse2)(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

} // namespace emu_gemm

#endif
