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

struct param_counts {
	int64_t wte, value_embeds, lm_head, matrices, scalars, q_tau, routing;
	int64_t backbone, oe, oe_rows, total;
	int oe_tables;
};

void param_counts_of(const struct param_spec *s, size_t n, struct param_counts *c);
/* The counts as a JSON object (keys as the struct fields). */
cJSON *param_counts_json(const struct param_counts *c);

#endif
