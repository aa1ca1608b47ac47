/* tokenizer_import.h: a supkit tokenizer folder from autoresearch's
 * tokenizer (`supkit data import-tokenizer`).
 *
 * autoresearch's prepare.py trains with rustbpe, builds a tiktoken Encoding
 * (name "rustbpe", its split pattern, mergeable ranks 0..V-5, specials
 * <|reserved_0..3|> with the ids V-4..V-1) and writes it with pickle.dump
 * to tokenizer.pkl; token_bytes.pt (torch.save of an int32 tensor) holds,
 * for each id t, len(enc.decode([t]).encode("utf-8")), or 0 when that text
 * is one of the specials. enc.decode replaces bytes that are not valid
 * UTF-8, so a token that is not valid UTF-8 on its own counts 3 bytes per
 * U+FFFD (lib/utf8.h utf8_replaced_len), not its byte length.
 *
 * The import reads tokenizer.pkl as data (data/tiktoken_pkl.h: nothing is
 * executed), requires the layout supkit's tokenizers have (ranks 0..n-1
 * without holes, exactly the 4 specials <|reserved_i|> = n + i), builds the
 * tokenizer (the pattern must compile under PCRE2; tokens must be distinct),
 * computes the token_bytes table by autoresearch's rule and, when
 * token_bytes.pt is given (data/torch_pt.h), requires it to equal that
 * table. It writes DIR/ranks.tiktoken, DIR/token_bytes.bin and
 * DIR/tokenizer.json in a temporary folder beside DIR and renames it into
 * place: a refused input leaves no folder.
 *
 * Leaves out: other special tokens or ids (supkit's shards, loader and BOS
 * assume these 4), holes in the ranks.
 */
#ifndef SUPKIT_DATA_TOKENIZER_IMPORT_H
#define SUPKIT_DATA_TOKENIZER_IMPORT_H

#include <stdint.h>
#include <cjson/cJSON.h>
#include "data/tiktoken_pkl.h"
#include "lib/err.h"
#include "lib/sha256.h"
#include "data/tokenizer.h"

struct tokenizer_import_opts {
	const char *pkl;           /* tokenizer.pkl */
	const char *token_bytes;   /* token_bytes.pt, or NULL: the table computed from the ranks */
	const char *out;           /* the folder to write */
	int force;                 /* replace an existing folder */
};

struct tokenizer_import_report {
	char *name;                /* the Encoding's name (owned) */
	char *pattern;             /* its split pattern (owned) */
	uint32_t n_ranks, n_vocab, bos_id;
	int protocol;              /* the pickle's protocol */
	int pattern_default;       /* 1 when the pattern is TOKENIZER_PATTERN_DEFAULT */
	int token_bytes_checked;   /* 1 when token_bytes.pt was read and agreed */
	uint32_t non_utf8_tokens;  /* tokens whose table entry is not their byte length */
	char pkl_sha256[SHA256_HEX_LEN + 1];
	char token_bytes_sha256[SHA256_HEX_LEN + 1];   /* "" without token_bytes.pt */
};

/* Build *tk (tokenizer_free it) from a read Encoding: ranks without holes,
 * the 4 specials at n_ranks + i, the pattern compiled. name (the file) is
 * used in messages. */
int tokenizer_from_tiktoken(const struct tt_encoding *t, const char *name, struct tokenizer *tk,
			    struct err *e);

/* autoresearch's token_bytes of every id of tk into tb (tk->n_vocab
 * entries): the UTF-8 length of the token's bytes decoded with
 * replacement, 0 for the specials and for a token whose text is a
 * special's name. */
void tokenizer_benchmark_token_bytes(const struct tokenizer *tk, uint32_t *tb);

/* The whole import (see above); *r filled on success (free with
 * tokenizer_import_report_free). EXIT_USAGE for refused input, EXIT_SYS for
 * I/O errors. */
int tokenizer_import(const struct tokenizer_import_opts *o, struct tokenizer_import_report *r,
		     struct err *e);
void tokenizer_import_report_free(struct tokenizer_import_report *r);

/* The record written as DIR/tokenizer.json (sorted keys). */
cJSON *tokenizer_import_json(const struct tokenizer_import_opts *o,
			     const struct tokenizer_import_report *r);

#endif
