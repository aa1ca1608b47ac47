/* shard.h: token shards, the trainer's input (supkit-formats(5)).
 *
 * A shard is a little-endian file: a 64-byte header, then token_count uint16
 * token ids. Every document starts with BOS, so documents are the runs that
 * begin at each BOS. Header layout (offsets in bytes):
 *
 *    0  char[8]  magic "SKTOKENS"
 *    8  u32      version (1)
 *   12  u32      header size (64)
 *   16  u32      vocab_size V (2..65536: ids must fit uint16)
 *   20  u32      bos_id (< V)
 *   24  u64      token_count
 *   32  u64      doc_count (the number of BOS tokens)
 *   40  u8[24]   zero
 *
 * Leaves out: compression, other token widths (a vocabulary over 65536 is
 * refused when writing). Readers validate everything (magic, version, sizes,
 * every id < V, first token BOS, BOS count == doc_count) and name the file and
 * the byte offset of the first problem. Ownership: a struct shard owns its
 * mapping and path until shard_close.
 */
#ifndef SUPKIT_TRAINER_SHARD_H
#define SUPKIT_TRAINER_SHARD_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"
#include "lib/fileio.h"

#define SHARD_MAGIC "SKTOKENS"
#define SHARD_VERSION 1u
#define SHARD_HEADER_BYTES 64u
#define SHARD_MAX_VOCAB 65536u
/* Refused above this many tokens (2^40, 2 TiB of ids): a header that claims
 * more is corrupt, not big. */
#define SHARD_MAX_TOKENS (1ull << 40)

struct shard {
	char *path;
	uint32_t vocab_size;
	uint32_t bos_id;
	uint64_t n_tokens;
	uint64_t n_docs;
	const uint16_t *tokens;   /* n_tokens ids (little-endian host assumed) */
	void *map;                /* mmap of the whole file, or NULL when empty */
	size_t map_len;
};

/* Map and validate a shard. On error e says "'path': offset N: what". */
int shard_open(struct shard *s, const char *path, struct err *e);
void shard_close(struct shard *s);

/* Read only the header (no token scan); used by stats and by tools that
 * want V or BOS without mapping the file. */
int shard_read_header(const char *path, uint32_t *vocab_size, uint32_t *bos_id,
		      uint64_t *n_tokens, uint64_t *n_docs, struct err *e);

/* Streaming writer: temp file beside path, header written on commit. */
struct shard_writer {
	struct atomic_file af;
	uint32_t vocab_size;
	uint32_t bos_id;
	uint64_t n_tokens;
	uint64_t n_docs;
	int open;
};

/* Refuses vocab_size > SHARD_MAX_VOCAB or bos_id >= vocab_size (code 2). */
int shard_writer_open(struct shard_writer *w, const char *path, uint32_t vocab_size,
		      uint32_t bos_id, struct err *e);
/* Append one document: BOS, then ids[0..n) (each must be < V and != BOS). */
int shard_writer_add_doc(struct shard_writer *w, const uint32_t *ids, size_t n, struct err *e);
/* Write the header, fsync, rename into place. */
int shard_writer_commit(struct shard_writer *w, struct err *e);
/* Remove the temporary file (safe after commit or a failed call). */
void shard_writer_abort(struct shard_writer *w);

#endif
