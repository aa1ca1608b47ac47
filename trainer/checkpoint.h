/* checkpoint.h: the parameter table as a safetensors file (SPEC section 9):
 * PyTorch state_dict names from the parameter table (paramspec), bf16-stored
 * parameters as BF16 (rounded to nearest even), every other one as F32,
 * shapes as in the table. Written atomically (lib/safetensors.c).
 *
 * Reading is strict: every parameter of the table must be in the file with
 * the same shape, and the file may hold no other tensor (a checkpoint of
 * another arm or size is refused, naming the file and the tensor). Any
 * float dtype is accepted and converted to fp32; bf16-stored parameters are
 * rounded to bf16 on load.
 *
 * fp64 runs: these functions read and write p->w only; the model's
 * model_save / model_create (init_from) keep w64 in step.
 */
#ifndef SUPKIT_CHECKPOINT_H
#define SUPKIT_CHECKPOINT_H

#include "lib/err.h"
#include "trainer/param.h"

/* Write table t to path; meta (NULL-terminated key, value, key, value...,
 * may be NULL) goes into __metadata__ next to "format": "pt". */
int checkpoint_save(const struct param_table *t, const char *path, const char *const *meta,
		    struct err *e);
/* Fill the values p->w of table t from path. On error t may be partly
 * loaded (the caller discards it). */
int checkpoint_load(struct param_table *t, const char *path, struct err *e);

#endif
