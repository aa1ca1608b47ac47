/* accounting.h: the accounting of every arm: parameters, FLOPs and
 * persistent memory of a config, written once for the trainer's
 * result.json and `supkit audit compute` (which formats and checks these
 * figures and computes none of its own).
 *
 * Parameters come from the parameter table (trainer/paramspec.h):
 * backbone = wte + value_embeds + lm_head + block matrices (ve_gate
 * included) + scalars (resid/x0 lambdas) + q_tau + routing lambdas: the
 * count the trainer records as num_params. OE tables are counted apart
 * (oe, oe_rows), total = backbone + oe.
 *
 * FLOPs: a token's forward and backward, 6 (lm_head + block matrices) +
 * sum over layers of 12 H hd min(window, T); the baseline Muon's Polar
 * Express a step (not extra); and the FLOPs a step each arm component adds
 * (enum acct_extra). Memory: the persistent state each component adds, in
 * bytes (enum acct_mem), and the activation storage that paper 002's
 * PyTorch graph saves for the unfused forms of sub_gains (AM_SUB_FORM, by
 * batch_rows; the only activation figure counted). Each component's formula is the text
 * acct_extra_formula / acct_mem_formula return, the same words
 * supkit-audit(1) COMPUTE prints.
 *
 * Conventions where the papers count differently: the Neumann-Gram count a
 * V x d table, FULL = 4Vd^2 + 14Vd + 3d^2 + 3d (the default) or LEMMA2 =
 * 4Vd^2 + 4Vd; Table-Neumann over every OE row (tabneu_rows = 0, an upper
 * bound) or over a given number of visited rows a step.
 */
#ifndef SUPKIT_ACCOUNTING_H
#define SUPKIT_ACCOUNTING_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "lib/err.h"
#include "trainer/paramspec.h"

struct config;

#define ACCOUNTING_OE_TABLES_MAX 16

struct param_counts {
	int64_t wte, value_embeds, lm_head, block_matrices, scalars, q_tau, routing_lambdas;
	int64_t sub_gains;   /* pre-sublayer channel gains (sub_gains = 1) */
	int64_t rope_tau;    /* learned RoPE log-frequencies (rope_tau = shared | head) */
	int64_t backbone, oe, oe_rows_total, total;
	int oe_tables;
	int64_t oe_rows[ACCOUNTING_OE_TABLES_MAX];   /* rows of table j */
};

void param_counts_of(const struct param_spec *s, size_t n, struct param_counts *c);
/* The counts as a JSON object (keys as the struct fields; oe_rows an array),
 * the same keys as `supkit audit compute --json` under "params". */
cJSON *param_counts_json(const struct param_counts *c);
/* FLOPs a token: 6 (lm_head + block matrices) + the sum over layers of
 * 12 H head_dim min(window, T). */
double flops_per_token(const struct config *c, const struct param_counts *pc);

/* ---- the arms' FLOPs and memory ---- */

enum acct_neumann { ACCT_NEUMANN_FULL, ACCT_NEUMANN_LEMMA2 };
const char *acct_neumann_name(enum acct_neumann n);   /* "full" | "lemma2" */

struct acct_opts {
	enum acct_neumann neumann;
	int64_t tabneu_rows;   /* visited OE rows a step for Table-Neumann; 0 = every row */
};

/* Extra FLOPs a step, by component (index into accounting.extra). */
enum acct_extra {
	AX_OE_LOOKUP,     /* 8 d per token */
	AX_OE_UPDATE,     /* 5 per OE parameter */
	AX_BIEQ,          /* 4 m n a row or column step (16 m n: 2 passes, both sides) */
	AX_MUONEQ,        /* MuonEq-R 4 m n, -RC 8 m n per block matrix */
	AX_NEUMANN,       /* per V x d table (convention) */
	AX_TABLE_NEUMANN, /* per OE table over its visited rows */
	AX_QK_SCALING,    /* 4 L d per token */
	AX_ROUTING,       /* 4 d per lambda site per token, anchor +4 d (separate) / -2 d (shared) */
	AX_ZETA,          /* 8 m n per block matrix (zeta = 1) */
	AX_MALT,          /* 12 m n + 6 (m + n) per block matrix (malt = 1; 3 (m + n) with malt_beta = 0) */
	AX_SUB_GAINS,     /* 28 d^2 per layer per micro-step (sub_gains = 1) */
	AX_MUON2F,        /* 3 m n + 4 max(m, n) per block matrix (muon2f = 1) */
	AX_NORMPRE_G,     /* 7 m n (3 m n without the tangent) + (m + n) / 2 per block matrix */
	AX_MATRIX_ADAMW,  /* 13 m n per block matrix (matrix_optim = adamw; no Polar Express) */
	AX_ROPE_TAU,      /* frequency gradient 14 L d per token, tables 3 T (D/2 | L d/2) a micro-step */
	AX_N
};

/* Persistent memory added, by component (bytes; index into accounting.mem). */
enum acct_mem {
	AM_OE,            /* 4 bytes per OE parameter + 4 per row */
	AM_FP32_STATE,    /* 8 bytes per wte/value_embeds parameter */
	AM_QK_SCALING,    /* 16 bytes per q_tau entry */
	AM_ROUTING,       /* 16 bytes per routing lambda */
	AM_ZETA,          /* 4 bytes per block-matrix parameter (zeta = 1) */
	AM_MALT,          /* 4 (m + n) bytes per block matrix (malt = 1, malt_beta > 0) */
	AM_SUB_GAINS,     /* 16 bytes per gain (sub_gains = 1) */
	AM_MUON2F,        /* 4 max(m, n) bytes per block matrix (muon2f = 1) */
	AM_MATRIX_ADAMW,  /* 4 bytes per block-matrix parameter (matrix_optim = adamw) */
	AM_ROPE_TAU,      /* 16 bytes per rope_tau entry + head's per-layer tables */
	AM_SUB_FORM,      /* n_ve B T d 2 bytes (unfused), n_ve B T 32 2 (gate copy, gate_scaled) */
	AM_N
};

const char *acct_extra_key(enum acct_extra k);       /* "oe_lookup", ... */
const char *acct_extra_formula(enum acct_extra k);
const char *acct_mem_key(enum acct_mem k);           /* "oe", ... */
const char *acct_mem_formula(enum acct_mem k);
/* The formula of a figure of the audit JSON by its path ("params.wte",
 * "flops.per_token", "flops.extra_gflops_step.bieq", "memory_mib.oe", ...),
 * or NULL when it is not one of the accounting's. */
const char *acct_figure_formula(const char *path);
/* Table-Neumann FLOPs a visited OE row of width d/4 (the row-dependent part
 * of AX_TABLE_NEUMANN under convention n). */
double acct_tabneu_per_row(double d, enum acct_neumann n);

struct accounting {
	struct param_counts counts;
	int n_ve;                /* value_embeds tables */
	int64_t tokens_per_step; /* batch_rows x seq_len x grad_accum */
	double flops_token;      /* flops_per_token */
	double flops_step;       /* flops_token x tokens_per_step */
	double polar_step;       /* the baseline Muon's Polar Express a step (not extra) */
	double extra[AX_N];      /* FLOPs a step */
	double extra_total;
	double mem[AM_N];        /* bytes */
	double mem_total;
};

/* The accounting of config c (validated by the caller) under o. 0 or -1
 * (a config paramspec_build refuses). */
int accounting_of(const struct config *c, const struct acct_opts *o, struct accounting *a,
		  struct err *e);

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
