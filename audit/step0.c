/* step0.c: the step-0 audit and the step-0 trajectory (see step0.h).
 *
 * Implements: the first optimizer batch as the trainer draws it, the
 * gradient on the scalar families at step 0 in float64 at eps in {0, 2^-23,
 * 1e-6} (and the config's eps) and in the trainer's CPU arithmetic (fp32 with
 * bf16-stored embeddings and bf16 RoPE tables), the closed form (step0.h)
 * computed apart from the model's backward, the AdamW displacement of the
 * trainer's own optimizer step 0, and the 12-step trajectory per step-0 mode.
 * Leaves out: the CUDA bf16 autocast path (the audit always
 * runs the CPU reference backend), scalar families other than the four
 * routing/residual ones (q_tau is not a step-0 quantity).
 * Reference: supkit-audit(1), step0 and trajectory; paper 001 section
 * 4.5.2 (results/step0_trajectory_audit.json).
 */
#define _GNU_SOURCE
#include "audit/step0.h"

#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cblas.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/progress.h"
#include "data/loader.h"
#include "trainer/model.h"
#include "trainer/optim.h"
#include "trainer/paramspec.h"

const double step0_eps[STEP0_NEPS] = {0.0, 1.1920928955078125e-07, 1e-6};
const char *const step0_eps_label[STEP0_NEPS] = {"0", "2^-23", "1e-6"};

static const enum param_kind fam_kind[S0_NFAM] = {PK_RESID_LAMBDAS, PK_X0_LAMBDAS, PK_WTE_LAMBDAS,
						   PK_OUT_LAMBDAS};

const char *step0_family_name(int f)
{
	return f >= 0 && f < S0_NFAM ? param_kind_name(fam_kind[f]) : "?";
}

/* ---- config and shards ---- */

int step0_config_load(const char *path, const char *const *sets, int n_sets, const char *init_from,
		      struct config *c, struct err *e)
{
	config_defaults(c);
	if (config_load_file(c, path, e) < 0)
		return -1;
	for (int i = 0; i < n_sets; i++)
		if (config_set(c, sets[i], e) < 0)
			return -1;
	if (init_from) {
		if (strlen(init_from) >= sizeof c->init_from)
			return err_set(e, EXIT_USAGE, "--init-from: path too long");
		snprintf(c->init_from, sizeof c->init_from, "%s", init_from);
	}
	return config_validate(c, e);
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void shards_push(char ***v, int *n, const char *s)
{
	*v = xrealloc(*v, (size_t)(*n + 1) * sizeof **v);
	(*v)[(*n)++] = xstrdup(s);
}

static int shards_from_dir(const char *dir, char ***v, int *n, struct err *e)
{
	char *pat = path_join(dir, "train_*.bin");
	glob_t g;
	int r = glob(pat, 0, NULL, &g);
	free(pat);
	if (r == GLOB_NOMATCH)
		return err_set(e, EXIT_USAGE, "'%s' holds no train_*.bin shards", dir);
	if (r != 0)
		return err_set(e, EXIT_SYS, "cannot list the shards in '%s'", dir);
	for (size_t i = 0; i < g.gl_pathc; i++)
		shards_push(v, n, g.gl_pathv[i]);
	globfree(&g);
	return 0;
}

int step0_shards_resolve(const char *const *paths, int n, const char *data_dir, char ***out,
			 int *n_out, struct err *e)
{
	char **v = NULL;
	int nv = 0;
	*out = NULL;
	*n_out = 0;
	if (n == 0) {
		if (!data_dir || !data_dir[0])
			return err_set(e, EXIT_USAGE, "no data: give --data (a folder of train_*.bin "
					"shards or shard files) or set data_dir in the config");
		if (!is_dir(data_dir))
			return err_set(e, EXIT_USAGE, "data_dir '%s' is not a folder", data_dir);
		if (shards_from_dir(data_dir, &v, &nv, e) < 0)
			return -1;
	}
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (stat(paths[i], &st) != 0) {
			step0_shards_free(v, nv);
			return err_errno(e, EXIT_USAGE, "cannot open '%s'", paths[i]);
		}
		if (S_ISDIR(st.st_mode)) {
			if (shards_from_dir(paths[i], &v, &nv, e) < 0) {
				step0_shards_free(v, nv);
				return -1;
			}
		} else {
			shards_push(&v, &nv, paths[i]);
		}
	}
	*out = v;
	*n_out = nv;
	return 0;
}

void step0_shards_free(char **shards, int n)
{
	for (int i = 0; i < n; i++)
		free(shards[i]);
	free(shards);
}

/* ---- the batch ---- */

int step0_batch_load(const struct config *c, const char *const *shards, int n, int64_t tokens,
		     struct step0_batch *b, struct err *e)
{
	memset(b, 0, sizeof *b);
	const int T = c->seq_len, B = c->batch_rows, K = c->grad_accum;
	int64_t full = (int64_t)K * B * T;
	if (tokens < 0 || tokens > full)
		return err_set(e, EXIT_USAGE, "--tokens %lld: the first batch holds %lld tokens "
			       "(grad_accum %d x batch_rows %d x seq_len %d)", (long long)tokens,
			       (long long)full, K, B, T);
	if (tokens == 0)
		tokens = full;
	if (tokens >= T && tokens % T)
		return err_set(e, EXIT_USAGE, "--tokens %lld: not a multiple of seq_len %d (or fewer than it)",
			       (long long)tokens, T);
	struct loader ld;
	if (loader_open(shards, n, T, B, c->seed, &ld, e) < 0)
		return -1;
	if (ld.vocab_size != (uint32_t)c->vocab_size) {
		err_set(e, EXIT_USAGE, "the shards ('%s') are for vocab size %u, the config says %d", shards[0],
			ld.vocab_size, c->vocab_size);
		loader_close(&ld);
		return -1;
	}
	/* draw the K micro-batches, then keep the first rows (or tokens) */
	size_t N = (size_t)B * T;
	int32_t *in = xmalloc((size_t)K * N * sizeof *in), *tg = xmalloc((size_t)K * N * sizeof *tg);
	for (int k = 0; k < K; k++)
		loader_next(&ld, in + k * N, tg + k * N);
	loader_close(&ld);
	int Tk = tokens < T ? (int)tokens : T;
	int rows = tokens < T ? 1 : (int)(tokens / T);
	b->T = Tk;
	b->tokens = tokens;
	b->n_micro = (rows + B - 1) / B;
	b->rows = xcalloc((size_t)b->n_micro, sizeof *b->rows);
	b->scale = xcalloc((size_t)b->n_micro, sizeof *b->scale);
	b->inputs = xcalloc((size_t)b->n_micro, sizeof *b->inputs);
	b->targets = xcalloc((size_t)b->n_micro, sizeof *b->targets);
	for (int k = 0, r0 = 0; k < b->n_micro; k++) {
		int rk = rows - r0 < B ? rows - r0 : B;
		b->rows[k] = rk;
		b->scale[k] = (double)rk / rows;
		b->inputs[k] = xmalloc((size_t)rk * Tk * sizeof(int32_t));
		b->targets[k] = xmalloc((size_t)rk * Tk * sizeof(int32_t));
		for (int r = 0; r < rk; r++) {   /* row r0 + r of the batch: row (r0+r) of T */
			size_t src = (size_t)(r0 + r) * T;
			memcpy(b->inputs[k] + (size_t)r * Tk, in + src, (size_t)Tk * sizeof(int32_t));
			memcpy(b->targets[k] + (size_t)r * Tk, tg + src, (size_t)Tk * sizeof(int32_t));
		}
		r0 += rk;
	}
	free(in);
	free(tg);
	return 0;
}

void step0_batch_free(struct step0_batch *b)
{
	for (int k = 0; k < b->n_micro; k++) {
		free(b->inputs[k]);
		free(b->targets[k]);
	}
	free(b->inputs);
	free(b->targets);
	free(b->rows);
	free(b->scale);
	memset(b, 0, sizeof *b);
}

/* ---- models and evaluations ---- */

static struct config run_config(const struct config *c, int fp64, double eps)
{
	struct config r = *c;
	r.dtype = fp64 ? DTYPE_F64 : DTYPE_F32;
	r.backend = BACKEND_CPU;
	if (eps >= 0) {
		r.norm_eps = eps;
		if (r.anchor == ANCHOR_SHARED)
			r.shared_eps = eps;
	}
	return r;
}

int step0_model_create(const struct config *c, int fp64, double eps, struct model **m,
		       struct err *e)
{
	struct config r = run_config(c, fp64, eps);
	if (c->threads > 0)
		openblas_set_num_threads(c->threads);
	return model_create(&r, m, e);
}

int step0_batch_loss(struct model *m, const struct step0_batch *b, double *loss, struct err *e)
{
	double s = 0;
	for (int k = 0; k < b->n_micro; k++) {
		double l;
		if (model_forward_loss(m, b->inputs[k], b->targets[k], b->rows[k], b->T, NULL, &l, e) < 0)
			return -1;
		s += b->scale[k] * l;
	}
	*loss = s;
	return 0;
}

/* Index of the parameter of kind k in m's table, or -1. */
static long param_of_kind(struct model *m, enum param_kind k)
{
	size_t n;
	const struct param_spec *sp = model_spec(m, &n);
	for (size_t i = 0; i < n; i++)
		if (sp[i].kind == k)
			return (long)i;
	return -1;
}

/* The parameter of scalar family f in m, or NULL when m has none; *pi (when
 * pi is not NULL) its index, -1 when none. */
static struct param *fam_param(struct model *m, int f, long *pi)
{
	long i = param_of_kind(m, fam_kind[f]);
	if (pi)
		*pi = i;
	return i < 0 ? NULL : &model_params(m)->p[i];
}

static double pval(const struct param *p, int fp64, size_t i)
{
	return fp64 ? p->w64[i] : p->w[i];
}

static void eval_alloc(struct step0_eval *ev, struct model *m, int with_disp)
{
	for (int f = 0; f < S0_NFAM; f++) {
		struct param *p = fam_param(m, f, NULL);
		if (!p)
			continue;
		ev->n[f] = p->numel;
		ev->value[f] = xcalloc(p->numel, sizeof(double));
		ev->grad[f] = xcalloc(p->numel, sizeof(double));
		if (with_disp)
			ev->disp[f] = xcalloc(p->numel, sizeof(double));
		for (size_t i = 0; i < p->numel; i++)
			ev->value[f][i] = pval(p, ev->fp64, i);
	}
}

int step0_eval_run(const struct config *c, const struct step0_batch *b, int fp64, double eps,
		   struct step0_eval *ev, struct err *e)
{
	memset(ev, 0, sizeof *ev);
	struct config r = run_config(c, fp64, eps);
	struct model *m = NULL;
	struct optim *o = NULL;
	int rc = -1;
	ev->fp64 = fp64;
	ev->eps = r.norm_eps;
	if (step0_model_create(&r, fp64, -1, &m, e) < 0)
		return -1;
	model_zero_grad(m);
	for (int k = 0; k < b->n_micro; k++) {
		double l;
		if (model_forward_backward(m, b->inputs[k], b->targets[k], b->rows[k], b->T, b->scale[k], &l, e) < 0)
			goto out;
		ev->loss += b->scale[k] * l;
	}
	eval_alloc(ev, m, 1);
	struct param_table *t = model_params(m);
	for (int f = 0; f < S0_NFAM; f++) {
		struct param *p = fam_param(m, f, NULL);
		if (!p)
			continue;
		for (size_t i = 0; i < p->numel; i++)
			ev->grad[f][i] = fp64 ? p->g64[i] : p->g[i];
	}
	/* the trainer's optimizer step 0 on this gradient */
	if (optim_create(&r, t, fp64, &o, e) < 0 || optim_step(o, 0, e) < 0)
		goto out;
	for (int f = 0; f < S0_NFAM; f++) {
		long pi;
		struct param *p = fam_param(m, f, &pi);
		if (!p)
			continue;
		for (size_t i = 0; i < p->numel; i++)
			ev->disp[f][i] = pval(p, fp64, i) - ev->value[f][i];
		ev->count[f] = optim_adamw_count(o, (size_t)pi);
	}
	rc = 0;
out:
	optim_free(o);
	model_free(m);
	if (rc < 0)
		step0_eval_free(ev);
	return rc;
}

void step0_eval_free(struct step0_eval *ev)
{
	for (int f = 0; f < S0_NFAM; f++) {
		free(ev->value[f]);
		free(ev->grad[f]);
		free(ev->disp[f]);
		free(ev->mag[f]);
	}
	memset(ev, 0, sizeof *ev);
}

/* ---- the closed form (step0.h), apart from the model's backward ---- */

/* 1 when every entry of the parameters of kind k is zero; else names one. */
static int kind_all_zero(struct model *m, enum param_kind k, struct err *e)
{
	size_t n;
	const struct param_spec *sp = model_spec(m, &n);
	struct param_table *t = model_params(m);
	for (size_t i = 0; i < n; i++) {
		if (sp[i].kind != k)
			continue;
		for (size_t j = 0; j < t->p[i].numel; j++)
			if (t->p[i].w64[j] != 0) {
				err_set(e, EXIT_CHECK, "not the step-0 state: '%s' is not zero (entry %zu), so "
					"the closed form does not apply", t->p[i].name, j);
				return 0;
			}
	}
	return 1;
}

int step0_closed_form(const struct config *c, const struct step0_batch *b, double eps,
		      struct step0_eval *ev, struct err *e)
{
	memset(ev, 0, sizeof *ev);
	struct model *m;
	if (step0_model_create(c, 1, eps, &m, e) < 0)
		return -1;
	const struct config *mc = model_config(m);
	if (!kind_all_zero(m, PK_ATTN_PROJ, e) || !kind_all_zero(m, PK_MLP_PROJ, e) ||
	    !kind_all_zero(m, PK_OE_TABLE, e)) {
		model_free(m);
		return 1;
	}
	ev->fp64 = 1;
	ev->eps = mc->norm_eps;
	eval_alloc(ev, m, 0);
	for (int f = 0; f < S0_NFAM; f++)
		if (ev->n[f])
			ev->mag[f] = xcalloc(ev->n[f], sizeof(double));
	struct param_table *t = model_params(m);
	const double *wte = t->p[param_of_kind(m, PK_WTE)].w64;
	const double *lm = t->p[param_of_kind(m, PK_LM_HEAD)].w64;
	const int L = mc->depth, C = config_model_dim(mc), V = mc->vocab_size;
	const double en = mc->norm_eps, cap = mc->softcap;
	const double *res = ev->value[S0_RESID], *x0l = ev->value[S0_X0];
	const double *wl = ev->value[S0_WTE], *ol = ev->value[S0_OUT];
	double es = mc->anchor == ANCHOR_SHARED ? mc->shared_eps : en;
	enum { NB = 256 };   /* tokens a block: two dgemm a block */
	double *X0 = xmalloc((size_t)NB * C * sizeof *X0), *Z = xmalloc((size_t)NB * V * sizeof *Z);
	double *U = xmalloc((size_t)NB * C * sizeof *U), *aprev = xmalloc((size_t)L * sizeof *aprev);
	double *P = xmalloc((size_t)L * sizeof *P), *tok = xmalloc((size_t)NB * 4 * sizeof *tok);
	int *ys = xmalloc((size_t)NB * sizeof *ys);
	for (int i = L - 1; i >= 0; i--)
		P[i] = i == L - 1 ? 1.0 : P[i + 1] * res[i + 1];
	for (int k = 0; k < b->n_micro; k++) {
		int64_t NT = (int64_t)b->rows[k] * b->T, cnt = 0;
		for (int64_t n = 0; n < NT; n++)
			cnt += b->targets[k][n] >= 0;
		if (!cnt)
			continue;
		double wt = b->scale[k] / (double)cnt;
		for (int64_t n0 = 0; n0 < NT;) {
			/* gather a block of tokens with targets: x0 rows and per-token scalars */
			int nb = 0;
			for (; n0 < NT && nb < NB; n0++) {
				int y = b->targets[k][n0];
				if (y < 0)
					continue;
				const double *w = wte + (size_t)b->inputs[k][n0] * C;
				double *x0 = X0 + (size_t)nb * C, m2 = 0, q = 0;
				for (int j = 0; j < C; j++)
					m2 += w[j] * w[j];
				m2 /= C;
				double sd = sqrt(m2 + en);
				for (int j = 0; j < C; j++) {
					x0[j] = w[j] / sd;
					q += x0[j] * x0[j];
				}
				q /= C;
				double cw = wl ? sd / sqrt(m2 + es) : 0;   /* x0_wte = cw x0 */
				double a = 1;
				for (int i = 0; i < L; i++)
					a = res[i] * a + x0l[i] + (wl ? wl[i] * cw : 0);
				double alpha = a + (ol ? ol[0] + ol[1] * cw : 0);
				double *tk = tok + (size_t)nb * 4;
				tk[0] = cw;
				tk[1] = alpha;
				tk[2] = sqrt(alpha * alpha * q + en);   /* r */
				ys[nb++] = y;
			}
			if (!nb)
				break;
			/* Z = X0 lm^T (nb x V); logits = cap tanh(Z alpha / r / cap) */
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, V, C, 1.0, X0, C, lm, C, 0.0, Z, V);
			for (int ti = 0; ti < nb; ti++) {
				double *z = Z + (size_t)ti * V, sc = tok[ti * 4 + 1] / tok[ti * 4 + 2], zmax = -INFINITY;
				for (int v = 0; v < V; v++) {
					z[v] = cap * tanh(z[v] * sc / cap);
					zmax = z[v] > zmax ? z[v] : zmax;
				}
				double se = 0;
				for (int v = 0; v < V; v++)
					se += exp(z[v] - zmax);
				double lse = zmax + log(se);
				ev->loss += wt * (lse - z[ys[ti]]);
				/* d loss / d (pre-softcap logit) */
				for (int v = 0; v < V; v++) {
					double p = exp(z[v] - lse), th = z[v] / cap;
					z[v] = wt * (p - (v == ys[ti])) * (1 - th * th);
				}
			}
			/* U = dZ lm (nb x C): u = d loss / d N for each token */
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nb, C, V, 1.0, Z, V, lm, C, 0.0, U, C);
			for (int ti = 0; ti < nb; ti++) {
				const double *u = U + (size_t)ti * C, *x0 = X0 + (size_t)ti * C;
				double cw = tok[ti * 4], r = tok[ti * 4 + 2], ux = 0;
				for (int j = 0; j < C; j++)
					ux += u[j] * x0[j];
				double D = en * ux / (r * r * r), Mg = fabs(ux) / r, a = 1;
				for (int i = 0; i < L; i++) {
					aprev[i] = a;
					a = res[i] * a + x0l[i] + (wl ? wl[i] * cw : 0);
				}
				for (int i = 0; i < L; i++) {
					ev->grad[S0_RESID][i] += P[i] * aprev[i] * D;
					ev->grad[S0_X0][i] += P[i] * D;
					ev->mag[S0_RESID][i] += fabs(P[i] * aprev[i]) * Mg;
					ev->mag[S0_X0][i] += fabs(P[i]) * Mg;
					if (wl) {
						ev->grad[S0_WTE][i] += P[i] * cw * D;
						ev->mag[S0_WTE][i] += fabs(P[i] * cw) * Mg;
					}
				}
				if (ol) {
					ev->grad[S0_OUT][0] += D;
					ev->grad[S0_OUT][1] += cw * D;
					ev->mag[S0_OUT][0] += Mg;
					ev->mag[S0_OUT][1] += fabs(cw) * Mg;
				}
			}
		}
	}
	free(X0);
	free(Z);
	free(U);
	free(aprev);
	free(tok);
	free(ys);
	free(P);
	model_free(m);
	return 0;
}

/* ---- the audit record ---- */

static cJSON *num_array(const double *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
	return a;
}

static cJSON *eval_json(const struct step0_eval *ev, const char *label)
{
	cJSON *o = cJSON_CreateObject(), *g = cJSON_AddObjectToObject(o, "grad");
	cJSON_AddNumberToObject(o, "eps", ev->eps);
	cJSON_AddStringToObject(o, "label", label);
	cJSON_AddNumberToObject(o, "loss", ev->loss);
	cJSON *d = ev->disp[S0_RESID] ? cJSON_AddObjectToObject(o, "displacement") : NULL;
	cJSON *s = d ? cJSON_AddObjectToObject(o, "adamw_step") : NULL;
	for (int f = 0; f < S0_NFAM; f++) {
		if (!ev->n[f])
			continue;
		cJSON_AddItemToObject(g, step0_family_name(f), num_array(ev->grad[f], ev->n[f]));
		if (d) {
			cJSON_AddItemToObject(d, step0_family_name(f), num_array(ev->disp[f], ev->n[f]));
			cJSON_AddNumberToObject(s, step0_family_name(f), (double)ev->count[f]);
		}
	}
	return o;
}

static int sgn(double x)
{
	return (x > 0) - (x < 0);
}

static void progress_note(int quiet, const char *what)
{
	if (!quiet)
		fprintf(stderr, "%s: %s\n", err_prog ? err_prog : "supkit-audit step0", what);
}

cJSON *step0_audit(const struct config *c, const struct step0_batch *b,
		   const char *const *shard_names, int n_shards, int quiet, struct err *e)
{
	struct step0_eval f64[STEP0_NEPS], cf[STEP0_NEPS + 1], lo, ref;
	int nf = 0, ncf = 0, ref_at = -1, have_lo = 0, have_ref = 0;
	cJSON *rep = NULL;
	char sha[65], lab[64];
	memset(&lo, 0, sizeof lo);
	memset(&ref, 0, sizeof ref);
	for (int i = 0; i < STEP0_NEPS; i++) {
		snprintf(lab, sizeof lab, "float64 at eps = %s", step0_eps_label[i]);
		progress_note(quiet, lab);
		if (step0_eval_run(c, b, 1, step0_eps[i], &f64[nf], e) < 0)
			goto out;
		nf++;
		if (step0_eps[i] == c->norm_eps && (c->anchor != ANCHOR_SHARED || c->shared_eps == c->norm_eps))
			ref_at = i;
	}
	if (ref_at < 0) {
		progress_note(quiet, "float64 at the config's eps");
		if (step0_eval_run(c, b, 1, c->norm_eps, &ref, e) < 0)
			goto out;
		have_ref = 1;
	}
	cJSON *cfa = cJSON_CreateArray(), *cfskip = NULL;
	for (int i = 0; i <= STEP0_NEPS; i++) {
		if (i == STEP0_NEPS ? !have_ref : step0_eps[i] == 0)
			continue;
		struct err ce;
		err_clear(&ce);
		int r = step0_closed_form(c, b, i == STEP0_NEPS ? -1 : step0_eps[i], &cf[ncf], &ce);
		if (r < 0) {
			*e = ce;
			cJSON_Delete(cfa);
			goto out;
		}
		if (r == 1) {
			cfskip = cJSON_CreateString(ce.msg);
			break;
		}
		cJSON_AddItemToArray(cfa, eval_json(&cf[ncf], i == STEP0_NEPS ? "config" : step0_eps_label[i]));
		ncf++;
	}
	progress_note(quiet, "the trainer's arithmetic (fp32, bf16 embeddings and RoPE tables)");
	if (step0_eval_run(c, b, 0, -1, &lo, e) < 0) {
		cJSON_Delete(cfa);
		cJSON_Delete(cfskip);
		goto out;
	}
	have_lo = 1;

	rep = cJSON_CreateObject();
	config_sha256(c, sha);
	cJSON_AddStringToObject(rep, "arm", c->arm);
	cJSON_AddStringToObject(rep, "config_sha256", sha);
	cJSON_AddNumberToObject(rep, "depth", c->depth);
	cJSON_AddNumberToObject(rep, "seed", (double)c->seed);
	cJSON_AddNumberToObject(rep, "norm_eps", c->norm_eps);
	cJSON_AddStringToObject(rep, "init", c->init_from[0] ? c->init_from : "seed");
	cJSON_AddNumberToObject(rep, "tokens", (double)b->tokens);
	cJSON_AddNumberToObject(rep, "micro_steps", b->n_micro);
	cJSON_AddNumberToObject(rep, "seq_len", b->T);
	cJSON *sh = cJSON_AddArrayToObject(rep, "shards");
	for (int i = 0; shard_names && i < n_shards; i++)
		cJSON_AddItemToArray(sh, cJSON_CreateString(shard_names[i]));
	cJSON *fa = cJSON_AddArrayToObject(rep, "float64");
	for (int i = 0; i < nf; i++)
		cJSON_AddItemToArray(fa, eval_json(&f64[i], step0_eps_label[i]));
	if (have_ref)
		cJSON_AddItemToArray(fa, eval_json(&ref, "config"));
	if (cfskip) {
		cJSON_Delete(cfa);
		cJSON_AddItemToObject(rep, "closed_form_skipped", cfskip);
	} else {
		cJSON_AddItemToObject(rep, "closed_form", cfa);
	}
	cJSON *tr = eval_json(&lo, "config");
	cJSON_AddStringToObject(tr, "arithmetic", c->logits == LOGITS_BF16
				? "cpu fp32, bf16-stored embeddings, bf16 rope tables, bf16 logits"
				: "cpu fp32, bf16-stored embeddings, bf16 rope tables, fp32 logits");
	cJSON_AddItemToObject(rep, "trainer", tr);

	/* the comparison at the config's eps */
	const struct step0_eval *R = have_ref ? &ref : &f64[ref_at];
	cJSON *cmp = cJSON_AddObjectToObject(rep, "comparison");
	cJSON_AddStringToObject(cmp, "reference", have_ref ? "config" : step0_eps_label[ref_at]);
	int agree = 0, total = 0;
	for (int f = 0; f < S0_NFAM; f++) {
		if (!R->n[f])
			continue;
		cJSON *arr = cJSON_AddArrayToObject(cmp, step0_family_name(f));
		for (size_t i = 0; i < R->n[f]; i++) {
			cJSON *o = cJSON_CreateObject();
			double g64 = R->grad[f][i], gl = lo.grad[f][i];
			int ag = sgn(g64) == sgn(gl);
			agree += ag;
			total++;
			cJSON_AddNumberToObject(o, "index", (double)i);
			cJSON_AddNumberToObject(o, "value", R->value[f][i]);
			cJSON_AddNumberToObject(o, "float64", g64);
			cJSON_AddNumberToObject(o, "bf16", gl);
			cJSON_AddNumberToObject(o, "ratio", g64 != 0 ? gl / g64 : NAN);
			cJSON_AddBoolToObject(o, "sign_agree", ag);
			cJSON_AddNumberToObject(o, "displacement_float64", R->disp[f][i]);
			cJSON_AddNumberToObject(o, "displacement_bf16", lo.disp[f][i]);
			cJSON_AddItemToArray(arr, o);
		}
	}
	cJSON_AddNumberToObject(cmp, "sign_agree", agree);
	cJSON_AddNumberToObject(cmp, "scalars", total);
out:
	for (int i = 0; i < nf; i++)
		step0_eval_free(&f64[i]);
	for (int i = 0; i < ncf; i++)
		step0_eval_free(&cf[i]);
	if (have_ref)
		step0_eval_free(&ref);
	if (have_lo)
		step0_eval_free(&lo);
	return rep;
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The gradient of family `fam` index i in the eval object whose label is lab. */
static double grad_at(const cJSON *arr, const char *lab, const char *fam, int i)
{
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "label");
		if (!cJSON_IsString(l) || strcmp(l->valuestring, lab))
			continue;
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "grad"), fam);
		return cJSON_IsArray(g) && i < cJSON_GetArraySize(g) ? cJSON_GetArrayItem(g, i)->valuedouble : NAN;
	}
	return NAN;
}

void step0_print(FILE *f, const cJSON *rep)
{
	const cJSON *fa = cJSON_GetObjectItemCaseSensitive(rep, "float64");
	const cJSON *cmp = cJSON_GetObjectItemCaseSensitive(rep, "comparison");
	const cJSON *cf = cJSON_GetObjectItemCaseSensitive(rep, "closed_form");
	const cJSON *cfs = cJSON_GetObjectItemCaseSensitive(rep, "closed_form_skipped");
	fprintf(f, "step-0 audit: arm %s, seed %.0f, depth %.0f, %.0f tokens in %.0f micro-steps, config eps %.17g\n",
		cJSON_GetObjectItemCaseSensitive(rep, "arm")->valuestring, jnum(rep, "seed"), jnum(rep, "depth"),
		jnum(rep, "tokens"), jnum(rep, "micro_steps"), jnum(rep, "norm_eps"));
	fprintf(f, "gradient of the loss at step 0: float64 at eps = 0, 2^-23, 1e-6; bf16 = the trainer's "
		"CPU arithmetic at the config's eps;\nratio and sign against float64 at the config's eps (%s); "
		"displacement = the trainer's optimizer step 0\n\n",
		cJSON_GetObjectItemCaseSensitive(cmp, "reference")->valuestring);
	fprintf(f, "%-16s %10s %11s %11s %11s %11s %11s %5s %12s %12s\n", "scalar", "value", "f64 eps=0",
		"f64 2^-23", "f64 1e-6", "bf16", "ratio", "sign", "disp f64", "disp bf16");
	for (int fm = 0; fm < S0_NFAM; fm++) {
		const char *name = step0_family_name(fm);
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(cmp, name), *o;
		if (!arr)
			continue;
		int i = 0;
		cJSON_ArrayForEach(o, arr)
		{
			char nm[48];
			snprintf(nm, sizeof nm, "%s[%d]", name, i);
			fprintf(f, "%-16s %10.6g %11.3e %11.3e %11.3e %11.3e %11.4g %5s %12.5g %12.5g\n", nm,
				jnum(o, "value"), grad_at(fa, "0", name, i), grad_at(fa, "2^-23", name, i),
				grad_at(fa, "1e-6", name, i), jnum(o, "bf16"), jnum(o, "ratio"),
				cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "sign_agree")) ? "same" : "DIFF",
				jnum(o, "displacement_float64"), jnum(o, "displacement_bf16"));
			i++;
		}
	}
	fprintf(f, "\nsign agreement: %.0f of %.0f scalars\n", jnum(cmp, "sign_agree"), jnum(cmp, "scalars"));
	if (cfs) {
		fprintf(f, "closed form: %s\n", cfs->valuestring);
	} else if (cf) {
		double worst = 0;
		const cJSON *o;
		cJSON_ArrayForEach(o, cf)
		{
			const char *lab = cJSON_GetObjectItemCaseSensitive(o, "label")->valuestring;
			for (int fm = 0; fm < S0_NFAM; fm++) {
				const char *name = step0_family_name(fm);
				const cJSON *g = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "grad"), name);
				for (int i = 0; g && i < cJSON_GetArraySize(g); i++) {
					double a = cJSON_GetArrayItem(g, i)->valuedouble, m = grad_at(fa, lab, name, i);
					double rel = fabs(m - a) / (fabs(a) > 0 ? fabs(a) : 1);
					if (rel > worst)
						worst = rel;
				}
			}
		}
		fprintf(f, "closed form vs float64 backward at eps > 0: largest relative difference %.3g\n",
			worst);
	}
}

/* ---- the trajectory ---- */

static const enum cfg_step0 traj_modes[] = {STEP0_NONE, STEP0_NOSTEP0, STEP0_MOM_ONLY_NODISP,
					    STEP0_DISP_ONLY_NOMOM, STEP0_DISP_STEPCOUNT_NOMOM,
					    STEP0_NOSTEP0_ALL};
static const char *const traj_names[] = {"none", "nostep0", "mom_only_nodisp", "disp_only_nomom",
					 "disp_stepcount_nomom", "nostep0_all"};
#define TRAJ_NMODES 6



static cJSON *values_json(struct model *m, int fp64, int grad)
{
	cJSON *o = cJSON_CreateObject();
	for (int f = 0; f < S0_NFAM; f++) {
		struct param *p = fam_param(m, f, NULL);
		if (!p)
			continue;
		cJSON *a = cJSON_AddArrayToObject(o, step0_family_name(f));
		for (size_t i = 0; i < p->numel; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(grad ? (fp64 ? p->g64[i] : p->g[i])
								       : pval(p, fp64, i)));
	}
	return o;
}

static int traj_mode(const struct config *c0, int mi, const char *const *shards, int n_shards,
		     int steps, int quiet, cJSON *runs, struct err *e)
{
	struct config c = *c0;
	int switched = 0;
	c.step0 = traj_modes[mi];
	c.backend = BACKEND_CPU;
	if (c.step0 != STEP0_NONE && c.step0 != STEP0_NOSTEP0_ALL && !c.wte_lambdas) {
		c.wte_lambdas = 1;
		switched = 1;
	}
	if (config_validate(&c, e) < 0)
		return -1;
	int fp64 = c.dtype == DTYPE_F64, rc = -1;
	struct loader ld;
	struct model *m = NULL;
	struct optim *o = NULL;
	int32_t *in = NULL, *tg = NULL;
	if (loader_open(shards, n_shards, c.seq_len, c.batch_rows, c.seed, &ld, e) < 0)
		return -1;
	if (ld.vocab_size != (uint32_t)c.vocab_size) {
		err_set(e, EXIT_USAGE, "the shards ('%s') are for vocab size %u, the config says %d", shards[0],
			ld.vocab_size, c.vocab_size);
		goto out;
	}
	if (step0_model_create(&c, fp64, -1, &m, e) < 0 || optim_create(&c, model_params(m), fp64, &o, e) < 0)
		goto out;
	const int B = c.batch_rows, T = c.seq_len, K = c.grad_accum;
	size_t N = (size_t)B * T;
	in = xmalloc(N * sizeof *in);
	tg = xmalloc(N * sizeof *tg);
	cJSON *run = cJSON_CreateObject();
	cJSON_AddItemToArray(runs, run);
	cJSON_AddStringToObject(run, "mode", traj_names[mi]);
	cJSON_AddBoolToObject(run, "wte_lambdas_switched_on", switched);
	cJSON *sa = cJSON_AddArrayToObject(run, "steps");
	for (int s = 0; s < steps; s++) {
		if (!quiet)
			fprintf(stderr, "%s: trajectory %s step %d/%d\n", err_prog ? err_prog : "supkit-audit",
				traj_names[mi], s, steps);
		model_zero_grad(m);
		double lsum = 0;
		for (int k = 0; k < K; k++) {
			double loss;
			loader_next(&ld, in, tg);
			if (model_forward_backward(m, in, tg, B, T, 1.0 / K, &loss, e) < 0)
				goto out;
			if (!isfinite(loss) || loss > c.max_loss) {
				err_set(e, EXIT_CHECK, "mode %s, step %d: loss %g is %s (fast-fail)", traj_names[mi], s,
					loss, isfinite(loss) ? "above max_loss" : "not a number");
				goto out;
			}
			lsum += loss;
		}
		cJSON *so = cJSON_CreateObject();
		cJSON_AddItemToArray(sa, so);
		cJSON_AddNumberToObject(so, "step", s);
		cJSON_AddNumberToObject(so, "loss", lsum / K);
		struct optim_sched sc;
		optim_schedule(&c, s, &sc);
		cJSON_AddNumberToObject(so, "lrm", sc.lrm);
		cJSON_AddItemToObject(so, "value", values_json(m, fp64, 0));
		cJSON_AddItemToObject(so, "grad", values_json(m, fp64, 1));
		if (optim_step(o, s, e) < 0)
			goto out;
		cJSON_AddItemToObject(so, "value_after", values_json(m, fp64, 0));
		cJSON *cnt = cJSON_AddObjectToObject(so, "adamw_step");
		cJSON *ma = cJSON_AddObjectToObject(so, "exp_avg"), *va = cJSON_AddObjectToObject(so, "exp_avg_sq");
		for (int f = 0; f < S0_NFAM; f++) {
			long pi;
			const struct param *fp = fam_param(m, f, &pi);
			if (!fp)
				continue;
			const char *fn = step0_family_name(f);
			cJSON_AddNumberToObject(cnt, fn, (double)optim_adamw_count(o, (size_t)pi));
			size_t n = fp->numel;
			double *mm = xmalloc((n ? n : 1) * sizeof *mm), *vv = xmalloc((n ? n : 1) * sizeof *vv);
			int has = optim_adamw_moments(o, (size_t)pi, mm, vv) == 0;
			cJSON_AddItemToObject(ma, fn, has ? num_array(mm, n) : cJSON_CreateNull());
			cJSON_AddItemToObject(va, fn, has ? num_array(vv, n) : cJSON_CreateNull());
			free(mm);
			free(vv);
		}
	}
	rc = 0;
out:
	free(in);
	free(tg);
	optim_free(o);
	model_free(m);
	loader_close(&ld);
	return rc;
}

cJSON *step0_trajectory(const struct config *c, const char *const *shards, int n_shards,
			int steps, int quiet, struct err *e)
{
	if (steps < 1)
		return err_set(e, EXIT_USAGE, "--steps %d: must be at least 1", steps), NULL;
	char sha[65];
	config_sha256(c, sha);
	cJSON *rep = cJSON_CreateObject();
	cJSON_AddStringToObject(rep, "arm", c->arm);
	cJSON_AddStringToObject(rep, "config_sha256", sha);
	cJSON_AddNumberToObject(rep, "seed", (double)c->seed);
	cJSON_AddNumberToObject(rep, "norm_eps", c->norm_eps);
	cJSON_AddStringToObject(rep, "dtype", c->dtype == DTYPE_F64 ? "fp64" : "fp32");
	cJSON_AddNumberToObject(rep, "steps", steps);
	cJSON *runs = cJSON_AddArrayToObject(rep, "modes");
	for (int mi = 0; mi < TRAJ_NMODES; mi++)
		if (traj_mode(c, mi, shards, n_shards, steps, quiet, runs, e) < 0) {
			cJSON_Delete(rep);
			rep = NULL;
			break;
		}
	return rep;
}

void step0_trajectory_print(FILE *f, const cJSON *rep)
{
	const cJSON *runs = cJSON_GetObjectItemCaseSensitive(rep, "modes"), *r;
	fprintf(f, "step-0 trajectory: arm %s, seed %.0f, %s, steps 0..%.0f\n",
		cJSON_GetObjectItemCaseSensitive(rep, "arm")->valuestring, jnum(rep, "seed"),
		cJSON_GetObjectItemCaseSensitive(rep, "dtype")->valuestring, jnum(rep, "steps") - 1);
	cJSON_ArrayForEach(r, runs)
	{
		fprintf(f, "\nmode %s%s\n", cJSON_GetObjectItemCaseSensitive(r, "mode")->valuestring,
			cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "wte_lambdas_switched_on"))
				? " (wte_lambdas switched on)" : "");
		fprintf(f, "%5s %10s  %-24s %s\n", "step", "loss", "scalar[0] after", "AdamW steps");
		const cJSON *s;
		cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(r, "steps"))
		{
			fprintf(f, "%5.0f %10.6f ", jnum(s, "step"), jnum(s, "loss"));
			const cJSON *va = cJSON_GetObjectItemCaseSensitive(s, "value_after");
			const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(s, "adamw_step"), *x;
			int first = 1;
			cJSON_ArrayForEach(x, va)
			{
				fprintf(f, "%s%s %.6g", first ? " " : ", ", x->string,
					cJSON_GetArrayItem(x, 0)->valuedouble);
				first = 0;
			}
			fprintf(f, " |");
			cJSON_ArrayForEach(x, cnt)
				fprintf(f, " %.0f", x->valuedouble);
			fprintf(f, "\n");
		}
	}
}
