/* cmd_data.c: supkit-data, the data tool: train-tokenizer, tokenize, encode,
 * decode, stats, overlap, batches, brown (docs/data.md; supkit-formats(5));
 * import-tokenizer is in sub_data_import.c.
 *
 * Thin: each subcommand parses its options, calls data/tokenizer.c,
 * bpe_train.c, corpus.c, data.c or shard.c, and reports; man/supkit-data.1
 * documents the commands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "lib/cli.h"
#include "lib/err.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/progress.h"
#include "lib/stream.h"
#include "lib/utf8.h"
#include "data/corpus.h"
#include "data/data.h"
#include "data/data_cmds.h"
#include "data/loader.h"
#include "data/shard.h"
#include "data/tokenizer.h"

enum {
	O_VOCAB = 256, O_PATTERN, O_FORMAT, O_DELIM, O_RANKS, O_VAL_FILES, O_VAL_EVERY,
	O_SHARD_TOKENS, O_SKIP_INVALID, O_FORCE, O_JSON, O_U32, O_TOKEN_BYTES, O_N, O_MAX_SHARE,
	O_MAX_DUP, O_SEQ_LEN, O_BATCH_ROWS, O_SEED, O_COUNT,
	O_COLUMN,
};

struct opts {
	int64_t vocab;
	const char *pattern, *ranks, *out, *token_bytes;
	struct corpus_opts corpus;
	int quiet, json, u32, skip_invalid, force;
	int64_t val_files, val_every, shard_tokens, n, max_dup;
	int64_t seq_len, batch_rows, seed, count;
	double max_share;
};

static int on_opt(int key, const char *arg, void *vctx, struct err *e)
{
	struct opts *o = vctx;
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

static void opts_init(struct opts *o)
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

/* v as 4 little-endian bytes at p (the int32/uint32 files' byte order) */
static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* Parse or exit 2; returns the index of the first operand. */
static int parse(int argc, char **argv, const struct cli_opt *t, const char *usage, struct opts *o)
{
	struct err e = {0};
	int first;
	if (cli_parse(argc, argv, t, usage, on_opt, o, &first, &e) < 0)
		cli_usage_error("%s", e.msg);
	return first;
}

#define OPT_PATTERN {"pattern", O_PATTERN, "REGEX", "split pattern (PCRE2; default: the benchmark's)"}
#define OPT_RANKS {"ranks", O_RANKS, "FILE", "rank file in tiktoken text format (gzip accepted)"}
#define OPT_CORPUS                                                                              \
	{"format", O_FORMAT, "FMT", "input format: auto (parquet by its magic, else by extension), text, " \
	 "jsonl, json, parquet"},                                                               \
	{"delim", O_DELIM, "STR", "text: documents separated by STR (default: one per file)"},   \
	{"column", O_COLUMN, "NAME", "parquet: the string column of the texts (default text)"}

/* ---- train-tokenizer ---- */

static int sub_train(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		{"vocab", O_VOCAB, "V", "vocabulary size incl. the 4 reserved specials (default 8192)"},
		OPT_PATTERN, OPT_CORPUS,
		{"output", 'o', "DIR", "write DIR/ranks.tiktoken, DIR/token_bytes.bin, DIR/tokenizer.json"},
		{"json", O_JSON, NULL, "print tokenizer.json and the files written as one JSON object"},
		{"quiet", 'q', NULL, "no progress, summary or list of files (errors only)"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data train-tokenizer [options] -o DIR CORPUS...\n"
			    "A CORPUS of - is read from standard input (as text unless --format says, or parquet\n"
			    "by its magic bytes).";
	struct opts o;
	opts_init(&o);
	int i = parse(argc, argv, t, usage, &o);
	if (!o.out || i >= argc)
		cli_usage_error("need -o DIR and at least one corpus file");
	cli_no_stdout(o.out, "-o DIR (train-tokenizer writes a folder)");
	struct err e = {0};
	struct corpus_texts tx = {0};
	struct corpus_counts c = {0};
	if (data_collect((const char *const *)argv + i, argc - i, &o.corpus, o.quiet, &tx, &c, &e) < 0) {
		corpus_texts_free(&tx);
		return err_report(&e);
	}
	double t0 = now_seconds();
	struct tokenizer tk;
	int rc = bpe_train((const char *const *)tx.v, tx.n, tx.k, (uint32_t)o.vocab - TOKENIZER_N_SPECIAL,
			   o.pattern, o.quiet, &tk, &e);
	corpus_texts_free(&tx);
	if (rc < 0)
		return err_report(&e);
	char *rp = path_join(o.out, "ranks.tiktoken"), *bp = path_join(o.out, "token_bytes.bin");
	char *jp = path_join(o.out, "tokenizer.json");
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "pattern", tk.pattern);
	cJSON_AddNumberToObject(j, "mergeable_ranks", tk.n_ranks);
	cJSON_AddNumberToObject(j, "vocab_size", tk.n_vocab);
	cJSON_AddNumberToObject(j, "bos_id", tk.bos_id);
	cJSON *sp = cJSON_AddArrayToObject(j, "special_tokens");
	for (int s = 0; s < TOKENIZER_N_SPECIAL; s++) {
		char name[32];
		snprintf(name, sizeof name, "<|reserved_%d|>", s);
		cJSON_AddItemToArray(sp, cJSON_CreateString(name));
	}
	cJSON_AddNumberToObject(j, "documents", (double)c.docs);
	cJSON_AddNumberToObject(j, "empty_documents", (double)c.empty);
	cJSON_AddNumberToObject(j, "null_rows", (double)c.nulls);
	cJSON_AddNumberToObject(j, "invalid_utf8_documents", (double)c.invalid_utf8);
	cJSON_AddNumberToObject(j, "bytes", (double)c.bytes);
	json_sort(j);
	rc = dir_make_all(o.out, &e);
	if (rc == 0)
		rc = tokenizer_save_ranks(&tk, rp, &e);
	if (rc == 0)
		rc = tokenizer_save_token_bytes(&tk, bp, &e);
	if (rc == 0)
		rc = json_write_file(jp, j, &e);
	if (rc == 0 && !o.quiet)
		fprintf(stderr, "%s: %u ranks + %d specials (V = %u) from %llu documents (%llu empty, %llu invalid UTF-8) in %.1f s\n",
			err_prog, tk.n_ranks, TOKENIZER_N_SPECIAL, tk.n_vocab, (unsigned long long)c.docs,
			(unsigned long long)c.empty, (unsigned long long)c.invalid_utf8, now_seconds() - t0);
	if (rc == 0 && o.json) {
		cJSON *files = cJSON_AddObjectToObject(j, "files");
		cJSON_AddStringToObject(files, "ranks", rp);
		cJSON_AddStringToObject(files, "token_bytes", bp);
		cJSON_AddStringToObject(files, "tokenizer", jp);
		json_print_stdout(j);
	} else if (rc == 0 && !o.quiet) {
		printf("%s\n%s\n%s\n", rp, bp, jp);
	}
	cJSON_Delete(j);
	free(rp);
	free(bp);
	free(jp);
	tokenizer_free(&tk);
	return rc < 0 ? err_report(&e) : EXIT_OK;
}

/* ---- tokenize ---- */

static int sub_tokenize(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		OPT_RANKS, OPT_PATTERN, OPT_CORPUS,
		{"output", 'o', "DIR", "output folder (train_NNNN.bin, val_NNNN.bin, token_bytes.bin, data.json)"},
		{"val-files", O_VAL_FILES, "K", "the last K input files go to validation"},
		{"val-every", O_VAL_EVERY, "N", "else every N-th document goes to validation (default 100; 0: none)"},
		{"shard-tokens", O_SHARD_TOKENS, "N", "start a new shard past N tokens (default 100000000)"},
		{"skip-invalid", O_SKIP_INVALID, NULL, "drop invalid UTF-8 documents (default: encode their bytes)"},
		{"force", O_FORCE, NULL, "replace an existing output folder"},
		{"json", O_JSON, NULL, "print the report (data.json) on stdout"},
		{"quiet", 'q', NULL, "no progress, notes or table (errors only; --json still printed)"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data tokenize [options] --ranks FILE -o DIR CORPUS...\n"
			    "A CORPUS of - is read from standard input (as text unless --format says, or parquet\n"
			    "by its magic bytes).";
	struct opts o;
	opts_init(&o);
	int i = parse(argc, argv, t, usage, &o);
	if (!o.ranks || !o.out || i >= argc)
		cli_usage_error("need --ranks FILE, -o DIR and at least one corpus file");
	cli_no_stdout(o.out, "-o DIR (tokenize writes a folder)");
	struct err e = {0};
	struct tokenizer tk;
	if (tokenizer_load(&tk, o.ranks, o.pattern, &e) < 0)
		return err_report(&e);
	struct tokenize_opts to = {(const char *const *)argv + i, argc - i, o.corpus, (int)o.val_files,
				   (uint64_t)o.val_every, (uint64_t)o.shard_tokens, o.skip_invalid,
				   o.force, o.quiet};
	struct tokenize_report r;
	int rc = data_tokenize(&tk, &to, o.out, &r, &e);
	tokenizer_free(&tk);
	if (rc < 0)
		return err_report(&e);
	if ((r.counts.empty || r.counts.invalid_utf8) && !o.quiet)
		fprintf(stderr, "%s: %llu empty documents skipped; %llu invalid UTF-8 documents %s\n",
			err_prog, (unsigned long long)r.counts.empty,
			(unsigned long long)r.counts.invalid_utf8,
			o.skip_invalid ? "skipped" : "kept (bytes encoded as they are)");
	if (r.counts.nulls && !o.quiet)
		fprintf(stderr, "%s: %llu null rows skipped\n", err_prog, (unsigned long long)r.counts.nulls);
	if (o.json) {
		cJSON *j = tokenize_report_json(&r);
		json_print_stdout(j);
		cJSON_Delete(j);
	} else if (!o.quiet) {
		printf("split  shards  documents  tokens  bytes\n");
		const char *nm[2] = {"train", "val"};
		for (int s = 0; s < 2; s++)
			printf("%-5s  %6d  %9llu  %llu  %llu\n", nm[s], r.shards[s],
			       (unsigned long long)r.docs[s], (unsigned long long)r.tokens[s],
			       (unsigned long long)r.bytes[s]);
	}
	return EXIT_OK;
}

/* ---- encode / decode ---- */

/* encode and decode: parse (exit 2 unless --ranks and one operand, the
 * operand named by what), then load the tokenizer. Returns the operand's
 * index, or -1 with e set. */
static int parse_one_with_ranks(int argc, char **argv, const struct cli_opt *t, const char *usage,
				const char *what, struct opts *o, struct tokenizer *tk, struct err *e)
{
	opts_init(o);
	int i = parse(argc, argv, t, usage, o);
	if (!o->ranks || i != argc - 1)
		cli_usage_error("need --ranks FILE and one %s file", what);
	if (tokenizer_load(tk, o->ranks, o->pattern, e) < 0)
		return -1;
	return i;
}

/* encode's and decode's output: -o FILE or standard output ("-" or none). */
static int to_stdout(const struct opts *o)
{
	return !o->out || stream_is_std(o->out);
}

/* The --json object of encode and decode: input, output (null when the
 * result is in the object), tokens and bytes of text. */
static cJSON *codec_json(const char *input, const struct opts *o, size_t tokens, size_t bytes)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "input", input);
	if (to_stdout(o))
		cJSON_AddNullToObject(j, "output");
	else
		cJSON_AddStringToObject(j, "output", o->out);
	cJSON_AddNumberToObject(j, "tokens", (double)tokens);
	cJSON_AddNumberToObject(j, "bytes", (double)bytes);
	return j;
}

static int sub_encode(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		OPT_RANKS, OPT_PATTERN,
		{"u32", O_U32, NULL, "write raw little-endian uint32 ids instead of one id a line"},
		{"output", 'o', "FILE", "write to FILE (atomically) instead of stdout (-)"},
		{"json", O_JSON, NULL, "print one JSON object: the counts, and the ids unless -o FILE"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data encode --ranks FILE [--pattern REGEX] [--u32] [-o FILE] [--json] TEXTFILE\n"
			    "TEXTFILE - reads standard input.";
	struct opts o;
	struct err e = {0};
	struct tokenizer tk;
	int i = parse_one_with_ranks(argc, argv, t, usage, "text", &o, &tk, &e);
	if (i < 0)
		return err_report(&e);
	if (o.json && o.u32 && to_stdout(&o)) {
		tokenizer_free(&tk);
		cli_usage_error("--json without -o FILE prints the ids in the JSON object: no --u32");
	}
	if (o.u32 && !o.json && to_stdout(&o) && stream_stdout_binary("uint32 ids", " or give -o FILE", &e) < 0) {
		tokenizer_free(&tk);
		return err_report(&e);
	}
	char *text;
	size_t n;
	if (stream_read_all(argv[i], CORPUS_MAX_FILE, &text, &n, &e) < 0) {
		tokenizer_free(&tk);
		return err_report(&e);
	}
	struct ids ids = {0};
	int rc = tokenizer_encode(&tk, text, n, &ids, &e);
	free(text);
	struct bytes out = {0};
	for (size_t k = 0; rc == 0 && k < ids.n; k++) {
		if (o.u32) {
			unsigned char b[4];
			put_le32(b, ids.v[k]);
			bytes_append(&out, b, 4);
		} else {
			char s[16];
			int l = snprintf(s, sizeof s, "%u\n", ids.v[k]);
			bytes_append(&out, s, (size_t)l);
		}
	}
	if (rc == 0 && !(o.json && to_stdout(&o)))
		rc = stream_write_all(o.out, out.v, out.n, &e);
	if (rc == 0 && o.json) {
		cJSON *j = codec_json(argv[i], &o, ids.n, n);
		if (to_stdout(&o)) {
			cJSON *a = cJSON_AddArrayToObject(j, "ids");
			for (size_t k = 0; k < ids.n; k++)
				cJSON_AddItemToArray(a, cJSON_CreateNumber(ids.v[k]));
		} else {
			cJSON_AddStringToObject(j, "format", o.u32 ? "u32" : "text");
		}
		json_print_stdout(j);
		cJSON_Delete(j);
	}
	bytes_free(&out);
	ids_free(&ids);
	tokenizer_free(&tk);
	return rc < 0 ? err_report(&e) : EXIT_OK;
}

static int sub_decode(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		OPT_RANKS, OPT_PATTERN,
		{"u32", O_U32, NULL, "read raw little-endian uint32 ids instead of one id a line"},
		{"output", 'o', "FILE", "write to FILE (atomically) instead of stdout (-)"},
		{"json", O_JSON, NULL, "print one JSON object: the counts, and the text unless -o FILE"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data decode --ranks FILE [--u32] [-o FILE] [--json] IDSFILE\n"
			    "IDSFILE - reads standard input.";
	struct opts o;
	struct err e = {0};
	struct tokenizer tk;
	int i = parse_one_with_ranks(argc, argv, t, usage, "ids", &o, &tk, &e);
	if (i < 0)
		return err_report(&e);
	char *d;
	size_t n;
	struct ids ids = {0};
	struct bytes out = {0};
	int rc = stream_read_all(argv[i], CORPUS_MAX_FILE, &d, &n, &e);
	if (rc == 0) {
		rc = data_ids_parse(argv[i], d, n, o.u32, &ids, &e);
		free(d);
	}
	if (rc == 0 && tokenizer_decode(&tk, ids.v, ids.n, &out, &e) < 0) {
		err_prefix(&e, "'%s'", argv[i]);
		rc = -1;
	}
	if (rc == 0 && !(o.json && to_stdout(&o)))
		rc = stream_write_all(o.out, out.v, out.n, &e);
	if (rc == 0 && o.json) {
		cJSON *j = codec_json(argv[i], &o, ids.n, out.n);
		cJSON_AddBoolToObject(j, "valid_utf8", utf8_valid((const char *)out.v, out.n));
		if (to_stdout(&o))
			cJSON_AddItemToObject(j, "text", data_text_json(out.v, out.n));
		json_print_stdout(j);
		cJSON_Delete(j);
	}
	bytes_free(&out);
	ids_free(&ids);
	tokenizer_free(&tk);
	return rc < 0 ? err_report(&e) : EXIT_OK;
}

/* ---- stats ---- */

/* stats and overlap: with --ranks, the tokenizer corpora are read through
 * (*loaded set); else an operand that is parquet by its magic is refused
 * (exit 2). Returns 0, or -1 with e. */
static int corpus_tokenizer(const struct opts *o, char *const *ops, int n, struct tokenizer *tk, int *loaded,
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

static int sub_stats(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		{"token-bytes", O_TOKEN_BYTES, "FILE", "token_bytes file: also report bytes and bytes per token"},
		{"ranks", O_RANKS, "FILE", "rank file: operands that are not shards are corpora, tokenized with it"},
		OPT_PATTERN, OPT_CORPUS,
		{"json", O_JSON, NULL, "print one JSON object"},
		{"quiet", 'q', NULL, "no progress while reading corpora"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data stats [options] SHARD...\n"
			    "       supkit data stats --ranks FILE [options] SHARD|CORPUS...\n"
			    "With --ranks an operand that is not a token shard is a corpus (parquet, text, JSON\n"
			    "Lines, JSON), counted as supkit data tokenize would shard it.";
	struct opts o;
	opts_init(&o);
	int i = parse(argc, argv, t, usage, &o);
	if (i >= argc)
		cli_usage_error("need at least one shard");
	struct err e = {0};
	struct tokenizer tk;
	int have_tk;
	if (corpus_tokenizer(&o, argv + i, argc - i, &tk, &have_tk, &e) < 0)
		return err_report(&e);
	uint32_t *tb = NULL, ntb = 0;
	if (o.token_bytes && tokenizer_token_bytes(o.token_bytes, &tb, &ntb, &e) < 0) {
		if (have_tk)
			tokenizer_free(&tk);
		return err_report(&e);
	}
	cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "shards");
	struct shard_stats tot = {0};
	if (!o.json)
		printf("%-40s %12s %9s %8s %s\n", "shard", "tokens", "documents", "max_doc",
		       tb ? "bytes/token" : "");
	int rc = 0;
	for (; i < argc && rc == 0; i++) {
		struct shard_stats s;
		struct corpus_counts cc;
		int corpus = have_tk && !data_is_shard(argv[i]);
		if (corpus)
			rc = data_stats_corpus(argv[i], &o.corpus, &tk, tb, ntb, o.quiet, &s, &cc, &e);
		else
			rc = data_stats(argv[i], tb, ntb, &s, &e);
		if (rc < 0)
			break;
		tot.tokens += s.tokens;
		tot.docs += s.docs;
		tot.bytes += s.bytes;
		tot.text_tokens += s.text_tokens;
		if (s.max_doc > tot.max_doc)
			tot.max_doc = s.max_doc;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "path", argv[i]);
		cJSON_AddStringToObject(x, "input", corpus ? "corpus" : "shard");
		cJSON_AddNumberToObject(x, "tokens", (double)s.tokens);
		cJSON_AddNumberToObject(x, "documents", (double)s.docs);
		cJSON_AddNumberToObject(x, "max_document_tokens", (double)s.max_doc);
		cJSON_AddNumberToObject(x, "vocab_size", s.vocab_size);
		cJSON_AddNumberToObject(x, "bos_id", s.bos_id);
		if (corpus) {
			cJSON_AddNumberToObject(x, "empty_documents", (double)cc.empty);
			cJSON_AddNumberToObject(x, "null_rows", (double)cc.nulls);
			cJSON_AddNumberToObject(x, "invalid_utf8_documents", (double)cc.invalid_utf8);
			cJSON_AddNumberToObject(x, "text_bytes", (double)cc.bytes);
		}
		if (tb) {
			cJSON_AddNumberToObject(x, "bytes", (double)s.bytes);
			cJSON_AddNumberToObject(x, "bytes_per_token",
						s.text_tokens ? (double)s.bytes / (double)s.text_tokens : 0);
		}
		cJSON_AddItemToArray(arr, x);
		if (!o.json) {
			printf("%-40s %12llu %9llu %8llu", argv[i], (unsigned long long)s.tokens,
			       (unsigned long long)s.docs, (unsigned long long)s.max_doc);
			if (tb)
				printf(" %.4f", s.text_tokens ? (double)s.bytes / (double)s.text_tokens : 0);
			printf("\n");
		}
	}
	if (rc == 0) {
		cJSON_AddNumberToObject(j, "tokens", (double)tot.tokens);
		cJSON_AddNumberToObject(j, "documents", (double)tot.docs);
		if (tb) {
			cJSON_AddNumberToObject(j, "bytes", (double)tot.bytes);
			cJSON_AddNumberToObject(j, "bytes_per_token",
						tot.text_tokens ? (double)tot.bytes / (double)tot.text_tokens : 0);
		}
		if (o.json) {
			json_sort(j);
			json_print_stdout(j);
		} else {
			printf("%-40s %12llu %9llu %8llu", "total", (unsigned long long)tot.tokens,
			       (unsigned long long)tot.docs, (unsigned long long)tot.max_doc);
			if (tb)
				printf(" %.4f", tot.text_tokens ? (double)tot.bytes / (double)tot.text_tokens : 0);
			printf("\n");
		}
	}
	cJSON_Delete(j);
	free(tb);
	if (have_tk)
		tokenizer_free(&tk);
	return rc < 0 ? err_report(&e) : EXIT_OK;
}

/* ---- overlap ---- */

static int sub_overlap(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		{"n", O_N, "N", "n-gram length in tokens (default 13)"},
		{"max-share", O_MAX_SHARE, "X", "exit 1 when the shared n-gram share exceeds X"},
		{"max-dup", O_MAX_DUP, "K", "exit 1 when more than K validation documents are duplicates"},
		{"ranks", O_RANKS, "FILE", "rank file: inputs that are not shards are corpora, tokenized with it"},
		OPT_PATTERN, OPT_CORPUS,
		{"json", O_JSON, NULL, "print one JSON object"},
		{"quiet", 'q', NULL, "no progress while reading corpora"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data overlap [options] TRAIN_SHARD... -- VAL_SHARD...\n"
			    "       supkit data overlap --ranks FILE [options] TRAIN... -- VAL...\n"
			    "With --ranks an input that is not a token shard is a corpus (parquet, text, JSON\n"
			    "Lines, JSON), its documents tokenized as supkit data tokenize would shard them.";
	/* split at "--" before option parsing (options go before the shards) */
	int sep = -1;
	for (int k = 1; k < argc; k++)
		if (!strcmp(argv[k], "--")) {
			sep = k;
			break;
		}
	struct opts o;
	opts_init(&o);
	int i = parse(sep < 0 ? argc : sep, argv, t, usage, &o);
	if (sep < 0 || i >= sep || sep + 1 >= argc)
		cli_usage_error("need TRAIN_SHARD... -- VAL_SHARD...");
	struct err e = {0};
	struct overlap_src src = {NULL, o.corpus, o.quiet};
	struct tokenizer tk;
	int have_tk;
	if (corpus_tokenizer(&o, argv + i, sep - i, &tk, &have_tk, &e) < 0 ||
	    (!have_tk && corpus_tokenizer(&o, argv + sep + 1, argc - sep - 1, &tk, &have_tk, &e) < 0))
		return err_report(&e);
	src.tk = have_tk ? &tk : NULL;
	struct overlap_report r;
	int rc = data_overlap((const char *const *)argv + i, sep - i, (const char *const *)argv + sep + 1,
			      argc - sep - 1, (int)o.n, &src, &r, &e);
	if (have_tk)
		tokenizer_free(&tk);
	if (rc < 0)
		return err_report(&e);
	double share = r.val_grams ? (double)r.shared_grams / (double)r.val_grams : 0;
	int bad = (o.max_share >= 0 && share > o.max_share) ||
		  (o.max_dup >= 0 && r.dup_docs > (uint64_t)o.max_dup);
	if (o.json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "n", r.n);
		cJSON_AddNumberToObject(j, "train_documents", (double)r.train_docs);
		cJSON_AddNumberToObject(j, "val_documents", (double)r.val_docs);
		cJSON_AddNumberToObject(j, "duplicate_documents", (double)r.dup_docs);
		cJSON_AddNumberToObject(j, "val_ngrams", (double)r.val_grams);
		cJSON_AddNumberToObject(j, "shared_ngrams", (double)r.shared_grams);
		cJSON_AddNumberToObject(j, "shared_share", share);
		cJSON_AddBoolToObject(j, "ok", !bad);
		json_sort(j);
		json_print_stdout(j);
		cJSON_Delete(j);
	} else {
		printf("train documents      %llu\n", (unsigned long long)r.train_docs);
		printf("val documents        %llu\n", (unsigned long long)r.val_docs);
		printf("duplicate documents  %llu\n", (unsigned long long)r.dup_docs);
		printf("val %d-grams         %llu\n", r.n, (unsigned long long)r.val_grams);
		printf("shared %d-grams      %llu (%.6f)\n", r.n, (unsigned long long)r.shared_grams, share);
	}
	if (bad)
		fprintf(stderr, "%s: leakage over the limit: %llu duplicate documents, %.6f of %d-grams shared\n",
			err_prog, (unsigned long long)r.dup_docs, share, r.n);
	return bad ? EXIT_CHECK : EXIT_OK;
}

/* ---- batches ---- */

/* The trainer's token stream, exported: COUNT batches of the loader
 * (data/loader.h) over the shards, each its inputs (B,T) then its
 * targets (B,T), int32 little-endian, row-major. With the run's seq_len,
 * batch_rows and seed these are the micro-batches supkit train consumes, in
 * order (grad_accum of them a step), so another implementation can train on
 * the same tokens. */
static int sub_batches(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		{"seq-len", O_SEQ_LEN, "T", "tokens a row (default 2048, the config's seq_len)"},
		{"batch-rows", O_BATCH_ROWS, "B", "rows a batch (default 64, the config's batch_rows)"},
		{"seed", O_SEED, "S", "the run's seed (default 42, the config's; 0: the original's order)"},
		{"count", O_COUNT, "N", "number of batches to write (steps x grad_accum for a whole run)"},
		{"output", 'o', "FILE", "write the batches to FILE (atomically), or - (standard output)"},
		{"json", O_JSON, NULL, "print a JSON summary on stdout"},
		{"quiet", 'q', NULL, "no progress or summary on stderr"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data batches [options] --count N -o FILE TRAIN_SHARD...";
	struct opts o;
	opts_init(&o);
	int i = parse(argc, argv, t, usage, &o);
	if (!o.out || o.count <= 0 || i >= argc)
		cli_usage_error("need --count N, -o FILE and at least one train shard");
	for (int k = i; k < argc; k++)
		cli_no_stdin(argv[k], "TRAIN_SHARD (shards are mapped from files)");
	const int piped = stream_is_std(o.out);
	if (piped && o.json)
		cli_usage_error("--json cannot go with -o - (standard output carries the batches)");
	const int T = (int)o.seq_len, B = (int)o.batch_rows;
	const size_t n = (size_t)B * (size_t)T;
	if (n > ((size_t)1 << 30))
		cli_usage_error("--batch-rows x --seq-len is %zu tokens; at most 2^30", n);
	struct err e = {0};
	if (piped && stream_stdout_binary("batches", " or give -o FILE", &e) < 0)
		return err_report(&e);
	struct loader ld;
	if (loader_open((const char *const *)(argv + i), argc - i, T, B, (uint64_t)o.seed, &ld, &e) < 0)
		return err_report(&e);
	int32_t *in = xmalloc(n * sizeof *in), *tg = xmalloc(n * sizeof *tg);
	uint8_t *buf = xmalloc(2 * n * 4);
	struct atomic_file af = {0};
	int rc = piped ? 0 : atomic_open(&af, o.out, &e);
	FILE *fp = piped ? stdout : af.fp;
	struct progress pr;
	progress_init(&pr, o.quiet);
	progress_start(&pr, (double)o.count, 0, "batches");
	uint64_t epoch = 0;
	for (int64_t b = 0; b < o.count && rc == 0; b++) {
		epoch = loader_next(&ld, in, tg);
		for (size_t k = 0; k < 2 * n; k++)
			put_le32(buf + 4 * k, (uint32_t)(k < n ? in[k] : tg[k - n]));
		if (fwrite(buf, 1, 2 * n * 4, fp) != 2 * n * 4) {
			rc = piped ? err_errno(&e, EXIT_SYS, "cannot write to standard output")
				   : err_errno(&e, EXIT_SYS, "cannot write '%s'", o.out);
			if (!piped)
				atomic_abort(&af);
		}
		progress_at(&pr, b + 1 == o.count, (double)(b + 1), "batch %lld/%lld  epoch %llu",
			    (long long)(b + 1), (long long)o.count, (unsigned long long)epoch);
	}
	progress_done(&pr);
	if (rc == 0 && piped && fflush(stdout) != 0)
		rc = err_errno(&e, EXIT_SYS, "cannot write to standard output");
	else if (rc == 0 && !piped)
		rc = atomic_commit(&af, &e);
	if (rc == 0 && o.json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "path", o.out);
		cJSON_AddNumberToObject(j, "batches", (double)o.count);
		cJSON_AddNumberToObject(j, "batch_rows", B);
		cJSON_AddNumberToObject(j, "seq_len", T);
		cJSON_AddNumberToObject(j, "seed", (double)o.seed);
		cJSON_AddNumberToObject(j, "epoch", (double)epoch);
		cJSON_AddNumberToObject(j, "bytes", (double)o.count * 8.0 * (double)n);
		json_sort(j);
		json_print_stdout(j);
		cJSON_Delete(j);
	} else if (rc == 0 && !o.quiet) {
		fprintf(stderr, "%s: %lld batches of %d x %d (epoch %llu at the end) in '%s'\n", err_prog,
			(long long)o.count, B, T, (unsigned long long)epoch, o.out);
	}
	free(in);
	free(tg);
	free(buf);
	loader_close(&ld);
	return rc < 0 ? err_report(&e) : EXIT_OK;
}

/* ---- brown ---- */

static int brown_name(const char *s)
{
	return strlen(s) == 4 && s[0] == 'c' && s[1] >= 'a' && s[1] <= 'r' && s[2] >= '0' &&
	       s[2] <= '9' && s[3] >= '0' && s[3] <= '9';
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int sub_brown(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		{"output", 'o', "DIR", "write DIR/cXNN.txt, one plain-text document per corpus file"},
		{"quiet", 'q', NULL, "no summary on stderr"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data brown -o DIR BROWN_DIR\n"
			    "Turn the Brown corpus (form C: files ca01..cr09 of word/tag tokens) into plain text.";
	struct opts o;
	opts_init(&o);
	int i = parse(argc, argv, t, usage, &o);
	if (!o.out || i != argc - 1)
		cli_usage_error("need -o DIR and the corpus folder");
	cli_no_stdout(o.out, "-o DIR (brown writes a folder)");
	cli_no_stdin(argv[i], "BROWN_DIR (a folder)");
	struct err e = {0};
	DIR *d = opendir(argv[i]);
	if (!d) {
		err_errno(&e, EXIT_SYS, "cannot open '%s'", argv[i]);
		return err_report(&e);
	}
	char **names = NULL;
	size_t nn = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (brown_name(de->d_name)) {
			names = xrealloc(names, (nn + 1) * sizeof *names);
			names[nn++] = xstrdup(de->d_name);
		}
	closedir(d);
	if (nn == 0) {
		free(names);
		err_set(&e, EXIT_USAGE, "'%s': no Brown corpus files (ca01..cr09)", argv[i]);
		return err_report(&e);
	}
	qsort(names, nn, sizeof *names, cmp_str);
	int rc = dir_make_all(o.out, &e);
	uint64_t bytes = 0;
	for (size_t k = 0; k < nn && rc == 0; k++) {
		char *in = path_join(argv[i], names[k]);
		char *leaf = xasprintf("%s.txt", names[k]);
		char *outp = path_join(o.out, leaf);
		char *buf;
		size_t n;
		rc = file_read_all(in, 64u << 20, &buf, &n, &e);
		if (rc == 0) {
			struct bytes b = {0};
			brown_detag(buf, n, &b);
			rc = file_write_atomic(outp, b.v, b.n, &e);
			bytes += b.n;
			bytes_free(&b);
			free(buf);
		}
		free(in);
		free(leaf);
		free(outp);
	}
	if (rc == 0 && !o.quiet)
		fprintf(stderr, "%s: %zu files, %llu bytes of text in '%s'\n", err_prog, nn,
			(unsigned long long)bytes, o.out);
	for (size_t k = 0; k < nn; k++)
		free(names[k]);
	free(names);
	return rc < 0 ? err_report(&e) : EXIT_OK;
}

static const struct cli_sub subs[] = {
	{"train-tokenizer", sub_train, "train a byte-level BPE tokenizer on corpus files"},
	{"tokenize", sub_tokenize, "encode corpus files into train and validation token shards"},
	{"encode", sub_encode, "encode one text file to token ids"},
	{"decode", sub_decode, "decode token ids back to bytes"},
	{"stats", sub_stats, "tokens, documents and bytes per token of shards"},
	{"overlap", sub_overlap, "leakage check: duplicate documents and shared n-grams"},
	{"batches", sub_batches, "export the trainer's token stream (its loader's batches)"},
	{"brown", sub_brown, "turn the tagged Brown corpus into plain text"},
	{"import-tokenizer", data_import_tokenizer_main, "autoresearch's tokenizer.pkl to a tokenizer folder"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return cli_dispatch(argc, argv, "data", "a data", subs);
}
