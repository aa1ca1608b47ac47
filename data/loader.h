/* loader.h: the BOS-aligned best-fit packing data loader (docs/data.md).
 *
 * Semantics follow make_dataloader in karpathy/autoresearch prepare.py:
 * documents (BOS-started runs of the shards) are read in order, 128 at a time
 * (a refill never crosses a shard or an epoch boundary), into a buffer that is
 * topped up while it holds fewer than 1000 documents. Each of the B rows has
 * capacity T+1 and starts at position 0; until a row is full, the largest
 * buffered document that fits the remaining space is moved into it (ties: the
 * one buffered first); when none fits, the shortest (ties: buffered first) is
 * cropped to fill the row exactly and the rest of it is dropped. inputs =
 * row[:-1], targets = row[1:]. At the end of the data a new epoch starts at
 * the first document again.
 *
 * Seed: 0 gives the original's order (shards in the given order, documents in
 * file order). Any other seed visits the documents of each epoch in a
 * permutation drawn (Fisher-Yates, lib/rng.h) from rng_seed(seed + epoch); the
 * stream is a pure function of (shards, T, B, seed).
 *
 * Leaves out: threads, pinned memory, device copies (the trainer does those).
 * Ownership: the loader owns its mapped shards until loader_close.
 */
#ifndef SUPKIT_TRAINER_LOADER_H
#define SUPKIT_TRAINER_LOADER_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"
#include "data/shard.h"

#define LOADER_BUFFER_DOCS 1000
#define LOADER_REFILL_DOCS 128

struct loader_doc {
	uint64_t start;    /* index of its BOS in its shard */
	uint32_t shard;
	uint32_t len;      /* tokens, BOS included */
};

struct loader {
	int T, B;
	uint64_t seed;
	uint32_t vocab_size, bos_id;
	int n_shards;
	struct shard *shards;
	uint64_t n_docs;
	struct loader_doc *docs;   /* every document, file order */
	uint64_t *order;           /* this epoch's visiting order (NULL for seed 0) */
	uint64_t epoch;            /* 1-based, as in the original */
	uint64_t next;             /* position in this epoch's order */
	uint64_t *buf;             /* buffered document ids (indices into docs) */
	size_t buf_n, buf_cap;
	uint64_t batches;          /* batches produced so far */
	int32_t *row;              /* B rows of T+1 */
};

/* Open n shards (same V and BOS), index their documents and prepare the
 * stream. T >= 1, B >= 1. Returns 0 or -1 (e names the shard and problem). */
int loader_open(const char *const *shards, int n, int T, int B, uint64_t seed,
		struct loader *ld, struct err *e);
/* Fill inputs and targets (each B*T, row-major (B,T)) with the next batch.
 * Returns the epoch of the most recent refill (>= 1), as the original yields. */
uint64_t loader_next(struct loader *ld, int32_t *inputs, int32_t *targets);
void loader_close(struct loader *ld);

/* Position for checkpoint resume: a small self-describing byte string (magic
 * "SKLOADR1", T, B, seed, document count, epoch, next, batches, buffered ids).
 * loader_state returns a fresh buffer (caller frees) and its length;
 * loader_restore refuses state made for other shards, T, B or seed, and a
 * position (epoch, next, buffered documents) that its batch count cannot
 * reach: each batch takes B to B (T + 1) documents. */
uint8_t *loader_state(const struct loader *ld, size_t *len);
int loader_restore(struct loader *ld, const uint8_t *state, size_t len, struct err *e);

#endif
