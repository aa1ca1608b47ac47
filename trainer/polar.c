/* polar.c: the matrix operators of the optimizer: Polar Express
 * (docs/model.md; karpathy/autoresearch train.py muon_step_fused), the
 * pre-polar equilibrators BiEq (paper 004 section 3.1), MuonEq-R and
 * MuonEq-RC (paper 004 Table 1 rows 2a/2b, after Chang et al. Alg. 2), and
 * Neumann-Gram whitening (paper 004 Lemma 2). Matrices are
 * row-major; products go through cblas (sgemm for the fp32/bf16 paths,
 * dgemm for fp64).
 *
 * bf16 Polar Express comes in two arithmetics (enum polar_mode, the config
 * key polar_arith). Both: X = bf16(g); every matmul takes bf16 inputs,
 * accumulates in fp32 (cuBLAS semantics; sgemm here) and rounds its output
 * to bf16; the Frobenius norm accumulates in fp64 and is rounded to bf16
 * (a realized bf16 tensor in both).
 *  - compiled (the default): what the benchmark's muon_step_fused did under
 *    torch.compile on CUDA. Inductor fuses each elementwise expression into
 *    one kernel that loads its bf16 inputs, computes in fp32 with the Python
 *    scalars as fp32 constants, and stores one bf16 result:
 *    X = bf16(X / (nrm * 1.02f + 1e-6f)), B = bf16(b A + c AA),
 *    X = bf16(a X + P), each product and sum an fp32 operation (a compiler
 *    that contracts them to FMAs differs by one fp32 ulp before the bf16
 *    rounding, which only moves a value sitting on a bf16 tie).
 *  - eager: PyTorch's eager bf16 tensor arithmetic, one operation at a
 *    time: each elementwise op takes its Python scalar rounded to bf16,
 *    computes in fp32 and rounds its result to bf16. Rounding the
 *    coefficients moves the result by about 11% at the benchmark's shapes.
 * Summation order differs from any GPU kernel, so results match a correct
 * implementation only to bf16 tolerance (several percent of the update:
 * docs/model.md, Precision).
 * Left out: fewer than 5 iterations (ns_steps is fixed at 5 in the benchmark).
 */
/* Vectorised elementwise loops (bit-exact: see trainer/backend_cpu.c). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "lib/bf16.h"
#include "lib/err.h"
#include "trainer/optim.h"

static const double polar_coeffs[5][3] = {
	{8.156554524902461, -22.48329292557795, 15.878769915207462},
	{4.042929935166739, -2.808917465908714, 0.5000178451051316},
	{3.8916678022926607, -2.772484153217685, 0.5060648178503393},
	{3.285753657755655, -2.3681294933425376, 0.46449024233003106},
	{2.3465413258596377, -1.7097828382687081, 0.42323551169305323},
};

static inline float rnd_if(float x, int bf)
{
	return bf ? bf16_round(x) : x;
}

static void round_all(float *x, size_t n, int bf)
{
	if (!bf)
		return;
	for (size_t i = 0; i < n; i++)
		x[i] = bf16_round(x[i]);
}

int polar_mode_of(const struct config *c)
{
	if (c->polar == POLAR_FP32)
		return POLAR_MODE_FP32;
	return c->polar_arith == POLAR_ARITH_EAGER ? POLAR_MODE_BF16_EAGER : POLAR_MODE_BF16_COMPILED;
}

void polar_express_f32(float *X, size_t m, size_t n, int mode)
{
	size_t mn = m * n, q = m > n ? n : m;
	int tall = m > n, bf = mode != POLAR_MODE_FP32, cmp = mode == POLAR_MODE_BF16_COMPILED;
	/* eager rounds every intermediate result (and each scalar); compiled
	 * only the realized tensors (ebf) */
	int ebf = bf && !cmp;
	float *A = xmalloc(q * q * sizeof *A);
	float *AA = xmalloc(q * q * sizeof *AA);
	float *P = xmalloc(mn * sizeof *P);

	round_all(X, mn, bf);                            /* X = g.bfloat16() */
	double ss = 0;
	for (size_t i = 0; i < mn; i++)
		ss += (double)X[i] * X[i];
	float nrm = rnd_if((float)sqrt(ss), bf);         /* X.norm() */
	float den = rnd_if(nrm * rnd_if(1.02f, ebf), ebf);
	den = rnd_if(den + rnd_if(1e-6f, ebf), ebf);
	for (size_t i = 0; i < mn; i++)
		X[i] = rnd_if(X[i] / den, bf);

	for (int it = 0; it < 5; it++) {
		float a = rnd_if((float)polar_coeffs[it][0], ebf);
		float b = rnd_if((float)polar_coeffs[it][1], ebf);
		float c = rnd_if((float)polar_coeffs[it][2], ebf);
		int iq = (int)q, im = (int)m, in = (int)n;
		if (tall)       /* A = X^T X (n x n) */
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, iq, iq, im,
				    1.0f, X, in, X, in, 0.0f, A, iq);
		else            /* A = X X^T (m x m) */
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, iq, iq, in,
				    1.0f, X, in, X, in, 0.0f, A, iq);
		round_all(A, q * q, bf);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, iq, iq, iq,
			    1.0f, A, iq, A, iq, 0.0f, AA, iq);
		round_all(AA, q * q, bf);
		for (size_t i = 0; i < q * q; i++)   /* B = b A + c (A A), into A */
			A[i] = rnd_if(rnd_if(b * A[i], ebf) + rnd_if(c * AA[i], ebf), bf);
		if (tall)       /* P = X B */
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, im, in, in,
				    1.0f, X, in, A, iq, 0.0f, P, in);
		else            /* P = B X */
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, im, in, im,
				    1.0f, A, iq, X, in, 0.0f, P, in);
		for (size_t i = 0; i < mn; i++)
			X[i] = rnd_if(rnd_if(a * X[i], ebf) + rnd_if(P[i], bf), bf);
	}
	free(A);
	free(AA);
	free(P);
}

void polar_express_f64(double *X, size_t m, size_t n)
{
	size_t mn = m * n, q = m > n ? n : m;
	int tall = m > n;
	double *A = xmalloc(q * q * sizeof *A);
	double *AA = xmalloc(q * q * sizeof *AA);
	double *P = xmalloc(mn * sizeof *P);
	double ss = 0;
	for (size_t i = 0; i < mn; i++)
		ss += X[i] * X[i];
	double den = sqrt(ss) * 1.02 + 1e-6;
	for (size_t i = 0; i < mn; i++)
		X[i] /= den;
	for (int it = 0; it < 5; it++) {
		double a = polar_coeffs[it][0], b = polar_coeffs[it][1], c = polar_coeffs[it][2];
		int iq = (int)q, im = (int)m, in = (int)n;
		if (tall)
			cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, iq, iq, im,
				    1.0, X, in, X, in, 0.0, A, iq);
		else
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, iq, iq, in,
				    1.0, X, in, X, in, 0.0, A, iq);
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, iq, iq, iq,
			    1.0, A, iq, A, iq, 0.0, AA, iq);
		for (size_t i = 0; i < q * q; i++)
			A[i] = b * A[i] + c * AA[i];
		if (tall)
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, im, in, in,
				    1.0, X, in, A, iq, 0.0, P, in);
		else
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, im, in, im,
				    1.0, A, iq, X, in, 0.0, P, in);
		for (size_t i = 0; i < mn; i++)
			X[i] = a * X[i] + P[i];
	}
	free(A);
	free(AA);
	free(P);
}

double homotopy_alpha(int step, double tau)
{
	if (tau <= 0)
		return 1.0;
	double r = step / tau;
	if (r > 1)
		r = 1;
	return r * r;
}

/* One BiEq step: rows (per_row) or columns of G scaled by ((1-a) + a
 * (r_k / mean r + 1e-4))^-1/2, r_k the mean of G^2 over row (column) k; w
 * holds the m (n) factors. */
static void bieq_side(const struct optim_device *d, double *G, size_t m, size_t n, double a,
		      double *w, int per_row)
{
	size_t K = per_row ? m : n, len = per_row ? n : m;
	double mr = 0;
	d->sumsq64(w, G, m, n, per_row);
	for (size_t k = 0; k < K; k++) {
		w[k] /= len;
		mr += w[k];
	}
	mr /= K;
	for (size_t k = 0; k < K; k++)
		w[k] = 1.0 / sqrt((1 - a) + a * (w[k] / (mr + 1e-30) + 1e-4));
	d->scale64(G, per_row ? w : NULL, per_row ? NULL : w, m, n);
}

void bieq_apply_on(const struct optim_device *d, double *G, size_t m, size_t n, double a,
		   double *work)
{
	for (int pass = 0; pass < 2; pass++) {
		bieq_side(d, G, m, n, a, work, 1);
		bieq_side(d, G, m, n, a, work, 0);   /* column means recomputed after the row step */
	}
}

void muoneq_r_apply_on(const struct optim_device *d, double *G, size_t m, size_t n,
		       double *work)
{
	d->sumsq64(work, G, m, n, 1);
	for (size_t i = 0; i < m; i++)
		work[i] = 1.0 / sqrt(work[i] + 1e-8);
	d->scale64(G, work, NULL, m, n);
}

void muoneq_rc_apply_on(const struct optim_device *d, double *G, size_t m, size_t n,
			double *work)
{
	double *r = work, *c = work + m;
	d->sumsq64(r, G, m, n, 1);
	d->sumsq64(c, G, m, n, 0);
	for (size_t i = 0; i < m; i++)
		r[i] = 1.0 / sqrt(r[i] + 1e-8);
	for (size_t j = 0; j < n; j++)
		c[j] = 1.0 / sqrt(c[j] + 1e-8);
	d->scale64(G, r, c, m, n);
}

/* The plain forms: the host twin, a work array of their own. */
void bieq_apply(double *G, size_t m, size_t n, double a)
{
	double *w = xmalloc((m + n) * sizeof *w);
	bieq_apply_on(optim_device_host(), G, m, n, a, w);
	free(w);
}

void muoneq_r_apply(double *G, size_t m, size_t n)
{
	double *w = xmalloc((m + n) * sizeof *w);
	muoneq_r_apply_on(optim_device_host(), G, m, n, w);
	free(w);
}

void muoneq_rc_apply(double *G, size_t m, size_t n)
{
	double *w = xmalloc((m + n) * sizeof *w);
	muoneq_rc_apply_on(optim_device_host(), G, m, n, w);
	free(w);
}

size_t neumann_work_doubles(size_t V, size_t d)
{
	return 2 * d + 2 * V + d * d + V * d;
}

/* Sums (each row's in order, then the rows in order) run as the device's
 * passes; the vector and scalar arithmetic is here. */
void neumann_gram_apply_on(const struct optim_device *dv, double *U, size_t V, size_t d,
			   double a, double *work)
{
	if (V == 0 || d == 0)
		return;
	double *mu = work, *hs = mu + d, *proj = hs + d, *rs = proj + V, *H = rs + V;
	double *W = H + d * d;
	/* mu = u / (||u|| + 1e-30), u the mean row */
	dv->colsum64(mu, U, V, d);
	double nu = 0;
	for (size_t j = 0; j < d; j++) {
		mu[j] /= (double)V;
		nu += mu[j] * mu[j];
	}
	nu = sqrt(nu);
	for (size_t j = 0; j < d; j++)
		mu[j] /= nu + 1e-30;
	/* Up = (U mu^T) mu; U becomes Uo = U - Up (proj keeps U mu^T) */
	dv->ng_project(U, proj, rs, mu, V, d);
	double no2 = 0;
	for (size_t v = 0; v < V; v++)
		no2 += rs[v];
	/* H = Uo^T Uo / (||Uo^T Uo||_F + 1e-30) */
	dv->gram64(H, U, V, d);
	dv->sumsq64(hs, H, d, d, 1);
	double hn = 0;
	for (size_t i = 0; i < d; i++)
		hn += hs[i];
	hn = sqrt(hn);
	/* Uw = Uo (I - 0.5 a H) = Uo - (0.5 a / (hn + 1e-30)) Uo (Uo^T Uo) */
	dv->ng_whiten(W, U, H, -0.5 * a / (hn + 1e-30), V, d);
	dv->sumsq64(rs, W, V, d, 1);
	double nw2 = 0;
	for (size_t v = 0; v < V; v++)
		nw2 += rs[v];
	double c = sqrt(no2) / (sqrt(nw2) + 1e-30);
	dv->ng_combine(U, proj, mu, W, c, V, d);
}

void neumann_gram_apply(double *U, size_t V, size_t d, double a)
{
	double *w = xmalloc((neumann_work_doubles(V, d) ? neumann_work_doubles(V, d) : 1) *
			    sizeof *w);
	neumann_gram_apply_on(optim_device_host(), U, V, d, a, w);
	free(w);
}
