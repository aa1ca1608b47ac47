/* data.h: the work behind `supkit data`: tokenizing corpora into
 * train/validation shards, reading corpora for tokenizer training, shard
 * and corpus statistics, and the train/validation leakage check. The
 * command (cmd_data.c) only parses and reports. Corpora are read by
 * data/corpus.h (text, JSON Lines, JSON arrays, parquet; binary input
 * refused).
 *
 * Validation split: with val_files = K > 0 the last K input files go wholly
 * to validation; otherwise, counting kept documents from 1 over all inputs in
 * order, document i goes to validation when i % val_every == 0 (val_every =
 * 0: no validation shard).
 *
 * Output folder: train_0000.bin, train_0001.bin, ... (a new shard every
 * shard_tokens tokens, at a document boundary), val_0000.bin...,
 * token_bytes.bin (the tokenizer's: where supkit train looks by default),
 * data.json (the report). Built in a temporary folder beside it and renamed
 * into place.
 *
 * Progress: over the inputs' bytes, after each document of a text input and
 * each row group of a parquet one.
 *
 * Leaves out: parallel encoding, appending to existing shards.
 */
#ifndef SUPKIT_TRAINER_DATA_H
#define SUPKIT_TRAINER_DATA_H

#include <stdint.h>
#include <cjson/cJSON.h>
#include "lib/err.h"
#include "data/corpus.h"
#include "data/tokenizer.h"

struct tokenize_opts {
	const char *const *inputs;
	int n_inputs;
	struct corpus_opts corpus;
	int val_files;            /* last K files to validation (0: use val_every) */
	uint64_t val_every;       /* every N-th document to validation (0: none) */
	uint64_t shard_tokens;    /* start a new shard past this many tokens */
	int skip_invalid;         /* drop invalid UTF-8 documents (counted) instead of encoding them */
	int force;                /* replace an existing output folder */
	int quiet;
};

struct tokenize_report {
	struct corpus_counts counts;
	uint64_t skipped_invalid;
	uint64_t docs[2], tokens[2], bytes[2];   /* [0] train, [1] validation */
	int shards[2];
	uint32_t vocab_size, bos_id;
};

/* Move the finished folder tmp to out (a temporary folder beside it, from
 * dir_temp_beside): an existing out is refused unless force, then replaced
 * (moved aside, removed after the rename). Gives tmp the umask's mode. */
int data_replace_dir(const char *tmp, const char *out, int force, struct err *e);

int data_tokenize(struct tokenizer *tk, const struct tokenize_opts *o, const char *out_dir,
		  struct tokenize_report *r, struct err *e);
cJSON *tokenize_report_json(const struct tokenize_report *r);

/* The documents of corpus files, copied (for tokenizer training). */
struct corpus_texts {
	char **v;
	size_t *n;
	size_t k, cap;
};
/* Read every input's documents into t (appended; corpus_texts_free it),
 * counts into c, with progress over the inputs' bytes unless quiet. */
int data_collect(const char *const *inputs, int n, const struct corpus_opts *o, int quiet, struct corpus_texts *t,
		 struct corpus_counts *c, struct err *e);
void corpus_texts_free(struct corpus_texts *t);

struct shard_stats {
	uint64_t tokens, docs, max_doc;
	uint64_t bytes;           /* sum of token_bytes (when given) */
	uint64_t text_tokens;     /* tokens with token_bytes > 0 */
	uint32_t vocab_size, bos_id;
};

/* Statistics of one shard; token_bytes may be NULL (then bytes stay 0). */
int data_stats(const char *path, const uint32_t *token_bytes, uint32_t n_token_bytes,
	       struct shard_stats *s, struct err *e);
/* The same of a corpus file as data_tokenize would shard it with tk (each
 * document BOS and its ids; nothing written), its counts (empty, null,
 * invalid UTF-8 documents) in *cc; progress unless quiet. A vocabulary over
 * SHARD_MAX_VOCAB is refused, as for shards. */
int data_stats_corpus(const char *path, const struct corpus_opts *o, struct tokenizer *tk, const uint32_t *tb,
		      uint32_t ntb, int quiet, struct shard_stats *s, struct corpus_counts *cc, struct err *e);
/* 1 when path is a token shard by its magic (SHARD_MAGIC), else 0. */
int data_is_shard(const char *path);

struct overlap_report {
	uint64_t train_docs, val_docs;
	uint64_t dup_docs;        /* validation documents identical to a training document */
	uint64_t val_grams;       /* validation n-grams (with multiplicity) */
	uint64_t shared_grams;    /* of those, also in training */
	int n;                    /* n-gram length (13) */
};

/* Where overlap's inputs that are not shards come from: corpora read with
 * corpus and tokenized with tk (a document's tokens as a shard would hold
 * them). tk NULL: every input is a shard. */
struct overlap_src {
	struct tokenizer *tk;
	struct corpus_opts corpus;
	int quiet;                /* no progress while reading corpora */
};

/* Documents are compared by SHA-256 of their tokens; n-grams by a 64-bit hash
 * of their n tokens (within documents, BOS excluded). src may be NULL. */
int data_overlap(const char *const *train, int n_train, const char *const *val, int n_val, int n,
		 const struct overlap_src *src, struct overlap_report *r, struct err *e);

/* decode's input: token ids as text (one decimal id a line, decimal
 * digits only, at most 23, below 2^32; CR LF too, empty lines skipped) or, with u32, raw little-endian uint32s, appended to
 * out. -1 with e naming path and the line or offset. */
int data_ids_parse(const char *path, const char *d, size_t n, int u32, struct ids *out, struct err *e);
/* Decoded bytes b[0..n) as a JSON string: valid UTF-8 as it is, each byte of
 * an invalid sequence, and NUL, as U+FFFD (JSON text is UTF-8, and cJSON's
 * strings end at NUL). Caller cJSON_Delete()s. */
cJSON *data_text_json(const unsigned char *b, size_t n);

#endif
