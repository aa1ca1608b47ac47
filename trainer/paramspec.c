/* paramspec.c: the parameter table of the one model definition, built from a
 * config: names (PyTorch state_dict names), shapes, optimizer groups,
 * storage and init of every trained tensor, in the trainer's allocation and
 * RNG order.
 *
 * Leaves out: allocation and the random draws themselves (trainer/model.c),
 * FLOP and memory formulas (audit/compute.c).
 *
 * Reference: docs/model.md (baseline parameters and init) and supkit-train(1),
 * THE ARMS (OE tables, q_tau, wte_lambdas, out_lambdas).
 */
#include "trainer/paramspec.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[PK_NKINDS] = {
	[PK_WTE] = "wte",
	[PK_LM_HEAD] = "lm_head",
	[PK_VALUE_EMBED] = "value_embeds",
	[PK_ATTN_Q] = "attn.c_q",
	[PK_ATTN_K] = "attn.c_k",
	[PK_ATTN_V] = "attn.c_v",
	[PK_ATTN_PROJ] = "attn.c_proj",
	[PK_MLP_FC] = "mlp.c_fc",
	[PK_MLP_PROJ] = "mlp.c_proj",
	[PK_VE_GATE] = "attn.ve_gate",
	[PK_RESID_LAMBDAS] = "resid_lambdas",
	[PK_X0_LAMBDAS] = "x0_lambdas",
	[PK_OE_TABLE] = "oe",
	[PK_Q_TAU] = "q_tau",
	[PK_WTE_LAMBDAS] = "wte_lambdas",
	[PK_OUT_LAMBDAS] = "out_lambdas",
};

const char *param_kind_name(enum param_kind k)
{
	return k >= 0 && k < PK_NKINDS ? kind_names[k] : "?";
}

struct builder {
	struct param_spec *p;
	size_t n, cap;
};

static struct param_spec *add(struct builder *b, enum param_kind kind, int layer, enum param_group group,
			      enum param_store store, enum init_kind init, double a, int ndim, int64_t s0,
			      int64_t s1, int64_t s2, const char *fmt, ...) __attribute__((format(printf, 12, 13)));

static struct param_spec *add(struct builder *b, enum param_kind kind, int layer, enum param_group group,
			      enum param_store store, enum init_kind init, double a, int ndim, int64_t s0,
			      int64_t s1, int64_t s2, const char *fmt, ...)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 64;
		b->p = xrealloc(b->p, b->cap * sizeof *b->p);
	}
	struct param_spec *s = &b->p[b->n++];
	memset(s, 0, sizeof *s);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->name, sizeof s->name, fmt, ap);
	va_end(ap);
	s->kind = kind;
	s->layer = layer;
	s->ndim = ndim;
	s->shape[0] = s0;
	s->shape[1] = ndim > 1 ? s1 : 0;
	s->shape[2] = ndim > 2 ? s2 : 0;
	s->numel = (size_t)s0 * (ndim > 1 ? (size_t)s1 : 1) * (ndim > 2 ? (size_t)s2 : 1);
	s->group = group;
	s->store = store;
	s->init = init;
	s->init_a = a;
	return s;
}

/* The geometry the table needs (config_validate checks more). */
static int geometry_check(const struct config *c, struct err *e)
{
	int d = config_model_dim(c);
	if (c->depth < 1 || c->vocab_size < 1 || c->head_dim < 2 || c->head_dim % 2)
		return err_set(e, EXIT_USAGE, "config: depth, vocab_size and an even head_dim are needed");
	if (d % c->head_dim)
		return err_set(e, EXIT_USAGE, "config: model_dim %d is not a multiple of head_dim %d", d,
			       c->head_dim);
	if (c->ve_gate_channels < 1 || c->ve_gate_channels > d)
		return err_set(e, EXIT_USAGE, "config: ve_gate_channels %d is not in [1, model_dim %d]",
			       c->ve_gate_channels, d);
	if (c->oe && (d % 4 || c->oe_m < 1 || c->oe_n < 2 || c->oe_k < 1))
		return err_set(e, EXIT_USAGE, "config: oe needs model_dim divisible by 4, oe_m >= 1, "
			       "oe_n >= 2, oe_k >= 1");
	return 0;
}

int paramspec_build(const struct config *c, struct param_spec **out, size_t *n, struct err *e)
{
	*out = NULL;
	*n = 0;
	if (geometry_check(c, e) != 0)
		return -1;
	const int L = c->depth, d = config_model_dim(c), H = config_heads(c), hd = c->head_dim;
	const int64_t V = c->vocab_size;
	const double s = sqrt(3.0) / sqrt((double)d);
	const int dense = c->init == INIT_DENSE;
	struct builder b = {0};

	add(&b, PK_WTE, -1, PG_EMBED, PARAM_BF16, INITK_NORMAL, 1.0, 2, V, d, 0, "transformer.wte.weight");
	for (int i = 0; i < L; i++) {
		add(&b, PK_ATTN_Q, i, PG_MATRIX, PARAM_F32, INITK_UNIFORM, s, 2, d, d, 0,
		    "transformer.h.%d.attn.c_q.weight", i);
		add(&b, PK_ATTN_K, i, PG_MATRIX, PARAM_F32, INITK_UNIFORM, s, 2, d, d, 0,
		    "transformer.h.%d.attn.c_k.weight", i);
		add(&b, PK_ATTN_V, i, PG_MATRIX, PARAM_F32, INITK_UNIFORM, s, 2, d, d, 0,
		    "transformer.h.%d.attn.c_v.weight", i);
		/* benchmark init: both c_proj zero; dense (tests): U(-a, a) with
		 * a = sqrt(3)/sqrt(fan_in) */
		add(&b, PK_ATTN_PROJ, i, PG_MATRIX, PARAM_F32, dense ? INITK_UNIFORM : INITK_ZERO,
		    dense ? s : 0.0, 2, d, d, 0, "transformer.h.%d.attn.c_proj.weight", i);
		add(&b, PK_MLP_FC, i, PG_MATRIX, PARAM_F32, INITK_UNIFORM, s, 2, 4 * (int64_t)d, d, 0,
		    "transformer.h.%d.mlp.c_fc.weight", i);
		add(&b, PK_MLP_PROJ, i, PG_MATRIX, PARAM_F32, dense ? INITK_UNIFORM : INITK_ZERO,
		    dense ? sqrt(3.0) / sqrt(4.0 * d) : 0.0, 2, d, 4 * (int64_t)d, 0,
		    "transformer.h.%d.mlp.c_proj.weight", i);
		if (config_is_ve_layer(c, i))
			add(&b, PK_VE_GATE, i, PG_MATRIX, PARAM_F32, INITK_ZERO, 0.0, 2, H,
			    c->ve_gate_channels, 0, "transformer.h.%d.attn.ve_gate.weight", i);
	}
	for (int i = 0; i < L; i++)
		if (config_is_ve_layer(c, i))
			add(&b, PK_VALUE_EMBED, i, PG_EMBED, PARAM_BF16, INITK_UNIFORM, s, 2, V, d, 0,
			    "value_embeds.%d.weight", i);
	add(&b, PK_LM_HEAD, -1, PG_LM_HEAD, PARAM_F32, INITK_NORMAL, 0.001, 2, V, d, 0, "lm_head.weight");
	add(&b, PK_RESID_LAMBDAS, -1, PG_RESID, PARAM_F32, INITK_CONST, 1.0, 1, L, 0, 0, "resid_lambdas");
	add(&b, PK_X0_LAMBDAS, -1, PG_SCALAR, PARAM_F32, INITK_CONST, 0.1, 1, L, 0, 0, "x0_lambdas");

	for (int j = 0; j < config_oe_tables(c); j++)
		add(&b, PK_OE_TABLE, j, PG_OE, PARAM_BF16, INITK_ZERO, 0.0, 2, config_oe_rows(c, j), d / 4,
		    0, "oe.%d.weight", j);
	switch (c->qk_scale) {
	case QK_SCALE_NONE:
		break;
	case QK_SCALE_PAIR:
		add(&b, PK_Q_TAU, -1, PG_QTAU, PARAM_F32, INITK_ZERO, 0.0, 3, L, H, hd / 2, "q_tau");
		break;
	case QK_SCALE_UNTIED:
		add(&b, PK_Q_TAU, -1, PG_QTAU, PARAM_F32, INITK_ZERO, 0.0, 3, L, H, hd, "q_tau");
		break;
	case QK_SCALE_HEAD:
		add(&b, PK_Q_TAU, -1, PG_QTAU, PARAM_F32, INITK_ZERO, 0.0, 2, L, H, 0, "q_tau");
		break;
	}
	if (c->wte_lambdas)
		add(&b, PK_WTE_LAMBDAS, -1, PG_SCALAR, PARAM_F32, INITK_ZERO, 0.0, 1, L, 0, 0, "wte_lambdas");
	if (c->out_lambdas)
		add(&b, PK_OUT_LAMBDAS, -1, PG_SCALAR, PARAM_F32, INITK_ZERO, 0.0, 1, 2, 0, 0, "out_lambdas");

	*out = b.p;
	*n = b.n;
	return 0;
}

size_t paramspec_block_bytes(const struct param_spec *s, int fp64)
{
	size_t b;
	if (s->kind != PK_OE_TABLE)
		b = s->numel * 2 * (sizeof(float) + (fp64 ? sizeof(double) : 0));
	else if (fp64)
		b = s->numel * (sizeof(float) + sizeof(double));
	else
		b = s->numel * 2 * sizeof(uint16_t);   /* bf16 */
	return (b + 15) & ~(size_t)15;
}
