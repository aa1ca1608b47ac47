/* backend_cpu.c: the CPU reference backend (trainer/backend.h) in fp32 and
 * fp64. GEMMs go to OpenBLAS (cblas_sgemm / cblas_dgemm, threaded by
 * OpenBLAS); softcap_ce splits its rows over as many threads
 * (rows_parallel below); the other ops are plain single-threaded loops.
 * Each op is written once over a real type in trainer/backend_cpu_ops.h and
 * instantiated twice here; the table's entries dispatch on the dtype of the
 * first floating operand.
 *
 * Left out: bf16 arithmetic (bf16 is storage only: embed_gather reads bf16
 * tables), OpenMP (not configured), the optimizer's polar iterations
 * (trainer/polar.c). Reference: docs/model.md; the attention follows the
 * row-block recomputation of FlashAttention (Dao et al. 2022, Alg. 1-2)
 * without the on-chip tiling.
 */
/* The elementwise loops are written plainly; GCC's -O2 cost model leaves
 * them scalar, and its default -ftrapping-math keeps the ?: of relu2 a
 * branch (which mispredicts on random signs). O3 without trapping math
 * vectorises them. Bit-exact: trapping math only concerns FP exception
 * flags; there is no -ffast-math, so sums keep their order, and ISO C mode
 * keeps -ffp-contract=off (no FMA contraction). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bf16.h"
#include "lib/err.h"
#include "trainer/backend.h"
#include "trainer/backend_mix.h"
#include "trainer/idx_sort.h"
#include "trainer/optim.h"

/* Programming errors (shape or dtype mismatches) abort with the op's name. */
static void bk_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "backend_cpu: %s: bad shapes or dtypes\n", what);
		abort();
	}
}

/* ---- rows split over threads ----
 * rows_parallel runs fn over [0, R) in contiguous shares, one per thread
 * (the OpenBLAS thread count, at most R / min_rows), the caller taking the
 * first; fn sums a count for its share into *count, and the counts are
 * added (integers: order-free). Each row is computed whole by one thread,
 * so results are the same for every thread count. */
#define ROWS_MAX_THREADS 64

struct rows_share {
	void (*fn)(void *, int64_t, int64_t, int64_t *);
	void *arg;
	int64_t r0, r1, count;
};

static void *rows_run(void *a)
{
	struct rows_share *s = a;
	s->fn(s->arg, s->r0, s->r1, &s->count);
	return NULL;
}

static int64_t rows_parallel(void (*fn)(void *, int64_t, int64_t, int64_t *), void *arg, int64_t R,
			     int64_t min_rows)
{
	int64_t nt = openblas_get_num_threads();
	if (nt > ROWS_MAX_THREADS)
		nt = ROWS_MAX_THREADS;
	if (nt > R / min_rows)
		nt = R / min_rows;
	if (nt < 1)
		nt = 1;
	struct rows_share sh[ROWS_MAX_THREADS];
	pthread_t th[ROWS_MAX_THREADS];
	int started[ROWS_MAX_THREADS] = { 0 };
	for (int64_t i = 0; i < nt; i++)
		sh[i] = (struct rows_share){ fn, arg, R * i / nt, R * (i + 1) / nt, 0 };
	for (int64_t i = 1; i < nt; i++)
		started[i] = pthread_create(&th[i], NULL, rows_run, &sh[i]) == 0;
	rows_run(&sh[0]);
	int64_t total = sh[0].count;
	for (int64_t i = 1; i < nt; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		else
			rows_run(&sh[i]);     /* no thread: run the share here */
		total += sh[i].count;
	}
	return total;
}

/* softcap_ce's arguments, shared by its row shares. */
struct softcap_job {
	void *logits, *loss;
	const int32_t *targets;
	int64_t V;
	double cap, dscale;
	int bf16;   /* softcap_ce_bf16 */
};

#define REAL float
#define SFX f32
#define GEMM cblas_sgemm
#define REXP expf
#define RTANH tanhf
#include "trainer/backend_cpu_ops.h"
#undef REAL
#undef SFX
#undef GEMM
#undef REXP
#undef RTANH

#define REAL double
#define SFX f64
#define GEMM cblas_dgemm
#define REXP exp
#define RTANH tanh
#include "trainer/backend_cpu_ops.h"
#undef REAL
#undef SFX
#undef GEMM
#undef REXP
#undef RTANH

static const struct backend_ops *pick(const struct tensor *t, const char *op)
{
	if (t->dtype == TD_F32)
		return &ops_f32;
	if (t->dtype == TD_F64)
		return &ops_f64;
	bk_check(0, op);
	return NULL;
}

/* The same dtype for every floating operand (NULL skipped). */
static void same(const char *op, const struct tensor *a, const struct tensor *b,
		 const struct tensor *c, const struct tensor *d)
{
	const struct tensor *t[] = { b, c, d };
	for (int i = 0; i < 3; i++)
		bk_check(!t[i] || t[i]->dtype == a->dtype, op);
}

static void d_zero(struct tensor *x)
{
	if (x->dtype == TD_BF16)   /* storage only: bf16 gradient tables */
		memset(x->data, 0, (size_t)tensor_numel(x) * sizeof(bf16));
	else
		pick(x, "zero")->zero(x);
}

static void d_axpby(struct tensor *y, double a, const struct tensor *x, double b)
{
	same("axpby", y, x, NULL, NULL);
	bk_check(tensor_numel(x) == tensor_numel(y), "axpby");
	pick(y, "axpby")->axpby(y, a, x, b);
}

static double d_dot(const struct tensor *x, const struct tensor *y)
{
	same("dot", x, y, NULL, NULL);
	bk_check(tensor_numel(x) == tensor_numel(y), "dot");
	return pick(x, "dot")->dot(x, y);
}

static void d_cols_get(struct tensor *out, const struct tensor *x, int64_t c0, int accum)
{
	same("cols_get", out, x, NULL, NULL);
	bk_check(tensor_rows(out) == tensor_rows(x) && c0 >= 0 &&
		 c0 + tensor_cols(out) <= tensor_cols(x), "cols_get");
	pick(out, "cols_get")->cols_get(out, x, c0, accum);
}

static void d_cols_add(struct tensor *out, const struct tensor *x, int64_t c0)
{
	same("cols_add", out, x, NULL, NULL);
	bk_check(tensor_rows(out) == tensor_rows(x) && c0 >= 0 &&
		 c0 + tensor_cols(x) <= tensor_cols(out), "cols_add");
	pick(out, "cols_add")->cols_add(out, x, c0);
}

static void d_matmul(struct tensor *out, const struct tensor *a, const struct tensor *b,
		     int ta, int tb, double alpha, double beta)
{
	same("matmul", out, a, b, NULL);
	pick(out, "matmul")->matmul(out, a, b, ta, tb, alpha, beta);
}

static void d_rmsnorm_fwd(struct tensor *out, struct tensor *rstd, const struct tensor *x,
			  double eps)
{
	same("rmsnorm_fwd", out, rstd, x, NULL);
	bk_check(tensor_numel(out) == tensor_numel(x) && tensor_numel(rstd) == tensor_rows(x),
		 "rmsnorm_fwd");
	pick(out, "rmsnorm_fwd")->rmsnorm_fwd(out, rstd, x, eps);
}

static void d_rmsnorm_bwd(struct tensor *dx, const struct tensor *dout, const struct tensor *out,
			  const struct tensor *rstd, int accum)
{
	same("rmsnorm_bwd", dx, dout, out, rstd);
	bk_check(tensor_numel(dx) == tensor_numel(out) && tensor_numel(dout) == tensor_numel(out) &&
		 tensor_numel(rstd) == tensor_rows(out), "rmsnorm_bwd");
	pick(dx, "rmsnorm_bwd")->rmsnorm_bwd(dx, dout, out, rstd, accum);
}

static void d_rmsnorm_ref_fwd(struct tensor *out, struct tensor *r, const struct tensor *x,
			      const struct tensor *s, double eps)
{
	same("rmsnorm_ref_fwd", out, r, x, s);
	bk_check(tensor_numel(out) == tensor_numel(x) && tensor_numel(s) == tensor_numel(x) &&
		 tensor_numel(r) == tensor_rows(x), "rmsnorm_ref_fwd");
	pick(out, "rmsnorm_ref_fwd")->rmsnorm_ref_fwd(out, r, x, s, eps);
}

static void d_rmsnorm_ref_bwd(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
			      const struct tensor *x, const struct tensor *s,
			      const struct tensor *r, int accum)
{
	same("rmsnorm_ref_bwd", dx, ds, dout, x);
	same("rmsnorm_ref_bwd", dx, s, r, NULL);
	bk_check(tensor_numel(dx) == tensor_numel(x) && tensor_numel(ds) == tensor_numel(x) &&
		 tensor_numel(r) == tensor_rows(x), "rmsnorm_ref_bwd");
	pick(dx, "rmsnorm_ref_bwd")->rmsnorm_ref_bwd(dx, ds, dout, x, s, r, accum);
}

static void d_rope_fwd(struct tensor *x, const struct tensor *cos, const struct tensor *sin,
		       int64_t T)
{
	same("rope_fwd", x, cos, sin, NULL);
	bk_check(x->ndim >= 2 && tensor_numel(x) % (T * x->shape[x->ndim - 2] * tensor_cols(x)) == 0,
		 "rope_fwd");
	pick(x, "rope_fwd")->rope_fwd(x, cos, sin, T);
}

static void d_rope_bwd(struct tensor *dx, const struct tensor *cos, const struct tensor *sin,
		       int64_t T)
{
	same("rope_bwd", dx, cos, sin, NULL);
	bk_check(dx->ndim >= 2, "rope_bwd");
	pick(dx, "rope_bwd")->rope_bwd(dx, cos, sin, T);
}

/* x (..., H, D) with D even, at most 128, and whole sequences of T */
static void rope_rms_check(const char *op, const struct tensor *x, const struct tensor *rstd,
			   int64_t T)
{
	int64_t D = tensor_cols(x);
	bk_check(x->ndim >= 2 && D % 2 == 0 && D <= 128 &&
		 tensor_numel(x) % (T * x->shape[x->ndim - 2] * D) == 0 &&
		 tensor_numel(rstd) == tensor_numel(x) / D, op);
}

/* s (H*D) and xn (shaped like x) both given or both NULL */
static void rope_rms_scale_check(const char *op, const struct tensor *x, const struct tensor *s,
				 const struct tensor *xn)
{
	int64_t HD = tensor_cols(x) * x->shape[x->ndim - 2];
	bk_check(!s == !xn, op);
	bk_check(!s || (tensor_numel(s) == HD && tensor_numel(xn) == tensor_numel(x) &&
			tensor_cols(xn) == tensor_cols(x)), op);
}

static void d_rope_rmsnorm_fwd(struct tensor *out, struct tensor *rstd, struct tensor *xn,
			       const struct tensor *x, const struct tensor *s,
			       const struct tensor *cos, const struct tensor *sin, int64_t T,
			       double eps)
{
	same("rope_rmsnorm_fwd", out, rstd, x, cos);
	same("rope_rmsnorm_fwd", out, sin, s, xn);
	rope_rms_check("rope_rmsnorm_fwd", x, rstd, T);
	bk_check(tensor_numel(out) == tensor_numel(x) && tensor_cols(out) == tensor_cols(x) &&
		 out->shape[out->ndim - 2] == x->shape[x->ndim - 2], "rope_rmsnorm_fwd");
	rope_rms_scale_check("rope_rmsnorm_fwd", x, s, xn);
	bk_check(!xn || xn->data != out->data, "rope_rmsnorm_fwd");
	pick(out, "rope_rmsnorm_fwd")->rope_rmsnorm_fwd(out, rstd, xn, x, s, cos, sin, T, eps);
}

static void d_rope_rmsnorm_bwd(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
			       const struct tensor *xn, const struct tensor *rstd,
			       const struct tensor *s, const struct tensor *cos,
			       const struct tensor *sin, int64_t T)
{
	same("rope_rmsnorm_bwd", dx, dout, xn, rstd);
	same("rope_rmsnorm_bwd", dx, cos, sin, s);
	same("rope_rmsnorm_bwd", dx, ds, NULL, NULL);
	rope_rms_check("rope_rmsnorm_bwd", xn, rstd, T);
	bk_check(tensor_numel(dx) == tensor_numel(xn) && tensor_numel(dout) == tensor_numel(xn),
		 "rope_rmsnorm_bwd");
	int64_t HD = tensor_cols(xn) * xn->shape[xn->ndim - 2];
	bk_check(!ds || (s && tensor_numel(ds) == HD), "rope_rmsnorm_bwd");
	bk_check(!s || tensor_numel(s) == HD, "rope_rmsnorm_bwd");
	pick(dx, "rope_rmsnorm_bwd")->rope_rmsnorm_bwd(dx, ds, dout, xn, rstd, s, cos, sin, T);
}

static void d_attn_fwd(struct tensor *y, struct tensor *lse, const struct tensor *q,
		       const struct tensor *k, const struct tensor *v, int64_t window, double scale)
{
	same("attn_fwd", y, lse, q, k);
	same("attn_fwd", y, v, NULL, NULL);
	bk_check(q->ndim == 4 && tensor_numel(v) == tensor_numel(q) && window >= 0, "attn_fwd");
	pick(y, "attn_fwd")->attn_fwd(y, lse, q, k, v, window, scale);
}

static void d_attn_bwd(struct tensor *dq, struct tensor *dk, struct tensor *dv,
		       const struct tensor *dy, const struct tensor *q, const struct tensor *k,
		       const struct tensor *v, const struct tensor *y, const struct tensor *lse,
		       int64_t window, double scale)
{
	same("attn_bwd", dq, dk, dv, dy);
	same("attn_bwd", dq, q, k, v);
	same("attn_bwd", dq, y, lse, NULL);
	int64_t n = tensor_numel(q);
	bk_check(q->ndim == 4 && tensor_numel(dk) == n && tensor_numel(dv) == n &&
		 tensor_numel(dy) == n && tensor_numel(y) == n && window >= 0, "attn_bwd");
	pick(dq, "attn_bwd")->attn_bwd(dq, dk, dv, dy, q, k, v, y, lse, window, scale);
}

static void d_softcap_ce(struct tensor *logits, struct tensor *loss, const int32_t *targets,
			 double cap, double dscale, int64_t *valid)
{
	same("softcap_ce", logits, loss, NULL, NULL);
	bk_check(tensor_numel(loss) == tensor_rows(logits), "softcap_ce");
	int64_t V = tensor_cols(logits), R = tensor_rows(logits);
	for (int64_t r = 0; r < R; r++)
		bk_check(targets[r] < V, "softcap_ce target");
	pick(logits, "softcap_ce")->softcap_ce(logits, loss, targets, cap, dscale, valid);
}

static void d_softcap_ce_bf16(struct tensor *logits, struct tensor *loss, const int32_t *targets,
			      double cap, double dscale, int64_t *valid)
{
	same("softcap_ce_bf16", logits, loss, NULL, NULL);
	bk_check(logits->dtype == TD_F32 && tensor_numel(loss) == tensor_rows(logits), "softcap_ce_bf16");
	int64_t V = tensor_cols(logits), R = tensor_rows(logits);
	for (int64_t r = 0; r < R; r++)
		bk_check(targets[r] < V, "softcap_ce_bf16 target");
	ops_f32.softcap_ce_bf16(logits, loss, targets, cap, dscale, valid);
}

static void d_embed_gather(struct tensor *out, const struct tensor *table, const int32_t *idx,
			   int64_t c0, int round_bf16, int accum)
{
	bk_check(table->dtype == TD_BF16 || table->dtype == out->dtype, "embed_gather");
	bk_check(c0 >= 0 && c0 + tensor_cols(table) <= tensor_cols(out), "embed_gather");
	pick(out, "embed_gather")->embed_gather(out, table, idx, c0, round_bf16, accum);
}

/* A bf16 gradient table (fp32 dout): each row's contributions of this call
 * are summed in fp32 in token order (a stable sort of idx), the sum rounded
 * to bf16 and added to the row in fp32, rounded to bf16 again; what
 * PyTorch's backward leaves in the .grad of a bf16 embedding. */
static void scatter_add_bf16(struct tensor *gtable, const struct tensor *dout, const int32_t *idx,
			     int64_t c0)
{
	bk_check(dout->dtype == TD_F32, "embed_scatter_add");
	int64_t N = tensor_rows(dout), C = tensor_cols(dout), k = tensor_cols(gtable);
	int64_t Vt = tensor_rows(gtable);
	for (int64_t n = 0; n < N; n++)
		bk_check(idx[n] >= 0 && idx[n] < Vt, "embed_scatter_add index");
	int32_t *ord = malloc((size_t)(N ? N : 1) * sizeof *ord);
	int32_t *tmp = malloc((size_t)(N ? N : 1) * sizeof *tmp);
	float *acc = malloc((size_t)(k ? k : 1) * sizeof *acc);
	bk_check(ord && tmp && acc && idx_sort(idx, N, ord, tmp) == 0, "embed_scatter_add memory");
	bf16 *pg = gtable->data;
	const float *pd = dout->data;
	for (int64_t a = 0, b; a < N; a = b) {
		int32_t r = idx[ord[a]];
		memset(acc, 0, (size_t)k * sizeof *acc);
		for (b = a; b < N && idx[ord[b]] == r; b++) {
			const float *d = pd + (int64_t)ord[b] * C + c0;
			for (int64_t c = 0; c < k; c++)
				acc[c] += d[c];
		}
		bf16 *g = pg + (int64_t)r * k;
		for (int64_t c = 0; c < k; c++)
			g[c] = bf16_from_f32(bf16_to_f32(g[c]) + bf16_round(acc[c]));
	}
	free(ord);
	free(tmp);
	free(acc);
}

static void d_embed_scatter_add(struct tensor *gtable, const struct tensor *dout,
				const int32_t *idx, int64_t c0)
{
	if (gtable->dtype == TD_BF16) {
		bk_check(c0 >= 0 && c0 + tensor_cols(gtable) <= tensor_cols(dout), "embed_scatter_add");
		scatter_add_bf16(gtable, dout, idx, c0);
		return;
	}
	same("embed_scatter_add", gtable, dout, NULL, NULL);
	bk_check(c0 >= 0 && c0 + tensor_cols(gtable) <= tensor_cols(dout), "embed_scatter_add");
	pick(gtable, "embed_scatter_add")->embed_scatter_add(gtable, dout, idx, c0);
}

static void d_ngram_rows(int32_t *rows, const int32_t *idx, int64_t B, int64_t T, int64_t V,
			 int order, int64_t nrows)
{
	bk_check(B >= 0 && T >= 0 && V > 0 && order >= 1 && nrows > 0 && nrows <= INT32_MAX,
		 "ngram_rows");
	uint64_t V1 = (uint64_t)V + 1;
	for (int64_t b = 0; b < B; b++)
		for (int64_t t = 0; t < T; t++) {
			uint64_t id = (uint64_t)idx[b * T + t], f = 1;
			for (int64_t r = 1; r < order; r++) {
				f *= V1;
				id += f * (t - r >= 0 ? (uint64_t)idx[b * T + t - r] : (uint64_t)V);
			}
			rows[b * T + t] = (int32_t)(id % (uint64_t)nrows);
		}
}

static void d_count_rows(uint32_t *counts, int64_t nrows, const int32_t *rows, int64_t N)
{
	for (int64_t n = 0; n < N; n++) {
		bk_check(rows[n] >= 0 && rows[n] < nrows, "count_rows index");
		counts[rows[n]]++;
	}
}

static void d_relu2_fwd(struct tensor *out, const struct tensor *h)
{
	same("relu2_fwd", out, h, NULL, NULL);
	bk_check(tensor_numel(out) == tensor_numel(h), "relu2_fwd");
	pick(out, "relu2_fwd")->relu2_fwd(out, h);
}

static void d_relu2_bwd(struct tensor *dh, const struct tensor *dout, const struct tensor *h)
{
	same("relu2_bwd", dh, dout, h, NULL);
	bk_check(tensor_numel(dh) == tensor_numel(h) && tensor_numel(dout) == tensor_numel(h),
		 "relu2_bwd");
	pick(dh, "relu2_bwd")->relu2_bwd(dh, dout, h);
}

static void d_ve_gate_fwd(struct tensor *v, const struct tensor *glog, const struct tensor *ve)
{
	same("ve_gate_fwd", v, glog, ve, NULL);
	bk_check(tensor_numel(v) == tensor_numel(ve) && tensor_rows(glog) == tensor_rows(v) &&
		 tensor_cols(v) % tensor_cols(glog) == 0, "ve_gate_fwd");
	pick(v, "ve_gate_fwd")->ve_gate_fwd(v, glog, ve);
}

static void d_ve_gate_bwd(struct tensor *dglog, struct tensor *dve, const struct tensor *dv,
			  const struct tensor *glog, const struct tensor *ve)
{
	same("ve_gate_bwd", dglog, dve, dv, glog);
	same("ve_gate_bwd", dglog, ve, NULL, NULL);
	bk_check(tensor_numel(dv) == tensor_numel(ve) && tensor_numel(dve) == tensor_numel(ve) &&
		 tensor_numel(dglog) == tensor_numel(glog) && tensor_rows(glog) == tensor_rows(dv),
		 "ve_gate_bwd");
	pick(dglog, "ve_gate_bwd")->ve_gate_bwd(dglog, dve, dv, glog, ve);
}

static void d_mul_cols_fwd(struct tensor *out, const struct tensor *x, const struct tensor *s)
{
	same("mul_cols_fwd", out, x, s, NULL);
	bk_check(tensor_numel(out) == tensor_numel(x), "mul_cols_fwd");
	pick(out, "mul_cols_fwd")->mul_cols_fwd(out, x, s);
}

static void d_mul_cols_bwd(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
			   const struct tensor *x, const struct tensor *s)
{
	same("mul_cols_bwd", dx, ds, dout, x);
	same("mul_cols_bwd", dx, s, NULL, NULL);
	bk_check(tensor_numel(dx) == tensor_numel(dout) && tensor_numel(x) == tensor_numel(dout) &&
		 (!ds || tensor_numel(ds) == tensor_numel(s)), "mul_cols_bwd");
	pick(dx, "mul_cols_bwd")->mul_cols_bwd(dx, ds, dout, x, s);
}

static void d_dot_acc(struct tensor *acc, int64_t i, const struct tensor *x,
		      const struct tensor *y)
{
	same("dot_acc", acc, x, y, NULL);
	bk_check(tensor_numel(x) == tensor_numel(y) && i >= 0 && i < tensor_numel(acc), "dot_acc");
	double v = pick(x, "dot_acc")->dot(x, y);
	if (acc->dtype == TD_F64)
		((double *)acc->data)[i] += v;
	else
		((float *)acc->data)[i] += (float)v;
}

static const struct backend_ops cpu_ops;

static void d_mix_rmsnorm_fwd(struct tensor *x, struct tensor *out, struct tensor *rstd,
			      const struct tensor *xin, const struct tensor *x0,
			      const struct tensor *x0w, const double *c, double eps)
{
	backend_mix_fwd_ops(&cpu_ops, x, out, rstd, xin, x0, x0w, c, eps);
}

static void d_mix_bwd(struct tensor *dx, struct tensor *dx0, struct tensor *dx0w,
		      struct tensor *g, int64_t i, const struct tensor *xin,
		      const struct tensor *x0, const struct tensor *x0w, const double *c)
{
	backend_mix_bwd_ops(&cpu_ops, dx, dx0, dx0w, g, i, xin, x0, x0w, c);
}

/* The pass scope, storage and fusion entries as the plain ops they stand
 * for: nothing is kept, every op finishes before it returns, nothing is
 * stored in bf16. */
static void d_scope(int begin) { (void)begin; }
static void d_sync(void) {}
static int d_no(void) { return 0; }
static int d_no_attn(int head_dim) { (void)head_dim; return 0; }
static const char *d_modes(void) { return ""; }

static void d_matmul_n(int n, struct tensor *const *out, const struct tensor *const *a,
		       const struct tensor *const *b, int ta, int tb, double alpha, double beta)
{
	for (int i = 0; i < n; i++)
		d_matmul(out[i], a[i], b[i], ta, tb, alpha, beta);
}

static void d_ve_gate_fwd_rows(struct tensor *v, const struct tensor *glog,
			       const struct tensor *table, const int32_t *idx, int round_bf16,
			       struct tensor *scratch)
{
	d_embed_gather(scratch, table, idx, 0, round_bf16, 0);
	d_ve_gate_fwd(v, glog, scratch);
}

static void d_ve_gate_bwd_rows(struct tensor *dglog, struct tensor *dve, const struct tensor *dv,
			       const struct tensor *glog, const struct tensor *table,
			       const int32_t *idx, int round_bf16, struct tensor *scratch)
{
	d_embed_gather(scratch, table, idx, 0, round_bf16, 0);
	d_ve_gate_bwd(dglog, dve, dv, glog, scratch);
}

/* ---- the host as the device ---- */
static int d_device_count(void) { return 1; }

static int d_open(const struct backend_options *o, struct err *e)
{
	if (o->device != 0)
		return err_set(e, EXIT_USAGE, "device %d: the cpu backend has device 0 only "
			       "(the host)", o->device);
	if (o->precision == BK_PRECISION_AUTOCAST)
		return err_set(e, EXIT_USAGE, "precision = autocast: the cpu backend multiplies "
			       "in fp32 (or fp64 by dtype), not in bf16; use precision = fp32 or auto");
	backend_cpu_set_threads(o->threads);
	return 0;
}

/* fp32 tensors' GEMMs are OpenBLAS's sgemm (fp64 ones dgemm: result.json
 * says fp64 for those runs) */
static const char *d_precision(void) { return "fp32"; }

static void *d_alloc(size_t n) { return calloc(n ? n : 1, 1); }
static void d_free(void *p) { free(p); }

static void d_polar_express(float *X, size_t batch, size_t m, size_t n, int mode)
{
	for (size_t b = 0; b < batch; b++)
		polar_express_f32(X + b * m * n, m, n, mode);
}

static int d_device_name(char *buf, size_t n)
{
	if (n)
		buf[0] = 0;
	return -1;
}

static double d_peak_flops(void) { return 0; }

static size_t d_device_bytes(size_t *peak)
{
	*peak = 0;
	return 0;
}

static const struct backend_ops cpu_ops = {
	.name = "cpu",
	.zero = d_zero,
	.axpby = d_axpby,
	.dot = d_dot,
	.dot_acc = d_dot_acc,
	.cols_get = d_cols_get,
	.cols_add = d_cols_add,
	.matmul = d_matmul,
	.rmsnorm_fwd = d_rmsnorm_fwd,
	.rmsnorm_bwd = d_rmsnorm_bwd,
	.rmsnorm_ref_fwd = d_rmsnorm_ref_fwd,
	.rmsnorm_ref_bwd = d_rmsnorm_ref_bwd,
	.rope_fwd = d_rope_fwd,
	.rope_bwd = d_rope_bwd,
	.rope_rmsnorm_fwd = d_rope_rmsnorm_fwd,
	.rope_rmsnorm_bwd = d_rope_rmsnorm_bwd,
	.attn_fwd = d_attn_fwd,
	.attn_bwd = d_attn_bwd,
	.softcap_ce = d_softcap_ce,
	.embed_gather = d_embed_gather,
	.embed_scatter_add = d_embed_scatter_add,
	.ngram_rows = d_ngram_rows,
	.count_rows = d_count_rows,
	.relu2_fwd = d_relu2_fwd,
	.relu2_bwd = d_relu2_bwd,
	.ve_gate_fwd = d_ve_gate_fwd,
	.ve_gate_bwd = d_ve_gate_bwd,
	.mul_cols_fwd = d_mul_cols_fwd,
	.mul_cols_bwd = d_mul_cols_bwd,
	.scope = d_scope,
	.sync = d_sync,
	.relu2_fwd_gemm = d_relu2_fwd,
	.mlp_bf16 = d_no,
	.modes = d_modes,
	.attn_bf16 = d_no_attn,
	.norm_bf16 = d_no,
	.mix_rmsnorm_fwd = d_mix_rmsnorm_fwd,
	.mix_bwd = d_mix_bwd,
	.matmul_n = d_matmul_n,
	.ve_gate_fwd_rows = d_ve_gate_fwd_rows,
	.ve_gate_bwd_rows = d_ve_gate_bwd_rows,
	.softcap_ce_bf16 = d_softcap_ce_bf16,
	.device_count = d_device_count,
	.open = d_open,
	.alloc = d_alloc,
	.free = d_free,
	.host_memory = 1,
	.optim = optim_device_host,
	.polar_express = d_polar_express,
	.device_name = d_device_name,
	.peak_flops = d_peak_flops,
	.device_bytes = d_device_bytes,
	.act_budget = 0,
	.ce_rows = 256,   /* small chunks: the logits stay in cache */
	.precision = d_precision,
};

const struct backend_ops *backend_cpu(void)
{
	return &cpu_ops;
}

/* OpenBLAS's own setter (declared in its cblas.h as openblas_set_num_threads). */
void backend_cpu_set_threads(int n)
{
	if (n > 0)
		openblas_set_num_threads(n);
}
