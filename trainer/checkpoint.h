/* checkpoint.h: the parameter table as a safetensors file (SPEC section 9):
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
 * bit for bit; other dtypes are read as in fp32 runs and widened.
 */
#ifndef SUPKIT_CHECKPOINT_H
#define SUPKIT_CHECKPOINT_H

#include "lib/err.h"
#include "trainer/param.h"

/* Write table t to path; meta (NULL-terminated key, value, key, value...,
 * may be NULL) goes into __metadata__ next to "format": "pt". */
int checkpoint_save(const struct param_table *t, const char *path, const char *const *meta,
		    struct err *e);
/* Fill the values of table t (p->w or p->wb, and p->w64 where set) from
 * path. On error t may be partly loaded (the caller discards it). */
int checkpoint_load(struct param_table *t, const char *path, struct err *e);

#endif
