/* paramspec.h: the one model definition's parameter table, derived from a
 * config (docs/model.md; the arms of supkit-train(1)). The trainer
 * allocates exactly these tensors (in this order, which is also the order
 * the initialiser draws random numbers in), checkpoints use these names,
 * and `supkit audit compute` counts them. Nothing else in supkit lists parameters.
 *
 * Order: transformer.wte.weight; for each layer i: attn.c_q, attn.c_k,
 * attn.c_v, attn.c_proj, mlp.c_fc, mlp.c_proj, attn.ve_gate (ve layers);
 * value_embeds.<i>.weight (ve layers, ascending i); lm_head.weight;
 * resid_lambdas; x0_lambdas; then arm parameters: oe.<j>.weight (j = 0..3),
 * q_tau, wte_lambdas, out_lambdas, sub_gains, rope_tau.
 *
 * Implementation: trainer/paramspec.c.
 */
#ifndef SUPKIT_PARAMSPEC_H
#define SUPKIT_PARAMSPEC_H

#include <stddef.h>
#include <stdint.h>
#include "trainer/config.h"
#include "trainer/param.h"

enum init_kind {
	INITK_NORMAL,    /* N(0, a^2) */
	INITK_UNIFORM,   /* U(-a, a) */
	INITK_ZERO,
	INITK_CONST      /* every entry = a */
};

/* What a tensor is, for accounting and the geometry audit's groups. */
enum param_kind {
	PK_WTE, PK_LM_HEAD, PK_VALUE_EMBED, PK_ATTN_Q, PK_ATTN_K, PK_ATTN_V, PK_ATTN_PROJ,
	PK_MLP_FC, PK_MLP_PROJ, PK_VE_GATE, PK_RESID_LAMBDAS, PK_X0_LAMBDAS, PK_OE_TABLE,
	PK_Q_TAU, PK_WTE_LAMBDAS, PK_OUT_LAMBDAS, PK_SUB_GAINS, PK_ROPE_TAU, PK_NKINDS
};

struct param_spec {
	char name[PARAM_NAME_MAX];   /* checkpoint (PyTorch state_dict) name */
	enum param_kind kind;
	int layer;                   /* block index, or -1; table index j for OE */
	int ndim;
	int64_t shape[3];
	size_t numel;
	enum param_group group;
	enum param_store store;      /* PARAM_BF16 for wte, value_embeds, OE tables */
	enum init_kind init;
	double init_a;               /* std, bound or constant */
};

/* Fill *out (caller frees) with the table for config c; 0 or -1 (bad config). */
int paramspec_build(const struct config *c, struct param_spec **out, size_t *n, struct err *e);
const char *param_kind_name(enum param_kind k);   /* "wte", "attn.c_q", ... */
/* The checkpoint name of kind k (index: its layer, or table j for
 * value_embeds and OE tables; ignored for a kind without one) into buf
 * ("transformer.h.3.attn.c_q.weight", "lm_head.weight"). */
void paramspec_name(enum param_kind k, int index, char *buf, size_t n);
/* 1 when kind k's names carry an index (a layer or a table). */
int paramspec_kind_indexed(enum param_kind k);
/* The kind and index (-1 when the kind has none) of a checkpoint name as
 * paramspec_name writes it, an index written with any number of digits up
 * to 1,000,000 (and "oe_tables.<j>.weight", another spelling of an OE
 * table's). 0, or -1 for a name of no parameter kind (*index = -1). */
int paramspec_name_kind(const char *name, enum param_kind *kind, int *index);
/* Bytes tensor s takes in the model's parameter block, a multiple of 16:
 * fp32 value and gradient (and fp64 ones when fp64); OE tables of fp32 runs
 * a bf16 value and gradient, of fp64 runs the values only (their gradient
 * is compact). trainer/model.c allocates exactly this. */
size_t paramspec_block_bytes(const struct param_spec *s, int fp64);

#endif
