/* torch_pt.h: one int32 vector out of a torch.save file (the token_bytes.pt
 * that autoresearch's prepare.py writes: torch.save of a 1-D torch.int32
 * tensor), read as data.
 *
 * The file is a zip (torch's format since 1.6): one top folder P holding
 * P/data.pkl (the pickle of the tensor), P/data/KEY (the raw bytes of each
 * storage), P/byteorder ("little" or "big"; absent: little), and records
 * this reader does not need (P/version, P/.format_version,
 * P/.storage_alignment, P/.data/...). data.pkl, read by data/pickle.c under
 * pt_policy, must be exactly
 *   torch._utils._rebuild_tensor_v2(
 *       persistent id ('storage', torch.IntStorage, KEY, LOCATION, NUMEL),
 *       OFFSET, (N,), (1,), requires_grad, collections.OrderedDict())
 * i.e. REDUCE of those two callables (recorded, never called) and a
 * BINPERSID; the storage entry must hold NUMEL x 4 bytes and OFFSET + N <=
 * NUMEL. Anything else is refused with one line naming the file (and the
 * entry or the pickle's byte offset): other classes, dtypes, shapes,
 * strides, tensor metadata, entries outside P, more than PT_MAX_ENTRIES
 * entries, more than PT_MAX_BYTES of entry data, a zip libarchive cannot
 * read.
 *
 * Leaves out: other dtypes, more than one tensor, the legacy (pre-1.6)
 * tar and raw formats, torch.jit archives. Reference: pytorch
 * torch/serialization.py (_save, _load), torch/_tensor.py
 * (_reduce_ex_internal), caffe2/serialize/inline_container.h.
 */
#ifndef SUPKIT_DATA_TORCH_PT_H
#define SUPKIT_DATA_TORCH_PT_H

#include <stddef.h>
#include <stdint.h>
#include "data/pickle.h"
#include "lib/err.h"

#define PT_MAX_FILE (64u << 20)    /* the .pt file */
#define PT_MAX_BYTES (64u << 20)   /* entry data read, in all */
#define PT_MAX_ENTRIES 64

extern const struct pk_policy pt_policy;

/* The tensor of data[0..len) (name for messages): *out (caller frees) gets
 * its *n values. EXIT_USAGE for refused input. */
int pt_read_int32_mem(const void *data, size_t len, const char *name, int32_t **out, size_t *n,
		      struct err *e);
/* The same from a file (at most PT_MAX_FILE bytes; EXIT_SYS when it cannot
 * be read). */
int pt_read_int32(const char *path, int32_t **out, size_t *n, struct err *e);

#endif
