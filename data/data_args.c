/* data_args.c: the `supkit data` subcommands' shared options and helpers
 * (data_args.h). */
#include <stdlib.h>
#include <string.h>

#include "lib/cli.h"
#include "lib/err.h"
#include "lib/json.h"
#include "lib/stream.h"
#include "data/corpus.h"
#include "data/data_args.h"
#include "data/shard.h"
#include "data/tokenizer.h"

static int on_opt(int key, const char *arg, void *vctx, struct err *e)
{
	struct data_opts *o = vctx;
	switch (key) {
	case O_VOCAB: return cli_parse_i64(arg, 260, SHARD_MAX_VOCAB, &o->vocab, "--vocab", e);
	case O_PATTERN: o->pattern = arg; return 0;
	case O_FORMAT: return corpus_format_parse(arg, &o->corpus.format, e);
	case O_DELIM: o->corpus.delim = arg; return 0;
	case O_COLUMN: o->corpus.column = arg; return 0;
	case 'q': o->quiet = 1; return 0;
	case O_RANKS:
		cli_no_stdin(arg, "--ranks (a rank file)");
		o->ranks = arg;
		return 0;
	case 'o': o->out = arg; return 0;
	case O_VAL_FILES: return cli_parse_i64(arg, 0, 1 << 30, &o->val_files, "--val-files", e);
	case O_VAL_EVERY: return cli_parse_i64(arg, 0, INT64_MAX, &o->val_every, "--val-every", e);
	case O_SHARD_TOKENS:
		return cli_parse_i64(arg, 1, (int64_t)SHARD_MAX_TOKENS, &o->shard_tokens, "--shard-tokens", e);
	case O_SKIP_INVALID: o->skip_invalid = 1; return 0;
	case O_FORCE: o->force = 1; return 0;
	case O_JSON: o->json = 1; return 0;
	case O_U32: o->u32 = 1; return 0;
	case O_TOKEN_BYTES:
		cli_no_stdin(arg, "--token-bytes (a token_bytes file)");
		o->token_bytes = arg;
		return 0;
	case O_N: return cli_parse_i64(arg, 1, 1024, &o->n, "--n", e);
	case O_MAX_SHARE:
		if (cli_parse_double(arg, &o->max_share, "--max-share", e) < 0)
			return -1;
		if (!(o->max_share >= 0 && o->max_share <= 1))
			return err_set(e, EXIT_USAGE, "--max-share must be in [0, 1]");
		return 0;
	case O_MAX_DUP: return cli_parse_i64(arg, 0, INT64_MAX, &o->max_dup, "--max-dup", e);
	case O_SEQ_LEN: return cli_parse_i64(arg, 1, 1 << 20, &o->seq_len, "--seq-len", e);
	case O_BATCH_ROWS: return cli_parse_i64(arg, 1, 1 << 20, &o->batch_rows, "--batch-rows", e);
	case O_SEED: return cli_parse_i64(arg, 0, INT64_MAX, &o->seed, "--seed", e);
	case O_COUNT: return cli_parse_i64(arg, 1, INT64_MAX, &o->count, "--count", e);
	}
	return err_set(e, EXIT_USAGE, "unhandled option");
}

void data_opts_init(struct data_opts *o)
{
	memset(o, 0, sizeof *o);
	o->vocab = 8192;
	o->val_every = 100;
	o->shard_tokens = 100000000;
	o->n = 13;
	o->max_share = -1;
	o->max_dup = -1;
	o->seq_len = 2048;
	o->batch_rows = 64;
	o->seed = 42;
}


/* Parse or exit 2; returns the index of the first operand. */
int data_parse(int argc, char **argv, const struct cli_opt *t, const char *usage, struct data_opts *o)
{
	struct err e = {0};
	int first;
	if (cli_parse(argc, argv, t, usage, on_opt, o, &first, &e) < 0)
		cli_usage_error("%s", e.msg);
	return first;
}


/* encode and decode: parse (exit 2 unless --ranks and one operand, the
 * operand named by what), then load the tokenizer. Returns the operand's
 * index, or -1 with e set. */
int data_parse_one(int argc, char **argv, const struct cli_opt *t, const char *usage,
				const char *what, struct data_opts *o, struct tokenizer *tk, struct err *e)
{
	data_opts_init(o);
	int i = data_parse(argc, argv, t, usage, o);
	if (!o->ranks || i != argc - 1)
		cli_usage_error("need --ranks FILE and one %s file", what);
	if (tokenizer_load(tk, o->ranks, o->pattern, e) < 0)
		return -1;
	return i;
}

/* encode's and decode's output: -o FILE or standard output ("-" or none). */
int data_to_stdout(const struct data_opts *o)
{
	return !o->out || stream_is_std(o->out);
}

/* The --json object of encode and decode: input, output (null when the
 * result is in the object), tokens and bytes of text. */
cJSON *data_codec_json(const char *input, const struct data_opts *o, size_t tokens, size_t bytes)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "input", input);
	if (data_to_stdout(o))
		cJSON_AddNullToObject(j, "output");
	else
		cJSON_AddStringToObject(j, "output", o->out);
	cJSON_AddNumberToObject(j, "tokens", (double)tokens);
	cJSON_AddNumberToObject(j, "bytes", (double)bytes);
	return j;
}

/* stats and overlap: with --ranks, the tokenizer corpora are read through
 * (*loaded set); else an operand that is parquet by its magic is refused
 * (exit 2). Returns 0, or -1 with e. */
int data_corpus_tokenizer(const struct data_opts *o, char *const *ops, int n, struct tokenizer *tk, int *loaded,
			    struct err *e)
{
	*loaded = 0;
	if (!o->ranks) {
		for (int k = 0; k < n; k++) {
			cli_no_stdin(ops[k], "a shard (shards are mapped from files; give --ranks FILE to read a corpus)");
			if (corpus_is_parquet(ops[k]))
				cli_usage_error("'%s' is a parquet file, not a token shard: give --ranks FILE to read "
						"it as a corpus", ops[k]);
		}
		return 0;
	}
	if (tokenizer_load(tk, o->ranks, o->pattern, e) < 0)
		return -1;
	*loaded = 1;
	return 0;
}
