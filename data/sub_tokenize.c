/* sub_tokenize.c: `supkit data tokenize` (man/supkit-data.1). */
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

int data_tokenize_main(int argc, char **argv)
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
	struct data_opts o;
	data_opts_init(&o);
	int i = data_parse(argc, argv, t, usage, &o);
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
