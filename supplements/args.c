/* args.c: the one-operand command line of the supplements tools (see
 * args.h); the parsing itself is lib/cli.c's cli_parse_operands. */
#include "supplements/args.h"

#include <locale.h>
#include <stdlib.h>

const char *args_one_operand(int argc, char **argv, const char *prog, const struct cli_opt *opts,
			     const char *usage, cli_fn fn, void *ctx, const char *what)
{
	cli_set_prog(prog);
	setlocale(LC_CTYPE, "C.UTF-8");
	int n;
	char **ops = cli_parse_operands(argc, argv, opts, usage, fn, ctx, &n);
	const char *op = n > 0 ? ops[0] : NULL, *extra = n > 1 ? ops[1] : NULL;
	free(ops);
	if (extra)
		cli_usage_error("unexpected operand '%s'", extra);
	if (!op)
		cli_usage_error("expected %s", what);
	return op;
}
