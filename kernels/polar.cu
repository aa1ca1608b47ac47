/* polar.cu: Polar Express (the optimizer's Muon orthogonalisation)
 * on the GPU for a batch of same-shape matrices, the GPU twin of
 * trainer/polar.c polar_express_f32 with the same rounding points in each
 * of its arithmetics (mode, trainer/optim.h enum polar_mode):
 *  - 0 (fp32): plain fp32.
 *  - 2 (bf16 compiled, polar_arith = compiled): every realized tensor (X,
 *    the norm, A = X X^T, A A, B, P) is bf16; each elementwise expression
 *    (X / (|X| 1.02 + 1e-6), b A + c A A, a X + P) is computed in fp32
 *    from its bf16 inputs with fp32 scalars (explicit _rn operations, no
 *    FMA contraction, as the CPU reference) and rounded to bf16 once.
 *  - 1 (bf16 eager, polar_arith = eager): additionally every elementwise
 *    op takes its scalar rounded to bf16 and rounds its result.
 * In both bf16 modes every GEMM takes bf16 inputs and accumulates in fp32
 * (cuBLAS CUBLAS_COMPUTE_32F_FAST_16BF on bf16-representable fp32 data,
 * strided batched); the Frobenius norm accumulates in fp64 (fixed block
 * tree, so results are reproducible run to run).
 *
 * The Muon shape groups of the benchmark run as one batch each.
 * Left out: the optimizer around it (its element-wise passes are
 * kernels/optim.cu; trainer/optim.c hands Polar Express here through
 * optim_set_polar with the backend object's polar_express, a shape group a
 * call).
 * Reference: trainer/polar.c (the CPU reference and its coefficients, which
 * this table must equal: tests/gpu/test_cuda_ops.c compares the two);
 * Amsel et al., The Polar Express (2025).
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

#include "kernels/cuda_api.h"
#include "kernels/cuda_internal.h"

static const double polar_coeffs_gpu[5][3] = {
	{8.156554524902461, -22.48329292557795, 15.878769915207462},
	{4.042929935166739, -2.808917465908714, 0.5000178451051316},
	{3.8916678022926607, -2.772484153217685, 0.5060648178503393},
	{3.285753657755655, -2.3681294933425376, 0.46449024233003106},
	{2.3465413258596377, -1.7097828382687081, 0.42323551169305323},
};

__device__ static inline float rnd(float x, int bf)
{
	return bf ? __bfloat162float(__float2bfloat16_rn(x)) : x;
}

static float rnd_host(float x, int bf)
{
	return bf ? __bfloat162float(__float2bfloat16_rn(x)) : x;
}

#define PT 256

__global__ static void k_round(float *x, int64_t n, int bf)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		x[i] = rnd(x[i], bf);
}

/* one block per matrix: den[b] = |X_b| 1.02 + 1e-6 with |X_b| rounded to
 * bf16 (bf) and, eager (e), each scalar and result too */
__global__ static void k_den(const float *X, int64_t mn, float *den, int bf, int e)
{
	__shared__ double sh[PT];
	const float *x = X + (int64_t)blockIdx.x * mn;
	double s = 0;
	for (int64_t i = threadIdx.x; i < mn; i += blockDim.x)
		s += (double)x[i] * x[i];
	sh[threadIdx.x] = s;
	__syncthreads();
	for (int o = PT / 2; o > 0; o >>= 1) {
		if (threadIdx.x < o)
			sh[threadIdx.x] += sh[threadIdx.x + o];
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		float nrm = rnd((float)sqrt(sh[0]), bf);
		float d = rnd(__fmul_rn(nrm, rnd(1.02f, e)), e);
		den[blockIdx.x] = rnd(__fadd_rn(d, rnd(1e-6f, e)), e);
	}
}

__global__ static void k_scale(float *X, int64_t mn, int64_t n, const float *den, int bf)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		X[i] = rnd(__fdiv_rn(X[i], den[i / mn]), bf);
}

/* A = rnd(rnd(b A, e) + rnd(c AA, e), bf) (AA already rounded) */
__global__ static void k_bmix(float *A, const float *AA, int64_t n, float b, float c, int bf, int e)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		A[i] = rnd(__fadd_rn(rnd(__fmul_rn(b, A[i]), e), rnd(__fmul_rn(c, AA[i]), e)), bf);
}

/* X = rnd(rnd(a X, e) + rnd(P, bf), bf) */
__global__ static void k_xmix(float *X, const float *P, int64_t n, float a, int bf, int e)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		X[i] = rnd(__fadd_rn(rnd(__fmul_rn(a, X[i]), e), rnd(P[i], bf)), bf);
}

static unsigned pgrid(int64_t n)
{
	int64_t b = (n + PT - 1) / PT;
	return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

static cublasHandle_t polar_blas(void)
{
	static cublasHandle_t h;
	if (!h) {
		if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS ||
		    cublasSetStream(h, cuda_stream()) != CUBLAS_STATUS_SUCCESS) {
			fprintf(stderr, "backend_cuda: polar: cuBLAS initialisation failed\n");
			abort();
		}
	}
	return h;
}

/* Row-major C (M,N) = op(A) op(B) for each of `batch` matrices, as the
 * column-major C^T = op(B)^T op(A)^T. */
static void gemm_rm(int ta, int tb, int M, int N, int K, const float *A, int lda, long long sA,
		    const float *B, int ldb, long long sB, float *C, long long sC, int batch, int bf)
{
	const float one = 1, zero = 0;
	cublasStatus_t s = cublasGemmStridedBatchedEx(
		polar_blas(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K,
		&one, B, CUDA_R_32F, ldb, sB, A, CUDA_R_32F, lda, sA, &zero, C, CUDA_R_32F, N, sC,
		batch, bf ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (s != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "backend_cuda: polar: cuBLAS status %d\n", (int)s);
		abort();
	}
}

extern "C" void cuda_polar_express(float *X, size_t batch, size_t m, size_t n, int mode)
{
	/* bf: bf16 tensors; e: eager's roundings of every op and scalar */
	int bf = mode != 0, e = mode == 1;
	if (!batch || !m || !n)
		return;
	if (m > INT32_MAX || n > INT32_MAX || batch > INT32_MAX) {
		fprintf(stderr, "backend_cuda: polar: matrix too large\n");
		abort();
	}
	cudaStream_t st = cuda_stream();
	cuda_prof_begin();
	int64_t mn = (int64_t)(m * n), tot = mn * (int64_t)batch;
	size_t q = m > n ? n : m;
	int tall = m > n, im = (int)m, in = (int)n, iq = (int)q, nb = (int)batch;
	int64_t qq = (int64_t)(q * q);
	/* device copy of X when it is host memory (managed and device are used in place) */
	float *dX = X;
	int staged = !cuda_mem_is_device(X);
	size_t xb = (size_t)tot * sizeof(float);
	size_t wb = ((size_t)(2 * qq + mn) * batch + batch) * sizeof(float);
	if (staged) {
		dX = (float *)cuda_scratch_alloc("polar", xb);
		CUDA_CK("polar", cudaMemcpyAsync(dX, X, xb, cudaMemcpyHostToDevice, st));
	}
	float *A = (float *)cuda_scratch_alloc("polar", wb);
	float *AA = A + qq * (int64_t)batch, *P = AA + qq * (int64_t)batch;
	float *den = P + tot;

	k_round<<<pgrid(tot), PT, 0, st>>>(dX, tot, bf);
	k_den<<<nb, PT, 0, st>>>(dX, mn, den, bf, e);
	k_scale<<<pgrid(tot), PT, 0, st>>>(dX, mn, tot, den, bf);
	for (int it = 0; it < 5; it++) {
		float a = rnd_host((float)polar_coeffs_gpu[it][0], e);
		float b = rnd_host((float)polar_coeffs_gpu[it][1], e);
		float c = rnd_host((float)polar_coeffs_gpu[it][2], e);
		if (tall)       /* A = X^T X (n x n) */
			gemm_rm(1, 0, iq, iq, im, dX, in, mn, dX, in, mn, A, qq, nb, bf);
		else            /* A = X X^T (m x m) */
			gemm_rm(0, 1, iq, iq, in, dX, in, mn, dX, in, mn, A, qq, nb, bf);
		k_round<<<pgrid(qq * nb), PT, 0, st>>>(A, qq * nb, bf);
		gemm_rm(0, 0, iq, iq, iq, A, iq, qq, A, iq, qq, AA, qq, nb, bf);
		k_round<<<pgrid(qq * nb), PT, 0, st>>>(AA, qq * nb, bf);
		k_bmix<<<pgrid(qq * nb), PT, 0, st>>>(A, AA, qq * nb, b, c, bf, e);
		if (tall)       /* P = X B */
			gemm_rm(0, 0, im, in, in, dX, in, mn, A, iq, qq, P, mn, nb, bf);
		else            /* P = B X */
			gemm_rm(0, 0, im, in, im, A, iq, qq, dX, in, mn, P, mn, nb, bf);
		k_xmix<<<pgrid(tot), PT, 0, st>>>(dX, P, tot, a, bf, e);
	}
	CUDA_CK("polar", cudaGetLastError());
	if (staged) {
		CUDA_CK("polar", cudaMemcpyAsync(X, dX, xb, cudaMemcpyDeviceToHost, st));
		cuda_scratch_free(dX, xb);
	}
	cuda_scratch_free(A, wb);
	CUDA_CK("polar", cudaStreamSynchronize(st));
	cuda_prof_end(e ? "polar_express bf16 eager" : bf ? "polar_express bf16" : "polar_express fp32");
}
