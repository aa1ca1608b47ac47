/* plots.h: the figures of supkit plot, built from the files the other
 * tools write: run folders (curve.jsonl, result.json, config.cfg; see
 * supkit-formats(5), RUN FOLDERS), and the JSON reports of supkit audit
 * stats, geometry and trajectory. Each builder checks its input and fills a
 * struct plot_figure (figure.h); nothing here draws or writes.
 *
 * Errors: bad input (a missing or empty curve, a number that is not
 * finite, a report of another kind, a field of the wrong type) is
 * EXIT_USAGE with the file and the place named; unreadable files EXIT_SYS.
 */
#ifndef SUPKIT_PLOT_PLOTS_H
#define SUPKIT_PLOT_PLOTS_H

#include <cjson/cJSON.h>
#include "lib/err.h"
#include "plot/figure.h"

/* ---- run folders ---- */

/* One training run. Steps: the x of the loss of step t (0-based, measured
 * before step t's update) is t; a validation figure of curve step t (taken
 * after its update) is at t + 1, the run's final one (result.json) at
 * steps. */
struct plot_run {
	char *dir;
	char *arm;             /* result.json, else config.cfg, else the folder's name */
	long long seed;        /* result.json or config.cfg; -1 when neither says */
	int depth;             /* -1 when unknown */
	int n;                 /* curve steps */
	double *step, *loss;   /* n; steps strictly increasing */
	double *lrm;           /* n; NaN where the curve has none */
	int nval;
	double *val_x, *val_bpb;
	double steps;          /* the run's step count: config, result, else last step + 1 */
	double tokens_per_step;   /* result.json, else config B T K; NaN when unknown */
	double warmdown;       /* step where the LR warm-down starts; NaN when none */
};

/* Read run folders: each path is a run folder (it holds curve.jsonl) or a
 * folder whose immediate subfolders are (sorted by name, those without
 * curve.jsonl skipped). Returns 0 with *runs (caller plot_runs_free) and
 * *nruns >= 1, or -1. Refused: a path with no run in it, a curve.jsonl
 * with no steps, a line that is not a JSON object, a step that is not an
 * integer >= 0 or not above the one before, a loss or val_bpb that is not
 * a finite number, a result.json that is not JSON. */
int plot_runs_read(char *const *paths, int n, struct plot_run **runs, int *nruns, struct err *e);
void plot_runs_free(struct plot_run *runs, int n);

/* Read one run folder (dir holds curve.jsonl); on failure r holds nothing. */
int plot_run_read(const char *dir, struct plot_run *r, struct err *e);

struct plot_curves_opts {
	int tokens;          /* x in tokens (step x tokens_per_step) instead of steps */
	int log_x;
	int band;            /* arm mean +- SD band instead of one thin line a seed */
	double smooth;       /* EMA weight in [0, 1) for the training loss; 0: raw only */
	double from;         /* first step drawn */
	const char *title;   /* NULL: from the data */
};

/* Training loss (raw and smoothed, debiased EMA as TensorBoard's) and
 * validation BPB against step or tokens: one colour per arm (in the order
 * the arms first appear), each seed a thin line, the arm's mean over its
 * seeds (at the steps every seed has) in bold; the warm-down start as a
 * dashed line. The validation panel is left out when no run has a
 * validation figure. */
int plot_curves(struct plot_figure *f, const struct plot_run *runs, int n,
		const struct plot_curves_opts *o, struct err *e);

/* EMA smoothing of y (n values) into out: s_i = w s_{i-1} + (1 - w) y_i
 * from s = 0, divided by 1 - w^(i+1). */
void plot_smooth(const double *y, int n, double w, double *out);

/* ---- JSON reports ---- */

enum plot_report { PLOT_REPORT_STATS, PLOT_REPORT_GEOMETRY, PLOT_REPORT_TRAJECTORY };

/* The kind of a parsed report: stats ("cells" and "contrasts" arrays),
 * geometry ("checkpoints" array, "arms" object), trajectory ("modes"
 * array); -1 for none of them. */
int plot_report_kind(const cJSON *j);
/* Read path and check it is a report of kind want; NULL with e naming the
 * kind it is instead, or what is missing. Caller cJSON_Delete()s. */
cJSON *plot_report_read(const char *path, enum plot_report want, struct err *e);

/* Forest plot of the paired contrasts of supkit audit stats --json: one
 * row a contrast and scope, validation and held-out side by side on one x
 * range, the mean difference as a marker (filled when its 95% t-interval
 * excludes 0), the interval as a bar, the per-seed differences as dots, a
 * line at 0; one colour per scope. */
int plot_stats(struct plot_figure *f, const cJSON *rep, const char *path, const char *title,
	       struct err *e);

/* supkit audit geometry --json: stable rank (top row) and mean-row energy
 * share (bottom row) against layer, one column a matrix family
 * (attn.c_q, attn.c_k, attn.c_v, attn.c_proj, mlp.c_fc, mlp.c_proj,
 * attn.ve_gate, and the tables wte, lm_head, value_embeds.i, oe.i against
 * their names); one colour per arm, each checkpoint thin, the arm's mean
 * bold. spectrum: instead, the singular values of every matrix (the report
 * of --spectrum) against their index on log-log axes, one panel a family,
 * each matrix thin, the arm's mean spectrum bold. */
int plot_geometry(struct plot_figure *f, const cJSON *rep, const char *path, int spectrum,
		  const char *title, struct err *e);

/* supkit audit trajectory --json: the loss, then each scalar family's
 * entry `entry` (resid_lambdas, x0_lambdas, wte_lambdas, out_lambdas, those
 * present) against steps taken (0: the initial value, k: after step k-1),
 * one colour a step-0 mode. */
int plot_step0(struct plot_figure *f, const cJSON *rep, const char *path, int entry,
	       const char *title, struct err *e);

#endif
