/* paramspec.c: the parameter table of the one model definition, built from a
 * config: names (PyTorch state_dict names), shapes, optimizer groups,
 * storage and init of every trained tensor, in the trainer's allocation and
 * RNG order.
 *
 * Leaves out: allocation and the random draws themselves (trainer/model.c),
 * FLOP and memory formulas (trainer/accounting.c).
 *
 * Reference: docs/model.md (baseline parameters and init) and supkit-train(1),
 * THE ARMS (OE tables, q_tau, wte_lambdas, out_lambdas, sub_gains, rope_tau).
 */
#include "trainer/paramspec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each kind's short name (the geometry audit's and the accounting's) and
 * checkpoint name: prefix, then for an indexed kind (layer or table) the
 * index in decimal and suffix. Every name paramspec_build writes, and
 * every name paramspec_name_kind reads, comes from this table. */
static const struct {
	const char *short_name, *prefix, *suffix;   /* suffix NULL: not indexed */
} kinds[PK_NKINDS] = {
	[PK_WTE] = {"wte", "transformer.wte.weight", NULL},
	[PK_LM_HEAD] = {"lm_head", "lm_head.weight", NULL},
	[PK_VALUE_EMBED] = {"value_embeds", "value_embeds.", ".weight"},
	[PK_ATTN_Q] = {"attn.c_q", "transformer.h.", ".attn.c_q.weight"},
	[PK_ATTN_K] = {"attn.c_k", "transformer.h.", ".attn.c_k.weight"},
	[PK_ATTN_V] = {"attn.c_v", "transformer.h.", ".attn.c_v.weight"},
	[PK_ATTN_PROJ] = {"attn.c_proj", "transformer.h.", ".attn.c_proj.weight"},
	[PK_MLP_FC] = {"mlp.c_fc", "transformer.h.", ".mlp.c_fc.weight"},
	[PK_MLP_PROJ] = {"mlp.c_proj", "transformer.h.", ".mlp.c_proj.weight"},
	[PK_VE_GATE] = {"attn.ve_gate", "transformer.h.", ".attn.ve_gate.weight"},
	[PK_RESID_LAMBDAS] = {"resid_lambdas", "resid_lambdas", NULL},
	[PK_X0_LAMBDAS] = {"x0_lambdas", "x0_lambdas", NULL},
	[PK_OE_TABLE] = {"oe", "oe.", ".weight"},
	[PK_Q_TAU] = {"q_tau", "q_tau", NULL},
	[PK_WTE_LAMBDAS] = {"wte_lambdas", "wte_lambdas", NULL},
	[PK_OUT_LAMBDAS] = {"out_lambdas", "out_lambdas", NULL},
	[PK_SUB_GAINS] = {"sub_gains", "sub_gains", NULL},
	[PK_ROPE_TAU] = {"rope_tau", "rope_tau", NULL},
};

/* Other spellings read, never written: OE tables as "oe_tables.<j>.weight". */
static const struct {
	enum param_kind kind;
	const char *prefix, *suffix;
} other_spellings[] = {
	{PK_OE_TABLE, "oe_tables.", ".weight"},
};

const char *param_kind_name(enum param_kind k)
{
	return k >= 0 && k < PK_NKINDS ? kinds[k].short_name : "?";
}

int paramspec_kind_indexed(enum param_kind k)
{
	return k >= 0 && k < PK_NKINDS && kinds[k].suffix != NULL;
}

void paramspec_name(enum param_kind k, int index, char *buf, size_t n)
{
	if (k < 0 || k >= PK_NKINDS)
		snprintf(buf, n, "?");
	else if (kinds[k].suffix)
		snprintf(buf, n, "%s%d%s", kinds[k].prefix, index, kinds[k].suffix);
	else
		snprintf(buf, n, "%s", kinds[k].prefix);
}

/* name = prefix + decimal index (at most 1,000,000) + suffix: 1 and *index. */
static int match_indexed(const char *name, const char *prefix, const char *suffix, int *index)
{
	size_t pl = strlen(prefix);
	if (strncmp(name, prefix, pl) != 0)
		return 0;
	const char *s = name + pl;
	if (*s < '0' || *s > '9')
		return 0;
	long v = 0;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (*s++ - '0');
		if (v > 1000000)
			return 0;
	}
	if (strcmp(s, suffix) != 0)
		return 0;
	*index = (int)v;
	return 1;
}

int paramspec_name_kind(const char *name, enum param_kind *kind, int *index)
{
	*index = -1;
	for (int k = 0; k < PK_NKINDS; k++) {
		if (kinds[k].suffix ? match_indexed(name, kinds[k].prefix, kinds[k].suffix, index)
				    : !strcmp(name, kinds[k].prefix)) {
			*kind = (enum param_kind)k;
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof other_spellings / sizeof other_spellings[0]; i++)
		if (match_indexed(name, other_spellings[i].prefix, other_spellings[i].suffix, index)) {
			*kind = other_spellings[i].kind;
			return 0;
		}
	*index = -1;
	return -1;
}

struct builder {
	struct param_spec *p;
	size_t n, cap;
};

/* Add tensor kind (index: layer or table j, -1 for neither) named by the
 * kinds table. */
static struct param_spec *add(struct builder *b, enum param_kind kind, int layer, enum param_group group,
			      enum param_store store, enum init_kind init, double a, int ndim, int64_t s0,
			      int64_t s1, int64_t s2)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 64;
		b->p = xrealloc(b->p, b->cap * sizeof *b->p);
	}
	struct param_spec *s = &b->p[b->n++];
	memset(s, 0, sizeof *s);
	paramspec_name(kind, layer, s->name, sizeof s->name);
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

	add(&b, PK_WTE, -1, PG_EMBED, PARAM_BF16, INITK_NORMAL, 1.0, 2, V, d, 0);
	for (int i = 0; i < L; i++) {
		add(&b, PK_ATTN_Q, i, PG_MATRIX, PARAM_F32, INITK_UNIFORM, s, 2, d, d, 0);
		add(&b, PK_ATTN_K, i, PG_MATRIX, PARAM_F32, INITK_UNIFORM, s, 2, d, d, 0);
		add(&b, PK_ATTN_V, i, PG_MATRIX, PARAM_F32, INITK_UNIFORM, s, 2, d, d, 0);
		/* benchmark init: both c_proj zero; dense (tests): U(-a, a) with
		 * a = sqrt(3)/sqrt(fan_in) */
		add(&b, PK_ATTN_PROJ, i, PG_MATRIX, PARAM_F32, dense ? INITK_UNIFORM : INITK_ZERO,
		    dense ? s : 0.0, 2, d, d, 0);
		add(&b, PK_MLP_FC, i, PG_MATRIX, PARAM_F32, INITK_UNIFORM, s, 2, 4 * (int64_t)d, d, 0);
		add(&b, PK_MLP_PROJ, i, PG_MATRIX, PARAM_F32, dense ? INITK_UNIFORM : INITK_ZERO,
		    dense ? sqrt(3.0) / sqrt(4.0 * d) : 0.0, 2, d, 4 * (int64_t)d, 0);
		if (config_is_ve_layer(c, i))
			add(&b, PK_VE_GATE, i, PG_MATRIX, PARAM_F32, INITK_ZERO, 0.0, 2, H,
			    c->ve_gate_channels, 0);
	}
	for (int i = 0; i < L; i++)
		if (config_is_ve_layer(c, i))
			add(&b, PK_VALUE_EMBED, i, PG_EMBED, PARAM_BF16, INITK_UNIFORM, s, 2, V, d, 0);
	add(&b, PK_LM_HEAD, -1, PG_LM_HEAD, PARAM_F32, INITK_NORMAL, 0.001, 2, V, d, 0);
	add(&b, PK_RESID_LAMBDAS, -1, PG_RESID, PARAM_F32, INITK_CONST, 1.0, 1, L, 0, 0);
	add(&b, PK_X0_LAMBDAS, -1, PG_SCALAR, PARAM_F32, INITK_CONST, 0.1, 1, L, 0, 0);

	for (int j = 0; j < config_oe_tables(c); j++)
		add(&b, PK_OE_TABLE, j, PG_OE, PARAM_BF16, INITK_ZERO, 0.0, 2, config_oe_rows(c, j), d / 4,
		    0);
	switch (c->qk_scale) {
	case QK_SCALE_NONE:
		break;
	case QK_SCALE_PAIR:
		add(&b, PK_Q_TAU, -1, PG_QTAU, PARAM_F32, INITK_ZERO, 0.0, 3, L, H, hd / 2);
		break;
	case QK_SCALE_UNTIED:
		add(&b, PK_Q_TAU, -1, PG_QTAU, PARAM_F32, INITK_ZERO, 0.0, 3, L, H, hd);
		break;
	case QK_SCALE_HEAD:
		add(&b, PK_Q_TAU, -1, PG_QTAU, PARAM_F32, INITK_ZERO, 0.0, 2, L, H, 0);
		break;
	}
	if (c->wte_lambdas)
		add(&b, PK_WTE_LAMBDAS, -1, PG_SCALAR, PARAM_F32, INITK_ZERO, 0.0, 1, L, 0, 0);
	if (c->out_lambdas)
		add(&b, PK_OUT_LAMBDAS, -1, PG_SCALAR, PARAM_F32, INITK_ZERO, 0.0, 1, 2, 0, 0);
	/* pre-sublayer channel gains: [l][0] scales the input columns of W_Q,
	 * W_K, W_V, [l][1] those of W_fc */
	if (c->sub_gains)
		add(&b, PK_SUB_GAINS, -1, PG_SUB, PARAM_F32, INITK_CONST, 1.0, 3, L, 2, d);
	/* LeRoPE log-frequencies: plane c of head h in layer l turns by
	 * t theta_c exp(tau), one tau per plane (shared) or per (l, h, plane) */
	if (c->rope_tau == ROPE_TAU_SHARED)
		add(&b, PK_ROPE_TAU, -1, PG_ROPE, PARAM_F32, INITK_ZERO, 0.0, 1, hd / 2, 0, 0);
	else if (c->rope_tau == ROPE_TAU_HEAD)
		add(&b, PK_ROPE_TAU, -1, PG_ROPE, PARAM_F32, INITK_ZERO, 0.0, 3, L, H, hd / 2);

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
