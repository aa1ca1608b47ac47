/* step0.h: the step-0 audit (supkit-audit(1); paper 001 section 4.5.2,
 * "step-0 epsilon-derivative vs. bfloat16 rounding audit"): the gradient of
 * the loss on the scalar families (resid_lambdas, x0_lambdas and, when the
 * config has them, wte_lambdas and out_lambdas) at step 0, for the first
 * optimizer batch, in float64 at several RMSNorm epsilons and in the
 * trainer's own low-precision arithmetic, with the AdamW displacement the
 * step applies; and the trajectory of those scalars over the first steps
 * under each step-0 mode.
 *
 * Ownership: every struct here owns its arrays; release them with the
 * matching _free. The config is borrowed (copied where a run changes it).
 * Errors: -1 (or NULL) with e set: EXIT_USAGE for bad config or data,
 * EXIT_CHECK for a fast-failed loss, EXIT_SYS for I/O.
 */
#ifndef SUPKIT_AUDIT_STEP0_H
#define SUPKIT_AUDIT_STEP0_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "lib/err.h"
#include "trainer/config.h"

struct model;

/* The scalar families, in report order. */
enum step0_family { S0_RESID, S0_X0, S0_WTE, S0_OUT, S0_NFAM };
const char *step0_family_name(int f);   /* "resid_lambdas", ... */

/* The RMSNorm epsilons of the float64 sweep: 0, 2^-23, 1e-6. */
#define STEP0_NEPS 3
extern const double step0_eps[STEP0_NEPS];
extern const char *const step0_eps_label[STEP0_NEPS];   /* "0", "2^-23", "1e-6" */

/* The config of an audit: defaults, then the file, then each "key=value" of
 * sets (--set), then init_from when not NULL (--init-from), validated. */
int step0_config_load(const char *path, const char *const *sets, int n_sets, const char *init_from,
		      struct config *c, struct err *e);

/* Resolve SHARDS: each path is a folder (its train_*.bin, sorted) or a shard
 * file. n = 0 uses data_dir (the config's key; "" refuses). *out is a fresh
 * array of fresh strings; free with step0_shards_free. */
int step0_shards_resolve(const char *const *paths, int n, const char *data_dir, char ***out,
			 int *n_out, struct err *e);
void step0_shards_free(char **shards, int n);

/* The first optimizer batch as the trainer draws it: loader (data/loader.h)
 * over the shards with T = seq_len, B = batch_rows and the config's seed, K =
 * grad_accum micro-steps. tokens > 0 audits only the first `tokens` input
 * tokens of that batch: a multiple of T (the first tokens/T rows, in micro-step
 * order, regrouped B rows a micro-step), or fewer than T (the first tokens of
 * row 0). Each micro-step k is weighted scale[k] = rows_k / rows (1/K for the
 * whole batch, as the trainer's loss / K), so the loss is the mean over rows of
 * each row's mean token loss. */
struct step0_batch {
	int n_micro;          /* micro-steps */
	int T;                /* tokens a row */
	int *rows;            /* rows of each micro-step */
	double *scale;        /* loss weight of each micro-step */
	int32_t **inputs;     /* [n_micro][rows*T] */
	int32_t **targets;
	int64_t tokens;       /* inputs in all */
};
int step0_batch_load(const struct config *c, const char *const *shards, int n, int64_t tokens,
		     struct step0_batch *b, struct err *e);
void step0_batch_free(struct step0_batch *b);

/* The model at step 0 for config c (from its seed or init_from) in float64
 * (fp64 = 1) or the trainer's fp32 arithmetic (bf16-stored embeddings, bf16
 * RoPE tables). eps >= 0 replaces norm_eps (and shared_eps with anchor =
 * shared, so that eps = 0 is exactly scale invariant); eps < 0 keeps the
 * config's. */
int step0_model_create(const struct config *c, int fp64, double eps, struct model **m,
		       struct err *e);
/* The weighted batch loss sum_k scale[k] * mean loss of micro-step k (forward
 * only). */
int step0_batch_loss(struct model *m, const struct step0_batch *b, double *loss, struct err *e);

/* One evaluation: gradient of the batch loss on each family at step 0, the
 * values, and what the trainer's optimizer step 0 (trainer/optim.h, the
 * config's step0 mode included) does to them. n[f] = 0 when the config has
 * no family f. */
struct step0_eval {
	int fp64;
	double eps;                  /* the norm_eps used */
	double loss;
	size_t n[S0_NFAM];
	double *value[S0_NFAM];      /* at step 0 */
	double *grad[S0_NFAM];       /* d loss / d value */
	double *disp[S0_NFAM];       /* value after optimizer step 0 minus before */
	int64_t count[S0_NFAM];      /* AdamW step counter after step 0 */
	double *mag[S0_NFAM];        /* closed form only: sum over tokens of |the two
	                                terms whose difference is the gradient|, i.e.
	                                of |coefficient * <u, x0>| / r; the scale that
	                                float64 rounding at eps = 0 is measured by */
};
int step0_eval_run(const struct config *c, const struct step0_batch *b, int fp64, double eps,
		   struct step0_eval *ev, struct err *e);
void step0_eval_free(struct step0_eval *ev);

/* The closed form in float64, written apart from the model's
 * backward: with both c_proj = 0 and the OE tables 0 every block adds
 * nothing, so layer i's state is a_i x0 (a_-1 = 1, a_i = resid_i a_(i-1) +
 * x0l_i + wtel_i c, c = x0_wte / x0 per token, 1 unless the anchors' eps
 * differ) and the final pre-norm state is alpha x0 (alpha = a_(L-1) + out_0 +
 * out_1 c; 1 + 0.1 L at init). With u = d loss / d rms(alpha x0) (lm_head,
 * softcap and cross-entropy, recomputed here) D = eps <u, x0> / (alpha^2 q +
 * eps)^(3/2), q = mean(x0^2), and d/dresid_i = P_i a_(i-1) D, d/dx0l_i = P_i D,
 * d/dwtel_i = P_i c D, d/dout = (D, c D), P_i = prod_(j>i) resid_j, summed over
 * the batch's tokens with their loss weights. Fills ev->grad (and n, value,
 * loss, mag; disp stays NULL). Returns 0, 1 when the model is not in the step-0
 * state (some c_proj or OE entry non-zero: e says which), or -1. */
int step0_closed_form(const struct config *c, const struct step0_batch *b, double eps,
		      struct step0_eval *ev, struct err *e);

/* The audit record (float64 at each step0_eps, and at the config's own eps
 * setting, labelled "config", when that is none of them: norm_eps not in the
 * set, or anchor = shared with shared_eps != norm_eps; the closed form at
 * each eps > 0 and "config"; the trainer's arithmetic at the config's
 * setting; the comparison against float64 at the config's setting). See man/src/supkit-audit-step0.mdoc for
 * the layout. shard_names (may be NULL) are recorded as given. */
cJSON *step0_audit(const struct config *c, const struct step0_batch *b,
		   const char *const *shard_names, int n_shards, int quiet, struct err *e);
void step0_print(FILE *f, const cJSON *rep);

/* The trajectory: for each step-0 mode (none, nostep0, mom_only_nodisp,
 * disp_only_nomom, disp_stepcount_nomom, nostep0_all; the four that act on
 * wte/out lambdas switch wte_lambdas on when the config lacks it, and say
 * so), train steps 0..steps-1 as the trainer does (same loader, micro-steps,
 * schedules, fast-fail) and record per step the loss, each scalar's value
 * before and after the step, its gradient, the AdamW step counter and
 * moments (read back through optim_save's documented state format). In the
 * config's dtype. Layout: man/src/supkit-audit-trajectory.mdoc. */
cJSON *step0_trajectory(const struct config *c, const char *const *shards, int n_shards,
			int steps, int quiet, struct err *e);
void step0_trajectory_print(FILE *f, const cJSON *rep);

#endif
