/* stats.h: small-n paired-seed statistics of run records (supkit audit stats).
 *
 * Implements supkit-audit(1), stats: per-cell mean and sample SD over seeds, paired
 * contrasts (signed sums of cells: A - B, (A-B)-(C-D), ...) with per-seed
 * deltas, mean, SD, two-sided 95% t interval (df = n-1, quantile from GSL) and
 * "k/n seeds improved" (delta < 0), ratios of contrast means in percent; the
 * run records and naming rules they come from; the contrast-spec language with
 * a built-in spec for the 2x3 factorial (Table 3 of papers 000/001); and the
 * rounding-aware check of published figures (docs/papers.md).
 *
 * Ownership: every struct here owns its strings and arrays; *_free releases
 * them. Functions return 0 or -1 with e filled (code EXIT_USAGE for bad input,
 * EXIT_SYS for I/O), except where a comment says otherwise.
 *
 * Left out: multiplicity corrections, unpaired (Welch) tests, any other
 * confidence level than 95%.
 */
#ifndef SUPKIT_AUDIT_STATS_H
#define SUPKIT_AUDIT_STATS_H

#include <stddef.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include "lib/err.h"

enum stats_split { STATS_VAL = 0, STATS_HO = 1 };
#define STATS_NSPLIT 2

/* ---- numbers ---------------------------------------------------------- */

/* t quantile: t such that P(T <= t) = p for Student's t with df degrees of
 * freedom (gsl_cdf_tdist_Pinv). */
double stats_t_quantile(double p, double df);

/* Summary of n paired values (deltas or BPB): mean, sample SD (n-1), two-sided
 * 95% t interval, and how many are < 0. With n < 2, sd, t and ci are NaN. */
struct stats_summary {
	size_t n;
	double mean, sd, t;  /* t = t(0.975, n-1) */
	double ci[2];        /* mean -+ t * sd / sqrt(n) */
	size_t improved;     /* #{x < 0} */
};
void stats_summarize(const double *x, size_t n, struct stats_summary *s);

/* ---- records ---------------------------------------------------------- */

/* One run: arm, depth and seed with its validation and held-out BPB. */
struct stats_run {
	char *arm;
	int depth;
	long seed;
	double bpb[STATS_NSPLIT];
	char *where;  /* "<file>" or "<file>: run '<name>'", for messages */
};

struct stats_records {
	struct stats_run *runs;
	size_t n, cap;
	char **ignored;  /* run names no naming rule matched (sorted at the end) */
	size_t n_ignored, cap_ignored;
};

/* Naming rules: "ARM DEPTH REGEX" lines (see supkit-formats(5), records). */
struct stats_rules;
int stats_rules_parse(struct stats_rules **out, const char *text, const char *name, struct err *e);
/* path "-" reads standard input, as the _load and _add_path functions below. */
int stats_rules_load(struct stats_rules **out, const char *path, struct err *e);
/* 1 when a rule matched (*arm malloc'd), 0 when none did, -1 on a bad capture. */
int stats_rules_match(const struct stats_rules *r, const char *run, char **arm, int *depth,
		      long *seed, struct err *e);
void stats_rules_free(struct stats_rules *r);

void stats_records_init(struct stats_records *r);
void stats_records_free(struct stats_records *r);
/* Add a folder (every result.json under it, recursively, in name order) or a
 * file (a single result.json record, a results JSON mapping run names to
 * records, or an array of records named by "run_name", "run" or "name"; "-": standard input, which has no folder to name a single
 * record's run, so only the mapping is taken there). rules may be NULL.
 * Refuses duplicate runs. */
int stats_records_add_path(struct stats_records *r, const char *path,
			   const struct stats_rules *rules, struct err *e);
/* Add parsed JSON (as for a file); name is used in messages. */
int stats_records_add_json(struct stats_records *r, const cJSON *root, const char *name,
			   const struct stats_rules *rules, struct err *e);

/* ---- cells ------------------------------------------------------------ */

/* The runs of one (arm, depth), seeds ascending. */
struct stats_cell {
	char *arm;
	int depth;
	size_t n;
	long *seeds;
	double *bpb[STATS_NSPLIT];
	struct stats_summary sum[STATS_NSPLIT];
};

struct stats_cells {
	struct stats_cell *c;  /* sorted by depth, then arm */
	size_t n;
};

void stats_cells_build(const struct stats_records *r, struct stats_cells *cells);
void stats_cells_free(struct stats_cells *cells);
/* The cell for arm at depth: an exact arm name, else the one arm whose name
 * starts with "<arm>_" (so "01" names "01_dense_opt"). NULL when none; -1 in
 * *ambiguous when several match. */
const struct stats_cell *stats_cells_find(const struct stats_cells *cells, const char *arm,
					  int depth, int *ambiguous);

/* ---- contrast specs ----------------------------------------------------- */

struct stats_term {
	int coef;   /* net sign count (+1, -1, ...) */
	char *arm;
	int depth;  /* 0: the depth the contrast is evaluated at */
};

struct stats_contrast_def {
	char *name;
	char *expr;  /* as written, for reports */
	int line;
	struct stats_term *terms;
	size_t n_terms;
};

struct stats_ratio_def {
	size_t num, den;  /* contrast indexes */
	int line;
};

struct stats_spec {
	char *name;  /* file name, or "built-in" */
	int builtin; /* contrasts whose arms are absent are skipped, not refused */
	struct stats_contrast_def *c;
	size_t n;
	struct stats_ratio_def *r;
	size_t n_r;
};

/* The text of the built-in 2x3 factorial spec (Table 3's eleven rows). */
extern const char stats_spec_builtin_text[];
int stats_spec_parse(struct stats_spec *s, const char *text, const char *name, struct err *e);
int stats_spec_load(struct stats_spec *s, const char *path, struct err *e);
int stats_spec_builtin(struct stats_spec *s, struct err *e);
void stats_spec_free(struct stats_spec *s);

/* ---- contrast results --------------------------------------------------- */

struct stats_ratio_value {
	size_t ref;                  /* index into the results array */
	double pct[STATS_NSPLIT];    /* 100 * mean / mean(ref) */
};

struct stats_contrast {
	const struct stats_contrast_def *def;
	size_t def_index;
	int depth;                   /* the depth evaluated at; 0 when all terms fixed */
	char *scope;                 /* "d8", or "d6,d8" style for fixed mixed terms */
	const struct stats_cell **cells; /* resolved per term */
	size_t n;                    /* paired seeds */
	long *seeds;
	double *delta[STATS_NSPLIT];
	struct stats_summary sum[STATS_NSPLIT];
	char *dropped;               /* "46 (not in d6/01)"..., NULL when none */
	struct stats_ratio_value *ratios;
	size_t n_ratios;
};

struct stats_results {
	struct stats_contrast *c;
	size_t n;
	char **skipped;   /* built-in contrasts not evaluated, with why */
	size_t n_skipped;
};

/* Evaluate every contrast of spec over cells. For a contrast with per-depth
 * terms, once for every depth at which any of its arms has runs. Unknown arms
 * are an error for a file spec and a skip for the built-in one; fewer than 2
 * paired seeds is an error. */
int stats_evaluate(const struct stats_spec *spec, const struct stats_cells *cells,
		   struct stats_results *res, struct err *e);
void stats_results_free(struct stats_results *res);

/* ---- reports ------------------------------------------------------------ */

/* Markdown tables in the papers' layout (per-cell, then contrasts). */
void stats_print_markdown(FILE *f, const struct stats_cells *cells, const struct stats_results *res);
/* The JSON record (caller cJSON_Delete()s). */
cJSON *stats_to_json(const struct stats_cells *cells, const struct stats_results *res,
		     const struct stats_records *rec);

/* ---- rounding-aware check ----------------------------------------------- */

enum stats_verdict { STATS_OK = 0, STATS_ROUNDING = 1, STATS_INCONSISTENT = 2, STATS_MISSING = 3 };
const char *stats_verdict_name(enum stats_verdict v);

/* Parse a printed figure ("-0.001395", "+0.000891", "48.6"): its value and its
 * number of decimals. -1 when s is not a plain decimal. */
int stats_printed_parse(const char *s, double *v, int *decimals);
/* Format v with the given decimals (sign '+' kept when plus is set). */
void stats_printed_format(double v, int decimals, int plus, char *buf, size_t n);

/* Ranges of a statistic over per-seed values anywhere in the boxes
 * [lo[i], hi[i]] (n of them). */
enum stats_figure { STATS_FIG_MEAN, STATS_FIG_SD, STATS_FIG_CI_LO, STATS_FIG_CI_HI };
void stats_range(enum stats_figure fig, const double *lo, const double *hi, size_t n,
		 double *rmin, double *rmax);
/* Range of 100 * (a.x) / (b.x) for x in the box [lo, hi] (m variables). An
 * infinite range when b.x can be 0. */
void stats_range_ratio(const double *a, const double *b, const double *lo, const double *hi,
		       size_t m, double *rmin, double *rmax);

/* Judge computed (from the printed inputs) against the printed figure, given
 * the range reachable from inputs within half a unit of their last place: OK
 * when it rounds to the printed one, ROUNDING when the printed figure's own
 * half-unit interval meets [rmin, rmax], INCONSISTENT otherwise. */
enum stats_verdict stats_judge(double computed, double rmin, double rmax, const char *printed);

struct stats_check_counts {
	size_t ok, rounding, inconsistent, missing;
};
/* Check every figure of a published file (the layout of
 * tests/fixtures/stats/stats.json: "cell_stats", "contrasts", "ratios") against the cells. Inputs are
 * taken as printed with input_decimals decimals. Appends one object per
 * figure to the array out. Fails only on a malformed published file. */
int stats_check_published(const cJSON *pub, const char *name, const struct stats_cells *cells,
			  int input_decimals, cJSON *out, struct stats_check_counts *counts,
			  struct err *e);
/* Check stats_to_json's own record (its "cells" and "contrasts": every
 * per-seed value, mean, SD, interval, improved count, t, n and ratio)
 * against the cells: a number agrees within 1e-12, relative. Items as
 * stats_check_published writes them (status "ok", "inconsistent" or
 * "missing"). Fails only on a malformed file. */
int stats_check_own(const cJSON *pub, const char *name, const struct stats_cells *cells, cJSON *out,
		    struct stats_check_counts *counts, struct err *e);
/* 1 when pub has the layout of stats_to_json (a "cells" array). */
int stats_is_own(const cJSON *pub);

/* Check the stats claims of a claims file (lib/claims.h; each "figure" is
 * {"table": "cell", "cell", "split", "seeds", "stat": mean|sd|value,
 * "seed"}, {"table": "contrast", "terms", "seeds", "split", "stat":
 * mean|sd|ci_low|ci_high|delta|k_improved|t, "seed"} or {"table": "ratio",
 * "split", "numerator", "denominator"}) with the published file's rules.
 * The inputs are exact unless the figure gives "input_decimals" (or
 * input_decimals >= 0 overrides it for every claim). Items carry "claim",
 * the claim's index; *n_other counts claims of other commands (left out). */
int stats_check_claims(const cJSON *claims, const char *name, const struct stats_cells *cells,
		       int input_decimals, cJSON *out, struct stats_check_counts *counts, int *n_other,
		       struct err *e);
/* Append the figures of the Markdown tables (each seed's BPB, cell means and
 * SDs; contrast means, SDs, interval bounds, per-seed deltas, k/n improved
 * and ratios), as printed, to a claims file, each with derivation deriv. */
void stats_claims_add(cJSON *file, const struct stats_cells *cells, const struct stats_results *res,
		      const cJSON *deriv);

/* One line per figure that is not OK (all lines when verbose), then a total. */
void stats_print_check(FILE *f, const cJSON *items, const struct stats_check_counts *counts,
		       int verbose);

#endif
