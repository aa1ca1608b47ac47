/* kernels_emu.cc: the attention kernels of the dev/cuda variant wg
 * (dev/cuda/attention_variants.cu: the forward, dK, dV and dQ from the kept
 * dS on wgmma) launched one by one on the CPU through the SIMT emulator of
 * tests/emu (simt.h: fibers for threads, the PTX fragment layouts of
 * ldmatrix, mma.m16n8k16 and wgmma), against the CPU backend's attention in
 * fp64 on the same bf16 inputs and against the product's mma kernels
 * (kernels/attention_mma.cu), as tests/emu/test_mma_emu.cc checks the
 * product's (both through tests/emu/attn_harness.h). Run by
 * tests/cli/dev_cuda_emu.sh under make test-emu (not make test: the
 * variant is not in the product).
 *
 * Inputs as the launchers make them: q, k, v, dy rounded to bf16 (nearest
 * even); D = rowsum(dy * y) in fp64 from the emulated forward's y. The CPU
 * reference runs in fp64 on the same bf16-rounded values, so what is left is
 * the kernels' own rounding of P and dS to bf16 and fp32 accumulation:
 * relative Frobenius error 1e-2 on y, dq, dk, dv and 1e-3 absolute on lse
 * (nats), with the transposed copies of v, q, dy and k the kernels read
 * checked entry by entry. The shapes: windows not a multiple of the 64-row
 * tile, several tiles each way, rows past T in the last block, window 0, no
 * window, two heads and two batch rows. Then wg against mma: the forward,
 * dK, dV and dQ element by element where the window is a multiple of 64 or
 * covers T (the same tiles; the emulator's wgmma sums each k16 step as its
 * mma does), within 2e-3 (forward) and 1e-2 (backward) elsewhere; and each
 * kernel run twice gives the same bits. The emulator's wgmma
 * (tests/emu/simt.h) reads the K-major 128-byte-swizzle layout only. What
 * the emulator cannot show: timing, the hardware's own fp32 summation order
 * inside mma and wgmma, races between warps through plain shared-memory
 * loads and stores, that its reading of the wgmma layouts is the hardware's.
 * Reference: dev/cuda/attention_variants.cu, kernels/attention_mma.cu,
 * tests/emu/simt.h, trainer/backend.h.
 */
extern "C" {
#include "lib/rng.h"
#include "trainer/backend.h"
}
#include "kernels/attention_mma.cu"
#define ATTN_HARNESS_VARIANTS
#include "dev/cuda/attention_variants.cu"
#include "t.h"
#include "tests/emu/emu_test.h"

#include <vector>
#include "tests/emu/attn_harness.h"

namespace {

/* wg's forward against mma's: element by element where the window is a
 * multiple of 64 or covers T, within 2e-3 (relative Frobenius) elsewhere;
 * its backward (its dK, dV kernel and dQ from the dS it keeps) likewise,
 * element by element or within 1e-2. */
void wg_vs_mma(void)
{
	static const int64_t cs[][3] = { { 333, 128, 1 }, { 333, INT64_MAX, 1 }, { 390, 256, 1 },
					 { 70, 0, 1 }, { 300, 150, 0 }, { 260, 100, 0 } };
	int B = 1, H = 2;
	for (size_t ci = 0; ci < sizeof cs / sizeof *cs; ci++) {
		int T = (int)cs[ci][0];
		int64_t window = cs[ci][1];
		size_t n = (size_t)B * T * H * MM_D;
		std::vector<float> q = normals(&RG, n, 1), k = normals(&RG, n, 1), v = normals(&RG, n, 1);
		float sc = (float)(1.0 / sqrt((double)MM_D));
		std::vector<float> dy = normals(&RG, n, 1);
		run a = emulate(FWD_MMA, q, k, v, dy, B, T, H, window, sc);
		run b = emulate(FWD_WG, q, k, v, dy, B, T, H, window, sc);
		if (cs[ci][2]) {
			size_t dy = 0, dl = 0, dg = 0;
			for (size_t i = 0; i < n; i++)
				dy += !(a.y[i] == b.y[i]);
			for (size_t i = 0; i < a.lse.size(); i++)
				dl += !(a.lse[i] == b.lse[i]);
			for (size_t i = 0; i < n; i++)
				dg += !(a.dk[i] == b.dk[i]) + !(a.dv[i] == b.dv[i]) + !(a.dqs[i] == b.dqs[i]);
			printf("  wg, T %d window %lld: %zu of dk, dv and dq (from the kept dS) differ\n", T,
			       (long long)window, dg);
			CHECKF(dg == 0, "T %d window %lld: wg's backward differs from mma's in %zu", T,
			       (long long)window, dg);
			printf("  wg, T %d window %lld: %zu of y and %zu of lse differ\n", T,
			       (long long)window, dy, dl);
			CHECKF(dy == 0 && dl == 0, "T %d window %lld: wg differs from mma in %zu of y, "
			       "%zu of lse", T, (long long)window, dy, dl);
		} else {
			double ey = rel_fro(b.y, widen(a.y)), el = rel_fro(b.lse, widen(a.lse));
			printf("  wg, T %d window %lld: y %.2e, lse %.2e (relative Frobenius)\n", T,
			       (long long)window, ey, el);
			CHECKF(ey <= 2e-3 && el <= 2e-3, "wg vs mma: y %.3g lse %.3g", ey, el);
			double e[3] = { rel_fro(b.dk, widen(a.dk)), rel_fro(b.dv, widen(a.dv)),
					rel_fro(b.dqs, widen(a.dqs)) };
			printf("  wg, T %d window %lld: dk %.2e, dv %.2e, dq %.2e\n", T, (long long)window,
			       e[0], e[1], e[2]);
			CHECKF(e[0] <= 1e-2 && e[1] <= 1e-2 && e[2] <= 1e-2,
			       "wg's backward vs mma's: dk %.3g dv %.3g dq %.3g", e[0], e[1], e[2]);
		}
	}
}

} // namespace

/* the wgmma kernels (wg: the forward, dK, dV and dQ from the kept dS) and the
 * transposed copies they read */
TEST(wg_kernels_vs_cpu)
{
	cases(FWD_WG);
}

TEST(wg_kernels_vs_mma)
{
	wg_vs_mma();
}

int main(void)
{
	rng_seed(&RG, 2027);
	RUN(wg_kernels_vs_cpu);
	RUN(wg_kernels_vs_mma);
	return t_done();
}
