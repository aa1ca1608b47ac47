/* param.h: the parameter table, the contract between the model (model.c),
 * the optimizer (optim.c), checkpoints and the audits.
 *
 * The model owns one table of struct param (made by model_init from the
 * config): every trained tensor with its checkpoint name (PyTorch state_dict
 * names, e.g. "transformer.h.3.attn.c_q.weight"), shape, optimizer group and
 * storage. Memory is owned by the model; the optimizer keeps its own state
 * (moments, momentum buffers) keyed by the parameter's index in the table.
 *
 * Storage: every parameter has an fp32 value `w` that the optimizer updates.
 * Parameters stored in bf16 in the benchmark (wte, value_embeds, OE tables)
 * set store = PARAM_BF16: the model computes with bf16(w), and `w` itself is
 * kept exactly bf16-representable unless the config keeps fp32 master weights
 * (embed_state = fp32). Gradients `g` are fp32 (fp64 backends use w64/g64).
 *
 * OE tables made by the model store what the benchmark stores (4 bytes a
 * parameter; supkit-audit(1), compute):
 * - fp32 runs: the value in bf16 (`wb`, w NULL) and a dense bf16 gradient
 *   (`gb`, g NULL); each backward pass adds a row's fp32 sum over its
 *   tokens rounded to bf16, and the sum is rounded to bf16 again, as
 *   PyTorch accumulates the .grad of a bf16 parameter.
 * - fp64 runs: w64 (and the fp32 mirror w) and the gradient for the visited
 *   rows only: g64 is NULL, and row r's gradient is row slot[r] of gv64
 *   when slot[r] >= 0, zero when slot[r] < 0 (not visited since the last
 *   model_zero_grad).
 * Tables built elsewhere (tests, tools) may set a dense fp32 w, g / g64
 * instead. Read values through param_w_at / param_w_set and gradients
 * through param_grad_at (any form), param_grad_row / param_grad_row64
 * (fp32 / fp64 forms).
 */
#ifndef SUPKIT_PARAM_H
#define SUPKIT_PARAM_H

#include <stddef.h>
#include <stdint.h>

#include "lib/bf16.h"

enum param_group {
	PG_LM_HEAD,     /* AdamW, lr 0.004 k */
	PG_EMBED,       /* wte, value_embeds: AdamW, lr 0.6 k */
	PG_RESID,       /* resid_lambdas: AdamW, lr 0.005 */
	PG_SCALAR,      /* x0_lambdas, wte_lambdas, out_lambdas: AdamW, lr 0.5, betas (0.96, 0.95) */
	PG_MATRIX,      /* block matrices incl. ve_gate: Muon, grouped by shape */
	PG_QTAU,        /* q_tau: AdamW, lr 0.02 */
	PG_OE,          /* hashed n-gram tables: moment-free table-RMS update */
	PG_SUB,         /* sub_gains: AdamW, lr sub_lr 0.02 */
	PG_ROPE,        /* rope_tau: AdamW, lr rope_lr 0.02 */
	PG_NGROUPS
};

enum param_store { PARAM_F32, PARAM_BF16 };

#define PARAM_NAME_MAX 96

struct param {
	char name[PARAM_NAME_MAX];   /* checkpoint name */
	int ndim;                    /* 1 or 2 (3 for q_tau) */
	int64_t shape[3];
	size_t numel;
	size_t rows, cols;           /* matrix view: rows = shape[0], cols = numel / rows */
	enum param_group group;
	enum param_store store;
	float *w;                    /* value, fp32 (numel) */
	float *g;                    /* gradient, fp32 (numel), summed over micro-steps */
	double *w64, *g64;           /* fp64 mirror for fp64 runs (NULL otherwise) */
	int frozen_mask;             /* 1 when some entries are masked (q_tau l0_hf16) */
	uint8_t *mask;               /* numel flags, 1 = frozen at 0 (NULL when none) */
	uint32_t *counts;            /* OE tables: visits per row summed over the K
	                                micro-steps of this step (rows), reset by the
	                                optimizer after its update; NULL otherwise */
	int32_t *slot;               /* OE tables of an fp64 model run: rows entries,
	                                the row's slot in gv64 or -1; NULL otherwise */
	double *gv64;                /* compact OE gradient rows (fp64 runs) */
	bf16 *wb, *gb;               /* OE tables of fp32 runs: bf16 value and
	                                gradient (w and g NULL) */
};

/* Value i of p as fp32 (bf16 storage widened exactly). */
static inline float param_w_at(const struct param *p, size_t i)
{
	return p->wb ? bf16_to_f32(p->wb[i]) : p->w[i];
}

/* Set value i of p (rounded to bf16 when stored in bf16). */
static inline void param_w_set(struct param *p, size_t i, float v)
{
	if (p->wb)
		p->wb[i] = bf16_from_f32(v);
	else
		p->w[i] = v;
}

/* The fp32 gradient of row r (cols entries): dense g only, NULL otherwise
 * (a bf16 gradient is read with param_grad_at). */
static inline float *param_grad_row(const struct param *p, size_t r)
{
	return p->g ? p->g + r * p->cols : NULL;
}

/* The fp64 gradient of row r, or NULL when the row has none (a compact OE
 * gradient whose row was not visited: read it as zeros). */
static inline double *param_grad_row64(const struct param *p, size_t r)
{
	if (p->g64)
		return p->g64 + r * p->cols;
	if (p->slot && p->gv64 && p->slot[r] >= 0)
		return p->gv64 + (size_t)p->slot[r] * p->cols;
	return NULL;
}

/* Gradient entry i (flat index) of p, fp64 or fp32 form. */
static inline double param_grad_at(const struct param *p, size_t i, int fp64)
{
	size_t c = p->cols ? p->cols : 1;
	if (fp64) {
		const double *row = param_grad_row64(p, i / c);
		return row ? row[i % c] : 0.0;
	}
	if (p->gb)
		return bf16_to_f32(p->gb[i]);
	const float *row = param_grad_row(p, i / c);
	return row ? (double)row[i % c] : 0.0;
}

/* Whether p has a gradient in the given form: dense (fp32, fp64 or bf16),
 * or compact (whose rows are allocated as they are visited). */
static inline int param_has_grad(const struct param *p, int fp64)
{
	return fp64 ? p->g64 != NULL || p->slot != NULL : p->g != NULL || p->gb != NULL;
}

struct param_table {
	struct param *p;
	size_t n;
};

/* The parameter named name, or NULL. */
static inline struct param *param_find(struct param_table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++) {
		const char *a = t->p[i].name, *b = name;
		while (*a && *a == *b)
			a++, b++;
		if (*a == *b)
			return &t->p[i];
	}
	return NULL;
}

#endif
