/* checkpoint.h: the parameter table as a safetensors file (supkit-formats(5)):
 * PyTorch state_dict names from the parameter table (paramspec), shapes as
 * in the table. Written atomically (lib/safetensors.c). Tables of fp32 runs
 * (no w64): bf16-stored parameters as BF16 (rounded to nearest even), every
 * other one as F32. Tables of fp64 runs (p->w64 set): every parameter as
 * F64, its exact value (fp64 runs keep no bf16 or fp32 copy of their
 * state).
 *
 * Reading is strict: every parameter of the table must be in the file with
 * the same shape, and the file may hold no other tensor (a checkpoint of
 * another arm or size is refused, naming the file and the tensor). Any
 * float dtype is accepted. fp32 runs convert each to fp32 and round
 * bf16-stored parameters to bf16. fp64 runs keep an F64 tensor exactly
 * (w64; w its fp32 rounding), so an fp64 run's own checkpoint reloads
 * bit for bit; other dtypes are read as in fp32 runs and widened. A file
 * whose every name carries torch.compile's "_orig_mod." prefix
 * (ST_COMPILE_PREFIX, a compiled model's state_dict) is read as if it had
 * none; one that mixes prefixed and plain names is refused
 * (st_compile_prefix).
 */
#ifndef SUPKIT_CHECKPOINT_H
#define SUPKIT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "lib/err.h"
#include "lib/sha256.h"
#include "trainer/param.h"

/* Write table t to path; meta (NULL-terminated key, value, key, value...,
 * may be NULL) goes into __metadata__ next to "format": "pt". */
int checkpoint_save(const struct param_table *t, const char *path, const char *const *meta,
		    struct err *e);
/* Fill the values of table t (p->w or p->wb, and p->w64 where set) from
 * path. On error t may be partly loaded (the caller discards it). */
int checkpoint_load(struct param_table *t, const char *path, struct err *e);
/* The same on the file's len bytes at data (name in messages). */
int checkpoint_load_mem(struct param_table *t, const void *data, size_t len, const char *name,
			struct err *e);

/* ---- the resume state: a run folder's checkpoint/state.json ----
 *
 * A resume checkpoint is a folder of CKPT_NFILES files written by the
 * trainer (params.safetensors, optim.bin, loader.bin) and state.json, which
 * records where the run stands and each file's SHA-256:
 *   {"blas_threads": N, "config_sha256": HEX, "curve": [...],
 *    "files": {"loader.bin": HEX, "optim.bin": HEX, "params.safetensors": HEX},
 *    "step": S, "training_loop_seconds": X, "training_seconds": Y}
 * Reading checks every field's type and range; each refusal is one line
 * naming the file and the field. A state.json without "files" (one written
 * before the hashes were recorded) is refused: it cannot be verified. */
#define CKPT_NFILES 3
extern const char *const ckpt_files[CKPT_NFILES];   /* file names, "files" keys */
#define CKPT_BLAS_THREADS_MAX 4096
#define CKPT_WORLD_SIZE_MAX (1 << 20)

struct ckpt_state {
	int64_t step;                          /* steps completed, in [0, steps) */
	double training_seconds;               /* >= 0, finite */
	double training_loop_seconds;          /* >= training_seconds, finite */
	char config_sha256[SHA256_HEX_LEN + 1];
	int blas_threads;                      /* in [1, CKPT_BLAS_THREADS_MAX] */
	int world_size;                        /* MPI ranks that trained it, in [1,
	                                          CKPT_WORLD_SIZE_MAX]; state.json
	                                          records it when above 1 */
	char sha256[CKPT_NFILES][SHA256_HEX_LEN + 1];   /* of ckpt_files[i] */
	cJSON *curve;   /* array of step objects: "step" = index, finite "loss";
	                   ckpt_state_write only reads it; ckpt_state_read makes
	                   it (freed by ckpt_state_release) */
};

/* Fill st->sha256 from the files in folder dir. EXIT_SYS when one cannot
 * be read. */
int ckpt_state_hash(const char *dir, struct ckpt_state *st, struct err *e);
/* Write st as state.json at path (atomic). */
int ckpt_state_write(const char *path, const struct ckpt_state *st, struct err *e);
/* The text ckpt_state_write writes (caller frees). */
char *ckpt_state_text(const struct ckpt_state *st);
/* Read and check state.json at path for a run of `steps` steps: step an
 * integer in [0, steps) with a curve of exactly step entries, seconds
 * finite and ordered, config_sha256 and every file's SHA-256 64 hex digits,
 * blas_threads an integer in [1, CKPT_BLAS_THREADS_MAX], world_size (when
 * present; 1 when not) an integer in [1, CKPT_WORLD_SIZE_MAX], no other key. -1
 * with e (EXIT_USAGE) naming path and the field; st then holds nothing to
 * release. */
int ckpt_state_read(const char *path, int64_t steps, struct ckpt_state *st, struct err *e);
/* The same on the file's len bytes at text (path in messages). */
int ckpt_state_read_mem(const char *text, size_t len, const char *path, int64_t steps, struct ckpt_state *st,
			struct err *e);
/* Check each file of folder dir against st->sha256: -1 with e (EXIT_USAGE)
 * naming the first missing or changed file. */
int ckpt_state_verify(const char *dir, const struct ckpt_state *st, struct err *e);
void ckpt_state_release(struct ckpt_state *st);

#endif
