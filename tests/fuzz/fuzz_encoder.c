/* fuzz_encoder.c: libFuzzer harness for the BPE encoder and its split
 * pattern (data/tokenizer.c tokenizer_init, tokenizer_compile,
 * tokenizer_split, tokenizer_encode, tokenizer_decode) on arbitrary bytes
 * and arbitrary patterns.
 *
 * Input: "<pattern>\0<text>", or the whole input as text under the default
 * pattern (TOKENIZER_PATTERN_DEFAULT) when it holds no NUL. The ranks are
 * fixed: the 256 single bytes, then a few merges (ASCII and multi-byte UTF-8).
 *
 * Invariants: a pattern is compiled or refused with a one-line message; the
 * pieces of tokenizer_split lie inside the text, in order, without overlap;
 * decode(encode(text)) is exactly the pieces concatenated, and exactly the
 * text under the default pattern (tokenizer.h: decode(encode(x)) == x for
 * every byte string); every id is below n_vocab.
 * Leaves out: rank files (fuzz_ranks.c) and training (bpe_train).
 * Seeds: tests/fixtures/data/sample.txt, texts.json (tests/fuzz/seeds.txt) and
 * tests/fuzz/corpus/encoder (patterns). Reference: data/tokenizer.h, docs/data.md. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fuzz_merges[] = {
	"th", "the", " t", " the", "in", "ing", "er", "  ", "    ", "\r\n", "\n\n", "e ",
	"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "12", "123", "'s", "re", "ab", "abab",
};

struct fuzz_pieces {
	const char *text, *end, *prev;
	unsigned char *cat;
	size_t n;
};

static int fuzz_piece(const char *piece, size_t len, void *ctx)
{
	struct fuzz_pieces *p = ctx;
	if (len == 0 || piece < p->prev || piece + len > p->end)
		abort();
	memcpy(p->cat + p->n, piece, len);
	p->n += len;
	p->prev = piece + len;
	return 0;
}

static int fuzz_tokenizer(struct tokenizer *tk, const char *pattern, struct err *e)
{
	enum { NM = sizeof fuzz_merges / sizeof fuzz_merges[0] };
	unsigned char bytes[256], *tok[256 + NM];
	uint32_t len[256 + NM];
	for (int i = 0; i < 256; i++) {
		bytes[i] = (unsigned char)i;
		tok[i] = &bytes[i];
		len[i] = 1;
	}
	for (int i = 0; i < NM; i++) {
		tok[256 + i] = (unsigned char *)fuzz_merges[i];
		len[256 + i] = (uint32_t)strlen(fuzz_merges[i]);
	}
	return tokenizer_init(tk, tok, len, 256 + NM, pattern, e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data, *text = in, *pattern = NULL;
	size_t len = size;
	char *pat = NULL;
	const char *nul = memchr(in, 0, size);
	if (nul) {
		pat = malloc((size_t)(nul - in) + 1);
		if (!pat)
			abort();
		memcpy(pat, in, (size_t)(nul - in));
		pat[nul - in] = 0;
		pattern = pat;
		text = nul + 1;
		len = size - (size_t)(nul - in) - 1;
	}
	struct tokenizer tk;
	struct err e = {0};
	if (fuzz_tokenizer(&tk, pattern, &e) != 0) {
		if (!pattern || !e.msg[0] || strchr(e.msg, '\n'))
			abort();
		free(pat);
		return 0;
	}
	/* An exact-size copy of the text, so reads past it are ASan errors. */
	char *t = malloc(len ? len : 1);
	if (!t)
		abort();
	memcpy(t, text, len);
	struct fuzz_pieces p = {t, t + len, t, malloc(len ? len : 1), 0};
	if (!p.cat)
		abort();
	int split_ok = tokenizer_split(tk.re, tk.md, t, len, fuzz_piece, &p, &e) == 0;
	struct ids ids = {0};
	if (tokenizer_encode(&tk, t, len, &ids, &e) == 0) {
		if (!split_ok)
			abort();
		for (size_t i = 0; i < ids.n; i++)
			if (ids.v[i] >= tk.n_ranks)
				abort(); /* ordinary encoding: no specials */
		struct bytes back = {0};
		if (tokenizer_decode(&tk, ids.v, ids.n, &back, &e) != 0)
			abort();
		if (back.n != p.n || (p.n && memcmp(back.v, p.cat, p.n) != 0))
			abort();
		if (!pattern && (back.n != len || (len && memcmp(back.v, t, len) != 0)))
			abort();
		bytes_free(&back);
	} else if (!e.msg[0] || strchr(e.msg, '\n')) {
		abort();
	}
	ids_free(&ids);
	free(p.cat);
	free(t);
	tokenizer_free(&tk);
	free(pat);
	return 0;
}
