/* args.h: the command line of the supplements tools, where options may come
 * before or after the one operand ("supkit pack DIR -o OUT.zip").
 *
 * The options-anywhere parsing is lib/cli.h's cli_parse_operands ("--" ends
 * the options); this adds what the three tools share around it.
 * Reference: POSIX utility conventions; GNU getopt_long argument permutation.
 */
#ifndef SUPKIT_SUPPLEMENTS_ARGS_H
#define SUPKIT_SUPPLEMENTS_ARGS_H

#include "lib/cli.h"

/* The start of each supplements tool: name the program (err_prog), set
 * LC_CTYPE to C.UTF-8, parse argv (cli_parse_operands) and return its one
 * operand. An option error, a second operand ("unexpected operand '<it>'")
 * or none at all ("expected <what>") exits 2. */
const char *args_one_operand(int argc, char **argv, const char *prog, const struct cli_opt *opts,
			     const char *usage, cli_fn fn, void *ctx, const char *what);

#endif
