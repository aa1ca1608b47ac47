/* args.c: options before or after operands (see args.h). */
#include "supplements/args.h"

#include <locale.h>
#include <string.h>

int args_parse(int argc, char **argv, const struct cli_opt *opts, const char *usage, cli_fn fn, void *ctx,
	       char **ops, int max, int *n_ops, struct err *e)
{
	int base = 0, n = 0, only_ops = 0;
	*n_ops = 0;
	while (base < argc) {
		int ind = 1;
		if (!only_ops) {
			/* argv[base] plays argv[0]: the program name or the last operand */
			if (cli_parse(argc - base, argv + base, opts, usage, fn, ctx, &ind, e) < 0)
				return -1;
			if (base + ind - 1 < argc && ind >= 2 && !strcmp(argv[base + ind - 1], "--"))
				only_ops = 1;
		}
		int k = base + ind;
		if (k >= argc)
			break;
		if (!only_ops && !strcmp(argv[k], "--")) {
			only_ops = 1;
			base = k;
			continue;
		}
		if (n == max)
			cli_usage_error("unexpected operand '%s'", argv[k]);
		ops[n++] = argv[k];
		base = k;
	}
	*n_ops = n;
	return 0;
}

const char *args_one_operand(int argc, char **argv, const char *prog, const struct cli_opt *opts,
			     const char *usage, cli_fn fn, void *ctx, const char *what)
{
	cli_set_prog(prog);
	setlocale(LC_CTYPE, "C.UTF-8");
	struct err e = {0};
	char *ops[1];
	int n;
	if (args_parse(argc, argv, opts, usage, fn, ctx, ops, 1, &n, &e) < 0)
		cli_usage_error("%s", e.msg);
	if (n != 1)
		cli_usage_error("expected %s", what);
	return ops[0];
}
