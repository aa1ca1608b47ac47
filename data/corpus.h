/* corpus.h: reading text corpora as documents (issue 6, SPEC section 4).
 *
 * Inputs: plain text (the whole file is one document, or documents separated
 * by a delimiter string), JSON Lines (one object a line with a string field
 * "text"), a JSON array of strings. Empty documents are counted and not
 * passed on; documents that are not valid UTF-8 are counted and passed on
 * with valid_utf8 = 0 (the caller decides). Also the Brown corpus (form C,
 * `word/tag` tokens) turned back into plain sentences.
 *
 * Leaves out: other JSON field names, compressed inputs, streaming of inputs
 * larger than CORPUS_MAX_FILE (whole files are read).
 */
#ifndef SUPKIT_TRAINER_CORPUS_H
#define SUPKIT_TRAINER_CORPUS_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"
#include "lib/utf8.h"
#include "data/tokenizer.h"

#define CORPUS_MAX_FILE (2ull << 30) /* 2 GiB per input file */

enum corpus_format {
	CORPUS_AUTO = 0,   /* by extension: .jsonl -> JSONL, .json -> JSON array, else text */
	CORPUS_TEXT,
	CORPUS_JSONL,
	CORPUS_JSON
};

struct corpus_opts {
	enum corpus_format format;
	const char *delim;   /* text only: document separator (e.g. "\n\n"); NULL = one per file */
};

struct corpus_counts {
	uint64_t docs;          /* non-empty documents passed on */
	uint64_t empty;         /* empty documents (not passed on) */
	uint64_t invalid_utf8;  /* passed on with valid_utf8 = 0 */
	uint64_t bytes;         /* bytes of the documents passed on */
};

/* Called once per non-empty document, in file order. Returns 0 or -1 (e set). */
typedef int (*corpus_fn)(const char *doc, size_t len, int valid_utf8, void *ctx, struct err *e);

/* Read one corpus file ("-": standard input, lib/stream.h) and call fn for
 * each document; counts accumulate into c. Errors name the file and the line
 * (JSONL) or entry (JSON array). */
int corpus_read_file(const char *path, const struct corpus_opts *o, corpus_fn fn, void *ctx,
		     struct corpus_counts *c, struct err *e);
/* Parse "auto", "text", "jsonl", "json". */
int corpus_format_parse(const char *s, enum corpus_format *out, struct err *e);

/* utf8_valid (well-formed UTF-8): lib/utf8.h. */

/* Brown corpus form C to plain text: every whitespace-separated `word/tag`
 * becomes `word` (split at the last '/'), `` and '' become ", sentences
 * (the corpus's non-empty lines) are joined with single spaces, without a
 * space before closing punctuation (. , ; : ? ! ) ] ' ") or after an opening
 * one (( [ and an opening quote), one sentence a line. Appends to out. */
void brown_detag(const char *in, size_t n, struct bytes *out);

#endif
