/* model.h: the benchmark GPT (docs/model.md) and its model-side arms
 * (supkit-train(1): OE hashed n-gram tables, post-QK-norm scaling q_tau,
 * decoupled routing with wte_lambdas / out_lambdas), forward and backward
 * written once against trainer/backend.h.
 *
 * Ownership: the model owns its parameter table (struct param_table, made
 * from paramspec_build in paramspec order: one block of memory, pointers
 * carved out), the activations of the last forward, and its scratch. The
 * optimizer updates p->w (fp32 runs) or p->w64 (fp64 runs) in place and
 * reads p->g / p->g64 and p->counts (OE tables: bf16 wb / gb in fp32 runs,
 * the compact gv64 in fp64 runs; param.h); it keeps its own state.
 *
 * Precision (cfg->dtype): fp32 runs compute in fp32, with bf16-stored
 * parameters (wte, value_embeds, OE tables) rounded to bf16 when read and
 * the RoPE cos/sin rounded to bf16; gradients go to p->g (fp32; OE tables:
 * p->gb, bf16, each backward's row sums rounded as PyTorch does). fp64 runs
 * compute everything in fp64 from p->w64 into p->g64 (no bf16 rounding but
 * the initial values); p->w and p->g are allocated too (w mirrors w64 after
 * model_sync_f32).
 *
 * Tokens are int32: inputs in [0, V), targets in [0, V) or < 0 (ignored).
 * Errors (bad config, bad token id, bad checkpoint) return -1 with a message
 * in e (code EXIT_USAGE for bad input, EXIT_SYS for I/O).
 */
#ifndef SUPKIT_MODEL_H
#define SUPKIT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"
#include "trainer/backend.h"
#include "trainer/config.h"
#include "trainer/param.h"
#include "trainer/paramspec.h"

struct model;

/* Build the model for cfg (validated by the caller), allocate the parameter
 * table and initialise it: from cfg->init_from (a checkpoint, read as
 * trainer/checkpoint.h says: fp64 runs keep F64 tensors exactly) when set, else
 * from cfg->seed with lib/rng in paramspec order (normal a*N(0,1), uniform
 * a*(2u-1); bf16-stored parameters rounded to bf16). init = dense also draws
 * the zero-initialised tensors (both c_proj, ve_gate, and the arms' OE
 * tables, q_tau, wte_lambdas, out_lambdas) from U(-s, s), s = sqrt(3/cols)
 * (s = 0.1 for q_tau and the lambdas, bf16-rounded for OE tables), masked
 * q_tau entries staying 0: for tests, so that every gradient is non-zero.
 * The backend is backend_select(cfg) (trainer/backend_select.h: cpu, or
 * cuda in GPU=1 builds); parameters, activations, RoPE tables and a copy of
 * each batch live in backend_alloc memory, so the optimizer and the host
 * loops of model.c read and write them directly. */
int model_create(const struct config *cfg, struct model **out, struct err *e);
void model_free(struct model *m);

struct param_table *model_params(struct model *m);
const struct config *model_config(const struct model *m);
const struct param_spec *model_spec(const struct model *m, size_t *n);
const struct backend_ops *model_backend(const struct model *m);
/* The dtype the MLP's activations (h, relu^2, their gradients) are stored
 * in: the run's, or TD_BF16 where the backend offers it (backend.h mlp_bf16). */
enum tdtype model_mlp_dtype(const struct model *m);
/* The dtype the attention's q, k, v and output y are stored in: the run's,
 * or TD_BF16 where the backend offers it (backend.h attn_bf16). */
enum tdtype model_attn_dtype(const struct model *m);
/* The dtype each layer's normalised attention and MLP inputs are stored
 * in: the run's, or TD_BF16 where the backend offers it (backend.h
 * norm_bf16). */
enum tdtype model_norm_dtype(const struct model *m);
/* The dtype the lm_head's output (the logits) is rounded to before the
 * fp32 softcap: TD_BF16 with logits = bf16 in fp32 runs (the benchmark's
 * autocast; the gradient back through that cast is rounded to bf16 too),
 * else the run's (fp64 runs keep exact logits whatever logits says). */
enum tdtype model_logits_dtype(const struct model *m);
size_t model_param_count(const struct model *m);     /* total numel */

/* One micro-step: forward on inputs (B*T), cross-entropy against targets,
 * backward of loss_scale * mean loss, gradients ADDED into p->g (or g64)
 * and OE visit counts ADDED into p->counts. *loss = mean loss over targets
 * >= 0 (unscaled). T <= cfg->seq_len. With cfg->pass_rows in [1, B) the
 * rows run in passes of pass_rows (activations for that many rows only),
 * each pass's gradient of loss_scale * (its loss sum / the micro-batch's
 * target count) added: the same gradient up to summation order. The
 * evaluation forward runs in the same passes. */
int model_forward_backward(struct model *m, const int32_t *inputs, const int32_t *targets,
			   int B, int T, double loss_scale, double *loss, struct err *e);
/* Forward only (evaluation): per-token losses in nats into losses (B*T,
 * NULL to skip; 0 where target < 0) and their mean into *loss. */
int model_forward_loss(struct model *m, const int32_t *inputs, const int32_t *targets,
		       int B, int T, float *losses, double *loss, struct err *e);
/* Zero every gradient (g, g64; OE tables hand back their gradient slots)
 * and OE count. */
void model_zero_grad(struct model *m);

/* fp64 runs: the fp64 gradient row r of p (cols entries) to write into: a
 * dense g64 row, or a compact OE table's slot, given one (zeroed) when
 * row r has none yet, as a backward that visits it does (its visit count
 * untouched). NULL for a parameter without an fp64 gradient. For summing
 * gradients across processes (trainer/dist.h). */
double *model_grad_row64_take(struct model *m, struct param *p, size_t r);

/* Write the parameters to a safetensors checkpoint (trainer/checkpoint.h:
 * fp64 runs write their exact values as F64, and first round w64 into w);
 * meta as for checkpoint_save. */
int model_save(struct model *m, const char *path, const char *const *meta, struct err *e);

/* fp64 runs: copy w64 into w (rounded to fp32), or w into w64. No-op in fp32. */
void model_sync_f32(struct model *m);
void model_sync_from_f32(struct model *m);

/* Bytes held now (parameters, gradients, activations, scratch) and the
 * largest figure seen. */
size_t model_bytes(const struct model *m);
size_t model_peak_bytes(const struct model *m);

/* Audit hooks, valid after a forward until the next one (run dtype: float
 * or double, N = B*T rows of C): the anchors x0 and x0_wte (NULL without
 * wte_lambdas) and the final pre-norm state xf (out_lambdas included); NULL
 * before the first forward and after one that ran in several passes
 * (pass_rows < B). */
/* The bytes model_bytes would count once micro-steps of B x T rows
 * (cfg->pass_rows and grad_accum applied) have run, without allocating: the
 * OE gradient rows at their bound, min(rows, B*T*grad_accum) per table. */
size_t model_bytes_for(const struct model *m, int B, int T);
/* The rows a forward/backward pass of a B x T micro-batch runs at once:
 * cfg->pass_rows when set; with pass_rows = 0, B where the backend sets no
 * activation budget (the CPU) and else the most rows (a divisor of B) whose
 * activations fit it (the CUDA backend's: 15 GiB). */
int model_pass_rows(const struct model *m, int B, int T);
/* The GPU rule (15 GiB) alone, whatever the model's backend (1 when no pass
 * fits). */
int model_gpu_pass_rows(const struct model *m, int B, int T);

const void *model_last_x0(const struct model *m);
const void *model_last_x0_wte(const struct model *m);
const void *model_last_xf(const struct model *m);

#endif
