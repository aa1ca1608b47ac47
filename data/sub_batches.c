/* sub_batches.c: `supkit data batches` (man/supkit-data.1). */
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


/* The trainer's token stream, exported: COUNT batches of the loader
 * (data/loader.h) over the shards, each its inputs (B,T) then its
 * targets (B,T), int32 little-endian, row-major. With the run's seq_len,
 * batch_rows and seed these are the micro-batches supkit train consumes, in
 * order (grad_accum of them a step), so another implementation can train on
 * the same tokens. */
int data_batches_main(int argc, char **argv)
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
	struct data_opts o;
	data_opts_init(&o);
	int i = data_parse(argc, argv, t, usage, &o);
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
			data_put_le32(buf + 4 * k, (uint32_t)(k < n ? in[k] : tg[k - n]));
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
