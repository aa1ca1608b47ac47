/* tokenizer.h: byte-level BPE, tiktoken-compatible (docs/data.md).
 *
 * A tokenizer is a set of mergeable ranks (token bytes -> id, the tiktoken
 * text format: base64 token, space, rank, one a line), a split pattern (PCRE2,
 * UTF + UCP; taken as data) and 4 special tokens <|reserved_0..3|> with the
 * ids that follow the highest rank (BOS = <|reserved_0|>).
 *
 * Encoding is tiktoken's "ordinary" encoding: the text is split by the
 * pattern; a piece that is itself a rank is one token, otherwise its bytes are
 * merged pairwise, always the adjacent pair of lowest rank first (leftmost on
 * ties), until no pair is a rank. Special-token text is plain text.
 * Invalid UTF-8: the pattern only runs over valid UTF-8; each byte that is not
 * part of a valid sequence is its own piece (its single-byte token), so
 * decode(encode(x)) == x for every byte string.
 *
 * Training (data/bpe_train.c): see bpe_train below.
 *
 * Ownership: a struct tokenizer owns everything it points to until
 * tokenizer_free. Encoding uses the tokenizer's match data: one thread at a
 * time per tokenizer.
 */
#ifndef SUPKIT_TRAINER_TOKENIZER_H
#define SUPKIT_TRAINER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"

/* The benchmark's split pattern (GPT-4 style with \p{N}{1,2}). */
#define TOKENIZER_PATTERN_DEFAULT                                               \
	"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,2}| "    \
	"?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"
#define TOKENIZER_N_SPECIAL 4
/* Rank files larger than this are refused (cl100k_base is ~1.7 MB). */
#define TOKENIZER_MAX_RANK_FILE (64u << 20)
#define TOKENIZER_MAX_RANKS (1u << 22)
/* The longest token a token_bytes file may give: far above any BPE token of
 * real text (tens of bytes), a bound that refuses garbage lengths. */
#define TOKENIZER_MAX_TOKEN_BYTES (1u << 16)

/* A growable array of token ids. */
struct ids {
	uint32_t *v;
	size_t n, cap;
};
void ids_push(struct ids *a, uint32_t id);
void ids_free(struct ids *a);

/* A growable byte buffer. */
struct bytes {
	unsigned char *v;
	size_t n, cap;
};
void bytes_append(struct bytes *b, const void *p, size_t n);
void bytes_free(struct bytes *b);

struct rank_table;   /* bytes -> rank hash table (tokenizer.c) */

struct tokenizer {
	uint32_t n_ranks;          /* highest rank + 1 (holes allowed) */
	uint32_t n_vocab;          /* n_ranks + TOKENIZER_N_SPECIAL */
	uint32_t bos_id;           /* n_ranks (<|reserved_0|>) */
	unsigned char **tok;       /* n_ranks byte strings (NULL for a hole) */
	uint32_t *tok_len;         /* n_ranks lengths */
	struct rank_table *table;
	char *pattern;
	void *re;                  /* pcre2_code_8 */
	void *md;                  /* pcre2_match_data_8 */
};

/* Build from n byte strings, where tok[i] has rank i (a copy is made). The
 * pattern NULL means TOKENIZER_PATTERN_DEFAULT. Duplicate tokens are refused. */
int tokenizer_init(struct tokenizer *tk, unsigned char *const *tok, const uint32_t *len,
		   uint32_t n, const char *pattern, struct err *e);
/* Load a tiktoken-format rank file (gzip accepted); errors name file and line. */
int tokenizer_load(struct tokenizer *tk, const char *path, const char *pattern, struct err *e);
/* The same on the file's n bytes at data (path names it in messages). */
int tokenizer_load_mem(struct tokenizer *tk, const char *data, size_t size, const char *path, const char *pattern,
		       struct err *e);
void tokenizer_free(struct tokenizer *tk);

/* Append the ordinary encoding of text[0..len) to out. -1 only when the
 * pattern fails to run (e set). */
int tokenizer_encode(struct tokenizer *tk, const char *text, size_t len, struct ids *out,
		     struct err *e);
/* Pieces longer than this many bytes are merged with a heap (O(n log n));
 * shorter ones with tiktoken's plain scan. Same result either way; a knob
 * for the tests, which run both paths. Default 256. */
extern size_t tokenizer_heap_threshold;

/* Append the bytes of ids to out; an id >= n_vocab or a rank hole is refused
 * (e names its index). Specials decode to their text "<|reserved_i|>". */
int tokenizer_decode(const struct tokenizer *tk, const uint32_t *ids, size_t n,
		     struct bytes *out, struct err *e);

/* Split text by the pattern as the encoder does: fn(piece, len, ctx) for each
 * piece in order (invalid UTF-8 bytes one at a time). fn returns 0 or -1 to stop. */
int tokenizer_split(void *re, void *md, const char *text, size_t len,
		    int (*fn)(const char *piece, size_t len, void *ctx), void *ctx, struct err *e);
/* Compile a pattern (UTF, UCP, DOLLAR_ENDONLY; JIT when available). */
int tokenizer_compile(const char *pattern, void **re, void **md, struct err *e);
void tokenizer_compiled_free(void *re, void *md);

/* Write the ranks in tiktoken text format (atomic). */
int tokenizer_save_ranks(const struct tokenizer *tk, const char *path, struct err *e);

/* token_bytes file: "SKTOKBYT", u32 version 1, u32 V, then V u32 (all
 * little-endian): UTF-8 byte length of each token, 0 for the specials. */
int tokenizer_save_token_bytes(const struct tokenizer *tk, const char *path, struct err *e);
/* Write a token_bytes file of the n_vocab given lengths (atomic). */
int tokenizer_write_token_bytes(const char *path, const uint32_t *tb, uint32_t n_vocab, struct err *e);
/* Read a token_bytes file for BPB; *out (caller frees) has *n_vocab entries.
 * Refused, naming the file and the offset: a file larger than
 * TOKENIZER_MAX_TOKEN_BYTES_FILE, V <= TOKENIZER_N_SPECIAL, a special token
 * (the last TOKENIZER_N_SPECIAL ids) of non-zero length, a length above
 * TOKENIZER_MAX_TOKEN_BYTES, every length 0. */
#define TOKENIZER_MAX_TOKEN_BYTES_FILE (16 + 4u * TOKENIZER_MAX_RANKS + 64)
int tokenizer_token_bytes(const char *path, uint32_t **out, uint32_t *n_vocab, struct err *e);
/* The same on the file's len bytes at data (name in messages). */
int tokenizer_token_bytes_mem(const void *data, size_t len, const char *name, uint32_t **out,
			      uint32_t *n_vocab, struct err *e);

/* Train a byte-level BPE (bpe_train.c). Ranks 0..255 are the single bytes in
 * byte order; then merges up to n_ranks total, each the most frequent adjacent
 * pair of tokens over the pattern's pieces of all texts (counted with piece
 * multiplicity); ties go to the pair whose (left id, right id) is smallest.
 * Stops early when no pair is left (every piece is one token). texts: n buffers. Progress on stderr unless quiet. */
int bpe_train(const char *const *texts, const size_t *lens, size_t n, uint32_t n_ranks,
	      const char *pattern, int quiet, struct tokenizer *out, struct err *e);

#endif
