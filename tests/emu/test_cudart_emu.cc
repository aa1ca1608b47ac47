/* test_cudart_emu.cc: the emulated CUDA runtime and cuBLAS (tests/emu/cudart.cc)
 * refuse what the real ones refuse, with the same status, so that a call the
 * GPU would reject fails on this machine first: cublasGemmEx,
 * cublasGemmBatchedEx, cublasGemmStridedBatchedEx and cublasDgemm with a
 * negative size or a leading dimension under the stored rows
 * (CUBLAS_STATUS_INVALID_VALUE), operand types outside cuBLAS's table for the
 * compute type (CUBLAS_STATUS_NOT_SUPPORTED); cudaFuncSetAttribute's
 * MaxDynamicSharedMemorySize over the 227 KiB a block can have
 * (cudaErrorInvalidValue); a kernel launched with a pointer argument into
 * host memory or freed device memory (an illegal address on the GPU), or
 * into memory cudaFreeAsync freed earlier in stream order, and a copy or a
 * GEMM on such memory. And
 * that a call they take computes: a small bf16 product with fp32 output
 * against its sums; launches on device, managed and mapped host memory.
 * And that the host touching cudaMalloc'd memory outside queued work (a
 * segfault on a GPU) stops the process, but under ASan and EMU_HOSTCHECK=0;
 * that work on a second stream while the first's is in flight aborts (the
 * one queue would order what a GPU may overlap), cuBLAS's on its handle's
 * stream; that a NULL cuBLAS handle is refused. Reference: the cuBLAS
 * documentation (cublasGemmEx: its type table and error values). */
#include "tests/emu/cudart.cc"
#include "t.h"
#include "tests/emu/emu_test.h"

namespace {

__nv_bfloat16 bf(float v)
{
	return __float2bfloat16_rn(v);
}

void k_none(void) {}

/* o[0 .. n) = 7, read past nothing: a launch's pointer arguments */
void k_fill(float *o, const float *unused, int n)
{
	(void)unused;
	for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x)
		o[i] = 7.f;
}

/* launch k_fill on o (and unused) on stream st, then wait unless told not to */
void fill(float *o, const float *unused, int n, cudaStream_t st = NULL, bool wait = true)
{
	emu_kernel(dim3(1), dim3(32), 0, st, k_fill, "k_fill")(o, unused, n);
	if (wait)
		cudaStreamSynchronize(st);
}

} // namespace

/* A kernel's pointer arguments: device memory, managed, mapped host, NULL
 * and one past an allocation's end pass; host memory of the process and
 * freed device memory abort the launch, naming the kernel and argument. */
TEST(kernel_pointer_args)
{
	float *d, *m, *h;
	CHECK(cudaMalloc((void **)&d, 64 * sizeof *d) == cudaSuccess);
	CHECK(cudaMallocManaged((void **)&m, 64 * sizeof *m, cudaMemAttachGlobal) == cudaSuccess);
	CHECK(cudaHostAlloc((void **)&h, 64 * sizeof *h, cudaHostAllocMapped) == cudaSuccess);
	float back = 0;
	fill(d, NULL, 64);
	fill(m, d + 64, 64);
	fill(h, m, 64);
	cudaMemcpy(&back, d + 63, sizeof back, cudaMemcpyDeviceToHost);
	CHECK(back == 7.f && m[0] == 7.f && h[31] == 7.f);
	cudaFree(d);
	cudaFree(m);
	cudaFreeHost(h);
	bool sig = false;
	for (const char *mode : { "host_arg", "freed_arg" }) {
		std::string out = child(mode, &sig);
		CHECKF(aborted_with(out, sig, "k_fill: argument ") &&
			       out.find("points outside device memory") != std::string::npos,
		       "%s: %s", mode, out.c_str());
	}
	/* freed in stream order (cudaFreeAsync), then used by work queued after */
	std::string out = child("freed_async_arg", &sig);
	CHECKF(aborted_with(out, sig, "k_fill: argument 0") &&
		       out.find("freed by cudaFreeAsync") != std::string::npos,
	       "a launch after cudaFreeAsync: %s", out.c_str());
	for (const char *mode : { "freed_async_copy", "freed_async_gemm" }) {
		out = child(mode, &sig);
		CHECKF(aborted_with(out, sig, "memory freed by cudaFreeAsync before it"), "%s: %s", mode,
		       out.c_str());
	}
}

/* C (2 x 3, column-major) = A (2 x 4) B (4 x 3), bf16 in, fp32 out; then
 * the refusals, each one argument off from that call */
TEST(gemm_ex_checks)
{
	const int m = 2, n = 3, k = 4;
	__nv_bfloat16 *A, *B, ha[m * k], hb[k * n];
	float *C, hc[m * n];
	CHECK(cudaMalloc((void **)&A, m * k * sizeof *A) == cudaSuccess);
	CHECK(cudaMalloc((void **)&B, k * n * sizeof *B) == cudaSuccess);
	CHECK(cudaMalloc((void **)&C, m * n * sizeof *C) == cudaSuccess);
	for (int i = 0; i < m * k; i++)
		ha[i] = bf((float)(i + 1));
	for (int i = 0; i < k * n; i++)
		hb[i] = bf((float)(i % 5) - 2.f);
	cudaMemcpy(A, ha, sizeof ha, cudaMemcpyHostToDevice);
	cudaMemcpy(B, hb, sizeof hb, cudaMemcpyHostToDevice);
	cublasHandle_t h;
	CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
	const float one = 1.f, zero = 0.f;
	const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
	const cudaDataType_t b16 = CUDA_R_16BF, f32 = CUDA_R_32F;
	const cublasComputeType_t c32 = CUBLAS_COMPUTE_32F;
	auto gemm = [&](cublasOperation_t ta, cublasOperation_t tb, int mm, int nn, int kk,
			cudaDataType_t at, int lda, cudaDataType_t bt, int ldb, cudaDataType_t ct,
			int ldc, cublasComputeType_t comp) {
		return cublasGemmEx(h, ta, tb, mm, nn, kk, &one, A, at, lda, B, bt, ldb, &zero, C,
				    ct, ldc, comp, CUBLAS_GEMM_DEFAULT);
	};
	CHECK(gemm(N, N, m, n, k, b16, m, b16, k, f32, m, c32) == CUBLAS_STATUS_SUCCESS);
	CHECK(cudaMemcpy(hc, C, sizeof hc, cudaMemcpyDeviceToHost) == cudaSuccess);
	int wrong = 0;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			float s = 0;
			for (int p = 0; p < k; p++)
				s += __bfloat162float(ha[p * m + i]) * __bfloat162float(hb[j * k + p]);
			wrong += hc[j * m + i] != s;
		}
	CHECKF(wrong == 0, "%d of 6 entries off", wrong);
	/* leading dimensions: A stored m x k (N) or k x m (T); B k x n or n x k; C m x n */
	CHECK(gemm(N, N, m, n, k, b16, m - 1, b16, k, f32, m, c32) == CUBLAS_STATUS_INVALID_VALUE);
	CHECK(gemm(T, N, m, n, k, b16, k - 1, b16, k, f32, m, c32) == CUBLAS_STATUS_INVALID_VALUE);
	CHECK(gemm(N, N, m, n, k, b16, m, b16, k - 1, f32, m, c32) == CUBLAS_STATUS_INVALID_VALUE);
	CHECK(gemm(N, T, m, n, k, b16, m, b16, n - 1, f32, m, c32) == CUBLAS_STATUS_INVALID_VALUE);
	CHECK(gemm(N, N, m, n, k, b16, m, b16, k, f32, m - 1, c32) == CUBLAS_STATUS_INVALID_VALUE);
	CHECK(gemm(N, N, m, n, -1, b16, m, b16, k, f32, m, c32) == CUBLAS_STATUS_INVALID_VALUE);
	CHECK(gemm(N, N, -1, n, k, b16, m, b16, k, f32, m, c32) == CUBLAS_STATUS_INVALID_VALUE);
	CHECK(gemm(N, N, m, -1, k, b16, m, b16, k, f32, m, c32) == CUBLAS_STATUS_INVALID_VALUE);
	/* types: mixed operands; bf16 under a _FAST_ compute type (fp32 only) */
	CHECK(gemm(N, N, m, n, k, f32, m, b16, k, f32, m, c32) == CUBLAS_STATUS_NOT_SUPPORTED);
	CHECK(gemm(N, N, m, n, k, b16, m, b16, k, CUDA_R_64F, m, c32) ==
	      CUBLAS_STATUS_NOT_SUPPORTED);
	CHECK(gemm(N, N, m, n, k, b16, m, b16, k, f32, m, CUBLAS_COMPUTE_32F_FAST_16BF) ==
	      CUBLAS_STATUS_NOT_SUPPORTED);
	/* the batched forms and cublasDgemm check the same */
	void **arr, *harr[3] = { B, A, C };
	CHECK(cudaMalloc((void **)&arr, 3 * sizeof(void *)) == cudaSuccess);
	cudaMemcpy(arr, harr, sizeof harr, cudaMemcpyHostToDevice);
	CHECK(cublasGemmBatchedEx(h, N, N, m, n, k, &one, (const void *const *)arr + 1, b16,
				  m - 1, (const void *const *)arr, b16, k, &zero, arr + 2, f32, m, 1,
				  c32, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_INVALID_VALUE);
	CHECK(cublasGemmBatchedEx(h, N, N, m, n, k, &one, (const void *const *)arr + 1, b16, m,
				  (const void *const *)arr, b16, k, &zero, arr + 2, f32, m, -1, c32,
				  CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_INVALID_VALUE);
	CHECK(cublasGemmStridedBatchedEx(h, N, N, m, n, k, &one, C, f32, m, 0, C, f32, k - 1, 0,
					 &zero, C, f32, m, 0, 1, c32, CUBLAS_GEMM_DEFAULT) ==
	      CUBLAS_STATUS_INVALID_VALUE);
	double *d, done = 1, dzero = 0;
	CHECK(cudaMallocManaged((void **)&d, 16 * sizeof *d, cudaMemAttachGlobal) == cudaSuccess);
	memset(d, 0, 16 * sizeof *d);
	CHECK(cublasDgemm(h, N, N, 2, 2, 2, &done, d, 1, d, 2, &dzero, d, 2) ==
	      CUBLAS_STATUS_INVALID_VALUE);
	CHECK(cublasDgemm(h, N, N, 2, 2, 2, &done, d, 2, d, 2, &dzero, d + 8, 2) ==
	      CUBLAS_STATUS_SUCCESS);
	CHECK(cudaStreamSynchronize(NULL) == cudaSuccess);
	cudaFree(d);
	cudaFree(arr);
	cudaFree(A);
	cudaFree(B);
	cudaFree(C);
}

/* One queue stands for every stream: work on a second stream while the
 * first's is in flight aborts (on a GPU the two may overlap), after a wait
 * it runs; cuBLAS queues on its handle's stream (cublasSetStream), and a
 * NULL handle is refused as cuBLAS refuses it. */
TEST(streams)
{
	bool sig = false;
	const char *want = "with no wait between";
	for (const char *mode : { "two_streams", "blas_default_stream" }) {
		std::string out = child(mode, &sig);
		CHECKF(aborted_with(out, sig, want), "%s: %s", mode, out.c_str());
	}
	std::string out = child("blas_set_stream", &sig);
	CHECKF(returned(out, sig), "cuBLAS on the kernels' stream: %s", out.c_str());
	cudaStream_t st;
	CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
	float *d;
	CHECK(cudaMalloc((void **)&d, 64 * sizeof *d) == cudaSuccess);
	fill(d, NULL, 64, st);
	fill(d, NULL, 64, NULL);   /* after the wait */
	cudaFree(d);
	const float one = 1, zero = 0;
	CHECK(cublasGemmEx(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, d, CUDA_R_32F, 1, d,
			   CUDA_R_32F, 1, &zero, d, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
			   CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_INITIALIZED);
	CHECK(cublasSetStream(NULL, st) == CUBLAS_STATUS_NOT_INITIALIZED);
}

/* MaxDynamicSharedMemorySize: up to the 227 KiB a block may opt in to */
TEST(smem_attribute)
{
	CHECK(cudaFuncSetAttribute(k_none, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024) ==
	      cudaSuccess);
	CHECK(cudaFuncSetAttribute(k_none, cudaFuncAttributeMaxDynamicSharedMemorySize,
				   227 * 1024 + 1) == cudaErrorInvalidValue);
}

/* The host touching cudaMalloc'd memory (a segfault on a GPU) stops the
 * process with a line naming it, a read and a write alike; managed and
 * cudaHostAlloc'd memory stay open; with EMU_HOSTCHECK=0, or under
 * AddressSanitizer (SAN=1), nothing is guarded. */
TEST(host_access_guard)
{
	bool sig = false;
	const char *want = "the host touched device memory";
	for (const char *mode : { "host_read", "host_write" }) {
		std::string out = child(mode, &sig);
		if (k_asan)
			CHECKF(returned(out, sig), "%s under ASan: %s", mode, out.c_str());
		else
			CHECKF(aborted_with(out, sig, want), "%s: %s", mode, out.c_str());
	}
	std::string out = child("host_read", &sig, "EMU_HOSTCHECK=0");
	CHECKF(returned(out, sig), "EMU_HOSTCHECK=0: %s", out.c_str());
	out = child("host_open", &sig);
	CHECKF(returned(out, sig), "managed and cudaHostAlloc'd memory: %s", out.c_str());
}

int main(int argc, char **argv)
{
	self = argv[0];
	if (argc > 1) {
		float *d = NULL;
		cudaMalloc((void **)&d, 64 * sizeof *d);
		if (!strcmp(argv[1], "host_arg")) {
			std::vector<float> host(64);
			fill(d, host.data(), 64);
		} else if (!strcmp(argv[1], "freed_arg")) {
			cudaFree(d);
			float *gone = d;
			d = NULL;
			fill(gone, NULL, 64);
		} else if (!strncmp(argv[1], "two_streams", 11) || !strncmp(argv[1], "blas_", 5)) {
			/* a kernel on st, not waited for, then a kernel or a GEMM on
			 * the default stream, or a GEMM on st */
			cudaStream_t st;
			cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
			cublasHandle_t h = NULL;
			cublasCreate(&h);
			if (!strcmp(argv[1], "blas_set_stream"))
				cublasSetStream(h, st);
			fill(d, NULL, 64, st, false);
			const float one = 1, zero = 0;
			if (!strcmp(argv[1], "two_streams"))
				fill(d, NULL, 64, NULL, false);
			else
				cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, d, CUDA_R_32F, 8, d,
					     CUDA_R_32F, 8, &zero, d, CUDA_R_32F, 8, CUBLAS_COMPUTE_32F,
					     CUBLAS_GEMM_DEFAULT);
			cudaDeviceSynchronize();
		} else if (!strncmp(argv[1], "freed_async_", 12)) {
			cudaFreeAsync(d, NULL);
			float h[4] = { 0 };
			const float one = 1, zero = 0;
			cublasHandle_t bh = NULL;
			cublasCreate(&bh);
			if (!strcmp(argv[1], "freed_async_arg"))
				fill(d, NULL, 64, NULL, false);
			else if (!strcmp(argv[1], "freed_async_copy"))
				cudaMemcpyAsync(d, h, sizeof h, cudaMemcpyHostToDevice, NULL);
			else
				cublasGemmEx(bh, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, CUDA_R_32F, 2, d,
					     CUDA_R_32F, 2, &zero, d, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
					     CUBLAS_GEMM_DEFAULT);
			cudaDeviceSynchronize();
		} else if (!strcmp(argv[1], "host_read")) {
			fill(d, NULL, 64);
			printf("read %g\n", (double)d[5]);
		} else if (!strcmp(argv[1], "host_write")) {
			d[5] = 1.f;
		} else if (!strcmp(argv[1], "host_open")) {
			float *m, *h;
			cudaMallocManaged((void **)&m, 64 * sizeof *m, cudaMemAttachGlobal);
			cudaHostAlloc((void **)&h, 64 * sizeof *h, cudaHostAllocMapped);
			fill(m, NULL, 64);
			fill(h, NULL, 64);
			m[1] += h[2];
			printf("open %g\n", (double)m[1]);
			cudaFree(m);
			cudaFreeHost(h);
		}
		cudaFree(d);
		printf("returned\n");
		fflush(stdout);   /* before LeakSanitizer's exit, which skips stdio's */
		return 0;
	}
	RUN(gemm_ex_checks);
	RUN(smem_attribute);
	RUN(streams);
	RUN(kernel_pointer_args);
	RUN(host_access_guard);
	return t_done();
}
