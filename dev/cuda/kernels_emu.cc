/* kernels_emu.cc: the attention kernels of the dev/cuda variants mma2 and
 * wg (dev/cuda/attention_variants.cu) launched one by one on the CPU
 * through the SIMT emulator of tests/emu (simt.h: fibers for threads, the
 * PTX fragment layouts of ldmatrix, mma.m16n8k16 and wgmma), against the
 * CPU backend's attention in fp64 on the same bf16 inputs and against the
 * product's mma kernels (kernels/attention_mma.cu), as
 * tests/emu/test_mma_emu.cc checks the product's (both through
 * tests/emu/attn_harness.h). Run by
 * tests/cli/dev_cuda_emu.sh under make test-emu (not make test: the
 * variants are not in the product).
 *
 * Inputs as the launchers make them: q, k, v, dy rounded to bf16 (nearest
 * even); D = rowsum(dy * y) in fp64 from the emulated forward's y. The CPU
 * reference runs in fp64 on the same bf16-rounded values, so what is left is
 * the kernels' own rounding of P and dS to bf16 and fp32 accumulation:
 * relative Frobenius error 1e-2 on y, dq, dk, dv and 1e-3 absolute on lse
 * (nats). The shapes: windows not a multiple of the 64-row tile, several
 * tiles each way, rows past T in the last block, window 0, no window, two
 * heads and two batch rows. Then mma2's forward against mma's, element by
 * element where the window is a multiple of 64 or covers T (the same
 * tiles, the same operations in the same order), and within 2e-3
 * elsewhere; and each kernel run twice gives the same bits. The same for
 * the wgmma kernels (wg: the forward, dK, dV and dQ from the kept dS, with
 * the transposed copies of v, q, dy and k they read checked entry by
 * entry; against mma's bit for bit where the tiles agree), against the
 * emulator's wgmma (tests/emu/simt.h: the K-major 128-byte-swizzle layout
 * only). What the emulator cannot show: timing, the hardware's own fp32
 * summation order inside mma and wgmma, races between warps through plain
 * shared-memory loads and stores, that its reading of the wgmma layouts
 * is the hardware's.
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

/* A forward (mma2's, wg's) against mma's: element by element where the
 * window is a multiple of 64 or covers T, within 2e-3 (relative Frobenius)
 * elsewhere; wg's backward (its dK, dV kernel and dQ from the dS it keeps)
 * likewise, element by element or within 1e-2. */
void forward_vs_mma(int fwd)
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
		/* wg: the backward too (dK, dV on wgmma, dQ from its kept dS) */
		bool bwd = fwd == FWD_WG;
		std::vector<float> dy = normals(&RG, n, 1);
		run a = emulate(FWD_MMA, bwd, q, k, v, dy, B, T, H, window, sc);
		run b = emulate(fwd, bwd, q, k, v, dy, B, T, H, window, sc);
		if (cs[ci][2]) {
			size_t dy = 0, dl = 0, dg = 0;
			for (size_t i = 0; i < n; i++)
				dy += !(a.y[i] == b.y[i]);
			for (size_t i = 0; i < a.lse.size(); i++)
				dl += !(a.lse[i] == b.lse[i]);
			for (size_t i = 0; bwd && i < n; i++)
				dg += !(a.dk[i] == b.dk[i]) + !(a.dv[i] == b.dv[i]) + !(a.dqs[i] == b.dqs[i]);
			if (bwd)
				printf("  %s, T %d window %lld: %zu of dk, dv and dq (from the kept dS) differ\n",
				       FWD_NAME[fwd], T, (long long)window, dg);
			CHECKF(dg == 0, "T %d window %lld: %s's backward differs from mma's in %zu", T,
			       (long long)window, FWD_NAME[fwd], dg);
			printf("  %s, T %d window %lld: %zu of y and %zu of lse differ\n", FWD_NAME[fwd], T,
			       (long long)window, dy, dl);
			CHECKF(dy == 0 && dl == 0, "T %d window %lld: %s differs from mma in %zu of y, "
			       "%zu of lse", T, (long long)window, FWD_NAME[fwd], dy, dl);
		} else {
			double ey = rel_fro(b.y, widen(a.y)), el = rel_fro(b.lse, widen(a.lse));
			printf("  %s, T %d window %lld: y %.2e, lse %.2e (relative Frobenius)\n",
			       FWD_NAME[fwd], T, (long long)window, ey, el);
			CHECKF(ey <= 2e-3 && el <= 2e-3, "%s vs mma: y %.3g lse %.3g", FWD_NAME[fwd], ey,
			       el);
			if (bwd) {
				double e[3] = { rel_fro(b.dk, widen(a.dk)), rel_fro(b.dv, widen(a.dv)),
						rel_fro(b.dqs, widen(a.dqs)) };
				printf("  %s, T %d window %lld: dk %.2e, dv %.2e, dq %.2e\n", FWD_NAME[fwd], T,
				       (long long)window, e[0], e[1], e[2]);
				CHECKF(e[0] <= 1e-2 && e[1] <= 1e-2 && e[2] <= 1e-2,
				       "%s's backward vs mma's: dk %.3g dv %.3g dq %.3g", FWD_NAME[fwd], e[0],
				       e[1], e[2]);
			}
		}
	}
}

} // namespace

TEST(mma2_forward_vs_cpu)
{
	cases(FWD_MMA2);
}

TEST(mma2_forward_vs_mma)
{
	forward_vs_mma(FWD_MMA2);
}

/* the wgmma kernels (wg: the forward, dK, dV and dQ from the kept dS) and the
 * transposed copies they read */
TEST(wg_kernels_vs_cpu)
{
	cases(FWD_WG);
}

TEST(wg_kernels_vs_mma)
{
	forward_vs_mma(FWD_WG);
}

int main(void)
{
	rng_seed(&RG, 2027);
	RUN(mma2_forward_vs_cpu);
	RUN(mma2_forward_vs_mma);
	RUN(wg_kernels_vs_cpu);
	RUN(wg_kernels_vs_mma);
	return t_done();
}
