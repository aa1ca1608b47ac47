/* sub_brown.c: `supkit data brown` (man/supkit-data.1). */
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

static int brown_name(const char *s)
{
	return strlen(s) == 4 && s[0] == 'c' && s[1] >= 'a' && s[1] <= 'r' && s[2] >= '0' &&
	       s[2] <= '9' && s[3] >= '0' && s[3] <= '9';
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int data_brown_main(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		{"output", 'o', "DIR", "write DIR/cXNN.txt, one plain-text document per corpus file"},
		{"quiet", 'q', NULL, "no summary on stderr"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data brown -o DIR BROWN_DIR\n"
			    "Turn the Brown corpus (form C: files ca01..cr09 of word/tag tokens) into plain text.";
	struct data_opts o;
	data_opts_init(&o);
	int i = data_parse(argc, argv, t, usage, &o);
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
