/* tiktoken_pkl.h: a pickled tiktoken Encoding, read as data (the
 * tokenizer.pkl that autoresearch's prepare.py writes with pickle.dump).
 *
 * tiktoken pickles an Encoding by the default object protocol with
 * Encoding.__getstate__'s state: {"name": str, "pat_str": str,
 * "mergeable_ranks": {bytes: int}, "special_tokens": {str: int}}. So the
 * file is the class reference tiktoken.core Encoding, made empty (NEWOBJ in
 * protocols 2 to 5, copyreg._reconstructor in 0 and 1), then BUILD of that
 * dict; protocols 0 to 2 spell each bytes key as _codecs.encode(str,
 * 'latin1'). data/pickle.c reads it under tt_policy (that class only, as a
 * class); nothing is imported or called.
 *
 * Checked: the root is that object with a dict state; the state has the
 * four keys (each once) and perhaps explicit_n_vocab (None or an int; when
 * non-zero, the counts and the highest id must agree with it, as tiktoken's
 * __init__ asserts), nothing else; names are str, ranks and ids ints in
 * [0, TT_MAX_ID), token bytes non-empty, no rank given twice. A state that is
 * a str (tiktoken pickles a registered encoding by its name alone) is
 * refused: such a file holds no ranks. Errors name the file and the byte
 * offset of the value at fault.
 *
 * Leaves out: repeated token bytes and special names (the caller's
 * tokenizer refuses them), holes in the ranks (kept as NULL tokens).
 *
 * Ownership: struct tt_encoding owns its strings and arrays; tt_free.
 */
#ifndef SUPKIT_DATA_TIKTOKEN_PKL_H
#define SUPKIT_DATA_TIKTOKEN_PKL_H

#include <stddef.h>
#include <stdint.h>
#include "data/pickle.h"
#include "lib/err.h"

#define TT_MAX_ID (1u << 22)   /* ranks and special ids are below this */

struct tt_encoding {
	char *name;              /* the Encoding's name */
	char *pat_str;           /* its split pattern */
	uint32_t n_ranks;        /* highest rank + 1 */
	uint32_t n_mergeable;    /* entries of mergeable_ranks (n_ranks less the holes) */
	unsigned char **tok;     /* n_ranks: the bytes of each rank, NULL for a hole */
	uint32_t *tok_len;       /* n_ranks */
	uint32_t n_special;
	char **special;          /* n_special names, in the pickle's order */
	uint32_t *special_id;    /* n_special ids */
	int64_t explicit_n_vocab;   /* 0 when absent or None */
	int protocol;            /* the pickle's protocol */
};

/* The policy: tiktoken.core Encoding as a class, nothing else. */
extern const struct pk_policy tt_policy;

/* Read data[0..len) (name used in messages) into *t (tt_free it); on
 * failure *t is empty. EXIT_USAGE for refused input. */
int tt_read_mem(const void *data, size_t len, const char *name, struct tt_encoding *t,
		struct err *e);
/* The same from a file (at most PK_MAX_FILE bytes). */
int tt_read_file(const char *path, struct tt_encoding *t, struct err *e);
/* The same from a parsed document (name for messages). */
int tt_from_doc(const struct pk_doc *d, const char *name, struct tt_encoding *t, struct err *e);
void tt_free(struct tt_encoding *t);

#endif
