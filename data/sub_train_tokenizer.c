/* sub_train_tokenizer.c: `supkit data train-tokenizer` (man/supkit-data.1). */
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
#include "data/data_args.h"
#include "data/loader.h"
#include "data/shard.h"
#include "data/tokenizer.h"

int data_train_tokenizer_main(int argc, char **argv)
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
	struct data_opts o;
	data_opts_init(&o);
	int i = data_parse(argc, argv, t, usage, &o);
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
