/* sub_stats.c: `supkit data stats` (man/supkit-data.1). */
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

int data_stats_main(int argc, char **argv)
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
	struct data_opts o;
	data_opts_init(&o);
	int i = data_parse(argc, argv, t, usage, &o);
	if (i >= argc)
		cli_usage_error("need at least one shard");
	struct err e = {0};
	struct tokenizer tk;
	int have_tk;
	if (data_corpus_tokenizer(&o, argv + i, argc - i, &tk, &have_tk, &e) < 0)
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
