/* sub_data_import.c: `supkit data import-tokenizer`: autoresearch's
 * tokenizer.pkl (a pickled tiktoken Encoding, read as data: nothing in it is
 * executed) and, optionally, its token_bytes.pt, to a supkit tokenizer
 * folder (data/tokenizer_import.h). Prints the three paths, or with
 * --json the folder's tokenizer.json record; a summary on stderr unless
 * --quiet. */
#include <stdio.h>
#include <stdlib.h>

#include "lib/cli.h"
#include "lib/err.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "data/data_cmds.h"
#include "data/tokenizer_import.h"

enum { O_TOKEN_BYTES = 256, O_FORCE, O_JSON, O_QUIET };

struct iopts {
	struct tokenizer_import_opts imp;
	int json, quiet;
};

static int on_opt(int key, const char *arg, void *vc, struct err *e)
{
	struct iopts *o = vc;
	(void)e;
	switch (key) {
	case O_TOKEN_BYTES: o->imp.token_bytes = arg; return 0;
	case O_FORCE: o->imp.force = 1; return 0;
	case O_JSON: o->json = 1; return 0;
	case 'q': o->quiet = 1; return 0;
	case 'o': o->imp.out = arg; return 0;
	}
	return err_set(e, EXIT_USAGE, "unhandled option");
}

int data_import_tokenizer_main(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		{"token-bytes", O_TOKEN_BYTES, "FILE", "autoresearch's token_bytes.pt: must equal the table computed from the ranks"},
		{"output", 'o', "DIR", "write DIR/ranks.tiktoken, DIR/token_bytes.bin, DIR/tokenizer.json"},
		{"force", O_FORCE, NULL, "replace an existing output folder"},
		{"json", O_JSON, NULL, "print the tokenizer.json record instead of the paths"},
		{"quiet", 'q', NULL, "errors only: no summary on stderr"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data import-tokenizer [options] -o DIR TOKENIZER.pkl\n"
			    "\n"
			    "Import autoresearch's tokenizer (a pickled tiktoken Encoding, read as data:\n"
			    "nothing in it is executed) as a supkit tokenizer folder.";
	struct iopts o = {0};
	struct err e = {0};
	int first;
	if (cli_parse(argc, argv, t, usage, on_opt, &o, &first, &e) < 0)
		cli_usage_error("%s", e.msg);
	if (!o.imp.out || first != argc - 1)
		cli_usage_error("need -o DIR and one tokenizer.pkl");
	o.imp.pkl = argv[first];
	struct tokenizer_import_report r;
	if (tokenizer_import(&o.imp, &r, &e) < 0)
		return err_report(&e);
	if (!o.quiet) {
		char proto[16];
		snprintf(proto, sizeof proto, r.protocol >= 2 ? "%d" : "0 or 1", r.protocol);
		fprintf(stderr, "%s: '%s' (pickle protocol %s): %u ranks + 4 specials (V = %u, BOS %u); "
			"token_bytes %s (%u tokens count other than their byte length)\n",
			err_prog, r.name, proto, r.n_ranks, r.n_vocab, r.bos_id,
			r.token_bytes_checked ? "from the ranks, equal to the given file" : "from the ranks",
			r.non_utf8_tokens);
		if (!r.pattern_default)
			fprintf(stderr, "%s: the split pattern is not the default: give it with --pattern "
				"(it is in tokenizer.json)\n", err_prog);
	}
	if (o.json) {
		cJSON *j = tokenizer_import_json(&o.imp, &r);
		json_print_stdout(j);
		cJSON_Delete(j);
	} else {
		char *p[3] = {path_join(o.imp.out, "ranks.tiktoken"), path_join(o.imp.out, "token_bytes.bin"),
			      path_join(o.imp.out, "tokenizer.json")};
		for (int i = 0; i < 3; i++) {
			printf("%s\n", p[i]);
			free(p[i]);
		}
	}
	tokenizer_import_report_free(&r);
	return EXIT_OK;
}
