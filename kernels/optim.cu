/* optim.cu: the optimizer's passes on the GPU, the device of trainer/optim.h
 * (struct optim_device, assembled in kernels/backend_cuda.cu as the
 * backend object's optim): Nesterov momentum, the NorMuon sums of squares,
 * Muon's scaled cautious update, AdamW, the OE tables' two passes (row sums
 * of squares, the step), the equilibrators' (BiEq, MuonEq) passes on an
 * fp64 copy, and Neumann-Gram's passes. One thread an element (the sums:
 * one a row or column, in the host's order), each computing with the
 * functions of trainer/optim_elem.h that the host twin in trainer/optim.c
 * uses, in fp64 with the same roundings; this file is compiled with
 * -fmad=false so that no multiply-add is contracted where the host rounds
 * twice. So given the same inputs every pass equals the host twin's bit
 * for bit, except Neumann-Gram's two products (cuBLAS dgemm against
 * OpenBLAS: equal to fp64 rounding).
 *
 * Operands are managed memory (cuda_mem_alloc: the optimizer state and work
 * arrays, the model's parameters), used in place; each call returns after
 * its kernel (the host reads the results next).
 * The state (AdamW moments, Muon momentum) is fp32, 4 bytes an entry, as
 * on the host in fp32 runs; the work arrays of the matrix passes are fp64.
 * Left out: a launch for several matrices (Polar
 * Express alone takes a shape group at once); the vectors and scalars
 * between the passes (per-row factors, norms) are computed on the host
 * (trainer/polar.c, trainer/optim.c).
 * Reference: trainer/optim.c (the rounding points), trainer/optim_elem.h.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cuda_api.h"
#include "kernels/cuda_internal.h"
#include "trainer/optim_elem.h"

#define OT 256

static unsigned ogrid(int64_t n)
{
	int64_t b = (n + OT - 1) / OT;
	return (unsigned)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

#define OSTRIDE(i, n) \
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); \
	     i += (int64_t)gridDim.x * blockDim.x)

static void odone(const char *op)
{
	CUDA_CK(op, cudaGetLastError());
	CUDA_CK(op, cudaStreamSynchronize(cuda_stream()));
	cuda_prof_end(op);
}

__global__ static void k_nesterov(float *x, float *buf, const float *g, int64_t n, double w1,
				  double mu)
{
	OSTRIDE(i, n) {
		double b = buf[i];
		x[i] = (float)nesterov_elem(&b, (double)g[i], w1, mu, 0);
		buf[i] = (float)b;
	}
}

extern "C" void cuda_opt_nesterov(float *x, float *buf, const float *g, size_t n, double w1,
				  double mu)
{
	cuda_prof_begin();
	if (!n)
		return;
	k_nesterov<<<ogrid((int64_t)n), OT, 0, cuda_stream()>>>(x, buf, g, (int64_t)n, w1, mu);
	odone("optim nesterov");
}

/* ss[k] for k < count: a thread an output, summing in the host's order
 * (along the row, or down the column); x fp32 or fp64. */
template <typename T>
__global__ static void k_sumsq(double *ss, const T *x, int64_t m, int64_t n, int per_row)
{
	int64_t count = per_row ? m : n;
	OSTRIDE(k, count) {
		double s = 0;
		if (per_row)
			for (int64_t j = 0; j < n; j++)
				s += (double)x[k * n + j] * x[k * n + j];
		else
			for (int64_t i = 0; i < m; i++)
				s += (double)x[i * n + k] * x[i * n + k];
		ss[k] = s;
	}
}

template <typename T>
static void sumsq_launch(double *ss, const T *x, size_t m, size_t n, int per_row)
{
	int64_t count = (int64_t)(per_row ? m : n);
	if (!count)
		return;
	k_sumsq<T><<<ogrid(count), OT, 0, cuda_stream()>>>(ss, x, (int64_t)m, (int64_t)n, per_row);
	odone("optim sumsq");
}

extern "C" void cuda_opt_sumsq(double *ss, const float *x, size_t m, size_t n, int per_row)
{
	cuda_prof_begin();
	sumsq_launch(ss, x, m, n, per_row);
}

extern "C" void cuda_opt_sumsq64(double *ss, const double *G, size_t m, size_t n, int per_row)
{
	cuda_prof_begin();
	sumsq_launch(ss, G, m, n, per_row);
}

__global__ static void k_scale64(double *G, const double *rs, const double *cs, int64_t m,
				 int64_t n)
{
	OSTRIDE(i, m * n)
		G[i] *= (rs ? rs[i / n] : 1.0) * (cs ? cs[i % n] : 1.0);
}

extern "C" void cuda_opt_scale64(double *G, const double *rs, const double *cs, size_t m,
				 size_t n)
{
	cuda_prof_begin();
	int64_t N = (int64_t)(m * n);
	if (!N)
		return;
	k_scale64<<<ogrid(N), OT, 0, cuda_stream()>>>(G, rs, cs, (int64_t)m, (int64_t)n);
	odone("optim scale64");
}

__global__ static void k_widen(double *G, const float *x, int64_t n, int bf)
{
	OSTRIDE(i, n)
		G[i] = bf ? rnd(x[i], RND_BF16) : (double)x[i];
}

__global__ static void k_narrow(float *x, const double *G, int64_t n)
{
	OSTRIDE(i, n)
		x[i] = (float)G[i];
}

extern "C" void cuda_opt_widen(double *G, const float *x, size_t n, int bf16)
{
	cuda_prof_begin();
	if (!n)
		return;
	k_widen<<<ogrid((int64_t)n), OT, 0, cuda_stream()>>>(G, x, (int64_t)n, bf16);
	odone("optim widen");
}

extern "C" void cuda_opt_narrow(float *x, const double *G, size_t n)
{
	cuda_prof_begin();
	if (!n)
		return;
	k_narrow<<<ogrid((int64_t)n), OT, 0, cuda_stream()>>>(x, G, (int64_t)n);
	odone("optim narrow");
}

__global__ static void k_muon_update(float *w, const float *x, const double *s, int64_t m,
				     int64_t n, int per_row, double lr, double lrwd, int bf)
{
	enum round_mode xr = bf ? RND_BF16 : RND_F32;
	OSTRIDE(i, m * n) {
		double sc = s[per_row ? i / n : i % n];
		w[i] = (float)muon_update_elem(w[i], x[i], sc, lr, lrwd, RND_F32, xr);
	}
}

extern "C" void cuda_opt_muon_update(float *w, const float *x, const double *s, size_t m,
				     size_t n, int per_row, double lr, double lrwd, int bf16)
{
	cuda_prof_begin();
	int64_t N = (int64_t)(m * n);
	if (!N)
		return;
	k_muon_update<<<ogrid(N), OT, 0, cuda_stream()>>>(w, x, s, (int64_t)m, (int64_t)n, per_row,
							  lr, lrwd, bf16);
	odone("optim muon_update");
}

__global__ static void k_adamw(float *w, const float *g, float *m, float *v, int64_t n,
			       double w1, double w2, double bias2, double eps, double step_size,
			       int bf16_state, int round_g, double *U)
{
	enum round_mode r = bf16_state ? RND_BF16 : RND_F32;
	OSTRIDE(i, n) {
		double gi = round_g ? rnd(g[i], RND_BF16) : (double)g[i];
		double mi = m[i], vi = v[i];
		double u = adamw_elem(&mi, &vi, gi, w1, w2, bias2, eps, bf16_state, r);
		m[i] = (float)mi;
		v[i] = (float)vi;
		if (U)
			U[i] = u;
		else
			w[i] = (float)rnd(w[i] - step_size * u, r);
	}
}

extern "C" void cuda_opt_adamw(float *w, const float *g, float *m, float *v, size_t n,
			       double w1, double w2, double bias2, double eps, double step_size,
			       int bf16_state, int round_g, double *U)
{
	cuda_prof_begin();
	if (!n)
		return;
	k_adamw<<<ogrid((int64_t)n), OT, 0, cuda_stream()>>>(w, g, m, v, (int64_t)n, w1, w2, bias2,
							     eps, step_size, bf16_state, round_g, U);
	odone("optim adamw");
}

__global__ static void k_step_w(float *w, const double *U, int64_t n, double step_size, int bf)
{
	enum round_mode r = bf ? RND_BF16 : RND_F32;
	OSTRIDE(i, n)
		w[i] = (float)rnd(w[i] - step_size * U[i], r);
}

extern "C" void cuda_opt_step_w(float *w, const double *U, size_t n, double step_size, int bf16)
{
	cuda_prof_begin();
	if (!n)
		return;
	k_step_w<<<ogrid((int64_t)n), OT, 0, cuda_stream()>>>(w, U, (int64_t)n, step_size, bf16);
	odone("optim step_w");
}

/* OE tables: a thread a row for the sums (column order, as the host), a
 * thread an entry for the step. */
__global__ static void k_oe_sumsq(double *rs, const unsigned short *g, const uint32_t *counts,
				  int64_t rows, int64_t cols)
{
	OSTRIDE(i, rows) {
		double s = 0;
		for (int64_t j = 0; counts[i] && j < cols; j++) {
			double G = oe_g_elem(opt_bf16_to_f32(g[i * cols + j]), counts[i], RND_F32);
			s += G * G;
		}
		rs[i] = s;
	}
}

extern "C" void cuda_opt_oe_sumsq(double *rs, const uint16_t *g, const uint32_t *counts,
				  size_t rows, size_t cols)
{
	cuda_prof_begin();
	if (!rows)
		return;
	k_oe_sumsq<<<ogrid((int64_t)rows), OT, 0, cuda_stream()>>>(rs, g, counts, (int64_t)rows,
								   (int64_t)cols);
	odone("optim oe_sumsq");
}

__global__ static void k_oe_step(unsigned short *w, const unsigned short *g,
				 const uint32_t *counts, int64_t rows, int64_t cols, double eta,
				 double rms)
{
	OSTRIDE(at, rows * cols) {
		uint32_t c = counts[at / cols];
		if (!c)
			continue;
		double G = oe_g_elem(opt_bf16_to_f32(g[at]), c, RND_F32);
		double step = oe_step_elem(G, eta, rms, RND_F32);
		w[at] = opt_f32_to_bf16((float)rnd(opt_bf16_to_f32(w[at]) - step, RND_BF16));
	}
}

extern "C" void cuda_opt_oe_step(uint16_t *w, const uint16_t *g, const uint32_t *counts,
				 size_t rows, size_t cols, double eta, double rms)
{
	cuda_prof_begin();
	int64_t N = (int64_t)(rows * cols);
	if (!N)
		return;
	k_oe_step<<<ogrid(N), OT, 0, cuda_stream()>>>(w, g, counts, (int64_t)rows, (int64_t)cols,
						       eta, rms);
	odone("optim oe_step");
}

/* ---- Neumann-Gram's passes (U row-major V x d, fp64) ---- */

__global__ static void k_colsum64(double *s, const double *U, int64_t V, int64_t d)
{
	OSTRIDE(j, d) {
		double a = 0;
		for (int64_t v = 0; v < V; v++)
			a += U[v * d + j];
		s[j] = a;
	}
}

extern "C" void cuda_opt_colsum64(double *s, const double *U, size_t V, size_t d)
{
	cuda_prof_begin();
	if (!d)
		return;
	k_colsum64<<<ogrid((int64_t)d), OT, 0, cuda_stream()>>>(s, U, (int64_t)V, (int64_t)d);
	odone("optim colsum64");
}

__global__ static void k_ng_project(double *U, double *proj, double *rs, const double *mu,
				    int64_t V, int64_t d)
{
	OSTRIDE(v, V) {
		double s = 0, q = 0;
		double *u = U + v * d;
		for (int64_t j = 0; j < d; j++)
			s += u[j] * mu[j];
		proj[v] = s;
		for (int64_t j = 0; j < d; j++) {
			u[j] -= s * mu[j];
			q += u[j] * u[j];
		}
		rs[v] = q;
	}
}

extern "C" void cuda_opt_ng_project(double *U, double *proj, double *rs, const double *mu,
				    size_t V, size_t d)
{
	cuda_prof_begin();
	if (!V)
		return;
	k_ng_project<<<ogrid((int64_t)V), OT, 0, cuda_stream()>>>(U, proj, rs, mu, (int64_t)V,
								   (int64_t)d);
	odone("optim ng_project");
}

static cublasHandle_t opt_blas(void)
{
	static cublasHandle_t h;
	if (!h && (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS ||
		   cublasSetStream(h, cuda_stream()) != CUBLAS_STATUS_SUCCESS)) {
		fprintf(stderr, "backend_cuda: optim: cuBLAS cannot start\n");
		abort();
	}
	return h;
}

static void blas_ck(cublasStatus_t s, const char *op)
{
	if (s != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "backend_cuda: %s: cuBLAS status %d\n", op, (int)s);
		abort();
	}
}

/* Row-major X (r x c) is column-major X^T (c x r): H = U^T U is, column-
 * major, Uc Uc^T with Uc = U^T (d x V); W = U + c U H is Wc = Wc + c Hc Uc
 * with Hc = H^T as stored. */
/* cuBLAS takes int sizes: larger ones stop the run instead of wrapping */
static void blas_dims(size_t V, size_t d, const char *op)
{
	if (V > (size_t)INT_MAX || d > (size_t)INT_MAX) {
		fprintf(stderr, "backend_cuda: %s: %zu x %zu is over cuBLAS's int sizes\n", op, V,
			d);
		abort();
	}
}

extern "C" void cuda_opt_gram64(double *H, const double *U, size_t V, size_t d)
{
	const double one = 1.0, zero = 0.0;
	if (!d)
		return;
	blas_dims(V, d, "optim gram64");
	cuda_prof_begin();
	blas_ck(cublasDgemm(opt_blas(), CUBLAS_OP_N, CUBLAS_OP_T, (int)d, (int)d, (int)V, &one, U,
			    (int)d, U, (int)d, &zero, H, (int)d), "optim gram64");
	odone("optim gram64");
}

extern "C" void cuda_opt_ng_whiten(double *W, const double *U, const double *H, double c,
				   size_t V, size_t d)
{
	const double one = 1.0;
	if (!V || !d)
		return;
	blas_dims(V, d, "optim ng_whiten");
	cuda_prof_begin();
	CUDA_CK("optim ng_whiten", cudaMemcpyAsync(W, U, V * d * sizeof(double),
						   cudaMemcpyDefault, cuda_stream()));
	blas_ck(cublasDgemm(opt_blas(), CUBLAS_OP_N, CUBLAS_OP_N, (int)d, (int)V, (int)d, &c, H,
			    (int)d, U, (int)d, &one, W, (int)d), "optim ng_whiten");
	odone("optim ng_whiten");
}

__global__ static void k_ng_combine(double *U, const double *proj, const double *mu,
				    const double *W, double c, int64_t V, int64_t d)
{
	OSTRIDE(i, V * d)
		U[i] = proj[i / d] * mu[i % d] + c * W[i];
}

extern "C" void cuda_opt_ng_combine(double *U, const double *proj, const double *mu,
				    const double *W, double c, size_t V, size_t d)
{
	cuda_prof_begin();
	int64_t N = (int64_t)(V * d);
	if (!N)
		return;
	k_ng_combine<<<ogrid(N), OT, 0, cuda_stream()>>>(U, proj, mu, W, c, (int64_t)V, (int64_t)d);
	odone("optim ng_combine");
}
