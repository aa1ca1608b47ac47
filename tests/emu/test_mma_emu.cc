/* test_mma_emu.cc: the mma.sync attention kernels of kernels/attention_mma.cu
 * (the CUDA backend's default for head width 128) run on the CPU through the SIMT emulator of tests/emu
 * (simt.h: fibers for threads, the PTX fragment layouts of ldmatrix and
 * mma.m16n8k16), against the CPU backend's attention: so that CI, which has
 * no GPU, checks the kernels' tiling, masks, softmax and fragment indexing.
 *
 * Inputs as the launchers make them: q, k, v, dy rounded to bf16 (nearest
 * even); D = rowsum(dy * y) in fp64 from the emulated forward's y. The CPU
 * reference runs in fp64 on the same bf16-rounded values, so what is left is
 * the kernels' own rounding of P and dS to bf16 and fp32 accumulation:
 * relative Frobenius error 1e-2 on y, dq, dk, dv and 1e-3 absolute on lse
 * (nats), both a few times what bf16 P gives (2^-9 per entry) and far below
 * what a wrong row, key or fragment gives (order 1). The shapes: windows not
 * a multiple of the 64-row tile, several tiles each way, rows past T in the
 * last block, window 0, no window, two heads and two batch rows; and each
 * kernel run twice gives the same bits (the variants of dev/cuda have
 * their own such checks: dev/cuda/kernels_emu.cc, through the same
 * harness, tests/emu/attn_harness.h). What
 * the emulator cannot show: timing, the
 * hardware's own fp32 summation order inside mma, races between warps
 * through plain shared-memory loads and stores (fibers run one at a time).
 * Each cp.async copy lands in shared memory at its thread's wait_group,
 * not before, and the emulator's race check aborts on a tile refilled or
 * read with a barrier missing (tests/emu/simt.h), so a wait or a loop
 * barrier dropped from any of these kernels fails them.
 * Reference: kernels/attention_mma.cu, tests/emu/simt.h, trainer/backend.h.
 */
extern "C" {
#include "lib/rng.h"
#include "trainer/backend.h"
}
#include "kernels/attention_mma.cu"
#include "t.h"
#include "tests/emu/emu_test.h"

#include <vector>

#include "tests/emu/attn_harness.h"

TEST(mma_kernels_vs_cpu)
{
	cases(FWD_MMA);
}

int main(void)
{
	rng_seed(&RG, 2027);
	RUN(mma_kernels_vs_cpu);
	return t_done();
}
