/* args.h: option parsing for the supplements tools, where options may come
 * before or after the operands ("supkit pack DIR -o OUT.zip").
 *
 * lib/cli.h parses up to the first operand (subcommand style); this repeats
 * cli_parse after each operand. "--" ends the options.
 * Reference: POSIX utility conventions; GNU getopt_long argument permutation.
 */
#ifndef SUPKIT_SUPPLEMENTS_ARGS_H
#define SUPKIT_SUPPLEMENTS_ARGS_H

#include "lib/cli.h"

/* Parse argv with opts (see cli_parse); operands are collected, in order,
 * into ops (room for max; more is a usage error). Returns 0 with *n_ops set,
 * or -1 with e set by fn. */
int args_parse(int argc, char **argv, const struct cli_opt *opts, const char *usage, cli_fn fn, void *ctx,
	       char **ops, int max, int *n_ops, struct err *e);

/* The start of each supplements tool: name the program (err_prog), set
 * LC_CTYPE to C.UTF-8, parse argv with args_parse and return its one operand.
 * An option error, a second operand or none at all exits 2 (the last with
 * "expected <what>"). */
const char *args_one_operand(int argc, char **argv, const char *prog, const struct cli_opt *opts,
			     const char *usage, cli_fn fn, void *ctx, const char *what);

#endif
