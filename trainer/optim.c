/* optim.c: MuonAdamW over the parameter table (docs/model.md; karpathy/autoresearch
 * train.py adamw_step_fused, muon_step_fused, MuonAdamW.setup_optimizer) and
 * the optimizer-side arms of supkit-train(1), plus state save/load for resume.
 *
 * Groups (initial lr; k = (d/768)^-0.5): lm_head 0.004 k, wte and
 * value_embeds 0.6 k, resid_lambdas 0.005 (betas 0.8, 0.95), x0/wte/out
 * lambdas 0.5 (betas 0.96, 0.95), q_tau 0.02, sub_gains 0.02 (sub_lr), rope_tau
 * 0.02 (rope_lr), all
 * AdamW with eps 1e-10 and wd 0; block matrices Muon lr 0.04 (grouped by shape as in the original:
 * fp32 runs hand each group to Polar Express as one batch; the other ops
 * are per matrix, so state is kept per matrix); OE tables the
 * moment-free table-RMS update with eta = 0.6 k. Every lr times
 * lrm * lr_scale (trainer/schedule.c). matrix_optim = adamw (paper 004's
 * pure AdamW run) makes the block matrices AdamW parameters instead: lr
 * lr_matrix (0.04, no shape factor), betas (0.8, 0.95), eps 1e-10, wd 0,
 * state m and v in place of the Muon and NorMuon buffers.
 *
 * Arithmetic: every step is computed in fp64 working arrays and rounded to
 * the storage precision of the original's tensors where the original
 * stores them, so fp32 results match PyTorch to fp32 rounding (~1e-7
 * relative per step). Rounding points, fp32 runs:
 *  - AdamW fp32: scalars lr, betas, eps as fp32, bias corrections in fp32;
 *    m, v and p rounded to fp32 after each update.
 *  - AdamW with embed_state = bf16 (wte, value_embeds): the original's
 *    tensors are bf16 and its fused (torch.compile) kernel loads p, g, m, v
 *    as bf16, computes in fp32 and stores m, v, p rounded to bf16 once each;
 *    we do the same (g is rounded to bf16 on entry, as the original's
 *    .grad is bf16). embed_state = fp32 keeps fp32 p (the model reads
 *    bf16(w)), m and v.
 *  - Muon: momentum buffer fp32 (lerp with mu as fp32), Nesterov output
 *    fp32; equilibrators (BiEq / MuonEq) on that fp32 G, result fp32; Polar
 *    Express in emulated bf16 (polar.c; the arithmetic of torch.compile on
 *    CUDA, or of eager PyTorch with polar_arith = eager) or fp32; NorMuon:
 *    v_mean, norms, and the second-moment buffer fp32, beta2 cast to the
 *    polar dtype (bf16: 0.94921875), the final scale cast to the polar dtype
 *    and X * scale rounded there; lr' and wd cast to the polar dtype, lr' *
 *    X rounded there, lr' * wd a bf16 product times p in fp32; mask = (X * p
 *    >= 0) in fp32; p -= lr' X + lr' wd p mask in fp32 (these roundings are
 *    eager PyTorch's in both polar arithmetics). post_polar = fp32 makes
 *    every one of those post-polar dtypes fp32 (X keeps its bf16 values);
 *    normuon = 0 skips NorMuon (scale 1, its buffer untouched); the
 *    equilibrator runs on every block matrix or (equil_scope = square) on
 *    the square ones; polar_norm and polar_steps: trainer/polar.c. zeta
 *    = 1 whitens the Nesterov output before the polar step with Zeta's fp32
 *    second moment of the raw gradient (zeta_f32, on the host). malt = 1
 *    scales G by MALT's P and Q (row and column EMAs kept fp32, of the raw
 *    gradient or, malt_input = momentum, of G; malt_beta = 0: none) and maps
 *    the polar output back (P X Q grafted to ||X||_F) in fp64 from X,
 *    rounded to X's post-polar dtype (on the host). muon2f = 1 scales G by
 *    Muon2-F's factored second moment of G (fp32 buffer) and normpre_g = 1
 *    maps G to NormPre-G's relaxed tangent of the fp32 weights with the
 *    alternating marginal normalisation, each in fp64 from the fp32 G, the
 *    result fp32 (on the host).
 *  - OE tables: g / n, R and the step in fp32, table rounded to bf16.
 *  - Neumann-Gram (wte, lm_head, value_embeds) on U = m_hat / (sqrt(v_hat)
 *    + eps) from the unrounded m, v; p moves by lr / (1 - b1^t) U'.
 * fp64 runs: the same formulas with every value fp64 and no rounding.
 *
 * Where it runs (fp32 runs): the state and the element-wise passes
 * (Nesterov, NorMuon's sums of squares, Muon's update, AdamW without
 * Neumann-Gram, the OE update, the equilibrators' and Neumann-Gram's
 * matrix passes) belong to the optimizer's device (optim_set_device: the
 * host twin below, or kernels/optim.cu on the GPU), which computes with the
 * per-element functions of trainer/optim_elem.h; schedules, bias
 * corrections, NorMuon's scales, the equilibrators' and Neumann-Gram's
 * vectors, Table-Neumann's gather, masks and step-0 modes run here. fp64
 * runs are host-only (fp64 working arrays, the host twin's matrix passes).
 *
 * Step-0 modes apply to wte_lambdas and out_lambdas (nostep0_all: also
 * resid_lambdas and x0_lambdas): nostep0 skips step 0 (no update, no
 * state); mom_only_nodisp makes the state and undoes the displacement;
 * disp_only_nomom keeps the displacement and clears the state (counter back
 * to 0); disp_stepcount_nomom keeps displacement and counter, zeroes m, v.
 * Masked q_tau entries are held at exactly 0 (value and moments).
 * Left out: weight decay on AdamW groups (0 in the benchmark).
 */
/* Vectorised elementwise loops (bit-exact: see trainer/backend_cpu.c). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/bf16.h"
#include "lib/err.h"
#include "lib/fileio.h"
#include <cblas.h>
#include "trainer/optim.h"
#include "trainer/optim_elem.h"
#include "trainer/paramspec.h"

/* State arrays m, v and buf hold float in fp32 runs (the original's fp32
 * or bf16 state, exactly) and double in fp64 runs: st_get / st_set. */
struct pstate {
	void *m, *v;          /* AdamW moments (numel), NULL before the first step */
	int64_t step;         /* AdamW counter */
	void *buf;            /* Muon momentum buffer (numel) */
	double *smb;          /* NorMuon second-moment buffer (smb_n), fp64 always */
	size_t smb_n;
	void *zv;             /* Zeta's second moment V (numel, like buf), zeta = 1 only */
	double *ml, *mr;      /* MALT's row (rows) and column (cols) EMAs, malt = 1 only;
	                         fp64 arrays holding the run's precision */
	double *m2f;          /* Muon2-F's factored second moment (smb_n: one value a row
	                         when rows >= cols, else a column), muon2f = 1 only; fp64
	                         array holding the run's precision */
};

struct optim {
	struct config c;
	struct param_table *t;
	int fp64;
	double k;
	struct pstate *st;
	/* per-step work arrays kept between steps (a fresh malloc of each
	 * parameter's copies every step cost page faults: ~5% of a step) */
	void *scr[3];
	size_t scr_cap[3];
	optim_polar_fn polar;      /* NULL: polar_express_f32 here */
	const struct optim_device *dev;   /* state memory, fp32 element-wise passes */
	void *dscr[4];             /* work arrays in dev memory */
	size_t dscr_cap[4];
	/* Muon shape groups (matrices of one shape, in table order): group g
	 * is grp_idx[grp_at[g] .. grp_at[g+1]); grp_of[i] is matrix i's group,
	 * grp_first[i] whether i is its first member */
	size_t *grp_idx, *grp_at, *grp_of;
	uint8_t *grp_first;
};

void optim_set_polar(struct optim *o, optim_polar_fn fn) { o->polar = fn; }

/* Whether p takes a Muon step (a block matrix, matrix_optim = muon); with
 * matrix_optim = adamw the block matrices are AdamW parameters. */
static int muon_param(const struct optim *o, const struct param *p)
{
	return p->group == PG_MATRIX && o->c.matrix_optim == MATRIX_OPTIM_MUON;
}

/* ---- the host twin of struct optim_device ---- */

static void *h_alloc(size_t n) { return xcalloc(n ? n : 1, 1); }

static void h_nesterov(float *x, float *buf, const float *g, size_t n, double w1, double mu)
{
	for (size_t i = 0; i < n; i++) {
		double b = buf[i];
		x[i] = (float)nesterov_elem(&b, g[i], w1, mu, 0);
		buf[i] = (float)b;   /* an fp32 value */
	}
}

static void h_sumsq(double *ss, const float *x, size_t m, size_t n, int per_row)
{
	memset(ss, 0, (per_row ? m : n) * sizeof *ss);
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			ss[per_row ? i : j] += (double)x[i * n + j] * x[i * n + j];
}

/* The loops with the rounding modes as constants (no switch per element). */
static inline __attribute__((always_inline)) void
h_muon_loop(float *w, const float *x, const double *s, size_t m, size_t n, int per_row, double lr,
	    double lrwd, enum round_mode xr)
{
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			w[i * n + j] = (float)muon_update_elem(w[i * n + j], x[i * n + j],
							       s[per_row ? i : j], lr, lrwd, RND_F32, xr);
}

static void h_muon_update(float *w, const float *x, const double *s, size_t m, size_t n,
			  int per_row, double lr, double lrwd, int bf16)
{
	if (bf16)
		h_muon_loop(w, x, s, m, n, per_row, lr, lrwd, RND_BF16);
	else
		h_muon_loop(w, x, s, m, n, per_row, lr, lrwd, RND_F32);
}

static inline __attribute__((always_inline)) void
h_adamw_loop(float *w, const float *g, float *m, float *v, size_t n, double w1, double w2,
	     double bias2, double eps, double step_size, int bf16_state, int round_g, double *U,
	     enum round_mode r)
{
	for (size_t i = 0; i < n; i++) {
		double gi = round_g ? rnd(g[i], RND_BF16) : g[i];
		double mi = m[i], vi = v[i];
		double u = adamw_elem(&mi, &vi, gi, w1, w2, bias2, eps, bf16_state, r);
		m[i] = (float)mi;   /* rounded to fp32 or bf16 already */
		v[i] = (float)vi;
		if (U)
			U[i] = u;
		else
			w[i] = (float)rnd(w[i] - step_size * u, r);
	}
}

static void h_adamw(float *w, const float *g, float *m, float *v, size_t n, double w1,
		    double w2, double bias2, double eps, double step_size, int bf16_state,
		    int round_g, double *U)
{
	if (bf16_state)
		h_adamw_loop(w, g, m, v, n, w1, w2, bias2, eps, step_size, 1, round_g, U, RND_BF16);
	else
		h_adamw_loop(w, g, m, v, n, w1, w2, bias2, eps, step_size, 0, round_g, U, RND_F32);
}

static void h_step_w(float *w, const double *U, size_t n, double step_size, int bf16)
{
	enum round_mode r = bf16 ? RND_BF16 : RND_F32;
	for (size_t i = 0; i < n; i++)
		w[i] = (float)rnd(w[i] - step_size * U[i], r);
}

static void h_oe_sumsq(double *rs, const bf16 *g, const uint32_t *counts, size_t rows,
		       size_t cols)
{
	for (size_t i = 0; i < rows; i++) {
		double s = 0;
		for (size_t j = 0; counts[i] && j < cols; j++) {
			double G = oe_g_elem(bf16_to_f32(g[i * cols + j]), counts[i], RND_F32);
			s += G * G;
		}
		rs[i] = s;
	}
}

static void h_oe_step(bf16 *w, const bf16 *g, const uint32_t *counts, size_t rows, size_t cols,
		      double eta, double rms)
{
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; counts[i] && j < cols; j++) {
			size_t at = i * cols + j;
			double G = oe_g_elem(bf16_to_f32(g[at]), counts[i], RND_F32);
			double step = oe_step_elem(G, eta, rms, RND_F32);
			w[at] = bf16_from_f32((float)rnd(bf16_to_f32(w[at]) - step, RND_BF16));
		}
}

static void h_sumsq64(double *ss, const double *G, size_t m, size_t n, int per_row)
{
	memset(ss, 0, (per_row ? m : n) * sizeof *ss);
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			ss[per_row ? i : j] += G[i * n + j] * G[i * n + j];
}

static void h_scale64(double *G, const double *rs, const double *cs, size_t m, size_t n)
{
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			G[i * n + j] *= (rs ? rs[i] : 1.0) * (cs ? cs[j] : 1.0);
}

static void h_widen(double *G, const float *x, size_t n, int bf16)
{
	for (size_t i = 0; i < n; i++)
		G[i] = bf16 ? rnd(x[i], RND_BF16) : x[i];
}

static void h_narrow(float *x, const double *G, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = (float)G[i];
}

static void h_colsum64(double *s, const double *U, size_t V, size_t d)
{
	memset(s, 0, d * sizeof *s);
	for (size_t v = 0; v < V; v++)
		for (size_t j = 0; j < d; j++)
			s[j] += U[v * d + j];
}

static void h_ng_project(double *U, double *proj, double *rs, const double *mu, size_t V,
			 size_t d)
{
	for (size_t v = 0; v < V; v++) {
		double s = 0, q = 0;
		for (size_t j = 0; j < d; j++)
			s += U[v * d + j] * mu[j];
		proj[v] = s;
		for (size_t j = 0; j < d; j++) {
			U[v * d + j] -= s * mu[j];
			q += U[v * d + j] * U[v * d + j];
		}
		rs[v] = q;
	}
}

static void h_gram64(double *H, const double *U, size_t V, size_t d)
{
	cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d, (int)d, (int)V, 1.0, U,
		    (int)d, U, (int)d, 0.0, H, (int)d);
}

static void h_ng_whiten(double *W, const double *U, const double *H, double c, size_t V,
			size_t d)
{
	memcpy(W, U, V * d * sizeof *W);
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)V, (int)d, (int)d, c, U,
		    (int)d, H, (int)d, 1.0, W, (int)d);
}

static void h_ng_combine(double *U, const double *proj, const double *mu, const double *W,
			 double c, size_t V, size_t d)
{
	for (size_t v = 0; v < V; v++)
		for (size_t j = 0; j < d; j++)
			U[v * d + j] = proj[v] * mu[j] + c * W[v * d + j];
}

static const struct optim_device host_device = {
	.alloc = h_alloc, .free = free, .nesterov = h_nesterov, .sumsq = h_sumsq,
	.muon_update = h_muon_update, .adamw = h_adamw, .step_w = h_step_w,
	.oe_sumsq = h_oe_sumsq, .oe_step = h_oe_step, .sumsq64 = h_sumsq64, .scale64 = h_scale64,
	.widen = h_widen, .narrow = h_narrow, .colsum64 = h_colsum64, .ng_project = h_ng_project,
	.gram64 = h_gram64, .ng_whiten = h_ng_whiten, .ng_combine = h_ng_combine,
};

const struct optim_device *optim_device_host(void) { return &host_device; }

/* Bytes of a state entry (m, v, buf): fp32 runs float, fp64 runs double. */
static size_t st_es(const struct optim *o)
{
	return o->fp64 ? sizeof(double) : sizeof(float);
}

static double st_get(const struct optim *o, const void *a, size_t i)
{
	return o->fp64 ? ((const double *)a)[i] : (double)((const float *)a)[i];
}

static void st_set(const struct optim *o, void *a, size_t i, double x)
{
	if (o->fp64)
		((double *)a)[i] = x;
	else
		((float *)a)[i] = (float)x;
}

/* A state array of n entries of es bytes (zeroed) in the device's memory. */
static void *st_alloc(const struct optim *o, size_t n, size_t es)
{
	return o->dev->alloc((n ? n : 1) * es);
}

/* a (n entries of es bytes, from's memory, may be NULL) copied into the
 * device's memory; a is freed. */
static void *st_moved(struct optim *o, const struct optim_device *from, void *a, size_t n,
		      size_t es)
{
	if (!a)
		return NULL;
	void *b = st_alloc(o, n, es);
	memcpy(b, a, n * es);
	from->free(a);
	return b;
}

void optim_set_device(struct optim *o, const struct optim_device *d)
{
	if (!d)
		d = &host_device;
	if (o->fp64 || d == o->dev)
		return;
	const struct optim_device *from = o->dev;
	o->dev = d;
	for (size_t i = 0; i < o->t->n; i++) {
		struct pstate *st = &o->st[i];
		size_t n = o->t->p[i].numel;
		st->m = st_moved(o, from, st->m, n, st_es(o));
		st->v = st_moved(o, from, st->v, n, st_es(o));
		st->buf = st_moved(o, from, st->buf, n, st_es(o));
		st->smb = st_moved(o, from, st->smb, st->smb_n, sizeof(double));
		st->zv = st_moved(o, from, st->zv, n, st_es(o));
		st->ml = st_moved(o, from, st->ml, o->t->p[i].rows, sizeof(double));
		st->mr = st_moved(o, from, st->mr, o->t->p[i].cols, sizeof(double));
		st->m2f = st_moved(o, from, st->m2f, st->smb_n, sizeof(double));
	}
	for (int k = 0; k < 4; k++) {
		if (o->dscr[k])
			from->free(o->dscr[k]);
		o->dscr[k] = NULL;
		o->dscr_cap[k] = 0;
	}
}

/* Work array k of at least `bytes` in the device's memory. */
static void *dscratch(struct optim *o, int k, size_t bytes)
{
	if (o->dscr_cap[k] < bytes) {
		if (o->dscr[k])
			o->dev->free(o->dscr[k]);
		o->dscr[k] = o->dev->alloc(bytes);
		o->dscr_cap[k] = bytes;
	}
	return o->dscr[k];
}

/* Work array k of at least `bytes` (contents undefined). */
static void *scratch(struct optim *o, int k, size_t bytes)
{
	if (o->scr_cap[k] < bytes) {
		free(o->scr[k]);
		o->scr[k] = xmalloc(bytes);
		o->scr_cap[k] = bytes;
	}
	return o->scr[k];
}

/* Load the value / gradient of p into fp64 arrays (w or g may be NULL). */
static void load_vals(const struct optim *o, const struct param *p, double *w, double *g)
{
	size_t n = p->numel;
	if (o->fp64) {
		if (w)
			memcpy(w, p->w64, n * sizeof *w);
		if (g)
			memcpy(g, p->g64, n * sizeof *g);
		return;
	}
	if (w)
		for (size_t i = 0; i < n; i++)
			w[i] = p->w[i];
	if (g)
		for (size_t i = 0; i < n; i++)
			g[i] = p->g[i];
}

/* Store fp64 values w into p (fp32 runs: values that fp32 holds exactly,
 * the fp32 passes themselves run on the optimizer device). */
static void store_vals(const struct optim *o, struct param *p, const double *w)
{
	size_t n = p->numel;
	if (o->fp64)
		memcpy(p->w64, w, n * sizeof *w);
	else
		for (size_t i = 0; i < n; i++)
			p->w[i] = (float)w[i];
}

/* Whether step-0 mode applies to p (its kind by its name, paramspec.h). */
static int step0_target(const struct optim *o, const struct param *p)
{
	enum cfg_step0 m = o->c.step0;
	enum param_kind k;
	int idx;
	if (m == STEP0_NONE || paramspec_name_kind(p->name, &k, &idx) != 0)
		return 0;
	if (k == PK_WTE_LAMBDAS || k == PK_OUT_LAMBDAS)
		return 1;
	if (m == STEP0_NOSTEP0_ALL && (k == PK_RESID_LAMBDAS || k == PK_X0_LAMBDAS))
		return 1;
	return 0;
}

static double group_lr(const struct optim *o, enum param_group g)
{
	const struct config *c = &o->c;
	switch (g) {
	case PG_LM_HEAD: return c->lr_lm_head * o->k;
	case PG_EMBED:   return c->lr_embed * o->k;
	case PG_RESID:   return c->lr_resid;
	case PG_SCALAR:  return c->lr_scalar;
	case PG_QTAU:    return c->lr_qtau;
	case PG_SUB:     return c->sub_lr;
	case PG_ROPE:    return c->rope_lr;
	case PG_MATRIX:  return c->lr_matrix;
	case PG_OE:      return c->oe_lr * o->k;
	default:         return 0;
	}
}

static int same_matrix_shape(const struct param *a, const struct param *b)
{
	return a->group == PG_MATRIX && b->group == PG_MATRIX && a->rows == b->rows &&
	       a->cols == b->cols;
}

/* The Muon shape groups of t (struct optim). */
static void muon_groups(struct optim *o, const struct param_table *t)
{
	size_t n = t->n ? t->n : 1, ng = 0, k = 0;
	o->grp_idx = xmalloc(n * sizeof *o->grp_idx);
	o->grp_at = xmalloc((n + 1) * sizeof *o->grp_at);
	o->grp_of = xmalloc(n * sizeof *o->grp_of);
	o->grp_first = xcalloc(n, 1);
	for (size_t i = 0; i < t->n; i++) {
		size_t j = 0;
		while (j < i && !same_matrix_shape(&t->p[j], &t->p[i]))
			j++;
		if (t->p[i].group != PG_MATRIX || j < i)
			continue;   /* not a matrix, or its group is made */
		o->grp_first[i] = 1;
		o->grp_at[ng] = k;
		for (j = i; j < t->n; j++)
			if (same_matrix_shape(&t->p[j], &t->p[i])) {
				o->grp_idx[k++] = j;
				o->grp_of[j] = ng;
			}
		ng++;
	}
	o->grp_at[ng] = k;
}

int optim_create(const struct config *c, struct param_table *t, int fp64,
		 struct optim **out, struct err *e)
{
	for (size_t i = 0; i < t->n; i++) {
		struct param *p = &t->p[i];
		if (fp64 ? (!p->w64 || !param_has_grad(p, 1))
			 : (!(p->w || (p->wb && p->group == PG_OE)) || !param_has_grad(p, 0)))
			return err_set(e, EXIT_USAGE, "optimizer: parameter '%s' has no %s values",
				       p->name, fp64 ? "fp64" : "fp32");
		if (p->group == PG_MATRIX && (p->ndim != 2 || p->rows * p->cols != p->numel))
			return err_set(e, EXIT_USAGE, "optimizer: Muon parameter '%s' is not a matrix",
				       p->name);
		if (p->group == PG_OE && (!p->counts || p->rows * p->cols != p->numel))
			return err_set(e, EXIT_USAGE, "optimizer: OE table '%s' has no visit counts",
				       p->name);
		if (p->group < 0 || p->group >= PG_NGROUPS)
			return err_set(e, EXIT_USAGE, "optimizer: parameter '%s' has no group", p->name);
	}
	struct optim *o = xcalloc(1, sizeof *o);
	o->c = *c;
	o->t = t;
	o->fp64 = fp64;
	o->k = config_lr_k(c);
	o->dev = &host_device;
	muon_groups(o, t);
	o->st = xcalloc(t->n ? t->n : 1, sizeof *o->st);
	for (size_t i = 0; i < t->n; i++) {
		struct param *p = &t->p[i];
		if (muon_param(o, p)) {
			o->st[i].buf = st_alloc(o, p->numel, st_es(o));
			o->st[i].smb_n = p->rows >= p->cols ? p->rows : p->cols;
			o->st[i].smb = st_alloc(o, o->st[i].smb_n, sizeof(double));
			if (c->zeta)
				o->st[i].zv = st_alloc(o, p->numel, st_es(o));
			if (c->malt && c->malt_beta > 0) {   /* malt_beta = 0: no EMA state */
				o->st[i].ml = st_alloc(o, p->rows, sizeof(double));
				o->st[i].mr = st_alloc(o, p->cols, sizeof(double));
			}
			if (c->muon2f)
				o->st[i].m2f = st_alloc(o, o->st[i].smb_n, sizeof(double));
		}
	}
	*out = o;
	return 0;
}

void optim_free(struct optim *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->t->n; i++) {
		void *a[] = { o->st[i].m, o->st[i].v, o->st[i].buf, o->st[i].smb, o->st[i].zv,
			      o->st[i].ml, o->st[i].mr, o->st[i].m2f };
		for (int k = 0; k < 8; k++)
			if (a[k])
				o->dev->free(a[k]);
	}
	free(o->st);
	free(o->grp_idx);
	free(o->grp_at);
	free(o->grp_of);
	free(o->grp_first);
	for (int k = 0; k < 3; k++)
		free(o->scr[k]);
	for (int k = 0; k < 4; k++)
		if (o->dscr[k])
			o->dev->free(o->dscr[k]);
	free(o);
}

int64_t optim_adamw_count(const struct optim *o, size_t i)
{
	return i < o->t->n ? o->st[i].step : 0;
}

int optim_adamw_moments(const struct optim *o, size_t i, double *m, double *v)
{
	if (i >= o->t->n || !o->st[i].m)
		return -1;
	for (size_t k = 0; k < o->t->p[i].numel; k++) {
		m[k] = st_get(o, o->st[i].m, k);
		v[k] = st_get(o, o->st[i].v, k);
	}
	return 0;
}

/* Neumann-Gram on U (V x d) in the device's memory. */
static void neumann_on_dev(struct optim *o, double *U, size_t V, size_t d, double a)
{
	double *work = dscratch(o, 3, (neumann_work_doubles(V, d) + 1) * sizeof *work);
	neumann_gram_apply_on(o->dev, U, V, d, a, work);
}

/* The same on U in host memory: in place on the host twin, else over a
 * copy in the device's memory. */
static void neumann_dev(struct optim *o, double *U, size_t V, size_t d, double a)
{
	if (o->dev == &host_device) {
		neumann_on_dev(o, U, V, d, a);
		return;
	}
	double *G = dscratch(o, 2, (V * d + 1) * sizeof *G);
	memcpy(G, U, V * d * sizeof *G);
	neumann_on_dev(o, G, V, d, a);
	memcpy(U, G, V * d * sizeof *G);
}

/* ---- AdamW ---- */

/* AdamW's moment update and direction (into U, or applied to w when U is
 * NULL) over the fp64 working arrays and state of an fp64 run. */
static void adamw_moments(struct pstate *st, double *w, const double *g, double *U, size_t n,
			  double w1, double w2, double bias2, double eps, double step_size)
{
	double *m = st->m, *v = st->v;
	for (size_t i = 0; i < n; i++) {
		double upd = adamw_elem(&m[i], &v[i], g[i], w1, w2, bias2, eps, 0, RND_F64);
		if (U)
			U[i] = upd;
		else
			w[i] -= step_size * upd;
	}
}

static void adamw_param(struct optim *o, size_t pi, const struct optim_sched *s)
{
	struct param *p = &o->t->p[pi];
	struct pstate *st = &o->st[pi];
	size_t n = p->numel;
	int bf16_state = !o->fp64 && p->store == PARAM_BF16 && o->c.embed_state == EMBED_STATE_BF16;
	enum round_mode sr = o->fp64 ? RND_F64 : RND_F32;   /* 0-d scalar tensors are fp32 */
	int whiten = o->c.neumann && (p->group == PG_LM_HEAD || p->group == PG_EMBED) && p->ndim == 2;
	double a = homotopy_alpha(s->step, o->c.neumann_tau);

	if (!st->m) {
		st->m = st_alloc(o, n, st_es(o));
		st->v = st_alloc(o, n, st_es(o));
		st->step = 0;
	}
	double b1 = p->group == PG_SCALAR ? 0.96 : 0.8, b2 = 0.95, eps = 1e-10;
	double lr = rnd(group_lr(o, p->group) * s->lr_mult, sr);
	b1 = rnd(b1, sr);
	b2 = rnd(b2, sr);
	eps = rnd(eps, sr);
	st->step++;
	double t = (double)st->step;
	double bias1 = rnd(1 - rnd(pow(b1, t), sr), sr);
	double bias2 = rnd(1 - rnd(pow(b2, t), sr), sr);
	double step_size = rnd(lr / bias1, sr);
	double w1 = rnd(1 - b1, sr), w2 = rnd(1 - b2, sr);
	if (!o->fp64) {
		/* the passes on the device (or the host twin), in the same order
		 * and roundings as the fp64 working arrays below would have */
		const struct optim_device *d = o->dev;
		size_t R = p->rows, C = p->cols;
		float *m = st->m, *v = st->v;
		if (whiten && o->c.neumann_site == NEUMANN_GRADIENT) {
			/* g (bf16-rounded with bf16 state) whitened, then fp32 */
			double *G = dscratch(o, 2, n * sizeof *G);
			float *gw = dscratch(o, 0, n * sizeof *gw);
			d->widen(G, p->g, n, bf16_state);
			neumann_on_dev(o, G, R, C, a);
			d->narrow(gw, G, n);
			d->adamw(p->w, gw, m, v, n, w1, w2, bias2, eps, step_size, bf16_state, 0, NULL);
		} else if (whiten) {
			/* the direction U whitened, then the step */
			double *U = dscratch(o, 2, n * sizeof *U);
			d->adamw(p->w, p->g, m, v, n, w1, w2, bias2, eps, step_size, bf16_state,
				 bf16_state, U);
			neumann_on_dev(o, U, R, C, a);
			d->step_w(p->w, U, n, step_size, bf16_state);
		} else {
			d->adamw(p->w, p->g, m, v, n, w1, w2, bias2, eps, step_size, bf16_state,
				 bf16_state, NULL);
		}
	} else {
		/* fp64 runs: fp64 working arrays on the host */
		double *w = scratch(o, 0, n * sizeof *w), *g = scratch(o, 1, n * sizeof *g);
		load_vals(o, p, w, g);
		if (whiten && o->c.neumann_site == NEUMANN_GRADIENT)
			neumann_dev(o, g, p->rows, p->cols, a);
		/* m, v: unrounded values for this step's update (fused kernel) */
		double *U = whiten && o->c.neumann_site == NEUMANN_DIRECTION
			  ? scratch(o, 2, n * sizeof *U) : NULL;
		adamw_moments(st, w, g, U, n, w1, w2, bias2, eps, step_size);
		if (U) {
			neumann_dev(o, U, p->rows, p->cols, a);
			for (size_t i = 0; i < n; i++)
				w[i] -= step_size * U[i];
		}
		store_vals(o, p, w);
	}
	/* masked entries (q_tau) held at 0, value and moments */
	for (size_t i = 0; p->mask && i < n; i++)
		if (p->mask[i]) {
			if (o->fp64)
				p->w64[i] = 0;
			else
				p->w[i] = 0;
			st_set(o, st->m, i, 0);
			st_set(o, st->v, i, 0);
		}
}

/* ---- Muon ---- */

/* Zeta (paper 002 section 3.3, adapting Chen et al. 2026): the second
 * moment of the raw gradient g, V = beta2 V + (1 - beta2) g^2 (beta2 0.99,
 * V in the state's dtype), then the momentum G the polar step takes is
 * whitened entrywise, G / (sqrt(V / (1 - beta2^t)) + 1e-8), t = step + 1
 * (t = 1 at step 0: V-hat = g^2). Computed in fp64, each stored value
 * rounded to the state's dtype. Host memory: the CUDA backend refuses
 * zeta = 1 (trainer/backend_select.c). */
#define ZETA_BETA2 0.99
#define ZETA_EPS 1e-8

static double zeta_bias(int step)
{
	return 1.0 - pow(ZETA_BETA2, (double)step + 1.0);
}

static void zeta_f32(float *V, const float *g, float *G, size_t N, int step)
{
	double bc = zeta_bias(step);
	for (size_t i = 0; i < N; i++) {
		double gi = g[i];
		V[i] = (float)(ZETA_BETA2 * V[i] + (1 - ZETA_BETA2) * gi * gi);
		G[i] = (float)(G[i] / (sqrt(V[i] / bc) + ZETA_EPS));
	}
}

static void zeta_f64(double *V, const double *g, double *G, size_t N, int step)
{
	double bc = zeta_bias(step);
	for (size_t i = 0; i < N; i++) {
		V[i] = ZETA_BETA2 * V[i] + (1 - ZETA_BETA2) * g[i] * g[i];
		G[i] = G[i] / (sqrt(V[i] / bc) + ZETA_EPS);
	}
}

/* MALT (paper 004 #2c, adapting Wu et al. 2026, Alg. 1): running EMAs of
 * the squared row and column norms of g, l = b l + (1 - b) sum_j g_ij^2 and
 * r = b r + (1 - b) sum_i g_ij^2 (b = malt_beta, in the run's precision),
 * P = diag((l + eps)^-1/8), Q = diag((r + eps)^-1/8) (eps = malt_eps); the
 * polar step takes P G Q; its output O is mapped back, D = P O Q, and
 * grafted to O's Frobenius norm, D ||O||_F / ||D||_F. g is the raw gradient
 * (malt_input = grad) or G itself (momentum: paper 004 #2d); with b = 0 (no
 * EMA state, st->ml NULL) l and r are this step's sums, rounded to r. */
static void malt_pre(const struct optim *o, struct pstate *st, const double *g, double *G,
		     size_t m, size_t n, enum round_mode r, double *pq)
{
	double b = o->c.malt_beta, eps = o->c.malt_eps;
	double *P = pq, *Q = pq + m;
	for (size_t j = 0; j < n; j++)
		Q[j] = 0;
	for (size_t i = 0; i < m; i++) {
		double rs = 0;
		for (size_t j = 0; j < n; j++) {
			double q = g[i * n + j] * g[i * n + j];
			rs += q;
			Q[j] += q;
		}
		double l = st->ml ? (st->ml[i] = rnd(b * st->ml[i] + (1 - b) * rs, r)) : rnd(rs, r);
		P[i] = pow(l + eps, -0.125);
	}
	for (size_t j = 0; j < n; j++) {
		double rr = st->mr ? (st->mr[j] = rnd(b * st->mr[j] + (1 - b) * Q[j], r)) : rnd(Q[j], r);
		Q[j] = pow(rr + eps, -0.125);
	}
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			G[i * n + j] = rnd(P[i] * G[i * n + j] * Q[j], r);
}

/* D = P X Q grafted to ||X||_F, rounded (xr) into X (m x n). */
static void malt_post(double *X, size_t m, size_t n, const double *pq, enum round_mode xr)
{
	const double *P = pq, *Q = pq + m;
	double fo = 0, fd = 0;
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++) {
			double x = X[i * n + j], d = P[i] * x * Q[j];
			fo += x * x;
			fd += d * d;
			X[i * n + j] = d;
		}
	double k = fd > 0 ? sqrt(fo / fd) : 0;
	for (size_t i = 0; i < m * n; i++)
		X[i] = rnd(X[i] * k, xr);
}

/* Muon2-F (paper 002 section 3.3, exp53, adapting Liu et al. 2026): a
 * factored one-sided second moment of the momentum G (m x n) the polar step
 * takes, reduced over NorMuon's red_dim (over columns, one value a row, when
 * m >= n, else over rows, one value a column): B = lerp(B, mean(G^2), 1 -
 * 0.95), then G times max(B, 1e-10)^-1/2 before the polar step; every value
 * rounded to r (fp32 runs: the fp32 buffer of the original's lerp_). */
#define MUON2F_BETA2 0.95

static void muon2f_pre(double *B, double *G, size_t m, size_t n, enum round_mode r)
{
	int per_row = m >= n;
	size_t ns = per_row ? m : n, rsz = per_row ? n : m;
	double *v = xcalloc(ns, sizeof *v), w = rnd(1 - MUON2F_BETA2, r);
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			v[per_row ? i : j] += G[i * n + j] * G[i * n + j];
	for (size_t k = 0; k < ns; k++) {
		B[k] = rnd(opt_lerp(B[k], rnd(rnd(v[k], r) / (double)rsz, r), w), r);
		v[k] = rnd(1 / sqrt(B[k] > 1e-10 ? B[k] : rnd(1e-10, r)), r);
	}
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			G[i * n + j] = rnd(G[i * n + j] * v[per_row ? i : j], r);
	free(v);
}

/* NormPre-G (paper 004 #2e/#2f, adapting Gong et al. 2026, Alg. 1) on the
 * momentum G (m x n) with the weights W (m x n, row i the neuron w_i): the
 * relaxed tangent x_i = g_i - <g_i, w_i> w_i (normpre_tangent = 0: x_i =
 * g_i), then the one-sided marginal normalisation that alternates with the
 * 0-based step t: rows at even t, x_i (sum_j x_ij^2 + 1e-8)^-1/2, columns at
 * odd t, likewise per column. Computed in fp64, the result rounded to r. */
#define NORMPRE_EPS 1e-8

static void normpre_pre(const double *W, double *G, size_t m, size_t n, int step, int tangent,
			enum round_mode r)
{
	if (tangent)
		for (size_t i = 0; i < m; i++) {
			double dot = 0;
			for (size_t j = 0; j < n; j++)
				dot += G[i * n + j] * W[i * n + j];
			for (size_t j = 0; j < n; j++)
				G[i * n + j] -= dot * W[i * n + j];
		}
	int rows = step % 2 == 0;
	size_t ns = rows ? m : n;
	double *s = xcalloc(ns, sizeof *s);
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			s[rows ? i : j] += G[i * n + j] * G[i * n + j];
	for (size_t k = 0; k < ns; k++)
		s[k] = 1 / sqrt(s[k] + NORMPRE_EPS);
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			G[i * n + j] = rnd(G[i * n + j] * s[rows ? i : j], r);
	free(s);
}

/* Whether the pre-polar equilibrator applies to an m x n matrix
 * (equil_scope = square: square matrices only). */
static int equilibrated(const struct optim *o, size_t m, size_t n)
{
	return o->c.muoneq != MUONEQ_OFF && (o->c.equil_scope == EQUIL_ALL || m == n);
}

/* The pre-polar equilibrator of the arm on G (m x n, fp64 working copy of
 * the momentum in the device's memory; work: m + n doubles there). */
static void equilibrate(struct optim *o, double *G, size_t m, size_t n, int step, double *work)
{
	if (o->c.muoneq == MUONEQ_BIEQ)
		bieq_passes_on(o->dev, G, m, n, homotopy_alpha(step, o->c.bieq_tau), o->c.bieq_passes,
			       o->c.bieq_sides == BIEQ_ROWS, work);
	else if (o->c.muoneq == MUONEQ_R)
		muoneq_r_apply_on(o->dev, G, m, n, work);
	else
		muoneq_rc_apply_on(o->dev, G, m, n, work);
}

/* NorMuon: from vm (ns sums of squares of the polar output, over columns
 * when per_row, else over rows: rsz entries each) the second-moment buffer
 * update and the final per-row or per-column scales ssz (ns), rounded to
 * X's dtype xr; tensors of dtype r (fp32 runs: RND_F32). */
static void normuon_scales(const struct optim *o, struct pstate *st, double *vm, double *ssz,
			   size_t rsz, enum round_mode r, enum round_mode xr)
{
	size_t ns = st->smb_n;
	double vsum = 0;
	for (size_t k = 0; k < ns; k++) {
		vm[k] = rnd(vm[k] / rsz, r);                  /* v_mean, fp32 */
		vsum += vm[k];
	}
	double vn = rnd(sqrt(rnd(rnd(vsum, r) * rsz, r)), r);
	double beta2 = rnd(rnd(o->c.muon_beta2, r), xr);    /* beta2_t.to(X dtype) */
	double wb = rnd(1 - beta2, xr);
	double ssq = 0;
	for (size_t k = 0; k < ns; k++) {
		st->smb[k] = rnd(opt_lerp(st->smb[k], vm[k], wb), r);
		double sz = st->smb[k] > 1e-10 ? st->smb[k] : rnd(1e-10, r);
		ssz[k] = rnd(1 / sqrt(sz), r);                 /* step_size */
		ssq += rnd(rnd(vm[k] * rsz, r) * rnd(ssz[k] * ssz[k], r), r);
	}
	double vn2 = rnd(sqrt(rnd(ssq, r)), r);
	double ratio = rnd(vn / (vn2 > 1e-10 ? vn2 : rnd(1e-10, r)), r);
	for (size_t k = 0; k < ns; k++)
		ssz[k] = rnd(rnd(ssz[k] * ratio, r), xr);     /* final_scale.to(X dtype) */
}

/* lr' (shape-scaled) and lr' * wd, cast to X's dtype. */
static void muon_lr(const struct optim *o, const struct param *p, const struct optim_sched *s,
		    enum round_mode r, enum round_mode xr, double *lr, double *lrwd)
{
	size_t m = p->rows, n = p->cols;
	double lrp = group_lr(o, PG_MATRIX) * s->lr_mult * sqrt(m > n ? (double)m / n : 1.0);
	double wd = rnd(rnd(s->muon_wd, r), xr);
	*lr = rnd(rnd(lrp, r), xr);
	*lrwd = rnd(*lr * wd, xr);
}

/* fp32 runs, one shape group (the nb matrices idx[], all m x n, as the
 * original stacks them): the element-wise passes on the device (o->dev),
 * Polar Express once for the group (a batch), the scalars and the arms'
 * equilibrators here. Each matrix's result is what it alone would get. */
static void muon_group_f32(struct optim *o, const size_t *idx, size_t nb,
			   const struct optim_sched *s)
{
	const struct optim_device *d = o->dev;
	const struct param *p0 = &o->t->p[idx[0]];
	size_t m = p0->rows, n = p0->cols, N = p0->numel;
	/* X's dtype after the polar step: NorMuon and the update run in it */
	int bf = o->c.polar == POLAR_BF16 && o->c.post_polar == POST_POLAR_AS_POLAR;
	enum round_mode r = RND_F32, xr = bf ? RND_BF16 : RND_F32;
	float *X = dscratch(o, 0, nb * N * sizeof *X);
	/* 1. Nesterov on the fp32 momentum */
	double mu = rnd(s->momentum, r), w1 = rnd(1 - mu, r);
	for (size_t b = 0; b < nb; b++) {
		struct param *p = &o->t->p[idx[b]];
		float *Xb = X + b * N;
		d->nesterov(Xb, (float *)o->st[idx[b]].buf, p->g, N, w1, mu);
		if (o->c.zeta)   /* Zeta's whitening (p->g is the raw gradient) */
			zeta_f32((float *)o->st[idx[b]].zv, p->g, Xb, N, s->step);
		if (o->c.malt) {   /* MALT's P G Q; P and Q kept for the map-back */
			double *G = dscratch(o, 2, 2 * N * sizeof *G), *g = G + N;
			double *pq = (double *)scratch(o, 2, nb * (m + n) * sizeof *pq) + b * (m + n);
			int mom = o->c.malt_input == MALT_INPUT_MOMENTUM;
			for (size_t i = 0; i < N; i++) {
				G[i] = Xb[i];
				g[i] = mom ? Xb[i] : p->g[i];
			}
			malt_pre(o, &o->st[idx[b]], g, G, m, n, RND_F32, pq);
			for (size_t i = 0; i < N; i++)
				Xb[i] = (float)G[i];
		}
		if (o->c.muon2f || o->c.normpre_g) {   /* Muon2-F's or NormPre-G's scaling, fp64 copy */
			double *G = dscratch(o, 2, 2 * N * sizeof *G), *W = G + N;
			for (size_t i = 0; i < N; i++) {
				G[i] = Xb[i];
				W[i] = p->w[i];
			}
			if (o->c.muon2f)
				muon2f_pre(o->st[idx[b]].m2f, G, m, n, RND_F32);
			else
				normpre_pre(W, G, m, n, s->step, o->c.normpre_tangent, RND_F32);
			for (size_t i = 0; i < N; i++)
				Xb[i] = (float)G[i];
		}
		/* pre-polar equilibration on an fp64 copy, the result fp32 */
		if (equilibrated(o, m, n)) {
			double *G = dscratch(o, 2, N * sizeof *G);
			double *work = dscratch(o, 3, (m + n) * sizeof *work);
			d->widen(G, Xb, N, 0);
			equilibrate(o, G, m, n, s->step, work);
			d->narrow(Xb, G, N);
		}
	}
	/* 2. Polar Express, the group as one batch, in the config's arithmetic
	 * (the polar arms on the host: optim_polar_fn does the plain step) */
	struct polar_opts po;
	polar_opts_of(&o->c, &po);
	if (o->polar && polar_opts_plain(&po))
		o->polar(X, nb, m, n, po.mode);
	else
		for (size_t b = 0; b < nb; b++)
			polar_express_f32_opts(X + b * N, m, n, &po);
	if (o->c.malt)   /* MALT's map-back and grafting, in fp64 from X, rounded to X's dtype */
		for (size_t b = 0; b < nb; b++) {
			double *D = dscratch(o, 2, N * sizeof *D);
			const double *pq = (double *)o->scr[2] + b * (m + n);
			float *Xb = X + b * N;
			for (size_t i = 0; i < N; i++)
				D[i] = Xb[i];
			malt_post(D, m, n, pq, xr);
			for (size_t i = 0; i < N; i++)
				Xb[i] = (float)D[i];
		}
	/* 3. NorMuon (over columns, one value a row, when m >= n, else rows;
	 * normuon = 0: scales of 1), 4. cautious weight decay and update */
	int per_row = m >= n;
	for (size_t b = 0; b < nb; b++) {
		struct param *p = &o->t->p[idx[b]];
		struct pstate *st = &o->st[idx[b]];
		size_t ns = st->smb_n;
		double *vm = dscratch(o, 1, 2 * ns * sizeof *vm), *ssz = vm + ns;
		if (o->c.normuon) {
			d->sumsq(vm, X + b * N, m, n, per_row);
			normuon_scales(o, st, vm, ssz, per_row ? n : m, r, xr);
		} else {
			for (size_t k = 0; k < ns; k++)
				ssz[k] = 1.0;
		}
		double lr, lrwd;
		muon_lr(o, p, s, r, xr, &lr, &lrwd);
		d->muon_update(p->w, X + b * N, ssz, m, n, per_row, lr, lrwd, bf);
	}
}

/* fp64 runs: the same in fp64, no rounding, on the host. */
static void muon_param_f64(struct optim *o, size_t pi, const struct optim_sched *s)
{
	struct param *p = &o->t->p[pi];
	struct pstate *st = &o->st[pi];
	size_t m = p->rows, n = p->cols, N = p->numel;
	enum round_mode r = RND_F64;
	double *w = scratch(o, 0, N * sizeof *w), *G = scratch(o, 1, N * sizeof *G);
	load_vals(o, p, w, G);
	double mu = s->momentum, w1 = 1 - mu;
	double *g0 = NULL;
	if (o->c.zeta || (o->c.malt && o->c.malt_input == MALT_INPUT_GRAD)) {
		/* Zeta's V and MALT's statistics (malt_input = grad) take the raw gradient */
		g0 = xmalloc(N * sizeof *g0);
		memcpy(g0, G, N * sizeof *g0);
	}
	for (size_t i = 0; i < N; i++)
		G[i] = nesterov_elem(&((double *)st->buf)[i], G[i], w1, mu, 1);
	double *pq = NULL;
	if (o->c.zeta)
		zeta_f64((double *)st->zv, g0, G, N, s->step);
	if (o->c.malt) {
		pq = xmalloc((m + n) * sizeof *pq);
		malt_pre(o, st, g0 ? g0 : G, G, m, n, RND_F64, pq);
	}
	free(g0);
	if (o->c.muon2f)
		muon2f_pre(st->m2f, G, m, n, RND_F64);
	if (o->c.normpre_g)
		normpre_pre(w, G, m, n, s->step, o->c.normpre_tangent, RND_F64);
	if (equilibrated(o, m, n)) {
		double *work = xmalloc((m + n) * sizeof *work);
		equilibrate(o, G, m, n, s->step, work);   /* fp64 runs: the host twin */
		free(work);
	}
	polar_express_f64_opts(G, m, n, (int)o->c.polar_norm, o->c.polar_steps);
	if (pq) {
		malt_post(G, m, n, pq, RND_F64);
		free(pq);
	}
	int per_row = m >= n;
	size_t ns = st->smb_n;
	double *vm = xcalloc(ns, sizeof *vm), *ssz = xmalloc(ns * sizeof *ssz);
	if (o->c.normuon) {
		for (size_t i = 0; i < m; i++)
			for (size_t j = 0; j < n; j++)
				vm[per_row ? i : j] += G[i * n + j] * G[i * n + j];
		normuon_scales(o, st, vm, ssz, per_row ? n : m, r, r);
	} else {
		for (size_t k = 0; k < ns; k++)
			ssz[k] = 1.0;
	}
	double lr, lrwd;
	muon_lr(o, p, s, r, r, &lr, &lrwd);
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			w[i * n + j] = muon_update_elem(w[i * n + j], G[i * n + j],
							ssz[per_row ? i : j], lr, lrwd, r, r);
	free(ssz);
	free(vm);
	store_vals(o, p, w);
}

/* ---- OE tables: moment-free table-RMS update ---- */

/* Visited row i's normalised gradient g_i / count_i, rounded, into G (cols
 * entries); the row is looked up once (dense, bf16, or its compact slot). */
static void oe_row(const struct optim *o, const struct param *p, size_t i, enum round_mode r,
		   double *G)
{
	double c = p->counts[i];
	if (o->fp64) {
		const double *g = param_grad_row64(p, i);
		for (size_t j = 0; j < p->cols; j++)
			G[j] = oe_g_elem(g ? g[j] : 0.0, c, r);
	} else if (p->gb) {
		const bf16 *g = p->gb + i * p->cols;
		for (size_t j = 0; j < p->cols; j++)
			G[j] = oe_g_elem(bf16_to_f32(g[j]), c, r);
	} else {
		const float *g = param_grad_row(p, i);
		for (size_t j = 0; j < p->cols; j++)
			G[j] = oe_g_elem(g ? (double)g[j] : 0.0, c, r);
	}
}

/* R = max(sqrt(ss / n), 1e-30), rounded as the tensors are. */
static double oe_rms(double ss, size_t n, enum round_mode r)
{
	double rms = rnd(sqrt(ss / (double)n), r);
	return rms < 1e-30 ? 1e-30 : rms;
}

/* Row i -= eta * G / rms (the table rounded to bf16 in fp32 runs). */
static void oe_step_row(struct optim *o, struct param *p, size_t i, const double *G, double eta,
			double rms, enum round_mode r)
{
	for (size_t j = 0; j < p->cols; j++) {
		size_t at = i * p->cols + j;
		double step = oe_step_elem(G[j], eta, rms, r);
		if (o->fp64)
			p->w64[at] -= step;
		else
			param_w_set(p, at, (float)rnd(param_w_at(p, at) - step, RND_BF16));
	}
}

/* The visited rows' normalised gradient G (row i: g_i / count_i) is scaled
 * to unit RMS and stepped: w_i -= eta * G_i / rms(G); the sum of squares
 * adds each row's sum (in column order) in row order. Without
 * Table-Neumann G is read twice from the gradient, a row at a time (sum of
 * squares, then the update), so the update needs one row of memory; the
 * bf16 tables of fp32 runs do both passes on the device (o->dev). With
 * Table-Neumann G is gathered (visited rows x cols, fp64) for the
 * whitening, on the host. */
static void oe_param(struct optim *o, size_t pi, const struct optim_sched *s)
{
	struct param *p = &o->t->p[pi];
	size_t R = p->rows, C = p->cols, nv = 0;
	enum round_mode r = o->fp64 ? RND_F64 : RND_F32;
	for (size_t i = 0; i < R; i++)
		nv += p->counts[i] > 0;
	if (nv) {
		double eta = rnd(group_lr(o, PG_OE) * s->lr_mult, r), ss = 0;
		if (o->c.table_neumann) {
			size_t *rows = xmalloc(nv * sizeof *rows);
			double *gb = xmalloc(nv * C * sizeof *gb);
			size_t k = 0;
			for (size_t i = 0; i < R; i++)
				if (p->counts[i]) {
					rows[k] = i;
					oe_row(o, p, i, r, gb + k++ * C);
				}
			neumann_dev(o, gb, nv, C, homotopy_alpha(s->step, o->c.neumann_tau));
			for (k = 0; k < nv; k++) {
				double rs = 0;
				for (size_t j = 0; j < C; j++) {
					double *x = &gb[k * C + j];
					*x = rnd(*x, r);
					rs += *x * *x;
				}
				ss += rs;
			}
			double rms = oe_rms(ss, nv * C, r);
			for (k = 0; k < nv; k++)
				oe_step_row(o, p, rows[k], gb + k * C, eta, rms, r);
			free(rows);
			free(gb);
		} else if (!o->fp64 && p->wb && p->gb) {
			double *rs = dscratch(o, 1, R * sizeof *rs);
			o->dev->oe_sumsq(rs, p->gb, p->counts, R, C);
			for (size_t i = 0; i < R; i++)
				ss += rs[i];
			o->dev->oe_step(p->wb, p->gb, p->counts, R, C, eta, oe_rms(ss, nv * C, r));
		} else {
			double *G = scratch(o, 0, C * sizeof *G);
			for (size_t i = 0; i < R; i++)
				if (p->counts[i]) {
					double rs = 0;
					oe_row(o, p, i, r, G);
					for (size_t j = 0; j < C; j++)
						rs += G[j] * G[j];
					ss += rs;
				}
			double rms = oe_rms(ss, nv * C, r);
			for (size_t i = 0; i < R; i++)
				if (p->counts[i]) {
					oe_row(o, p, i, r, G);
					oe_step_row(o, p, i, G, eta, rms, r);
				}
		}
	}
	memset(p->counts, 0, R * sizeof *p->counts);
}

int optim_step_sched(struct optim *o, const struct optim_sched *s, struct err *e)
{
	(void)e;
	for (size_t i = 0; i < o->t->n; i++) {
		struct param *p = &o->t->p[i];
		struct pstate *st = &o->st[i];
		/* block matrices with matrix_optim = adamw: the AdamW branch (default) */
		enum param_group g = p->group == PG_MATRIX && !muon_param(o, p) ? PG_NGROUPS : p->group;
		switch (g) {
		case PG_MATRIX:
			if (o->fp64) {
				muon_param_f64(o, i, s);
			} else if (o->grp_first[i]) {   /* the whole shape group */
				size_t g = o->grp_of[i];
				muon_group_f32(o, o->grp_idx + o->grp_at[g], o->grp_at[g + 1] - o->grp_at[g], s);
			}
			break;
		case PG_OE:
			oe_param(o, i, s);
			break;
		default: {
			int s0 = s->step == 0 && step0_target(o, p);
			enum cfg_step0 mode = o->c.step0;
			if (s0 && (mode == STEP0_NOSTEP0 || mode == STEP0_NOSTEP0_ALL))
				break;
			double *keep = NULL;
			if (s0 && mode == STEP0_MOM_ONLY_NODISP) {
				keep = xmalloc(p->numel * sizeof *keep);
				load_vals(o, p, keep, NULL);
			}
			adamw_param(o, i, s);
			if (keep) {
				store_vals(o, p, keep);
				free(keep);
			}
			if (s0 && (mode == STEP0_DISP_ONLY_NOMOM || mode == STEP0_DISP_STEPCOUNT_NOMOM)) {
				memset(st->m, 0, p->numel * st_es(o));
				memset(st->v, 0, p->numel * st_es(o));
				if (mode == STEP0_DISP_ONLY_NOMOM)
					st->step = 0;
			}
			break;
		}
		}
	}
	return 0;
}

int optim_step(struct optim *o, int step, struct err *e)
{
	struct optim_sched s;
	optim_schedule(&o->c, step, &s);
	return optim_step_sched(o, &s, e);
}

/* ---- state I/O ---- */

enum { REC_F64 = 0, REC_I64 = 1 };

struct obuf {
	unsigned char *d;
	size_t n, cap;
};

static void ob_put(struct obuf *b, const void *src, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->d = xrealloc(b->d, b->cap);
	}
	memcpy(b->d + b->n, src, n);
	b->n += n;
}

static void ob_u64(struct obuf *b, uint64_t v)
{
	unsigned char x[8];
	for (int i = 0; i < 8; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	ob_put(b, x, 8);
}

static void ob_u32(struct obuf *b, uint32_t v)
{
	unsigned char x[4];
	for (int i = 0; i < 4; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	ob_put(b, x, 4);
}

static void ob_rec(struct obuf *b, const char *pname, const char *suffix, uint32_t kind,
		   const double *f, size_t n, int64_t iv)
{
	char name[PARAM_NAME_MAX + 32];
	snprintf(name, sizeof name, "%s.%s", pname, suffix);
	ob_u32(b, (uint32_t)strlen(name));
	ob_put(b, name, strlen(name));
	ob_u32(b, kind);
	ob_u64(b, kind == REC_F64 ? n : 1);
	if (kind == REC_I64) {
		ob_u64(b, (uint64_t)iv);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t u;
		memcpy(&u, &f[i], 8);
		ob_u64(b, u);
	}
}

/* Whether p's value is kept in the state file: values a checkpoint cannot
 * hold exactly (fp32 master weights of bf16-stored tensors with embed_state
 * = fp32; every value of an fp64 run). */
static int has_master(const struct optim *o, const struct param *p)
{
	return o->fp64 || (p->store == PARAM_BF16 && p->group != PG_OE &&
			   o->c.embed_state == EMBED_STATE_FP32);
}

/* A state array as an f64 record (the file format holds doubles). */
static void ob_state(struct obuf *b, const struct optim *o, const char *pname, const char *suffix,
		     const void *a, size_t n)
{
	double *d = xmalloc((n ? n : 1) * sizeof *d);
	for (size_t i = 0; i < n; i++)
		d[i] = st_get(o, a, i);
	ob_rec(b, pname, suffix, REC_F64, d, n, 0);
	free(d);
}

unsigned char *optim_state_bytes(const struct optim *o, size_t *len)
{
	struct obuf b = {0};
	uint64_t nrec = 0;
	for (size_t i = 0; i < o->t->n; i++) {
		if (o->st[i].m)
			nrec += 3;
		if (o->st[i].buf)
			nrec += 2;
		nrec += o->st[i].zv != NULL;
		nrec += o->st[i].ml ? 2 : 0;
		nrec += o->st[i].m2f != NULL;
		nrec += has_master(o, &o->t->p[i]);
	}
	ob_put(&b, "SUPKOPT1", 8);
	ob_u64(&b, nrec);
	for (size_t i = 0; i < o->t->n; i++) {
		const struct param *p = &o->t->p[i];
		const struct pstate *st = &o->st[i];
		if (st->m) {
			ob_state(&b, o, p->name, "exp_avg", st->m, p->numel);
			ob_state(&b, o, p->name, "exp_avg_sq", st->v, p->numel);
			ob_rec(&b, p->name, "step", REC_I64, NULL, 0, st->step);
		}
		if (st->buf) {
			ob_state(&b, o, p->name, "momentum_buffer", st->buf, p->numel);
			ob_rec(&b, p->name, "second_momentum_buffer", REC_F64, st->smb, st->smb_n, 0);
		}
		if (st->zv)
			ob_state(&b, o, p->name, "zeta_second_moment", st->zv, p->numel);
		if (st->ml) {
			ob_rec(&b, p->name, "malt_row_ema", REC_F64, st->ml, p->rows, 0);
			ob_rec(&b, p->name, "malt_col_ema", REC_F64, st->mr, p->cols, 0);
		}
		if (st->m2f)
			ob_rec(&b, p->name, "muon2f_second_moment", REC_F64, st->m2f, st->smb_n, 0);
		if (has_master(o, p)) {
			double *w = xmalloc(p->numel * sizeof *w);
			load_vals(o, p, w, NULL);
			ob_rec(&b, p->name, "master", REC_F64, w, p->numel, 0);
			free(w);
		}
	}
	*len = b.n;
	return b.d;
}

int optim_save(const struct optim *o, const char *path, struct err *e)
{
	size_t n;
	unsigned char *d = optim_state_bytes(o, &n);
	int rc = file_write_atomic(path, d, n, e);
	free(d);
	return rc;
}

static uint64_t rd_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t rd_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Find the state array a record name refers to; 0 or -1. */
static int rec_target(struct optim *o, const char *name, size_t *pi, int *which)
{
	static const char *suf[] = {"exp_avg", "exp_avg_sq", "step", "momentum_buffer",
				    "second_momentum_buffer", "master", "zeta_second_moment",
				    "malt_row_ema", "malt_col_ema", "muon2f_second_moment"};
	const char *dot = strrchr(name, '.');
	if (!dot)
		return -1;
	for (int k = 0; k < 10; k++) {
		if (strcmp(dot + 1, suf[k]))
			continue;
		for (size_t i = 0; i < o->t->n; i++) {
			const char *pn = o->t->p[i].name;
			if (strlen(pn) == (size_t)(dot - name) && !strncmp(pn, name, (size_t)(dot - name))) {
				*pi = i;
				*which = k;
				return 0;
			}
		}
	}
	return -1;
}

int optim_load(struct optim *o, const char *path, struct err *e)
{
	size_t limit = 64;
	for (size_t i = 0; i < o->t->n; i++)
		limit += 4 * (o->t->p[i].numel * 8 + 200) + o->st[i].smb_n * 8;
	char *data;
	size_t len;
	if (file_read_all(path, limit, &data, &len, e))
		return -1;
	int rc = optim_load_mem(o, data, len, path, e);
	free(data);
	return rc;
}

int optim_load_mem(struct optim *o, const void *data, size_t len, const char *path, struct err *e)
{
	const unsigned char *d = data;
	size_t at = 16;
	int rc = -1;
	uint16_t *seen = NULL;
	if (len < 16 || memcmp(d, "SUPKOPT1", 8)) {
		err_set(e, EXIT_USAGE, "'%s': not an optimizer state file", path);
		goto out;
	}
	uint64_t nrec = rd_u64(d + 8);
	/* fresh state: AdamW state only where the file has it */
	for (size_t i = 0; i < o->t->n; i++) {
		if (o->st[i].m)
			o->dev->free(o->st[i].m);
		if (o->st[i].v)
			o->dev->free(o->st[i].v);
		o->st[i].m = o->st[i].v = NULL;
		o->st[i].step = 0;
	}
	seen = xcalloc(o->t->n ? o->t->n : 1, sizeof *seen);   /* bit k: record kind k read */
	for (uint64_t r = 0; r < nrec; r++) {
		if (len - at < 4)
			goto trunc;
		uint32_t nl = rd_u32(d + at);
		at += 4;
		if (nl >= PARAM_NAME_MAX + 32 || len - at < (size_t)nl + 12)
			goto trunc;
		char name[PARAM_NAME_MAX + 32];
		memcpy(name, d + at, nl);
		name[nl] = 0;
		at += nl;
		uint32_t kind = rd_u32(d + at);
		uint64_t cnt = rd_u64(d + at + 4);
		at += 12;
		size_t pi;
		int which;
		if (rec_target(o, name, &pi, &which)) {
			err_set(e, EXIT_USAGE, "'%s': record %llu '%s': no such optimizer state",
				path, (unsigned long long)r, name);
			goto out;
		}
		struct param *p = &o->t->p[pi];
		struct pstate *st = &o->st[pi];
		int is_muon = which == 3 || which == 4;
		size_t want = which == 4 || which == 9 ? st->smb_n : which == 2 ? 1 : which == 7 ? p->rows
			    : which == 8 ? p->cols : p->numel;
		int fits = which == 5 ? has_master(o, p)
			 : which == 6 ? st->zv != NULL
			 : which == 9 ? st->m2f != NULL
			 : which >= 7 ? st->ml != NULL
			 : (is_muon == muon_param(o, p)) && p->group != PG_OE;
		if ((which == 6 && !st->zv) || ((which == 7 || which == 8) && !st->ml) || (which == 9 && !st->m2f)) {
			err_set(e, EXIT_USAGE, "'%s': record %llu '%s': %s state, but the run has %s",
				path, (unsigned long long)r, name, which == 6 ? "Zeta" : which == 9 ? "Muon2-F" : "MALT",
				p->group != PG_MATRIX ? "no such state for it" : which == 6 ? "zeta = 0"
				: which == 9 ? "muon2f = 0" : o->c.malt ? "malt_beta = 0" : "malt = 0");
			goto out;
		}
		if (p->group == PG_MATRIX && which <= 4 && is_muon != muon_param(o, p)) {
			err_set(e, EXIT_USAGE, "'%s': record %llu '%s': %s state, but the run steps the "
				"block matrices with %s (matrix_optim = %s)", path, (unsigned long long)r,
				name, is_muon ? "Muon" : "AdamW", is_muon ? "AdamW" : "Muon",
				is_muon ? "adamw" : "muon");
			goto out;
		}
		if (!fits || kind != (which == 2 ? REC_I64 : REC_F64) || cnt != want) {
			err_set(e, EXIT_USAGE, "'%s': record %llu '%s': kind or size does not match the model",
				path, (unsigned long long)r, name);
			goto out;
		}
		if (seen[pi] & (1u << which)) {
			err_set(e, EXIT_USAGE, "'%s': record %llu '%s': duplicate record",
				path, (unsigned long long)r, name);
			goto out;
		}
		seen[pi] |= (uint16_t)(1u << which);
		if (len - at < cnt * 8)
			goto trunc;
		/* values: finite; second moments >= 0; the AdamW counter >= 0;
		 * what the state holds exactly (fp32 runs: fp32 values, bf16
		 * moments bf16 values; the NorMuon buffer is fp64 always), so
		 * that it is the state a run saved; masked entries 0 */
		int bf16_m = (which == 0 || which == 1) && !o->fp64 && p->store == PARAM_BF16 &&
			     o->c.embed_state == EMBED_STATE_BF16;
		int f32 = !o->fp64 && which != 4;
		for (size_t i = 0; which != 2 && i < want; i++) {
			uint64_t u = rd_u64(d + at + 8 * i);
			double x;
			memcpy(&x, &u, 8);
			int nonneg = which == 1 || which == 4 || which >= 6;
			if (!isfinite(x) || (nonneg && x < 0)) {
				err_set(e, EXIT_USAGE, "'%s': record %llu '%s': entry %zu is %g, not a finite number%s",
					path, (unsigned long long)r, name, i, x, nonneg ? " >= 0" : "");
				goto out;
			}
			if ((f32 && (double)(float)x != x) || (bf16_m && (double)bf16_round((float)x) != x)) {
				err_set(e, EXIT_USAGE, "'%s': record %llu '%s': entry %zu is %.17g, not a value the run's %s "
					"state holds", path, (unsigned long long)r, name, i, x, bf16_m ? "bf16" : "fp32");
				goto out;
			}
			if (p->mask && p->mask[i] && x != 0 && which != 4 && which < 7) {
				err_set(e, EXIT_USAGE, "'%s': record %llu '%s': entry %zu is %g, but it is masked (held at 0)",
					path, (unsigned long long)r, name, i, x);
				goto out;
			}
		}
		if (which == 2 && (int64_t)rd_u64(d + at) < 0) {
			err_set(e, EXIT_USAGE, "'%s': record %llu '%s': %lld is negative", path, (unsigned long long)r,
				name, (long long)(int64_t)rd_u64(d + at));
			goto out;
		}
		if (which == 2) {
			st->step = (int64_t)rd_u64(d + at);
		} else if (which == 5) {
			for (size_t i = 0; i < want; i++) {
				uint64_t u = rd_u64(d + at + 8 * i);
				double v;
				memcpy(&v, &u, 8);
				if (o->fp64)
					p->w64[i] = v;
				else
					p->w[i] = (float)v;
			}
		} else {
			if (which == 4 && !st->smb)
				st->smb = st_alloc(o, want, sizeof(double));
			double *dv = which == 4 ? st->smb : which == 7 ? st->ml : which == 8 ? st->mr
				   : which == 9 ? st->m2f : NULL;
			void **dst = which == 0 ? &st->m : which == 1 ? &st->v : which == 6 ? &st->zv : &st->buf;
			if (which != 4 && !*dst)
				*dst = st_alloc(o, want, st_es(o));
			for (size_t i = 0; i < want; i++) {
				uint64_t u = rd_u64(d + at + 8 * i);
				double x;
				memcpy(&x, &u, 8);
				if (dv)
					dv[i] = x;
				else
					st_set(o, *dst, i, x);
			}
		}
		at += cnt * 8;
	}
	for (size_t i = 0; i < o->t->n; i++) {
		const struct param *p = &o->t->p[i];
		unsigned k = seen[i], adam = k & 7u;
		const char *miss = NULL;
		if (adam != 0 && adam != 7u)
			miss = "exp_avg, exp_avg_sq and step";
		else if (muon_param(o, p) && (k & 24u) != 24u)
			miss = "momentum_buffer and second_momentum_buffer";
		else if (has_master(o, p) && !(k & 32u))
			miss = "master";
		else if (o->st[i].zv && !(k & 64u))
			miss = "zeta_second_moment";
		else if (o->st[i].ml && (k & 384u) != 384u)
			miss = "malt_row_ema and malt_col_ema";
		else if (o->st[i].m2f && !(k & 512u))
			miss = "muon2f_second_moment";
		if (miss) {
			err_set(e, EXIT_USAGE, "'%s': '%s': the state needs %s", path, p->name, miss);
			goto out;
		}
	}
	if (at != len) {
		err_set(e, EXIT_USAGE, "'%s': trailing bytes after %llu records", path,
			(unsigned long long)nrec);
		goto out;
	}
	rc = 0;
	goto out;
trunc:
	err_set(e, EXIT_USAGE, "'%s': truncated at byte %zu", path, at);
out:
	free(seen);
	return rc;
}
