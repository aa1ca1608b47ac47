/* loader.c: BOS-aligned best-fit packing over token shards (docs/data.md).
 *
 * Implements loader.h; the semantics (document order, refills of 128
 * documents while fewer than 1000 are buffered, best fit with first-buffered
 * tie-breaking, crop of the shortest, wrap-around epochs) are those of
 * make_dataloader in karpathy/autoresearch prepare.py, written afresh in C.
 * Leaves out: tokenization on the fly (shards are pre-tokenized), threads.
 */
#include "data/loader.h"

#include <stdlib.h>
#include <string.h>
#include "lib/rng.h"

#define STATE_MAGIC "SKLOADR1"

/* Fisher-Yates permutation of the documents for ld->epoch (seed != 0). */
static void order_make(struct loader *ld)
{
	if (!ld->seed)
		return;
	struct rng r;
	rng_seed(&r, ld->seed + ld->epoch);
	for (uint64_t i = 0; i < ld->n_docs; i++)
		ld->order[i] = i;
	for (uint64_t i = ld->n_docs; i > 1; i--) {
		uint64_t j = rng_below(&r, i);
		uint64_t t = ld->order[i - 1];
		ld->order[i - 1] = ld->order[j];
		ld->order[j] = t;
	}
}

static uint64_t order_at(const struct loader *ld, uint64_t pos)
{
	return ld->order ? ld->order[pos] : pos;
}

int loader_open(const char *const *paths, int n, int T, int B, uint64_t seed,
		struct loader *ld, struct err *e)
{
	memset(ld, 0, sizeof *ld);
	if (n < 1)
		return err_set(e, EXIT_USAGE, "loader: no shards given");
	if (T < 1 || B < 1)
		return err_set(e, EXIT_USAGE, "loader: T and B must be at least 1 (got T=%d B=%d)", T, B);
	ld->T = T;
	ld->B = B;
	ld->seed = seed;
	ld->shards = xcalloc((size_t)n, sizeof *ld->shards);
	for (int i = 0; i < n; i++) {
		if (shard_open(&ld->shards[i], paths[i], e) < 0)
			goto fail;
		ld->n_shards = i + 1;
		struct shard *s = &ld->shards[i];
		if (i == 0) {
			ld->vocab_size = s->vocab_size;
			ld->bos_id = s->bos_id;
		} else if (s->vocab_size != ld->vocab_size || s->bos_id != ld->bos_id) {
			err_set(e, EXIT_USAGE,
				"'%s': offset 16: vocab %u / BOS %u differ from '%s' (vocab %u / BOS %u)",
				paths[i], s->vocab_size, s->bos_id, paths[0], ld->vocab_size, ld->bos_id);
			goto fail;
		}
		ld->n_docs += s->n_docs;
	}
	if (ld->n_docs == 0) {
		err_set(e, EXIT_USAGE, "'%s': the shards hold no documents", paths[0]);
		goto fail;
	}
	ld->docs = xmalloc(ld->n_docs * sizeof *ld->docs);
	uint64_t d = 0;
	for (int i = 0; i < n; i++) {
		const struct shard *s = &ld->shards[i];
		uint64_t last = 0;
		for (uint64_t t = 0; t <= s->n_tokens; t++) {
			if (t < s->n_tokens && s->tokens[t] != s->bos_id)
				continue;
			if (t > 0 && d > 0 && ld->docs[d - 1].shard == (uint32_t)i) {
				uint64_t len = t - last;
				ld->docs[d - 1].len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
			}
			if (t < s->n_tokens) {
				ld->docs[d].shard = (uint32_t)i;
				ld->docs[d].start = t;
				ld->docs[d].len = 0;
				d++;
				last = t;
			}
		}
	}
	if (seed)
		ld->order = xmalloc(ld->n_docs * sizeof *ld->order);
	ld->epoch = 1;
	order_make(ld);
	ld->buf_cap = LOADER_BUFFER_DOCS + LOADER_REFILL_DOCS;
	ld->buf = xmalloc(ld->buf_cap * sizeof *ld->buf);
	ld->row = xmalloc((size_t)B * ((size_t)T + 1) * sizeof *ld->row);
	return 0;
fail:
	loader_close(ld);
	return -1;
}

void loader_close(struct loader *ld)
{
	for (int i = 0; i < ld->n_shards; i++)
		shard_close(&ld->shards[i]);
	free(ld->shards);
	free(ld->docs);
	free(ld->order);
	free(ld->buf);
	free(ld->row);
	memset(ld, 0, sizeof *ld);
}

/* Append the next batch of documents (at most 128, not crossing a shard
 * boundary in file order nor an epoch boundary). */
static void refill(struct loader *ld)
{
	if (ld->next == ld->n_docs) {
		ld->epoch++;
		ld->next = 0;
		order_make(ld);
	}
	uint64_t k = 0;
	uint32_t shard = ld->docs[order_at(ld, ld->next)].shard;
	while (k < LOADER_REFILL_DOCS && ld->next < ld->n_docs) {
		uint64_t id = order_at(ld, ld->next);
		if (!ld->seed && ld->docs[id].shard != shard)
			break;
		ld->buf[ld->buf_n++] = id;
		ld->next++;
		k++;
	}
}

static void buf_remove(struct loader *ld, size_t i)
{
	memmove(ld->buf + i, ld->buf + i + 1, (ld->buf_n - i - 1) * sizeof *ld->buf);
	ld->buf_n--;
}

static void doc_copy(const struct loader *ld, uint64_t id, int32_t *dst, uint32_t n)
{
	const struct loader_doc *d = &ld->docs[id];
	const uint16_t *src = ld->shards[d->shard].tokens + d->start;
	for (uint32_t i = 0; i < n; i++)
		dst[i] = src[i];
}

uint64_t loader_next(struct loader *ld, int32_t *inputs, int32_t *targets)
{
	const uint32_t cap = (uint32_t)ld->T + 1;
	for (int b = 0; b < ld->B; b++) {
		int32_t *row = ld->row + (size_t)b * cap;
		uint32_t pos = 0;
		while (pos < cap) {
			while (ld->buf_n < LOADER_BUFFER_DOCS)
				refill(ld);
			uint32_t remaining = cap - pos;
			size_t best = SIZE_MAX, shortest = 0;
			uint32_t best_len = 0;
			for (size_t i = 0; i < ld->buf_n; i++) {
				uint32_t len = ld->docs[ld->buf[i]].len;
				if (len <= remaining && len > best_len) {
					best = i;
					best_len = len;
				}
				if (len < ld->docs[ld->buf[shortest]].len)
					shortest = i;
			}
			if (best != SIZE_MAX) {
				doc_copy(ld, ld->buf[best], row + pos, best_len);
				pos += best_len;
				buf_remove(ld, best);
			} else {
				doc_copy(ld, ld->buf[shortest], row + pos, remaining);
				pos += remaining;
				buf_remove(ld, shortest);
			}
		}
		memcpy(inputs + (size_t)b * ld->T, row, (size_t)ld->T * sizeof *row);
		memcpy(targets + (size_t)b * ld->T, row + 1, (size_t)ld->T * sizeof *row);
	}
	ld->batches++;
	return ld->epoch;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Layout: magic[8], T, B, seed, n_docs, epoch, next, batches, buf_n (u64 each),
 * then buf_n document ids (u64). */
uint8_t *loader_state(const struct loader *ld, size_t *len)
{
	size_t n = 8 + 8 * 8 + 8 * ld->buf_n;
	uint8_t *p = xmalloc(n);
	memcpy(p, STATE_MAGIC, 8);
	uint64_t f[8] = {(uint64_t)ld->T, (uint64_t)ld->B, ld->seed, ld->n_docs,
			 ld->epoch, ld->next, ld->batches, ld->buf_n};
	for (int i = 0; i < 8; i++)
		put64(p + 8 + 8 * i, f[i]);
	for (size_t i = 0; i < ld->buf_n; i++)
		put64(p + 72 + 8 * i, ld->buf[i]);
	*len = n;
	return p;
}

int loader_restore(struct loader *ld, const uint8_t *st, size_t len, struct err *e)
{
	if (len < 72 || memcmp(st, STATE_MAGIC, 8) != 0)
		return err_set(e, EXIT_USAGE, "loader state: offset 0: not a loader state");
	uint64_t f[8];
	for (int i = 0; i < 8; i++)
		f[i] = get64(st + 8 + 8 * i);
	if (f[0] != (uint64_t)ld->T || f[1] != (uint64_t)ld->B)
		return err_set(e, EXIT_USAGE, "loader state: offset 8: made for T=%llu B=%llu, not T=%d B=%d",
			       (unsigned long long)f[0], (unsigned long long)f[1], ld->T, ld->B);
	if (f[2] != ld->seed)
		return err_set(e, EXIT_USAGE, "loader state: offset 24: made for another seed");
	if (f[3] != ld->n_docs)
		return err_set(e, EXIT_USAGE,
			       "loader state: offset 32: made for %llu documents, the shards hold %llu",
			       (unsigned long long)f[3], (unsigned long long)ld->n_docs);
	if (f[4] < 1 || f[5] > ld->n_docs || f[7] > ld->buf_cap || len != 72 + 8 * f[7])
		return err_set(e, EXIT_USAGE, "loader state: offset 40: inconsistent position");
	for (uint64_t i = 0; i < f[7]; i++)
		if (get64(st + 72 + 8 * i) >= ld->n_docs)
			return err_set(e, EXIT_USAGE, "loader state: offset %llu: document id out of range",
				       (unsigned long long)(72 + 8 * i));
	/* The documents taken from the order so far, (epoch - 1) n_docs + next,
	 * are the buffered ones and those the batches consumed: each of a
	 * batch's B rows takes 1 to T + 1 documents (each at least one token). */
	uint64_t row_max = (uint64_t)ld->T + 1, per_batch = (uint64_t)ld->B * row_max;
	if (f[6] > (UINT64_MAX / 2 - f[7]) / per_batch)   /* no overflow below */
		return err_set(e, EXIT_USAGE, "loader state: offset 56: %llu batches is beyond any run",
			       (unsigned long long)f[6]);
	uint64_t taken_max = f[6] * per_batch + f[7], taken_min = f[6] * (uint64_t)ld->B + f[7];
	if (f[4] - 1 > taken_max / ld->n_docs)
		return err_set(e, EXIT_USAGE, "loader state: offset 40: epoch %llu is beyond what %llu batches reach",
			       (unsigned long long)f[4], (unsigned long long)f[6]);
	uint64_t taken = (f[4] - 1) * ld->n_docs + f[5];
	if (taken < taken_min || taken > taken_max)
		return err_set(e, EXIT_USAGE, "loader state: offset 40: epoch %llu, position %llu and %llu buffered "
			       "documents do not follow from %llu batches", (unsigned long long)f[4],
			       (unsigned long long)f[5], (unsigned long long)f[7], (unsigned long long)f[6]);
	ld->epoch = f[4];
	ld->next = f[5];
	ld->batches = f[6];
	ld->buf_n = (size_t)f[7];
	for (size_t i = 0; i < ld->buf_n; i++)
		ld->buf[i] = get64(st + 72 + 8 * i);
	order_make(ld);
	return 0;
}
