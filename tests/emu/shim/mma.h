/* tests/emu/shim/mma.h: the WMMA API (nvcuda::wmma) for 16 x 16 x 16 bf16
 * tiles with fp32 accumulators, on the SIMT emulator. The hardware's
 * fragment layout is unspecified; here lane l holds the tile's row-major
 * entries 8l .. 8l + 7 (matrix_b's too, whatever its memory layout), so
 * loads and stores are per lane and mma_sync is a warp collective
 * (emu_wmma). Kernels may only scale fragment entries uniformly, as the
 * CUDA guide allows; that is all dev/cuda/attention_tc.cu does. */
#ifndef SUPKIT_EMU_MMA_H
#define SUPKIT_EMU_MMA_H

#include "tests/emu/simt.h"

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
	static_assert(M == 16 && N == 16 && K == 16, "the emulator has 16 x 16 x 16 tiles only");
	enum { num_elements = 8 };
	T x[8];
};

template <class Use, class T, class L>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, T v)
{
	for (int e = 0; e < 8; e++)
		f.x[e] = v;
}

/* row r, column c of a tile whose entry i is this lane's e */
inline void emu_rc(int e, int *r, int *c)
{
	int i = (int)(threadIdx.x & 31) * 8 + e;
	*r = i / 16;
	*c = i % 16;
}

inline void load_matrix_sync(fragment<matrix_a, 16, 16, 16, __nv_bfloat16, row_major> &f,
			     const __nv_bfloat16 *p, unsigned ldm)
{
	for (int e = 0, r, c; e < 8; e++) {
		emu_rc(e, &r, &c);
		f.x[e] = p[(size_t)r * ldm + c];
	}
}
/* matrix_b entry (k, n): p[k ldm + n] row-major, p[n ldm + k] column-major */
inline void load_matrix_sync(fragment<matrix_b, 16, 16, 16, __nv_bfloat16, row_major> &f,
			     const __nv_bfloat16 *p, unsigned ldm)
{
	for (int e = 0, r, c; e < 8; e++) {
		emu_rc(e, &r, &c);
		f.x[e] = p[(size_t)r * ldm + c];
	}
}
inline void load_matrix_sync(fragment<matrix_b, 16, 16, 16, __nv_bfloat16, col_major> &f,
			     const __nv_bfloat16 *p, unsigned ldm)
{
	for (int e = 0, r, c; e < 8; e++) {
		emu_rc(e, &r, &c);
		f.x[e] = p[(size_t)c * ldm + r];
	}
}
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p,
			     unsigned ldm, layout_t l)
{
	for (int e = 0, r, c; e < 8; e++) {
		emu_rc(e, &r, &c);
		f.x[e] = l == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
	}
}
inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,
			      unsigned ldm, layout_t l)
{
	for (int e = 0, r, c; e < 8; e++) {
		emu_rc(e, &r, &c);
		(l == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r]) = f.x[e];
	}
}

template <class LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
		     const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, row_major> &a,
		     const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LB> &b,
		     const fragment<accumulator, 16, 16, 16, float> &c)
{
	emu_wmma(d.x, a.x, b.x, c.x);
}
} // namespace wmma
} // namespace nvcuda

#endif
