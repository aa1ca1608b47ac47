/* simt.h: a small SIMT emulator on the CPU for the CUDA backend's kernels,
 * so that their indexing, tiling, masking, reductions and fragment layouts
 * are tested without a GPU: the tensor-core attention of
 * kernels/attention_mma.cu and the row and element kernels of
 * kernels/backend_kernels.cuh on their own (tests/emu/test_*.cc), and every
 * kernel of the .cu files of kernels/ inside the whole emulated backend
 * (tests/emu/cudart.h). The kernel source is compiled as host C++ with
 * SUPKIT_EMU defined: the PTX wrappers (cp.async, ldmatrix, mma.sync) call
 * the emu_* functions here, and tests/emu/shim/ stands in for
 * cuda_runtime.h, cuda_bf16.h, mma.h (WMMA), cublas_v2.h and CUB.
 *
 * A block's threads run as fibers on one OS thread, one at a time (on
 * x86-64 an own context switch of the callee-saved registers: swapcontext
 * makes two system calls a switch, which took most of the time; ucontext
 * elsewhere; ASan is told of every switch): a fiber runs until it reaches
 * a collective (a warp's ldmatrix, mma or shuffle; the
 * block's __syncthreads), waits there until every thread that takes part
 * has arrived, and the last to arrive computes every lane's result; a
 * thread that waits or ends switches straight to the next runnable one in
 * the cycle of the block's threads (tests/emu/test_simt_emu.cc). Blocks
 * run one after another over one shared-memory buffer (emu_smem:
 * kernels/cuda_internal.h's DYN_SMEM; a kernel's static __shared__
 * variables are static). The collectives check that all lanes call the
 * same one (divergence aborts), and a block whose threads all wait with
 * none runnable aborts as a deadlock. emu_run_kernel runs a kernel whose
 * first launch used no collective without fibers from then on, each
 * thread to its end in turn (a collective there aborts; EMU_FIBERS=1
 * keeps fibers for every launch).
 *
 * Semantics kept: the PTX ISA's fragment layouts for ldmatrix (.x2, .x4,
 * .trans) and mma.m16n8k16 .row.col bf16 -> fp32 (the kernels' header
 * documents them); a cp.async copy lands in shared memory at its thread's
 * cp.async.wait_group that covers its group, the latest moment the PTX
 * ISA allows (EMU_CPASYNC=now lands it at issue), so a
 * missing or short wait, or a read before the barrier after the wait,
 * reads the block's old bytes (0xA5 fill); and (EMU_RACECHECK=1, the
 * default; 0 turns it off) every cp.async copy and ldmatrix or wgmma read is
 * checked against the block's barrier intervals, whatever order threads
 * run in: a refill of bytes another warp read since the last
 * __syncthreads, two copies in flight to the same bytes, a read of bytes
 * whose copy is in flight or landed since the last __syncthreads abort
 * (plain shared-memory loads and stores are not seen); mma's sum of 16 exact
 * bf16 products and the accumulator is formed in fp64 and rounded once
 * (the hardware's internal order and precision are not specified, so
 * results can differ from a GPU's in the last bits of fp32), and so is
 * wgmma's, a k16 step at a time (the K-major 128-byte-swizzle descriptors
 * only; the result at the wait: emu_wgmma below); __shfl_xor_sync of floats and doubles (one
 * collective a double), __shfl_sync of floats and __syncwarp (full masks
 * only); atomicAdd on unsigned (fibers do not interleave inside it); math
 * functions are the host's libm, not CUDA's. Left out:
 * every other CUDA feature (the kernels use no other), and races between
 * threads (they run in a fixed order: EMU_ORDER forward, reverse or
 * shuffle, tests/emu/simt.cc).
 * Reference: PTX ISA 8.x, "Warp-level matrix instructions" (mma.m16n8k16,
 * ldmatrix), "Data movement" (cp.async), shfl.sync; CUDA C++ Programming
 * Guide, "Warp Matrix Functions".
 */
#ifndef SUPKIT_SIMT_H
#define SUPKIT_SIMT_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
/* a block's shared variables: one instance (blocks run one after another) */
#define __shared__ static

struct uint3 {
	unsigned x, y, z;
};
struct dim3 {
	unsigned x, y, z;
	dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
/* the running fiber's indices (set by the scheduler at every switch) */
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

typedef int cudaError_t;
typedef void *cudaStream_t;
enum { cudaSuccess = 0 };
inline const char *cudaGetErrorString(cudaError_t) { return "(emulated)"; }

using std::max;
using std::min;

/* the vector types with CUDA's alignment, so that under SAN=1 a
 * misaligned vector access (a fault on the GPU) stops the test */
struct __attribute__((aligned(8))) float2 {
	float x, y;
};
inline float2 make_float2(float x, float y)
{
	float2 v = { x, y };
	return v;
}
struct __attribute__((aligned(16))) float4 {
	float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w)
{
	float4 v = { x, y, z, w };
	return v;
}
struct __attribute__((aligned(16))) uint4 {
	unsigned x, y, z, w;
};
inline float __uint_as_float(unsigned u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}
/* correctly rounded fp32 arithmetic (the host's, with no contraction) */
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
/* fibers run one at a time, so a read-modify-write is atomic */
inline unsigned atomicAdd(unsigned *p, unsigned v)
{
	unsigned o = *p;
	*p = o + v;
	return o;
}

/* ---- bf16 (cuda_bf16.h's names) ---- */
struct __nv_bfloat16 {
	uint16_t x;
};
struct __attribute__((aligned(4))) __nv_bfloat162 {
	__nv_bfloat16 x, y;
};
inline __nv_bfloat16 __float2bfloat16_rn(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	__nv_bfloat16 b;
	if ((u & 0x7fffffffu) > 0x7f800000u)
		b.x = (uint16_t)((u >> 16) | 0x40);   /* a quiet NaN */
	else
		b.x = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
	return b;
}
inline float __bfloat162float(__nv_bfloat16 b)
{
	uint32_t u = (uint32_t)b.x << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.x; }
inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi)
{
	__nv_bfloat162 v;
	v.x = __float2bfloat16_rn(lo);
	v.y = __float2bfloat16_rn(hi);
	return v;
}

/* ---- collectives and the PTX the kernels use ---- */
void __syncthreads(void);
float __shfl_xor_sync(unsigned mask, float v, int lane_mask);
/* lane src's v (src in 0..31) */
float __shfl_sync(unsigned mask, float v, int src);
void __syncwarp(unsigned mask = 0xffffffffu);
double __shfl_xor_sync(unsigned mask, double v, int lane_mask);
/* cp.async.cg of 16 bytes to shared memory (zeros when !valid; the source
 * read at issue); cp.async.commit_group; cp.async.wait_group n: the copies
 * land in shared memory at the issuing thread's wait that covers their
 * group (EMU_CPASYNC=wait, the default), or at issue (EMU_CPASYNC=now) */
void emu_cp16(void *dst, const void *src, bool valid);
void emu_cp_commit(void);
void emu_cp_wait(int n);
/* ldmatrix .m8n8 .b16 of n (2 or 4) matrices, row addresses from lanes
 * 8j .. 8j + 7 for matrix j; trans: .trans */
void emu_ldsm(uint32_t *r, const void *p, int n, bool trans);
/* mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, c += a b */
void emu_mma(float *c, const uint32_t *a, uint32_t b0, uint32_t b1);

/* wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 (sm_90a) of the
 * running warp's 16 rows of its warpgroup's 64 (rows 16 (warp % 4) ..):
 * d (N / 2 values a lane, mma's C layout an 8-column block at a time) =
 * A B + (scale_d ? d : 0), A from the lane's registers a (mma's A
 * fragment layout) or, a NULL, from shared memory by descriptor da, B from
 * shared memory by descriptor db (both K-major with the 128-byte swizzle:
 * the only layout emulated); the sum of 16 exact products and the
 * accumulator in fp64, rounded once, as emu_mma. The result reaches d at
 * the thread's emu_wgmma_wait that covers its group (emu_wgmma_commit),
 * not before; the fence is a no-op. Shared memory reads go through the
 * race check as ldmatrix's do. */
void emu_wgmma(float *d, int n, const uint32_t *a, uint64_t da, uint64_t db, int scale_d);
void emu_wgmma_fence(void);
void emu_wgmma_commit(void);
void emu_wgmma_wait(int n);
/* p's offset in shared memory (the emulator's __cvta_generic_to_shared) */
unsigned emu_smem_addr(const void *p);

/* Run body on every block of grid (x, y) with `threads` threads a block
 * (a multiple of 32), blocks in order; smem bytes of shared memory must
 * fit emu_smem (EMU_SMEM). */
#define EMU_SMEM (227 * 1024)   /* an H100's or H200's most a block can opt in to */
extern unsigned char emu_smem[EMU_SMEM];
/* cudaFuncSetAttribute(key, cudaFuncAttributeMaxDynamicSharedMemorySize,
 * bytes): 0, or -1 (the runtime's cudaErrorInvalidValue) over EMU_SMEM. A
 * launch of more than EMU_SMEM_DEFAULT (48 KiB) bytes of dynamic shared
 * memory aborts unless its kernel was given at least that many, as the
 * hardware refuses such a launch. */
#define EMU_SMEM_DEFAULT (48 * 1024)
int emu_set_smem_limit(const void *key, int bytes);
void emu_launch(dim3 grid, int threads, size_t smem, const std::function<void()> &body);
/* collectives run by the last launch (a test's sanity figure) */
extern uint64_t emu_collectives;
/* Run the kernel whose address is key (name: its source text) on grid x
 * block threads; kernels that use no collective in their first launch run
 * their threads one after another without fibers from then on (a
 * collective there aborts). EMU_PROFILE=1: at exit, each kernel's
 * launches, collectives and emulated seconds on stderr, slowest first. */
void emu_run_kernel(const void *key, const char *name, dim3 grid, dim3 block, size_t smem,
		    const std::function<void()> &body);

#endif
