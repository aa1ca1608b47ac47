/* test_step0.c: the step-0 audit (audit/step0.c) against the closed form of
 * audit/step0.h, a central finite difference of the float64 loss and
 * PyTorch's float64 autograd (tests/fixtures/step0/torch_step0.json, made by
 * make.py there with tests/reference/torch_model.py), the
 * eps = 0 scale invariance, the trainer optimizer's step-0 displacement
 * against the AdamW formula (docs/model.md), the batch the trainer draws, and
 * the trajectory's step-0 modes (the step0 key). Model: tests/fixtures/train/tiny.cfg on
 * tests/fixtures/train/data (depth 2, d 64, V 512, T 64, B 4, K 2).
 * Leaves out: the CLI (tests/cli/audit_step0.sh). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../t.h"
#include "audit/step0.h"
#include "lib/bf16.h"
#include "lib/json.h"
#include "trainer/model.h"
#include "trainer/optim.h"

static char cfg_path[512], data_dir[512];

/* tiny.cfg, with sets applied; shards of the fixture data. */
static int setup(struct config *c, const char *const *sets, int n, char ***shards, int *ns)
{
	struct err e;
	err_clear(&e);
	if (step0_config_load(cfg_path, sets, n, NULL, c, &e) < 0 ||
	    step0_shards_resolve((const char *const[]){data_dir}, 1, NULL, shards, ns, &e) < 0) {
		CHECKF(0, "setup: %s", e.msg);
		return -1;
	}
	return 0;
}

static const char *const routed[] = {"wte_lambdas=1", "out_lambdas=1"};

static double rel(double a, double b)
{
	return fabs(a - b) / (fabs(b) > 0 ? fabs(b) : 1e-300);
}

TEST(batch_is_the_trainers_first_batch)
{
	struct config c;
	char **sh;
	int ns;
	struct err e;
	if (setup(&c, NULL, 0, &sh, &ns) < 0)
		return;
	struct step0_batch b, s;
	CHECK(step0_batch_load(&c, (const char *const *)sh, ns, 0, &b, &e) == 0);
	CHECK(b.n_micro == c.grad_accum && b.T == c.seq_len);
	CHECK(b.tokens == (int64_t)c.grad_accum * c.batch_rows * c.seq_len);
	for (int k = 0; k < b.n_micro; k++) {
		CHECK(b.rows[k] == c.batch_rows);
		CHECK_NEAR(b.scale[k], 1.0 / c.grad_accum, 1e-15);
		/* rows start with BOS and targets are inputs shifted by one */
		for (int r = 0; r < b.rows[k]; r++)
			for (int t = 0; t + 1 < b.T; t++)
				CHECK(b.targets[k][r * b.T + t] == b.inputs[k][r * b.T + t + 1]);
	}
	/* 5 rows: micro-step 0 holds rows 0..3, micro-step 1 row 4 (= batch row 4) */
	CHECK(step0_batch_load(&c, (const char *const *)sh, ns, 5 * c.seq_len, &s, &e) == 0);
	CHECK(s.n_micro == 2 && s.rows[0] == 4 && s.rows[1] == 1);
	CHECK_NEAR(s.scale[0], 0.8, 1e-15);
	CHECK(!memcmp(s.inputs[1], b.inputs[1], (size_t)c.seq_len * sizeof(int32_t)));
	step0_batch_free(&s);
	CHECK(step0_batch_load(&c, (const char *const *)sh, ns, 10, &s, &e) == 0);
	CHECK(s.n_micro == 1 && s.rows[0] == 1 && s.T == 10 && s.scale[0] == 1.0);
	CHECK(!memcmp(s.inputs[0], b.inputs[0], 10 * sizeof(int32_t)));
	step0_batch_free(&s);
	CHECK(step0_batch_load(&c, (const char *const *)sh, ns, c.seq_len + 1, &s, &e) < 0 && e.code == EXIT_USAGE);
	CHECK(strstr(e.msg, "--tokens") != NULL);
	CHECK(step0_batch_load(&c, (const char *const *)sh, ns, b.tokens + c.seq_len, &s, &e) < 0);
	step0_batch_free(&b);
	step0_shards_free(sh, ns);
}

TEST(shards_resolve)
{
	char **sh;
	int ns;
	struct err e;
	char f[600];
	snprintf(f, sizeof f, "%s/train_0000.bin", data_dir);
	CHECK(step0_shards_resolve((const char *const[]){f}, 1, NULL, &sh, &ns, &e) == 0 && ns == 1);
	step0_shards_free(sh, ns);
	CHECK(step0_shards_resolve(NULL, 0, data_dir, &sh, &ns, &e) == 0 && ns == 1);
	CHECK(strstr(sh[0], "train_0000.bin") != NULL);
	step0_shards_free(sh, ns);
	CHECK(step0_shards_resolve(NULL, 0, "", &sh, &ns, &e) < 0 && e.code == EXIT_USAGE);
	CHECK(step0_shards_resolve((const char *const[]){"/nonexistent/x.bin"}, 1, NULL, &sh, &ns, &e) < 0);
	CHECK(strstr(e.msg, "/nonexistent/x.bin") != NULL);
	CHECK(step0_shards_resolve((const char *const[]){t_fixtures()}, 1, NULL, &sh, &ns, &e) < 0);
	CHECK(strstr(e.msg, "train_*.bin") != NULL);
}

/* float64 backward = closed form to 1e-6 at eps > 0; zero at eps = 0. */
TEST(float64_gradient_is_the_closed_form)
{
	struct config c;
	char **sh;
	int ns;
	struct err e;
	if (setup(&c, routed, 2, &sh, &ns) < 0)
		return;
	struct step0_batch b;
	CHECK(step0_batch_load(&c, (const char *const *)sh, ns, 0, &b, &e) == 0);
	struct step0_eval g0, z0;
	CHECK(step0_eval_run(&c, &b, 1, 0.0, &g0, &e) == 0);
	CHECK(step0_closed_form(&c, &b, 0.0, &z0, &e) == 0);
	for (int i = 1; i < STEP0_NEPS; i++) {
		struct step0_eval g, cf;
		CHECK(step0_eval_run(&c, &b, 1, step0_eps[i], &g, &e) == 0);
		CHECK(step0_closed_form(&c, &b, step0_eps[i], &cf, &e) == 0);
		CHECK_NEAR(g.loss, cf.loss, 1e-12);
		CHECK_NEAR(g.loss, z0.loss, 1e-5);
		int nchecked = 0;
		for (int f = 0; f < S0_NFAM; f++) {
			CHECK(g.n[f] == cf.n[f] && g.n[f] > 0);
			for (size_t j = 0; j < g.n[f]; j++) {
				CHECKF(rel(g.grad[f][j], cf.grad[f][j]) <= 1e-6, "%s[%zu] eps %s: %.17g vs closed %.17g",
				       step0_family_name(f), j, step0_eps_label[i], g.grad[f][j], cf.grad[f][j]);
				CHECK(cf.grad[f][j] != 0);
				/* eps = 0: zero to 1e-15 of the terms that cancel, and far below eps > 0 */
				CHECKF(fabs(g0.grad[f][j]) <= 1e-15 * z0.mag[f][j], "%s[%zu]: %.3g vs terms %.3g",
				       step0_family_name(f), j, g0.grad[f][j], z0.mag[f][j]);
				CHECKF(fabs(g0.grad[f][j]) <= 1e-6 * fabs(g.grad[f][j]), "%s[%zu]: %.3g vs %.3g",
				       step0_family_name(f), j, g0.grad[f][j], g.grad[f][j]);
				CHECK(z0.grad[f][j] == 0);
				nchecked++;
			}
		}
		CHECK(nchecked == 2 * c.depth + 2 + c.depth);
		step0_eval_free(&g);
		step0_eval_free(&cf);
	}
	step0_eval_free(&g0);
	step0_eval_free(&z0);
	step0_batch_free(&b);
	step0_shards_free(sh, ns);
}

/* The batch loss with scalar j of family fam moved to v (float64 model). */
static double loss_at(struct model *m, const struct step0_batch *b, const char *fam, size_t j, double v)
{
	struct param *p = param_find(model_params(m), fam);
	double keep = p->w64[j], l = NAN;
	struct err e;
	p->w64[j] = v;
	if (step0_batch_loss(m, b, &l, &e) < 0)
		printf("  loss: %s\n", e.msg);
	p->w64[j] = keep;
	return l;
}

/* A step-0 checkpoint of c (c_proj and OE stay zero) whose lm_head is scaled
 * by k and whose resid_lambdas are `resid`: logits of order one and a small
 * final scale alpha (0.22 at depth 2 with resid 0.3), so that the
 * eps-derivative, of order eps <u, x0> / alpha^3, stands above the float64
 * rounding of the loss (~1e-16) in a finite difference. At the init values
 * (lm_head ~ N(0, 1e-6), alpha = 1.2) it is ~1e-10 and a difference quotient
 * resolves it to ~1e-3 only; the closed-form test covers those values. */
static int scaled_checkpoint(const struct config *c, double k, double resid, const char *path)
{
	struct model *m;
	struct err e;
	if (model_create(c, &m, &e) < 0)
		return -1;
	struct param *p = param_find(model_params(m), "lm_head.weight");
	for (size_t i = 0; p && i < p->numel; i++)
		p->w[i] = (float)(p->w[i] * k);
	struct param *rs = param_find(model_params(m), "resid_lambdas");
	for (size_t i = 0; rs && i < rs->numel; i++)
		rs->w[i] = (float)resid;
	int r = p && rs ? model_save(m, path, NULL, &e) : -1;
	model_free(m);
	return r;
}

/* Central finite difference of the float64 loss (fourth-order stencil), on
 * the step-0 state with an order-one lm_head (scaled_checkpoint). */
TEST(float64_gradient_is_the_finite_difference)
{
	struct config c;
	char **sh;
	int ns;
	struct err e;
	char ck[] = "/tmp/test_step0_XXXXXX";
	if (setup(&c, routed, 2, &sh, &ns) < 0)
		return;
	if (!mkdtemp(ck)) {
		CHECK(0);
		step0_shards_free(sh, ns);
		return;
	}
	char path[300];
	snprintf(path, sizeof path, "%s/scaled.safetensors", ck);
	CHECK(scaled_checkpoint(&c, 1000, 0.3, path) == 0);
	snprintf(c.init_from, sizeof c.init_from, "%s", path);
	struct step0_batch b;
	CHECK(step0_batch_load(&c, (const char *const *)sh, ns, 0, &b, &e) == 0);
	for (int i = 1; i < STEP0_NEPS; i++) {
		struct step0_eval g;
		struct model *m;
		CHECK(step0_eval_run(&c, &b, 1, step0_eps[i], &g, &e) == 0);
		CHECK(step0_model_create(&c, 1, step0_eps[i], &m, &e) == 0);
		const double h = 1.5e-3;
		double worst = 0;
		for (int f = 0; f < S0_NFAM; f++)
			for (size_t j = 0; j < g.n[f]; j++) {
				const char *fam = step0_family_name(f);
				double v = g.value[f][j];
				double fd = (8 * (loss_at(m, &b, fam, j, v + h) - loss_at(m, &b, fam, j, v - h)) -
					     (loss_at(m, &b, fam, j, v + 2 * h) - loss_at(m, &b, fam, j, v - 2 * h))) /
					    (12 * h);
				CHECKF(rel(fd, g.grad[f][j]) <= 1e-6, "%s[%zu] eps %s: fd %.17g vs %.17g (rel %.3g)",
				       fam, j, step0_eps_label[i], fd, g.grad[f][j], rel(fd, g.grad[f][j]));
				if (rel(fd, g.grad[f][j]) > worst)
					worst = rel(fd, g.grad[f][j]);
			}
		printf("  eps %s: finite difference within %.2g of the backward\n", step0_eps_label[i], worst);
		/* the closed form holds on this state too */
		struct step0_eval cf;
		CHECK(step0_closed_form(&c, &b, step0_eps[i], &cf, &e) == 0);
		for (int f = 0; f < S0_NFAM; f++)
			for (size_t j = 0; j < g.n[f]; j++)
				CHECK(rel(g.grad[f][j], cf.grad[f][j]) <= 1e-6);
		step0_eval_free(&cf);
		model_free(m);
		step0_eval_free(&g);
	}
	unlink(path);
	rmdir(ck);
	step0_batch_free(&b);
	step0_shards_free(sh, ns);
}

/* The displacement is the trainer optimizer's step 0: AdamW at t = 1 is
 * -lr g / (|g| + 1e-10) (m_hat = g, v_hat = g^2); the step-0 mode
 * nostep0 leaves wte/out lambdas alone. */
TEST(displacement_is_the_adamw_step)
{
	struct config c;
	char **sh;
	int ns;
	struct err e;
	const char *sets[] = {"wte_lambdas=1", "out_lambdas=1", "step0=nostep0"};
	if (setup(&c, sets, 3, &sh, &ns) < 0)
		return;
	struct step0_batch b;
	CHECK(step0_batch_load(&c, (const char *const *)sh, ns, 0, &b, &e) == 0);
	struct step0_eval g, lo;
	CHECK(step0_eval_run(&c, &b, 1, c.norm_eps, &g, &e) == 0);
	CHECK(step0_eval_run(&c, &b, 0, -1, &lo, &e) == 0);
	CHECK(g.eps == c.norm_eps && lo.eps == c.norm_eps && !lo.fp64);
	const double lr[S0_NFAM] = {0.005, 0.5, 0.5, 0.5};
	for (int f = 0; f < S0_NFAM; f++) {
		for (size_t j = 0; j < g.n[f]; j++) {
			double gg = g.grad[f][j], want = f >= S0_WTE ? 0 : -lr[f] * gg / (fabs(gg) + 1e-10);
			CHECK_NEAR(g.disp[f][j], want, 1e-12);
			/* the trainer's arithmetic: a finite, non-zero gradient and a step no larger than lr */
			CHECK(isfinite(lo.grad[f][j]) && lo.grad[f][j] != 0);
			CHECK(fabs(lo.disp[f][j]) <= lr[f] * (1 + 1e-6));
			CHECK(f < S0_WTE || lo.disp[f][j] == 0);
		}
		CHECK(g.count[f] == (f >= S0_WTE ? 0 : 1));
		CHECK(lo.count[f] == g.count[f]);
	}
	CHECK(fabs(lo.loss - g.loss) <= 1e-3 * g.loss);
	step0_eval_free(&g);
	step0_eval_free(&lo);
	step0_batch_free(&b);
	step0_shards_free(sh, ns);
}

/* The audit record: every family, the three float64 epsilons, the closed
 * form, the comparison; a dense init has no closed form and says why. */
TEST(audit_record)
{
	struct config c;
	char **sh;
	int ns;
	struct err e;
	if (setup(&c, routed, 2, &sh, &ns) < 0)
		return;
	struct step0_batch b;
	CHECK(step0_batch_load(&c, (const char *const *)sh, ns, 2 * c.seq_len, &b, &e) == 0);
	cJSON *r = step0_audit(&c, &b, (const char *const *)sh, ns, 1, &e);
	CHECK(r != NULL);
	if (r) {
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(r, "float64")) == STEP0_NEPS);
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(r, "closed_form")) == STEP0_NEPS - 1);
		const cJSON *cmp = cJSON_GetObjectItem(r, "comparison");
		CHECK_STREQ(cJSON_GetObjectItem(cmp, "reference")->valuestring, "2^-23");
		CHECK(cJSON_GetObjectItem(cmp, "scalars")->valuedouble == 2 * c.depth + c.depth + 2);
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(cmp, "out_lambdas")) == 2);
		char *a = json_print(r, 1);
		cJSON *r2 = step0_audit(&c, &b, (const char *const *)sh, ns, 1, &e);
		char *b2 = r2 ? json_print(r2, 1) : NULL;
		CHECK(b2 && !strcmp(a, b2));   /* deterministic */
		free(a);
		free(b2);
		cJSON_Delete(r2);
		cJSON_Delete(r);
	}
	/* eps not in the sweep: one more float64 evaluation, the reference */
	c.norm_eps = 1e-5;
	r = step0_audit(&c, &b, NULL, 0, 1, &e);
	CHECK(r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "float64")) == STEP0_NEPS + 1);
	CHECK(r && !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "comparison"), "reference")->valuestring,
			   "config"));
	CHECK(r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "closed_form")) == STEP0_NEPS);
	cJSON_Delete(r);
	c.norm_eps = 1.1920928955078125e-07;
	/* shared anchor with its own eps: x0_wte = c x0, c != 1; the reference is
	 * the config as it is, and the closed form holds there too */
	c.anchor = ANCHOR_SHARED;
	c.shared_eps = 1e-2;
	struct step0_eval g, cf;
	CHECK(step0_eval_run(&c, &b, 1, -1, &g, &e) == 0);
	CHECK(step0_closed_form(&c, &b, -1, &cf, &e) == 0);
	for (int f = 0; f < S0_NFAM; f++)
		for (size_t j = 0; j < g.n[f]; j++)
			CHECKF(rel(g.grad[f][j], cf.grad[f][j]) <= 1e-6, "%s[%zu]: %.17g vs %.17g", step0_family_name(f),
			       j, g.grad[f][j], cf.grad[f][j]);
	CHECK(fabs(g.grad[S0_WTE][0] / g.grad[S0_X0][0] - 1) > 1e-3);   /* c != 1 shows */
	step0_eval_free(&g);
	step0_eval_free(&cf);
	r = step0_audit(&c, &b, NULL, 0, 1, &e);
	CHECK(r && !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "comparison"), "reference")->valuestring,
			   "config"));
	cJSON_Delete(r);
	c.anchor = ANCHOR_SEPARATE;
	c.init = INIT_DENSE;
	r = step0_audit(&c, &b, NULL, 0, 1, &e);
	const cJSON *sk = r ? cJSON_GetObjectItem(r, "closed_form_skipped") : NULL;
	CHECK(cJSON_IsString(sk) && strstr(sk->valuestring, "c_proj") != NULL);
	CHECK(r && !cJSON_GetObjectItem(r, "closed_form"));
	cJSON_Delete(r);
	step0_batch_free(&b);
	step0_shards_free(sh, ns);
}

static const cJSON *jget(const cJSON *o, const char *path)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *k = strtok(buf, "/"); k && o; k = strtok(NULL, "/"))
		o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(k)) : cJSON_GetObjectItemCaseSensitive(o, k);
	return o;
}

static double jd(const cJSON *o, const char *path)
{
	const cJSON *v = jget(o, path);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The trajectory's modes do what supkit-train(1) says to the state after step 0. */
TEST(trajectory_modes)
{
	struct config c;
	char **sh;
	int ns;
	struct err e;
	if (setup(&c, NULL, 0, &sh, &ns) < 0)
		return;
	cJSON *r = step0_trajectory(&c, (const char *const *)sh, ns, 2, 1, &e);
	CHECK(r != NULL);
	if (!r) {
		printf("  %s\n", e.msg);
		step0_shards_free(sh, ns);
		return;
	}
	const cJSON *modes = cJSON_GetObjectItem(r, "modes");
	CHECK(cJSON_GetArraySize(modes) == 6);
	const char *names[] = {"none", "nostep0", "mom_only_nodisp", "disp_only_nomom", "disp_stepcount_nomom",
			       "nostep0_all"};
	double loss0 = jd(modes, "0/steps/0/loss");
	for (int i = 0; i < 6; i++) {
		const cJSON *m = cJSON_GetArrayItem(modes, i);
		CHECK_STREQ(cJSON_GetObjectItem(m, "mode")->valuestring, names[i]);
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "wte_lambdas_switched_on")) == (i != 0 && i != 5));
		CHECK(cJSON_GetArraySize(jget(m, "steps")) == 2);
		CHECK(jd(m, "steps/0/loss") == loss0);   /* same model and batch at step 0 */
	}
	const cJSON *s0;
	/* none: AdamW state made, exp_avg = (1 - 0.96) g for x0_lambdas */
	s0 = jget(modes, "0/steps/0");
	CHECK(jd(s0, "adamw_step/x0_lambdas") == 1);
	CHECK_NEAR(jd(s0, "exp_avg/x0_lambdas/0") / jd(s0, "grad/x0_lambdas/0"), 0.04, 1e-6);
	CHECK(jd(s0, "value_after/x0_lambdas/0") != jd(s0, "value/x0_lambdas/0"));
	/* nostep0: wte_lambdas unmoved, no state (null moments), counter 0 */
	s0 = jget(modes, "1/steps/0");
	CHECK(jd(s0, "value_after/wte_lambdas/0") == jd(s0, "value/wte_lambdas/0"));
	CHECK(jd(s0, "adamw_step/wte_lambdas") == 0);
	CHECK(cJSON_IsNull(jget(s0, "exp_avg/wte_lambdas")));
	CHECK(jd(s0, "adamw_step/x0_lambdas") == 1);
	/* mom_only_nodisp: state made, value kept */
	s0 = jget(modes, "2/steps/0");
	CHECK(jd(s0, "value_after/wte_lambdas/0") == jd(s0, "value/wte_lambdas/0"));
	CHECK(jd(s0, "adamw_step/wte_lambdas") == 1 && jd(s0, "exp_avg/wte_lambdas/0") != 0);
	/* disp_only_nomom: moved, counter back to 0, moments zero */
	s0 = jget(modes, "3/steps/0");
	CHECK(jd(s0, "value_after/wte_lambdas/0") != jd(s0, "value/wte_lambdas/0"));
	CHECK(jd(s0, "adamw_step/wte_lambdas") == 0);
	CHECK(jd(s0, "exp_avg/wte_lambdas/0") == 0 && jd(s0, "exp_avg_sq/wte_lambdas/0") == 0);
	CHECK(jd(modes, "3/steps/1/adamw_step/wte_lambdas") == 1);
	/* disp_stepcount_nomom: moved, counter 1, moments zero */
	s0 = jget(modes, "4/steps/0");
	CHECK(jd(s0, "value_after/wte_lambdas/0") != jd(s0, "value/wte_lambdas/0"));
	CHECK(jd(s0, "adamw_step/wte_lambdas") == 1);
	CHECK(jd(s0, "exp_avg/wte_lambdas/0") == 0 && jd(s0, "exp_avg_sq/wte_lambdas/1") == 0);
	CHECK(jd(modes, "4/steps/1/adamw_step/wte_lambdas") == 2);
	/* nostep0_all: no family moves at step 0, no wte_lambdas in this config */
	s0 = jget(modes, "5/steps/0");
	CHECK(jd(s0, "value_after/x0_lambdas/1") == jd(s0, "value/x0_lambdas/1"));
	CHECK(jd(s0, "value_after/resid_lambdas/0") == jd(s0, "value/resid_lambdas/0"));
	CHECK(jd(s0, "adamw_step/resid_lambdas") == 0 && !jget(s0, "grad/wte_lambdas"));
	CHECK(jd(modes, "5/steps/1/adamw_step/resid_lambdas") == 1);
	/* the next step starts from the values the previous one left */
	CHECK(jd(modes, "0/steps/1/value/x0_lambdas/0") == jd(modes, "0/steps/0/value_after/x0_lambdas/0"));
	cJSON_Delete(r);
	step0_shards_free(sh, ns);
}

/* ---- against PyTorch (tests/fixtures/step0/torch_step0.json, make.py) ---- */

/* The fixture generator of tests/reference/torch_model.py (fixture_value):
 * a (2u - 1), u from mix64(seed + fnv1a(name) + (j+1) golden). */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_fixture(struct param *p, uint64_t seed, double a, int bf16)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *s = p->name; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	for (size_t j = 0; j < p->numel; j++) {
		uint64_t z = mix64(seed + h + (uint64_t)(j + 1) * 0x9e3779b97f4a7c15ull);
		float v = (float)(a * (2 * ((double)(z >> 11) * 0x1.0p-53) - 1));
		param_w_set(p, j, bf16 ? bf16_round(v) : v);
	}
}

TEST(float64_gradient_matches_pytorch)
{
	char path[600];
	snprintf(path, sizeof path, "%s/step0/torch_step0.json", t_fixtures());
	struct err e;
	cJSON *j = json_read_file(path, 0, &e);
	if (!j) {
		printf("  %s\n", e.msg);
		CHECK(0);
		return;
	}
	struct config c;
	config_defaults(&c);
	const cJSON *kv;
	cJSON_ArrayForEach(kv, cJSON_GetObjectItem(j, "config"))
		CHECK(config_set(&c, kv->valuestring, &e) == 0);
	CHECK(config_validate(&c, &e) == 0);
	/* the step-0 model with the fixture's wte and lm_head, as a checkpoint */
	char ck[] = "/tmp/test_step0_XXXXXX", cpath[300];
	CHECK(mkdtemp(ck) != NULL);
	snprintf(cpath, sizeof cpath, "%s/torch.safetensors", ck);
	struct model *m;
	CHECK(model_create(&c, &m, &e) == 0);
	uint64_t seed = (uint64_t)cJSON_GetObjectItem(j, "fill_seed")->valuedouble;
	struct param *wte = param_find(model_params(m), "transformer.wte.weight");
	struct param *lm = param_find(model_params(m), "lm_head.weight");
	fill_fixture(wte, seed, 1.0, 1);
	fill_fixture(lm, seed, sqrt(3.0 / (double)lm->cols), 0);
	CHECK(model_save(m, cpath, NULL, &e) == 0);
	model_free(m);
	snprintf(c.init_from, sizeof c.init_from, "%s", cpath);
	/* the fixture's batch as one micro-step */
	int B = cJSON_GetObjectItem(j, "B")->valueint, T = cJSON_GetObjectItem(j, "T")->valueint;
	int32_t in[B * T], tg[B * T], *pin = in, *ptg = tg;
	int rows = B;
	double scale = 1;
	for (int i = 0; i < B * T; i++) {
		in[i] = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "inputs"), i)->valueint;
		tg[i] = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "targets"), i)->valueint;
	}
	struct step0_batch b = {.n_micro = 1, .T = T, .rows = &rows, .scale = &scale, .inputs = &pin,
				.targets = &ptg, .tokens = B * T};
	const cJSON *grads = cJSON_GetObjectItem(j, "grads");
	double big = 0;
	for (int i = STEP0_NEPS - 1; i >= 0; i--) {
		const char *lab = step0_eps_label[i];
		struct step0_eval g, cf;
		CHECK(step0_eval_run(&c, &b, 1, step0_eps[i], &g, &e) == 0);
		CHECK(step0_closed_form(&c, &b, step0_eps[i], &cf, &e) == 0);
		CHECK_NEAR(g.loss, cJSON_GetObjectItem(cJSON_GetObjectItem(j, "loss"), lab)->valuedouble, 1e-13);
		double worst = 0;
		for (int f = 0; f < S0_NFAM; f++) {
			const cJSON *a = cJSON_GetObjectItem(cJSON_GetObjectItem(grads, lab), step0_family_name(f));
			CHECK(cJSON_GetArraySize(a) == (int)g.n[f] && g.n[f] > 0);
			for (size_t k = 0; k < g.n[f] && k < (size_t)cJSON_GetArraySize(a); k++) {
				double want = cJSON_GetArrayItem(a, (int)k)->valuedouble;
				if (step0_eps[i] > 0) {
					big = fmax(big, fabs(want));
					CHECKF(rel(g.grad[f][k], want) <= 1e-6, "%s[%zu] eps %s: %.17g, torch %.17g",
					       step0_family_name(f), k, lab, g.grad[f][k], want);
					CHECK(rel(cf.grad[f][k], want) <= 1e-6);
					worst = fmax(worst, rel(g.grad[f][k], want));
				} else {
					/* eps = 0: both zero to rounding, far below the eps > 0 values */
					CHECK(fabs(g.grad[f][k]) <= 1e-15 * cf.mag[f][k]);
					CHECK(fabs(want) <= 1e-6 * big && fabs(g.grad[f][k]) <= 1e-6 * big);
				}
			}
		}
		if (step0_eps[i] > 0)
			printf("  eps %s: within %.2g of PyTorch\n", lab, worst);
		step0_eval_free(&g);
		step0_eval_free(&cf);
	}
	unlink(cpath);
	rmdir(ck);
	cJSON_Delete(j);
}

int main(void)
{
	snprintf(cfg_path, sizeof cfg_path, "%s/train/tiny.cfg", t_fixtures());
	snprintf(data_dir, sizeof data_dir, "%s/train/data", t_fixtures());
	RUN(batch_is_the_trainers_first_batch);
	RUN(shards_resolve);
	RUN(float64_gradient_is_the_closed_form);
	RUN(float64_gradient_is_the_finite_difference);
	RUN(displacement_is_the_adamw_step);
	RUN(audit_record);
	RUN(trajectory_modes);
	RUN(float64_gradient_matches_pytorch);
	return t_done();
}
