/* accounting.h: parameter accounting of a parameter table (supkit-audit(1)),
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
/* FLOPs a token: 6 (lm_head + block matrices) + the sum
 * over layers of 12 H head_dim min(window, T). */
double flops_per_token(const struct config *c, const struct param_counts *pc);

/* A floor under the memory a training run of c takes, in bytes, from its
 * parameter table s (n entries) alone, nothing allocated: what the run
 * certainly needs, never more, so that a run it does not fit cannot run.
 *   params       the model's parameter block (paramspec_block_bytes)
 *   optim        one optimizer state array per parameter outside the OE
 *                tables (Muon's momentum or AdamW's first moment) at the
 *                run's precision (4 or 8 bytes an entry)
 *   activations  the residual stream's layer inputs: (depth + 1) x
 *                batch_rows x seq_len x model_dim values at the run's
 *                precision
 *   tokens       the batches as int32: the training step's inputs and
 *                targets (2 x batch_rows x seq_len) and its loader's rows
 *                (batch_rows x (seq_len + 1)); with evaluation
 *                (eval_tokens or heldout_tokens > 0) the evaluation's
 *                inputs, targets and losses and its loader's rows as well
 *                (3 x batch_rows x seq_len + batch_rows x (seq_len + 1))
 * On the CUDA backend only `tokens` is host memory. Doubles: no overflow
 * at the config's largest values. */
struct memory_floor {
	double params, optim, activations, tokens, total;
};
void memory_floor_of(const struct config *c, const struct param_spec *s, size_t n, struct memory_floor *m);

#endif
