/* train.h: a training run (docs/model.md, docs/data.md): the loop that
 * drives the model (model.h), the optimizer (optim.h) and the data loader (loader.h),
 * evaluates BPB on the validation and held-out segments (eval.h), and
 * writes a run folder.
 *
 * Run folder (RUNDIR), every file written atomically:
 *   .lock               the lock a trainer holds for the whole run
 *                       (trainer/rundir.h): a second trainer is refused
 *   config.cfg          the resolved config, canonical form (config_print)
 *   checkpoint/         resume state, replaced as a whole every
 *                       checkpoint_every steps: params.safetensors (every
 *                       parameter's exact values: F32, plus F64 for fp64
 *                       runs; the step in __metadata__), optim.bin,
 *                       loader.bin, state.json (trainer/checkpoint.h:
 *                       the step, the files' SHA-256, ...)
 *   curve.jsonl         one JSON object a step: step, loss, lrm, momentum,
 *                       muon_wd, dt, tok_s (and val_bpb at eval steps)
 *   model.safetensors   final weights, PyTorch state_dict names
 *   optim.bin           final optimizer state
 *   result.json         written last: its presence means the run finished
 *
 * Resume: train_run with opts->resume continues from RUNDIR/checkpoint so
 * that the final weights are bit-identical to an uninterrupted run (the
 * model, optimizer and loader are deterministic, and the checkpoint keeps
 * every value exactly), also after kill -9 between checkpoints. The
 * checkpoint is verified first (each file's SHA-256, every field's range,
 * the files' agreement with the step).
 *
 * Over MPI (trainer/dist.h, opts->dist of several ranks, CPU backend only):
 * every rank reads the whole global batch, runs its share of the step's
 * rows and takes the same optimizer step on the gradients summed in rank
 * order; rank 0 alone writes the run folder and evaluates BPB (result.json
 * records world_size; state.json too when above 1), and a resume needs the
 * checkpoint's world size. A failure on any rank ends every rank, rank 0
 * reporting it ("rank N: ...").
 *
 * Order: every input (config, memory, shards, token_bytes, init_from) is
 * checked and the model, optimizer and loader made before RUNDIR is
 * touched; then the lock, then (--force) the replaced run's files go, and
 * temporaries a killed trainer left are removed (also when a run finishes).
 */
#ifndef SUPKIT_TRAIN_H
#define SUPKIT_TRAIN_H

#include <stdint.h>
#include "lib/err.h"
#include "trainer/config.h"
#include "trainer/dist.h"

#define TRAIN_STOP_NOW (-1)

struct train_opts {
	const char *run_dir;       /* output folder (created) */
	int resume;                /* continue run_dir from its checkpoint */
	int force;                 /* replace a finished run_dir */
	const char *token_bytes;   /* token_bytes file; NULL: data_dir/token_bytes.bin */
	int stop_after;            /* > 0: stop after this many steps of this
	                              invocation, leaving a checkpoint (as if
	                              interrupted); the run is not finished;
	                              TRAIN_STOP_NOW: before its first step (a
	                              checkpoint of the initial weights) */
	int quiet;                 /* no progress lines */
	const struct dist *dist;   /* the MPI ranks (dist.h); NULL: one process */
};

struct train_summary {
	int finished;              /* 1 when result.json was written */
	int steps_done;            /* steps completed in total */
	double val_bpb, heldout_bpb;
	double final_loss;
};

/* Run (or resume) training for cfg (validated here). 0 on success, -1 with
 * e set: EXIT_USAGE for bad config, data or checkpoint, EXIT_CHECK when the
 * loss is NaN or above max_loss (fast-fail), EXIT_SYS for I/O, a run folder
 * in use by another process, too little memory, or MPI failing. Over MPI
 * every rank returns the same status; rank 0's e is the one to print. */
int train_run(struct config *cfg, const struct train_opts *o, struct train_summary *s, struct err *e);

#endif
