/* test_backend.c: every op of the CPU backend (trainer/backend.h) against a
 * naive loop written here in double, in both fp64 (tolerance 1e-12) and
 * fp32 (per-op tolerance, relative to the result's largest magnitude). The
 * CUDA backend is to be checked against these same cases.
 *
 * Attention runs with T = 150 (three row blocks of 64) and windows 0, 40
 * and T, so the block and window edges are crossed. Backward ops are
 * checked against hand-derived naive gradients and, for the loss, against
 * central differences. And the MFU's denominator (peak_flops).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "backend_complete.h"
#include "lib/bf16.h"
#include "lib/rng.h"
#include "trainer/backend.h"
#include "trainer/backend_select.h"
#include "trainer/optim.h"

static const struct backend_ops *bk;
static struct rng R;

/* ---- helpers: double master arrays <-> run-dtype tensors ---- */

static double *rnd(size_t n, double a)
{
	double *p = malloc(n * sizeof *p);
	for (size_t i = 0; i < n; i++)
		p[i] = a * (2 * rng_uniform(&R) - 1);
	return p;
}

/* A tensor of dtype dt holding src (or zeros), shape (d0,d1,d2,d3) with
 * trailing 0 dims omitted. */
static struct tensor mk(enum tdtype dt, const double *src, int64_t d0, int64_t d1, int64_t d2,
			int64_t d3)
{
	struct tensor t = { NULL, dt, 0, { 1, 1, 1, 1 } };
	int64_t d[4] = { d0, d1, d2, d3 };
	for (int i = 0; i < 4 && d[i]; i++)
		t.shape[t.ndim++] = d[i];
	int64_t n = tensor_numel(&t);
	t.data = calloc((size_t)n, tdtype_size(dt));
	for (int64_t i = 0; src && i < n; i++) {
		if (dt == TD_F64)
			((double *)t.data)[i] = src[i];
		else
			((float *)t.data)[i] = (float)src[i];
	}
	return t;
}

static double at(const struct tensor *t, int64_t i)
{
	return t->dtype == TD_F64 ? ((double *)t->data)[i] : ((float *)t->data)[i];
}

/* max |t - want| / max(max |want|, 1e-3): inputs are O(1), and a result
 * that is zero in exact arithmetic (attention with window 0 has dq = dk = 0)
 * is compared absolutely. */
static double relerr(const struct tensor *t, const double *want, int64_t n)
{
	double dm = 0, wm = 0;
	for (int64_t i = 0; i < n; i++) {
		double d = fabs(at(t, i) - want[i]);
		if (d > dm || d != d)
			dm = d != d ? INFINITY : d;
		if (fabs(want[i]) > wm)
			wm = fabs(want[i]);
	}
	return dm / (wm > 1e-3 ? wm : 1e-3);
}

static double tol_of(enum tdtype dt, double f32)
{
	return dt == TD_F64 ? 1e-12 : f32;
}

#define NDT 2
static const enum tdtype DTS[NDT] = { TD_F64, TD_F32 };
static const char *const DTN[NDT] = { "fp64", "fp32" };

/* ---- matmul ---- */

TEST(matmul_all_transposes)
{
	int M = 37, N = 29, K = 45;
	double *A = rnd((size_t)M * K, 1), *Bm = rnd((size_t)K * N, 1), *C0 = rnd((size_t)M * N, 1);
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (int di = 0; di < NDT; di++) {
				enum tdtype dt = DTS[di];
				/* a stored (M,K) or (K,M); b stored (K,N) or (N,K) */
				double *As = malloc((size_t)M * K * sizeof(double));
				double *Bs = malloc((size_t)K * N * sizeof(double));
				for (int i = 0; i < M; i++)
					for (int k = 0; k < K; k++)
						As[ta ? k * M + i : i * K + k] = A[i * K + k];
				for (int k = 0; k < K; k++)
					for (int j = 0; j < N; j++)
						Bs[tb ? j * K + k : k * N + j] = Bm[k * N + j];
				struct tensor a = ta ? mk(dt, As, K, M, 0, 0) : mk(dt, As, M, K, 0, 0);
				struct tensor b = tb ? mk(dt, Bs, N, K, 0, 0) : mk(dt, Bs, K, N, 0, 0);
				struct tensor c = mk(dt, C0, M, N, 0, 0);
				bk->matmul(&c, &a, &b, ta, tb, 0.5, 2.0);
				double *want = malloc((size_t)M * N * sizeof(double));
				for (int i = 0; i < M; i++)
					for (int j = 0; j < N; j++) {
						double s = 0;
						for (int k = 0; k < K; k++)
							s += A[i * K + k] * Bm[k * N + j];
						want[i * N + j] = 0.5 * s + 2.0 * C0[i * N + j];
					}
				double e = relerr(&c, want, (int64_t)M * N);
				CHECKF(e < tol_of(dt, 1e-6), "ta %d tb %d %s: %.3g", ta, tb, DTN[di], e);
				free(As), free(Bs), free(a.data), free(b.data), free(c.data), free(want);
			}
	free(A), free(Bm), free(C0);
}

/* ---- rmsnorm ---- */

TEST(rmsnorm_fwd_bwd)
{
	int N = 13, C = 48;
	double eps = 1e-6;
	double *x = rnd((size_t)N * C, 2), *dy = rnd((size_t)N * C, 1), *d0 = rnd((size_t)N * C, 1);
	double *y = malloc((size_t)N * C * sizeof(double)), *r = malloc(N * sizeof(double));
	double *dx = malloc((size_t)N * C * sizeof(double));
	for (int n = 0; n < N; n++) {
		double ss = 0, sd = 0;
		for (int c = 0; c < C; c++)
			ss += x[n * C + c] * x[n * C + c];
		r[n] = 1 / sqrt(ss / C + eps);
		for (int c = 0; c < C; c++) {
			y[n * C + c] = x[n * C + c] * r[n];
			sd += dy[n * C + c] * x[n * C + c];
		}
		/* d/dx of x r(x): r dy - x r^3 (x.dy) / C */
		for (int c = 0; c < C; c++)
			dx[n * C + c] = d0[n * C + c] + r[n] * dy[n * C + c] -
					x[n * C + c] * r[n] * r[n] * r[n] * sd / C;
	}
	for (int di = 0; di < NDT; di++) {
		enum tdtype dt = DTS[di];
		struct tensor tx = mk(dt, x, N, C, 0, 0), ty = mk(dt, NULL, N, C, 0, 0);
		struct tensor tr = mk(dt, NULL, N, 0, 0, 0), tdy = mk(dt, dy, N, C, 0, 0);
		struct tensor tdx = mk(dt, d0, N, C, 0, 0);
		bk->rmsnorm_fwd(&ty, &tr, &tx, eps);
		CHECKF(relerr(&ty, y, N * C) < tol_of(dt, 1e-6), "%s fwd", DTN[di]);
		CHECKF(relerr(&tr, r, N) < tol_of(dt, 1e-6), "%s rstd", DTN[di]);
		bk->rmsnorm_bwd(&tdx, &tdy, &ty, &tr, 1);
		CHECKF(relerr(&tdx, dx, N * C) < tol_of(dt, 1e-5), "%s bwd", DTN[di]);
		/* in place forward */
		bk->rmsnorm_fwd(&tx, &tr, &tx, eps);
		CHECKF(relerr(&tx, y, N * C) < tol_of(dt, 1e-6), "%s fwd in place", DTN[di]);
		free(tx.data), free(ty.data), free(tr.data), free(tdy.data), free(tdx.data);
	}
	free(x), free(dy), free(d0), free(y), free(r), free(dx);
}

TEST(rmsnorm_ref_fwd_bwd)
{
	int N = 9, C = 32;
	double eps = 1e-6;
	double *x = rnd((size_t)N * C, 1), *s = rnd((size_t)N * C, 1), *dy = rnd((size_t)N * C, 1);
	double *y = malloc((size_t)N * C * sizeof(double)), *r = malloc(N * sizeof(double));
	double *dx = malloc((size_t)N * C * sizeof(double)), *ds = malloc((size_t)N * C * sizeof(double));
	for (int n = 0; n < N; n++) {
		double ss = 0, t = 0;
		for (int c = 0; c < C; c++)
			ss += s[n * C + c] * s[n * C + c], t += dy[n * C + c] * x[n * C + c];
		r[n] = 1 / sqrt(ss / C + eps);
		for (int c = 0; c < C; c++) {
			y[n * C + c] = x[n * C + c] * r[n];
			dx[n * C + c] = r[n] * dy[n * C + c];
			ds[n * C + c] = -r[n] * r[n] * r[n] * t / C * s[n * C + c];
		}
	}
	for (int di = 0; di < NDT; di++) {
		enum tdtype dt = DTS[di];
		struct tensor tx = mk(dt, x, N, C, 0, 0), ts = mk(dt, s, N, C, 0, 0);
		struct tensor ty = mk(dt, NULL, N, C, 0, 0), tr = mk(dt, NULL, N, 0, 0, 0);
		struct tensor tdy = mk(dt, dy, N, C, 0, 0), tdx = mk(dt, NULL, N, C, 0, 0);
		struct tensor tds = mk(dt, NULL, N, C, 0, 0);
		bk->rmsnorm_ref_fwd(&ty, &tr, &tx, &ts, eps);
		CHECKF(relerr(&ty, y, N * C) < tol_of(dt, 1e-6), "%s fwd", DTN[di]);
		bk->rmsnorm_ref_bwd(&tdx, &tds, &tdy, &tx, &ts, &tr, 0);
		CHECKF(relerr(&tdx, dx, N * C) < tol_of(dt, 1e-6), "%s dx", DTN[di]);
		CHECKF(relerr(&tds, ds, N * C) < tol_of(dt, 1e-5), "%s ds", DTN[di]);
		free(tx.data), free(ts.data), free(ty.data), free(tr.data), free(tdy.data);
		free(tdx.data), free(tds.data);
	}
	free(x), free(s), free(dy), free(y), free(r), free(dx), free(ds);
}

/* ---- rope ---- */

TEST(rope_fwd_bwd)
{
	int Bn = 2, T = 7, H = 3, D = 8, h2 = D / 2, T0 = 10;
	size_t n = (size_t)Bn * T * H * D;
	double *x = rnd(n, 1), *cs = malloc((size_t)T0 * h2 * sizeof(double));
	double *sn = malloc((size_t)T0 * h2 * sizeof(double)), *y = malloc(n * sizeof(double));
	for (int t = 0; t < T0; t++)
		for (int c = 0; c < h2; c++) {
			double f = t * pow(10000.0, -2.0 * c / D);
			cs[t * h2 + c] = cos(f), sn[t * h2 + c] = sin(f);
		}
	for (int b = 0; b < Bn; b++)
		for (int t = 0; t < T; t++)
			for (int h = 0; h < H; h++)
				for (int c = 0; c < h2; c++) {
					size_t o = (((size_t)b * T + t) * H + h) * D;
					double x1 = x[o + c], x2 = x[o + c + h2];
					double co = cs[t * h2 + c], si = sn[t * h2 + c];
					y[o + c] = x1 * co + x2 * si;
					y[o + c + h2] = -x1 * si + x2 * co;
				}
	for (int di = 0; di < NDT; di++) {
		enum tdtype dt = DTS[di];
		struct tensor tx = mk(dt, x, (int64_t)Bn * T, H, D, 0);
		struct tensor tc = mk(dt, cs, T0, h2, 0, 0), ts = mk(dt, sn, T0, h2, 0, 0);
		bk->rope_fwd(&tx, &tc, &ts, T);
		CHECKF(relerr(&tx, y, (int64_t)n) < tol_of(dt, 1e-6), "%s fwd", DTN[di]);
		/* the backward is the transpose: a rotation's inverse */
		bk->rope_bwd(&tx, &tc, &ts, T);
		CHECKF(relerr(&tx, x, (int64_t)n) < tol_of(dt, 1e-6), "%s bwd", DTN[di]);
		free(tx.data), free(tc.data), free(ts.data);
	}
	free(x), free(cs), free(sn), free(y);
}

/* The fused rope + QK-norm equals rope then rmsnorm bit for bit (the same
 * arithmetic in the same order), out-of-place (x untouched) and in place;
 * its backward equals rmsnorm_bwd then rope_bwd. D = 128 (the benchmark's)
 * and D = 8. */
TEST(rope_rmsnorm_fused)
{
	for (int di = 0; di < NDT; di++)
		for (int dd = 0; dd < 2; dd++) {
			enum tdtype dt = DTS[di];
			int Bn = 2, T = 5, H = 3, D = dd ? 128 : 8, h2 = D / 2, T0 = 6;
			int64_t rows = (int64_t)Bn * T * H;
			size_t n = (size_t)rows * D, es = tdtype_size(dt);
			double *x = rnd(n, 2), *g = rnd(n, 1), *cs = rnd((size_t)T0 * h2, 1);
			double *sn = rnd((size_t)T0 * h2, 1);
			struct tensor tc = mk(dt, cs, T0, h2, 0, 0), ts = mk(dt, sn, T0, h2, 0, 0);
			/* unfused: rope in place, then rmsnorm in place */
			struct tensor u = mk(dt, x, (int64_t)Bn * T, H, D, 0), ur = mk(dt, NULL, rows, 0, 0, 0);
			struct tensor u2 = { u.data, dt, 2, { rows, D, 1, 1 } };
			bk->rope_fwd(&u, &tc, &ts, T);
			bk->rmsnorm_fwd(&u2, &ur, &u2, 1e-6);
			/* fused, out of place */
			struct tensor fx = mk(dt, x, (int64_t)Bn * T, H, D, 0), fo = mk(dt, NULL, (int64_t)Bn * T, H, D, 0);
			struct tensor fr = mk(dt, NULL, rows, 0, 0, 0), x0 = mk(dt, x, (int64_t)Bn * T, H, D, 0);
			bk->rope_rmsnorm_fwd(&fo, &fr, NULL, &fx, NULL, &tc, &ts, T, 1e-6);
			CHECKF(!memcmp(fo.data, u.data, n * es) && !memcmp(fr.data, ur.data, (size_t)rows * es),
			       "%s D %d: fused forward differs", DTN[di], D);
			CHECKF(!memcmp(fx.data, x0.data, n * es), "%s D %d: x written", DTN[di], D);
			/* fused, in place */
			bk->rope_rmsnorm_fwd(&fx, &fr, NULL, &fx, NULL, &tc, &ts, T, 1e-6);
			CHECKF(!memcmp(fx.data, u.data, n * es), "%s D %d: in-place forward differs", DTN[di], D);
			/* backward: unfused in place vs fused in place and out of place */
			struct tensor ud = mk(dt, g, (int64_t)Bn * T, H, D, 0), fd = mk(dt, g, (int64_t)Bn * T, H, D, 0);
			struct tensor fd2 = mk(dt, NULL, (int64_t)Bn * T, H, D, 0), g0 = mk(dt, g, (int64_t)Bn * T, H, D, 0);
			struct tensor ud2 = { ud.data, dt, 2, { rows, D, 1, 1 } };
			bk->rmsnorm_bwd(&ud2, &ud2, &u2, &ur, 0);
			bk->rope_bwd(&ud, &tc, &ts, T);
			bk->rope_rmsnorm_bwd(&fd2, NULL, &fd, &fo, &fr, NULL, &tc, &ts, T);
			bk->rope_rmsnorm_bwd(&fd, NULL, &fd, &fo, &fr, NULL, &tc, &ts, T);
			CHECKF(!memcmp(fd.data, ud.data, n * es) && !memcmp(fd2.data, ud.data, n * es),
			       "%s D %d: fused backward differs", DTN[di], D);
			/* and it is not trivially equal: the gradient moved */
			CHECK(memcmp(fd.data, g0.data, n * es) != 0);
			void *fr_[] = { tc.data, ts.data, u.data, ur.data, fx.data, fo.data, fr.data, x0.data,
					ud.data, fd.data, fd2.data, g0.data, x, g, cs, sn };
			for (size_t i = 0; i < sizeof fr_ / sizeof *fr_; i++)
				free(fr_[i]);
		}
}

/* With q_tau's column scale s the fused op equals rope, rmsnorm, then
 * mul_cols_fwd (forward; xn keeps the normalised values) and mul_cols_bwd
 * (ds added onto what it held), rmsnorm_bwd, then rope_bwd (backward), bit
 * for bit, with out aliasing x as the model calls it. */
TEST(rope_rmsnorm_qtau_fused)
{
	for (int di = 0; di < NDT; di++)
		for (int dd = 0; dd < 2; dd++) {
			enum tdtype dt = DTS[di];
			int Bn = 2, T = 5, H = 3, D = dd ? 128 : 8, h2 = D / 2, T0 = 6;
			int64_t rows = (int64_t)Bn * T * H, NT = (int64_t)Bn * T;
			size_t n = (size_t)rows * D, es = tdtype_size(dt);
			double *x = rnd(n, 2), *g = rnd(n, 1), *cs = rnd((size_t)T0 * h2, 1);
			double *sn = rnd((size_t)T0 * h2, 1), *sv = rnd((size_t)H * D, 3);
			double *d0 = rnd((size_t)H * D, 4);
			struct tensor tc = mk(dt, cs, T0, h2, 0, 0), ts = mk(dt, sn, T0, h2, 0, 0);
			struct tensor s = mk(dt, sv, H * D, 0, 0, 0);
			/* unfused: rope, rmsnorm (in place: u = xn), mul_cols into q */
			struct tensor u = mk(dt, x, NT, H, D, 0), ur = mk(dt, NULL, rows, 0, 0, 0);
			struct tensor u2 = { u.data, dt, 2, { rows, D, 1, 1 } };
			struct tensor un = { u.data, dt, 2, { NT, H * D, 1, 1 } };
			struct tensor uq = mk(dt, NULL, NT, H * D, 0, 0);
			bk->rope_fwd(&u, &tc, &ts, T);
			bk->rmsnorm_fwd(&u2, &ur, &u2, 1e-6);
			bk->mul_cols_fwd(&uq, &un, &s);
			/* fused, out = x (in place), xn apart */
			struct tensor fx = mk(dt, x, NT, H, D, 0), fn = mk(dt, NULL, NT, H, D, 0);
			struct tensor fr = mk(dt, NULL, rows, 0, 0, 0);
			bk->rope_rmsnorm_fwd(&fx, &fr, &fn, &fx, &s, &tc, &ts, T, 1e-6);
			CHECKF(!memcmp(fx.data, uq.data, n * es) && !memcmp(fn.data, u.data, n * es) &&
			       !memcmp(fr.data, ur.data, (size_t)rows * es),
			       "%s D %d: fused q_tau forward differs", DTN[di], D);
			CHECKF(memcmp(fx.data, fn.data, n * es) != 0, "%s D %d: scale not applied", DTN[di], D);
			/* backward: unfused in place vs fused in place */
			struct tensor ud = mk(dt, g, NT, H * D, 0, 0), fd = mk(dt, g, NT, H, D, 0);
			struct tensor ud4 = { ud.data, dt, 3, { NT, H, D, 1 } };
			struct tensor ud2 = { ud.data, dt, 2, { rows, D, 1, 1 } };
			struct tensor uds = mk(dt, d0, H * D, 0, 0, 0), fds = mk(dt, d0, H * D, 0, 0, 0);
			struct tensor ds0 = mk(dt, d0, H * D, 0, 0, 0);
			bk->mul_cols_bwd(&ud, &uds, &ud, &un, &s);
			bk->rmsnorm_bwd(&ud2, &ud2, &u2, &ur, 0);
			bk->rope_bwd(&ud4, &tc, &ts, T);
			bk->rope_rmsnorm_bwd(&fd, &fds, &fd, &fn, &fr, &s, &tc, &ts, T);
			CHECKF(!memcmp(fd.data, ud.data, n * es), "%s D %d: fused q_tau backward differs",
			       DTN[di], D);
			CHECKF(!memcmp(fds.data, uds.data, (size_t)H * D * es), "%s D %d: ds differs",
			       DTN[di], D);
			CHECK(memcmp(fds.data, ds0.data, (size_t)H * D * es) != 0);
			void *fr_[] = { tc.data, ts.data, s.data, u.data, ur.data, uq.data, fx.data, fn.data,
					fr.data, ud.data, fd.data, uds.data, fds.data, ds0.data, x, g, cs, sn,
					sv, d0 };
			for (size_t i = 0; i < sizeof fr_ / sizeof *fr_; i++)
				free(fr_[i]);
		}
}

/* mul_cols_bwd's ds in fp32 runs: the exact products summed in fp64 and
 * rounded once (the exact sum here, to the float nearest), where a running
 * fp32 sum of 200,000 products of 0.1 drifts by hundreds of ulps; from ds's
 * value. The fused q_tau backward is checked equal to it above. */
TEST(mul_cols_ds_fp64_sum)
{
	int64_t N = 200000, K = 3;
	float *d = malloc((size_t)(N * K) * sizeof *d), *x = malloc((size_t)(N * K) * sizeof *x);
	float s[3] = { 1, 2, 3 }, ds[3] = { 5, 0, -1 };
	double want[3] = { 5, 0, -1 };
	float run[3] = { 5, 0, -1 };
	for (int64_t n = 0; n < N; n++)
		for (int64_t k = 0; k < K; k++) {
			d[n * K + k] = 0.1f * (float)(k + 1);
			x[n * K + k] = k == 2 ? (float)(1 + n % 7) : 1.0f;
			want[k] += (double)d[n * K + k] * x[n * K + k];
			run[k] += d[n * K + k] * x[n * K + k];
		}
	struct tensor td = { d, TD_F32, 2, { N, K, 1, 1 } }, tx = { x, TD_F32, 2, { N, K, 1, 1 } };
	struct tensor ts = { s, TD_F32, 1, { K, 1, 1, 1 } }, tds = { ds, TD_F32, 1, { K, 1, 1, 1 } };
	bk->mul_cols_bwd(&td, &tds, &td, &tx, &ts);
	int drift = 0;
	for (int k = 0; k < 3; k++) {
		CHECKF(ds[k] == (float)want[k], "ds[%d] = %.9g, want %.9g", k, ds[k], want[k]);
		drift |= run[k] != (float)want[k];
	}
	CHECK(drift);   /* the check can tell: a running fp32 sum misses */
	CHECK(d[0] == 0.1f && d[1] == 0.2f * 2);   /* dx = dout * s, in place */
	free(d), free(x);
}

/* ---- OE rows and visit counts ---- */

/* ngram_rows against the OE hashing written out (id2 = x + (V+1) p1, id3 = id2 +
 * (V+1)^2 p2, sentinel V before a row's start, mod m + 2j) with V large
 * enough that id3 needs more than 32 bits; count_rows against a plain
 * tally, adding onto counts already there. */
TEST(ngram_rows_and_counts)
{
	int64_t B = 3, T = 40, N = B * T, V = 100000;
	int32_t *idx = malloc((size_t)N * sizeof *idx), *rows = malloc((size_t)N * sizeof *rows);
	for (int64_t n = 0; n < N; n++)
		idx[n] = (int32_t)rng_below(&R, (uint64_t)V);
	idx[5] = (int32_t)V - 1;
	int wide = 0;
	for (int j = 0; j < 4; j++) {
		int64_t nrows = 150855 + 2 * j;
		int order = 2 + j / 2, bad = 0;
		bk->ngram_rows(rows, idx, B, T, V, order, nrows);
		for (int64_t b = 0; b < B; b++)
			for (int64_t t = 0; t < T; t++) {
				uint64_t x = (uint64_t)idx[b * T + t];
				uint64_t p1 = t >= 1 ? (uint64_t)idx[b * T + t - 1] : (uint64_t)V;
				uint64_t p2 = t >= 2 ? (uint64_t)idx[b * T + t - 2] : (uint64_t)V;
				uint64_t id = x + (uint64_t)(V + 1) * p1;
				if (order == 3)
					id += (uint64_t)(V + 1) * (uint64_t)(V + 1) * p2;
				wide |= id > UINT32_MAX;
				bad += rows[b * T + t] != (int32_t)(id % (uint64_t)nrows);
			}
		CHECKF(bad == 0, "table %d: %d rows differ from the hashing written out", j, bad);
	}
	CHECK(wide);
	/* counts: a tally with repeats, onto nonzero counts */
	int64_t nr = 37;
	uint32_t *c = calloc((size_t)nr, sizeof *c), *want = calloc((size_t)nr, sizeof *want);
	for (int64_t n = 0; n < N; n++)
		rows[n] = (int32_t)(idx[n] % (n % 2 ? 5 : nr));
	c[3] = want[3] = 7;
	for (int64_t n = 0; n < N; n++)
		want[rows[n]]++;
	bk->count_rows(c, nr, rows, N);
	CHECK(!memcmp(c, want, (size_t)nr * sizeof *c));
	free(idx), free(rows), free(c), free(want);
}

/* ---- attention ---- */

/* Naive full-matrix attention forward and backward for one (b,h) layout. */
static void attn_naive(int Bn, int T, int H, int D, int w, double scale, const double *q,
		       const double *k, const double *v, const double *dy, double *y, double *dq,
		       double *dk, double *dv)
{
	size_t n = (size_t)Bn * T * H * D;
	memset(y, 0, n * sizeof(double));
	memset(dq, 0, n * sizeof(double));
	memset(dk, 0, n * sizeof(double));
	memset(dv, 0, n * sizeof(double));
	double *P = malloc((size_t)T * T * sizeof(double)), *dP = malloc((size_t)T * T * sizeof(double));
#define IX(b, t, h, c) ((((size_t)(b) * T + (t)) * H + (h)) * D + (c))
	for (int b = 0; b < Bn; b++)
		for (int h = 0; h < H; h++) {
			for (int t = 0; t < T; t++) {
				double mx = -INFINITY, sum = 0;
				for (int s = 0; s < T; s++) {
					int ok = s <= t && s >= t - w;
					double sc = 0;
					for (int c = 0; c < D; c++)
						sc += q[IX(b, t, h, c)] * k[IX(b, s, h, c)];
					P[t * T + s] = ok ? scale * sc : -INFINITY;
					if (ok && P[t * T + s] > mx)
						mx = P[t * T + s];
				}
				for (int s = 0; s < T; s++) {
					P[t * T + s] = P[t * T + s] == -INFINITY ? 0 : exp(P[t * T + s] - mx);
					sum += P[t * T + s];
				}
				for (int s = 0; s < T; s++)
					P[t * T + s] /= sum;
				for (int s = 0; s < T; s++)
					for (int c = 0; c < D; c++)
						y[IX(b, t, h, c)] += P[t * T + s] * v[IX(b, s, h, c)];
			}
			for (int t = 0; t < T; t++) {
				double rs = 0;
				for (int s = 0; s < T; s++) {
					double d = 0;
					for (int c = 0; c < D; c++)
						d += dy[IX(b, t, h, c)] * v[IX(b, s, h, c)];
					dP[t * T + s] = d;
					rs += d * P[t * T + s];
				}
				for (int s = 0; s < T; s++) {
					double dS = P[t * T + s] * (dP[t * T + s] - rs);
					for (int c = 0; c < D; c++) {
						dq[IX(b, t, h, c)] += scale * dS * k[IX(b, s, h, c)];
						dk[IX(b, s, h, c)] += scale * dS * q[IX(b, t, h, c)];
						dv[IX(b, s, h, c)] += P[t * T + s] * dy[IX(b, t, h, c)];
					}
				}
			}
		}
#undef IX
	free(P), free(dP);
}

TEST(attention_fwd_bwd_windows)
{
	int Bn = 2, T = 150, H = 2, D = 16;
	size_t n = (size_t)Bn * T * H * D;
	double scale = 1 / sqrt((double)D);
	double *q = rnd(n, 2), *k = rnd(n, 2), *v = rnd(n, 1), *dy = rnd(n, 1);
	double *y = malloc(n * sizeof(double)), *dq = malloc(n * sizeof(double));
	double *dk = malloc(n * sizeof(double)), *dv = malloc(n * sizeof(double));
	int wins[] = { 0, 40, 150 };
	for (int wi = 0; wi < 3; wi++) {
		attn_naive(Bn, T, H, D, wins[wi], scale, q, k, v, dy, y, dq, dk, dv);
		for (int di = 0; di < NDT; di++) {
			enum tdtype dt = DTS[di];
			struct tensor tq = mk(dt, q, Bn, T, H, D), tk = mk(dt, k, Bn, T, H, D);
			struct tensor tv = mk(dt, v, Bn, T, H, D), ty = mk(dt, NULL, Bn, T, H, D);
			struct tensor tl = mk(dt, NULL, Bn, H, T, 0), tdy = mk(dt, dy, Bn, T, H, D);
			struct tensor tdq = mk(dt, NULL, Bn, T, H, D), tdk = mk(dt, NULL, Bn, T, H, D);
			struct tensor tdv = mk(dt, NULL, Bn, T, H, D);
			bk->attn_fwd(&ty, &tl, &tq, &tk, &tv, wins[wi], scale);
			CHECKF(relerr(&ty, y, (int64_t)n) < tol_of(dt, 1e-5), "w %d %s fwd", wins[wi],
			       DTN[di]);
			bk->attn_bwd(&tdq, &tdk, &tdv, &tdy, &tq, &tk, &tv, &ty, &tl, wins[wi], scale);
			/* window 0: dq = dk = 0 exactly; fp32 leaves rounding of O(1e-6) */
			double tqk = wins[wi] ? 2e-5 : 1e-2;
			CHECKF(relerr(&tdq, dq, (int64_t)n) < tol_of(dt, tqk), "w %d %s dq: %.3g",
			       wins[wi], DTN[di], relerr(&tdq, dq, (int64_t)n));
			CHECKF(relerr(&tdk, dk, (int64_t)n) < tol_of(dt, tqk), "w %d %s dk: %.3g", wins[wi],
			       DTN[di], relerr(&tdk, dk, (int64_t)n));
			CHECKF(relerr(&tdv, dv, (int64_t)n) < tol_of(dt, 2e-5), "w %d %s dv", wins[wi],
			       DTN[di]);
			free(tq.data), free(tk.data), free(tv.data), free(ty.data), free(tl.data);
			free(tdy.data), free(tdq.data), free(tdk.data), free(tdv.data);
		}
	}
	free(q), free(k), free(v), free(dy), free(y), free(dq), free(dk), free(dv);
}

/* ---- softcap cross-entropy ---- */

static double ce_naive(const double *l, int V, int tg, double cap)
{
	double mx = -INFINITY, s = 0;
	for (int j = 0; j < V; j++)
		mx = fmax(mx, cap * tanh(l[j] / cap));
	for (int j = 0; j < V; j++)
		s += exp(cap * tanh(l[j] / cap) - mx);
	return mx + log(s) - cap * tanh(l[tg] / cap);
}

TEST(softcap_ce_fwd_bwd)
{
	int R = 5, V = 33;
	double cap = 15, dscale = 0.37;
	double *l = rnd((size_t)R * V, 30);
	int32_t tg[5] = { 3, 0, -1, 32, 17 };
	double loss[5], *g = calloc((size_t)R * V, sizeof(double));
	for (int r = 0; r < R; r++) {
		loss[r] = tg[r] < 0 ? 0 : ce_naive(l + r * V, V, tg[r], cap);
		for (int j = 0; j < V && tg[r] >= 0; j++) {
			double h = 1e-6, save = l[r * V + j];
			l[r * V + j] = save + h;
			double lp = ce_naive(l + r * V, V, tg[r], cap);
			l[r * V + j] = save - h;
			double lm = ce_naive(l + r * V, V, tg[r], cap);
			l[r * V + j] = save;
			g[r * V + j] = dscale * (lp - lm) / (2 * h);
		}
	}
	for (int di = 0; di < NDT; di++) {
		enum tdtype dt = DTS[di];
		struct tensor tl = mk(dt, l, R, V, 0, 0), ts = mk(dt, NULL, R, 0, 0, 0);
		int64_t valid = -1;
		bk->softcap_ce(&tl, &ts, tg, cap, 0, &valid);
		CHECK(valid == 4);
		CHECKF(relerr(&ts, loss, R) < tol_of(dt, 1e-6), "%s loss", DTN[di]);
		free(tl.data);
		tl = mk(dt, l, R, V, 0, 0);
		bk->softcap_ce(&tl, &ts, tg, cap, dscale, NULL);
		/* central differences are good to ~1e-9 here */
		CHECKF(relerr(&tl, g, R * V) < (dt == TD_F64 ? 1e-8 : 1e-5), "%s grad %.3g", DTN[di],
		       relerr(&tl, g, R * V));
		free(tl.data), free(ts.data);
	}
	free(l), free(g);
}

/* softcap_ce_bf16: the loss of the bf16-rounded logits, and a gradient of
 * bf16 values, each the rounding of the exact gradient there (a central
 * difference in fp64) to within fp32 error: |g - exact| <= 2^-8 |exact| +
 * 1e-6 of the largest. fp32 logits only. */
TEST(softcap_ce_bf16)
{
	int R = 5, V = 33;
	double cap = 15, dscale = 0.37;
	double *l = rnd((size_t)R * V, 30), *lb = malloc((size_t)R * V * sizeof *lb);
	int32_t tg[5] = { 3, 0, -1, 32, 17 };
	double loss[5], lossf[5], *g = calloc((size_t)R * V, sizeof(double)), gmax = 0;
	for (int i = 0; i < R * V; i++)
		lb[i] = bf16_round((float)l[i]);
	for (int r = 0; r < R; r++) {
		loss[r] = tg[r] < 0 ? 0 : ce_naive(lb + r * V, V, tg[r], cap);
		lossf[r] = tg[r] < 0 ? 0 : ce_naive(l + r * V, V, tg[r], cap);
		for (int j = 0; j < V && tg[r] >= 0; j++) {
			double h = 1e-6, save = lb[r * V + j];
			lb[r * V + j] = save + h;
			double lp = ce_naive(lb + r * V, V, tg[r], cap);
			lb[r * V + j] = save - h;
			double lm = ce_naive(lb + r * V, V, tg[r], cap);
			lb[r * V + j] = save;
			g[r * V + j] = dscale * (lp - lm) / (2 * h);
			gmax = fmax(gmax, fabs(g[r * V + j]));
		}
	}
	struct tensor tl = mk(TD_F32, l, R, V, 0, 0), ts = mk(TD_F32, NULL, R, 0, 0, 0);
	int64_t valid = -1;
	bk->softcap_ce_bf16(&tl, &ts, tg, cap, 0, &valid);
	CHECK(valid == 4);
	CHECKF(relerr(&ts, loss, R) < 1e-6, "loss %.3g", relerr(&ts, loss, R));
	/* the rounding shows: the fp32 logits' loss is elsewhere */
	CHECKF(relerr(&ts, lossf, R) > 1e-4, "loss of unrounded logits %.3g", relerr(&ts, lossf, R));
	free(tl.data);
	tl = mk(TD_F32, l, R, V, 0, 0);
	bk->softcap_ce_bf16(&tl, &ts, tg, cap, dscale, NULL);
	int bad = 0, big = 0, rounded = 0;
	for (int i = 0; i < R * V; i++) {
		float v = ((float *)tl.data)[i];
		bad += bf16_round(v) != v || !(fabs(v - g[i]) <= 0x1p-8 * fabs(g[i]) + 1e-6 * gmax);
		if (fabs(g[i]) > 1e-3 * gmax) {   /* where the difference is well above fp32's */
			big++;
			rounded += fabs(v - g[i]) > 1e-5 * fabs(g[i]);
		}
	}
	CHECKF(bad == 0, "%d gradient entries not bf16 roundings of the exact gradient", bad);
	CHECKF(rounded * 4 > big * 3, "only %d of %d gradient entries moved by the rounding", rounded,
	       big);
	free(tl.data), free(ts.data), free(l), free(lb), free(g);
}

/* ---- embeddings, elementwise, gates ---- */

TEST(embed_gather_scatter)
{
	int Vt = 11, k = 6, N = 9, C = 20, c0 = 7;
	double *tab = rnd((size_t)Vt * k, 1), *base = rnd((size_t)N * C, 1);
	int32_t idx[9] = { 0, 10, 3, 3, 5, 10, 1, 0, 3 };
	for (int di = 0; di < NDT; di++) {
		enum tdtype dt = DTS[di];
		for (int rb = 0; rb < 2; rb++) {
			struct tensor tt = mk(dt, tab, Vt, k, 0, 0), to = mk(dt, base, N, C, 0, 0);
			bk->embed_gather(&to, &tt, idx, c0, rb, 1);
			double *want = malloc((size_t)N * C * sizeof(double));
			memcpy(want, base, (size_t)N * C * sizeof(double));
			for (int n = 0; n < N; n++)
				for (int c = 0; c < k; c++) {
					double v = tab[idx[n] * k + c];
					if (dt == TD_F32)
						v = (float)v;
					want[n * C + c0 + c] += rb ? bf16_round((float)v) : v;
				}
			CHECKF(relerr(&to, want, N * C) < tol_of(dt, 1e-6), "%s gather bf16 %d", DTN[di], rb);
			free(want), free(tt.data), free(to.data);
		}
		/* bf16 table into any dtype */
		bf16 hb[66];
		double hw[66];
		for (int i = 0; i < Vt * k; i++)
			hb[i] = bf16_from_f32((float)tab[i]), hw[i] = bf16_to_f32(hb[i]);
		struct tensor th = { hb, TD_BF16, 2, { Vt, k, 1, 1 } }, to = mk(dt, NULL, N, k, 0, 0);
		bk->embed_gather(&to, &th, idx, 0, 0, 0);
		double want2[54];
		for (int n = 0; n < N; n++)
			for (int c = 0; c < k; c++)
				want2[n * k + c] = hw[idx[n] * k + c];
		CHECKF(relerr(&to, want2, N * k) == 0, "%s gather from bf16", DTN[di]);
		free(to.data);
		/* scatter-add: repeated rows sum */
		struct tensor tg = mk(dt, tab, Vt, k, 0, 0), td = mk(dt, base, N, C, 0, 0);
		bk->embed_scatter_add(&tg, &td, idx, c0);
		double want[66];
		memcpy(want, tab, sizeof want);
		for (int n = 0; n < N; n++)
			for (int c = 0; c < k; c++)
				want[idx[n] * k + c] += base[n * C + c0 + c];
		CHECKF(relerr(&tg, want, Vt * k) < tol_of(dt, 1e-6), "%s scatter", DTN[di]);
		free(tg.data), free(td.data);
	}
	free(tab), free(base);
}

/* A bf16 gradient table: per row, the fp32 sum of its contributions in
 * token order, rounded to bf16, added to the row and rounded again; rows
 * above 65535 (both radix passes), rows never hit untouched, zero() clears
 * bf16 storage. Reference: a naive loop over rows in fp32. */
TEST(embed_scatter_add_bf16)
{
	int64_t Vt = 70000, k = 5, N = 3000, C = 12, c0 = 4;
	double *d = rnd((size_t)(N * C), 1);
	float *df = malloc((size_t)(N * C) * sizeof *df);
	for (int64_t i = 0; i < N * C; i++)
		df[i] = (float)d[i];
	int32_t *idx = malloc((size_t)N * sizeof *idx);
	for (int64_t n = 0; n < N; n++)
		idx[n] = n % 3 ? (int32_t)rng_below(&R, 17) : (int32_t)(Vt - 1 - rng_below(&R, 900));
	bf16 *g = malloc((size_t)(Vt * k) * sizeof *g), *want = malloc((size_t)(Vt * k) * sizeof *want);
	for (int64_t i = 0; i < Vt * k; i++)
		g[i] = want[i] = bf16_from_f32((float)(i % 7) * 0.013f);
	for (int64_t r = 0; r < Vt; r++) {
		int hit = 0;
		float s[5] = {0};
		for (int64_t n = 0; n < N; n++)
			if (idx[n] == r) {
				hit = 1;
				for (int64_t c = 0; c < k; c++)
					s[c] += df[n * C + c0 + c];
			}
		for (int64_t c = 0; hit && c < k; c++)
			want[r * k + c] = bf16_from_f32(bf16_to_f32(want[r * k + c]) + bf16_round(s[c]));
	}
	struct tensor tg = { g, TD_BF16, 2, { Vt, k, 1, 1 } }, td = { df, TD_F32, 2, { N, C, 1, 1 } };
	bk->embed_scatter_add(&tg, &td, idx, c0);
	CHECK(memcmp(g, want, (size_t)(Vt * k) * sizeof *g) == 0);
	bk->zero(&tg);
	size_t nz = 0;
	for (int64_t i = 0; i < Vt * k; i++)
		nz += g[i] != 0;
	CHECK(nz == 0);
	free(d), free(df), free(idx), free(g), free(want);
}

TEST(elementwise_and_gates)
{
	int N = 7, H = 3, D = 5, K = H * D;
	double *h = rnd((size_t)N * K, 2), *dout = rnd((size_t)N * K, 1), *gl = rnd((size_t)N * H, 3);
	double *ve = rnd((size_t)N * K, 1), *v0 = rnd((size_t)N * K, 1), *s = rnd(K, 2);
	double r2[105], dr2[105], vg[105], dgl[21], dve[105], mc[105], dmc[105], ds[15] = {0};
	for (int n = 0; n < N; n++)
		for (int hh = 0; hh < H; hh++) {
			double sg = 1 / (1 + exp(-gl[n * H + hh])), acc = 0;
			for (int c = 0; c < D; c++) {
				int i = n * K + hh * D + c;
				vg[i] = v0[i] + 2 * sg * ve[i];
				dve[i] = 2 * sg * dout[i];
				acc += dout[i] * ve[i];
			}
			dgl[n * H + hh] = acc * 2 * sg * (1 - sg);
		}
	for (int i = 0; i < N * K; i++) {
		double r = h[i] > 0 ? h[i] : 0;
		r2[i] = r * r;
		dr2[i] = 2 * r * dout[i];
		mc[i] = h[i] * s[i % K];
		dmc[i] = dout[i] * s[i % K];
		ds[i % K] += dout[i] * h[i];
	}
	for (int di = 0; di < NDT; di++) {
		enum tdtype dt = DTS[di];
		double tol = tol_of(dt, 1e-6);
		struct tensor th = mk(dt, h, N, K, 0, 0), to = mk(dt, NULL, N, K, 0, 0);
		struct tensor tdo = mk(dt, dout, N, K, 0, 0);
		bk->relu2_fwd(&to, &th);
		CHECKF(relerr(&to, r2, N * K) < tol, "%s relu2", DTN[di]);
		bk->relu2_bwd(&to, &tdo, &th);
		CHECKF(relerr(&to, dr2, N * K) < tol, "%s relu2 bwd", DTN[di]);
		struct tensor tv = mk(dt, v0, N, K, 0, 0), tg = mk(dt, gl, N, H, 0, 0);
		struct tensor te = mk(dt, ve, N, K, 0, 0), tdg = mk(dt, NULL, N, H, 0, 0);
		bk->ve_gate_fwd(&tv, &tg, &te);
		CHECKF(relerr(&tv, vg, N * K) < tol, "%s gate fwd", DTN[di]);
		bk->ve_gate_bwd(&tdg, &to, &tdo, &tg, &te);
		CHECKF(relerr(&tdg, dgl, N * H) < tol, "%s gate dglog", DTN[di]);
		CHECKF(relerr(&to, dve, N * K) < tol, "%s gate dve", DTN[di]);
		struct tensor ts = mk(dt, s, K, 0, 0, 0), tds = mk(dt, NULL, K, 0, 0, 0);
		bk->mul_cols_fwd(&to, &th, &ts);
		CHECKF(relerr(&to, mc, N * K) < tol, "%s mul_cols", DTN[di]);
		bk->mul_cols_bwd(&to, &tds, &tdo, &th, &ts);
		CHECKF(relerr(&to, dmc, N * K) < tol, "%s mul_cols dx", DTN[di]);
		CHECKF(relerr(&tds, ds, K) < tol, "%s mul_cols ds", DTN[di]);
		/* axpby, dot, cols */
		bk->axpby(&th, 2.0, &tdo, -0.5);
		double ax[105], dd = 0;
		for (int i = 0; i < N * K; i++)
			ax[i] = 2 * dout[i] - 0.5 * h[i], dd += ax[i] * dout[i];
		CHECKF(relerr(&th, ax, N * K) < tol, "%s axpby", DTN[di]);
		CHECK_NEAR(bk->dot(&th, &tdo), dd, tol * 10);
		/* dot_acc: entry 2 of a 3-vector gets the dot, rounded to the
		 * dtype, added in the dtype; the others stay */
		double a3[3] = { 0.25, -1.5, 3.0 }, dv = bk->dot(&th, &tdo);
		struct tensor ta = mk(dt, a3, 3, 0, 0, 0);
		bk->dot_acc(&ta, 2, &th, &tdo);
		if (dt == TD_F64) {
			const double *p = ta.data;
			CHECK(p[0] == 0.25 && p[1] == -1.5 && p[2] == 3.0 + dv);
		} else {
			const float *p = ta.data;
			CHECK(p[0] == 0.25f && p[1] == -1.5f && p[2] == 3.0f + (float)dv);
		}
		free(ta.data);
		struct tensor tc = mk(dt, NULL, N, 4, 0, 0);
		bk->cols_get(&tc, &tdo, 3, 0);
		double cg[28];
		for (int n = 0; n < N; n++)
			for (int c = 0; c < 4; c++)
				cg[n * 4 + c] = dout[n * K + 3 + c];
		CHECKF(relerr(&tc, cg, N * 4) < tol, "%s cols_get", DTN[di]);
		bk->cols_add(&tdo, &tc, 10);
		for (int n = 0; n < N; n++)
			for (int c = 0; c < 4; c++)
				ax[n * K + 10 + c] = dout[n * K + 10 + c] + cg[n * 4 + c];
		double ca[105];
		memcpy(ca, dout, sizeof ca);
		for (int n = 0; n < N; n++)
			for (int c = 0; c < 4; c++)
				ca[n * K + 10 + c] += cg[n * 4 + c];
		CHECKF(relerr(&tdo, ca, N * K) < tol, "%s cols_add", DTN[di]);
		bk->zero(&tdo);
		CHECK(at(&tdo, 0) == 0 && at(&tdo, N * K - 1) == 0);
		free(th.data), free(to.data), free(tdo.data), free(tv.data), free(tg.data);
		free(te.data), free(tdg.data), free(ts.data), free(tds.data), free(tc.data);
	}
	free(h), free(dout), free(gl), free(ve), free(v0), free(s);
}

/* The MFU's denominator: a GPU's dense bf16 peak by its name (as CUDA
 * reports them), none for other names; SUPKIT_PEAK_TFLOPS over it, refused
 * when not a positive number; none for the CPU backend. */
TEST(peak_flops)
{
	CHECK(peak_bf16_flops("NVIDIA H100 80GB HBM3") == 989.5e12);
	CHECK(peak_bf16_flops("NVIDIA H200") == 989.5e12);
	CHECK(peak_bf16_flops("NVIDIA H100 PCIe") == 756e12);
	CHECK(peak_bf16_flops("NVIDIA A100-SXM4-80GB") == 312e12);
	CHECK(peak_bf16_flops("NVIDIA L40S") == 0);
	CHECK(peak_bf16_flops("SIMT emulator (tests/emu)") == 0);
	struct err e = { 0 };
	double p = -1;
	unsetenv("SUPKIT_PEAK_TFLOPS");
	CHECK(backend_peak_flops(bk, &p, &e) == 0 && p == 0);
	setenv("SUPKIT_PEAK_TFLOPS", "2.5", 1);
	CHECK(backend_peak_flops(bk, &p, &e) == 0 && p == 2.5e12);
	const char *bad[] = { "x", "-1", "0", "1e3x", "inf" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		setenv("SUPKIT_PEAK_TFLOPS", bad[i], 1);
		err_clear(&e);
		CHECKF(backend_peak_flops(bk, &p, &e) == -1 && e.code == EXIT_USAGE &&
			       strstr(e.msg, "SUPKIT_PEAK_TFLOPS"),
		       "'%s': %s", bad[i], e.msg);
	}
	unsetenv("SUPKIT_PEAK_TFLOPS");
}

/* The CPU backend is a whole backend object (backend.h: no optional
 * entries): every entry set; the fusions run as the ops they stand for, bit
 * for bit (matmul_n as matmul n times, the gate on a table's rows as the
 * gather into the caller's scratch then the gate, relu2_fwd_gemm as
 * relu2_fwd); nothing stored in bf16; open refuses a device but 0; memory
 * zeroed; the optimizer's device the host twin; Polar Express the host's on
 * each matrix; the registry finds it by name. */
TEST(cpu_backend_object)
{
	const char *miss = backend_missing(bk);
	CHECKF(miss == NULL, "cpu backend: entry '%s' not set", miss ? miss : "");
	CHECK(backend_find("cpu") == bk && backend_find("nonesuch") == NULL);
	CHECK(!bk->mlp_bf16() && !bk->norm_bf16() && !bk->attn_bf16(128) && !*bk->modes());
	CHECK(bk->device_count() == 1 && bk->host_memory && bk->act_budget == 0);
	CHECK(bk->optim() == optim_device_host());
	char name[32] = "x";
	CHECK(bk->device_name(name, sizeof name) == -1 && name[0] == 0 && bk->peak_flops() == 0);
	size_t pk = 1;
	CHECK(bk->device_bytes(&pk) == 0 && pk == 0);
	struct err e = { 0 };
	struct backend_options o = { .device = 1, .threads = 0 };
	CHECK(bk->open(&o, &e) == -1 && e.code == EXIT_USAGE && strstr(e.msg, "device 1"));
	o.device = 0;
	/* precision: autocast refused (the CPU multiplies in fp32), auto and
	 * fp32 taken, and the GEMMs said to be fp32 */
	o.precision = BK_PRECISION_AUTOCAST;
	CHECK(bk->open(&o, &e) == -1 && e.code == EXIT_USAGE &&
	      strstr(e.msg, "precision = autocast: the cpu backend multiplies in fp32"));
	o.precision = BK_PRECISION_FP32;
	CHECK(bk->open(&o, &e) == 0);
	o.precision = BK_PRECISION_AUTO;
	CHECK(bk->open(&o, &e) == 0);
	CHECK(strcmp(bk->precision(), "fp32") == 0);
	unsigned char *z = bk->alloc(4096);
	int nz = 0;
	for (int i = 0; i < 4096; i++)
		nz += z[i] != 0;
	CHECK(nz == 0);
	bk->free(z);

	/* matmul_n: out[i] = 0.5 a[i] b[i]^T + 0.25 out[i], as matmul */
	int M = 5, K = 7, Nn = 3;
	struct tensor a[2], b[2], o1[2], o2[2];
	for (int i = 0; i < 2; i++) {
		double *da = rnd((size_t)M * K, 1), *db = rnd((size_t)Nn * K, 1), *dc = rnd((size_t)M * Nn, 1);
		a[i] = mk(TD_F32, da, M, K, 0, 0);
		b[i] = mk(TD_F32, db, Nn, K, 0, 0);
		o1[i] = mk(TD_F32, dc, M, Nn, 0, 0);
		o2[i] = mk(TD_F32, dc, M, Nn, 0, 0);
		free(da), free(db), free(dc);
	}
	struct tensor *po[2] = { &o2[0], &o2[1] };
	const struct tensor *pa[2] = { &a[0], &a[1] }, *pb[2] = { &b[0], &b[1] };
	for (int i = 0; i < 2; i++)
		bk->matmul(&o1[i], &a[i], &b[i], 0, 1, 0.5, 0.25);
	bk->matmul_n(2, po, pa, pb, 0, 1, 0.5, 0.25);
	for (int i = 0; i < 2; i++)
		CHECK(memcmp(o1[i].data, o2[i].data, (size_t)(M * Nn) * 4) == 0);
	for (int i = 0; i < 2; i++)
		free(a[i].data), free(b[i].data), free(o1[i].data), free(o2[i].data);

	/* the gate on a table's rows: as embed_gather then the gate */
	int N = 6, H = 2, D = 4, C = H * D, Vt = 5;
	int32_t idx[6] = { 4, 0, 2, 2, 1, 4 };
	double *tab = rnd((size_t)Vt * C, 1), *gl = rnd((size_t)N * H, 2), *v0 = rnd((size_t)N * C, 1);
	double *dv0 = rnd((size_t)N * C, 1);
	struct tensor tt = mk(TD_F32, tab, Vt, C, 0, 0), tg = mk(TD_F32, gl, N, H, 0, 0);
	struct tensor v1 = mk(TD_F32, v0, N, C, 0, 0), v2 = mk(TD_F32, v0, N, C, 0, 0);
	struct tensor dv = mk(TD_F32, dv0, N, C, 0, 0), ve = mk(TD_F32, NULL, N, C, 0, 0);
	struct tensor scr = mk(TD_F32, NULL, N, C, 0, 0);
	struct tensor g1 = mk(TD_F32, NULL, N, H, 0, 0), g2 = mk(TD_F32, NULL, N, H, 0, 0);
	struct tensor e1 = mk(TD_F32, NULL, N, C, 0, 0), e2 = mk(TD_F32, NULL, N, C, 0, 0);
	for (int rb = 0; rb < 2; rb++) {
		bk->embed_gather(&ve, &tt, idx, 0, rb, 0);
		bk->ve_gate_fwd(&v1, &tg, &ve);
		bk->ve_gate_fwd_rows(&v2, &tg, &tt, idx, rb, &scr);
		CHECKF(memcmp(v1.data, v2.data, (size_t)(N * C) * 4) == 0, "ve_gate_fwd_rows round %d", rb);
		bk->ve_gate_bwd(&g1, &e1, &dv, &tg, &ve);
		bk->ve_gate_bwd_rows(&g2, &e2, &dv, &tg, &tt, idx, rb, &scr);
		CHECKF(memcmp(g1.data, g2.data, (size_t)(N * H) * 4) == 0 &&
		       memcmp(e1.data, e2.data, (size_t)(N * C) * 4) == 0, "ve_gate_bwd_rows round %d", rb);
	}
	/* relu2_fwd_gemm: relu2_fwd's values */
	bk->relu2_fwd(&v1, &dv);
	bk->relu2_fwd_gemm(&v2, &dv);
	CHECK(memcmp(v1.data, v2.data, (size_t)(N * C) * 4) == 0);
	struct tensor all[] = { tt, tg, v1, v2, dv, ve, scr, g1, g2, e1, e2 };
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		free(all[i].data);
	free(tab), free(gl), free(v0), free(dv0);

	/* Polar Express: the host's on each of the batch's matrices */
	int pm = 6, pn = 4;
	float *X = malloc(2 * (size_t)(pm * pn) * sizeof *X), *Y = malloc(2 * (size_t)(pm * pn) * sizeof *Y);
	for (int i = 0; i < 2 * pm * pn; i++)
		X[i] = Y[i] = (float)(2 * rng_uniform(&R) - 1);
	bk->polar_express(X, 2, (size_t)pm, (size_t)pn, 0);
	for (int i = 0; i < 2; i++)
		polar_express_f32(Y + i * pm * pn, (size_t)pm, (size_t)pn, 0);
	CHECK(memcmp(X, Y, 2 * (size_t)(pm * pn) * sizeof *X) == 0);
	free(X), free(Y);
}

/* The polar arms that only the host runs keep runs off the CUDA backend:
 * auto picks the CPU, cuda is refused naming the keys (whatever the build). */
/* c as it is: backend = auto picks the CPU, backend = cuda is refused with
 * EXIT_USAGE and a message holding msg */
static void refused_on_cuda(struct config *c, const char *msg)
{
	struct err e = {0};
	c->backend = BACKEND_AUTO;
	CHECK(backend_select(c, &e) == backend_cpu());
	c->backend = BACKEND_CUDA;
	CHECK(backend_select(c, &e) == NULL);
	CHECK(e.code == EXIT_USAGE);
	CHECKF(strstr(e.msg, msg) != NULL, "%s", e.msg);
}

TEST(select_host_polar_arms)
{
	struct config c;
	struct err e = {0};
	config_defaults(&c);
	c.polar_norm = POLAR_NORM_AOL;
	c.polar_steps = 4;
	refused_on_cuda(&c, "polar_norm = aol and polar_steps = 4 need backend = cpu");
	c.polar_norm = POLAR_NORM_AS_POLAR;
	c.polar_steps = 5;
	c.backend = BACKEND_CPU;
	CHECK(backend_select(&c, &e) == backend_cpu());
	/* Zeta: host only as well */
	c.zeta = 1;
	refused_on_cuda(&c, "zeta = 1 needs backend = cpu");
	c.zeta = 0;
	c.malt = 1;
	refused_on_cuda(&c, "malt = 1 needs backend = cpu");
	/* pre-sublayer channel gains: the fused weights are CPU only */
	c.malt = 0;
	c.sub_gains = 1;
	refused_on_cuda(&c, "sub_gains = 1 needs backend = cpu");
	/* ... and so are its unfused forms, the form named */
	c.sub_form = SUB_FORM_UNFUSED;
	refused_on_cuda(&c, "sub_gains = 1 with sub_form = unfused needs backend = cpu");
	c.sub_form = SUB_FORM_UNFUSED_GATE_COPY;
	refused_on_cuda(&c, "sub_gains = 1 with sub_form = unfused_gate_copy needs backend = cpu");
	c.sub_form = SUB_FORM_GATE_SCALED;
	refused_on_cuda(&c, "sub_gains = 1 with sub_form = gate_scaled needs backend = cpu");
	c.sub_form = SUB_FORM_FUSED;
	c.sub_gains = 0;
	/* AdamW on the block matrices: CPU only */
	c.matrix_optim = MATRIX_OPTIM_ADAMW;
	refused_on_cuda(&c, "matrix_optim = adamw needs backend = cpu");
	c.matrix_optim = MATRIX_OPTIM_MUON;
	/* learned RoPE frequencies and fp32 RoPE tables: CPU only */
	c.rope_tau = ROPE_TAU_SHARED;
	refused_on_cuda(&c, "rope_tau = shared needs backend = cpu");
	c.rope_tau = ROPE_TAU_HEAD;
	refused_on_cuda(&c, "rope_tau = head needs backend = cpu");
	c.rope_tau = ROPE_TAU_OFF;
	c.rope_trig = ROPE_TRIG_FP32;
	refused_on_cuda(&c, "rope_trig = fp32 needs backend = cpu");
	c.rope_trig = ROPE_TRIG_BF16;
	c.muon2f = 1;   /* Muon2-F and NormPre-G: host only */
	refused_on_cuda(&c, "muon2f = 1 needs backend = cpu");
	c.muon2f = 0;
	c.normpre_g = 1;
	refused_on_cuda(&c, "normpre_g = 1 needs backend = cpu");
}

int main(void)
{
	bk = backend_cpu();
	rng_seed(&R, 1234);
	RUN(select_host_polar_arms);
	RUN(matmul_all_transposes);
	RUN(rmsnorm_fwd_bwd);
	RUN(rmsnorm_ref_fwd_bwd);
	RUN(rope_fwd_bwd);
	RUN(rope_rmsnorm_fused);
	RUN(rope_rmsnorm_qtau_fused);
	RUN(attention_fwd_bwd_windows);
	RUN(softcap_ce_fwd_bwd);
	RUN(softcap_ce_bf16);
	RUN(embed_gather_scatter);
	RUN(embed_scatter_add_bf16);
	RUN(ngram_rows_and_counts);
	RUN(mul_cols_ds_fp64_sum);
	RUN(elementwise_and_gates);
	RUN(peak_flops);
	RUN(cpu_backend_object);
	return t_done();
}
