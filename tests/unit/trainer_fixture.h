/* trainer_fixture.h: the PyTorch fixtures of the trainer tests, shared by
 * tests/unit/trainer/test_model.c (CPU backend) and tests/gpu/test_cuda_ops.c
 * (the CUDA backend on the same fixtures). Header-only (static inline functions: a test uses what it needs):
 * include after t.h.
 *
 * - model_make: a model from "key=value" strings (config_defaults first).
 * - fixture_fill: the counter-based weights of tests/reference/torch_model.py
 *   (fixture_value); fixture_model: a fixture's model ("config" keys plus
 *   extra ones, weights filled, c_proj zeroed when "zero_proj").
 * - fixture_ints: an integer array of a fixture.
 * - fixture_curve: the loss curve of tests/reference/torch_train.py
 *   (curve_*.json) retrained and compared.
 */
#ifndef SUPKIT_TRAINER_FIXTURE_H
#define SUPKIT_TRAINER_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bf16.h"
#include "lib/json.h"
#include "trainer/backend_select.h"
#include "trainer/model.h"
#include "trainer/optim.h"

static inline int cfg_make(struct config *c, const char *const *kv)
{
	struct err e = {0};
	config_defaults(c);
	for (size_t i = 0; kv && kv[i]; i++)
		if (config_set(c, kv[i], &e) != 0) {
			printf("  config_set '%s': %s\n", kv[i], e.msg);
			return -1;
		}
	if (config_validate(c, &e) != 0) {
		printf("  config_validate: %s\n", e.msg);
		return -1;
	}
	return 0;
}

static inline struct model *model_make(const char *const *kv)
{
	struct config c;
	struct err e = {0};
	struct model *m = NULL;
	if (cfg_make(&c, kv) != 0)
		return NULL;
	if (model_create(&c, &m, &e) != 0) {
		printf("  model_create: %s\n", e.msg);
		return NULL;
	}
	return m;
}

/* splitmix64 finaliser over a counter: the fixture generator (the Python
 * reference implements the same). */
static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* Value j of parameter name: a * (2u - 1) + c with u in [0,1) from
 * mix64(seed + fnv1a(name) + (j+1) * golden), a and c by name (see
 * torch_model.py: fixture_value); bf16-stored values rounded to bf16;
 * masked q_tau entries 0. */
static inline void fixture_fill(struct model *m, uint64_t seed)
{
	struct param_table *t = model_params(m);
	for (size_t i = 0; i < t->n; i++) {
		struct param *p = &t->p[i];
		double a, c = 0;
		if (strstr(p->name, "resid_lambdas"))
			a = 0.2, c = 1;
		else if (strstr(p->name, "lambdas"))
			a = 0.2;
		else if (!strcmp(p->name, "q_tau") || !strcmp(p->name, "rope_tau"))
			a = 0.3;
		else if (!strcmp(p->name, "sub_gains"))
			a = 0.3, c = 1;
		else if (!strcmp(p->name, "transformer.wte.weight") || !strncmp(p->name, "oe.", 3))
			a = 1;
		else
			a = sqrt(3.0 / (double)p->cols);
		uint64_t base = seed + fnv1a(p->name);
		for (size_t j = 0; j < p->numel; j++) {
			uint64_t z = mix64(base + (uint64_t)(j + 1) * 0x9e3779b97f4a7c15ull);
			double u = (double)(z >> 11) * 0x1.0p-53;
			float v = (float)(a * (2 * u - 1) + c);
			if (p->store == PARAM_BF16)
				v = bf16_round(v);
			if (p->mask && p->mask[j])
				v = 0;
			param_w_set(p, j, v);
		}
	}
	model_sync_from_f32(m);
}

/* Whether a and b (the same parameter of two models) hold the same values,
 * bit for bit (fp32 values, or bf16 ones for bf16-stored OE tables). */
static inline int param_values_equal(const struct param *a, const struct param *b)
{
	if (a->wb || b->wb)
		return a->wb && b->wb && !memcmp(a->wb, b->wb, a->numel * sizeof(bf16));
	return !memcmp(a->w, b->w, a->numel * sizeof(float));
}

/* The model of a fixture (tests/reference/torch_*.py): its "config" keys
 * and then extra (NULL-terminated, may be NULL), filled by fixture_fill with its "fill_seed", both c_proj zeroed when
 * "zero_proj" is true. NULL (and a message) when it cannot be made. */
static inline struct model *fixture_model(const cJSON *j, const char *const *extra)
{
	const char *keys[48];
	int nk = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "config")) if (nk < 39) keys[nk++] = it->valuestring;
	for (int i = 0; extra && extra[i] && nk < 47; i++)
		keys[nk++] = extra[i];
	keys[nk] = NULL;
	struct model *m = model_make(keys);
	if (!m)
		return NULL;
	fixture_fill(m, (uint64_t)cJSON_GetObjectItem(j, "fill_seed")->valuedouble);
	if (cJSON_IsTrue(cJSON_GetObjectItem(j, "zero_proj"))) {
		struct param_table *t = model_params(m);
		for (size_t i = 0; i < t->n; i++)
			if (strstr(t->p[i].name, "c_proj.weight"))
				memset(t->p[i].w, 0, t->p[i].numel * sizeof(float));
		model_sync_from_f32(m);
	}
	return m;
}

/* The integer array `key` of a fixture (n entries, zero beyond its length). */
static inline int32_t *fixture_ints(const cJSON *j, const char *key, size_t n)
{
	int32_t *v = xcalloc(n ? n : 1, sizeof *v);
	size_t k = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, key)) if (k < n) v[k++] = it->valueint;
	return v;
}

/* S optimizer steps of K micro-batches, as trainer/train.c runs them, on the
 * fixture's batches from its weights (config keys extra added, e.g. the
 * backend): the per-step loss (mean over the K
 * micro-batches) against the reference's, and every parameter's final RMS. */
static inline void fixture_curve(const char *name, const char *const *extra, double tol_loss,
			  double tol_rms)
{
	char path[512];
	snprintf(path, sizeof path, "%s/model/%s.json", t_fixtures(), name);
	struct err e = {0};
	cJSON *j = json_read_file(path, 0, &e);
	CHECKF(j != NULL, "%s", e.msg);
	if (!j)
		return;
	int f64 = !strcmp(cJSON_GetObjectItem(j, "dtype")->valuestring, "fp64");
	int B = cJSON_GetObjectItem(j, "B")->valueint, T = cJSON_GetObjectItem(j, "T")->valueint;
	int K = cJSON_GetObjectItem(j, "K")->valueint, S = cJSON_GetObjectItem(j, "S")->valueint;
	const cJSON *want = cJSON_GetObjectItem(j, "losses");
	CHECK(cJSON_GetArraySize(want) == S);
	struct model *m = fixture_model(j, extra);
	struct optim *o = NULL;
	CHECK(m != NULL && optim_create(model_config(m), model_params(m), f64, &o, &e) == 0);
	if (o)   /* the backend's optimizer device and Polar Express, as train.c does */
		backend_optim_attach(o, model_backend(m));
	size_t per = (size_t)B * T;
	int32_t *in = fixture_ints(j, "inputs", per * S * K), *tg = fixture_ints(j, "targets", per * S * K);
	double worst = 0, first = 0, last = 0;
	int worst_at = -1;
	for (int s = 0; m && o && s < S; s++) {
		model_zero_grad(m);
		double sum = 0, l;
		for (int k = 0; k < K; k++) {
			size_t off = per * (size_t)(s * K + k);
			CHECK(model_forward_backward(m, in + off, tg + off, B, T, 1.0 / K, &l, &e) == 0);
			sum += l;
		}
		CHECK(optim_step(o, s, &e) == 0);
		double ref = cJSON_GetArrayItem(want, s)->valuedouble, d = fabs(sum / K - ref) / ref;
		if (d > worst) {
			worst = d;
			worst_at = s;
		}
		if (s == 0)
			first = sum / K;
		last = sum / K;
	}
	double worst_rms = 0;
	const char *worst_name = "";
	const cJSON *rms = cJSON_GetObjectItem(j, "final_rms");
	struct param_table *t = m ? model_params(m) : NULL;
	for (size_t i = 0; t && i < t->n; i++) {
		const cJSON *r = cJSON_GetObjectItem(rms, t->p[i].name);
		CHECKF(r != NULL, "no final RMS of %s in the fixture", t->p[i].name);
		if (!r)
			continue;
		double ss = 0;
		for (size_t k = 0; k < t->p[i].numel; k++) {
			double v = f64 ? t->p[i].w64[k] : param_w_at(&t->p[i], k);
			ss += v * v;
		}
		double d = fabs(sqrt(ss / (double)t->p[i].numel) - r->valuedouble) /
			   (r->valuedouble > 0 ? r->valuedouble : 1);
		if (d > worst_rms) {
			worst_rms = d;
			worst_name = t->p[i].name;
		}
	}
	printf("  %s: loss %.4f -> %.4f over %d steps; worst relative loss difference %.3g (step %d), "
	       "final RMS %.3g (%s)\n", name, first, last, S, worst, worst_at, worst_rms, worst_name);
	CHECKF(worst <= tol_loss, "loss differs by %.3g of the reference at step %d", worst, worst_at);
	CHECKF(worst_rms <= tol_rms, "final RMS of %s differs by %.3g", worst_name, worst_rms);
	CHECK(last < 0.5 * first);   /* it did learn */
	free(in);
	free(tg);
	optim_free(o);
	model_free(m);
	cJSON_Delete(j);
}

#endif
