/* compute.h: `supkit audit compute`'s library: the accounting of a config
 * (an arm at a depth) as a report, measured figures from run records, and
 * the check of a published audit JSON against the recomputed figures.
 *
 * Every figure of a report comes from trainer/accounting.h (parameters,
 * FLOPs and memory of every arm, and the convention of the Neumann-Gram
 * count); this module formats them, compares them with published figures
 * and reports. Its one convention of its own is the step-FLOPs denominator
 * of the extra-compute share: FORMULA (FLOPs/token x tokens/step, the
 * default) or PAPER (the depth-6 benchmark step printed as 59.37 TFLOPs in
 * papers 000/001; the formula elsewhere; docs/papers.md).
 */
#ifndef SUPKIT_AUDIT_COMPUTE_H
#define SUPKIT_AUDIT_COMPUTE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "lib/err.h"
#include "trainer/accounting.h"
#include "trainer/config.h"

enum compute_denom { COMPUTE_DENOM_FORMULA, COMPUTE_DENOM_PAPER };

/* The depth-6 step FLOPs printed in papers 000/001 (Table 1b percentages). */
#define COMPUTE_PAPER_D6_STEP_FLOPS 59.37e12

struct compute_opts {
	enum acct_neumann neumann;
	enum compute_denom denom;
	int64_t tabneu_rows;   /* visited OE rows per step for Table-Neumann; 0 = every row (upper bound) */
};

#define COMPUTE_OE_TABLES_MAX 16

struct compute_report {
	char arm[64];
	char config_sha256[65];
	int depth, d, H, head_dim, n_ve;
	int64_t V, T, tokens_per_step;

	/* parameters (trainer/accounting.h) */
	int64_t p_wte, p_value_embeds, p_lm_head, p_matrices, p_scalars;
	int64_t p_q_tau, p_routing;        /* arm extras inside the backbone */
	int64_t p_sub_gains;               /* ... pre-sublayer channel gains */
	int64_t p_rope_tau;                /* ... learned RoPE log-frequencies */
	int64_t p_backbone;                /* num_params as the trainer records it */
	int oe_tables;
	int64_t oe_rows[COMPUTE_OE_TABLES_MAX], oe_rows_total, p_oe;
	int64_t p_total;
	struct param_counts counts;        /* trainer/accounting.h (the source of the p_ fields) */

	/* FLOPs */
	double flops_token;      /* 6 (lm_head + block matrices) + attention */
	double flops_step;       /* flops_token * tokens_per_step */
	double step_denominator; /* per convention */
	double polar_step;       /* baseline Muon Polar Express FLOPs/step (not extra) */
	double extra[AX_N];      /* FLOPs per step (enum acct_extra) */
	double extra_total;
	double extra_pct;        /* 100 * extra_total / step_denominator */

	/* memory (bytes) */
	double mem[AM_N];        /* enum acct_mem */
	double mem_total;

	/* conventions used */
	struct compute_opts opts;
};

/* The report of config c (validated by the caller): accounting_of under
 * o's Neumann count and Table-Neumann rows, the share under o's
 * denominator. 0 or -1. */
int compute_config(const struct config *c, const struct compute_opts *o, struct compute_report *r,
		   struct err *e);

const char *compute_denom_name(enum compute_denom d);     /* "formula" | "paper" */

/* The report as a JSON object (figures and the conventions). Caller deletes. */
cJSON *compute_report_json(const struct compute_report *r);

/* Human output: the papers' Table 1b layout (one row per report; measured
 * columns when nm > 0, matched by arm and depth), and the full breakdown of
 * one report (m may be NULL). */
struct compute_measured;
void compute_print_table(FILE *f, const struct compute_report *r, int n, const struct compute_measured *m, int nm);
void compute_print_detail(FILE *f, const struct compute_report *r, const struct compute_measured *m);

/* ---- measured figures from run records ---- */

struct compute_measured {
	char arm[64];
	int depth;
	int n;                       /* runs */
	double peak_memory_mib;      /* means over runs */
	double training_seconds;
	double training_loop_seconds;
	int has_dense;               /* a 00_dense_native group at this depth exists */
	double d_peak_memory_mib;    /* deltas of the means against it */
	double d_training_seconds;
	double d_training_loop_seconds;
	char config[1024];           /* the first run's config.cfg beside its
	                                result.json, or "" when it has none */
};

/* Read DIR/result.json (or the file itself when path is a file; a folder
 * without result.json stands for its subfolders that have one) for each
 * path, group by (arm, depth) in first-seen order, mean, and deltas against
 * 00_dense_native at the same depth. *out is caller-freed. 0 or -1 (the
 * message names the file and key). */
int compute_runs_load(char *const *paths, int npaths, struct compute_measured **out, int *nout,
		      struct err *e);
cJSON *compute_measured_json(const struct compute_measured *m);

/* ---- --check ---- */

/* Compare a published audit JSON (see supkit-audit(1), COMPUTE: --check)
 * with recomputed figures. Each arm is rebuilt from its "arm", "depth" and
 * "set" (the overrides compute --json writes; an arm that is not a named one
 * is the baseline with its "set", which names it) and accounted for under its
 * own "conventions" when it has them, else under o. Appends one line per
 * disagreement to *lines (caller frees) and, when items is not NULL, one
 * object per figure compared to it ({"label", "path", "published",
 * "recomputed", "agrees", "formula", "note", "claim"}); returns the number of
 * disagreements (0 = all agree), or -1 on bad input (e names file and entry).
 * ncompared counts figures compared. */
int compute_check(const cJSON *published, const char *name, const struct compute_opts *o,
		  char **lines, int *ncompared, cJSON *items, struct err *e);

/* The "set" of a config: every key whose value differs from the named arm's
 * at the config's depth (from the baseline's, the "arm" key included, when
 * the arm is not a named one), as {key: value as config_print writes it};
 * NULL when none. compute_check rebuilds the config from it. */
cJSON *compute_config_set(const struct config *c);

/* ---- claims (lib/claims.h) ---- */

/* The compute claims of a claims file as a published "arms" object for
 * compute_check (caller deletes *out): one arm per claim, with "claim" (its
 * index) and "where". *n_other counts claims of other commands (left out). */
int compute_claims_arms(const cJSON *claims, const char *name, cJSON **out, int *n_other, struct err *e);
/* Append the claims of r's row in the compute table (backbone, OE and total
 * parameters, extra GFLOPs/step and share, memory MiB, as printed) to a
 * claims file; set is compute_config_set of its config (may be NULL). */
void compute_claims_add(cJSON *file, const struct compute_report *r, const cJSON *set, const cJSON *derivation);

#endif
