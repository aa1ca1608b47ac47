/* optim.cu: the optimizer's element-wise passes on the GPU, the device of
 * trainer/optim.h (struct optim_device, assembled in
 * trainer/backend_select.c as backend_optim_device): Nesterov momentum, the
 * NorMuon sums of squares, Muon's scaled cautious update, AdamW, the OE
 * tables' two passes (row sums of squares, the step) and the equilibrators'
 * (BiEq, MuonEq) passes on an fp64 copy, one
 * thread an element (the sums: one a row or column), each computing with
 * the functions of trainer/optim_elem.h that the host twin in
 * trainer/optim.c uses, in fp64 with the same roundings. This file is
 * compiled with -fmad=false so that no multiply-add is contracted where the
 * host rounds twice; the sums run in the host's order. So given the same
 * inputs every pass equals the host twin's bit for bit.
 *
 * Operands are managed memory (cuda_mem_alloc: the optimizer state and work
 * arrays, the model's parameters), used in place; each call returns after
 * its kernel (the host reads the results next).
 * Left out: fp32 state (the state is fp64 holding fp32 values, as on the
 * host: 8 bytes an entry, not 4), a launch for several matrices (Polar
 * Express alone takes a shape group at once), the arms' matrix
 * operators Neumann-Gram and Table-Neumann, which stay on the host
 * (trainer/optim.c), as do the equilibrators' per-row factors.
 * Reference: trainer/optim.c (the rounding points), trainer/optim_elem.h.
 */
#include <cuda_runtime.h>
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
}

__global__ static void k_nesterov(float *x, double *buf, const float *g, int64_t n, double w1,
				  double mu)
{
	OSTRIDE(i, n)
		x[i] = (float)nesterov_elem(&buf[i], (double)g[i], w1, mu, 0);
}

extern "C" void cuda_opt_nesterov(float *x, double *buf, const float *g, size_t n, double w1,
				  double mu)
{
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
	sumsq_launch(ss, x, m, n, per_row);
}

extern "C" void cuda_opt_sumsq64(double *ss, const double *G, size_t m, size_t n, int per_row)
{
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
	int64_t N = (int64_t)(m * n);
	if (!N)
		return;
	k_scale64<<<ogrid(N), OT, 0, cuda_stream()>>>(G, rs, cs, (int64_t)m, (int64_t)n);
	odone("optim scale64");
}

__global__ static void k_widen(double *G, const float *x, int64_t n)
{
	OSTRIDE(i, n)
		G[i] = x[i];
}

__global__ static void k_narrow(float *x, const double *G, int64_t n)
{
	OSTRIDE(i, n)
		x[i] = (float)G[i];
}

extern "C" void cuda_opt_widen(double *G, const float *x, size_t n)
{
	if (!n)
		return;
	k_widen<<<ogrid((int64_t)n), OT, 0, cuda_stream()>>>(G, x, (int64_t)n);
	odone("optim widen");
}

extern "C" void cuda_opt_narrow(float *x, const double *G, size_t n)
{
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
	int64_t N = (int64_t)(m * n);
	if (!N)
		return;
	k_muon_update<<<ogrid(N), OT, 0, cuda_stream()>>>(w, x, s, (int64_t)m, (int64_t)n, per_row,
							  lr, lrwd, bf16);
	odone("optim muon_update");
}

__global__ static void k_adamw(float *w, const float *g, double *m, double *v, int64_t n,
			       double w1, double w2, double bias2, double eps, double step_size,
			       int bf16_state)
{
	enum round_mode r = bf16_state ? RND_BF16 : RND_F32;
	OSTRIDE(i, n) {
		double gi = bf16_state ? rnd(g[i], RND_BF16) : (double)g[i];
		double u = adamw_elem(&m[i], &v[i], gi, w1, w2, bias2, eps, bf16_state, r);
		w[i] = (float)rnd(w[i] - step_size * u, r);
	}
}

extern "C" void cuda_opt_adamw(float *w, const float *g, double *m, double *v, size_t n,
			       double w1, double w2, double bias2, double eps, double step_size,
			       int bf16_state)
{
	if (!n)
		return;
	k_adamw<<<ogrid((int64_t)n), OT, 0, cuda_stream()>>>(w, g, m, v, (int64_t)n, w1, w2, bias2,
							     eps, step_size, bf16_state);
	odone("optim adamw");
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
	int64_t N = (int64_t)(rows * cols);
	if (!N)
		return;
	k_oe_step<<<ogrid(N), OT, 0, cuda_stream()>>>(w, g, counts, (int64_t)rows, (int64_t)cols,
						       eta, rms);
	odone("optim oe_step");
}
