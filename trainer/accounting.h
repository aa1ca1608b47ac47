/* accounting.h: parameter accounting of a parameter table (SPEC section 5),
 * written once for the trainer's result.json and `supkit audit compute`.
 *
 * backbone = wte + value_embeds + lm_head + block matrices (ve_gate
 * included) + scalars (resid/x0 lambdas) + q_tau + routing lambdas: the
 * count the trainer records as num_params. OE tables are counted apart
 * (oe, oe_rows), total = backbone + oe.
 */
#ifndef SUPKIT_ACCOUNTING_H
#define SUPKIT_ACCOUNTING_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "trainer/paramspec.h"

struct config;

#define ACCOUNTING_OE_TABLES_MAX 16

struct param_counts {
	int64_t wte, value_embeds, lm_head, block_matrices, scalars, q_tau, routing_lambdas;
	int64_t backbone, oe, oe_rows_total, total;
	int oe_tables;
	int64_t oe_rows[ACCOUNTING_OE_TABLES_MAX];   /* rows of table j */
};

void param_counts_of(const struct param_spec *s, size_t n, struct param_counts *c);
/* The counts as a JSON object (keys as the struct fields; oe_rows an array),
 * the same keys as `supkit audit compute --json` under "params". */
cJSON *param_counts_json(const struct param_counts *c);
/* FLOPs a token (SPEC section 5): 6 (lm_head + block matrices) + the sum
 * over layers of 12 H head_dim min(window, T). */
double flops_per_token(const struct config *c, const struct param_counts *pc);

#endif
