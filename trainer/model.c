/* model.c: the benchmark GPT (docs/model.md) at any depth, with the
 * model-side arms of supkit-train(1) (OE hashed n-gram tables, post-QK-norm
 * scaling q_tau, decoupled routing with wte_lambdas / out_lambdas,
 * pre-sublayer channel gains sub_gains fused into the weights' input columns
 * or (sub_form) applied to the activation,
 * learned RoPE log-frequencies rope_tau),
 * forward and backward by hand over the backend table (trainer/backend.h).
 *
 * Parameters: the table of paramspec_build, one allocation (w, g, and in
 * fp64 runs w64, g64), pointers carved out in paramspec order; initial
 * values from lib/rng in that order, or a checkpoint (init_from).
 * OE tables (trainer/param.h) cost what the benchmark's do, 4 bytes a
 * parameter: fp32 runs store value and gradient in bf16 (the
 * backend's bf16 scatter-add rounds each pass's row sums, as PyTorch's
 * backward does); fp64 runs keep a compact gradient, a slot (p->slot[row])
 * in a growing array of rows (p->gv64, capacity never over the table's
 * rows) for each row a step visits; model_zero_grad hands the slots back.
 * Activations: everything the backward needs is kept per layer (x entering
 * the layer, the normalised inputs, q, k, v after their norms, attention
 * output and log-sum-exp, the MLP pre-activation); the MLP activation is
 * recomputed (but the last layer's, still in its buffer when the backward
 * starts). Where the backend offers it (backend.h mlp_bf16: the CUDA backend
 * with bf16 GEMMs) the MLP's h, u and their gradients are stored in bf16,
 * as the benchmark's autocast stores them, and so (backend.h attn_bf16: the
 * CUDA backend with bf16 GEMMs and the mma attention) are the attention's
 * q, k, v (q_tau's qn), output y and the gradients dy, dq, dk, dv, and
 * (backend.h norm_bf16: the CUDA backend with bf16 GEMMs) each layer's
 * normalised inputs a and m; elsewhere in the run dtype. The residual
 * stream, x0, the final norm's output hN and the other gradients stay in
 * the run dtype: hN's norm backward must stay orthogonal to xf, since at
 * the benchmark's init (zero output projections) the scalar lambdas' first
 * gradient is what that projection leaves, fp32 rounding residue (~1e-11)
 * that AdamW's eps (1e-10) damps; a bf16 hN leaves ~1e-3, a full AdamW step
 * of arbitrary sign (the PyTorch fixture curve with bf16 GEMMs then misses
 * by 76% at step 1).
 * Logits: with logits = bf16 (fp32 runs) the lm_head's output is rounded
 * to bf16 before the fp32 softcap and the gradient back through that cast
 * to bf16 (backend.h softcap_ce_bf16), as the benchmark's autocast does;
 * fp32 logits with logits = fp32; fp64 runs keep fp64 logits.
 * Logits exist only for a chunk of rows at a time (the backend's ce_rows:
 * 256 on the CPU, 4,096 on the GPU, whose GEMMs want more rows; 128 MiB of
 * fp32 logits at V = 8192). A chunk lives in the backward's gradient
 * buffers dx, dx0, da, dead while the head runs, where it fits, else in a
 * buffer of its own; where the backend's chunk is MODEL_CE_ROWS_GPU or
 * more it is MODEL_CE_ROWS_BIG rows where those buffers hold that many (a
 * quarter of the head's ops, and taller lm_head GEMMs).
 *
 * The backend comes from backend_select; every buffer an op touches is
 * backend_alloc memory. Each forward/backward pass runs in the backend's
 * pass scope (backend.h scope), where a backend may let ops run on
 * asynchronously: inside it the host reads only the layer scalars (weights,
 * which no op writes there) and, after a sync, writes the q_tau scale vector
 * and reads its gradient, writes rope_tau's RoPE tables and reads q's and
 * k's normalised values and gradients for rope_tau's gradient (a CPU-only
 * arm), and, in fp64 runs on the CPU, reads the compact OE gradients; the
 * scalars' gradients are summed by dot_acc on the backend, and the pass's
 * per-token losses are read after the scope ends. OE hashing and visit
 * counts are backend ops.
 *
 * Left out: activation recomputation beyond relu^2 (memory grows with B*T*L),
 * multi-threading outside OpenBLAS, mixed bf16 matmuls on the CPU (fp32 runs
 * compute in fp32 on bf16-rounded embeddings).
 * Reference: docs/model.md; karpathy/autoresearch train.py (read
 * to understand the model; this is our own code).
 */
#include "trainer/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bf16.h"
#include "lib/rng.h"
#include "trainer/backend_select.h"
#include "trainer/checkpoint.h"

#define MODEL_CE_ROWS_GPU 4096 /* a backend's ce_rows from which the chunk may grow */
#define MODEL_CE_ROWS_BIG 16384 /* ... there where the head's free buffers hold them */
/* The GPU rule of model_gpu_pass_rows (the CUDA backend's act_budget is
 * the same 15 GiB): activations of one pass at most this many bytes (the
 * benchmark's depth 8, B 64, T 2048: passes of 32 rows, 14 GiB,
 * an H200 device peak of 18.1 GiB with the backend's GEMM operand casts;
 * one pass would hold 28 GiB, above the original's 22.3 GiB in all; passes
 * of 16 ran 10% slower: twice the ops, smaller GEMMs; these figures with
 * the MLP's activations in fp32: in bf16, backend.h mlp_bf16, 11.7 GiB in
 * passes of 32 rows and 23 in one; with the attention's q, k, v, y in bf16
 * too, backend.h attn_bf16, 9.7 and 19.0 GiB; with the layers' norm
 * outputs a and m in bf16 too, backend.h norm_bf16, 8.7 and 17.0 GiB; with
 * the attention's gradients dq, dk, dv in bf16 too, 8.5 and 16.6 GiB; with
 * the buffers act_layout shares, under 15 GiB in one pass, which pass_rows
 * = 0 then runs: 15,462 MiB planned in all with the head's logits in dx ..
 * da, PyTorch's 22,804.5) */
#define MODEL_GPU_ACT_BYTES ((size_t)15 << 30)
#define MODEL_MAX_OE 16

struct layer {
	struct param *q, *k, *v, *proj, *fc, *mproj, *gate, *ve;
	int window;
	/* activations for N tokens (run dtype) */
	void *xin;      /* (N,C) x entering the layer */
	void *a;        /* (N,C) rms(x mixed) (ndt) */
	void *r1;       /* (N) */
	void *qq, *kk, *vv; /* (N,C) attention inputs (after rope, norm, q_tau) */
	void *qn;       /* (N,C) q after its norm, before q_tau (qk_scale only) */
	void *rq, *rk;  /* (N*H) */
	void *glog;     /* (N,H) ve gate logits (ve layers) */
	void *y;        /* (N,C) attention output */
	void *lse;      /* (B,H,T) */
	void *m;        /* (N,C) rms(x after attention) (ndt) */
	void *r2;       /* (N) */
	void *hfc;      /* (N,4C) MLP pre-activation (mdt) */
};

struct model {
	struct config cfg;
	const struct backend_ops *bk;
	enum tdtype dt;
	size_t es;                     /* element size of dt */
	enum tdtype mdt;               /* of the MLP's h, u, dh: dt, or TD_BF16 where the
	                                  backend offers it (backend.h mlp_bf16) */
	enum tdtype adt;               /* of the attention's q, k, v, qn, y and the
	                                  gradients dy, dq, dk, dv: dt, or TD_BF16
	                                  (backend.h attn_bf16) */
	enum tdtype ndt;               /* of the layers' a and m: dt, or TD_BF16
	                                  (backend.h norm_bf16) */
	int logits_bf16;               /* lm_head output rounded to bf16 before the
	                                  softcap (logits = bf16, fp32 runs) */
	struct param_spec *spec;
	size_t nspec;
	struct param_table table;
	void *pblock;                  /* parameters and gradients */
	size_t pbytes;
	uint8_t *mask_block;
	uint32_t *count_block;
	int32_t *slot_block;           /* OE row -> gradient slot, -1 = none */
	struct oe_grad {               /* compact gradient of OE table j */
		int32_t *vis;          /* rows of slots 0..nvis-1 (host) */
		size_t nvis, cap;      /* slots used, slots allocated */
	} og[MODEL_MAX_OE];

	int L, C, H, D, V, Cg, ntab, T0;
	struct param *wte, *lm_head, *resid, *x0l, *oe[MODEL_MAX_OE], *qtau, *wtel, *outl;
	struct param *sub;             /* sub_gains (L,2,C), or NULL */
	struct param *rtau;            /* rope_tau (D/2) or (L,H,D/2), or NULL */
	double *rtau_g;                /* its gradient over a backward (host, fp64) */
	double *lam;                   /* host copies of resid, x0l, wtel (L each) and outl
	                                  (2): lam_load, at each forward */
	struct layer *lay;
	void *cos, *sin;               /* (T0, D/2) run dtype; with rope_tau
	                                  rope_ntab() tables (T0, rope_cols()) */

	/* activations and scratch for capN tokens */
	size_t capN;
	int B, T;                      /* of the last forward */
	void *ablock;
	size_t abytes;
	void *x0, *r0, *s0;            /* x0 = rms(s0), s0 = wte + OE rows (N,C) */
	void *wrow, *x0w, *rw;         /* anchor: wte rows, x0_wte, its 1/rms (N) */
	void *xf, *hN, *rN;            /* final state, rms(xf), (N) */
	void *dx, *dx0, *dx0w, *da, *dq, *dk, *dv, *dy, *dm, *t1, *t2;  /* (N,C) */
	void *dh, *u;                  /* (N,4C), mdt */
	void *gs, *dgs, *dglog;        /* (N,Cg), (N,Cg), (N,H) */
	int ce_rows;                   /* rows of logits made at a time (the backend's) */
	int ce_chunk;                  /* ... in the activations laid out (act_layout) */
	void *logits;                  /* (ce_chunk, V) */
	void *closs;                   /* (N): the pass's per-token losses */
	void *qs, *dqs;                /* (H*D) q_tau scale and its gradient */
	void *weff, *wsg;              /* (4C,C) sub_gains fused: W (1 alpha^T), its gradient */
	void *xs;                      /* (N,C) sub_gains unfused: x_hat * alpha */
	int sub_unf;                   /* sub_gains with sub_form other than fused */
	int32_t *oe_rows;              /* (ntab, N) */
	int32_t *oe_slots;             /* (N) a table's rows as gradient slots */
	int32_t *idx, *tgt;            /* (N) the batch, in backend memory */
	int have_fwd;
	size_t peak;
};

/* ---- small helpers ---- */

static struct tensor pw(const struct model *m, const struct param *p)
{
	if (p->wb)
		return tensor_2d(p->wb, TD_BF16, (int64_t)p->rows, (int64_t)p->cols);
	void *d = m->dt == TD_F64 ? (void *)p->w64 : (void *)p->w;
	return tensor_2d(d, m->dt, (int64_t)p->rows, (int64_t)p->cols);
}

static struct tensor pg(const struct model *m, const struct param *p)
{
	void *d = m->dt == TD_F64 ? (void *)p->g64 : (void *)p->g;
	return tensor_2d(d, m->dt, (int64_t)p->rows, (int64_t)p->cols);
}

static struct tensor mat(const struct model *m, void *d, int64_t r, int64_t c)
{
	return tensor_2d(d, m->dt, r, c);
}

/* the attention's (N,C) q, k, v, qn, y (backend.h attn_bf16) */
static struct tensor att_mat(const struct model *m, void *d, int64_t r)
{
	return tensor_2d(d, m->adt, r, (int64_t)m->C);
}

/* the layers' (N,C) norm outputs a, m (backend.h norm_bf16) */
static struct tensor norm_mat(const struct model *m, void *d, int64_t r)
{
	return tensor_2d(d, m->ndt, r, (int64_t)m->C);
}

/* the MLP's (N,4C) h, u, dh (backend.h mlp_bf16) */
static struct tensor mlp_mat(const struct model *m, void *d, int64_t r)
{
	return tensor_2d(d, m->mdt, r, 4 * (int64_t)m->C);
}

static double pval(const struct model *m, const struct param *p, size_t i)
{
	return m->dt == TD_F64 ? p->w64[i] : (double)p->w[i];
}

static void gadd(const struct model *m, struct param *p, size_t i, double v)
{
	if (m->dt == TD_F64)
		p->g64[i] += v;
	else
		p->g[i] += (float)v;
}

/* The layer scalars' values for a pass into m->lam, read once: the
 * parameters live in backend memory (on the CUDA backend managed, beside
 * their gradients, which the pass's dot_acc writes on the device), so a host
 * read per layer would move their page to the host and back again each
 * time; no op writes them within a pass. */
static void lam_load(struct model *m)
{
	size_t L = (size_t)m->L;
	for (size_t l = 0; l < L; l++) {
		m->lam[l] = pval(m, m->resid, l);
		m->lam[L + l] = pval(m, m->x0l, l);
		m->lam[2 * L + l] = m->wtel ? pval(m, m->wtel, l) : 0;
	}
	m->lam[3 * L] = m->outl ? pval(m, m->outl, 0) : 0;
	m->lam[3 * L + 1] = m->outl ? pval(m, m->outl, 1) : 0;
}

/* layer l's mixing coefficients: resid, x0_lambda, wte_lambda (0 without) */
static void mix_coef(const struct model *m, int l, double *c)
{
	c[0] = m->lam[l];
	c[1] = m->lam[m->L + l];
	c[2] = m->lam[2 * m->L + l];
}

/* g[i] += x . y on the backend (backend.h dot_acc): p's gradient entry i */
static void gdot(const struct model *m, struct param *p, size_t i, const struct tensor *x,
		 const struct tensor *y)
{
	struct tensor g = pg(m, p);
	m->bk->dot_acc(&g, (int64_t)i, x, y);
}

/* n products of one shape (backend.h matmul_n: one batched GEMM where the
 * backend offers it) */
static void matmul_n(const struct model *m, int n, struct tensor *const *out,
		     const struct tensor *const *a, const struct tensor *const *b, int ta, int tb,
		     double beta)
{
	m->bk->matmul_n(n, out, a, b, ta, tb, 1, beta);
}

/* u = relu(h)^2, read only by the MLP's matmuls (backend.h relu2_fwd_gemm) */
static void relu2_u(const struct model *m, struct tensor *u, const struct tensor *h)
{
	m->bk->relu2_fwd_gemm(u, h);
}

/* Before the host reads or writes backend memory inside a pass scope
 * (backend.h sync): the ops issued so far are done. */
static void host_sync(const struct model *m)
{
	m->bk->sync();
}

static double rget(const struct model *m, const void *d, size_t i)
{
	return m->dt == TD_F64 ? ((const double *)d)[i] : (double)((const float *)d)[i];
}

static void rset(const struct model *m, void *d, size_t i, double v)
{
	if (m->dt == TD_F64)
		((double *)d)[i] = v;
	else
		((float *)d)[i] = (float)v;
}

static int round_bf16(const struct model *m, const struct param *p)
{
	return m->dt == TD_F32 && p->store == PARAM_BF16;
}

static void bytes_note(struct model *m)
{
	size_t b = model_bytes(m);
	if (b > m->peak)
		m->peak = b;
}

/* ---- creation ---- */

/* Bytes of parameter s in the parameter block (paramspec_block_bytes). */
static size_t param_bytes(const struct model *m, const struct param_spec *s)
{
	return paramspec_block_bytes(s, m->dt == TD_F64);
}

/* 1 when q_tau entry (l, h, c) is frozen by qk_mask = l0_hf16. */
static int qtau_masked(const struct config *c, int l, int cidx)
{
	if (c->qk_mask != QK_MASK_L0_HF16)
		return 0;
	if (l == 0)
		return 1;
	if (c->qk_scale == QK_SCALE_PAIR)
		return cidx < 16;
	if (c->qk_scale == QK_SCALE_UNTIED)
		return cidx % (c->head_dim / 2) < 16;
	return 0;
}

static void param_init(struct model *m, struct rng *r)
{
	const struct config *c = &m->cfg;
	for (size_t i = 0; i < m->table.n; i++) {
		struct param *p = &m->table.p[i];
		const struct param_spec *s = &m->spec[i];
		enum init_kind kind = s->init;
		double a = s->init_a;
		if (c->init == INIT_DENSE && kind == INITK_ZERO) {
			kind = INITK_UNIFORM;
			a = p->ndim == 2 && s->kind != PK_Q_TAU ? sqrt(3.0 / (double)p->cols) : 0.1;
		}
		for (size_t j = 0; j < p->numel; j++) {
			double v;
			switch (kind) {
			case INITK_NORMAL:
				v = a * rng_normal(r);
				break;
			case INITK_UNIFORM:
				v = a * (2 * rng_uniform(r) - 1);
				break;
			case INITK_CONST:
				v = a;
				break;
			default:
				v = 0;
			}
			if (p->mask && p->mask[j])
				v = 0;
			float f = (float)v;
			if (p->store == PARAM_BF16)
				f = bf16_round(f);
			param_w_set(p, j, f);
		}
	}
	model_sync_from_f32(m);
}

/* RoPE tables: without rope_tau one (T0, D/2) table, cos and sin of
 * t theta_c, theta_c = rope_base^(-2c/D); with rope_tau = shared one table
 * of t theta_c exp(tau_c), with rope_tau = head one (T0, H*D/2) table per
 * layer, of t theta_c exp(tau_{l,h,c}). fp32 runs compute theta_c,
 * exp(tau) and the angle in fp32 (as the benchmark) and keep cos and sin
 * rounded to bf16 (rope_trig = bf16, the benchmark's tables) or in fp32
 * (rope_trig = fp32); fp64 runs compute everything in fp64. */
static int rope_ntab(const struct model *m)
{
	return m->cfg.rope_tau == ROPE_TAU_HEAD ? m->L : 1;
}

static int rope_cols(const struct model *m)
{
	return m->cfg.rope_tau == ROPE_TAU_HEAD ? m->H * (m->D / 2) : m->D / 2;
}

/* theta_c exp(tau) in the run's precision, as a double */
static double rope_freq(const struct model *m, int c, double tau)
{
	if (m->dt == TD_F64)
		return exp(tau) / pow(m->cfg.rope_base, (2.0 * c) / m->D);
	float inv = 1.0f / powf((float)m->cfg.rope_base, (float)(2 * c) / (float)m->D);
	return (double)(inv * expf((float)tau));
}

/* the rope_tau entry of layer l, head h, plane c */
static size_t rope_index(const struct model *m, int l, int h, int c)
{
	if (m->cfg.rope_tau == ROPE_TAU_HEAD)
		return ((size_t)l * (size_t)m->H + (size_t)h) * (size_t)(m->D / 2) + (size_t)c;
	return (size_t)c;
}

/* Fill the tables from the frequencies: rope_tau's current values (tau
 * set, and rope_tau on), else tau = 0. */
static void rope_fill(struct model *m, int tau_on)
{
	int h2 = m->D / 2, W = rope_cols(m), nh = W / h2;
	size_t tab = (size_t)m->T0 * (size_t)W;
	for (int k = 0; k < rope_ntab(m); k++)
		for (int h = 0; h < nh; h++)
			for (int c = 0; c < h2; c++) {
				double tau = tau_on && m->rtau ? pval(m, m->rtau, rope_index(m, k, h, c)) : 0;
				double fr = rope_freq(m, c, tau);
				for (int t = 0; t < m->T0; t++) {
					size_t i = (size_t)k * tab + (size_t)t * W + (size_t)h * h2 + c;
					if (m->dt == TD_F64) {
						((double *)m->cos)[i] = cos(t * fr);
						((double *)m->sin)[i] = sin(t * fr);
					} else {
						float f = (float)t * (float)fr;
						float co = cosf(f), si = sinf(f);
						if (m->cfg.rope_trig == ROPE_TRIG_BF16) {
							co = bf16_round(co);
							si = bf16_round(si);
						}
						((float *)m->cos)[i] = co;
						((float *)m->sin)[i] = si;
					}
				}
			}
}

static void rope_tables(struct model *m)
{
	size_t n = (size_t)rope_ntab(m) * (size_t)m->T0 * (size_t)rope_cols(m);
	m->cos = backend_alloc(m->bk, n * m->es);
	m->sin = backend_alloc(m->bk, n * m->es);
	if (m->rtau)
		m->rtau_g = xcalloc(m->rtau->numel, sizeof *m->rtau_g);
	rope_fill(m, 0);   /* rope_tau's values are not set yet */
}

/* Layer l's cos and sin tables. */
static void rope_layer(const struct model *m, int l, struct tensor *cs, struct tensor *sn)
{
	size_t off = m->cfg.rope_tau == ROPE_TAU_HEAD
			     ? (size_t)l * (size_t)m->T0 * (size_t)rope_cols(m) * m->es : 0;
	*cs = mat(m, (char *)m->cos + off, m->T0, rope_cols(m));
	*sn = mat(m, (char *)m->sin + off, m->T0, rope_cols(m));
}

/* rope_tau's gradient from one rope_rmsnorm_bwd of layer l: with y the
 * rotated (pre-norm) vector of a plane, y = xn / rstd, g = R dx the
 * gradient at y (dx the op's output, the gradient at the unrotated x) and
 * phi = t theta_c exp(tau) the angle, dL/dphi = g1 y2 - g2 y1, and
 * dphi/dtau = t theta_c exp(tau). Summed over tokens (and heads, layers
 * and both of q and k where a tau is shared) into m->rtau_g. */
static void rope_tau_grad(struct model *m, int l, const struct tensor *dx,
			  const struct tensor *xn, const struct tensor *rstd, int64_t T)
{
	int H = m->H, D = m->D, h2 = D / 2;
	int64_t N = tensor_numel(xn) / ((int64_t)H * D);
	struct tensor cs, sn;
	rope_layer(m, l, &cs, &sn);
	int W = rope_cols(m);
	host_sync(m);
	double *fr = xmalloc((size_t)H * h2 * sizeof *fr);
	for (int h = 0; h < H; h++)
		for (int c = 0; c < h2; c++) {
			size_t j = rope_index(m, l, h, c);
			fr[h * h2 + c] = rope_freq(m, c, pval(m, m->rtau, j));
		}
	for (int64_t n = 0; n < N; n++) {
		int64_t t = n % T;
		for (int h = 0; h < H; h++) {
			size_t row = (size_t)n * H + h;
			double r = rget(m, rstd->data, row);
			size_t tr = (size_t)t * W + (W == h2 ? 0 : (size_t)h * h2);
			for (int c = 0; c < h2; c++) {
				double co = rget(m, cs.data, tr + c), si = rget(m, sn.data, tr + c);
				double d1 = rget(m, dx->data, row * D + c);
				double d2 = rget(m, dx->data, row * D + c + h2);
				double y1 = rget(m, xn->data, row * D + c) / r;
				double y2 = rget(m, xn->data, row * D + c + h2) / r;
				double g1 = d1 * co + d2 * si, g2 = -d1 * si + d2 * co;
				m->rtau_g[rope_index(m, l, h, c)] +=
					(g1 * y2 - g2 * y1) * (double)t * fr[h * h2 + c];
			}
		}
	}
	free(fr);
}

int model_create(const struct config *cfg, struct model **out, struct err *e)
{
	*out = NULL;
	struct model *m = xcalloc(1, sizeof *m);
	m->cfg = *cfg;
	m->bk = backend_select(cfg, e);
	if (!m->bk) {
		free(m);
		return -1;
	}
	m->ce_rows = m->bk->ce_rows;
	m->ce_chunk = m->ce_rows;
	m->dt = cfg->dtype == DTYPE_F64 ? TD_F64 : TD_F32;
	m->es = tdtype_size(m->dt);
	/* fp64 runs keep exact logits whatever the logits key says */
	m->logits_bf16 = m->dt == TD_F32 && cfg->logits == LOGITS_BF16;
	m->mdt = m->dt == TD_F32 && m->bk->mlp_bf16() ? TD_BF16 : m->dt;
	m->ndt = m->dt == TD_F32 && m->bk->norm_bf16() ? TD_BF16 : m->dt;
	if (paramspec_build(cfg, &m->spec, &m->nspec, e) != 0) {
		free(m);
		return -1;
	}
	m->L = cfg->depth;
	m->C = config_model_dim(cfg);
	m->H = config_heads(cfg);
	m->D = cfg->head_dim;
	m->adt = m->dt == TD_F32 && m->bk->attn_bf16(m->D) ? TD_BF16 : m->dt;
	m->V = cfg->vocab_size;
	m->Cg = cfg->ve_gate_channels;
	m->T0 = cfg->seq_len;
	m->ntab = config_oe_tables(cfg);
	if (m->ntab > MODEL_MAX_OE || (m->ntab && m->C % m->ntab)) {
		err_set(e, EXIT_USAGE, "config: %d OE tables do not divide model_dim %d", m->ntab, m->C);
		model_free(m);
		return -1;
	}
	if (m->T0 < 1) {
		model_free(m);
		return err_set(e, EXIT_USAGE, "config: seq_len must be positive");
	}

	/* one block: w, g (fp32) and w64, g64 (fp64 runs) per parameter; OE
	 * tables bf16 wb, gb (fp32 runs) or w, w64 and a compact gradient */
	size_t n = m->nspec;
	m->pbytes = 0;
	for (size_t i = 0; i < n; i++)
		m->pbytes += param_bytes(m, &m->spec[i]);
	m->pblock = backend_alloc(m->bk, m->pbytes);
	m->table.p = xcalloc(n, sizeof *m->table.p);
	m->table.n = n;
	m->lay = xcalloc((size_t)m->L, sizeof *m->lay);
	m->lam = xcalloc(3 * (size_t)m->L + 2, sizeof *m->lam);
	size_t nmask = 0, ncount = 0;
	for (size_t i = 0; i < n; i++) {
		if (m->spec[i].kind == PK_Q_TAU && cfg->qk_mask != QK_MASK_NONE)
			nmask += m->spec[i].numel;
		if (m->spec[i].kind == PK_OE_TABLE)
			ncount += (size_t)m->spec[i].shape[0];
	}
	m->mask_block = nmask ? xcalloc(nmask, 1) : NULL;
	/* visit counts: the optimizer's device reads them (backend memory) */
	m->count_block = ncount ? backend_alloc(m->bk, ncount * sizeof(uint32_t)) : NULL;
	if (m->dt == TD_F64 && ncount) {
		m->slot_block = xmalloc(ncount * sizeof(int32_t));
		for (size_t i = 0; i < ncount; i++)
			m->slot_block[i] = -1;
	}
	char *cur = m->pblock;
	size_t moff = 0, coff = 0;
	for (size_t i = 0; i < n; i++) {
		const struct param_spec *s = &m->spec[i];
		struct param *p = &m->table.p[i];
		snprintf(p->name, sizeof p->name, "%s", s->name);
		p->ndim = s->ndim;
		memcpy(p->shape, s->shape, sizeof p->shape);
		p->numel = s->numel;
		p->rows = (size_t)s->shape[0];
		p->cols = p->rows ? s->numel / p->rows : 0;
		p->group = s->group;
		p->store = s->store;
		char *end = cur + param_bytes(m, s);
		int dense = s->kind != PK_OE_TABLE;
		if (!dense && m->dt != TD_F64) {
			p->wb = (bf16 *)cur;
			p->gb = p->wb + s->numel;
		} else {
			p->w = (float *)cur;
			cur += s->numel * sizeof(float);
		}
		if (dense) {
			p->g = (float *)cur;
			cur += s->numel * sizeof(float);
		}
		if (m->dt == TD_F64) {
			p->w64 = (double *)cur;
			cur += s->numel * sizeof(double);
			if (dense) {
				p->g64 = (double *)cur;
				cur += s->numel * sizeof(double);
			}
		}
		cur = end;
		switch (s->kind) {
		case PK_WTE: m->wte = p; break;
		case PK_LM_HEAD: m->lm_head = p; break;
		case PK_RESID_LAMBDAS: m->resid = p; break;
		case PK_X0_LAMBDAS: m->x0l = p; break;
		case PK_WTE_LAMBDAS: m->wtel = p; break;
		case PK_OUT_LAMBDAS: m->outl = p; break;
		case PK_SUB_GAINS:
			m->sub = p;
			m->sub_unf = cfg->sub_form != SUB_FORM_FUSED;
			break;
		case PK_ROPE_TAU: m->rtau = p; break;
		case PK_OE_TABLE:
			m->oe[s->layer] = p;
			p->counts = m->count_block + coff;
			p->slot = m->slot_block ? m->slot_block + coff : NULL;
			coff += p->rows;
			break;
		case PK_Q_TAU:
			m->qtau = p;
			if (cfg->qk_mask != QK_MASK_NONE) {
				p->mask = m->mask_block + moff;
				p->frozen_mask = 1;
				moff += p->numel;
				for (size_t j = 0; j < p->numel; j++) {
					int l = (int)(j / ((size_t)p->shape[1] * (p->ndim == 3 ? (size_t)p->shape[2] : 1)));
					int c = p->ndim == 3 ? (int)(j % (size_t)p->shape[2]) : 0;
					p->mask[j] = (uint8_t)qtau_masked(cfg, l, c);
				}
			}
			break;
		case PK_ATTN_Q: m->lay[s->layer].q = p; break;
		case PK_ATTN_K: m->lay[s->layer].k = p; break;
		case PK_ATTN_V: m->lay[s->layer].v = p; break;
		case PK_ATTN_PROJ: m->lay[s->layer].proj = p; break;
		case PK_MLP_FC: m->lay[s->layer].fc = p; break;
		case PK_MLP_PROJ: m->lay[s->layer].mproj = p; break;
		case PK_VE_GATE: m->lay[s->layer].gate = p; break;
		case PK_VALUE_EMBED: m->lay[s->layer].ve = p; break;
		default: break;
		}
	}
	for (int j = 0; j < m->ntab; j++)
		if (!m->oe[j] || (int64_t)m->oe[j]->cols * m->ntab != m->C) {
			int J = m->ntab;
			model_free(m);
			return err_set(e, EXIT_USAGE, "config: %d OE tables of width model_dim/4 do not "
				       "concatenate to model_dim (oe_n and oe_k must give 4 tables)", J);
		}
	for (int i = 0; i < m->L; i++)
		m->lay[i].window = config_window(cfg, i);
	rope_tables(m);

	if (cfg->init_from[0]) {
		/* fills w64 too in fp64 runs (F64 tensors exactly) */
		if (checkpoint_load(&m->table, cfg->init_from, e) != 0) {
			model_free(m);
			return -1;
		}
	} else {
		struct rng r;
		rng_seed(&r, cfg->seed);
		param_init(m, &r);
	}
	bytes_note(m);
	*out = m;
	return 0;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	/* the OE tables' compact gradients first: they hang off table.p */
	for (int j = 0; j < m->ntab && j < MODEL_MAX_OE; j++) {
		free(m->og[j].vis);
		if (m->oe[j] && m->oe[j]->gv64)
			backend_free(m->bk, m->oe[j]->gv64);
	}
	free(m->spec);
	free(m->table.p);
	if (m->pblock)
		backend_free(m->bk, m->pblock);
	free(m->mask_block);
	if (m->count_block)
		backend_free(m->bk, m->count_block);
	free(m->slot_block);
	free(m->lay);
	free(m->lam);
	free(m->rtau_g);
	void *dev[] = { m->cos, m->sin, m->ablock, m->oe_rows, m->oe_slots, m->idx, m->tgt };
	for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
		if (dev[i])
			backend_free(m->bk, dev[i]);
	free(m);
}

struct param_table *model_params(struct model *m) { return &m->table; }
const struct config *model_config(const struct model *m) { return &m->cfg; }
const struct backend_ops *model_backend(const struct model *m) { return m->bk; }

const struct param_spec *model_spec(const struct model *m, size_t *n)
{
	*n = m->nspec;
	return m->spec;
}

size_t model_param_count(const struct model *m)
{
	size_t s = 0;
	for (size_t i = 0; i < m->table.n; i++)
		s += m->table.p[i].numel;
	return s;
}

/* Bytes of one compact OE gradient slot of table j: the row and its entry
 * in the visited list. */
static size_t oe_slot_bytes(const struct model *m, int j)
{
	return m->oe[j]->cols * m->es + sizeof(int32_t);
}

/* Parameters, activations of capN tokens (abytes), the per-token index
 * buffers, RoPE tables, and `slots(j)` gradient slots of each OE table. */
static size_t bytes_with(const struct model *m, size_t capN, size_t abytes, const size_t *slots)
{
	/* idx, tgt, the OE rows, and (fp64 runs) their slots */
	size_t ints = 2 + (size_t)m->ntab + (m->ntab && m->dt == TD_F64);
	size_t b = m->pbytes + abytes + capN * ints * 4;
	b += 2 * (size_t)rope_ntab(m) * (size_t)m->T0 * (size_t)rope_cols(m) * m->es;
	for (int j = 0; j < m->ntab; j++)
		b += slots[j] * oe_slot_bytes(m, j);
	return b;
}

size_t model_bytes(const struct model *m)
{
	size_t slots[MODEL_MAX_OE];
	for (int j = 0; j < m->ntab; j++)
		slots[j] = m->og[j].cap;
	return bytes_with(m, m->capN, m->abytes, slots);
}

size_t model_peak_bytes(const struct model *m) { return m->peak; }
enum tdtype model_mlp_dtype(const struct model *m) { return m->mdt; }
enum tdtype model_attn_dtype(const struct model *m) { return m->adt; }
enum tdtype model_norm_dtype(const struct model *m) { return m->ndt; }
enum tdtype model_logits_dtype(const struct model *m) { return m->logits_bf16 ? TD_BF16 : m->dt; }

static size_t act_layout(struct model *m, char *base, size_t N);

/* The bytes of the activations for N tokens, measured on a copy (laying out
 * sets the model's activation pointers). */
static size_t act_bytes(const struct model *m, size_t N)
{
	struct model c = *m;
	c.lay = xmalloc((size_t)m->L * sizeof *c.lay);
	memcpy(c.lay, m->lay, (size_t)m->L * sizeof *c.lay);
	size_t b = act_layout(&c, NULL, N);
	free(c.lay);
	return b;
}

/* The most rows (a divisor of B) whose activations fit budget bytes; 1
 * when none does. */
static int rows_within(const struct model *m, int B, int T, size_t budget)
{
	int P;
	for (P = B; P > 1; P--)
		if (B % P == 0 && act_bytes(m, (size_t)P * (size_t)T) <= budget)
			break;
	return P;
}

/* Rows per pass for a micro-batch of B rows of T: cfg->pass_rows, or with
 * pass_rows = 0 all of them where the backend sets no activation budget
 * (the CPU) and else the most rows whose activations fit it. */
int model_pass_rows(const struct model *m, int B, int T)
{
	int P = m->cfg.pass_rows;
	if (P > 0)
		return P < B ? P : B;
	return m->bk->act_budget ? rows_within(m, B, T, m->bk->act_budget) : B;
}

int model_gpu_pass_rows(const struct model *m, int B, int T)
{
	return rows_within(m, B, T, MODEL_GPU_ACT_BYTES);
}

size_t model_bytes_for(const struct model *m, int B, int T)
{
	size_t N = (size_t)model_pass_rows(m, B, T) * (size_t)T, cap = N > m->capN ? N : m->capN;
	size_t visits = (size_t)B * (size_t)T * (size_t)(m->cfg.grad_accum > 0 ? m->cfg.grad_accum : 1);
	size_t slots[MODEL_MAX_OE];
	for (int j = 0; j < m->ntab; j++) {
		slots[j] = visits < m->oe[j]->rows ? visits : m->oe[j]->rows;
		if (m->dt != TD_F64)
			slots[j] = 0;   /* a dense bf16 gradient, in pbytes */
		if (m->og[j].cap > slots[j])
			slots[j] = m->og[j].cap;
	}
	return bytes_with(m, cap, act_bytes(m, cap), slots);
}

void model_sync_f32(struct model *m)
{
	if (m->dt != TD_F64)
		return;
	for (size_t i = 0; i < m->table.n; i++) {
		struct param *p = &m->table.p[i];
		for (size_t j = 0; j < p->numel; j++)
			p->w[j] = (float)p->w64[j];
	}
}

void model_sync_from_f32(struct model *m)
{
	if (m->dt != TD_F64)
		return;
	for (size_t i = 0; i < m->table.n; i++) {
		struct param *p = &m->table.p[i];
		for (size_t j = 0; j < p->numel; j++)
			p->w64[j] = p->w[j];
	}
}

void model_zero_grad(struct model *m)
{
	for (size_t i = 0; i < m->table.n; i++) {
		struct param *p = &m->table.p[i];
		if (p->g && p->numel) {
			/* the backend's zero: device memory stays on the device (cuda) */
			struct tensor g = tensor_1d(p->g, TD_F32, (int64_t)p->numel);
			m->bk->zero(&g);
		}
		if (p->gb && p->numel) {
			struct tensor g = tensor_1d(p->gb, TD_BF16, (int64_t)p->numel);
			m->bk->zero(&g);
		}
		if (p->g64)
			memset(p->g64, 0, p->numel * sizeof(double));
		if (p->counts)
			memset(p->counts, 0, p->rows * sizeof(uint32_t));
	}
	for (int j = 0; j < m->ntab; j++) {
		struct oe_grad *o = &m->og[j];
		for (size_t k = 0; k < o->nvis && m->oe[j]->slot; k++)
			m->oe[j]->slot[o->vis[k]] = -1;
		o->nvis = 0;
	}
}

const void *model_last_x0(const struct model *m) { return m->have_fwd ? m->x0 : NULL; }
const void *model_last_x0_wte(const struct model *m)
{
	return m->have_fwd && m->x0w ? m->x0w : NULL;
}
const void *model_last_xf(const struct model *m) { return m->have_fwd ? m->xf : NULL; }

/* ---- activations ---- */

/* The next n elements of size es at offset *off of base (NULL while sizing). */
static void *carve_at(char *base, size_t *off, size_t n, size_t es)
{
	void *p = base ? base + *off : NULL;
	*off += (n * es + 63) / 64 * 64;
	return p;
}
#define carve(cur, n, es) carve_at(base, cur, n, es)

/* Lay out every activation for N tokens in one block (base = NULL: only
 * measure); returns the bytes needed. */
static size_t act_layout(struct model *m, char *base, size_t N)
{
	size_t cur = 0;
	size_t C = (size_t)m->C, H = (size_t)m->H, es = m->es, mes = tdtype_size(m->mdt);
	size_t aes = tdtype_size(m->adt), nes = tdtype_size(m->ndt);
	int anchor = m->wtel != NULL;
	int shared = anchor && m->cfg.anchor == ANCHOR_SHARED;
	m->x0 = carve(&cur, N * C, es);
	m->r0 = carve(&cur, N, es);
	/* s0, the embeddings before their norm: read by the forward only (but
	 * by the shared anchor's backward), so else in dm's buffer (below) */
	m->s0 = shared ? carve(&cur, N * C, es) : NULL;
	m->wrow = shared ? carve(&cur, N * C, es) : NULL;
	m->x0w = anchor ? carve(&cur, N * C, es) : NULL;
	m->rw = anchor ? carve(&cur, N, es) : NULL;
	for (int i = 0; i < m->L; i++) {
		struct layer *l = &m->lay[i];
		l->xin = i == 0 ? m->x0 : carve(&cur, N * C, es);
		l->a = carve(&cur, N * C, nes);
		l->r1 = carve(&cur, N, es);
		l->qq = carve(&cur, N * C, aes);
		l->kk = carve(&cur, N * C, aes);
		l->vv = carve(&cur, N * C, aes);
		l->qn = m->qtau ? carve(&cur, N * C, aes) : NULL;
		l->rq = carve(&cur, N * H, es);
		l->rk = carve(&cur, N * H, es);
		l->glog = l->gate ? carve(&cur, N * H, es) : NULL;
		l->y = carve(&cur, N * C, aes);
		l->lse = carve(&cur, N * H, es);      /* (B,H,T) */
		l->m = carve(&cur, N * C, nes);
		l->r2 = carve(&cur, N, es);
		l->hfc = carve(&cur, N * 4 * C, mes);
	}
	m->xf = carve(&cur, N * C, es);
	m->hN = carve(&cur, N * C, es);
	m->rN = carve(&cur, N, es);
	/* dx, dx0, da: the backward's, dead while the head runs (the backward
	 * writes each before it reads it), three consecutive blocks that hold
	 * the head's chunk of logits where it fits: MODEL_CE_ROWS_BIG rows of
	 * them where the backend's chunk is MODEL_CE_ROWS_GPU (the benchmark's
	 * one pass: 512 MiB in 768) */
	void **sc[] = { &m->dx, &m->dx0, &m->da, &m->dy, &m->dm };
	for (size_t i = 0; i < sizeof sc / sizeof *sc; i++)
		*sc[i] = carve(&cur, N * C, es);
	size_t span = 3 * ((N * C * es + 63) / 64 * 64), V = (size_t)m->V;   /* dx .. da */
	m->ce_chunk = m->ce_rows;
	if (m->ce_rows >= MODEL_CE_ROWS_GPU && (size_t)MODEL_CE_ROWS_BIG * V * es <= span)
		m->ce_chunk = MODEL_CE_ROWS_BIG;
	m->dx0w = anchor ? carve(&cur, N * C, es) : NULL;
	void **sa[] = { &m->dq, &m->dk, &m->dv };   /* the attention's gradients */
	for (size_t i = 0; i < sizeof sa / sizeof *sa; i++)
		*sa[i] = carve(&cur, N * C, aes);
	/* buffers shared by values never live at once (the same bits, less
	 * memory: one pass of the benchmark's depth 8 then fits
	 * MODEL_GPU_ACT_BYTES on the CUDA backend's bf16 storage):
	 *   s0 (the forward's) and the backward's dm;
	 *   t1 (the value embeddings gathered, forward and backward; the
	 *   anchor's wte rows and their gradient) and dy (dhN, the attention
	 *   output's gradient: written by the head, dead before each layer's
	 *   gather, which follows attn_bwd);
	 *   t2 (the value embeddings' gradient) and dm (dead after the MLP's
	 *   norm backward, before the layer's gate);
	 *   dh (the MLP's gradient) and u (relu^2, read by the backward's dWmp
	 *   GEMM before du = dx Wmp overwrites it, and recomputed from h by the
	 *   next layer after dm = dh Wfc has read dh) */
	if (!m->s0)
		m->s0 = m->dm;
	m->t1 = m->dy;
	m->t2 = m->dm;
	m->u = carve(&cur, N * 4 * C, mes);
	m->dh = m->u;
	m->gs = carve(&cur, N * (size_t)m->Cg, es);
	m->dgs = carve(&cur, N * (size_t)m->Cg, es);
	m->dglog = carve(&cur, N * H, es);
	m->logits = (size_t)m->ce_chunk * V * es <= span ? m->dx
							 : carve(&cur, (size_t)m->ce_chunk * V, es);
	m->closs = carve(&cur, N, es);
	m->qs = carve(&cur, H * (size_t)m->D, es);
	m->dqs = carve(&cur, H * (size_t)m->D, es);
	m->weff = m->sub && !m->sub_unf ? carve(&cur, 4 * C * C, es) : NULL;
	m->wsg = m->sub && !m->sub_unf ? carve(&cur, 4 * C * C, es) : NULL;
	m->xs = m->sub_unf ? carve(&cur, N * C, nes) : NULL;
	return cur;
}
#undef carve

static void act_reserve(struct model *m, int B, int T)
{
	size_t N = (size_t)B * T;
	if (N > m->capN) {
		size_t need = act_bytes(m, N);
		if (m->ablock)
			backend_free(m->bk, m->ablock);
		m->ablock = backend_alloc(m->bk, need);
		m->abytes = need;
		m->capN = N;
		act_layout(m, m->ablock, N);
		void *old[] = { m->oe_rows, m->oe_slots, m->idx, m->tgt };
		for (int i = 0; i < 4; i++)
			if (old[i])
				backend_free(m->bk, old[i]);
		m->oe_rows = m->ntab ? backend_alloc(m->bk, N * (size_t)m->ntab * sizeof(int32_t)) : NULL;
		m->oe_slots = m->ntab && m->dt == TD_F64 ? backend_alloc(m->bk, N * sizeof(int32_t))
							 : NULL;
		m->idx = backend_alloc(m->bk, N * sizeof(int32_t));
		m->tgt = backend_alloc(m->bk, N * sizeof(int32_t));
	}
	m->B = B;
	m->T = T;
	bytes_note(m);
}

/* ---- the q_tau scale of layer l: s[h*D + c] = m(tau) (H*D) ---- */

/* The q_tau entry that scales coordinate c of head h in layer l: pair-tied
 * (c and c + D/2 share one), untied, or one per head. */
static size_t qtau_index(const struct model *m, int l, int h, int c)
{
	size_t H = (size_t)m->H, D = (size_t)m->D;
	if (m->cfg.qk_scale == QK_SCALE_PAIR)
		return ((size_t)l * H + (size_t)h) * (D / 2) + (size_t)c % (D / 2);
	if (m->cfg.qk_scale == QK_SCALE_UNTIED)
		return ((size_t)l * H + (size_t)h) * D + (size_t)c;
	return (size_t)l * H + (size_t)h;
}

/* The multiplier m(tau) of qk_param: exp and stop_exp exp(tau), linear
 * (1 + tau)^2 (the square of s = 1 + tau scaling q and k alike). */
static double qtau_value(const struct model *m, double tau)
{
	if (m->cfg.qk_param == QK_PARAM_LINEAR)
		return (1 + tau) * (1 + tau);
	return exp(tau);
}

/* dm/dtau: exp m, stop_exp 1 (forward exp(tau), backward the identity),
 * linear 2 (1 + tau). */
static double qtau_slope(const struct model *m, double tau, double s)
{
	switch (m->cfg.qk_param) {
	case QK_PARAM_STOP_EXP:
		return 1;
	case QK_PARAM_LINEAR:
		return 2 * (1 + tau);
	default:
		return s;
	}
}

static void qtau_scale(struct model *m, int l)
{
	const struct param *p = m->qtau;
	int H = m->H, D = m->D;
	host_sync(m);   /* the last layer's op may still read qs */
	for (int h = 0; h < H; h++)
		for (int c = 0; c < D; c++) {
			size_t j = qtau_index(m, l, h, c);
			rset(m, m->qs, (size_t)h * D + c, qtau_value(m, pval(m, p, j)));
		}
}

/* dtau from ds = dL/ds (H*D): dtau[j] += sum over its coordinates
 * ds * dm/dtau. */
static void qtau_grad(struct model *m, int l)
{
	struct param *p = m->qtau;
	int H = m->H, D = m->D;
	host_sync(m);   /* dqs is the op's just issued */
	for (int h = 0; h < H; h++)
		for (int c = 0; c < D; c++) {
			size_t j = qtau_index(m, l, h, c);
			if (p->mask && p->mask[j])
				continue;
			size_t k = (size_t)h * D + c;
			gadd(m, p, j, rget(m, m->dqs, k) *
				      qtau_slope(m, pval(m, p, j), rget(m, m->qs, k)));
		}
}

/* ---- sub_gains: W_eff = W (1 alpha^T), alpha = sub_gains[l][s] ---- */

/* The gains of layer l, sublayer s (0 attention, 1 MLP): (C) values, or
 * their gradient with grad. */
static struct tensor sub_vec(const struct model *m, int l, int s, int grad)
{
	const struct param *p = m->sub;
	size_t off = ((size_t)l * 2 + (size_t)s) * (size_t)m->C;
	void *d = m->dt == TD_F64 ? (void *)((grad ? p->g64 : p->w64) + off)
				  : (void *)((grad ? p->g : p->w) + off);
	return tensor_1d(d, m->dt, m->C);
}

/* W_eff j of the scratch (rows x C, at row offset r0 of weff) = W with
 * column c times alpha[c]. */
static struct tensor sub_fuse(const struct model *m, const struct param *W, const struct tensor *al,
			      int64_t r0)
{
	struct tensor w = pw(m, W);
	struct tensor we = mat(m, (char *)m->weff + (size_t)r0 * m->C * m->es, w.shape[0], m->C);
	m->bk->mul_cols_fwd(&we, &w, al);
	return we;
}

/* With W_eff = W (1 alpha^T) and dY (N,rows) its output's gradient, x (N,C)
 * its input: G = dY^T x (the gradient of W_eff), dalpha += sum over rows of
 * G * W, dW += G (1 alpha^T). */
static void sub_grad(const struct model *m, struct param *W, const struct tensor *dY,
		     const struct tensor *x, const struct tensor *al, struct tensor *dal)
{
	struct tensor w = pw(m, W), gw = pg(m, W);
	struct tensor G = mat(m, m->wsg, w.shape[0], m->C);
	m->bk->matmul(&G, dY, x, 1, 0, 1, 0);
	m->bk->mul_cols_bwd(&G, dal, &G, &w, al);
	m->bk->axpby(&gw, 1, &G, 1);
}

/* sub_gains unfused (sub_form != fused): xs (N,C) = x * alpha, an
 * activation the GEMMs read in place of x; the backward forms it again. */
static struct tensor sub_scale(const struct model *m, const struct tensor *x, const struct tensor *al)
{
	struct tensor xs = norm_mat(m, m->xs, x->shape[0]);
	m->bk->mul_cols_fwd(&xs, x, al);
	return xs;
}

/* ---- OE gradients of fp64 runs: compact rows (trainer/param.h) ---- */

/* Make room for n more slots in table j: capacity doubles (at least nvis +
 * n), never past the table's rows; the used rows are copied over. */
static void oe_reserve(struct model *m, int j, size_t n)
{
	struct oe_grad *o = &m->og[j];
	struct param *p = m->oe[j];
	if (o->nvis + n <= o->cap || o->cap >= p->rows)
		return;   /* room enough: distinct rows never exceed the table's */
	size_t cap = o->cap * 2 > o->nvis + n ? o->cap * 2 : o->nvis + n;
	if (cap > p->rows)
		cap = p->rows;
	size_t row = p->cols * m->es;
	void *g = backend_alloc(m->bk, cap * row);
	if (p->gv64) {
		memcpy(g, p->gv64, o->nvis * row);
		backend_free(m->bk, p->gv64);
	}
	p->gv64 = g;
	o->vis = xrealloc(o->vis, cap * sizeof *o->vis);
	o->cap = cap;
	bytes_note(m);
}

/* Give every row in rows (N) a gradient slot (a new slot's row zeroed),
 * write the slots to m->oe_slots, count the visits; the gradient of table
 * j as a (slots, cols) tensor for the scatter-add. */
static struct tensor oe_slots(struct model *m, int j, const int32_t *rows, int64_t N)
{
	struct param *p = m->oe[j];
	struct oe_grad *o = &m->og[j];
	oe_reserve(m, j, (size_t)N);
	size_t row = p->cols * m->es;
	char *g = (char *)p->gv64;
	for (int64_t n = 0; n < N; n++) {
		int32_t r = rows[n];
		if (p->slot[r] < 0) {
			p->slot[r] = (int32_t)o->nvis;
			o->vis[o->nvis] = r;
			memset(g + o->nvis * row, 0, row);
			o->nvis++;
		}
		m->oe_slots[n] = p->slot[r];
		p->counts[r]++;
	}
	return tensor_2d(g, m->dt, (int64_t)o->cap, (int64_t)p->cols);
}

double *model_grad_row64_take(struct model *m, struct param *p, size_t r)
{
	if (p->g64)
		return p->g64 + r * p->cols;
	for (int j = 0; j < m->ntab; j++) {
		if (m->oe[j] != p || !p->slot)
			continue;
		if (p->slot[r] < 0) {
			struct oe_grad *o = &m->og[j];
			oe_reserve(m, j, 1);
			p->slot[r] = (int32_t)o->nvis;
			o->vis[o->nvis] = (int32_t)r;
			memset(p->gv64 + o->nvis * p->cols, 0, p->cols * sizeof(double));
			o->nvis++;
		}
		return p->gv64 + (size_t)p->slot[r] * p->cols;
	}
	return NULL;
}

/* ---- OE hashing: table j hashes (2 + j / oe_k)-grams ---- */

static void oe_hash(struct model *m, const int32_t *idx, int B, int T)
{
	int64_t N = (int64_t)B * T;
	for (int j = 0; j < m->ntab; j++)
		m->bk->ngram_rows(m->oe_rows + (size_t)j * N, idx, B, T, m->V, 2 + j / m->cfg.oe_k,
				  (int64_t)m->oe[j]->rows);
}

/* ---- forward ---- */

static int check_tokens(const struct model *m, const int32_t *in, const int32_t *tg, int B, int T,
			struct err *e)
{
	if (B < 1 || T < 1 || T > m->T0)
		return err_set(e, EXIT_USAGE, "model: batch %d x %d does not fit seq_len %d", B, T, m->T0);
	for (int64_t n = 0; n < (int64_t)B * T; n++) {
		if (in[n] < 0 || in[n] >= m->V)
			return err_set(e, EXIT_USAGE, "model: input token %d at %lld is not in [0, %d)",
				       in[n], (long long)n, m->V);
		if (tg && tg[n] >= m->V)
			return err_set(e, EXIT_USAGE, "model: target token %d at %lld is not below %d",
				       tg[n], (long long)n, m->V);
	}
	return 0;
}

static void forward(struct model *m, const int32_t *idx, int B, int T)
{
	const struct backend_ops *bk = m->bk;
	int64_t N = (int64_t)B * T, C = m->C, H = m->H, D = m->D;
	double eps = m->cfg.norm_eps;
	lam_load(m);   /* for this forward and its backward */
	if (m->rtau) {   /* the tables of rope_tau's values, for both */
		host_sync(m);
		rope_fill(m, 1);
	}
	struct tensor x0 = mat(m, m->x0, N, C), r0 = tensor_1d(m->r0, m->dt, N);
	struct tensor s0 = mat(m, m->s0, N, C);

	/* embeddings: s0 = wte[idx] (+ concat_j E_j[h_j]); x0 = rms(s0) */
	struct tensor wte = pw(m, m->wte);
	bk->embed_gather(&s0, &wte, idx, 0, round_bf16(m, m->wte), 0);
	if (m->wrow) {
		struct tensor wr = mat(m, m->wrow, N, C);
		bk->cols_get(&wr, &s0, 0, 0);
	}
	if (m->ntab) {
		oe_hash(m, idx, B, T);
		int64_t w = C / m->ntab;
		for (int j = 0; j < m->ntab; j++) {
			struct tensor tj = pw(m, m->oe[j]);
			bk->embed_gather(&s0, &tj, m->oe_rows + (size_t)j * N, j * w,
					 round_bf16(m, m->oe[j]), 1);
		}
	}
	bk->rmsnorm_fwd(&x0, &r0, &s0, eps);
	if (m->x0w) {
		struct tensor x0w = mat(m, m->x0w, N, C), rw = tensor_1d(m->rw, m->dt, N);
		if (m->cfg.anchor == ANCHOR_SHARED) {
			struct tensor wr = mat(m, m->wrow, N, C);
			bk->rmsnorm_ref_fwd(&x0w, &rw, &wr, &s0, m->cfg.shared_eps);
		} else {
			/* rms of the wte row alone (s0 holds wte + OE; regather wte) */
			struct tensor t1 = mat(m, m->t1, N, C);
			bk->embed_gather(&t1, &wte, idx, 0, round_bf16(m, m->wte), 0);
			bk->rmsnorm_fwd(&x0w, &rw, &t1, eps);
		}
	}

	for (int i = 0; i < m->L; i++) {
		struct layer *l = &m->lay[i];
		void *xnext = i + 1 < m->L ? m->lay[i + 1].xin : m->xf;
		struct tensor xin = mat(m, l->xin, N, C), x = mat(m, xnext, N, C);
		struct tensor a = norm_mat(m, l->a, N), r1 = tensor_1d(l->r1, m->dt, N);
		/* x = resid*x + x0l*x0 (+ wtel*x0_wte); a = rms(x) */
		struct tensor x0w = m->wtel ? mat(m, m->x0w, N, C) : x0;
		double mc[3];
		mix_coef(m, i, mc);
		bk->mix_rmsnorm_fwd(&x, &a, &r1, &xin, &x0, m->wtel ? &x0w : NULL, mc, eps);
		struct tensor q = att_mat(m, l->qq, N), k = att_mat(m, l->kk, N), v = att_mat(m, l->vv, N);
		struct tensor Wq = pw(m, l->q), Wk = pw(m, l->k), Wv = pw(m, l->v);
		/* the GEMMs' input: a, or (sub_gains unfused) as = a * alpha */
		struct tensor as = a;
		if (m->sub_unf) {
			struct tensor al = sub_vec(m, i, 0, 0);
			as = sub_scale(m, &a, &al);
		} else if (m->sub) {   /* sub_gains: W_eff = W (1 alpha^T) for W_Q, W_K, W_V */
			struct tensor al = sub_vec(m, i, 0, 0);
			Wq = sub_fuse(m, l->q, &al, 0);
			Wk = sub_fuse(m, l->k, &al, m->C);
			Wv = sub_fuse(m, l->v, &al, 2 * (int64_t)m->C);
		}
		/* q, k, v (N,C) = a W^T, one batched GEMM where the backend has one */
		struct tensor *qkv[3] = { &q, &k, &v };
		const struct tensor *aaa[3] = { &as, &as, &as }, *wqkv[3] = { &Wq, &Wk, &Wv };
		matmul_n(m, 3, qkv, aaa, wqkv, 0, 1, 0);
		if (l->gate) {
			/* v += 2 sigmoid(a[:, :Cg] Wg^T)[head] * value_embeds[idx]
			 * (as[:, :Cg] with sub_form = gate_scaled) */
			struct tensor gs = mat(m, m->gs, N, m->Cg), gl = mat(m, l->glog, N, H);
			struct tensor Wg = pw(m, l->gate), ve = mat(m, m->t1, N, C), vt = pw(m, l->ve);
			bk->cols_get(&gs, m->cfg.sub_form == SUB_FORM_GATE_SCALED ? &as : &a, 0, 0);
			bk->matmul(&gl, &gs, &Wg, 0, 1, 1, 0);   // glog is (N,H)
			bk->ve_gate_fwd_rows(&v, &gl, &vt, idx, round_bf16(m, l->ve), &ve);
		}
		/* q, k = norm(rope(q)), norm(rope(k)), one fused pass each; with
		 * q_tau the normalised q is kept (qn) and q = qn * m(tau), in the
		 * same pass */
		struct tensor q4 = { l->qq, m->adt, 3, { N, H, D, 1 } };
		struct tensor k4 = { l->kk, m->adt, 3, { N, H, D, 1 } };
		struct tensor cs, sn;
		rope_layer(m, i, &cs, &sn);
		struct tensor rq = tensor_1d(l->rq, m->dt, N * H), rk = tensor_1d(l->rk, m->dt, N * H);
		if (m->qtau) {
			struct tensor qn4 = { l->qn, m->adt, 3, { N, H, D, 1 } };
			struct tensor qs = tensor_1d(m->qs, m->dt, H * D);
			qtau_scale(m, i);
			bk->rope_rmsnorm_fwd(&q4, &rq, &qn4, &q4, &qs, &cs, &sn, T, eps);
		} else {
			bk->rope_rmsnorm_fwd(&q4, &rq, NULL, &q4, NULL, &cs, &sn, T, eps);
		}
		bk->rope_rmsnorm_fwd(&k4, &rk, NULL, &k4, NULL, &cs, &sn, T, eps);
		struct tensor qa = { l->qq, m->adt, 4, { B, T, H, D } };
		struct tensor ka = { l->kk, m->adt, 4, { B, T, H, D } };
		struct tensor va = { l->vv, m->adt, 4, { B, T, H, D } };
		struct tensor ya = { l->y, m->adt, 4, { B, T, H, D } };
		struct tensor lse = { l->lse, m->dt, 3, { B, H, T, 1 } };
		bk->attn_fwd(&ya, &lse, &qa, &ka, &va, l->window, 1.0 / sqrt((double)D));
		struct tensor y = att_mat(m, l->y, N), Wp = pw(m, l->proj);
		bk->matmul(&x, &y, &Wp, 0, 1, 1, 1);      // x += y Wproj^T
		struct tensor mm = norm_mat(m, l->m, N), r2 = tensor_1d(l->r2, m->dt, N);
		bk->rmsnorm_fwd(&mm, &r2, &x, eps);
		struct tensor h = mlp_mat(m, l->hfc, N), u = mlp_mat(m, m->u, N);
		struct tensor Wfc = pw(m, l->fc), Wmp = pw(m, l->mproj);
		struct tensor ms = mm;   /* the GEMM's input, mm * alpha' unfused */
		if (m->sub_unf) {
			struct tensor al = sub_vec(m, i, 1, 0);
			ms = sub_scale(m, &mm, &al);
		} else if (m->sub) {   /* sub_gains: W_fc (1 alpha^T) */
			struct tensor al = sub_vec(m, i, 1, 0);
			Wfc = sub_fuse(m, l->fc, &al, 0);
		}
		bk->matmul(&h, &ms, &Wfc, 0, 1, 1, 0);    // h is (N,4C)
		relu2_u(m, &u, &h);
		bk->matmul(&x, &u, &Wmp, 0, 1, 1, 1);     // x += relu(h)^2 Wmproj^T
	}
	struct tensor xf = mat(m, m->xf, N, C);
	if (m->outl) {
		struct tensor x0w = mat(m, m->x0w, N, C);
		bk->axpby(&xf, m->lam[3 * m->L], &x0, 1);
		bk->axpby(&xf, m->lam[3 * m->L + 1], &x0w, 1);
	}
	struct tensor hN = mat(m, m->hN, N, C), rN = tensor_1d(m->rN, m->dt, N);
	bk->rmsnorm_fwd(&hN, &rN, &xf, eps);
	m->have_fwd = 1;
}

/* Loss over N rows in chunks into m->closs (N); with dscale != 0 also dhN
 * (into m->dy) and the lm_head gradient. */
static void head(struct model *m, const int32_t *tg, int64_t N, double dscale)
{
	const struct backend_ops *bk = m->bk;
	int64_t C = m->C, V = m->V;
	struct tensor Wlm = pw(m, m->lm_head), gWlm = pg(m, m->lm_head);
	for (int64_t r0 = 0; r0 < N; r0 += m->ce_chunk) {
		int64_t R = N - r0 < m->ce_chunk ? N - r0 : m->ce_chunk;
		struct tensor hc = mat(m, (char *)m->hN + (size_t)(r0 * C) * m->es, R, C);
		struct tensor lg = mat(m, m->logits, R, V);
		struct tensor ls = tensor_1d((char *)m->closs + (size_t)r0 * m->es, m->dt, R);
		bk->matmul(&lg, &hc, &Wlm, 0, 1, 1, 0);   // logits is (R,V)
		if (m->logits_bf16)
			bk->softcap_ce_bf16(&lg, &ls, tg + r0, m->cfg.softcap, dscale, NULL);
		else
			bk->softcap_ce(&lg, &ls, tg + r0, m->cfg.softcap, dscale, NULL);
		if (dscale != 0) {
			struct tensor dh = mat(m, (char *)m->dy + (size_t)(r0 * C) * m->es, R, C);
			bk->matmul(&dh, &lg, &Wlm, 0, 0, 1, 0);   // dhN is (R,C)
			bk->matmul(&gWlm, &lg, &hc, 1, 0, 1, 1);  // dWlm (V,C) += dlogits^T hN
		}
	}
}

/* The sum of the pass's N losses (after its scope ended: the host reads
 * them), in row order; per-token into losses too. */
static double loss_sum(const struct model *m, int64_t N, float *losses)
{
	double sum = 0;
	for (int64_t r = 0; r < N; r++) {
		double v = rget(m, m->closs, (size_t)r);
		sum += v;
		if (losses)
			losses[r] = (float)v;
	}
	return sum;
}

static void backward(struct model *m, const int32_t *idx, int B, int T)
{
	const struct backend_ops *bk = m->bk;
	int64_t N = (int64_t)B * T, C = m->C, H = m->H, D = m->D;
	struct tensor dx = mat(m, m->dx, N, C), dx0 = mat(m, m->dx0, N, C);
	struct tensor dx0w = mat(m, m->dx0w, N, C), dhN = mat(m, m->dy, N, C);
	struct tensor hN = mat(m, m->hN, N, C), rN = tensor_1d(m->rN, m->dt, N);
	struct tensor x0 = mat(m, m->x0, N, C);
	struct tensor x0w = m->x0w ? mat(m, m->x0w, N, C) : x0;

	bk->rmsnorm_bwd(&dx, &dhN, &hN, &rN, 0);
	bk->zero(&dx0);
	if (m->x0w)
		bk->zero(&dx0w);
	if (m->outl) {
		gdot(m, m->outl, 0, &dx, &x0);
		gdot(m, m->outl, 1, &dx, &x0w);
		bk->axpby(&dx0, m->lam[3 * m->L], &dx, 1);
		bk->axpby(&dx0w, m->lam[3 * m->L + 1], &dx, 1);
	}
	struct tensor da = mat(m, m->da, N, C), dm = mat(m, m->dm, N, C);
	/* the attention's gradients dq, dk, dv in its dtype, as dy */
	struct tensor dq = att_mat(m, m->dq, N), dk = att_mat(m, m->dk, N), dv = att_mat(m, m->dv, N);
	/* the attention output's gradient, in the attention's dtype (backend.h
	 * attn_bf16); its buffer held dhN (run dtype), which is used up first */
	struct tensor dy = att_mat(m, m->dy, N);
	struct tensor dh = mlp_mat(m, m->dh, N), u = mlp_mat(m, m->u, N);
	if (m->rtau)
		memset(m->rtau_g, 0, m->rtau->numel * sizeof *m->rtau_g);
	for (int i = m->L - 1; i >= 0; i--) {
		struct layer *l = &m->lay[i];
		struct tensor cs, sn;
		rope_layer(m, i, &cs, &sn);
		/* MLP: x += relu(h)^2 Wmp^T with h = rms(x2) Wfc^T */
		struct tensor h = mlp_mat(m, l->hfc, N), mm = norm_mat(m, l->m, N);
		struct tensor r2 = tensor_1d(l->r2, m->dt, N);
		struct tensor Wfc = pw(m, l->fc), Wmp = pw(m, l->mproj);
		struct tensor gWfc = pg(m, l->fc), gWmp = pg(m, l->mproj);
		if (i < m->L - 1)   /* the last layer's u is still the forward's */
			relu2_u(m, &u, &h);
		bk->matmul(&gWmp, &dx, &u, 1, 0, 1, 1);   // dWmp (C,4C) += dx^T u
		bk->matmul(&dh, &dx, &Wmp, 0, 0, 1, 0);   // du (N,4C) = dx Wmp
		bk->relu2_bwd(&dh, &dh, &h);
		if (m->sub_unf) {   /* through ms = m * alpha': dW from ms, dalpha, dm */
			struct tensor al = sub_vec(m, i, 1, 0), dal = sub_vec(m, i, 1, 1);
			struct tensor ms = sub_scale(m, &mm, &al);
			bk->matmul(&gWfc, &dh, &ms, 1, 0, 1, 1);  // dWfc (4C,C) += dh^T ms
			bk->matmul(&dm, &dh, &Wfc, 0, 0, 1, 0);   // dms (N,C) = dh Wfc
			bk->mul_cols_bwd(&dm, &dal, &dm, &mm, &al);  // dm = dms alpha'
		} else {
			if (m->sub) {   /* through W_fc (1 alpha^T): dW, dalpha; W_eff again */
				struct tensor al = sub_vec(m, i, 1, 0), dal = sub_vec(m, i, 1, 1);
				sub_grad(m, l->fc, &dh, &mm, &al, &dal);
				Wfc = sub_fuse(m, l->fc, &al, 0);
			} else {
				bk->matmul(&gWfc, &dh, &mm, 1, 0, 1, 1);  // dWfc (4C,C) += dh^T m
			}
			bk->matmul(&dm, &dh, &Wfc, 0, 0, 1, 0);   // dm (N,C) = dh Wfc
		}
		bk->rmsnorm_bwd(&dx, &dm, &mm, &r2, 1);
		/* attention: x += y Wp^T */
		struct tensor y = att_mat(m, l->y, N), Wp = pw(m, l->proj), gWp = pg(m, l->proj);
		bk->matmul(&gWp, &dx, &y, 1, 0, 1, 1);
		bk->matmul(&dy, &dx, &Wp, 0, 0, 1, 0);
		struct tensor qa = { l->qq, m->adt, 4, { B, T, H, D } };
		struct tensor ka = { l->kk, m->adt, 4, { B, T, H, D } };
		struct tensor va = { l->vv, m->adt, 4, { B, T, H, D } };
		struct tensor ya = { l->y, m->adt, 4, { B, T, H, D } };
		struct tensor dya = { m->dy, m->adt, 4, { B, T, H, D } };
		struct tensor dqa = { m->dq, m->adt, 4, { B, T, H, D } };
		struct tensor dka = { m->dk, m->adt, 4, { B, T, H, D } };
		struct tensor dva = { m->dv, m->adt, 4, { B, T, H, D } };
		struct tensor lse = { l->lse, m->dt, 3, { B, H, T, 1 } };
		bk->attn_bwd(&dqa, &dka, &dva, &dya, &qa, &ka, &va, &ya, &lse, l->window,
			     1.0 / sqrt((double)D));
		/* q: (q_tau) <- rms <- rope;  k: rms <- rope (fused, in place) */
		struct tensor rq = tensor_1d(l->rq, m->dt, N * H), rk = tensor_1d(l->rk, m->dt, N * H);
		struct tensor dq4 = { m->dq, m->adt, 3, { N, H, D, 1 } };
		struct tensor dk4 = { m->dk, m->adt, 3, { N, H, D, 1 } };
		struct tensor q4 = { m->qtau ? l->qn : l->qq, m->adt, 3, { N, H, D, 1 } };
		struct tensor k4 = { l->kk, m->adt, 3, { N, H, D, 1 } };
		if (m->qtau) {
			struct tensor qs = tensor_1d(m->qs, m->dt, H * D);
			struct tensor dqs = tensor_1d(m->dqs, m->dt, H * D);
			qtau_scale(m, i);
			bk->zero(&dqs);
			bk->rope_rmsnorm_bwd(&dq4, &dqs, &dq4, &q4, &rq, &qs, &cs, &sn, T);
			qtau_grad(m, i);
		} else {
			bk->rope_rmsnorm_bwd(&dq4, NULL, &dq4, &q4, &rq, NULL, &cs, &sn, T);
		}
		if (m->rtau)
			rope_tau_grad(m, i, &dq4, &q4, &rq, T);
		bk->rope_rmsnorm_bwd(&dk4, NULL, &dk4, &k4, &rk, NULL, &cs, &sn, T);
		if (m->rtau)
			rope_tau_grad(m, i, &dk4, &k4, &rk, T);
		struct tensor a = norm_mat(m, l->a, N), r1 = tensor_1d(l->r1, m->dt, N);
		struct tensor Wq = pw(m, l->q), Wk = pw(m, l->k), Wv = pw(m, l->v);
		struct tensor gWq = pg(m, l->q), gWk = pg(m, l->k), gWv = pg(m, l->v);
		struct tensor *gw[3] = { &gWq, &gWk, &gWv };   /* dW (C,C) += dX^T a */
		const struct tensor *dqkv[3] = { &dq, &dk, &dv }, *aaa[3] = { &a, &a, &a };
		/* sub_gains unfused: the GEMMs read as = a * alpha; da below is
		 * das, the gradient of as, until alpha is applied */
		struct tensor as = a, al = {0}, dal = {0};
		int gate_scaled = m->sub_unf && m->cfg.sub_form == SUB_FORM_GATE_SCALED;
		if (m->sub) {
			al = sub_vec(m, i, 0, 0);
			dal = sub_vec(m, i, 0, 1);
		}
		if (m->sub_unf) {
			as = sub_scale(m, &a, &al);
			aaa[0] = aaa[1] = aaa[2] = &as;
			matmul_n(m, 3, gw, dqkv, aaa, 1, 0, 1);
		} else if (m->sub) {   /* through W (1 alpha^T): dW, dalpha; the W_eff again */
			sub_grad(m, l->q, &dq, &a, &al, &dal);
			sub_grad(m, l->k, &dk, &a, &al, &dal);
			sub_grad(m, l->v, &dv, &a, &al, &dal);
			Wq = sub_fuse(m, l->q, &al, 0);
			Wk = sub_fuse(m, l->k, &al, m->C);
			Wv = sub_fuse(m, l->v, &al, 2 * (int64_t)m->C);
		} else {
			matmul_n(m, 3, gw, dqkv, aaa, 1, 0, 1);
		}
		bk->matmul(&da, &dq, &Wq, 0, 0, 1, 0);    // da (N,C) = dq Wq + dk Wk + dv Wv
		bk->matmul(&da, &dk, &Wk, 0, 0, 1, 1);
		bk->matmul(&da, &dv, &Wv, 0, 0, 1, 1);
		if (m->sub_unf && !gate_scaled)   /* da = das alpha; dalpha += sum das a */
			bk->mul_cols_bwd(&da, &dal, &da, &a, &al);
		if (l->gate) {
			struct tensor gl = mat(m, l->glog, N, H), dgl = mat(m, m->dglog, N, H);
			struct tensor ve = mat(m, m->t1, N, C), dve = mat(m, m->t2, N, C);
			struct tensor vt = pw(m, l->ve), gvt = pg(m, l->ve);
			struct tensor gs = mat(m, m->gs, N, m->Cg), dgs = mat(m, m->dgs, N, m->Cg);
			struct tensor Wg = pw(m, l->gate), gWg = pg(m, l->gate);
			bk->ve_gate_bwd_rows(&dgl, &dve, &dv, &gl, &vt, idx, round_bf16(m, l->ve),
					     &ve);
			bk->embed_scatter_add(&gvt, &dve, idx, 0);
			bk->cols_get(&gs, gate_scaled ? &as : &a, 0, 0);
			bk->matmul(&gWg, &dgl, &gs, 1, 0, 1, 1);  // dWg (H,Cg) += dglog^T a[:, :Cg]
			bk->matmul(&dgs, &dgl, &Wg, 0, 0, 1, 0);  // (N,Cg)
			bk->cols_add(&da, &dgs, 0);
		}
		if (gate_scaled)   /* the gate's gradient went into das too */
			bk->mul_cols_bwd(&da, &dal, &da, &a, &al);   // da = das alpha
		struct tensor xin = mat(m, l->xin, N, C);
		bk->rmsnorm_bwd(&dx, &da, &a, &r1, 1);
		/* mixing: x = resid*xin + x0l*x0 (+ wtel*x0w) */
		double mc[3];
		mix_coef(m, i, mc);
		struct tensor g[3] = { pg(m, m->resid), pg(m, m->x0l),
				       pg(m, m->wtel ? m->wtel : m->x0l) };
		bk->mix_bwd(&dx, &dx0, m->wtel ? &dx0w : NULL, g, i, &xin, &x0, m->wtel ? &x0w : NULL,
			    mc);
	}
	if (m->rtau)
		for (size_t j = 0; j < m->rtau->numel; j++)
			gadd(m, m->rtau, j, m->rtau_g[j]);
	/* dx is now the gradient into xin[0] = x0 */
	bk->axpby(&dx0, 1, &dx, 1);
	struct tensor r0 = tensor_1d(m->r0, m->dt, N), ds = mat(m, m->da, N, C);
	bk->rmsnorm_bwd(&ds, &dx0, &x0, &r0, 0);   // ds = d(wte rows + OE rows)
	struct tensor gwte = pg(m, m->wte);
	if (m->x0w) {
		struct tensor rw = tensor_1d(m->rw, m->dt, N);
		if (m->cfg.anchor == ANCHOR_SHARED) {
			struct tensor wr = mat(m, m->wrow, N, C), s0 = mat(m, m->s0, N, C);
			struct tensor dw = mat(m, m->t1, N, C);
			bk->zero(&dw);
			bk->rmsnorm_ref_bwd(&dw, &ds, &dx0w, &wr, &s0, &rw, 1);
			bk->embed_scatter_add(&gwte, &dw, idx, 0);
		} else {
			struct tensor dw = mat(m, m->t1, N, C);
			bk->rmsnorm_bwd(&dw, &dx0w, &x0w, &rw, 0);
			bk->embed_scatter_add(&gwte, &dw, idx, 0);
		}
	}
	bk->embed_scatter_add(&gwte, &ds, idx, 0);
	if (m->ntab) {
		int64_t w = C / m->ntab;
		for (int j = 0; j < m->ntab; j++) {
			const int32_t *rows = m->oe_rows + (size_t)j * N;
			struct param *p = m->oe[j];
			if (p->gb) {
				struct tensor gt = tensor_2d(p->gb, TD_BF16, (int64_t)p->rows,
							     (int64_t)p->cols);
				bk->embed_scatter_add(&gt, &ds, rows, j * w);
				bk->count_rows(p->counts, (int64_t)p->rows, rows, N);
			} else {
				struct tensor gt = oe_slots(m, j, rows, N);
				bk->embed_scatter_add(&gt, &ds, m->oe_slots, j * w);
			}
		}
	}
}

static int64_t count_targets(const int32_t *tg, int64_t N)
{
	int64_t c = 0;
	for (int64_t n = 0; n < N; n++)
		c += tg[n] >= 0;
	return c;
}

/* A pass's bracket for the backend (backend.h scope): from the forward to
 * the end of the backward the host writes no matmul operand. */
static void pass_scope(const struct model *m, int begin)
{
	m->bk->scope(begin);
}

/* The forward of the pass of rows [b0, b0 + *Bp) of a B-row micro-batch in
 * passes of P (the batch copied to backend memory first), in a pass scope
 * the caller ends; its token count. */
static int64_t pass_forward(struct model *m, const int32_t *inputs, const int32_t *targets,
			    int b0, int P, int B, int T, int *Bp)
{
	*Bp = B - b0 < P ? B - b0 : P;
	int64_t N = (int64_t)*Bp * T;
	memcpy(m->idx, inputs + (size_t)b0 * T, (size_t)N * sizeof(int32_t));
	memcpy(m->tgt, targets + (size_t)b0 * T, (size_t)N * sizeof(int32_t));
	pass_scope(m, 1);
	forward(m, m->idx, *Bp, T);
	return N;
}

int model_forward_backward(struct model *m, const int32_t *inputs, const int32_t *targets,
			   int B, int T, double loss_scale, double *loss, struct err *e)
{
	if (check_tokens(m, inputs, targets, B, T, e) != 0)
		return -1;
	int64_t valid = count_targets(targets, (int64_t)B * T);
	int P = model_pass_rows(m, B, T);
	act_reserve(m, P, T);
	double dscale = valid ? loss_scale / (double)valid : 0, sum = 0;
	for (int b0 = 0, Bp; b0 < B; b0 += P) {
		int64_t N = pass_forward(m, inputs, targets, b0, P, B, T, &Bp);
		head(m, m->tgt, N, dscale);
		if (dscale == 0) {
			/* nothing to differentiate: zero upstream gradient (counts still move) */
			struct tensor dhN = mat(m, m->dy, N, m->C);
			m->bk->zero(&dhN);
		}
		backward(m, m->idx, Bp, T);
		pass_scope(m, 0);
		sum += loss_sum(m, N, NULL);
	}
	if (P < B)
		m->have_fwd = 0;
	*loss = valid ? sum / (double)valid : 0;
	/* masked q_tau entries never carry gradient */
	if (m->qtau && m->qtau->mask)
		for (size_t j = 0; j < m->qtau->numel; j++)
			if (m->qtau->mask[j]) {
				m->qtau->g[j] = 0;
				if (m->qtau->g64)
					m->qtau->g64[j] = 0;
			}
	return 0;
}

int model_forward_loss(struct model *m, const int32_t *inputs, const int32_t *targets,
		       int B, int T, float *losses, double *loss, struct err *e)
{
	if (check_tokens(m, inputs, targets, B, T, e) != 0)
		return -1;
	int64_t valid = count_targets(targets, (int64_t)B * T);
	int P = model_pass_rows(m, B, T);
	act_reserve(m, P, T);
	double sum = 0;
	for (int b0 = 0, Bp; b0 < B; b0 += P) {
		int64_t N = pass_forward(m, inputs, targets, b0, P, B, T, &Bp);
		head(m, m->tgt, N, 0);
		pass_scope(m, 0);
		sum += loss_sum(m, N, losses ? losses + (size_t)b0 * T : NULL);
	}
	if (P < B)
		m->have_fwd = 0;
	*loss = valid ? sum / (double)valid : 0;
	return 0;
}

int model_save(struct model *m, const char *path, const char *const *meta, struct err *e)
{
	model_sync_f32(m);
	return checkpoint_save(&m->table, path, meta, e);
}
