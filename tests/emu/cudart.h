/* cudart.h: the CUDA runtime, cuBLAS and CUB calls of the .cu files of kernels/, on the
 * CPU, for the emulated CUDA backend (tests/emu/cudart.cc): with it the
 * whole backend (backend_cuda.cu, the attention, optimizer and Polar
 * Express files), host logic included, is built as host C++ and run by
 * tests/gpu/test_cuda_ops.c against the CPU backend in make test and make
 * test-emu (build/tests/emu/test_cuda_ops_emu). The kernels run on the SIMT
 * emulator of tests/emu/simt.h; a launch `k<<<g, b, s, st>>>(args)` is
 * rewritten by tests/emu/launch.sed to `emu_kernel(g, b, s, st, k, "k")(args)`.
 *
 * The device is one emulated GPU whose memory is the host's:
 * - a stream is a queue: kernel launches, cuBLAS and CUB calls, memsets and
 *   asynchronous copies are queued and run, in order, when the host waits
 *   (cudaStreamSynchronize, cudaDeviceSynchronize, a synchronous copy,
 *   cudaFree), not when they are issued; so a host read of a result before
 *   the host has waited for it sees the old bytes, as it might on a GPU,
 *   and a test comparing runs shows it (EMU_EAGER=1 runs each at once);
 * - the CUDA API's own ordering rules are kept: an asynchronous copy from
 *   pageable host memory takes its bytes when issued, one into pageable
 *   host memory waits for the stream; pinned, managed and device memory
 *   are read and written when the queue reaches the copy;
 * - cudaMalloc, cudaMallocAsync and cudaMallocManaged fill new memory with
 *   0xff bytes (NaN as fp32 and fp64, -1 as integers), so a read of
 *   memory nothing wrote shows;
 * - cuBLAS GEMMs (tests/emu/gemm.h, not OpenBLAS): bf16 operands are
 *   widened exactly and multiplied in fp32 (fp32 accumulation, the tensor
 *   cores' contract) in a summation order of the emulator's own: each
 *   entry s = 0, then s = s + a_ip b_pj for p = 0, 1, .., k - 1, every
 *   product and sum rounded to fp32 on its own, then alpha s (+ beta c);
 *   COMPUTE_32F_FAST_16BF rounds fp32 operands to bf16 nearest even first
 *   (the emulator's choice: cuBLAS's own down-conversion is not
 *   documented); a bf16 C is rounded once, to nearest even; cublasDgemm
 *   sums in the same order in fp64. An entry's bits so depend on its
 *   operands alone, not on the GEMM's shape (a chunk of 4,096 rows or of
 *   16,384), the processor or a BLAS library's kernels: the emulated
 *   backend's results through GEMMs of different shapes compare bit for
 *   bit on any x86-64 machine (cuBLAS on a GPU picks kernels by shape:
 *   its tests allow for that);
 * - CUB's stable radix sort (std::stable_sort on the keys' low bits) and
 *   DeviceSelect::Flagged.
 * Left out: every call kernels/ does not make; several streams (the
 * backend has one); events; a limit on memory (cudaMemGetInfo reports 80
 * GiB total). Reference: CUDA Runtime API, "API synchronization behavior"
 * (copies and pageable memory); cuBLAS cublasGemmEx; CUB DeviceRadixSort.
 */
#ifndef SUPKIT_EMU_CUDART_H
#define SUPKIT_EMU_CUDART_H

#include "tests/emu/simt.h"

#include <tuple>
#include <utility>

enum cudaError_enum_ {
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorInvalidDevicePointer = 17,
};

enum cudaMemoryType {
	cudaMemoryTypeUnregistered = 0,
	cudaMemoryTypeHost = 1,
	cudaMemoryTypeDevice = 2,
	cudaMemoryTypeManaged = 3,
};
struct cudaPointerAttributes {
	enum cudaMemoryType type;
	int device;
	void *devicePointer, *hostPointer;
};
enum cudaMemcpyKind {
	cudaMemcpyHostToHost = 0,
	cudaMemcpyHostToDevice = 1,
	cudaMemcpyDeviceToHost = 2,
	cudaMemcpyDeviceToDevice = 3,
	cudaMemcpyDefault = 4,
};
struct cudaDeviceProp {
	char name[256];
	size_t totalGlobalMem, sharedMemPerBlockOptin;
	int multiProcessorCount, major, minor, clockRate;
};
enum cudaDeviceAttr { cudaDevAttrConcurrentManagedAccess = 89 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
typedef void *cudaMemPool_t;
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };
#define cudaStreamNonBlocking 1u
#define cudaMemAttachGlobal 1u
#define cudaHostAllocMapped 2u

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDevice(int *d);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d);
cudaError_t cudaGetLastError(void);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *p, int d);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t p, cudaMemPoolAttr a, void *v);
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaMallocManaged(void **p, size_t n, unsigned flags);
cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s);
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags);
cudaError_t cudaFree(void *p);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaFreeAsync(void *p, cudaStream_t s);
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind k);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind k,
			    cudaStream_t s);
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s);
/* the kernel's dynamic shared memory limit (a launch checks it) */
template <class F> cudaError_t cudaFuncSetAttribute(F k, cudaFuncAttribute, int v)
{
	return emu_set_smem_limit((const void *)k, v) ? (cudaError_t)cudaErrorInvalidValue
						      : (cudaError_t)cudaSuccess;
}

/* Queue work on stream s (all streams are one queue). */
void emu_enqueue(cudaStream_t s, std::function<void()> work);

/* A kernel's pointer argument i must be NULL or point into (or just past)
 * memory the device can reach (cudaMalloc, cudaMallocAsync, managed,
 * cudaHostAlloc) that is not freed: else the launch aborts, naming the
 * kernel and argument (on a GPU, an illegal address in the kernel). */
void emu_check_arg(const char *kernel, int i, const void *p);
template <class T> inline void emu_arg(const char *, int, const T &) {}
template <class T> inline void emu_arg(const char *k, int i, T *p)
{
	emu_check_arg(k, i, (const void *)p);
}

/* `k<<<g, b, smem, st>>>(args)`, rewritten: the arguments are converted to
 * the kernel's parameter types and checked (pointers: emu_check_arg) and
 * copied, the launch queued. */
template <class... P> struct emu_kcall {
	dim3 g, b;
	size_t smem;
	cudaStream_t st;
	void (*k)(P...);
	const char *name;
	void operator()(P... a) const
	{
		void (*kk)(P...) = k;
		const char *nm = name;
		dim3 gg = g, bb = b;
		size_t sm = smem;
		int i = 0;
		(emu_arg(nm, i++, a), ...);
		std::tuple<P...> args(a...);
		emu_enqueue(st, [kk, nm, gg, bb, sm, args]() {
			emu_run_kernel((const void *)kk, nm, gg, bb, sm, [&]() { std::apply(kk, args); });
		});
	}
};
template <class... P>
emu_kcall<P...> emu_kernel(dim3 g, dim3 b, size_t smem, cudaStream_t st, void (*k)(P...),
			   const char *name)
{
	return emu_kcall<P...>{ g, b, smem, st, k, name };
}

#endif
