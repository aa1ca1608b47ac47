/* bpe_train.c: byte-level BPE training (docs/data.md, tokenizer.h bpe_train).
 *
 * Classic BPE (Sennrich et al. 2016, byte-level as in GPT-2): the texts are
 * split by the pattern, identical pieces are counted once with their
 * multiplicity, every piece starts as its bytes (ranks 0..255 = bytes
 * 0x00..0xff), and each step merges the most frequent adjacent pair into a
 * new rank. Deterministic tie-break: among pairs of equal count the one with
 * the smallest (left id, right id). Occurrences inside one piece are merged
 * left to right without overlap (so "aaa" gives "aa" + "a").
 *
 * Pair counts are kept in a hash table and a max-heap with lazy deletion;
 * each merge rescans the pieces that contain the pair. Leaves out: parallel
 * counting, frequency cut-offs, special tokens (added by the tokenizer).
 */
#include "data/tokenizer.h"

#include <stdlib.h>
#include <string.h>
#include "lib/progress.h"

/* ---- piece counting ---- */

struct piece {
	unsigned char *p;
	uint32_t n;
	uint64_t count;
	uint64_t hash;
};

struct piece_map {
	struct piece *v;
	size_t n, cap;   /* open addressing, cap a power of two */
};

static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 31);
}

static void pmap_insert(struct piece_map *m, struct piece pc);

static void pmap_grow(struct piece_map *m)
{
	struct piece_map old = *m;
	m->cap = old.cap ? old.cap * 2 : 4096;
	m->v = xcalloc(m->cap, sizeof *m->v);
	m->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.v[i].p)
			pmap_insert(m, old.v[i]);
	free(old.v);
}

static void pmap_insert(struct piece_map *m, struct piece pc)
{
	if (2 * (m->n + 1) > m->cap)
		pmap_grow(m);
	size_t i = pc.hash & (m->cap - 1);
	while (m->v[i].p)
		i = (i + 1) & (m->cap - 1);
	m->v[i] = pc;
	m->n++;
}

static int piece_count(const char *s, size_t n, void *ctx)
{
	struct piece_map *m = ctx;
	const unsigned char *p = (const unsigned char *)s;
	uint64_t h = fnv(p, n);
	if (m->cap) {
		size_t i = h & (m->cap - 1);
		while (m->v[i].p) {
			if (m->v[i].hash == h && m->v[i].n == n && memcmp(m->v[i].p, p, n) == 0) {
				m->v[i].count++;
				return 0;
			}
			i = (i + 1) & (m->cap - 1);
		}
	}
	struct piece pc = {xmalloc(n), (uint32_t)n, 1, h};
	memcpy(pc.p, p, n);
	pmap_insert(m, pc);
	return 0;
}

/* ---- pair counts: hash table + lazy max-heap ---- */

struct pair_map {
	uint64_t *key;
	int64_t *count;
	unsigned char *used;
	size_t n, cap;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static int64_t *pair_slot(struct pair_map *m, uint64_t key);

static void pair_grow(struct pair_map *m)
{
	struct pair_map old = *m;
	m->cap = old.cap ? 2 * old.cap : 1 << 16;
	m->key = xmalloc(m->cap * sizeof *m->key);
	m->count = xmalloc(m->cap * sizeof *m->count);
	m->used = xcalloc(m->cap, 1);
	m->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.used[i])
			*pair_slot(m, old.key[i]) = old.count[i];
	free(old.key);
	free(old.count);
	free(old.used);
}

static int64_t *pair_slot(struct pair_map *m, uint64_t key)
{
	if (2 * (m->n + 1) > m->cap)
		pair_grow(m);
	size_t i = mix64(key) & (m->cap - 1);
	while (m->used[i]) {
		if (m->key[i] == key)
			return &m->count[i];
		i = (i + 1) & (m->cap - 1);
	}
	m->used[i] = 1;
	m->key[i] = key;
	m->count[i] = 0;
	m->n++;
	return &m->count[i];
}

struct heap_ent {
	int64_t count;
	uint64_t key;
};

struct heap {
	struct heap_ent *v;
	size_t n, cap;
};

/* a before b: higher count, then smaller key ((left, right) ids) */
static int heap_before(const struct heap_ent *a, const struct heap_ent *b)
{
	return a->count > b->count || (a->count == b->count && a->key < b->key);
}

static void heap_push(struct heap *h, int64_t count, uint64_t key)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 1 << 16;
		h->v = xrealloc(h->v, h->cap * sizeof *h->v);
	}
	size_t i = h->n++;
	h->v[i] = (struct heap_ent){count, key};
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!heap_before(&h->v[i], &h->v[p]))
			break;
		struct heap_ent t = h->v[i];
		h->v[i] = h->v[p];
		h->v[p] = t;
		i = p;
	}
}

static struct heap_ent heap_pop(struct heap *h)
{
	struct heap_ent top = h->v[0];
	h->v[0] = h->v[--h->n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && heap_before(&h->v[l], &h->v[m]))
			m = l;
		if (r < h->n && heap_before(&h->v[r], &h->v[m]))
			m = r;
		if (m == i)
			break;
		struct heap_ent t = h->v[i];
		h->v[i] = h->v[m];
		h->v[m] = t;
		i = m;
	}
	return top;
}

/* ---- training ---- */

struct word {
	uint32_t *sym;
	uint32_t n;
	int64_t count;
};

#define PAIR(a, b) ((uint64_t)(a) << 32 | (uint64_t)(b))

static void word_pairs(struct pair_map *pm, const struct word *w, int64_t sign)
{
	for (uint32_t i = 0; i + 1 < w->n; i++)
		*pair_slot(pm, PAIR(w->sym[i], w->sym[i + 1])) += sign * w->count;
}

int bpe_train(const char *const *texts, const size_t *lens, size_t n, uint32_t n_ranks,
	      const char *pattern, int quiet, struct tokenizer *out, struct err *e)
{
	if (n_ranks < 256 || n_ranks > TOKENIZER_MAX_RANKS)
		return err_set(e, EXIT_USAGE, "mergeable ranks must be 256..%u (got %u)",
			       TOKENIZER_MAX_RANKS, n_ranks);
	void *re, *md;
	if (tokenizer_compile(pattern ? pattern : TOKENIZER_PATTERN_DEFAULT, &re, &md, e) < 0)
		return -1;
	struct progress pg;
	progress_init(&pg, quiet);
	struct piece_map pm = {0};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = tokenizer_split(re, md, texts[i], lens[i], piece_count, &pm, e);
		progress_update(&pg, 0, "bpe: split %zu/%zu texts, %zu distinct pieces", i + 1, n, pm.n);
	}
	tokenizer_compiled_free(re, md);
	if (rc < 0) {
		for (size_t i = 0; i < pm.cap; i++)
			free(pm.v[i].p);
		free(pm.v);
		return -1;
	}
	/* Word order follows the hash table; results do not depend on it (counts
	 * are sums, ties are broken by ids). */
	size_t nw = 0;
	struct word *w = xcalloc(pm.n ? pm.n : 1, sizeof *w);
	for (size_t i = 0; i < pm.cap; i++) {
		struct piece *pc = &pm.v[i];
		if (!pc->p)
			continue;
		w[nw].sym = xmalloc((pc->n ? pc->n : 1) * sizeof *w[nw].sym);
		for (uint32_t k = 0; k < pc->n; k++)
			w[nw].sym[k] = pc->p[k];
		w[nw].n = pc->n;
		w[nw].count = (int64_t)pc->count;
		nw++;
		free(pc->p);
	}
	free(pm.v);

	struct pair_map pairs = {0};
	struct heap hp = {0};
	for (size_t i = 0; i < nw; i++)
		word_pairs(&pairs, &w[i], 1);
	for (size_t i = 0; i < pairs.cap; i++)
		if (pairs.used[i] && pairs.count[i] > 0)
			heap_push(&hp, pairs.count[i], pairs.key[i]);

	unsigned char **tok = xmalloc(n_ranks * sizeof *tok);
	uint32_t *tl = xmalloc(n_ranks * sizeof *tl);
	for (uint32_t b = 0; b < 256; b++) {
		tok[b] = xmalloc(1);
		tok[b][0] = (unsigned char)b;
		tl[b] = 1;
	}
	uint32_t nr = 256;
	uint64_t *touched = NULL;
	size_t nt = 0, tcap = 0;
	while (nr < n_ranks && hp.n > 0) {
		struct heap_ent top = heap_pop(&hp);
		int64_t cur = *pair_slot(&pairs, top.key);
		if (cur != top.count || cur <= 0)
			continue;  /* stale entry */
		uint32_t a = (uint32_t)(top.key >> 32), b = (uint32_t)top.key, id = nr;
		tl[id] = tl[a] + tl[b];
		tok[id] = xmalloc(tl[id]);
		memcpy(tok[id], tok[a], tl[a]);
		memcpy(tok[id] + tl[a], tok[b], tl[b]);
		nr++;
		nt = 0;
		for (size_t i = 0; i < nw; i++) {
			struct word *x = &w[i];
			uint32_t k;
			for (k = 0; k + 1 < x->n; k++)
				if (x->sym[k] == a && x->sym[k + 1] == b)
					break;
			if (k + 1 >= x->n)
				continue;
			word_pairs(&pairs, x, -1);
			for (uint32_t j = 0; j + 1 < x->n; j++) {
				if (nt == tcap) {
					tcap = tcap ? 2 * tcap : 4096;
					touched = xrealloc(touched, tcap * sizeof *touched);
				}
				touched[nt++] = PAIR(x->sym[j], x->sym[j + 1]);
			}
			uint32_t o = 0;
			for (uint32_t j = 0; j < x->n; j++) {
				if (j + 1 < x->n && x->sym[j] == a && x->sym[j + 1] == b) {
					x->sym[o++] = id;
					j++;
				} else
					x->sym[o++] = x->sym[j];
			}
			x->n = o;
			word_pairs(&pairs, x, 1);
			for (uint32_t j = 0; j + 1 < x->n; j++) {
				if (nt == tcap) {
					tcap = tcap ? 2 * tcap : 4096;
					touched = xrealloc(touched, tcap * sizeof *touched);
				}
				touched[nt++] = PAIR(x->sym[j], x->sym[j + 1]);
			}
		}
		/* Re-push pairs whose count may have changed (duplicates are harmless). */
		for (size_t i = 0; i < nt; i++) {
			int64_t c = *pair_slot(&pairs, touched[i]);
			if (c > 0)
				heap_push(&hp, c, touched[i]);
		}
		progress_update(&pg, 0, "bpe: %u/%u ranks (last merge count %lld)", nr, n_ranks,
				(long long)cur);
	}
	progress_update(&pg, 1, "bpe: %u ranks from %zu distinct pieces", nr, nw);
	progress_done(&pg);
	free(touched);
	free(hp.v);
	free(pairs.key);
	free(pairs.count);
	free(pairs.used);
	for (size_t i = 0; i < nw; i++)
		free(w[i].sym);
	free(w);
	rc = tokenizer_init(out, tok, tl, nr, pattern, e);
	for (uint32_t i = 0; i < nr; i++)
		free(tok[i]);
	free(tok);
	free(tl);
	return rc;
}
