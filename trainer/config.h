/* config.h: the trainer configuration (supkit-formats(5)), shared by
 * supkit-train, supkit-audit and the demo.
 *
 * File format: text, one `key = value` a line, `#` starts a comment, blank
 * lines ignored; unknown keys, malformed values, out-of-range values and
 * conflicting switches are errors naming file and line. Later lines override
 * earlier ones; `--set key=value` overrides apply after the file (named
 * "--set" in messages). Defaults equal the benchmark (depth 8, V 8192,
 * T 2048, B 64, K 4, 953 steps, baseline arm 00_dense_native).
 *
 * The canonical printed form (config_print) lists every key in a fixed order
 * with its resolved value, one `key = value` a line; its SHA-256
 * (config_sha256) identifies a run.
 *
 * Implementation: trainer/config.c (one table of keys drives parsing,
 * defaults, range checks and printing).
 */
#ifndef SUPKIT_CONFIG_H
#define SUPKIT_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"

enum cfg_init { INIT_BENCHMARK, INIT_DENSE };             /* dense: every zero tensor drawn (tests) */
enum cfg_dtype { DTYPE_F32, DTYPE_F64 };                 /* CPU compute precision */
enum cfg_backend { BACKEND_AUTO, BACKEND_CPU, BACKEND_CUDA };
/* the GEMMs' arithmetic; the order of trainer/backend.h enum backend_precision */
enum cfg_precision { PRECISION_AUTO, PRECISION_AUTOCAST, PRECISION_FP32 };
enum cfg_polar { POLAR_BF16, POLAR_FP32 };
enum cfg_polar_arith { POLAR_ARITH_COMPILED, POLAR_ARITH_EAGER }; /* bf16 Polar Express */
enum cfg_logits { LOGITS_BF16, LOGITS_FP32 };            /* lm_head output before the softcap */
enum cfg_muoneq { MUONEQ_OFF, MUONEQ_BIEQ, MUONEQ_R, MUONEQ_RC };
enum cfg_bieq_sides { BIEQ_BOTH, BIEQ_ROWS };
enum cfg_equil_scope { EQUIL_ALL, EQUIL_SQUARE };
enum cfg_post_polar { POST_POLAR_AS_POLAR, POST_POLAR_FP32 };
enum cfg_polar_norm { POLAR_NORM_AS_POLAR, POLAR_NORM_FP32, POLAR_NORM_AOL };
enum cfg_neumann_site { NEUMANN_DIRECTION, NEUMANN_GRADIENT };
enum cfg_embed_state { EMBED_STATE_BF16, EMBED_STATE_FP32 };
enum cfg_wd_schedule { WD_LINEAR, WD_COSINE };
enum cfg_qk_scale { QK_SCALE_NONE, QK_SCALE_PAIR, QK_SCALE_UNTIED, QK_SCALE_HEAD };
enum cfg_qk_mask { QK_MASK_NONE, QK_MASK_L0_HF16 };
/* q_tau's map to the q multiplier m (supkit-train(1), THE ARMS) */
enum cfg_qk_param { QK_PARAM_EXP, QK_PARAM_STOP_EXP, QK_PARAM_LINEAR };
enum cfg_anchor { ANCHOR_SEPARATE, ANCHOR_SHARED };
enum cfg_malt_input { MALT_INPUT_GRAD, MALT_INPUT_MOMENTUM }; /* MALT's row/column statistics */
enum cfg_matrix_optim { MATRIX_OPTIM_MUON, MATRIX_OPTIM_ADAMW }; /* the block matrices' optimizer */
/* LeRoPE log-frequencies rope_tau: none, one set for every layer and head,
 * one per layer and head; the precision of the rotary tables */
enum cfg_rope_tau { ROPE_TAU_OFF, ROPE_TAU_SHARED, ROPE_TAU_HEAD };
enum cfg_rope_trig { ROPE_TRIG_BF16, ROPE_TRIG_FP32 };
/* How sub_gains reach the GEMMs: fused into the weights' input columns, or as
 * the activation x_hat * alpha (the ve gate reading unscaled x_hat; with
 * unfused_gate_copy the same arithmetic, its reference copying the gate's 32
 * channels; with gate_scaled the gate reads x_hat * alpha) */
enum cfg_sub_form { SUB_FORM_FUSED, SUB_FORM_UNFUSED, SUB_FORM_UNFUSED_GATE_COPY, SUB_FORM_GATE_SCALED };
/* Where each key was last set (not a key; never printed or hashed): lets
 * config_validate name the file and line of a conflicting switch. Filled by
 * the loaders; config_defaults clears it. */
#define CONFIG_KEYS_MAX 96
#define CONFIG_SOURCES_MAX 4
struct config_origin {
	char src[CONFIG_SOURCES_MAX][256]; /* file names seen, or "--set" */
	int nsrc;
	unsigned char key_src[CONFIG_KEYS_MAX]; /* 0: default; else src index + 1 */
	int key_line[CONFIG_KEYS_MAX];          /* line in that source (0 for --set) */
};

enum cfg_step0 {
	STEP0_NONE, STEP0_NOSTEP0, STEP0_MOM_ONLY_NODISP, STEP0_DISP_ONLY_NOMOM,
	STEP0_DISP_STEPCOUNT_NOMOM, STEP0_NOSTEP0_ALL
};

struct config {
	/* identity */
	char arm[64];              /* arm = 00_dense_native */
	uint64_t seed;             /* seed = 42 */

	/* model */
	int depth;                 /* depth = 8 (L) */
	int model_dim;             /* model_dim = 0: d = ceil(64 L / 128) * 128 */
	int head_dim;              /* head_dim = 128 */
	int vocab_size;            /* vocab_size = 8192 (V) */
	int seq_len;               /* seq_len = 2048 (T) */
	char window_pattern[32];   /* window_pattern = SSSL */
	int ve_gate_channels;      /* ve_gate_channels = 32 */
	double norm_eps;           /* norm_eps = 1.1920928955078125e-07 (2^-23) */
	double softcap;            /* softcap = 15 */
	enum cfg_logits logits;    /* logits = bf16 | fp32 (fp32 runs; fp64 runs keep fp64) */
	double rope_base;          /* rope_base = 10000 */
	enum cfg_init init;        /* init = benchmark | dense (every zero-initialised
	                              tensor drawn; conflicts with init_from) */
	char init_from[512];       /* init_from = (empty) | FILE.safetensors */

	/* batch and schedule */
	int batch_rows;            /* batch_rows = 64 (B) */
	int grad_accum;            /* grad_accum = 4 (K) */
	int steps;                 /* steps = 953 (S) */
	int warmup_steps;          /* warmup_steps = 11 (not timed; schedule offset) */
	double warmdown_ratio;     /* warmdown_ratio = 0.5 */
	double max_loss;           /* max_loss = 100 (fast-fail) */

	/* optimizer */
	double lr_lm_head;         /* lr_lm_head = 0.004 (times k = (d/768)^-0.5) */
	double lr_embed;           /* lr_embed = 0.6 (times k) */
	double lr_resid;           /* lr_resid = 0.005 */
	double lr_scalar;          /* lr_scalar = 0.5 */
	double lr_matrix;          /* lr_matrix = 0.04 */
	double lr_qtau;            /* lr_qtau = 0.02 */
	double sub_lr;             /* sub_lr = 0.02 (sub_gains) */
	double muon_wd;            /* muon_wd = 0.2 */
	double muon_beta2;         /* muon_beta2 = 0.95 */
	double momentum_start;     /* momentum_start = 0.85 */
	double momentum_end;       /* momentum_end = 0.95 */
	int momentum_warmup;       /* momentum_warmup = 300 */
	double lr_scale;           /* lr_scale = 1 */
	double muon_wd_scale;      /* muon_wd_scale = 1 */

	/* arms */
	int oe;                    /* oe = 0 | 1 */
	int64_t oe_m;              /* oe_m = 150855 */
	int oe_n;                  /* oe_n = 3 (largest n-gram) */
	int oe_k;                  /* oe_k = 2 (tables per n) */
	double oe_lr;              /* oe_lr = 0.6 (times k) */
	enum cfg_muoneq muoneq;    /* muoneq = off | bieq | r | rc */
	double bieq_tau;           /* bieq_tau = 25 (0 = undamped) */
	int bieq_passes;           /* bieq_passes = 2 (row-then-column passes) */
	enum cfg_bieq_sides bieq_sides; /* bieq_sides = both | rows (rows: no column step) */
	enum cfg_equil_scope equil_scope; /* equil_scope = all | square (the equilibrator on
	                              square matrices only) */
	int cooldown;              /* cooldown = 0 | 1 */
	enum cfg_polar polar;      /* polar = bf16 | fp32 */
	enum cfg_polar_arith polar_arith; /* polar_arith = compiled | eager (bf16 polar of
	                              fp32 runs: torch.compile on CUDA, or eager PyTorch) */
	enum cfg_polar_norm polar_norm; /* polar_norm = polar | fp32 | aol (the scaling
	                              before the polar iterations: Frobenius in the
	                              polar dtype or in fp32, or Turbo-Muon's AOL) */
	int polar_steps;           /* polar_steps = 5 (Polar Express iterations) */
	enum cfg_post_polar post_polar; /* post_polar = polar | fp32 (NorMuon and the
	                              update in the polar dtype or fp32) */
	int normuon;               /* normuon = 1 | 0 (post-polar NorMuon) */
	int zeta;                  /* zeta = 0 | 1 (Zeta's entrywise second-moment
	                              whitening of the momentum before the polar step) */
	int malt;                  /* malt = 0 | 1 (MALT: two-sided -1/8-power
	                              preconditioning, map-back, Frobenius grafting) */
	double malt_beta;          /* malt_beta = 0.95 (row/column EMA rate; 0: this
	                              step's statistics, no EMA state) */
	double malt_eps;           /* malt_eps = 1e-8 (inside the -1/8 power) */
	enum cfg_malt_input malt_input; /* malt_input = grad | momentum (the tensor MALT's
	                              row and column statistics are taken from: the raw
	                              gradient or the Nesterov output the polar step takes) */
	enum cfg_matrix_optim matrix_optim; /* matrix_optim = muon | adamw (the block
	                              matrices' optimizer: Muon, or AdamW at lr_matrix with
	                              betas (0.8, 0.95), eps 1e-10, no weight decay) */
	int muon2f;                /* muon2f = 0 | 1 (Muon2-F: factored one-sided
	                              second-moment EMA of the momentum before the polar step) */
	int normpre_g;             /* normpre_g = 0 | 1 (NormPre-G: relaxed weight-tangent
	                              projection, alternating one-sided marginal normalisation) */
	int normpre_tangent;       /* normpre_tangent = 1 | 0 (NormPre-G's tangent term) */
	int neumann;               /* neumann = 0 | 1 */
	double neumann_tau;        /* neumann_tau = 80 */
	enum cfg_neumann_site neumann_site; /* neumann_site = direction | gradient */
	int table_neumann;         /* table_neumann = 0 | 1 (needs oe) */
	enum cfg_embed_state embed_state;   /* embed_state = bf16 | fp32 */
	enum cfg_wd_schedule muon_wd_schedule; /* muon_wd_schedule = linear | cosine */
	enum cfg_qk_scale qk_scale;/* qk_scale = none | pair | untied | head */
	enum cfg_qk_mask qk_mask;  /* qk_mask = none | l0_hf16 (needs qk_scale) */
	enum cfg_qk_param qk_param;/* qk_param = exp | stop_exp | linear (needs qk_scale) */
	int sub_gains;             /* sub_gains = 0 | 1 (pre-sublayer channel gains) */
	enum cfg_sub_form sub_form;/* sub_form = fused | unfused | unfused_gate_copy | gate_scaled */
	int wte_lambdas;           /* wte_lambdas = 0 | 1 (decoupled routing) */
	int out_lambdas;           /* out_lambdas = 0 | 1 (needs wte_lambdas) */
	enum cfg_anchor anchor;    /* anchor = separate | shared */
	double shared_eps;         /* shared_eps = 1e-6 */
	enum cfg_step0 step0;      /* step0 = none | nostep0 | mom_only_nodisp | disp_only_nomom
	                              | disp_stepcount_nomom | nostep0_all */
	enum cfg_rope_tau rope_tau;/* rope_tau = off | shared | head (learned RoPE log-frequencies) */
	enum cfg_rope_trig rope_trig; /* rope_trig = bf16 | fp32 (fp32 runs' cos/sin tables) */
	double rope_lr;            /* rope_lr = 0.02 (rope_tau's AdamW lr) */

	/* data and evaluation */
	char data_dir[512];        /* data_dir = (empty) | folder with shards + tokenizer */
	int64_t eval_tokens;       /* eval_tokens = 20971520 (validation targets) */
	int64_t heldout_tokens;    /* heldout_tokens = 20971520 */
	int loader_buffer;         /* loader_buffer = 1000 (documents) */

	/* run */
	enum cfg_backend backend;  /* backend = auto | cpu | cuda */
	enum cfg_dtype dtype;      /* dtype = fp32 | fp64 (CPU backend) */
	enum cfg_precision precision; /* precision = auto | autocast | fp32: the
	                              GEMMs' arithmetic (auto: the backend's own,
	                              autocast on cuda, fp32 on cpu) */
	int threads;               /* threads = 0 (0 = all cores) */
	int pass_rows;             /* pass_rows = 0: rows of a micro-batch per
	                              forward/backward pass (activation memory);
	                              0 = the whole micro-batch */
	int checkpoint_every;      /* checkpoint_every = 0 (0 = only at the end) */
	int eval_every;            /* eval_every = 0 (0 = only at the end) */
	int device;                /* not a key (a property of the machine, not of
	                              the run's numbers): the GPU's index among
	                              those visible, from supkit train --device N;
	                              0 by default */

	struct config_origin origin; /* provenance only (see above) */
};

/* Defaults (the benchmark baseline). */
void config_defaults(struct config *c);
/* Parse a config file ("-": standard input) over c (start from defaults
 * first). 0 or -1 with "FILE:LINE: message" in e. */
int config_load_file(struct config *c, const char *path, struct err *e);
/* Parse text (name used in messages) over c. */
int config_load_text(struct config *c, const char *text, size_t len, const char *name, struct err *e);
/* An arm's switches over c: every key whose value in the config file
 * arm_path differs from its value in the config file base_path (each read
 * over the defaults; base_path NULL: the defaults themselves) takes
 * arm_path's value; messages name arm_path and the key's line there. 0 or
 * -1 with e set. */
int config_apply_switches(struct config *c, const char *base_path, const char *arm_path, struct err *e);
/* The file syntax without the key table, for files that mix config keys
 * with keys of their own (supkit sweep's sweep file): fn gets each
 * `key = value` line's key and value (trimmed, comments removed), the name
 * and the line number, and returns 0 or -1 with e set (its message names
 * "NAME:LINE" itself). A line without '=' or without a key is an error
 * "NAME:LINE: ...". Stops at the first error. */
typedef int (*config_line_fn)(const char *key, const char *value, const char *name, int line, void *ctx,
			      struct err *e);
int config_scan_text(const char *text, size_t len, const char *name, config_line_fn fn, void *ctx,
		     struct err *e);
/* Set one key from value text, as a line of a file would: src and line (0:
 * none) are recorded as where it was set and open any message
 * ("SRC:LINE: steps: 'x' is not an integer"); an unknown key is an error. */
int config_set_at(struct config *c, const char *key, const char *value, const char *src, int line,
		  struct err *e);
/* 1 when name is a config key. */
int config_has_key(const char *name);
/* Apply one "key=value" override (from --set). */
int config_set(struct config *c, const char *kv, struct err *e);
/* Check cross-key constraints (e.g. qk_mask needs qk_scale, out_lambdas needs
 * wte_lambdas, table_neumann needs oe, T divisible into windows); names the
 * offending key. Called by load/set users after all overrides. */
int config_validate(const struct config *c, struct err *e);
/* Canonical text, every key in table order; caller frees. */
char *config_print(const struct config *c);
/* SHA-256 hex of config_print (hex holds 65 bytes). */
void config_sha256(const struct config *c, char *hex);

/* Derived sizes (docs/model.md). */
int config_model_dim(const struct config *c);           /* d */
int config_heads(const struct config *c);               /* H = d / head_dim */
/* Window of layer i in tokens (pattern repeated, last layer always T). */
int config_window(const struct config *c, int layer);
/* 1 when layer i carries value embeddings: i % 2 == (L-1) % 2. */
int config_is_ve_layer(const struct config *c, int layer);
/* k = (d/768)^-0.5, the AdamW lr scale of lm_head, embeddings and OE. */
double config_lr_k(const struct config *c);

/* OE geometry: tables J = (oe_n - 1) * oe_k (4 for n=3, k=2);
 * table j has m + 2j rows of width d/4. 0 tables when oe = 0. */
int config_oe_tables(const struct config *c);
int64_t config_oe_rows(const struct config *c, int j);

/* The key table (for documentation tests and tools): count and i-th name. */
int config_key_count(void);
const char *config_key_name(int i);

/* Named arms (configs/arms/README): each is a list of "key = value" lines
 * applied over a config (the arm key included). config_arm_apply leaves depth and every key
 * the arm does not name untouched; -1 for an unknown name. */
int config_arm_count(void);
const char *config_arm_name(int i);          /* arm 0 is the baseline, 00_dense_native */
const char *config_arm_overrides(int i);     /* "key = value\n..." */
const char *config_arm_summary(int i);       /* one line: what the arm is */
int config_arm_find(const char *name);       /* index, or -1 */
int config_arm_apply(struct config *c, const char *name, struct err *e);

#endif
