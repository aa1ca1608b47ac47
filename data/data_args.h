/* data_args.h: what the `supkit data` subcommands (data/sub_*.c) share:
 * one options table's keys and values, its parser, and the helpers that more
 * than one subcommand uses. Each subcommand lives in its own data/sub_*.c
 * (thin: parse, validate, call data/, report) and takes argv from its name
 * on; cmd_data.c dispatches. */
#ifndef SUPKIT_DATA_DATA_ARGS_H
#define SUPKIT_DATA_DATA_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/cli.h"
#include "lib/err.h"
#include "lib/json.h"
#include "data/corpus.h"
#include "data/tokenizer.h"

enum {
	O_VOCAB = 256, O_PATTERN, O_FORMAT, O_DELIM, O_RANKS, O_VAL_FILES, O_VAL_EVERY,
	O_SHARD_TOKENS, O_SKIP_INVALID, O_FORCE, O_JSON, O_U32, O_TOKEN_BYTES, O_N, O_MAX_SHARE,
	O_MAX_DUP, O_SEQ_LEN, O_BATCH_ROWS, O_SEED, O_COUNT,
	O_COLUMN,
};

struct data_opts {
	int64_t vocab;
	const char *pattern, *ranks, *out, *token_bytes;
	struct corpus_opts corpus;
	int quiet, json, u32, skip_invalid, force;
	int64_t val_files, val_every, shard_tokens, n, max_dup;
	int64_t seq_len, batch_rows, seed, count;
	double max_share;
};

/* The defaults: --vocab 8192, --val-every 100, --shard-tokens 1e8, --n 13,
 * --seq-len 2048, --batch-rows 64, --seed 42; --max-share, --max-dup off. */
void data_opts_init(struct data_opts *o);

/* Parse or exit 2; returns the index of the first operand. */
int data_parse(int argc, char **argv, const struct cli_opt *t, const char *usage, struct data_opts *o);

/* encode and decode: parse (exit 2 unless --ranks and one operand, the
 * operand named by what), then load the tokenizer. Returns the operand's
 * index, or -1 with e set. */
int data_parse_one(int argc, char **argv, const struct cli_opt *t, const char *usage, const char *what,
		   struct data_opts *o, struct tokenizer *tk, struct err *e);

/* encode's and decode's output: -o FILE or standard output ("-" or none). */
int data_to_stdout(const struct data_opts *o);

/* The --json object of encode and decode: input, output (null when the
 * result is in the object), tokens and bytes of text. */
cJSON *data_codec_json(const char *input, const struct data_opts *o, size_t tokens, size_t bytes);

/* stats and overlap: with --ranks, the tokenizer corpora are read through
 * (*loaded set); else an operand that is parquet by its magic is refused
 * (exit 2). Returns 0, or -1 with e. */
int data_corpus_tokenizer(const struct data_opts *o, char *const *ops, int n, struct tokenizer *tk, int *loaded,
			  struct err *e);

/* v as 4 little-endian bytes at p (the int32/uint32 files' byte order) */
static inline void data_put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

#define OPT_PATTERN {"pattern", O_PATTERN, "REGEX", "split pattern (PCRE2; default: the benchmark's)"}
#define OPT_RANKS {"ranks", O_RANKS, "FILE", "rank file in tiktoken text format (gzip accepted)"}
#define OPT_CORPUS                                                                              \
	{"format", O_FORMAT, "FMT", "input format: auto (parquet by its magic, else by extension), text, " \
	 "jsonl, json, parquet"},                                                               \
	{"delim", O_DELIM, "STR", "text: documents separated by STR (default: one per file)"},   \
	{"column", O_COLUMN, "NAME", "parquet: the string column of the texts (default text)"}

/* The subcommands (data/sub_*.c). */
int data_train_tokenizer_main(int argc, char **argv);
int data_tokenize_main(int argc, char **argv);
int data_encode_main(int argc, char **argv);
int data_decode_main(int argc, char **argv);
int data_stats_main(int argc, char **argv);
int data_overlap_main(int argc, char **argv);
int data_batches_main(int argc, char **argv);
int data_brown_main(int argc, char **argv);
int data_import_tokenizer_main(int argc, char **argv);

#endif
