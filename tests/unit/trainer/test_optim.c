/* test_optim.c: trainer/optim.c, polar.c and schedule.c against the
 * PyTorch / numpy reference (tests/reference/torch_optim.py, fixtures in
 * tests/fixtures/optim/, made by tests/fixtures/optim/make.sh), plus the
 * operator invariants of the arms and state save/load.
 *
 * Tolerances (per tensor, per step; "update error" = ||ours - ref||_2 /
 * ||ref_t - ref_{t-1}||_2, the error relative to what the step moved;
 * "elementwise" = |ours - ref| / max(|ref|, largest |update| of the tensor)):
 *  - fp32 paths (fp32 polar, every arm on it): AdamW and OE tensors 1e-6
 *    elementwise; Muon matrices 1e-5 elementwise and 2e-5 update error.
 *    Both sides round to fp32 at the same points; the residue is fp32
 *    summation order inside the 5 Polar Express iterations, whose
 *    coefficients (up to 22.5) amplify it: the fp32 reference itself is
 *    3e-6..9e-6 (relative) away from the exact fp64 Polar Express on these
 *    shapes (measured with torch_optim.polar_express), so a tighter bound
 *    would test PyTorch's summation order, not our formulas. The formulas
 *    are pinned by the fp64 case: 1e-9 update error, 1e-12 elementwise.
 *  - bf16 embed state (bf16 AdamW tensors): one bf16 ulp allowed on at most
 *    2% of the entries (a fp32 value within fp32 error of a bf16 tie may
 *    round either way), 1e-6 elsewhere. Measured: no flips on the fixture.
 *  - bf16 Polar Express, in both arithmetics (polar_arith: compiled, the
 *    benchmark's torch.compile on CUDA, and eager PyTorch's; they differ by
 *    13% to 38% of the update on the 3-step fixture and 6% to 16% on the
 *    operator's matrices, and each result must be nearer its own reference):
 *    our emulation reproduces the reference bit for bit
 *    on the fixture (operator and 3 full steps), but a one-ulp fp32
 *    difference anywhere upstream can flip a bf16 rounding in the first
 *    iteration and move the update by several percent (docs/model.md; the bf16 vs
 *    fp32 polar gap on this fixture is 8% to 36% of the update), so the
 *    bounds are 2% update error and 3 in 4 Muon (tensor, step) results
 *    bit-equal: a misplaced rounding (e.g. beta2 or lr' * wd not in bf16)
 *    changes most results by ulps, a single flip changes one tensor.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/bf16.h"
#include "lib/err.h"
#include "lib/fileio.h"
#include "lib/rng.h"
#include "trainer/config.h"
#include "trainer/optim.h"
#include "trainer/param.h"
#include "t.h"

#define FIX "tests/fixtures/optim/"
#define NSTEPS 3
#define MAXP 32

/* ---- fixture reading ---- */

static char *slurp(const char *path)
{
	struct err e;
	char *d;
	size_t n;
	if (file_read_all(path, 16u << 20, &d, &n, &e)) {
		printf("  cannot read fixture: %s\n", e.msg);
		return NULL;
	}
	return d;
}

/* Next line of *s (NUL-terminated in place), NULL at the end. */
static char *next_line(char **s)
{
	if (!*s || !**s)
		return NULL;
	char *l = *s, *nl = strchr(l, '\n');
	if (nl) {
		*nl = 0;
		*s = nl + 1;
	} else {
		*s = l + strlen(l);
	}
	return l;
}

static size_t parse_doubles(char *p, double *out, size_t max)
{
	size_t n = 0;
	char *end;
	while (n < max) {
		double v = strtod(p, &end);
		if (end == p)
			break;
		out[n++] = v;
		p = end;
	}
	return n;
}

struct fx_param {
	char name[PARAM_NAME_MAX];
	enum param_group group;
	enum param_store store;
	int ndim;
	int64_t shape[3];
	size_t numel, rows, cols;
	double *init;
	double *grad[NSTEPS];
	uint32_t *counts[NSTEPS];
	uint8_t *mask;
};

struct fixture {
	struct fx_param p[MAXP];
	size_t n;
	struct optim_sched sched[NSTEPS];
	char sets[8][128];
	int nsets;
};

static struct fixture fx;
static int fx_loaded;

static struct fx_param *fx_find(const char *name)
{
	for (size_t i = 0; i < fx.n; i++)
		if (!strcmp(fx.p[i].name, name))
			return &fx.p[i];
	return NULL;
}

static enum param_group group_of(const char *s)
{
	static const char *names[] = {"lm_head", "embed", "resid", "scalar", "matrix", "qtau", "oe"};
	for (int i = 0; i < PG_NGROUPS; i++)
		if (!strcmp(s, names[i]))
			return (enum param_group)i;
	return PG_NGROUPS;
}

static int fixture_load(void)
{
	if (fx_loaded)
		return fx_loaded > 0;
	fx_loaded = -1;
	char *data = slurp(FIX "inputs.txt"), *s = data, *l;
	if (!data)
		return 0;
	while ((l = next_line(&s))) {
		char name[PARAM_NAME_MAX], grp[32], st[16];
		int t, nd;
		long long d0, d1, d2;
		int off;
		if (l[0] == '#' || !l[0])
			continue;
		if (!strncmp(l, "set ", 4)) {
			snprintf(fx.sets[fx.nsets++], sizeof fx.sets[0], "%s", l + 4);
		} else if (sscanf(l, "param %95s %31s %15s %d %lld %lld %lld", name, grp, st, &nd,
				  &d0, &d1, &d2) == 7) {
			struct fx_param *p = &fx.p[fx.n++];
			snprintf(p->name, sizeof p->name, "%s", name);
			p->group = group_of(grp);
			p->store = strcmp(st, "bf16") ? PARAM_F32 : PARAM_BF16;
			p->ndim = nd;
			p->shape[0] = d0, p->shape[1] = d1, p->shape[2] = d2;
			p->numel = (size_t)d0 * (nd > 1 ? (size_t)d1 : 1) * (nd > 2 ? (size_t)d2 : 1);
			p->rows = (size_t)d0;
			p->cols = p->numel / p->rows;
		} else if (sscanf(l, "mask %95s %n", name, &off) == 1) {
			struct fx_param *p = fx_find(name);
			double *v = malloc(p->numel * sizeof *v);
			parse_doubles(l + off, v, p->numel);
			p->mask = calloc(p->numel, 1);
			for (size_t i = 0; i < p->numel; i++)
				p->mask[i] = v[i] != 0;
			free(v);
		} else if (sscanf(l, "init %95s %n", name, &off) == 1) {
			struct fx_param *p = fx_find(name);
			p->init = malloc(p->numel * sizeof *p->init);
			if (parse_doubles(l + off, p->init, p->numel) != p->numel)
				goto bad;
			for (size_t k = 0; k < p->numel; k++)   /* fp32 values, 9 digits */
				p->init[k] = (float)p->init[k];
		} else if (sscanf(l, "grad %d %95s %n", &t, name, &off) == 2) {
			struct fx_param *p = fx_find(name);
			p->grad[t] = malloc(p->numel * sizeof(double));
			if (parse_doubles(l + off, p->grad[t], p->numel) != p->numel)
				goto bad;
			for (size_t k = 0; k < p->numel; k++)
				p->grad[t][k] = (float)p->grad[t][k];
		} else if (sscanf(l, "counts %d %95s %n", &t, name, &off) == 2) {
			struct fx_param *p = fx_find(name);
			double *v = malloc(p->rows * sizeof *v);
			parse_doubles(l + off, v, p->rows);
			p->counts[t] = malloc(p->rows * sizeof(uint32_t));
			for (size_t i = 0; i < p->rows; i++)
				p->counts[t][i] = (uint32_t)v[i];
			free(v);
		} else if (sscanf(l, "sched %d %n", &t, &off) == 1) {
			double v[3];
			parse_doubles(l + off, v, 3);
			fx.sched[t].step = t;
			fx.sched[t].lr_mult = fx.sched[t].lrm = v[0];
			fx.sched[t].momentum = v[1];
			fx.sched[t].muon_wd = v[2];
		} else {
			goto bad;
		}
	}
	free(data);
	fx_loaded = 1;
	return 1;
bad:
	printf("  bad fixture line: %.60s\n", l);
	free(data);
	return 0;
}

/* A live parameter table made from the fixture. */
struct table {
	struct param p[MAXP];
	struct param_table t;
	int fp64;
};

static void table_make(struct table *tb, int fp64)
{
	memset(tb, 0, sizeof *tb);
	tb->fp64 = fp64;
	for (size_t i = 0; i < fx.n; i++) {
		struct fx_param *f = &fx.p[i];
		struct param *p = &tb->p[i];
		snprintf(p->name, sizeof p->name, "%s", f->name);
		p->ndim = f->ndim;
		memcpy(p->shape, f->shape, sizeof p->shape);
		p->numel = f->numel;
		p->rows = f->rows;
		p->cols = f->cols;
		p->group = f->group;
		p->store = f->store;
		p->w = calloc(p->numel, sizeof(float));
		p->g = calloc(p->numel, sizeof(float));
		if (fp64) {
			p->w64 = calloc(p->numel, sizeof(double));
			p->g64 = calloc(p->numel, sizeof(double));
		}
		for (size_t k = 0; k < p->numel; k++) {
			p->w[k] = (float)f->init[k];
			if (fp64)
				p->w64[k] = f->init[k];
		}
		if (f->mask) {
			p->mask = malloc(p->numel);
			memcpy(p->mask, f->mask, p->numel);
			p->frozen_mask = 1;
		}
		if (f->group == PG_OE)
			p->counts = calloc(p->rows, sizeof(uint32_t));
	}
	tb->t.p = tb->p;
	tb->t.n = fx.n;
}

static void table_free(struct table *tb)
{
	for (size_t i = 0; i < tb->t.n; i++) {
		free(tb->p[i].w);
		free(tb->p[i].g);
		free(tb->p[i].w64);
		free(tb->p[i].g64);
		free(tb->p[i].mask);
		free(tb->p[i].counts);
	}
}

static void table_set_grads(struct table *tb, int t)
{
	for (size_t i = 0; i < tb->t.n; i++) {
		struct param *p = &tb->p[i];
		struct fx_param *f = &fx.p[i];
		for (size_t k = 0; k < p->numel; k++) {
			p->g[k] = (float)f->grad[t][k];
			if (tb->fp64)
				p->g64[k] = f->grad[t][k];
		}
		if (p->counts)
			memcpy(p->counts, f->counts[t], p->rows * sizeof(uint32_t));
	}
}

static double table_val(const struct table *tb, size_t i, size_t k)
{
	return tb->fp64 ? tb->p[i].w64[k] : tb->p[i].w[k];
}

/* ---- case runner ---- */

struct tol {
	double upd;        /* max update error */
	double elem;       /* elementwise relative, AdamW and OE tensors */
	double elem_muon;  /* elementwise relative, Muon matrices */
	int bf16_flips;    /* allow one-ulp bf16 flips on bf16 AdamW tensors */
};

struct case_result {
	double worst_upd;  /* worst update error over tensors and steps */
	int muon_pairs, muon_exact;   /* Muon (tensor, step) pairs, bit-equal ones */
	int muon_close;               /* ... and ones within 1e-5 of the update */
	int ok;
};

static int make_config(struct config *c, char sets[][128], int nsets, int *fp64)
{
	struct err e;
	config_defaults(c);
	for (int i = 0; i < fx.nsets; i++)
		if (config_set(c, fx.sets[i], &e)) {
			printf("  config_set '%s': %s\n", fx.sets[i], e.msg);
			return -1;
		}
	for (int i = 0; i < nsets; i++)
		if (config_set(c, sets[i], &e)) {
			printf("  config_set '%s': %s\n", sets[i], e.msg);
			return -1;
		}
	*fp64 = c->dtype == DTYPE_F64;
	return 0;
}

/* Run one case file; compare after every step. *res gets the worst error. */
static void run_case(const char *name, const struct tol *tol, struct case_result *res)
{
	char path[256];
	snprintf(path, sizeof path, FIX "case_%s.txt", name);
	res->ok = 0;
	res->worst_upd = 0;
	res->muon_pairs = res->muon_exact = res->muon_close = 0;
	if (!fixture_load()) {
		CHECKF(0, "fixture inputs.txt");
		return;
	}
	char *data = slurp(path), *s = data, *l;
	if (!data) {
		CHECKF(0, "fixture %s", path);
		return;
	}
	char sets[8][128];
	int nsets = 0;
	/* after[t][i] */
	double *after[NSTEPS][MAXP] = {{0}};
	while ((l = next_line(&s))) {
		char pname[PARAM_NAME_MAX];
		int t, off;
		if (l[0] == '#')
			continue;
		if (!strncmp(l, "set ", 4) && nsets < 8)
			snprintf(sets[nsets++], sizeof sets[0], "%s", l + 4);
		else if (sscanf(l, "after %d %95s %n", &t, pname, &off) == 2) {
			struct fx_param *f = fx_find(pname);
			size_t i = (size_t)(f - fx.p);
			after[t][i] = malloc(f->numel * sizeof(double));
			parse_doubles(l + off, after[t][i], f->numel);
		}
	}
	free(data);

	struct config c;
	int fp64;
	struct err e;
	struct optim *o = NULL;
	struct table tb;
	int bad = 0;
	if (make_config(&c, sets, nsets, &fp64)) {
		CHECK(0);
		goto out;
	}
	if (!fp64)   /* fp32 references are printed with 9 digits: round back */
		for (int t = 0; t < NSTEPS; t++)
			for (size_t i = 0; i < fx.n; i++)
				for (size_t k = 0; after[t][i] && k < fx.p[i].numel; k++)
					after[t][i][k] = (float)after[t][i][k];
	table_make(&tb, fp64);
	if (optim_create(&c, &tb.t, fp64, &o, &e)) {
		CHECKF(0, "optim_create: %s", e.msg);
		table_free(&tb);
		goto out;
	}
	for (int t = 0; t < NSTEPS; t++) {
		table_set_grads(&tb, t);
		CHECK(optim_step_sched(o, &fx.sched[t], &e) == 0);
		for (size_t i = 0; i < tb.t.n; i++) {
			struct param *p = &tb.p[i];
			const double *ref = after[t][i];
			const double *prev = t ? after[t - 1][i] : fx.p[i].init;
			if (!ref) {
				CHECKF(0, "%s: no reference for %s step %d", name, p->name, t);
				bad = 1;
				continue;
			}
			double dn = 0, un = 0, umax = 0, worst_el = 0;
			int flips = 0;
			for (size_t k = 0; k < p->numel; k++) {
				double v = table_val(&tb, i, k), d = v - ref[k], u = ref[k] - prev[k];
				dn += d * d;
				un += u * u;
				if (fabs(u) > umax)
					umax = fabs(u);
			}
			for (size_t k = 0; k < p->numel; k++) {
				double v = table_val(&tb, i, k), d = fabs(v - ref[k]);
				double sc = fmax(fabs(ref[k]), umax);
				if (tol->bf16_flips && p->store == PARAM_BF16 && p->group != PG_OE) {
					double ulp = fabs(ref[k]) * (1.0 / 128);
					if (d > 1e-6 * sc && d <= ulp * 1.0001) {
						flips++;
						continue;
					}
				}
				if (sc > 0 && d / sc > worst_el)
					worst_el = d / sc;
			}
			double ue = un > 0 ? sqrt(dn / un) : sqrt(dn);
			if (p->group == PG_MATRIX) {
				res->muon_pairs++;
				res->muon_exact += dn == 0;
				res->muon_close += ue <= 1e-5;
			}
			if (ue > res->worst_upd && !(tol->bf16_flips && p->store == PARAM_BF16))
				res->worst_upd = ue;
			double el_tol = p->group == PG_MATRIX ? tol->elem_muon : tol->elem;
			int ok = ue <= tol->upd && worst_el <= el_tol &&
				 flips <= (int)(0.02 * p->numel) + 1;
			if (tol->bf16_flips && p->store == PARAM_BF16 && p->group != PG_OE)
				ok = worst_el <= el_tol && flips <= (int)(0.02 * p->numel) + 1;
			if (getenv("OPTIM_VERBOSE") || !ok)
				printf("  %s step %d %-36s update err %.3g elem %.3g flips %d\n", name, t,
				       p->name, ue, worst_el, flips);
			if (!ok)
				bad = 1;
		}
	}
	optim_free(o);
	table_free(&tb);
	res->ok = !bad;
	CHECKF(!bad, "case %s differs from the PyTorch reference", name);
out:
	for (int t = 0; t < NSTEPS; t++)
		for (int i = 0; i < MAXP; i++)
			free(after[t][i]);
}

static const struct tol TOL_F32 = {2e-5, 1e-6, 1e-5, 0};
static const struct tol TOL_F64 = {1e-9, 1e-12, 1e-12, 0};

#define CASE_F32(fn, name)                             \
	TEST(fn)                                       \
	{                                              \
		struct case_result r;                  \
		run_case(name, &TOL_F32, &r);          \
	}

CASE_F32(parity_base_fp32, "base_fp32")
CASE_F32(parity_bieq_tau2, "bieq_tau2")
CASE_F32(parity_bieq_tau0, "bieq_tau0")
CASE_F32(parity_muoneq_r, "muoneq_r")
CASE_F32(parity_muoneq_rc, "muoneq_rc")
CASE_F32(parity_neumann_direction, "neumann_dir")
CASE_F32(parity_neumann_gradient, "neumann_grad")
CASE_F32(parity_table_neumann, "table_neumann")
CASE_F32(parity_step0_nostep0, "step0_nostep0")
CASE_F32(parity_step0_mom_only_nodisp, "step0_mom_only_nodisp")
CASE_F32(parity_step0_disp_only_nomom, "step0_disp_only_nomom")
CASE_F32(parity_step0_disp_stepcount_nomom, "step0_disp_stepcount_nomom")
CASE_F32(parity_step0_nostep0_all, "step0_nostep0_all")
/* the polar-step and equilibrator arms (bieq_passes, bieq_sides,
 * equil_scope, polar_steps, polar_norm = aol, normuon) */
CASE_F32(parity_bieq_one_pass_rows, "bieq_rows1")
CASE_F32(parity_bieq_square_only, "bieq_square")
CASE_F32(parity_muoneq_r_square_only, "muoneq_r_square")
CASE_F32(parity_polar_steps4, "polar_steps4")
CASE_F32(parity_turbo_muon_aol4, "aol4")
CASE_F32(parity_muoneq_r_no_normuon, "muoneq_r_normuon0")
/* Zeta (paper 002): the second moment of the raw gradient, bias-corrected,
 * whitening the Nesterov output before the polar step */
CASE_F32(parity_zeta, "zeta")
/* MALT (paper 004): P G Q before the polar step, P X Q grafted after it;
 * with NorMuon, without, and with other malt_beta and malt_eps */
CASE_F32(parity_malt, "malt")
CASE_F32(parity_malt_no_normuon, "malt_normuon0")
CASE_F32(parity_malt_beta_eps, "malt_beta_eps")
/* paper 004 #2d: P and Q from this step's Nesterov output (malt_input =
 * momentum, malt_beta = 0: no EMA); the momentum with an EMA; the raw
 * gradient without one */
CASE_F32(parity_malt_momentum, "malt_momentum")
CASE_F32(parity_malt_momentum_ema, "malt_momentum_ema")
CASE_F32(parity_malt_instant, "malt_instant")
/* Muon2-F (paper 002 exp53): the factored one-sided second moment of the
 * Nesterov output scaling it before the polar step; with NorMuon and without */
CASE_F32(parity_muon2f, "muon2f")
CASE_F32(parity_muon2f_no_normuon, "muon2f_normuon0")
/* NormPre-G (paper 004 #2e, #2f): the relaxed tangent of the weights and the
 * row / column normalisation alternating with the step; without the tangent */
CASE_F32(parity_normpre_g, "normpre_g")
CASE_F32(parity_normpre_g_no_tangent, "normpre_g_notangent")

TEST(parity_fp64)
{
	struct case_result r;
	run_case("fp64", &TOL_F64, &r);
}

TEST(parity_fp64_aol4)
{
	struct case_result r;
	run_case("fp64_aol4", &TOL_F64, &r);
}

TEST(parity_fp64_bieq_rows1_square_no_normuon)
{
	struct case_result r;
	run_case("fp64_bieq_rows1_square_normuon0", &TOL_F64, &r);
}

TEST(parity_fp64_zeta)
{
	struct case_result r;
	run_case("fp64_zeta", &TOL_F64, &r);
}

TEST(parity_fp64_malt)
{
	struct case_result r;
	run_case("fp64_malt", &TOL_F64, &r);
}

TEST(parity_fp64_malt_momentum)
{
	struct case_result r;
	run_case("fp64_malt_momentum", &TOL_F64, &r);
}

TEST(parity_fp64_muon2f)
{
	struct case_result r;
	run_case("fp64_muon2f", &TOL_F64, &r);
}

TEST(parity_fp64_normpre_g)
{
	struct case_result r;
	run_case("fp64_normpre_g", &TOL_F64, &r);
}

/* matrix_optim = adamw (paper 004's pure AdamW run): the block matrices
 * against torch.optim.AdamW (lr_matrix, betas (0.8, 0.95), eps 1e-10, wd 0),
 * with fp32 and bf16 embedding state, and in fp64 */
CASE_F32(parity_matrix_adamw, "matrix_adamw")

TEST(parity_matrix_adamw_bf16_embed)
{
	struct tol t = {2e-5, 1e-6, 1e-5, 1};
	struct case_result r;
	run_case("matrix_adamw_bf16embed", &t, &r);
}

TEST(parity_fp64_matrix_adamw)
{
	struct case_result r;
	run_case("fp64_matrix_adamw", &TOL_F64, &r);
}

TEST(parity_embed_state_bf16)
{
	/* bf16 AdamW on wte/value_embeds with the fp32 polar path */
	struct tol t = {2e-5, 1e-6, 1e-5, 1};
	struct case_result r;
	run_case("embed_bf16_fp32polar", &t, &r);
}

/* bf16 Polar Express and bf16 embed state, in the given arithmetic: the
 * benchmark's (compiled, the default) or eager PyTorch's; the two differ by
 * 13% to 38% of the update on this fixture */
static void bf16_polar_case(const char *name)
{
	struct tol t = {0.02, 0.02, 0.02, 1};
	struct case_result r;
	run_case(name, &t, &r);
	CHECK(r.ok);
	/* and most Muon results bit-equal: a misplaced rounding shows here */
	CHECKF(r.muon_exact * 4 >= r.muon_pairs * 3, "%d of %d Muon results bit-equal",
	       r.muon_exact, r.muon_pairs);
}

TEST(parity_bf16_polar_compiled) { bf16_polar_case("base_bf16_compiled"); }
TEST(parity_bf16_polar_eager) { bf16_polar_case("base_bf16"); }
/* bf16 polar arms: a dtype slip (the norm or NorMuon in the wrong dtype)
 * breaks the bit-equality that bf16_polar_case asks of most results */
TEST(parity_bf16_polar_norm_fp32) { bf16_polar_case("bf16_polar_norm_fp32"); }
TEST(parity_bf16_post_polar_fp32)
{
	/* NorMuon and the update in fp32 on the bf16 polar output: no bf16
	 * rounding after the polar step, so where the polar outputs agree
	 * (most results) the update agrees to fp32 rounding; bf16 rounding
	 * there would put every one about 1e-3 away */
	struct tol t = {0.02, 0.02, 0.02, 1};
	struct case_result r;
	run_case("bf16_post_polar_fp32", &t, &r);
	CHECK(r.ok);
	CHECKF(r.muon_close * 4 >= r.muon_pairs * 3, "%d of %d Muon results within 1e-5",
	       r.muon_close, r.muon_pairs);
}
TEST(parity_bf16_turbo_muon_aol4) { bf16_polar_case("bf16_aol4"); }
TEST(parity_bf16_zeta) { bf16_polar_case("bf16_zeta"); }
TEST(parity_bf16_muon2f) { bf16_polar_case("bf16_muon2f"); }
TEST(parity_bf16_normpre_g) { bf16_polar_case("bf16_normpre_g"); }
TEST(parity_bf16_malt_momentum) { bf16_polar_case("bf16_malt_momentum"); }

/* ---- operators against numpy float64 / PyTorch ---- */

struct op {
	char kind[32], name[32];
	size_t m, n;
	double a;
	double *in, *out, *table;
	uint32_t *counts;
};

static int ops_load(struct op **ops, size_t *nops)
{
	char *data = slurp(FIX "ops.txt"), *s = data, *l;
	if (!data)
		return -1;
	size_t n = 0, cap = 0;
	struct op *v = NULL;
	while ((l = next_line(&s))) {
		struct op *o = n ? &v[n - 1] : NULL;
		unsigned long m_, n_;
		if (l[0] == '#')
			continue;
		if (!strncmp(l, "op ", 3)) {
			if (n == cap) {
				cap = cap * 2 + 16;
				v = realloc(v, cap * sizeof *v);
			}
			o = &v[n++];
			memset(o, 0, sizeof *o);
			if (sscanf(l, "op %31s %31s %lu %lu %lf", o->kind, o->name, &m_, &n_, &o->a) != 5)
				goto bad;
			o->m = m_;
			o->n = n_;
		} else if (o && !strncmp(l, "in ", 3)) {
			o->in = malloc(o->m * o->n * sizeof(double));
			if (parse_doubles(l + 3, o->in, o->m * o->n) != o->m * o->n)
				goto bad;
		} else if (o && !strncmp(l, "out ", 4)) {
			o->out = malloc(o->m * o->n * sizeof(double));
			if (parse_doubles(l + 4, o->out, o->m * o->n) != o->m * o->n)
				goto bad;
		} else if (o && !strncmp(l, "table ", 6)) {
			o->table = malloc(o->m * o->n * sizeof(double));
			parse_doubles(l + 6, o->table, o->m * o->n);
		} else if (o && !strncmp(l, "counts ", 7)) {
			double c[64];
			parse_doubles(l + 7, c, o->m);
			o->counts = malloc(o->m * sizeof(uint32_t));
			for (size_t i = 0; i < o->m; i++)
				o->counts[i] = (uint32_t)c[i];
		} else {
			goto bad;
		}
	}
	free(data);
	*ops = v;
	*nops = n;
	return 0;
bad:
	printf("  bad ops line: %.60s\n", l);
	free(data);
	free(v);
	return -1;
}

static void ops_free(struct op *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].in);
		free(v[i].out);
		free(v[i].table);
		free(v[i].counts);
	}
	free(v);
}

/* max |x - y| / max(max |y|, 1e-300) */
static double rel_max(const double *x, const double *y, size_t n)
{
	double d = 0, s = 1e-300;
	for (size_t i = 0; i < n; i++) {
		d = fmax(d, fabs(x[i] - y[i]));
		s = fmax(s, fabs(y[i]));
	}
	return d / s;
}

static double rel_fro(const double *x, const double *y, size_t n)
{
	double d = 0, s = 1e-300;
	for (size_t i = 0; i < n; i++) {
		d += (x[i] - y[i]) * (x[i] - y[i]);
		s += y[i] * y[i];
	}
	return sqrt(d / s);
}

/* The OE update of one table through the optimizer (fp64, eta = a). */
static void oe_through_optim(const struct op *o, double *res)
{
	struct config c;
	struct err e;
	struct param p = {0};
	struct optim *opt;
	config_defaults(&c);
	c.model_dim = 768;      /* k = 1 */
	c.oe_lr = 1.0;
	snprintf(p.name, sizeof p.name, "oe.0.weight");
	p.ndim = 2;
	p.shape[0] = (int64_t)o->m;
	p.shape[1] = (int64_t)o->n;
	p.numel = o->m * o->n;
	p.rows = o->m;
	p.cols = o->n;
	p.group = PG_OE;
	p.store = PARAM_BF16;
	p.w = calloc(p.numel, sizeof(float));
	p.g = calloc(p.numel, sizeof(float));
	p.w64 = malloc(p.numel * sizeof(double));
	p.g64 = malloc(p.numel * sizeof(double));
	p.counts = malloc(o->m * sizeof(uint32_t));
	memcpy(p.w64, o->table, p.numel * sizeof(double));
	memcpy(p.g64, o->in, p.numel * sizeof(double));
	memcpy(p.counts, o->counts, o->m * sizeof(uint32_t));
	struct param_table t = {&p, 1};
	struct optim_sched s = {.step = 5, .lr_mult = o->a, .lrm = o->a};
	CHECK(optim_create(&c, &t, 1, &opt, &e) == 0);
	CHECK(optim_step_sched(opt, &s, &e) == 0);
	memcpy(res, p.w64, p.numel * sizeof(double));
	for (size_t i = 0; i < o->m; i++)
		CHECK(p.counts[i] == 0);             /* counts reset */
	optim_free(opt);
	free(p.w);
	free(p.g);
	free(p.w64);
	free(p.g64);
	free(p.counts);
}

TEST(operators_vs_numpy)
{
	struct op *ops;
	size_t n;
	if (ops_load(&ops, &n)) {
		CHECK(0);
		return;
	}
	CHECK(n > 60);
	for (size_t i = 0; i < n; i++) {
		struct op *o = &ops[i];
		size_t N = o->m * o->n;
		double *x = malloc(N * sizeof *x);
		memcpy(x, o->in, N * sizeof *x);
		double tol = 1e-12, err;
		if (!strcmp(o->kind, "bieq"))
			bieq_apply(x, o->m, o->n, o->a);
		else if (!strcmp(o->kind, "neumann"))
			neumann_gram_apply(x, o->m, o->n, o->a);
		else if (!strcmp(o->kind, "muoneq_r"))
			muoneq_r_apply(x, o->m, o->n);
		else if (!strcmp(o->kind, "muoneq_rc"))
			muoneq_rc_apply(x, o->m, o->n);
		else if (!strcmp(o->kind, "oe"))
			oe_through_optim(o, x);
		else if (!strcmp(o->kind, "polar_fp64")) {
			for (size_t k = 0; k < N; k++)   /* the input is fp32, 9 digits */
				x[k] = (float)x[k];
			polar_express_f64(x, o->m, o->n);
			tol = 1e-12;
		} else if (!strncmp(o->kind, "polar_", 6)) {
			int mode = !strcmp(o->kind, "polar_bf16") ? POLAR_MODE_BF16_EAGER
				 : !strcmp(o->kind, "polar_bf16c") ? POLAR_MODE_BF16_COMPILED
				 : POLAR_MODE_FP32;
			int bf = mode != POLAR_MODE_FP32;
			float *f = malloc(N * sizeof *f);
			for (size_t k = 0; k < N; k++)
				f[k] = (float)x[k];
			polar_express_f32(f, o->m, o->n, mode);
			for (size_t k = 0; k < N; k++)
				x[k] = f[k];
			free(f);
			/* fp32: summation order only (see the file comment: the fp32
			 * reference is itself 3e-6..9e-6 from the exact result, so two
			 * fp32 orders may differ by twice that: OpenBLAS on an AMD EPYC
			 * gives 2.7e-6 on 8x16, earlier machines stayed below 2e-6; a
			 * wrong coefficient or step is off by 1e-2 and more); bf16: one
			 * bf16 rounding flip early on moves the result by a few percent */
			tol = bf ? 0.05 : 2e-5;
			err = rel_fro(x, o->out, N);
			if (getenv("OPTIM_VERBOSE"))
				printf("  %s %zux%zu rel fro %.3g\n", o->kind, o->m, o->n, err);
			CHECKF(err <= tol, "%s %s %zux%zu: error %.3g > %.3g", o->kind, o->name,
			       o->m, o->n, err, tol);
			/* the two bf16 arithmetics differ by 6% to 16% on these
			 * matrices (rounding the scalars to bf16 or not): the result
			 * must be nearer its own arithmetic's reference than the
			 * other's, which the 5% bound alone does not ensure */
			const char *other = mode == POLAR_MODE_BF16_EAGER ? "polar_bf16c"
					  : mode == POLAR_MODE_BF16_COMPILED ? "polar_bf16" : NULL;
			for (size_t j = 0; other && j < n; j++) {
				const struct op *p = &ops[j];
				if (strcmp(p->kind, other) || p->m != o->m || p->n != o->n ||
				    memcmp(p->in, o->in, N * sizeof *p->in))
					continue;
				double eo = rel_fro(x, p->out, N);
				CHECKF(eo > err, "%s %zux%zu: %.3g from its reference, %.3g from %s's", o->kind,
				       o->m, o->n, err, eo, other);
				other = NULL;
			}
			CHECKF(!other, "%s %zux%zu: no %s case on the same matrix", o->kind, o->m, o->n,
			       other);
			free(x);
			continue;
		} else {
			CHECKF(0, "unknown op %s", o->kind);
			free(x);
			continue;
		}
		err = rel_max(x, o->out, N);
		CHECKF(err <= tol, "%s %s a=%g: error %.3g", o->kind, o->name, o->a, err);
		free(x);
	}
	ops_free(ops, n);
}

/* ---- schedules against train.py's functions ---- */

TEST(schedule_vs_train_py)
{
	char *data = slurp(FIX "sched.txt"), *s = data, *l;
	struct config c;
	struct err e;
	int cfgs = 0, points = 0;
	if (!data) {
		CHECK(0);
		return;
	}
	config_defaults(&c);
	while ((l = next_line(&s))) {
		int t, off;
		if (l[0] == '#')
			continue;
		if (!strncmp(l, "cfg ", 4)) {
			config_defaults(&c);
			cfgs++;
			char *tok = strchr(l + 4, ' ');
			while (tok && *tok) {
				char kv[128];
				int n;
				if (sscanf(tok, " %127s%n", kv, &n) != 1)
					break;
				CHECKF(config_set(&c, kv, &e) == 0, "%s", e.msg);
				tok += n;
			}
		} else if (sscanf(l, "at %d %n", &t, &off) == 1) {
			double v[5];
			struct optim_sched sc;
			CHECK(parse_doubles(l + off, v, 5) == 5);
			optim_schedule(&c, t, &sc);
			CHECK(sc.step == t);
			CHECK_NEAR(sc.progress, v[0], 1e-15);
			CHECK_NEAR(sc.lrm, v[1], 1e-15);
			CHECK_NEAR(sc.lr_mult, v[2], 1e-15);
			CHECK_NEAR(sc.momentum, v[3], 1e-15);
			CHECK_NEAR(sc.muon_wd, v[4], 1e-15);
			points++;
		}
	}
	free(data);
	CHECK(cfgs == 4);
	CHECK(points == 4 * 13);
}

/* ---- invariants ---- */

TEST(bieq_identity_at_step0)
{
	/* a = min(0/tau, 1)^2 = 0: every scale is exactly 1 */
	double G[12], H[12];
	for (int i = 0; i < 12; i++)
		G[i] = H[i] = sin(i * 1.7) * (i % 5 ? 1 : 1e-3);
	CHECK(homotopy_alpha(0, 25) == 0);
	bieq_apply(H, 3, 4, homotopy_alpha(0, 25));
	CHECK(memcmp(G, H, sizeof G) == 0);
	CHECK(homotopy_alpha(5, 0) == 1);          /* tau 0 = undamped */
	CHECK(homotopy_alpha(40, 80) == 0.25);
	CHECK(homotopy_alpha(200, 80) == 1);
	/* and through the optimizer: BiEq(tau 25) at step 0 == no BiEq */
	if (!fixture_load()) {
		CHECK(0);
		return;
	}
	struct table a, b;
	struct config ca, cb;
	struct optim *oa, *ob;
	struct err e;
	int fp64;
	make_config(&ca, NULL, 0, &fp64);
	cb = ca;
	cb.muoneq = MUONEQ_BIEQ;
	cb.bieq_tau = 25;
	table_make(&a, 0);
	table_make(&b, 0);
	CHECK(optim_create(&ca, &a.t, 0, &oa, &e) == 0);
	CHECK(optim_create(&cb, &b.t, 0, &ob, &e) == 0);
	table_set_grads(&a, 0);
	table_set_grads(&b, 0);
	optim_step(oa, 0, &e);
	optim_step(ob, 0, &e);
	for (size_t i = 0; i < a.t.n; i++)
		CHECKF(memcmp(a.p[i].w, b.p[i].w, a.p[i].numel * sizeof(float)) == 0, "%s",
		       a.p[i].name);
	optim_free(oa);
	optim_free(ob);
	table_free(&a);
	table_free(&b);
}

TEST(neumann_keeps_zero_rows_and_norm)
{
	enum { V = 7, D = 5 };
	double U[V * D], fro0 = 0, fro1 = 0;
	for (int v = 0; v < V; v++)
		for (int j = 0; j < D; j++)
			U[v * D + j] = (v == 2 || v == 5) ? 0 : cos(v * 3.1 + j) + 0.7;
	for (int i = 0; i < V * D; i++)
		fro0 += U[i] * U[i];
	neumann_gram_apply(U, V, D, 1.0);
	for (int i = 0; i < V * D; i++)
		fro1 += U[i] * U[i];
	for (int j = 0; j < D; j++) {
		CHECK(U[2 * D + j] == 0);
		CHECK(U[5 * D + j] == 0);
	}
	CHECK_NEAR(sqrt(fro1), sqrt(fro0), 1e-6);
	/* all rows equal: Uo = 0, the update is the rows themselves */
	double E[4 * 3], E0[4 * 3];
	for (int i = 0; i < 12; i++)
		E[i] = E0[i] = (i % 3) - 0.5;
	neumann_gram_apply(E, 4, 3, 1.0);
	for (int i = 0; i < 12; i++)
		CHECK_NEAR(E[i], E0[i], 1e-12);
	/* an all-zero matrix stays zero, no NaN */
	double Z[6] = {0};
	neumann_gram_apply(Z, 2, 3, 1.0);
	for (int i = 0; i < 6; i++)
		CHECK(Z[i] == 0);
}

/* One step of the baseline config with step0 mode m on the fixture table. */
TEST(nostep0_leaves_scalars_untouched)
{
	if (!fixture_load()) {
		CHECK(0);
		return;
	}
	struct table tb;
	struct config c;
	struct optim *o;
	struct err e;
	int fp64;
	make_config(&c, NULL, 0, &fp64);
	c.step0 = STEP0_NOSTEP0;
	table_make(&tb, 0);
	CHECK(optim_create(&c, &tb.t, 0, &o, &e) == 0);
	table_set_grads(&tb, 0);
	optim_step(o, 0, &e);
	for (size_t i = 0; i < tb.t.n; i++) {
		struct param *p = &tb.p[i];
		int target = !strcmp(p->name, "wte_lambdas") || !strcmp(p->name, "out_lambdas");
		if (p->group == PG_MATRIX || p->group == PG_OE)
			continue;
		CHECKF(optim_adamw_count(o, i) == (target ? 0 : 1), "%s", p->name);
		if (target)
			for (size_t k = 0; k < p->numel; k++)
				CHECK(p->w[k] == (float)fx.p[i].init[k]);
	}
	table_set_grads(&tb, 1);
	optim_step(o, 1, &e);
	for (size_t i = 0; i < tb.t.n; i++)
		if (!strcmp(tb.p[i].name, "wte_lambdas"))
			CHECK(optim_adamw_count(o, i) == 1);
	optim_free(o);
	table_free(&tb);
}

TEST(masked_q_tau_stays_zero)
{
	if (!fixture_load()) {
		CHECK(0);
		return;
	}
	struct table tb;
	struct config c;
	struct optim *o;
	struct err e;
	int fp64;
	make_config(&c, NULL, 0, &fp64);
	table_make(&tb, 0);
	CHECK(optim_create(&c, &tb.t, 0, &o, &e) == 0);
	struct param *q = NULL;
	for (size_t i = 0; i < tb.t.n; i++)
		if (!strcmp(tb.p[i].name, "q_tau"))
			q = &tb.p[i];
	CHECK(q && q->mask);
	if (!q || !q->mask)
		goto out;
	for (int t = 0; t < NSTEPS; t++) {
		table_set_grads(&tb, t);
		for (size_t k = 0; k < q->numel; k++)   /* adversarial: gradient on frozen entries */
			if (q->mask[k])
				q->g[k] = 0.5f;
		optim_step(o, t, &e);
		int moved = 0;
		for (size_t k = 0; k < q->numel; k++) {
			if (q->mask[k])
				CHECK(q->w[k] == 0.0f && !signbit(q->w[k]));
			else
				moved += q->w[k] != 0;
		}
		CHECK(moved > 0);
	}
out:
	optim_free(o);
	table_free(&tb);
}

/* ---- save / load: bit-identical continuation ---- */

static void run_steps(struct optim *o, struct table *tb, int from, int to)
{
	struct err e;
	for (int t = from; t < to; t++) {
		table_set_grads(tb, t % NSTEPS);
		CHECK(optim_step(o, t, &e) == 0);
	}
}

static void resume_case(const char *set, int fp64)
{
	struct table a, b;
	struct config c;
	struct optim *oa, *ob;
	struct err e;
	int f;
	char sets[4][128];
	int ns = 0;
	char path[] = "/tmp/supkit_optim_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	for (const char *q = set; *q && ns < 4; ns++) {   /* key=value words, space-separated */
		size_t l = strcspn(q, " ");
		snprintf(sets[ns], sizeof sets[ns], "%.*s", (int)l, q);
		q += l + (q[l] == ' ');
	}
	CHECK(make_config(&c, sets, ns, &f) == 0);
	c.dtype = fp64 ? DTYPE_F64 : DTYPE_F32;
	table_make(&a, fp64);
	CHECK(optim_create(&c, &a.t, fp64, &oa, &e) == 0);
	run_steps(oa, &a, 0, 2);
	CHECKF(optim_save(oa, path, &e) == 0, "%s", e.msg);
	/* b: a's parameters after 2 steps as a checkpoint holds them (bf16 for
	 * bf16-stored tensors, fp32 otherwise), fresh optimizer + load */
	table_make(&b, fp64);
	for (size_t i = 0; i < a.t.n; i++)
		for (size_t k = 0; k < a.p[i].numel; k++) {
			float v = fp64 ? (float)a.p[i].w64[k] : a.p[i].w[k];
			b.p[i].w[k] = a.p[i].store == PARAM_BF16 ? bf16_round(v) : v;
			if (fp64)
				b.p[i].w64[k] = b.p[i].w[k];
		}
	CHECK(optim_create(&c, &b.t, fp64, &ob, &e) == 0);
	CHECKF(optim_load(ob, path, &e) == 0, "%s", e.msg);
	run_steps(oa, &a, 2, 5);
	run_steps(ob, &b, 2, 5);
	for (size_t i = 0; i < a.t.n; i++) {
		if (!fp64)   /* fp64 runs update w64 only (the model mirrors w) */
			CHECKF(memcmp(a.p[i].w, b.p[i].w, a.p[i].numel * sizeof(float)) == 0,
			       "%s %s", set, a.p[i].name);
		else
			CHECK(memcmp(a.p[i].w64, b.p[i].w64, a.p[i].numel * sizeof(double)) == 0);
		CHECK(optim_adamw_count(oa, i) == optim_adamw_count(ob, i));
	}
	optim_free(oa);
	optim_free(ob);
	table_free(&a);
	table_free(&b);
	unlink(path);
}

TEST(state_resume_bit_identical)
{
	if (!fixture_load()) {
		CHECK(0);
		return;
	}
	resume_case("arm=00_dense_native", 0);
	resume_case("step0=disp_only_nomom", 0);
	resume_case("embed_state=fp32", 0);
	resume_case("neumann=1", 0);
	resume_case("muoneq=bieq", 1);
	/* Zeta's second moment travels in the state file */
	resume_case("zeta=1", 0);
	resume_case("zeta=1", 1);
	/* MALT's row and column EMAs as well */
	resume_case("malt=1", 0);
	resume_case("malt=1", 1);
	/* #2d (no EMA: no MALT records) */
	resume_case("malt=1 malt_input=momentum malt_beta=0", 0);
	resume_case("malt=1 malt_input=momentum malt_beta=0", 1);
	/* AdamW's m, v and counter of the block matrices (matrix_optim = adamw) */
	resume_case("matrix_optim=adamw", 0);
	resume_case("matrix_optim=adamw", 1);
	/* Muon2-F's buffer as well (NormPre-G has no state of its own) */
	resume_case("muon2f=1", 0);
	resume_case("muon2f=1", 1);
	resume_case("normpre_g=1", 0);
}

/* Zeta's and MALT's state records: a zeta = 1 (malt = 1) file needs them
 * and a zeta = 0 (malt = 0) run refuses them, naming the file and record. */
TEST(state_load_zeta_malt_records)
{
	struct table a;
	struct config c0, c1;
	struct optim *o0, *o1;
	struct err e;
	int f;
	char sets[1][128] = {"zeta=1"};
	char p0[] = "/tmp/supkit_optim_XXXXXX", p1[] = "/tmp/supkit_optim_XXXXXX";
	int fd0 = mkstemp(p0), fd1 = mkstemp(p1);
	CHECK(fd0 >= 0 && fd1 >= 0);
	close(fd0);
	close(fd1);
	CHECK(make_config(&c0, NULL, 0, &f) == 0);
	CHECK(make_config(&c1, sets, 1, &f) == 0);
	table_make(&a, 0);
	CHECK(optim_create(&c0, &a.t, 0, &o0, &e) == 0);
	CHECK(optim_create(&c1, &a.t, 0, &o1, &e) == 0);
	CHECK(optim_save(o0, p0, &e) == 0);
	CHECK(optim_save(o1, p1, &e) == 0);
	CHECK(optim_load(o1, p0, &e) == -1);
	CHECKF(strstr(e.msg, p0) && strstr(e.msg, "the state needs zeta_second_moment"), "%s", e.msg);
	CHECK(optim_load(o0, p1, &e) == -1);
	CHECKF(strstr(e.msg, p1) && strstr(e.msg, ".zeta_second_moment': Zeta state, but the run has zeta = 0"),
	       "%s", e.msg);
	CHECKF(optim_load(o1, p1, &e) == 0, "%s", e.msg);
	/* MALT's two records the same way */
	struct config c2;
	struct optim *o2;
	char sets2[1][128] = {"malt=1"};
	CHECK(make_config(&c2, sets2, 1, &f) == 0);
	CHECK(optim_create(&c2, &a.t, 0, &o2, &e) == 0);
	CHECK(optim_save(o2, p1, &e) == 0);
	CHECK(optim_load(o2, p0, &e) == -1);
	CHECKF(strstr(e.msg, p0) && strstr(e.msg, "the state needs malt_row_ema and malt_col_ema"), "%s", e.msg);
	CHECK(optim_load(o0, p1, &e) == -1);
	CHECKF(strstr(e.msg, p1) && strstr(e.msg, ".malt_row_ema': MALT state, but the run has malt = 0"),
	       "%s", e.msg);
	CHECKF(optim_load(o2, p1, &e) == 0, "%s", e.msg);
	/* malt_beta = 0 keeps no EMAs: its file has no MALT records, and it
	 * refuses a file that has them */
	struct config c4;
	struct optim *o4;
	char sets4[3][128] = {"malt=1", "malt_input=momentum", "malt_beta=0"};
	CHECK(make_config(&c4, sets4, 3, &f) == 0);
	CHECK(optim_create(&c4, &a.t, 0, &o4, &e) == 0);
	CHECK(optim_load(o4, p1, &e) == -1);
	CHECKF(strstr(e.msg, p1) && strstr(e.msg, ".malt_row_ema': MALT state, but the run has malt_beta = 0"),
	       "%s", e.msg);
	CHECK(optim_save(o4, p1, &e) == 0);
	CHECKF(optim_load(o4, p1, &e) == 0, "%s", e.msg);
	CHECKF(optim_load(o0, p1, &e) == 0, "%s", e.msg);   /* the same records as malt = 0 */
	optim_free(o4);
	/* Muon2-F's record the same way */
	struct config c3;
	struct optim *o3;
	char sets3[1][128] = {"muon2f=1"};
	CHECK(make_config(&c3, sets3, 1, &f) == 0);
	CHECK(optim_create(&c3, &a.t, 0, &o3, &e) == 0);
	CHECK(optim_save(o3, p1, &e) == 0);
	CHECK(optim_load(o3, p0, &e) == -1);
	CHECKF(strstr(e.msg, p0) && strstr(e.msg, "the state needs muon2f_second_moment"), "%s", e.msg);
	CHECK(optim_load(o0, p1, &e) == -1);
	CHECKF(strstr(e.msg, p1) && strstr(e.msg, ".muon2f_second_moment': Muon2-F state, but the run has muon2f = 0"),
	       "%s", e.msg);
	CHECKF(optim_load(o3, p1, &e) == 0, "%s", e.msg);
	optim_free(o3);
	optim_free(o2);
	optim_free(o0);
	optim_free(o1);
	table_free(&a);
	unlink(p0);
	unlink(p1);
}

/* matrix_optim = adamw keeps AdamW records for the block matrices and no
 * Muon buffers: either file is refused by the other kind of run, naming the
 * file and the record */
TEST(state_load_matrix_adamw_records)
{
	struct table a;
	struct config c0, c1;
	struct optim *o0, *o1;
	struct err e;
	int f;
	char sets[1][128] = {"matrix_optim=adamw"};
	char p0[] = "/tmp/supkit_optim_XXXXXX", p1[] = "/tmp/supkit_optim_XXXXXX";
	int fd0 = mkstemp(p0), fd1 = mkstemp(p1);
	CHECK(fd0 >= 0 && fd1 >= 0);
	close(fd0);
	close(fd1);
	CHECK(make_config(&c0, NULL, 0, &f) == 0);
	CHECK(make_config(&c1, sets, 1, &f) == 0);
	table_make(&a, 0);
	CHECK(optim_create(&c0, &a.t, 0, &o0, &e) == 0);
	CHECK(optim_create(&c1, &a.t, 0, &o1, &e) == 0);
	run_steps(o0, &a, 0, 1);
	CHECK(optim_save(o0, p0, &e) == 0);
	run_steps(o1, &a, 0, 1);
	CHECK(optim_save(o1, p1, &e) == 0);
	CHECK(optim_load(o1, p0, &e) == -1);
	CHECKF(strstr(e.msg, p0) && strstr(e.msg, ".momentum_buffer': Muon state, but the run steps the "
					      "block matrices with AdamW (matrix_optim = adamw)"),
	       "%s", e.msg);
	CHECK(optim_load(o0, p1, &e) == -1);
	CHECKF(strstr(e.msg, p1) && strstr(e.msg, "transformer.h.0.attn.c_q.weight.exp_avg': AdamW state, "
					      "but the run steps the block matrices with Muon (matrix_optim = muon)"),
	       "%s", e.msg);
	CHECKF(optim_load(o1, p1, &e) == 0, "%s", e.msg);
	CHECKF(optim_load(o0, p0, &e) == 0, "%s", e.msg);
	optim_free(o0);
	optim_free(o1);
	table_free(&a);
	unlink(p0);
	unlink(p1);
}

TEST(state_load_rejects_bad_files)
{
	if (!fixture_load()) {
		CHECK(0);
		return;
	}
	struct table a;
	struct config c;
	struct optim *o;
	struct err e;
	int f;
	char path[] = "/tmp/supkit_optim_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	make_config(&c, NULL, 0, &f);
	table_make(&a, 0);
	CHECK(optim_create(&c, &a.t, 0, &o, &e) == 0);
	run_steps(o, &a, 0, 1);
	CHECK(optim_save(o, path, &e) == 0);
	char *data;
	size_t len;
	CHECK(file_read_all(path, 0, &data, &len, &e) == 0);
	/* the in-memory reader and writer: the file's bytes */
	size_t blen;
	unsigned char *bytes = optim_state_bytes(o, &blen);
	CHECK(blen == len && !memcmp(bytes, data, len));
	free(bytes);
	CHECKF(optim_load_mem(o, data, len, path, &e) == 0, "%s", e.msg);
	struct err e2;
	CHECK(optim_load_mem(o, data, len - 5, path, &e2) == -1);
	/* truncated */
	CHECK(file_write_atomic(path, data, len - 5, &e) == 0);
	CHECK(optim_load(o, path, &e) == -1);
	CHECK(e.code == EXIT_USAGE && strstr(e.msg, path) && strstr(e.msg, "truncated"));
	CHECK_STREQ(e.msg, e2.msg);
	/* bad magic */
	data[0] = 'X';
	CHECK(file_write_atomic(path, data, len, &e) == 0);
	CHECK(optim_load(o, path, &e) == -1 && strstr(e.msg, "not an optimizer state"));
	/* unknown record name: rename the first record's first letter */
	data[0] = 'S';
	char name0 = data[20];
	data[20] = '#';
	CHECK(file_write_atomic(path, data, len, &e) == 0);
	CHECK(optim_load(o, path, &e) == -1 && strstr(e.msg, "record 0"));
	/* a file without any record: Muon buffers missing */
	char empty[16] = "SUPKOPT1";
	CHECK(file_write_atomic(path, empty, sizeof empty, &e) == 0);
	CHECK(optim_load(o, path, &e) == -1 && strstr(e.msg, "momentum_buffer"));
	/* values out of range, each in the first record of its kind: a
	 * negative second moment, a NaN momentum, a negative AdamW step */
	data[20] = name0;   /* the file as saved */
	CHECK(file_write_atomic(path, data, len, &e) == 0);
	CHECKF(optim_load(o, path, &e) == 0, "%s", e.msg);
	struct { const char *suffix; double v; const char *want; } bad[] = {
		{".exp_avg_sq", -1.0, "is -1, not a finite number >= 0"},
		{".second_momentum_buffer", -0.5, "is -0.5, not a finite number >= 0"},
		{".momentum_buffer", NAN, "is nan, not a finite number"},
		{".exp_avg", INFINITY, "is inf, not a finite number"},
		{".step", -1.0, "-1 is negative"},
		/* values the run's state cannot hold: fp32 momentum, wte's bf16
		 * moments (embed_state = bf16), a masked q_tau entry */
		{".momentum_buffer", 0.1, "entry 0 is 0.10000000000000001, not a value the run's fp32 state holds"},
		{".momentum_buffer", 1e300, "is 1.0000000000000001e+300, not a value the run's fp32 state holds"},
		{".exp_avg", 1.0009765625, "entry 0 is 1.0009765625, not a value the run's bf16 state holds"},
		{"q_tau.exp_avg", 0.5, "entry 0 is 0.5, but it is masked (held at 0)"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		char *x = malloc(len);
		memcpy(x, data, len);
		size_t at = 16, hit = 0;
		while (at + 4 <= len && !hit) {
			uint32_t nl;
			memcpy(&nl, x + at, 4);
			const char *name = x + at + 4;
			size_t sl = strlen(bad[k].suffix);
			uint64_t cnt;
			memcpy(&cnt, x + at + 4 + nl + 4, 8);
			size_t d = at + 4 + nl + 12;
			if (nl >= sl && !memcmp(name + nl - sl, bad[k].suffix, sl) &&
			    (sl != strlen(".exp_avg") || name[nl - sl - 1] != 'q')) {
				if (!strcmp(bad[k].suffix, ".step")) {
					int64_t v = (int64_t)bad[k].v;
					memcpy(x + d, &v, 8);
				} else {
					memcpy(x + d, &bad[k].v, 8);
				}
				hit = 1;
			}
			at = d + 8 * cnt;
		}
		CHECKF(hit, "no record ending in '%s'", bad[k].suffix);
		CHECK(file_write_atomic(path, x, len, &e) == 0);
		CHECKF(optim_load(o, path, &e) == -1 && strstr(e.msg, bad[k].want) && strstr(e.msg, bad[k].suffix + 1) &&
		       strstr(e.msg, path), "'%s': %s", bad[k].suffix, e.msg);
		free(x);
	}
	free(data);
	optim_free(o);
	table_free(&a);
	unlink(path);
}

/* The model's OE tables (bf16 value and gradient, whose update runs as the
 * optimizer device's two passes) step exactly as a table of the same values
 * kept in fp32 (the host's row-at-a-time path that the parity tests
 * check), over two steps with different visits, unvisited rows untouched. */
TEST(oe_bf16_tables_step_as_fp32_tables)
{
	enum { R = 37, C = 8, N = R * C };
	bf16 wb[N], gb[N];
	float w[N], g[N];
	uint32_t cb[R], cf[R];
	struct param p[2] = {
		{.name = "oe.0.weight", .ndim = 2, .shape = {R, C}, .numel = N, .rows = R, .cols = C,
		 .group = PG_OE, .store = PARAM_BF16, .wb = wb, .gb = gb, .counts = cb},
		{.name = "oe.1.weight", .ndim = 2, .shape = {R, C}, .numel = N, .rows = R, .cols = C,
		 .group = PG_OE, .store = PARAM_BF16, .w = w, .g = g, .counts = cf},
	};
	struct param_table t = {p, 2};
	struct config c;
	struct err e = {0};
	struct optim *o = NULL;
	struct rng r;
	rng_seed(&r, 99);
	config_defaults(&c);
	for (int i = 0; i < N; i++) {
		wb[i] = bf16_from_f32((float)(0.02 * rng_normal(&r)));
		w[i] = bf16_to_f32(wb[i]);
	}
	CHECK(optim_create(&c, &t, 0, &o, &e) == 0);
	if (!o)
		return;
	int same = 1, moved = 0, still = 1;
	for (int step = 0; step < 2; step++) {
		for (int i = 0; i < R; i++)
			cb[i] = cf[i] = i % (3 + step) ? (uint32_t)(1 + (i * 7 + step) % 5) : 0;
		for (int i = 0; i < N; i++) {
			gb[i] = bf16_from_f32((float)(0.01 * rng_normal(&r)));
			g[i] = bf16_to_f32(gb[i]);
		}
		float before[N];
		for (int i = 0; i < N; i++)
			before[i] = w[i];
		uint32_t visited[R];
		memcpy(visited, cf, sizeof visited);
		CHECK(optim_step(o, step, &e) == 0);
		for (int i = 0; i < N; i++) {
			same &= bf16_to_f32(wb[i]) == w[i];
			moved += w[i] != before[i];
			if (!visited[i / C])
				still &= w[i] == before[i];
		}
		CHECK(cb[0] == 0 && cb[1] == 0 && cf[1] == 0);   /* counts reset */
	}
	CHECKF(same, "a bf16 table and an fp32 table of the same values stepped apart");
	CHECK(moved > N / 2 && still);
	optim_free(o);
}

TEST(create_rejects_bad_tables)
{
	struct config c;
	struct err e;
	struct optim *o;
	float w[6] = {0}, g[6] = {0};
	struct param p = {.name = "x", .ndim = 1, .shape = {6}, .numel = 6, .rows = 6, .cols = 1,
			  .group = PG_MATRIX, .w = w, .g = g};
	struct param_table t = {&p, 1};
	config_defaults(&c);
	CHECK(optim_create(&c, &t, 0, &o, &e) == -1);
	CHECK(strstr(e.msg, "'x'") && strstr(e.msg, "not a matrix"));
	p.group = PG_OE;
	p.ndim = 2;
	CHECK(optim_create(&c, &t, 0, &o, &e) == -1);
	CHECK(strstr(e.msg, "visit counts") != NULL);
	p.group = PG_LM_HEAD;
	CHECK(optim_create(&c, &t, 1, &o, &e) == -1);   /* fp64 run without w64 */
}

int main(void)
{
	RUN(operators_vs_numpy);
	RUN(parity_base_fp32);
	RUN(parity_bieq_tau2);
	RUN(parity_bieq_tau0);
	RUN(parity_muoneq_r);
	RUN(parity_muoneq_rc);
	RUN(parity_neumann_direction);
	RUN(parity_neumann_gradient);
	RUN(parity_table_neumann);
	RUN(parity_step0_nostep0);
	RUN(parity_step0_mom_only_nodisp);
	RUN(parity_step0_disp_only_nomom);
	RUN(parity_step0_disp_stepcount_nomom);
	RUN(parity_step0_nostep0_all);
	RUN(parity_fp64);
	RUN(parity_embed_state_bf16);
	RUN(parity_bf16_polar_compiled);
	RUN(parity_bf16_polar_eager);
	RUN(parity_bieq_one_pass_rows);
	RUN(parity_bieq_square_only);
	RUN(parity_muoneq_r_square_only);
	RUN(parity_polar_steps4);
	RUN(parity_turbo_muon_aol4);
	RUN(parity_muoneq_r_no_normuon);
	RUN(parity_fp64_aol4);
	RUN(parity_fp64_bieq_rows1_square_no_normuon);
	RUN(parity_bf16_polar_norm_fp32);
	RUN(parity_bf16_post_polar_fp32);
	RUN(parity_bf16_turbo_muon_aol4);
	RUN(parity_zeta);
	RUN(parity_fp64_zeta);
	RUN(parity_bf16_zeta);
	RUN(parity_malt);
	RUN(parity_malt_no_normuon);
	RUN(parity_malt_beta_eps);
	RUN(parity_fp64_malt);
	RUN(parity_malt_momentum);
	RUN(parity_malt_momentum_ema);
	RUN(parity_malt_instant);
	RUN(parity_fp64_malt_momentum);
	RUN(parity_bf16_malt_momentum);
	RUN(parity_matrix_adamw);
	RUN(parity_matrix_adamw_bf16_embed);
	RUN(parity_fp64_matrix_adamw);
	RUN(parity_muon2f);
	RUN(parity_muon2f_no_normuon);
	RUN(parity_fp64_muon2f);
	RUN(parity_bf16_muon2f);
	RUN(parity_normpre_g);
	RUN(parity_normpre_g_no_tangent);
	RUN(parity_fp64_normpre_g);
	RUN(parity_bf16_normpre_g);
	RUN(state_load_zeta_malt_records);
	RUN(state_load_matrix_adamw_records);
	RUN(schedule_vs_train_py);
	RUN(bieq_identity_at_step0);
	RUN(neumann_keeps_zero_rows_and_norm);
	RUN(nostep0_leaves_scalars_untouched);
	RUN(masked_q_tau_stays_zero);
	RUN(state_resume_bit_identical);
	RUN(state_load_rejects_bad_files);
	RUN(oe_bf16_tables_step_as_fp32_tables);
	RUN(create_rejects_bad_tables);
	return t_done();
}
