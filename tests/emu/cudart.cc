/* cudart.cc: the emulated CUDA runtime and cuBLAS of tests/emu/cudart.h
 * (memory, the stream queue, copies, device queries, GEMMs). */
#include "tests/emu/cudart.h"
#include "tests/emu/gemm.h"
#include "tests/emu/shim/cublas_v2.h"

#include <cblas.h>

#include <deque>
#include <map>
#include <vector>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

namespace {

struct block {
	size_t n;
	cudaMemoryType type;
	bool guarded;   /* pages of its own, closed to the host (guard()) */
	bool freeing;   /* cudaFreeAsync issued: gone for any work queued after it */
};
std::map<uintptr_t, block> g_mem;   /* allocations by start address */
size_t g_used;
std::deque<std::function<void()>> g_q;
cudaStream_t g_qstream;   /* the stream of the work in g_q */
bool g_draining;
const size_t TOTAL = (size_t)80 << 30;

bool eager()
{
	static const bool e = getenv("EMU_EAGER") && strcmp(getenv("EMU_EAGER"), "0") != 0;
	return e;
}

[[noreturn]] void fail(const char *what, const void *p)
{
	fprintf(stderr, "emu cudart: %s (%p)\n", what, p);
	abort();
}

/* The allocation holding p (NULL: none). */
const block *find(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	auto it = g_mem.upper_bound(a);
	if (it == g_mem.begin())
		return NULL;
	--it;
	return a < it->first + (it->second.n ? it->second.n : 1) ? &it->second : NULL;
}

} // namespace

void emu_check_arg(const char *kernel, int i, const void *p)
{
	if (!p)
		return;
	const block *b = find(p);
	if (!b)
		b = find((const char *)p - 1);
	if (b && !b->freeing)
		return;
	fprintf(stderr, "emu cudart: %s: argument %d (%p) points %s\n", kernel, i, p,
		b ? "into memory freed by cudaFreeAsync before the launch" : "outside device memory");
	abort();
}

namespace {

cudaMemoryType type_of(const void *p)
{
	const block *b = find(p);
	return b ? b->type : cudaMemoryTypeUnregistered;
}

/* The host's access to device memory. On a GPU the host cannot touch
 * what cudaMalloc and cudaMallocAsync return (a segfault); here that is
 * host memory. So, but under AddressSanitizer (whose checks need malloc's
 * blocks) or with EMU_HOSTCHECK=0, each such block is pages of its own
 * that the host cannot read or write, opened only while queued work runs
 * (kernels, copies, cuBLAS, CUB) and while a synchronous copy copies: a
 * host access at any other time stops the process with a line naming the
 * address. Managed memory and cudaHostAlloc's stay open, as on a GPU. */
#if defined(__SANITIZE_ADDRESS__)
const bool k_asan = true;
#else
const bool k_asan = false;
#endif

bool guard()
{
	static const bool g =
		!k_asan && !(getenv("EMU_HOSTCHECK") && strcmp(getenv("EMU_HOSTCHECK"), "0") == 0);
	return g;
}

int g_open;   /* depth of dev_open scopes */

/* the bytes of whole pages that hold n (at least one page) */
size_t pages(size_t n)
{
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n ? (n + pg - 1) / pg : 1) * pg;
}

void set_dev(int prot)
{
	for (auto &e : g_mem)
		if (e.second.guarded && mprotect((void *)e.first, pages(e.second.n), prot))
			fail("mprotect of device memory", (void *)e.first);
}

/* device memory open to this thread while in scope */
struct dev_open {
	dev_open()
	{
		if (guard() && g_open++ == 0)
			set_dev(PROT_READ | PROT_WRITE);
	}
	~dev_open()
	{
		if (guard() && --g_open == 0)
			set_dev(PROT_NONE);
	}
};

/* a fault on a closed device block: say so, then abort; any other: the
 * default action */
void on_segv(int, siginfo_t *si, void *)
{
	const block *b = find(si->si_addr);
	if (b && b->guarded) {
		char m[200];
		int k = snprintf(m, sizeof m,
				 "emu cudart: the host touched device memory at %p (cudaMalloc'd: "
				 "a segfault on a GPU; copy it with cudaMemcpy)\n",
				 si->si_addr);
		if (write(2, m, (size_t)k) < 0)
			abort();
		abort();
	}
	signal(SIGSEGV, SIG_DFL);
}

/* p in a block that cudaFreeAsync has already freed (in stream order)
 * stops the process: on a GPU, work queued after the free may find the
 * memory reused */
void unfreed(const void *p, const char *what)
{
	const block *b = find(p);
	if (b && b->freeing) {
		fprintf(stderr, "emu cudart: %s on %p, memory freed by cudaFreeAsync before it\n",
			what, p);
		abort();
	}
}

cudaError_t alloc(void **p, size_t n, cudaMemoryType t)
{
	size_t r = (n + 255) / 256 * 256;
	bool g = guard() && t == cudaMemoryTypeDevice;
	void *q;
	if (g) {
		static bool handler;
		if (!handler) {
			struct sigaction sa;
			memset(&sa, 0, sizeof sa);
			sa.sa_sigaction = on_segv;
			sa.sa_flags = SA_SIGINFO;
			sigaction(SIGSEGV, &sa, NULL);
			handler = true;
		}
		q = mmap(NULL, pages(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q == MAP_FAILED)
			return cudaErrorMemoryAllocation;
	} else {
		q = aligned_alloc(256, r ? r : 256);
		if (!q)
			return cudaErrorMemoryAllocation;
	}
	memset(q, 0xff, r ? r : 256);   /* a read of memory nothing wrote shows (NaN, -1) */
	if (g && !g_open && mprotect(q, pages(n), PROT_NONE))
		fail("mprotect of device memory", q);
	g_mem[(uintptr_t)q] = block{ n, t, g, false };
	g_used += n;
	*p = q;
	return cudaSuccess;
}

void release(void *p)
{
	auto it = g_mem.find((uintptr_t)p);
	if (it == g_mem.end())
		fail("free of a pointer that is no allocation's start", p);
	g_used -= it->second.n;
	if (it->second.guarded)
		munmap(p, pages(it->second.n));
	else
		free(p);
	g_mem.erase(it);
}

void drain()
{
	if (g_draining)
		fail("the queue drained from queued work", NULL);
	if (g_q.empty())
		return;
	dev_open o;
	g_draining = true;
	while (!g_q.empty()) {
		std::function<void()> w = std::move(g_q.front());
		g_q.pop_front();
		w();
	}
	g_draining = false;
}

/* bf16 or fp32 column-major operand (rows x cols, leading dimension ld)
 * as dense fp32, rounded to bf16 first when round_bf */
std::vector<float> widen(const void *p, cudaDataType_t t, int rows, int cols, int ld,
			 bool round_bf)
{
	if (t != CUDA_R_16BF && t != CUDA_R_32F)
		fail("GEMM operand type", p);
	std::vector<float> o((size_t)rows * cols);
	for (int c = 0; c < cols; c++) {
		float *d = o.data() + (size_t)c * rows;
		if (t == CUDA_R_16BF) {
			const __nv_bfloat16 *s = (const __nv_bfloat16 *)p + (size_t)c * ld;
			for (int r = 0; r < rows; r++)
				d[r] = __bfloat162float(s[r]);
		} else {
			memcpy(d, (const float *)p + (size_t)c * ld, (size_t)rows * sizeof(float));
			if (round_bf)
				for (int r = 0; r < rows; r++)
					d[r] = __bfloat162float(__float2bfloat16_rn(d[r]));
		}
	}
	return o;
}

/* One column-major GEMM C = alpha op(A) op(B) + beta C (cublasGemmEx's
 * arguments), run now (tests/emu/gemm.h: each entry in a fixed order):
 * fp32 operands and outputs in place, the others through fp32 copies. */
void gemm_now(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
	      const void *A, cudaDataType_t at, int lda, const void *B, cudaDataType_t bt, int ldb,
	      float beta, void *C, cudaDataType_t ct, int ldc, cublasComputeType_t comp)
{
	if (!m || !n)
		return;
	bool rb = comp == CUBLAS_COMPUTE_32F_FAST_16BF;
	int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
	int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
	std::vector<float> a, b, c;
	const float *pa = (const float *)A, *pb = (const float *)B;
	if (at != CUDA_R_32F || rb) {
		a = widen(A, at, ar, ac, lda, rb);
		pa = a.data(), lda = ar ? ar : 1;
	}
	if (bt != CUDA_R_32F || rb) {
		b = widen(B, bt, br, bc, ldb, rb);
		pb = b.data(), ldb = br ? br : 1;
	}
	float *pc = (float *)C;
	int ld = ldc;
	if (ct == CUDA_R_16BF) {
		c = beta != 0 ? widen(C, ct, m, n, ldc, false) : std::vector<float>((size_t)m * n);
		pc = c.data(), ld = m;
	}
	emu_gemm::sgemm(ta != CUBLAS_OP_N, tb != CUBLAS_OP_N, m, n, k, alpha, pa, lda, pb, ldb, beta,
			pc, ld);
	if (ct == CUDA_R_16BF)
		for (int j = 0; j < n; j++)
			for (int i = 0; i < m; i++)
				((__nv_bfloat16 *)C)[(size_t)j * ldc + i] =
					__float2bfloat16_rn(c[(size_t)j * m + i]);
}

/* cuBLAS's own checks of cublasGemmEx's arguments (its documentation):
 * a negative size, or a leading dimension under max(1, the stored rows),
 * is CUBLAS_STATUS_INVALID_VALUE; types outside its table for the compute
 * type are CUBLAS_STATUS_NOT_SUPPORTED (CUBLAS_COMPUTE_32F: A, B and C in
 * fp32, or A and B in bf16 with C in bf16 or fp32; the _FAST_ compute types:
 * fp32 only; cublasDgemm: the sizes); a NULL handle is
 * CUBLAS_STATUS_NOT_INITIALIZED, a negative batch count INVALID_VALUE. The
 * backend's BLAS_CK then aborts as on the GPU. */
bool dims_bad(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda, int ldb,
	      int ldc)
{
	int ar = ta == CUBLAS_OP_N ? m : k, br = tb == CUBLAS_OP_N ? k : n;
	return m < 0 || n < 0 || k < 0 || lda < std::max(1, ar) || ldb < std::max(1, br) ||
	       ldc < std::max(1, m);
}

cublasStatus_t gemm_check(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
			  int n, int k, cudaDataType_t at, int lda, cudaDataType_t bt, int ldb,
			  cudaDataType_t ct, int ldc, cublasComputeType_t comp, int batch = 1)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (batch < 0 || dims_bad(ta, tb, m, n, k, lda, ldb, ldc))
		return CUBLAS_STATUS_INVALID_VALUE;
	bool f32 = at == CUDA_R_32F && bt == CUDA_R_32F && ct == CUDA_R_32F;
	bool bf = at == CUDA_R_16BF && bt == CUDA_R_16BF && (ct == CUDA_R_16BF || ct == CUDA_R_32F);
	if (comp == CUBLAS_COMPUTE_32F ? !(f32 || bf) : comp == CUBLAS_COMPUTE_32F_FAST_16BF ? !f32 : true)
		return CUBLAS_STATUS_NOT_SUPPORTED;
	return CUBLAS_STATUS_SUCCESS;
}

/* One OpenBLAS thread for the CPU reference backend that the tests run in
 * the same process (the emulated GEMMs are gemm.h's, not OpenBLAS's): the
 * emulator runs on one core, and on this project's two cores OpenBLAS's
 * waiting threads took a third of the time (sched_yield) for GEMMs this
 * small. */
__attribute__((constructor)) void one_blas_thread(void)
{
	openblas_set_num_threads(1);
}

} // namespace

/* One queue stands for every stream. That is the GPU's order only while
 * the work in flight is one stream's: work on another stream (the default
 * stream, NULL, too: the backend's is non-blocking) before the host has
 * waited may run beside it on a GPU, so it aborts here. */
void emu_enqueue(cudaStream_t s, std::function<void()> work)
{
	if (eager() || g_draining) {
		dev_open o;
		work();
		return;
	}
	if (!g_q.empty() && s != g_qstream) {
		fprintf(stderr,
			"emu cudart: work queued on stream %p while stream %p's is in flight, "
			"with no wait between (on a GPU they may run side by side)\n",
			s, g_qstream);
		abort();
	}
	g_qstream = s;
	g_q.push_back(std::move(work));
}

/* ---- device ---- */

cudaError_t cudaGetDeviceCount(int *n)
{
	*n = 1;
	return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
	return d == 0 ? (cudaError_t)cudaSuccess : (cudaError_t)cudaErrorInvalidValue;
}

cudaError_t cudaGetDevice(int *d)
{
	*d = 0;
	return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int)
{
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "SIMT emulator (tests/emu)");
	p->totalGlobalMem = TOTAL;
	p->sharedMemPerBlockOptin = EMU_SMEM;
	p->multiProcessorCount = 4;
	p->major = 9;
	p->clockRate = 1000000;
	return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int)
{
	*v = a == cudaDevAttrConcurrentManagedAccess;
	return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
	return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned)
{
	static int one;
	*s = &one;
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t)
{
	drain();
	return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
	drain();
	return cudaSuccess;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *p, int)
{
	static int pool;
	*p = &pool;
	return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void *)
{
	return cudaSuccess;
}

/* ---- memory ---- */

cudaError_t cudaMalloc(void **p, size_t n)
{
	return alloc(p, n, cudaMemoryTypeDevice);
}

cudaError_t cudaMallocManaged(void **p, size_t n, unsigned)
{
	return alloc(p, n, cudaMemoryTypeManaged);
}

cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t)
{
	return alloc(p, n, cudaMemoryTypeDevice);   /* usable in stream order at once */
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned)
{
	return alloc(p, n, cudaMemoryTypeHost);
}

cudaError_t cudaFree(void *p)
{
	if (!p)
		return cudaSuccess;
	drain();   /* cudaFree synchronises the device */
	release(p);
	return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
	return cudaFree(p);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
	auto it = g_mem.find((uintptr_t)p);
	if (it == g_mem.end())
		fail("cudaFreeAsync of a pointer that is no allocation's start", p);
	if (it->second.freeing)
		fail("cudaFreeAsync twice", p);
	it->second.freeing = true;
	emu_enqueue(s, [p]() { release(p); });
	return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
	*total_b = TOTAL;
	*free_b = TOTAL - (g_used < TOTAL ? g_used : TOTAL);
	return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p)
{
	memset(a, 0, sizeof *a);
	a->type = type_of(p);
	if (a->type != cudaMemoryTypeUnregistered)
		a->devicePointer = a->hostPointer = (void *)p;
	return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind)
{
	drain();
	dev_open o;
	if (n)
		memmove(dst, src, n);
	return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind, cudaStream_t s)
{
	if (!n)
		return cudaSuccess;
	unfreed(dst, "cudaMemcpyAsync");
	unfreed(src, "cudaMemcpyAsync");
	if (type_of(dst) == cudaMemoryTypeUnregistered) {
		/* into pageable host memory: returns once the copy is done */
		drain();
		dev_open o;
		memmove(dst, src, n);
	} else if (type_of(src) == cudaMemoryTypeUnregistered) {
		/* from pageable host memory: staged when issued */
		std::vector<unsigned char> st((const unsigned char *)src,
					      (const unsigned char *)src + n);
		emu_enqueue(s, [dst, st]() { memcpy(dst, st.data(), st.size()); });
	} else {
		emu_enqueue(s, [dst, src, n]() { memmove(dst, src, n); });
	}
	return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
	if (n && !find(p))
		fail("cudaMemsetAsync on memory that is no allocation", p);
	unfreed(p, "cudaMemsetAsync");
	emu_enqueue(s, [p, v, n]() { memset(p, v, n); });
	return cudaSuccess;
}

/* ---- cuBLAS ---- */

namespace {
/* a handle: the stream its calls are queued on (cublasSetStream; the
 * default stream, NULL, until then) */
struct blas_handle {
	cudaStream_t st;
};
} // namespace

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
	static blas_handle pool[64];   /* never freed, as a process's cuBLAS handles */
	static int used;
	if (used == 64)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	pool[used] = blas_handle{ NULL };
	*h = &pool[used++];
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	((blas_handle *)h)->st = s;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t m)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	return m == CUBLAS_POINTER_MODE_HOST ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
			    int n, int k, const void *alpha, const void *A, cudaDataType_t at,
			    int lda, const void *B, cudaDataType_t bt, int ldb, const void *beta,
			    void *C, cudaDataType_t ct, int ldc, cublasComputeType_t comp,
			    cublasGemmAlgo_t)
{
	cublasStatus_t ok = gemm_check(h, ta, tb, m, n, k, at, lda, bt, ldb, ct, ldc, comp);
	if (ok != CUBLAS_STATUS_SUCCESS)
		return ok;
	for (const void *p : { A, B, (const void *)C })
		unfreed(p, "cublasGemmEx");
	float al = *(const float *)alpha, be = *(const float *)beta;
	emu_enqueue(((blas_handle *)h)->st, [=]() {
		gemm_now(ta, tb, m, n, k, al, A, at, lda, B, bt, ldb, be, C, ct, ldc, comp);
	});
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
					  cublasOperation_t tb, int m, int n, int k,
					  const void *alpha, const void *A, cudaDataType_t at,
					  int lda, long long sA, const void *B, cudaDataType_t bt,
					  int ldb, long long sB, const void *beta, void *C,
					  cudaDataType_t ct, int ldc, long long sC, int batch,
					  cublasComputeType_t comp, cublasGemmAlgo_t)
{
	cublasStatus_t ok = gemm_check(h, ta, tb, m, n, k, at, lda, bt, ldb, ct, ldc, comp, batch);
	if (ok != CUBLAS_STATUS_SUCCESS)
		return ok;
	/* fp32 only here: what the backend calls it with */
	if (at != CUDA_R_32F || bt != CUDA_R_32F || ct != CUDA_R_32F)
		return CUBLAS_STATUS_NOT_SUPPORTED;
	float al = *(const float *)alpha, be = *(const float *)beta;
	emu_enqueue(((blas_handle *)h)->st, [=]() {
		for (int i = 0; i < batch; i++)
			gemm_now(ta, tb, m, n, k, al, (const float *)A + i * sA, at, lda,
				 (const float *)B + i * sB, bt, ldb, be, (float *)C + i * sC, ct, ldc,
				 comp);
	});
	return CUBLAS_STATUS_SUCCESS;
}

/* The pointer arrays are device memory that a queued copy may fill: read
 * when the GEMMs run, not when they are issued. */
cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
				   int m, int n, int k, const void *alpha,
				   const void *const Aarray[], cudaDataType_t at, int lda,
				   const void *const Barray[], cudaDataType_t bt, int ldb,
				   const void *beta, void *const Carray[], cudaDataType_t ct, int ldc,
				   int batch, cublasComputeType_t comp, cublasGemmAlgo_t)
{
	cublasStatus_t ok = gemm_check(h, ta, tb, m, n, k, at, lda, bt, ldb, ct, ldc, comp, batch);
	if (ok != CUBLAS_STATUS_SUCCESS)
		return ok;
	if (batch > 0 && (!find(Aarray) || !find(Barray) || !find(Carray)))
		fail("cublasGemmBatchedEx: pointer arrays outside device memory", Aarray);
	float al = *(const float *)alpha, be = *(const float *)beta;
	emu_enqueue(((blas_handle *)h)->st, [=]() {
		for (int i = 0; i < batch; i++)
			gemm_now(ta, tb, m, n, k, al, Aarray[i], at, lda, Barray[i], bt, ldb, be,
				 Carray[i], ct, ldc, comp);
	});
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
			   int n, int k, const double *alpha, const double *A, int lda,
			   const double *B, int ldb, const double *beta, double *C, int ldc)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (dims_bad(ta, tb, m, n, k, lda, ldb, ldc))
		return CUBLAS_STATUS_INVALID_VALUE;
	double al = *alpha, be = *beta;
	emu_enqueue(((blas_handle *)h)->st, [=]() {
		if (m && n)
			emu_gemm::dgemm(ta != CUBLAS_OP_N, tb != CUBLAS_OP_N, m, n, k, al, A, lda,
					B, ldb, be, C, ldc);
	});
	return CUBLAS_STATUS_SUCCESS;
}
