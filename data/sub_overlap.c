/* sub_overlap.c: `supkit data overlap` (man/supkit-data.1). */
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

int data_overlap_main(int argc, char **argv)
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
	struct data_opts o;
	data_opts_init(&o);
	int i = data_parse(sep < 0 ? argc : sep, argv, t, usage, &o);
	if (sep < 0 || i >= sep || sep + 1 >= argc)
		cli_usage_error("need TRAIN_SHARD... -- VAL_SHARD...");
	struct err e = {0};
	struct overlap_src src = {NULL, o.corpus, o.quiet};
	struct tokenizer tk;
	int have_tk;
	if (data_corpus_tokenizer(&o, argv + i, sep - i, &tk, &have_tk, &e) < 0 ||
	    (!have_tk && data_corpus_tokenizer(&o, argv + sep + 1, argc - sep - 1, &tk, &have_tk, &e) < 0))
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
