/* corpus.h: reading text corpora as documents.
 *
 * Inputs: plain text (the whole file is one document, or documents separated
 * by a delimiter string), JSON Lines (one object a line with a string field
 * "text"), a JSON array of strings, and parquet files (the string column
 * `column`, default "text", one document a row: data/parquet.h, streamed row
 * group by row group; null rows are counted and skipped). Empty documents
 * are counted and not passed on, in every format (a parquet file's empty
 * strings too, so that a parquet file and the same texts as JSON Lines give
 * the same documents); documents that are not valid UTF-8 are counted and
 * passed on with valid_utf8 = 0 (the caller decides). Also the Brown corpus
 * (form C, `word/tag` tokens) turned back into plain sentences.
 *
 * Format: CORPUS_AUTO takes a file with the parquet magic "PAR1" at both
 * ends as parquet whatever its name, else goes by the extension (.parquet,
 * .jsonl, .json, else text). Binary input is refused, never tokenized:
 * given as text, JSON Lines or JSON, a file that is parquet by its magic
 * bytes, or starts with the magic of gzip, zip, zstd, xz or bzip2 (corpora
 * are read uncompressed), or with a UTF-16 byte order mark, or holds a NUL
 * byte anywhere (binary data, never UTF-8 text) gets a one-line error
 * naming the file (and the NUL's offset).
 *
 * Leaves out: other JSON field names, compressed text inputs, streaming of
 * text inputs larger than CORPUS_MAX_FILE (text files are read whole; a
 * parquet file from standard input is read whole too, up to that size).
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
	CORPUS_AUTO = 0,   /* parquet by its magic, else by extension: .parquet, .jsonl, .json, else text */
	CORPUS_TEXT,
	CORPUS_JSONL,
	CORPUS_JSON,
	CORPUS_PARQUET
};

struct corpus_opts {
	enum corpus_format format;
	const char *delim;   /* text only: document separator (e.g. "\n\n"); NULL = one per file */
	const char *column;  /* parquet only: the string column of texts; NULL = "text" */
	/* When set, called as a file is read with how far: pos of size bytes
	 * (text formats: after each document, pos its end in the file; JSON
	 * arrays: the documents' bytes so far; parquet: before the first row
	 * group and after each, size the file's and pos its share of it by the
	 * row groups' column chunks read), ctx corpus_read_file's. */
	void (*at)(uint64_t pos, uint64_t size, void *ctx);
};

struct corpus_counts {
	uint64_t docs;          /* non-empty documents passed on */
	uint64_t empty;         /* empty documents (not passed on) */
	uint64_t invalid_utf8;  /* passed on with valid_utf8 = 0 */
	uint64_t bytes;         /* bytes of the documents passed on */
	uint64_t nulls;         /* parquet: null rows (not passed on) */
};

/* Called once per non-empty document, in file order; doc is valid only
 * during the call. Returns 0 or -1 (e set). */
typedef int (*corpus_fn)(const char *doc, size_t len, int valid_utf8, void *ctx, struct err *e);

/* Read one corpus file ("-": standard input, lib/stream.h) and call fn for
 * each document; counts accumulate into c. Errors name the file and the line
 * (JSONL), entry (JSON array), byte offset (a NUL) or row group (parquet);
 * EXIT_USAGE for refused input, EXIT_SYS for I/O. */
int corpus_read_file(const char *path, const struct corpus_opts *o, corpus_fn fn, void *ctx,
		     struct corpus_counts *c, struct err *e);
/* The same on the file's n bytes at buf (path names it in messages and,
 * with CORPUS_AUTO, gives the format by its extension; parquet by its
 * magic bytes). */
int corpus_read_mem(const char *path, const char *buf, size_t n, const struct corpus_opts *o, corpus_fn fn,
		    void *ctx, struct corpus_counts *c, struct err *e);
/* Parse "auto", "text", "jsonl", "json", "parquet". */
int corpus_format_parse(const char *s, enum corpus_format *out, struct err *e);

/* 1 when the file at path (not "-") has the parquet magic "PAR1" at both
 * ends; 0 otherwise or when it cannot be read. */
int corpus_is_parquet(const char *path);

/* utf8_valid (well-formed UTF-8): lib/utf8.h. */

/* Brown corpus form C to plain text: every whitespace-separated `word/tag`
 * becomes `word` (split at the last '/'), `` and '' become ", sentences
 * (the corpus's non-empty lines) are joined with single spaces, without a
 * space before closing punctuation (. , ; : ? ! ) ] ' ") or after an opening
 * one (( [ and an opening quote), one sentence a line. Appends to out. */
void brown_detag(const char *in, size_t n, struct bytes *out);

#endif
