/* test_perf.c: the performance changes of the CPU trainer keep its
 * arithmetic (bench/bench_train.sh, bench_memory.sh).
 *
 * - OE tables cost what the benchmark's do (trainer/param.h): after
 *   model_zero_grad every gradient entry reads 0, a repeated micro-step
 *   gives bit-identical gradients to the first, for fp32 (bf16 value and
 *   gradient) and fp64 (compact gradient: slots reused in a new order); the
 *   model's bytes grow by exactly 4 B a table parameter in fp32 runs (the
 *   figure of supkit-audit(1)), by the values plus the visited rows in fp64 runs.
 * - relu2_bwd in place (dh = dout) equals the out-of-place call bit for bit
 *   (it has its own loop so that it vectorises), also on odd lengths, zeros,
 *   negative zeros, infinities and NaN pre-activations.
 * - softcap_ce split over 1, 2 and 3 threads gives the same losses,
 *   gradients and valid count, bit for bit (rows with ignored targets too).
 * - Training steps are deterministic in one process: two models trained side
 *   by side with their own optimizers (whose work arrays are reused between
 *   parameters of different sizes) end bit-identical; the second runs Polar
 *   Express through optim_set_polar's hook, which sees every Muon matrix
 *   (a call a shape group, its matrices as one batch),
 *   and from its second step its state and element-wise passes through
 *   optim_set_device's (the CUDA backend's way onto the GPU).
 * Correctness against PyTorch stays with test_model.c and test_optim.c.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "lib/rng.h"
#include "trainer/backend.h"
#include "trainer/model.h"
#include "trainer/optim.h"
#include "trainer_fixture.h"


static void batch_fill(int32_t *in, int32_t *tg, size_t n, int V, uint64_t seed)
{
	struct rng r;
	rng_seed(&r, seed);
	for (size_t i = 0; i < n; i++) {
		in[i] = (int32_t)rng_below(&r, (uint64_t)V);
		tg[i] = (int32_t)rng_below(&r, (uint64_t)V);
	}
}

/* Every gradient in fp32 and, in fp64 runs, fp64 form (dense view of the
 * compact OE gradients), concatenated as bytes. */
static unsigned char *grads_copy(struct model *m, size_t *len)
{
	struct param_table *t = model_params(m);
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++)
		n += t->p[i].numel * (sizeof(float) + (t->p[i].w64 ? sizeof(double) : 0));
	unsigned char *b = malloc(n), *c = b;
	for (size_t i = 0; i < t->n; i++) {
		const struct param *p = &t->p[i];
		int fp64 = p->w64 != NULL;
		for (size_t j = 0; j < p->numel; j++) {
			float f = fp64 && !p->g ? 0.0f : (float)param_grad_at(p, j, 0);
			memcpy(c, &f, sizeof f);
			c += sizeof f;
			if (fp64) {
				double d = param_grad_at(p, j, 1);
				memcpy(c, &d, sizeof d);
				c += sizeof d;
			}
		}
	}
	*len = n;
	return b;
}

static void oe_zero_and_repeat(const char *dtype)
{
	char dt[32];
	snprintf(dt, sizeof dt, "dtype=%s", dtype);
	/* tables of 40000+ rows x 16: 2.5 MB of fp32 gradient each */
	const char *kv[] = { "depth=2", "model_dim=64", "head_dim=32", "vocab_size=97", "seq_len=32",
			     "oe=1", "oe_m=40000", "init=dense", dt, NULL };
	struct model *m = model_make(kv);
	CHECK(m != NULL);
	if (!m)
		return;
	enum { B = 3, T = 32 };
	int32_t in[B * T], tg[B * T], in2[B * T], tg2[B * T];
	batch_fill(in, tg, B * T, 97, 1);
	batch_fill(in2, tg2, B * T, 97, 2);
	struct err e = {0};
	double loss;
	model_zero_grad(m);
	CHECK(model_forward_backward(m, in, tg, B, T, 1.0, &loss, &e) == 0);
	size_t n1, n2;
	unsigned char *g1 = grads_copy(m, &n1);
	model_zero_grad(m);
	struct param_table *t = model_params(m);
	size_t nonzero = 0, oe = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct param *p = &t->p[i];
		for (size_t j = 0; j < p->numel; j++)
			nonzero += param_grad_at(p, j, 0) != 0 || (p->w64 && param_grad_at(p, j, 1) != 0);
		if (p->counts) {
			oe++;
			for (size_t j = 0; j < p->rows; j++)
				nonzero += p->counts[j] != 0;
		}
	}
	CHECK(oe == 4);
	CHECKF(nonzero == 0, "%zu gradient entries or counts not zero after model_zero_grad", nonzero);
	/* another batch, zero, the first batch again: the same gradients */
	CHECK(model_forward_backward(m, in2, tg2, B, T, 1.0, &loss, &e) == 0);
	model_zero_grad(m);
	CHECK(model_forward_backward(m, in, tg, B, T, 1.0, &loss, &e) == 0);
	unsigned char *g2 = grads_copy(m, &n2);
	CHECK(n1 == n2 && memcmp(g1, g2, n1) == 0);
	/* some OE gradient is non-zero (the test does cover the tables) */
	size_t visited = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->p[i].counts)
			for (size_t j = 0; j < t->p[i].numel; j++)
				visited += param_grad_at(&t->p[i], j, t->p[i].w64 != NULL) != 0;
	CHECK(visited > 0);
	/* memory: the OE model over the same model without tables holds, in
	 * fp32 runs, a bf16 value and gradient (4 B a parameter, 16-byte
	 * aligned per table) and the batch's row indices; in fp64 runs the
	 * values (es a parameter) plus at most B*T visited rows per table, their
	 * slots and the indices (a dense gradient would double the values'
	 * share). Counts and slot maps are host arrays outside the figure. */
	const char *kv0[] = { "depth=2", "model_dim=64", "head_dim=32", "vocab_size=97", "seq_len=32",
			      "init=dense", dt, NULL };
	struct model *m0 = model_make(kv0);
	CHECK(m0 != NULL);
	if (m0) {
		CHECK(model_forward_backward(m0, in, tg, B, T, 1.0, &loss, &e) == 0);
		size_t es = strcmp(dtype, "fp64") ? sizeof(float) : sizeof(float) + sizeof(double);
		size_t vals = 0, rows = 0, cols = 0;
		for (size_t i = 0; i < t->n; i++)
			if (t->p[i].counts) {
				vals += t->p[i].numel;
				rows += t->p[i].rows;
				cols = t->p[i].cols;
			}
		size_t delta = model_peak_bytes(m) - model_peak_bytes(m0), lo, hi;
		if (strcmp(dtype, "fp64")) {
			lo = vals * 4 + 4 * (size_t)(B * T) * 4;
			hi = lo + 4 * 15;
		} else {
			lo = vals * es;
			hi = lo + 4 * (size_t)(B * T) * (cols * sizeof(double) + 4 + 8) + 4 * 15;
		}
		(void)rows;
		CHECKF(delta >= lo && delta <= hi, "OE bytes %zu, expected %zu..%zu (%zu parameters)",
		       delta, lo, hi, vals);
		model_free(m0);
	}
	free(g1);
	free(g2);
	model_free(m);
}

TEST(oe_grad_release_f32) { oe_zero_and_repeat("fp32"); }
TEST(oe_grad_release_f64) { oe_zero_and_repeat("fp64"); }

static void relu2_inplace(enum tdtype d)
{
	const struct backend_ops *bk = backend_cpu();
	size_t es = tdtype_size(d);
	enum { N = 1037 };
	void *h = malloc(N * es), *dout = malloc(N * es), *dh = malloc(N * es);
	struct rng r;
	rng_seed(&r, 5);
	for (size_t i = 0; i < N; i++) {
		double hv = rng_normal(&r), dv = rng_normal(&r);
		if (i % 97 == 0)
			hv = 0;
		if (i % 89 == 0)
			hv = -0.0;
		if (i == 5)
			hv = INFINITY;
		if (i == 6)
			hv = -INFINITY;
		if (i == 7)
			hv = NAN;
		if (d == TD_F32) {
			((float *)h)[i] = (float)hv;
			((float *)dout)[i] = (float)dv;
		} else {
			((double *)h)[i] = hv;
			((double *)dout)[i] = dv;
		}
	}
	struct tensor th = tensor_1d(h, d, N), tdo = tensor_1d(dout, d, N), tdh = tensor_1d(dh, d, N);
	bk->relu2_bwd(&tdh, &tdo, &th);          /* out of place */
	bk->relu2_bwd(&tdo, &tdo, &th);          /* in place */
	CHECK(memcmp(dh, dout, N * es) == 0);
	free(h);
	free(dout);
	free(dh);
}

TEST(relu2_bwd_inplace_f32) { relu2_inplace(TD_F32); }
TEST(relu2_bwd_inplace_f64) { relu2_inplace(TD_F64); }

static void softcap_threads(enum tdtype d)
{
	const struct backend_ops *bk = backend_cpu();
	size_t es = tdtype_size(d);
	enum { R = 203, V = 131 };
	int32_t tg[R];
	void *src = malloc((size_t)R * V * es), *lg = malloc((size_t)R * V * es);
	void *ls[3], *out[3];
	int64_t valid[3];
	struct rng r;
	rng_seed(&r, 9);
	for (size_t i = 0; i < (size_t)R * V; i++) {
		double v = 20 * rng_normal(&r);
		if (d == TD_F32)
			((float *)src)[i] = (float)v;
		else
			((double *)src)[i] = v;
	}
	for (int i = 0; i < R; i++)
		tg[i] = i % 7 == 3 ? -1 : (int32_t)rng_below(&r, V);
	for (int k = 0; k < 3; k++) {
		backend_cpu_set_threads(k + 1);
		memcpy(lg, src, (size_t)R * V * es);
		ls[k] = malloc(R * es);
		struct tensor tl = tensor_2d(lg, d, R, V), tls = tensor_1d(ls[k], d, R);
		bk->softcap_ce(&tl, &tls, tg, 15.0, 0.5, &valid[k]);
		out[k] = malloc((size_t)R * V * es);
		memcpy(out[k], lg, (size_t)R * V * es);
	}
	backend_cpu_set_threads(1);
	CHECK(valid[0] == R - (R + 3) / 7);
	for (int k = 1; k < 3; k++) {
		CHECK(valid[k] == valid[0]);
		CHECK(memcmp(ls[k], ls[0], R * es) == 0);
		CHECK(memcmp(out[k], out[0], (size_t)R * V * es) == 0);
	}
	for (int k = 0; k < 3; k++) {
		free(ls[k]);
		free(out[k]);
	}
	free(src);
	free(lg);
}

TEST(softcap_threads_f32) { softcap_threads(TD_F32); }
TEST(softcap_threads_f64) { softcap_threads(TD_F64); }

/* A Polar Express hook (optim_set_polar, as the CUDA backend installs its
 * twin) that records the shapes it is given and runs the host's on each. */
static size_t hook_calls, hook_elems, hook_mats;
static void polar_hook(float *X, size_t batch, size_t m, size_t n, int mode)
{
	hook_calls++;
	hook_mats += batch;
	hook_elems += batch * m * n;
	for (size_t b = 0; b < batch; b++)
		polar_express_f32(X + b * m * n, m, n, mode);
}

/* An optimizer device (optim_set_device, as the CUDA backend installs its
 * kernels) that counts its calls and allocations and runs the host twin. */
static size_t dev_live, dev_calls[16], dev_elems[16];
static void *wrap_alloc(size_t n)
{
	dev_live++;
	return optim_device_host()->alloc(n);
}
static void wrap_free(void *p)
{
	dev_live--;
	optim_device_host()->free(p);
}
static void wrap_nesterov(float *x, float *buf, const float *g, size_t n, double w1, double mu)
{
	dev_calls[0]++, dev_elems[0] += n;
	optim_device_host()->nesterov(x, buf, g, n, w1, mu);
}
static void wrap_sumsq(double *ss, const float *x, size_t m, size_t n, int per_row)
{
	dev_calls[1]++, dev_elems[1] += m * n;
	optim_device_host()->sumsq(ss, x, m, n, per_row);
}
static void wrap_muon_update(float *w, const float *x, const double *s, size_t m, size_t n,
			     int per_row, double lr, double lrwd, int bf16)
{
	dev_calls[2]++, dev_elems[2] += m * n;
	optim_device_host()->muon_update(w, x, s, m, n, per_row, lr, lrwd, bf16);
}
static void wrap_adamw(float *w, const float *g, float *m, float *v, size_t n, double w1,
		       double w2, double bias2, double eps, double step_size, int bf16_state,
		       int round_g, double *U)
{
	dev_calls[3]++, dev_elems[3] += n;
	optim_device_host()->adamw(w, g, m, v, n, w1, w2, bias2, eps, step_size, bf16_state,
				   round_g, U);
}
static void wrap_step_w(float *w, const double *U, size_t n, double step_size, int bf16)
{
	dev_calls[15]++, dev_elems[15] += n;
	optim_device_host()->step_w(w, U, n, step_size, bf16);
}
static void wrap_oe_sumsq(double *rs, const bf16 *g, const uint32_t *counts, size_t rows,
			  size_t cols)
{
	dev_calls[4]++, dev_elems[4] += rows * cols;
	optim_device_host()->oe_sumsq(rs, g, counts, rows, cols);
}
static void wrap_oe_step(bf16 *w, const bf16 *g, const uint32_t *counts, size_t rows,
			 size_t cols, double eta, double rms)
{
	dev_calls[5]++, dev_elems[5] += rows * cols;
	optim_device_host()->oe_step(w, g, counts, rows, cols, eta, rms);
}
static void wrap_sumsq64(double *ss, const double *G, size_t m, size_t n, int per_row)
{
	dev_calls[6]++, dev_elems[6] += m * n;
	optim_device_host()->sumsq64(ss, G, m, n, per_row);
}
static void wrap_scale64(double *G, const double *rs, const double *cs, size_t m, size_t n)
{
	dev_calls[7]++, dev_elems[7] += m * n;
	optim_device_host()->scale64(G, rs, cs, m, n);
}
static void wrap_widen(double *G, const float *x, size_t n, int bf16)
{
	dev_calls[8]++, dev_elems[8] += n;
	optim_device_host()->widen(G, x, n, bf16);
}
static void wrap_narrow(float *x, const double *G, size_t n)
{
	dev_calls[9]++, dev_elems[9] += n;
	optim_device_host()->narrow(x, G, n);
}
static void wrap_colsum64(double *s, const double *U, size_t V, size_t d)
{
	dev_calls[10]++, dev_elems[10] += V * d;
	optim_device_host()->colsum64(s, U, V, d);
}
static void wrap_ng_project(double *U, double *proj, double *rs, const double *mu, size_t V,
			    size_t d)
{
	dev_calls[11]++, dev_elems[11] += V * d;
	optim_device_host()->ng_project(U, proj, rs, mu, V, d);
}
static void wrap_gram64(double *H, const double *U, size_t V, size_t d)
{
	dev_calls[12]++, dev_elems[12] += V * d;
	optim_device_host()->gram64(H, U, V, d);
}
static void wrap_ng_whiten(double *W, const double *U, const double *H, double c, size_t V,
			   size_t d)
{
	dev_calls[13]++, dev_elems[13] += V * d;
	optim_device_host()->ng_whiten(W, U, H, c, V, d);
}
static void wrap_ng_combine(double *U, const double *proj, const double *mu, const double *W,
			    double c, size_t V, size_t d)
{
	dev_calls[14]++, dev_elems[14] += V * d;
	optim_device_host()->ng_combine(U, proj, mu, W, c, V, d);
}
static const struct optim_device wrap_device = {
	.alloc = wrap_alloc, .free = wrap_free, .nesterov = wrap_nesterov, .sumsq = wrap_sumsq,
	.muon_update = wrap_muon_update, .adamw = wrap_adamw, .step_w = wrap_step_w,
	.oe_sumsq = wrap_oe_sumsq, .oe_step = wrap_oe_step, .sumsq64 = wrap_sumsq64,
	.scale64 = wrap_scale64, .widen = wrap_widen, .narrow = wrap_narrow,
	.colsum64 = wrap_colsum64, .ng_project = wrap_ng_project, .gram64 = wrap_gram64,
	.ng_whiten = wrap_ng_whiten, .ng_combine = wrap_ng_combine,
};

/* Two models trained side by side end bit-identical when the second's
 * optimizer runs Polar Express through optim_set_polar's hook and, from
 * step 1 on (its state moving over), its element-wise passes through
 * optim_set_device's: every Muon matrix (BiEq's passes included), every
 * AdamW parameter (Neumann-Gram's passes for the whitened tables) and
 * every OE table passes through them, and all of the device's memory is
 * handed back. */
TEST(steps_deterministic)
{
	const char *kv[] = { "depth=2", "model_dim=64", "head_dim=32", "vocab_size=97", "seq_len=32",
			     "oe=1", "oe_m=40000", "qk_scale=pair", "neumann=1", "embed_state=fp32",
			     "muoneq=bieq", "bieq_tau=2", "init=dense", NULL };
	struct model *m[2] = { model_make(kv), model_make(kv) };
	CHECK(m[0] && m[1]);
	if (!m[0] || !m[1])
		goto out;
	struct optim *o[2] = { NULL, NULL };
	struct err e = {0};
	for (int k = 0; k < 2; k++)
		CHECK(optim_create(model_config(m[k]), model_params(m[k]), 0, &o[k], &e) == 0);
	/* the second optimizer runs Polar Express through the hook */
	optim_set_polar(o[1], polar_hook);
	hook_calls = hook_elems = hook_mats = 0;
	size_t muon = 0, muon_elems = 0, adam = 0, adam_elems = 0, shapes = 0, oe_elems = 0;
	size_t white = 0, white_elems = 0;
	for (size_t i = 0; i < model_params(m[0])->n; i++) {
		const struct param *p = &model_params(m[0])->p[i];
		if (p->group == PG_MATRIX) {
			int seen = 0;
			for (size_t j = 0; j < i; j++) {
				const struct param *q = &model_params(m[0])->p[j];
				seen |= q->group == PG_MATRIX && q->rows == p->rows && q->cols == p->cols;
			}
			shapes += !seen;
			muon++;
			muon_elems += p->numel;
		} else if (p->group == PG_OE) {
			oe_elems += p->numel;
		} else if ((p->group == PG_LM_HEAD || p->group == PG_EMBED) && p->ndim == 2) {
			white++;
			white_elems += p->numel;
		} else if (
			   !((p->group == PG_LM_HEAD || p->group == PG_EMBED) && p->ndim == 2)) {
			adam++;
			adam_elems += p->numel;
		}
	}
	memset(dev_calls, 0, sizeof dev_calls);
	memset(dev_elems, 0, sizeof dev_elems);
	dev_live = 0;
	enum { B = 2, T = 32 };
	int32_t in[B * T], tg[B * T];
	for (int s = 0; s < 3; s++) {
		batch_fill(in, tg, B * T, 97, 10 + (uint64_t)s);
		if (s == 1)
			optim_set_device(o[1], &wrap_device);
		for (int k = 0; k < 2; k++) {
			double loss;
			model_zero_grad(m[k]);
			CHECK(model_forward_backward(m[k], in, tg, B, T, 1.0, &loss, &e) == 0);
			CHECK(optim_step(o[k], s, &e) == 0);
		}
	}
	struct param_table *a = model_params(m[0]), *b = model_params(m[1]);
	size_t diff = 0;
	for (size_t i = 0; i < a->n; i++)
		diff += !param_values_equal(&a->p[i], &b->p[i]);
	CHECKF(diff == 0, "%zu parameters differ", diff);
	/* one call a shape group (its matrices as a batch) */
	CHECKF(hook_calls == 3 * shapes && hook_mats == 3 * muon && hook_elems == 3 * muon_elems,
	       "hook ran %zu times on %zu matrices, %zu entries; 3 steps of %zu Muon matrices in "
	       "%zu shapes", hook_calls, hook_mats, hook_elems, muon, shapes);
	/* steps 1 and 2 through the device */
	CHECKF(dev_calls[0] == 2 * muon && dev_elems[0] == 2 * muon_elems &&
	       dev_calls[1] == 2 * muon && dev_elems[1] == 2 * muon_elems &&
	       dev_calls[2] == 2 * muon && dev_elems[2] == 2 * muon_elems,
	       "device Muon passes %zu %zu %zu; 2 steps of %zu matrices", dev_calls[0],
	       dev_calls[1], dev_calls[2], muon);
	/* every AdamW parameter, the whitened ones' step after Neumann-Gram */
	CHECKF(adam > 0 && dev_calls[3] == 2 * (adam + white) &&
	       dev_elems[3] == 2 * (adam_elems + white_elems) && dev_calls[15] == 2 * white &&
	       dev_elems[15] == 2 * white_elems,
	       "device AdamW passes %zu on %zu entries, %zu steps of whitened tables; 2 steps of "
	       "%zu + %zu parameters", dev_calls[3], dev_elems[3], dev_calls[15], adam, white);
	CHECKF(dev_calls[4] == 2 * 4 && dev_calls[5] == 2 * 4 && dev_elems[4] == dev_elems[5] &&
	       dev_elems[4] == 2 * oe_elems, "device OE passes %zu, %zu; 2 steps of 4 tables",
	       dev_calls[4], dev_calls[5]);
	/* BiEq: two passes of a row and a column step a matrix (Neumann-Gram
	 * adds two sums a table) */
	CHECKF(dev_calls[6] == 2 * (4 * muon + 2 * white) && dev_calls[7] == 2 * 4 * muon &&
	       dev_elems[7] == 2 * 4 * muon_elems && dev_calls[8] == 2 * muon &&
	       dev_calls[9] == 2 * muon && dev_elems[9] == 2 * muon_elems,
	       "device BiEq passes %zu sums, %zu scalings, %zu widenings; 2 steps of %zu matrices",
	       dev_calls[6], dev_calls[7], dev_calls[8], muon);
	/* Neumann-Gram on wte, lm_head and value_embeds: each pass once a table */
	int ng_ok = white > 0;
	for (int k = 10; k < 15; k++)
		ng_ok &= dev_calls[k] == 2 * white && dev_elems[k] == 2 * white_elems;
	CHECKF(ng_ok, "device Neumann-Gram passes %zu %zu %zu %zu %zu; 2 steps of %zu tables",
	       dev_calls[10], dev_calls[11], dev_calls[12], dev_calls[13], dev_calls[14], white);
	CHECK(dev_live > 0);
	for (int k = 0; k < 2; k++)
		optim_free(o[k]);
	CHECKF(dev_live == 0, "%zu device allocations not freed", dev_live);
out:
	model_free(m[0]);
	model_free(m[1]);
}

int main(void)
{
	RUN(oe_grad_release_f32);
	RUN(oe_grad_release_f64);
	RUN(relu2_bwd_inplace_f32);
	RUN(relu2_bwd_inplace_f64);
	RUN(softcap_threads_f32);
	RUN(softcap_threads_f64);
	RUN(steps_deterministic);
	return t_done();
}
