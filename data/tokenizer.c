/* tokenizer.c: byte-level BPE encoding and decoding, tiktoken-compatible.
 *
 * Implements tokenizer.h: rank files in tiktoken's text format (RFC 4648
 * base64 token, space, decimal rank; gzip-compressed files are read through
 * libarchive), the split by a PCRE2 pattern (UTF + UCP + DOLLAR_ENDONLY, so
 * \s, \p{L}, \p{N} and $ mean what they mean in tiktoken's Rust core), the
 * lowest-rank-first pair merge of tiktoken's byte_pair_merge, decoding and
 * the token_bytes file for BPB (docs/data.md).
 *
 * Leaves out: special-token recognition in text (only "ordinary" encoding is
 * offered; specials come from the caller, e.g. BOS), threads.
 *
 * Invalid UTF-8: the pattern runs over each maximal valid run as over a whole
 * text; each byte outside a valid sequence is a piece of its own.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "data/tokenizer.h"

#include <archive.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/fileio.h"
#include "lib/utf8.h"

/* ---- small containers ---- */

void ids_push(struct ids *a, uint32_t id)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 256;
		a->v = xrealloc(a->v, a->cap * sizeof *a->v);
	}
	a->v[a->n++] = id;
}

void ids_free(struct ids *a)
{
	free(a->v);
	memset(a, 0, sizeof *a);
}

void bytes_append(struct bytes *b, const void *p, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t c = b->cap ? b->cap : 256;
		while (c < b->n + n + 1)
			c *= 2;
		b->v = xrealloc(b->v, c);
		b->cap = c;
	}
	if (n)
		memcpy(b->v + b->n, p, n);
	b->n += n;
	b->v[b->n] = 0;
}

void bytes_free(struct bytes *b)
{
	free(b->v);
	memset(b, 0, sizeof *b);
}

/* ---- bytes -> rank hash table (open addressing, keys point into tk->tok) ---- */

struct rank_table {
	uint64_t mask;
	uint32_t *slot;   /* rank + 1, 0 = empty */
	unsigned char *const *tok;
	const uint32_t *len;
};

static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static uint32_t table_get(const struct rank_table *t, const unsigned char *p, size_t n)
{
	uint64_t i = hash_bytes(p, n) & t->mask;
	for (;;) {
		uint32_t s = t->slot[i];
		if (!s)
			return UINT32_MAX;
		if (t->len[s - 1] == n && memcmp(t->tok[s - 1], p, n) == 0)
			return s - 1;
		i = (i + 1) & t->mask;
	}
}

/* Insert rank r; returns the rank already holding these bytes, or UINT32_MAX. */
static uint32_t table_put(struct rank_table *t, uint32_t r)
{
	const unsigned char *p = t->tok[r];
	size_t n = t->len[r];
	uint64_t i = hash_bytes(p, n) & t->mask;
	for (;;) {
		uint32_t s = t->slot[i];
		if (!s) {
			t->slot[i] = r + 1;
			return UINT32_MAX;
		}
		if (t->len[s - 1] == n && memcmp(t->tok[s - 1], p, n) == 0)
			return s - 1;
		i = (i + 1) & t->mask;
	}
}

/* ---- pattern ---- */

int tokenizer_compile(const char *pattern, void **re_out, void **md_out, struct err *e)
{
	int ec;
	PCRE2_SIZE off;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
				       PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &ec, &off, NULL);
	if (!re) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(ec, msg, sizeof msg);
		return err_set(e, EXIT_USAGE, "split pattern: offset %zu: %s", (size_t)off, (char *)msg);
	}
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* best effort: the interpreter is the fallback */
	*re_out = re;
	*md_out = pcre2_match_data_create_from_pattern(re, NULL);
	return 0;
}

void tokenizer_compiled_free(void *re, void *md)
{
	pcre2_match_data_free(md);
	pcre2_code_free(re);
}

static int split_run(pcre2_code *re, pcre2_match_data *md, const char *s, size_t n,
		     int (*fn)(const char *, size_t, void *), void *ctx, struct err *e)
{
	size_t off = 0;
	while (off < n) {
		int rc = pcre2_match(re, (PCRE2_SPTR)s, n, off, PCRE2_NO_UTF_CHECK, md, NULL);
		if (rc == PCRE2_ERROR_NOMATCH)
			return 0;  /* text no alternative matches is skipped, as in tiktoken */
		if (rc < 0) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(rc, msg, sizeof msg);
			return err_set(e, EXIT_USAGE, "split pattern: at byte %zu: %s", off, (char *)msg);
		}
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		size_t a = ov[0], b = ov[1];
		if (b > a) {
			if (fn(s + a, b - a, ctx) < 0)
				return -1;
			off = b;
		} else {  /* empty match: step over one character */
			off = a + 1;
			while (off < n && ((unsigned char)s[off] & 0xC0) == 0x80)
				off++;
		}
	}
	return 0;
}

int tokenizer_split(void *re, void *md, const char *text, size_t len,
		    int (*fn)(const char *piece, size_t len, void *ctx), void *ctx, struct err *e)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t i = 0;
	while (i < len) {
		size_t start = i, k;
		while (i < len && (k = utf8_seq(p + i, len - i)) > 0)
			i += k;
		if (i > start && split_run(re, md, text + start, i - start, fn, ctx, e) < 0)
			return -1;
		if (i < len) {  /* one invalid byte */
			if (fn(text + i, 1, ctx) < 0)
				return -1;
			i++;
		}
	}
	return 0;
}

/* ---- construction ---- */

static int tk_build(struct tokenizer *tk, const char *pattern, struct err *e)
{
	struct rank_table *t = xcalloc(1, sizeof *t);
	uint64_t cap = 1024;
	while (cap < 2ull * tk->n_ranks + 2)
		cap *= 2;
	t->mask = cap - 1;
	t->slot = xcalloc(cap, sizeof *t->slot);
	t->tok = tk->tok;
	t->len = tk->tok_len;
	tk->table = t;
	tk->n_vocab = tk->n_ranks + TOKENIZER_N_SPECIAL;
	tk->bos_id = tk->n_ranks;
	tk->pattern = xstrdup(pattern ? pattern : TOKENIZER_PATTERN_DEFAULT);
	return tokenizer_compile(tk->pattern, &tk->re, &tk->md, e);
}

int tokenizer_init(struct tokenizer *tk, unsigned char *const *tok, const uint32_t *len,
		   uint32_t n, const char *pattern, struct err *e)
{
	memset(tk, 0, sizeof *tk);
	tk->n_ranks = n;
	tk->tok = xcalloc(n ? n : 1, sizeof *tk->tok);
	tk->tok_len = xcalloc(n ? n : 1, sizeof *tk->tok_len);
	for (uint32_t i = 0; i < n; i++) {
		tk->tok[i] = xmalloc(len[i] ? len[i] : 1);
		memcpy(tk->tok[i], tok[i], len[i]);
		tk->tok_len[i] = len[i];
	}
	if (tk_build(tk, pattern, e) < 0)
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		if (len[i] == 0) {
			err_set(e, EXIT_USAGE, "rank %u: empty token", i);
			goto fail;
		}
		uint32_t d = table_put(tk->table, i);
		if (d != UINT32_MAX) {
			err_set(e, EXIT_USAGE, "rank %u: same bytes as rank %u", i, d);
			goto fail;
		}
	}
	return 0;
fail:
	tokenizer_free(tk);
	return -1;
}

void tokenizer_free(struct tokenizer *tk)
{
	if (tk->tok)
		for (uint32_t i = 0; i < tk->n_ranks; i++)
			free(tk->tok[i]);
	free(tk->tok);
	free(tk->tok_len);
	if (tk->table)
		free(tk->table->slot);
	free(tk->table);
	if (tk->re)
		tokenizer_compiled_free(tk->re, tk->md);
	free(tk->pattern);
	memset(tk, 0, sizeof *tk);
}

/* ---- base64 (RFC 4648, standard alphabet, padding required) ---- */

static int b64_val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decode s[0..n) into out (n/4*3 bytes room); returns the length or -1. */
static long b64_decode(const char *s, size_t n, unsigned char *out)
{
	if (n == 0 || n % 4)
		return -1;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		int v[4], pad = 0;
		for (int j = 0; j < 4; j++) {
			if (s[i + j] == '=' && i + 4 == n && j >= 2) {
				v[j] = 0;
				pad++;
			} else if (pad || (v[j] = b64_val((unsigned char)s[i + j])) < 0)
				return -1;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		out[o++] = (unsigned char)(w >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(w >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)w;
	}
	return (long)o;
}

static void b64_encode(const unsigned char *p, size_t n, FILE *f)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		uint32_t w = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			w |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			w |= p[i + 2];
		fputc(al[w >> 18 & 63], f);
		fputc(al[w >> 12 & 63], f);
		fputc(i + 1 < n ? al[w >> 6 & 63] : '=', f);
		fputc(i + 2 < n ? al[w & 63] : '=', f);
	}
}

/* ---- rank files ---- */

/* The rank text of the file's len bytes at data: data itself, or when it
 * starts with the gzip magic its gunzipped bytes, then in *fresh (caller
 * frees; NULL otherwise). */
static int rank_text(const char *path, const char *data, size_t len, const char **out, size_t *out_len,
		     char **fresh, struct err *e)
{
	*fresh = NULL;
	if (len > TOKENIZER_MAX_RANK_FILE)
		return err_set(e, EXIT_USAGE, "'%s' is larger than the limit of %zu bytes", path,
			       (size_t)TOKENIZER_MAX_RANK_FILE);
	*out = data;
	*out_len = len;
	if (len < 2 || (unsigned char)data[0] != 0x1f || (unsigned char)data[1] != 0x8b)
		return 0;
	struct archive *a = archive_read_new();
	archive_read_support_filter_gzip(a);
	archive_read_support_format_raw(a);
	struct archive_entry *ent;
	struct bytes b = {0};
	int ok = archive_read_open_memory(a, data, len) == ARCHIVE_OK &&
		 archive_read_next_header(a, &ent) == ARCHIVE_OK;
	while (ok) {
		char chunk[65536];
		la_ssize_t r = archive_read_data(a, chunk, sizeof chunk);
		if (r < 0)
			ok = 0;
		else if (r == 0)
			break;
		else if (b.n + (size_t)r > TOKENIZER_MAX_RANK_FILE) {
			archive_read_free(a);
			bytes_free(&b);
			return err_set(e, EXIT_USAGE, "'%s': decompressed rank file over %u bytes", path,
				       TOKENIZER_MAX_RANK_FILE);
		} else
			bytes_append(&b, chunk, (size_t)r);
	}
	if (!ok) {
		err_set(e, EXIT_USAGE, "'%s': bad gzip data: %s", path, archive_error_string(a));
		archive_read_free(a);
		bytes_free(&b);
		return -1;
	}
	archive_read_free(a);
	bytes_append(&b, "", 0);
	*fresh = (char *)b.v;
	*out = *fresh;
	*out_len = b.n;
	return 0;
}

int tokenizer_load(struct tokenizer *tk, const char *path, const char *pattern, struct err *e)
{
	char *data;
	size_t n;
	memset(tk, 0, sizeof *tk);
	if (file_read_all(path, TOKENIZER_MAX_RANK_FILE, &data, &n, e) < 0)
		return -1;
	int rc = tokenizer_load_mem(tk, data, n, path, pattern, e);
	free(data);
	return rc;
}

int tokenizer_load_mem(struct tokenizer *tk, const char *data, size_t size, const char *path, const char *pattern,
		       struct err *e)
{
	memset(tk, 0, sizeof *tk);
	const char *text;
	char *fresh;
	size_t len;
	if (rank_text(path, data, size, &text, &len, &fresh, e) < 0)
		return -1;
	/* First pass: count lines and the highest rank. */
	size_t cap = 1024, n = 0;
	unsigned char **tok = xmalloc(cap * sizeof *tok);
	uint32_t *tl = xmalloc(cap * sizeof *tl), *rk = xmalloc(cap * sizeof *rk);
	uint32_t max_rank = 0;
	size_t line = 0;
	const char *p = text, *end = text + len;
	int bad = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		line++;
		size_t ll = (size_t)(le - p);
		if (ll && p[ll - 1] == '\r')
			ll--;
		if (ll == 0) {
			p = nl ? nl + 1 : end;
			continue;
		}
		const char *sp = memchr(p, ' ', ll);
		int64_t r = -1;
		if (sp) {
			r = 0;
			for (const char *q = sp + 1; q < p + ll; q++) {
				if (*q < '0' || *q > '9' || r > TOKENIZER_MAX_RANKS) {
					r = -1;
					break;
				}
				r = r * 10 + (*q - '0');
			}
			if (sp + 1 == p + ll)
				r = -1;
		}
		if (r < 0 || r >= TOKENIZER_MAX_RANKS) {
			err_set(e, EXIT_USAGE, "'%s': line %zu: expected '<base64 token> <rank>' with a rank below %u",
				path, line, TOKENIZER_MAX_RANKS);
			bad = 1;
			break;
		}
		size_t bl = (size_t)(sp - p);
		unsigned char *buf = xmalloc(bl / 4 * 3 + 1);
		long dl = b64_decode(p, bl, buf);
		if (dl <= 0) {
			free(buf);
			err_set(e, EXIT_USAGE, "'%s': line %zu: bad base64 token", path, line);
			bad = 1;
			break;
		}
		if (n == cap) {
			cap *= 2;
			tok = xrealloc(tok, cap * sizeof *tok);
			tl = xrealloc(tl, cap * sizeof *tl);
			rk = xrealloc(rk, cap * sizeof *rk);
		}
		tok[n] = buf;
		tl[n] = (uint32_t)dl;
		rk[n] = (uint32_t)r;
		if ((uint32_t)r > max_rank)
			max_rank = (uint32_t)r;
		n++;
		p = nl ? nl + 1 : end;
	}
	free(fresh);
	if (!bad && n == 0) {
		err_set(e, EXIT_USAGE, "'%s': no ranks", path);
		bad = 1;
	}
	if (!bad) {
		tk->n_ranks = max_rank + 1;
		tk->tok = xcalloc(tk->n_ranks, sizeof *tk->tok);
		tk->tok_len = xcalloc(tk->n_ranks, sizeof *tk->tok_len);
		for (size_t i = 0; i < n && !bad; i++) {
			if (tk->tok[rk[i]]) {
				err_set(e, EXIT_USAGE, "'%s': line %zu: rank %u given twice", path, i + 1, rk[i]);
				bad = 1;
				break;
			}
			tk->tok[rk[i]] = tok[i];
			tk->tok_len[rk[i]] = tl[i];
			tok[i] = NULL;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(tok[i]);
	free(tok);
	free(tl);
	if (!bad && tk_build(tk, pattern, e) < 0)
		bad = 1;
	if (!bad)
		for (size_t i = 0; i < n; i++) {
			uint32_t d = table_put(tk->table, rk[i]);
			if (d != UINT32_MAX) {
				err_set(e, EXIT_USAGE, "'%s': line %zu: token of rank %u repeats rank %u", path,
					i + 1, rk[i], d);
				bad = 1;
				break;
			}
		}
	free(rk);
	if (bad) {
		tokenizer_free(tk);
		return -1;
	}
	return 0;
}

int tokenizer_save_ranks(const struct tokenizer *tk, const char *path, struct err *e)
{
	struct atomic_file af;
	if (atomic_open(&af, path, e) < 0)
		return -1;
	for (uint32_t r = 0; r < tk->n_ranks; r++) {
		if (!tk->tok[r])
			continue;
		b64_encode(tk->tok[r], tk->tok_len[r], af.fp);
		fprintf(af.fp, " %u\n", r);
	}
	return atomic_commit(&af, e);
}

/* ---- encoding ---- */

struct enc_ctx {
	struct tokenizer *tk;
	struct ids *out;
	size_t *bound;     /* scratch: boundaries */
	uint32_t *rank;    /* scratch: pair ranks */
	size_t cap;
	struct err *e;
};

static uint32_t rank_of(const struct tokenizer *tk, const unsigned char *p, size_t n)
{
	return table_get(tk->table, p, n);
}

size_t tokenizer_heap_threshold = 256;

/* Pieces longer than tokenizer_heap_threshold: the same merge order with a
 * min-heap of (rank, part) over a linked list of parts, O(n log n) instead of
 * O(n^2) (a 1 MB run of letters is one piece). Stale heap entries are
 * recognised by a per-part version. Ties: the smaller part index, i.e. the
 * leftmost pair, as in the scan. */
struct hp_ent {
	uint32_t rank;
	uint32_t ver;
	size_t part;
};

static int hp_less(const struct hp_ent *a, const struct hp_ent *b)
{
	return a->rank < b->rank || (a->rank == b->rank && a->part < b->part);
}

static void hp_push(struct hp_ent *h, size_t *n, struct hp_ent x)
{
	size_t i = (*n)++;
	h[i] = x;
	while (i > 0 && hp_less(&h[i], &h[(i - 1) / 2])) {
		struct hp_ent t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static struct hp_ent hp_pop(struct hp_ent *h, size_t *n)
{
	struct hp_ent top = h[0];
	h[0] = h[--*n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && hp_less(&h[l], &h[m]))
			m = l;
		if (r < *n && hp_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			break;
		struct hp_ent t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
	return top;
}

static int enc_piece_heap(struct tokenizer *tk, const unsigned char *p, size_t n, struct ids *out,
			  struct err *e)
{
	size_t *next = xmalloc((n + 1) * sizeof *next);
	size_t *prev = xmalloc((n + 1) * sizeof *prev);
	uint32_t *ver = xcalloc(n + 1, sizeof *ver);
	unsigned char *alive = xmalloc(n + 1);
	/* each part pushes at most one live entry per change: n initial + 2 per merge */
	struct hp_ent *h = xmalloc((3 * n + 1) * sizeof *h);
	size_t hn = 0;
	for (size_t i = 0; i <= n; i++) {  /* part n is the end sentinel */
		next[i] = i + 1;
		prev[i] = i ? i - 1 : SIZE_MAX;
		alive[i] = 1;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		uint32_t r = rank_of(tk, p + i, 2);
		if (r != UINT32_MAX)
			hp_push(h, &hn, (struct hp_ent){r, 0, i});
	}
	while (hn > 0) {
		struct hp_ent x = hp_pop(h, &hn);
		size_t i = x.part;
		if (!alive[i] || x.ver != ver[i])
			continue;
		size_t j = next[i];  /* merge part i with part j */
		alive[j] = 0;
		next[i] = next[j];
		prev[next[j]] = i;
		ver[i]++;
		if (next[i] < n) {
			uint32_t r = rank_of(tk, p + i, next[next[i]] - i);
			if (r != UINT32_MAX)
				hp_push(h, &hn, (struct hp_ent){r, ver[i], i});
		}
		if (prev[i] != SIZE_MAX) {
			size_t q = prev[i];
			ver[q]++;
			uint32_t r = rank_of(tk, p + q, next[i] - q);
			if (r != UINT32_MAX)
				hp_push(h, &hn, (struct hp_ent){r, ver[q], q});
		}
	}
	int rc = 0;
	for (size_t i = 0; i < n; i = next[i]) {
		uint32_t t = rank_of(tk, p + i, next[i] - i);
		if (t == UINT32_MAX) {
			rc = err_set(e, EXIT_USAGE, "byte 0x%02x has no rank in the vocabulary", p[i]);
			break;
		}
		ids_push(out, t);
	}
	free(next);
	free(prev);
	free(ver);
	free(alive);
	free(h);
	return rc;
}

/* tiktoken's byte_pair_merge: merge the adjacent pair of lowest rank
 * (leftmost on ties) until no adjacent pair is a rank. */
static int enc_piece(const char *piece, size_t n, void *vctx)
{
	struct enc_ctx *c = vctx;
	struct tokenizer *tk = c->tk;
	const unsigned char *p = (const unsigned char *)piece;
	uint32_t whole = rank_of(tk, p, n);
	if (whole != UINT32_MAX) {
		ids_push(c->out, whole);
		return 0;
	}
	if (n > tokenizer_heap_threshold)
		return enc_piece_heap(tk, p, n, c->out, c->e);
	if (n + 1 > c->cap) {
		c->cap = 2 * (n + 1);
		c->bound = xrealloc(c->bound, c->cap * sizeof *c->bound);
		c->rank = xrealloc(c->rank, c->cap * sizeof *c->rank);
	}
	size_t *b = c->bound;
	uint32_t *r = c->rank;
	size_t m = n;  /* number of parts; boundaries b[0..m] */
	for (size_t i = 0; i <= n; i++)
		b[i] = i;
	for (size_t i = 0; i + 1 < m; i++)
		r[i] = rank_of(tk, p + b[i], b[i + 2] - b[i]);
	while (m > 1) {
		uint32_t best = UINT32_MAX;
		size_t bi = 0;
		for (size_t i = 0; i + 1 < m; i++)
			if (r[i] < best) {
				best = r[i];
				bi = i;
			}
		if (best == UINT32_MAX)
			break;
		/* merge parts bi and bi+1: drop boundary bi+1 */
		memmove(b + bi + 1, b + bi + 2, (m - bi - 1) * sizeof *b);
		memmove(r + bi + 1, r + bi + 2, (m >= bi + 3 ? m - bi - 3 : 0) * sizeof *r);
		m--;
		if (bi + 1 < m)
			r[bi] = rank_of(tk, p + b[bi], b[bi + 2] - b[bi]);
		if (bi > 0)
			r[bi - 1] = rank_of(tk, p + b[bi - 1], b[bi + 1] - b[bi - 1]);
	}
	for (size_t i = 0; i < m; i++) {
		uint32_t t = rank_of(tk, p + b[i], b[i + 1] - b[i]);
		if (t == UINT32_MAX)
			return err_set(c->e, EXIT_USAGE, "byte 0x%02x has no rank in the vocabulary", p[b[i]]);
		ids_push(c->out, t);
	}
	return 0;
}

int tokenizer_encode(struct tokenizer *tk, const char *text, size_t len, struct ids *out,
		     struct err *e)
{
	struct enc_ctx c = {tk, out, NULL, NULL, 0, e};
	int rc = tokenizer_split(tk->re, tk->md, text, len, enc_piece, &c, e);
	free(c.bound);
	free(c.rank);
	return rc;
}

int tokenizer_decode(const struct tokenizer *tk, const uint32_t *ids, size_t n,
		     struct bytes *out, struct err *e)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t t = ids[i];
		if (t < tk->n_ranks && tk->tok[t]) {
			bytes_append(out, tk->tok[t], tk->tok_len[t]);
		} else if (t >= tk->n_ranks && t < tk->n_vocab) {
			char s[32];
			int k = snprintf(s, sizeof s, "<|reserved_%u|>", t - tk->n_ranks);
			bytes_append(out, s, (size_t)k);
		} else
			return err_set(e, EXIT_USAGE, "id %u at index %zu is not in the vocabulary (%u tokens)",
				       t, i, tk->n_vocab);
	}
	return 0;
}

/* ---- token_bytes ---- */

#define TB_MAGIC "SKTOKBYT"

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int tokenizer_write_token_bytes(const char *path, const uint32_t *tb, uint32_t n_vocab, struct err *e)
{
	size_t n = 16 + 4 * (size_t)n_vocab;
	unsigned char *buf = xcalloc(n, 1);
	memcpy(buf, TB_MAGIC, 8);
	put32(buf + 8, 1);
	put32(buf + 12, n_vocab);
	for (uint32_t t = 0; t < n_vocab; t++)
		put32(buf + 16 + 4 * (size_t)t, tb[t]);
	int rc = file_write_atomic(path, buf, n, e);
	free(buf);
	return rc;
}

int tokenizer_save_token_bytes(const struct tokenizer *tk, const char *path, struct err *e)
{
	uint32_t *tb = xcalloc(tk->n_vocab ? tk->n_vocab : 1, sizeof *tb);
	for (uint32_t t = 0; t < tk->n_ranks; t++)
		tb[t] = tk->tok[t] ? tk->tok_len[t] : 0;
	int rc = tokenizer_write_token_bytes(path, tb, tk->n_vocab, e);
	free(tb);
	return rc;
}

int tokenizer_token_bytes(const char *path, uint32_t **out, uint32_t *n_vocab, struct err *e)
{
	char *d;
	size_t n;
	if (file_read_all(path, TOKENIZER_MAX_TOKEN_BYTES_FILE, &d, &n, e) < 0)
		return -1;
	int rc = tokenizer_token_bytes_mem(d, n, path, out, n_vocab, e);
	free(d);
	return rc;
}

int tokenizer_token_bytes_mem(const void *data, size_t n, const char *path, uint32_t **out,
			      uint32_t *n_vocab, struct err *e)
{
	const unsigned char *p = data;
	int rc = 0;
	if (n > TOKENIZER_MAX_TOKEN_BYTES_FILE)
		return err_set(e, EXIT_USAGE, "'%s' is larger than the limit of %zu bytes", path,
			       (size_t)TOKENIZER_MAX_TOKEN_BYTES_FILE);
	if (n < 16 || memcmp(p, TB_MAGIC, 8) != 0)
		rc = err_set(e, EXIT_USAGE, "'%s': offset 0: not a token_bytes file (bad magic)", path);
	else if (get32(p + 8) != 1)
		rc = err_set(e, EXIT_USAGE, "'%s': offset 8: unsupported version %u", path, get32(p + 8));
	else if (n != 16 + 4 * (size_t)get32(p + 12) || get32(p + 12) == 0)
		rc = err_set(e, EXIT_USAGE, "'%s': offset 12: vocab size %u does not match the file size %zu",
			     path, get32(p + 12), n);
	else if (get32(p + 12) <= TOKENIZER_N_SPECIAL)
		rc = err_set(e, EXIT_USAGE, "'%s': offset 12: vocab size %u leaves no room for %d special tokens", path,
			     get32(p + 12), TOKENIZER_N_SPECIAL);
	uint32_t V = rc == 0 ? get32(p + 12) : 0, any = 0;
	/* lengths: ranks 1..TOKENIZER_MAX_TOKEN_BYTES (0: a rank hole), the
	 * specials (the last TOKENIZER_N_SPECIAL ids) 0 */
	for (uint32_t i = 0; rc == 0 && i < V; i++) {
		uint32_t b = get32(p + 16 + 4 * (size_t)i);
		size_t off = 16 + 4 * (size_t)i;
		if (i >= V - TOKENIZER_N_SPECIAL && b != 0)
			rc = err_set(e, EXIT_USAGE, "'%s': offset %zu: token %u is a special token, its length %u is not 0",
				     path, off, i, b);
		else if (b > TOKENIZER_MAX_TOKEN_BYTES)
			rc = err_set(e, EXIT_USAGE, "'%s': offset %zu: token %u has length %u, above the %u bytes a token "
				     "may have", path, off, i, b, (unsigned)TOKENIZER_MAX_TOKEN_BYTES);
		any |= b;
	}
	if (rc == 0 && !any)
		rc = err_set(e, EXIT_USAGE, "'%s': every token has length 0", path);
	if (rc == 0) {
		*n_vocab = V;
		*out = xmalloc(4 * (size_t)*n_vocab);
		for (uint32_t i = 0; i < *n_vocab; i++)
			(*out)[i] = get32(p + 16 + 4 * (size_t)i);
	}
	return rc;
}
