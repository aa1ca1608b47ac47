/* safetensors.h: read and write safetensors files (checkpoints, supkit-formats(5)).
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON header
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"k": "v"}}, then the data. The reader validates: N within
 * a limit (SAFETENSORS_MAX_HEADER) and within the file, the header is a JSON
 * object, every dtype known (F64, F32, BF16, F16, I64, I32, U16, U8), shape
 * dimensions non-negative, shape x dtype size == end - begin, offsets in
 * range, spans not overlapping, at most SAFETENSORS_MAX_TENSORS tensors, and
 * every name and __metadata__ string valid UTF-8 without NUL. Every error
 * names the file and the tensor (or the string's byte offset in the header).
 * A file that is not safetensors but a PyTorch pickle (torch.save's zip
 * archive or its older bare pickle) or another zip archive is named as such
 * instead of getting a header-length error.
 *
 * The writer sorts tensors by name, writes offsets contiguous in that order,
 * pads the header with spaces to a multiple of 8 (as the reference does), and
 * writes atomically (temp + fsync + rename).
 */
#ifndef SUPKIT_SAFETENSORS_H
#define SUPKIT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

#define SAFETENSORS_MAX_HEADER (100u << 20)  /* 100 MiB, as the reference */
#define SAFETENSORS_MAX_TENSORS 65536
#define SAFETENSORS_MAX_DIMS 8

enum st_dtype { ST_F64, ST_F32, ST_BF16, ST_F16, ST_I64, ST_I32, ST_U16, ST_U8, ST_NDTYPES };

struct st_tensor {
	char *name;                 /* owned */
	enum st_dtype dtype;
	int ndim;
	int64_t shape[SAFETENSORS_MAX_DIMS];
	uint64_t begin, end;        /* byte offsets into the data section */
	const void *data;           /* into the file's data (reader) or the caller's (writer) */
};

struct st_file {
	struct st_tensor *t;        /* n tensors, in file (header) order */
	size_t n;
	char **meta_keys, **meta_vals;   /* __metadata__ string pairs */
	size_t n_meta;
	void *map;                  /* whole file (reader), owned */
	size_t map_len;
	uint64_t data_start;        /* 8 + header length */
};

const char *st_dtype_name(enum st_dtype d);          /* "F32" */
int st_dtype_from_name(const char *s, enum st_dtype *out);
size_t st_dtype_size(enum st_dtype d);
uint64_t st_numel(const struct st_tensor *t);

/* Open and validate a file; tensors' data point into the mapped file. */
int st_open(struct st_file *f, const char *path, struct err *e);
/* The same on an open file (fd stays open and the caller's; name is used in
 * messages): for callers that opened it themselves, safely. */
int st_open_fd(struct st_file *f, int fd, const char *name, struct err *e);
/* The same on bytes in memory (copied); name is used in messages. */
int st_open_mem(struct st_file *f, const void *buf, size_t len, const char *name, struct err *e);
void st_close(struct st_file *f);
/* The tensor with this name, or NULL. */
const struct st_tensor *st_find(const struct st_file *f, const char *name);
/* Copy a tensor's values into out (numel doubles / floats), converting from any
 * float dtype. Returns -1 for non-float dtypes. */
int st_to_f64(const struct st_tensor *t, double *out, struct err *e);
int st_to_f32(const struct st_tensor *t, float *out, struct err *e);

/* Writer: add tensors (name copied, data pointer kept until st_write), then write. */
struct st_writer {
	struct st_tensor *t;
	size_t n, cap;
	char **meta_keys, **meta_vals;
	size_t n_meta;
};
void st_writer_init(struct st_writer *w);
void st_writer_add(struct st_writer *w, const char *name, enum st_dtype dtype, int ndim,
		   const int64_t *shape, const void *data);
void st_writer_meta(struct st_writer *w, const char *key, const char *val);
int st_write(struct st_writer *w, const char *path, struct err *e);
void st_writer_release(struct st_writer *w);

/* torch.compile's wrapper module puts this before every state_dict name. */
#define ST_COMPILE_PREFIX "_orig_mod."

/* Whether f's tensor names carry ST_COMPILE_PREFIX: 1 when every name does
 * (and the file holds a tensor), 0 when none does, -1 with e (EXIT_USAGE,
 * naming the file, given as name, and two tensors) when some do and some
 * do not, the message saying so when removing the prefix would give a name
 * the file already holds. */
int st_compile_prefix(const struct st_file *f, const char *name, struct err *e);

/* Content digest (SHA-256 hex) over tensors in sorted-name order: for each,
 * name, NUL, dtype name, NUL, ndim and shape as little-endian int64, byte
 * length as little-endian uint64, then the bytes. Independent of header key
 * order and padding. When every name carries ST_COMPILE_PREFIX (a
 * torch.compile'd model's state_dict) the names enter without it, so such
 * a file has the digest of the same tensors saved unwrapped; a file that
 * mixes prefixed and plain names is digested with its names as they are.
 * hex holds 65 bytes. */
void st_digest(const struct st_file *f, char *hex);

#endif
