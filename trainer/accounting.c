/* accounting.c: parameter accounting over the paramspec table (see
 * accounting.h; supkit-audit(1), compute). */
#include "trainer/accounting.h"
#include "trainer/config.h"

#include <string.h>

void param_counts_of(const struct param_spec *s, size_t n, struct param_counts *c)
{
	memset(c, 0, sizeof *c);
	for (size_t i = 0; i < n; i++) {
		int64_t k = (int64_t)s[i].numel;
		switch (s[i].kind) {
		case PK_WTE: c->wte += k; break;
		case PK_VALUE_EMBED: c->value_embeds += k; break;
		case PK_LM_HEAD: c->lm_head += k; break;
		case PK_ATTN_Q: case PK_ATTN_K: case PK_ATTN_V: case PK_ATTN_PROJ:
		case PK_MLP_FC: case PK_MLP_PROJ: case PK_VE_GATE:
			c->block_matrices += k;
			break;
		case PK_RESID_LAMBDAS: case PK_X0_LAMBDAS: c->scalars += k; break;
		case PK_Q_TAU: c->q_tau += k; break;
		case PK_WTE_LAMBDAS: case PK_OUT_LAMBDAS: c->routing_lambdas += k; break;
		case PK_OE_TABLE:
			c->oe += k;
			c->oe_rows_total += s[i].shape[0];
			if (c->oe_tables < ACCOUNTING_OE_TABLES_MAX)
				c->oe_rows[c->oe_tables] = s[i].shape[0];
			c->oe_tables++;
			break;
		case PK_NKINDS: break;
		}
	}
	c->backbone = c->wte + c->value_embeds + c->lm_head + c->block_matrices + c->scalars + c->q_tau + c->routing_lambdas;
	c->total = c->backbone + c->oe;
}

cJSON *param_counts_json(const struct param_counts *c)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "wte", (double)c->wte);
	cJSON_AddNumberToObject(j, "value_embeds", (double)c->value_embeds);
	cJSON_AddNumberToObject(j, "lm_head", (double)c->lm_head);
	cJSON_AddNumberToObject(j, "block_matrices", (double)c->block_matrices);
	cJSON_AddNumberToObject(j, "scalars", (double)c->scalars);
	cJSON_AddNumberToObject(j, "q_tau", (double)c->q_tau);
	cJSON_AddNumberToObject(j, "routing_lambdas", (double)c->routing_lambdas);
	cJSON_AddNumberToObject(j, "backbone", (double)c->backbone);
	cJSON_AddNumberToObject(j, "oe", (double)c->oe);
	cJSON *rows = cJSON_AddArrayToObject(j, "oe_rows");
	for (int t = 0; t < c->oe_tables && t < ACCOUNTING_OE_TABLES_MAX; t++)
		cJSON_AddItemToArray(rows, cJSON_CreateNumber((double)c->oe_rows[t]));
	cJSON_AddNumberToObject(j, "oe_rows_total", (double)c->oe_rows_total);
	cJSON_AddNumberToObject(j, "oe_tables", c->oe_tables);
	cJSON_AddNumberToObject(j, "total", (double)c->total);
	return j;
}

double flops_per_token(const struct config *c, const struct param_counts *pc)
{
	double attn = 0;
	for (int i = 0; i < c->depth; i++) {
		int w = config_window(c, i);
		attn += 12.0 * config_heads(c) * c->head_dim * (w < c->seq_len ? w : c->seq_len);
	}
	return 6.0 * (double)(pc->lm_head + pc->block_matrices) + attn;
}

void memory_floor_of(const struct config *c, const struct param_spec *s, size_t n, struct memory_floor *m)
{
	int fp64 = c->dtype == DTYPE_F64;
	double es = fp64 ? 8.0 : 4.0;
	memset(m, 0, sizeof *m);
	for (size_t i = 0; i < n; i++) {
		m->params += (double)paramspec_block_bytes(&s[i], fp64);
		if (s[i].kind != PK_OE_TABLE)
			m->optim += es * (double)s[i].numel;
	}
	double N = (double)c->batch_rows * c->seq_len;
	m->activations = es * (c->depth + 1.0) * N * config_model_dim(c);
	double rows = (double)c->batch_rows * (c->seq_len + 1.0);   /* a loader's */
	m->tokens = 4.0 * (2.0 * N + rows);
	if (c->eval_tokens + c->heldout_tokens > 0)
		m->tokens += 4.0 * (3.0 * N + rows);
	m->total = m->params + m->optim + m->activations + m->tokens;
}
