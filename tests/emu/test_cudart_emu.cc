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
 * against its sums; every GEMM (bf16 and fp32 operands, the _FAST_16BF
 * rounding, bf16 and fp32 outputs, alpha and beta, transposes, leading
 * dimensions over the rows, the batched forms, cublasDgemm) bit for bit
 * against a plain loop in tests/emu/gemm.h's order, the same bits when
 * computed in chunks of columns or rows, by the AVX and the SSE2 versions
 * alike; launches on device, managed and mapped host memory.
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

/* tests/emu/gemm.h's order written plainly, every product, sum and
 * scaling through a volatile (nothing fused, nothing regrouped): one entry
 * from a row a of op(A) and a column b of op(B), k long; c its old value */
template <class T> T ordered(const T *a, const T *b, int k, T alpha, T beta, T c)
{
	volatile T s = 0;
	for (int p = 0; p < k; p++) {
		volatile T pr = a[p] * b[p];
		s = s + pr;
	}
	volatile T v = alpha * s;
	if (beta != 0) {
		volatile T w = beta * c;
		v = v + w;
	}
	return v;
}

struct rng RG;

/* a stored rows x cols (ld >= rows) column-major matrix of random values,
 * as fp32 (T float) or fp64, and the same values widened from bf16 where
 * bf16 is asked */
template <class T> std::vector<T> stored(int rows, int cols, int ld, bool bf16)
{
	std::vector<T> x((size_t)ld * cols);
	for (auto &v : x) {
		v = (T)rng_normal(&RG);
		if (bf16)
			v = __bfloat162float(__float2bfloat16_rn((float)v));
	}
	(void)rows;
	return x;
}

/* entry (i, p) of op(X) for X stored column-major with leading dimension ld */
template <class T> T op_at(const std::vector<T> &x, int ld, bool tr, int i, int p)
{
	return tr ? x[(size_t)i * ld + p] : x[(size_t)p * ld + i];
}

/* C = alpha op(A) op(B) + beta C by ordered(), with the operands' values
 * first rounded to bf16 where round_bf (the _FAST_16BF compute type) */
template <class T>
std::vector<T> ordered_gemm(bool ta, bool tb, int m, int n, int k, T alpha, const std::vector<T> &A,
			    int lda, const std::vector<T> &B, int ldb, T beta, std::vector<T> C,
			    int ldc, bool round_bf)
{
	auto rb = [&](T v) { return round_bf ? (T)__bfloat162float(__float2bfloat16_rn((float)v)) : v; };
	std::vector<T> a((size_t)k), b((size_t)k);
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			for (int p = 0; p < k; p++) {
				a[p] = rb(op_at(A, lda, ta, i, p));
				b[p] = rb(op_at(B, ldb, tb, p, j));
			}
			T &c = C[(size_t)j * ldc + i];
			c = ordered(a.data(), b.data(), k, alpha, beta, c);
		}
	return C;
}

/* entries of x and y (m x n, leading dimension ld) whose bits differ */
template <class T> int differ(const T *x, const T *y, int m, int n, int ld)
{
	int d = 0;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++)
			d += memcmp(&x[(size_t)j * ld + i], &y[(size_t)j * ld + i], sizeof(T)) != 0;
	return d;
}

} // namespace

/* Every emulated GEMM sums each entry in tests/emu/gemm.h's order: the
 * same bits as ordered() for bf16 and fp32 operands, fp32 ones rounded to
 * bf16 first (_FAST_16BF), fp32 and bf16 outputs (rounded once, to nearest
 * even), alpha and beta (beta 0: C's NaN not read), every transpose, leading
 * dimensions over the rows; cublasGemmBatchedEx, cublasGemmStridedBatchedEx
 * and cublasDgemm too;
 * and the same bits again when the product is computed in chunks of 1, 7,
 * 33 and 64 columns, or of 5, 16 and 8 rows (op(B), op(A) and C offset),
 * as the backend does with its chunks of rows. The plain sum also lies
 * within (k + 1) 2^-24 sum |a b| of the fp64 one (the reference sums what it
 * should). OpenBLAS's sgemm and dgemm in gemm.h's place fail it with its
 * Haswell, Zen, SkylakeX, Cooperlake and Prescott kernels (entries out of
 * the order with all of them, chunks that differ from the whole product
 * with each); its Sandybridge kernels happen to sum in this order. */
TEST(gemm_order)
{
	cublasHandle_t h = NULL;
	CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
	const cudaDataType_t b16 = CUDA_R_16BF, f32 = CUDA_R_32F;
	const cublasComputeType_t c32 = CUBLAS_COMPUTE_32F, fast = CUBLAS_COMPUTE_32F_FAST_16BF;
	struct gcase {
		bool ta, tb;
		int m, n, k;
		cudaDataType_t in, out;
		cublasComputeType_t comp;
		float alpha, beta;
	} cases[] = {
		{ false, false, 37, 70, 300, b16, f32, c32, 1.f, 0.f },
		{ true, false, 37, 70, 300, b16, f32, c32, 0.7f, 1.25f },
		{ false, true, 45, 19, 129, f32, f32, c32, 1.f, 0.f },
		{ true, true, 45, 19, 129, f32, f32, fast, 0.5f, -2.f },
		{ false, true, 64, 96, 256, b16, b16, c32, 1.f, 0.5f },
		{ true, false, 8, 130, 1, f32, f32, c32, 1.f, 1.f },
		{ false, false, 9, 3, 0, f32, f32, c32, 1.f, 0.5f },
	};
	for (const gcase &g : cases) {
		int lda = (g.ta ? g.k : g.m) + 3, ldb = (g.tb ? g.n : g.k) + 2, ldc = g.m + 5;
		int ac = g.ta ? g.m : g.k, bc = g.tb ? g.k : g.n;
		bool ib = g.in == b16, ob = g.out == b16;
		std::vector<float> A = stored<float>(lda - 3, ac, lda, ib);
		std::vector<float> B = stored<float>(ldb - 2, bc, ldb, ib);
		std::vector<float> C0 = stored<float>(g.m, g.n, ldc, ob);
		if (g.beta == 0)
			std::fill(C0.begin(), C0.end(), NAN);   /* beta 0: C is not read */
		size_t ae = ib ? 2 : 4, ce = ob ? 2 : 4;
		char *dA, *dB, *dC[2];
		CHECK(cudaMallocManaged((void **)&dA, std::max(A.size(), (size_t)64) * ae,
					cudaMemAttachGlobal) == cudaSuccess);
		CHECK(cudaMallocManaged((void **)&dB, std::max(B.size(), (size_t)64) * ae,
					cudaMemAttachGlobal) == cudaSuccess);
		for (size_t i = 0; i < A.size(); i++)
			ib ? (void)(((__nv_bfloat16 *)dA)[i] = __float2bfloat16_rn(A[i])) : (void)(((float *)dA)[i] = A[i]);
		for (size_t i = 0; i < B.size(); i++)
			ib ? (void)(((__nv_bfloat16 *)dB)[i] = __float2bfloat16_rn(B[i])) : (void)(((float *)dB)[i] = B[i]);
		for (int w = 0; w < 2; w++) {
			CHECK(cudaMallocManaged((void **)&dC[w], C0.size() * ce, cudaMemAttachGlobal) == cudaSuccess);
			for (size_t i = 0; i < C0.size(); i++)
				ob ? (void)(((__nv_bfloat16 *)dC[w])[i] = __float2bfloat16_rn(C0[i]))
				   : (void)(((float *)dC[w])[i] = C0[i]);
		}
		cublasOperation_t oa = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, obp = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
		auto call = [&](int i0, int j0, int mm, int nn) {
			const char *a = dA + ae * (g.ta ? (size_t)i0 * lda : (size_t)i0);
			const char *b = dB + ae * (g.tb ? (size_t)j0 : (size_t)j0 * ldb);
			char *c = dC[1] + ce * ((size_t)j0 * ldc + i0);
			return cublasGemmEx(h, oa, obp, mm, nn, g.k, &g.alpha, a, g.in, lda, b, g.in, ldb,
					    &g.beta, c, g.out, ldc, g.comp, CUBLAS_GEMM_DEFAULT);
		};
		/* dC[1]: the whole product; then again in column and row chunks into dC[0] */
		std::swap(dC[0], dC[1]);
		CHECK(call(0, 0, g.m, g.n) == CUBLAS_STATUS_SUCCESS);
		std::swap(dC[0], dC[1]);
		static const int cw[] = { 1, 7, 33, 64 }, rw[] = { 5, 16, 8 };
		int half = g.n / 2, nc = 0;
		for (int j0 = 0; j0 < half; j0 += cw[nc++ % 4])
			CHECK(call(0, j0, g.m, std::min(cw[nc % 4], half - j0)) == CUBLAS_STATUS_SUCCESS);
		for (int i0 = 0, r = 0; i0 < g.m; i0 += rw[r++ % 3])
			CHECK(call(i0, half, std::min(rw[r % 3], g.m - i0), g.n - half) == CUBLAS_STATUS_SUCCESS);
		CHECK(cudaDeviceSynchronize() == cudaSuccess);
		std::vector<float> got[2];
		for (int w = 0; w < 2; w++) {
			got[w].resize(C0.size());
			for (size_t i = 0; i < C0.size(); i++)
				got[w][i] = ob ? __bfloat162float(((__nv_bfloat16 *)dC[w])[i]) : ((float *)dC[w])[i];
		}
		std::vector<float> want = ordered_gemm<float>(g.ta, g.tb, g.m, g.n, g.k, g.alpha, A, lda, B,
							      ldb, g.beta, C0, ldc, g.comp == fast);
		if (ob)
			for (float &v : want)
				v = __bfloat162float(__float2bfloat16_rn(v));
		int d0 = differ(got[0].data(), want.data(), g.m, g.n, ldc);
		int d1 = differ(got[1].data(), got[0].data(), g.m, g.n, ldc);
		CHECKF(d0 == 0 && d1 == 0,
		       "ta %d tb %d m %d n %d k %d %s -> %s%s alpha %g beta %g: %d of %d entries not in "
		       "the order, %d differ in chunks", g.ta, g.tb, g.m, g.n, g.k, ib ? "bf16" : "fp32",
		       ob ? "bf16" : "fp32", g.comp == fast ? " (fast 16bf)" : "", (double)g.alpha,
		       (double)g.beta, d0, g.m * g.n, d1);
		/* the plain sum against fp64 (beta 0 cases, unrounded outputs) */
		if (g.beta == 0 && !ob && g.comp != fast) {
			int far = 0;
			for (int j = 0; j < g.n; j++)
				for (int i = 0; i < g.m; i++) {
					double s = 0, sa = 0;
					for (int p = 0; p < g.k; p++) {
						double x = op_at(A, lda, g.ta, i, p), y = op_at(B, ldb, g.tb, p, j);
						s += x * y, sa += fabs(x * y);
					}
					far += !(fabs(want[(size_t)j * ldc + i] - g.alpha * s) <=
						 (g.k + 1) * 0x1p-24 * fabs(g.alpha) * sa * 1.01);
				}
			CHECKF(far == 0, "m %d n %d k %d: %d entries beyond the fp32 bound", g.m, g.n, g.k, far);
		}
		cudaFree(dA), cudaFree(dB), cudaFree(dC[0]), cudaFree(dC[1]);
	}
	/* cublasGemmStridedBatchedEx (Polar Express's): three products at once */
	{
		const int m = 24, n = 40, k = 33, nb = 3;
		long long sa = (long long)m * k + 5, sb = (long long)k * n + 7, sc = (long long)m * n + 1;
		float *dA, *dB, *dC, alpha = 1, beta = 0;
		CHECK(cudaMallocManaged((void **)&dA, nb * sa * 4, cudaMemAttachGlobal) == cudaSuccess);
		CHECK(cudaMallocManaged((void **)&dB, nb * sb * 4, cudaMemAttachGlobal) == cudaSuccess);
		CHECK(cudaMallocManaged((void **)&dC, nb * sc * 4, cudaMemAttachGlobal) == cudaSuccess);
		std::vector<float> A = stored<float>(m, (int)(nb * sa / m + 1), m, false);
		std::vector<float> B = stored<float>(k, (int)(nb * sb / k + 1), k, false);
		memcpy(dA, A.data(), nb * sa * 4);
		memcpy(dB, B.data(), nb * sb * 4);
		CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA, f32, m,
						 sa, dB, f32, k, sb, &beta, dC, f32, m, sc, nb, c32,
						 CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
		CHECK(cudaDeviceSynchronize() == cudaSuccess);
		int d = 0;
		for (int b = 0; b < nb; b++) {
			std::vector<float> Ab(A.begin() + b * sa, A.begin() + b * sa + (long long)m * k);
			std::vector<float> Bb(B.begin() + b * sb, B.begin() + b * sb + (long long)k * n);
			std::vector<float> w = ordered_gemm<float>(false, false, m, n, k, 1.f, Ab, m, Bb, k,
								   0.f, std::vector<float>((size_t)m * n), m,
								   false);
			d += differ(dC + b * sc, w.data(), m, n, m);
		}
		CHECKF(d == 0, "strided batched: %d entries not in the order", d);
		cudaFree(dA), cudaFree(dB), cudaFree(dC);
	}
	/* cublasGemmBatchedEx (matmul_n's): bf16 operands, one A shared by
	 * three products, op(A) transposed, beta 1 into fp32 outputs */
	{
		const int m = 21, n = 30, k = 70, nb = 3;
		const float alpha = 0.7f, beta = 1.f;
		std::vector<float> A = stored<float>(k, m, k, true), B[nb], C0[nb];
		__nv_bfloat16 *dA, *dB[nb];
		float *dC[nb];
		void **arr;
		CHECK(cudaMallocManaged((void **)&dA, A.size() * 2, cudaMemAttachGlobal) == cudaSuccess);
		CHECK(cudaMallocManaged((void **)&arr, 3 * nb * sizeof *arr, cudaMemAttachGlobal) ==
		      cudaSuccess);
		for (size_t i = 0; i < A.size(); i++)
			dA[i] = __float2bfloat16_rn(A[i]);
		for (int b = 0; b < nb; b++) {
			B[b] = stored<float>(k, n, k, true), C0[b] = stored<float>(m, n, m, false);
			CHECK(cudaMallocManaged((void **)&dB[b], B[b].size() * 2, cudaMemAttachGlobal) ==
			      cudaSuccess);
			CHECK(cudaMallocManaged((void **)&dC[b], C0[b].size() * 4, cudaMemAttachGlobal) ==
			      cudaSuccess);
			for (size_t i = 0; i < B[b].size(); i++)
				dB[b][i] = __float2bfloat16_rn(B[b][i]);
			memcpy(dC[b], C0[b].data(), C0[b].size() * 4);
			arr[b] = dA, arr[nb + b] = dB[b], arr[2 * nb + b] = dC[b];
		}
		CHECK(cublasGemmBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha,
					  (const void *const *)arr, b16, k,
					  (const void *const *)arr + nb, b16, k, &beta, arr + 2 * nb, f32,
					  m, nb, c32, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
		CHECK(cudaDeviceSynchronize() == cudaSuccess);
		int d = 0;
		for (int b = 0; b < nb; b++) {
			std::vector<float> w = ordered_gemm<float>(true, false, m, n, k, alpha, A, k, B[b],
								   k, beta, C0[b], m, false);
			d += differ(dC[b], w.data(), m, n, m);
			cudaFree(dB[b]), cudaFree(dC[b]);
		}
		CHECKF(d == 0, "batched (pointer arrays): %d entries not in the order", d);
		cudaFree(dA), cudaFree(arr);
	}
	/* cublasDgemm: fp64, the same order, and in column chunks */
	{
		const int m = 33, n = 50, k = 200, lda = m + 1, ldb = n + 2, ldc = m + 3;
		double alpha = 0.3, beta = 0.9, *dA, *dB, *dC[2];
		std::vector<double> A = stored<double>(m, k, lda, false), B = stored<double>(n, k, ldb, false);
		std::vector<double> C0 = stored<double>(m, n, ldc, false);
		CHECK(cudaMallocManaged((void **)&dA, A.size() * 8, cudaMemAttachGlobal) == cudaSuccess);
		CHECK(cudaMallocManaged((void **)&dB, B.size() * 8, cudaMemAttachGlobal) == cudaSuccess);
		memcpy(dA, A.data(), A.size() * 8);
		memcpy(dB, B.data(), B.size() * 8);
		for (int w = 0; w < 2; w++) {
			CHECK(cudaMallocManaged((void **)&dC[w], C0.size() * 8, cudaMemAttachGlobal) == cudaSuccess);
			memcpy(dC[w], C0.data(), C0.size() * 8);
		}
		CHECK(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, dA, lda, dB, ldb, &beta,
				  dC[0], ldc) == CUBLAS_STATUS_SUCCESS);
		for (int j0 = 0, c = 0; j0 < n; j0 += 7, c++)
			CHECK(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, m, std::min(7, n - j0), k, &alpha, dA,
					  lda, dB + j0, ldb, &beta, dC[1] + (size_t)j0 * ldc, ldc) ==
			      CUBLAS_STATUS_SUCCESS);
		CHECK(cudaDeviceSynchronize() == cudaSuccess);
		std::vector<double> want = ordered_gemm<double>(false, true, m, n, k, alpha, A, lda, B, ldb,
								beta, C0, ldc, false);
		int d0 = differ(dC[0], want.data(), m, n, ldc), d1 = differ(dC[1], dC[0], m, n, ldc);
		CHECKF(d0 == 0 && d1 == 0, "cublasDgemm: %d entries not in the order, %d differ in chunks",
		       d0, d1);
		cudaFree(dA), cudaFree(dB), cudaFree(dC[0]), cudaFree(dC[1]);
	}
	/* gemm.h's two versions alike (the run uses the AVX one where there is AVX) */
	{
		const int m = 29, n = 23, k = 77;
		std::vector<float> A = stored<float>(k, m, k, false), B = stored<float>(k, n, k, false);
		std::vector<float> C0 = stored<float>(m, n, m, false);
		std::vector<float> want = ordered_gemm<float>(true, false, m, n, k, 1.5f, A, k, B, k, 0.25f,
							      C0, m, false);
		std::vector<double> Ad(A.begin(), A.end()), Bd(B.begin(), B.end()), Cd(C0.begin(), C0.end());
		std::vector<double> wantd = ordered_gemm<double>(true, false, m, n, k, 1.5, Ad, k, Bd, k,
								 0.25, Cd, m, false);
		bool avx = __builtin_cpu_supports("avx");
		for (int v = 0; v < 1 + avx; v++) {
			std::vector<float> c = C0;
			std::vector<double> cd = Cd;
			(v ? emu_gemm::sgemm_avx : emu_gemm::sgemm_sse2)(true, false, m, n, k, 1.5f, A.data(),
								       k, B.data(), k, 0.25f, c.data(), m);
			(v ? emu_gemm::dgemm_avx : emu_gemm::dgemm_sse2)(true, false, m, n, k, 1.5, Ad.data(),
								       k, Bd.data(), k, 0.25, cd.data(), m);
			int d = differ(c.data(), want.data(), m, n, m), dd = differ(cd.data(), wantd.data(), m, n, m);
			CHECKF(d == 0 && dd == 0, "gemm.h's %s version: %d fp32, %d fp64 entries not in the order",
			       v ? "AVX" : "SSE2", d, dd);
		}
		printf("  gemm.h's versions checked: SSE2%s\n", avx ? ", AVX" : " (no AVX here)");
	}
}

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
	rng_seed(&RG, 32);
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
	RUN(gemm_order);
	RUN(smem_attribute);
	RUN(streams);
	RUN(kernel_pointer_args);
	RUN(host_access_guard);
	return t_done();
}
