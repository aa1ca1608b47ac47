/* eval.h: bits per byte of a model on token shards: the
 * one evaluation the trainer runs (at eval_every steps and at the end of a
 * run, train.c) and `supkit eval` runs on a checkpoint (cmd_eval.c).
 *
 * The evaluated stream is the loader's (data/loader.h) with seed 0 over the
 * validation shards in rows of B x T, as the original evaluates: the
 * validation segment is its first eval_tokens targets, the held-out
 * segment the heldout_tokens that follow. BPB = the cross-entropy (nats)
 * summed over the segment's targets whose token_bytes entry is > 0,
 * divided by ln 2 times the sum of those entries. As in the original, the
 * stream wraps around shards that are too short (the loader's epochs).
 *
 * A checkpoint and its config (eval_resolve): a run folder (its
 * model.safetensors and config.cfg), or a safetensors file with the
 * config.cfg beside it (a run folder's model.safetensors named directly),
 * or a file with a config given (--config), or a PyTorch state_dict saved
 * as safetensors with none: then the keys its tensors' shapes show are
 * inferred (eval_infer_config) and every other key keeps its default (the
 * benchmark's). torch.compile's "_orig_mod." prefix is read as the plain
 * names (trainer/checkpoint.h).
 *
 * Exactness: on the checkpoint a run wrote (model.safetensors of an fp32
 * run: every value exact) with the run's config on the same backend with
 * the same threads, eval_checkpoint gives the run's val_bpb and
 * heldout_bpb bit for bit: the model, the loader and eval_bpb are the
 * trainer's. An fp64 run's model.safetensors holds its weights rounded to
 * fp32, so its figures agree to that rounding.
 *
 * Leaves out: distributed evaluation, other metrics (accuracy, per-document
 * figures), evaluating several checkpoints in one model.
 */
#ifndef SUPKIT_EVAL_H
#define SUPKIT_EVAL_H

#include <stdint.h>
#include "lib/err.h"
#include "lib/progress.h"
#include "trainer/config.h"

struct model;

struct eval_result {
	double bpb;              /* nats / (ln 2 * bytes) */
	double loss;             /* mean cross-entropy (nats) over every target evaluated */
	double nats;             /* cross-entropy summed over the text targets */
	double bytes;            /* their token_bytes summed */
	int64_t targets;         /* targets evaluated (the segment's length) */
	int64_t text_targets;    /* of them, those with token_bytes > 0 */
	uint64_t epochs;         /* the loader's largest epoch reached (1: no wrap) */
};

/* Evaluate m on the `count` targets that follow the first `skip` ones of
 * the stream of shards (above), filling *r. pr (may be NULL) gets a line
 * per batch as the work goes (units: targets of the stream, skip
 * included; the caller starts and ends it). 0, or -1 with e: EXIT_USAGE when there are no shards, a shard is
 * refused, or the targets hold no text bytes (token_bytes all 0). */
int eval_bpb(struct model *m, const char *const *shards, int n_shards, int B, int T,
	     const uint32_t *token_bytes, uint32_t n_token_bytes, int64_t skip, int64_t count,
	     struct eval_result *r, struct progress *pr, struct err *e);

/* Where eval_resolve found the config. */
enum eval_config_from {
	EVAL_CONFIG_GIVEN,       /* the config argument */
	EVAL_CONFIG_RUN,         /* the run folder's config.cfg */
	EVAL_CONFIG_NONE         /* none: eval_infer_config's to do */
};

/* What `target` names: a folder is a run folder (RUNDIR/model.safetensors
 * and RUNDIR/config.cfg); a file is the checkpoint, with the config.cfg of
 * its folder when there is one. config (may be NULL) is used instead of a
 * run folder's. *ckpt and *cfg_path (NULL with EVAL_CONFIG_NONE) are fresh
 * strings. With a run folder's config.cfg and a checkpoint whose
 * __metadata__ records config_sha256 (supkit train writes it), the file's
 * SHA-256 must be that one. 0, or -1 with e (EXIT_USAGE). */
int eval_resolve(const char *target, const char *config, char **ckpt, char **cfg_path,
		 enum eval_config_from *from, struct err *e);

/* The model keys the tensor shapes of the checkpoint at path show, set in
 * cfg where cfg does not set them already (cfg->origin: a config file or
 * --set): vocab_size and model_dim (transformer.wte.weight), depth
 * (resid_lambdas), head_dim and ve_gate_channels (a ve_gate: H x
 * channels), qk_scale (q_tau's shape), oe and oe_m (oe.0.weight),
 * wte_lambdas, out_lambdas, sub_gains, rope_tau (rope_tau's shape: D/2 shared,
 * L x H x D/2 head). qk_param and rope_trig are in no shape: cfg's value is used
 * (exp and bf16 by default; a linear q_tau needs qk_param = linear, fp32 RoPE
 * tables rope_trig = fp32). What no shape
 * shows but the tensors need is
 * required from cfg: oe_n and oe_k with OE tables (4 tables: n = 3, k = 2
 * or n = 2, k = 4 or n = 5, k = 1), anchor with wte_lambdas. Every other
 * key keeps its value. 0, or -1 with e (EXIT_USAGE) naming the file and
 * the tensor or the key to set. */
int eval_infer_config(const char *path, struct config *cfg, struct err *e);

struct eval_opts {
	const char *checkpoint;  /* the safetensors file */
	const char *data_dir;    /* val_*.bin; NULL: cfg->data_dir */
	const char *token_bytes; /* NULL: DATA_DIR/token_bytes.bin */
	int quiet;               /* no progress */
};

struct eval_report {
	char data_dir[512];
	int shards;              /* val_*.bin files */
	int have_val, have_heldout;   /* eval_tokens, heldout_tokens > 0 */
	struct eval_result val, heldout;
	uint64_t passes;         /* passes over the validation shards (1: none repeated) */
	char backend[32];        /* the model's backend's name */
};

/* Evaluate the checkpoint o->checkpoint with config cfg (its init_from
 * set to the checkpoint, then validated here) as the trainer does at the end of a run: the validation and held-out
 * segments of cfg->eval_tokens and cfg->heldout_tokens targets of the
 * validation shards (DATA_DIR/val_*.bin, their vocabulary cfg's) in rows of
 * batch_rows x seq_len, token_bytes with vocab_size entries and 0 for the
 * shards' BOS, cfg's backend and threads. 0, or -1 with e: EXIT_USAGE for
 * bad input (config, shards, token_bytes, checkpoint), EXIT_SYS for I/O
 * and a backend not built in. */
int eval_checkpoint(struct config *cfg, const struct eval_opts *o, struct eval_report *r, struct err *e);

#endif
