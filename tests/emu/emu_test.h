/* emu_test.h: what the emulator tests (tests/emu/test_*.cc) share: random
 * inputs and the check of a kernel's bf16 copy of its output. */
#ifndef SUPKIT_EMU_TEST_H
#define SUPKIT_EMU_TEST_H

extern "C" {
#include "lib/rng.h"
}
#include "tests/emu/simt.h"

#include <vector>

/* n values drawn from N(0, s^2) */
static inline std::vector<float> normals(struct rng *r, size_t n, double s)
{
	std::vector<float> x(n);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)(s * rng_normal(r));
	return x;
}

/* entries of b that are not a's values rounded to bf16 (nearest even) */
static inline size_t cast_misses(const std::vector<float> &a,
				 const std::vector<__nv_bfloat16> &b)
{
	size_t bad = 0;
	for (size_t i = 0; i < a.size(); i++)
		bad += __float2bfloat16_rn(a[i]).x != b[i].x;
	return bad;
}

#endif
