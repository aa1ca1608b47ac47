/* geometry.h: the geometry audit of checkpoints (supkit-audit(1); papers'
 * Table 4, Table 5a and Table 8b, the role of their geometry_audit.json).
 *
 * Per matrix W (M x N), in float64: stable rank ||W||_F^2 / ||W||_2^2 and
 * mean-row energy share M ||mean row||^2 / ||W||_F^2. ||W||_2^2 is the top
 * eigenvalue of the Gram matrix on the short side (dsyrk, streamed over row
 * blocks so a bf16 table is never held whole in float64), found by Lanczos
 * and certified by a Cholesky factorisation (GEOM_GRAM) or by dsyevr
 * (GEOM_GRAM_EVR); GEOM_SVD takes sigma_1 from dgesdd instead. All agree to
 * ~1e-15 relative: the top eigenvalue of W^T W is perturbed by at most
 * eps ||W||_2^2.
 *
 * A checkpoint (safetensors, PyTorch state_dict names as in paramspec.h, an
 * optional "_orig_mod." or "module." prefix ignored) is summarised as:
 *   table4   wte, lm_head (stable rank, mean-row energy, width); OE tables
 *            oe.0..3 (means over the 4); value_embeds (mean over tables);
 *            square attention c_q, c_k, c_v, attn.c_proj (mean over L x 4);
 *            rectangular MLP c_fc, mlp.c_proj (mean over L x 2); each mean
 *            over the group's n matrices but the n_undefined all-zero ones
 *   q_tau    exp(q_tau): mean +- SD (n-1) overall; plane bands c in
 *            [0, P/4), [P/4, 3P/4), [3P/4, P) for P = hd/2 planes (c in
 *            [0,15], [16,47], [48,63] at hd = 128); layer 0, middle layers
 *            2..L-2, final layer, every layer
 *   scalars  x0_lambdas, wte_lambdas, resid_lambdas, out_lambdas as stored
 * Several checkpoints are grouped by arm (geom_arm_of) and averaged.
 *
 * With spectrum (geom_opts), also every singular value of each matrix, by
 * LAPACK dgesdd (values only) on the whole matrix in float64: M N 8 bytes
 * and ~4 M N^2 flops a matrix (N <= M), against the Gram path's streamed
 * blocks; the tables do not use them.
 *
 * Left out: tensors that are not the model's (unknown names) are skipped.
 */
#ifndef SUPKIT_AUDIT_GEOMETRY_H
#define SUPKIT_AUDIT_GEOMETRY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include "lib/err.h"
#include "lib/safetensors.h"

/* How ||W||_2^2 is found: Gram matrix + certified Lanczos (default), Gram
 * matrix + dsyevr, or dgesdd on W. */
enum geom_method { GEOM_GRAM, GEOM_GRAM_EVR, GEOM_SVD };

/* Figures of one matrix. NaN where undefined (an all-zero matrix). They are
 * computed on W / 2^k, 2^k the power of two just above max |w_ij|, exactly
 * (powers of two scale without rounding), so that entries near 1e-170 or
 * 1e200 neither underflow nor overflow when squared: the ratios are those
 * of W; fro2 and spec2 are scaled back and are infinite, or subnormal
 * and rounded, or 0, where W's lie outside float64's range. */
struct geom_stats {
	double fro2;             /* ||W||_F^2 */
	double spec2;            /* ||W||_2^2 = sigma_1^2 */
	double stable_rank;      /* fro2 / spec2 */
	double mean_row_energy;  /* M ||mean row||^2 / fro2, in [0, 1] */
	double max_abs;          /* max |w_ij| */
};

/* Stats of a row-major M x N matrix of doubles. 0 or -1: a NaN or infinite
 * entry (EXIT_USAGE: "N non-finite values (NaN or infinity), the first at
 * [i, j]"), a LAPACK failure (EXIT_SYS). */
int geom_matrix_stats(const double *w, int64_t m, int64_t n, enum geom_method method,
		      struct geom_stats *out, struct err *e);
/* The same on a float tensor of a checkpoint viewed as rows = shape[0],
 * cols = numel / rows (converted to float64 block by block, after a first
 * pass that finds max |w_ij| and refuses non-finite values). */
int geom_tensor_stats(const struct st_tensor *t, enum geom_method method, struct geom_stats *out,
		      struct err *e);

/* Every singular value of a row-major M x N matrix of doubles, descending,
 * into sv (min(M, N) doubles): LAPACK dgesdd (JOBZ = 'N') on W / 2^k (as
 * geom_matrix_stats scales), each value times 2^k. 0 or -1: a NaN or
 * infinite entry (EXIT_USAGE, as geom_matrix_stats), a LAPACK failure
 * (EXIT_SYS). */
int geom_matrix_spectrum(const double *w, int64_t m, int64_t n, double *sv, struct err *e);
/* The same on a float tensor of a checkpoint (rows = shape[0]). */
int geom_tensor_spectrum(const struct st_tensor *t, double *sv, struct err *e);

/* Table groups of a matrix. */
enum geom_group {
	GG_WTE, GG_LM_HEAD, GG_OE, GG_VALUE_EMBED, GG_ATTN, GG_MLP, GG_VE_GATE, GG_OTHER, GG_NGROUPS
};
const char *geom_group_name(enum geom_group g);   /* "wte", "oe_tables", "attn_square", ... */

/* Classify a checkpoint name (prefix stripped): group, layer (or table
 * index for OE/value_embeds; -1), and the kind within the layer
 * ("c_q", "mlp.c_fc", ...; NULL for others). Returns -1 for a name that is
 * not a matrix of the model (scalars, unknown tensors). */
int geom_classify(const char *name, enum geom_group *g, int *layer, const char **kind);

/* Audit options. */
struct geom_opts {
	enum geom_method method;
	int allow_missing;     /* tables whose tensors are missing become null, not errors */
	int quiet;             /* no progress */
	int spectrum;          /* every matrix's singular values in the report */
};

/* Audit one checkpoint; returns a fresh JSON object (caller cJSON_Delete()s)
 * {"path", "arm", "arm_source", "depth", "width", "matrices", "table4",
 *  "q_tau", "scalars"} (matrices: name -> {"group", "rows", "cols",
 *  "stable_rank", "mean_row_energy", "fro_sq", "sigma1_sq", "max_abs"}, and
 *  "singular_values" with spectrum: descending, null for one beyond
 *  float64's range when scaled back), or NULL with e set (a missing tensor names the table
 * that needs it; a NaN or infinity in any tensor read, checked before the
 * analysis, names the tensor: EXIT_USAGE). The work is bounded by the
 * tensors present, whatever layer index a name holds. */
cJSON *geom_audit_file(const char *path, const struct geom_opts *o, int file_i, int file_n,
		       struct err *e);
/* The same on an open file (path used in messages and arm lookup). */
cJSON *geom_audit_st(const struct st_file *f, const char *path, const struct geom_opts *o,
		     int file_i, int file_n, struct err *e);

/* The arm of a checkpoint: __metadata__ "arm"; else "arm" in a sibling
 * result.json; else an "arm = X" line in a sibling config or config.cfg;
 * else the file name without .safetensors (the folder name when the file is
 * model.safetensors), a trailing _seed<N> / -seed<N> / _s<N> removed.
 * Returns a fresh string; *source (static) says where it came from. */
char *geom_arm_of(const char *path, const struct st_file *f, const char **source);

/* Audit every path and average per arm: the whole report
 * {"checkpoints": [...], "arms": {arm: {"n", "checkpoints", "table4",
 *  "q_tau", "scalars"}}, "method"}. NULL with e set on the first failure. */
cJSON *geom_audit(char *const *paths, int n, const struct geom_opts *o, struct err *e);

/* Human tables of a report (Table 4, Table 5a, Table 8b; per checkpoint,
 * then per-arm means when an arm has several checkpoints). */
void geom_print(FILE *fp, const cJSON *report);

#endif
