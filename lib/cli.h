/* cli.h: command-line plumbing shared by every tool.
 *
 * Options are declared once as a table; the same table drives getopt_long and
 * prints the OPTIONS part of --help, so help cannot drift from the parser.
 * Number parsing is strict (whole string, range checked): no atoi.
 */
#ifndef SUPKIT_CLI_H
#define SUPKIT_CLI_H

#include <stdint.h>
#include <stdio.h>
#include "err.h"

#define SUPKIT_VERSION "0.1.0"

struct cli_opt {
	const char *name;   /* long name without "--" */
	int key;            /* short letter, or a value >= 256 for long-only */
	const char *arg;    /* argument name shown in help, NULL for a flag */
	const char *help;   /* one line */
};

/* Set the program name used in messages (err_prog). */
void cli_set_prog(const char *name);

/* Parse argv with the table (terminated by an entry with name == NULL).
 * Calls fn(key, optarg, ctx) for each option; fn returns 0 or -1 (with e set).
 * --help (-h) prints usage then the table and exits 0; --version prints
 * cli_print_version's line and exits 0; an unknown option or a
 * missing argument prints one line and exits 2. Options may come before or
 * after operands (GNU getopt order; "--" ends the options): on return argv
 * is permuted and *optind_out is the index of the first operand. */
typedef int (*cli_fn)(int key, const char *arg, void *ctx, struct err *e);
int cli_parse(int argc, char **argv, const struct cli_opt *opts, const char *usage,
	      cli_fn fn, void *ctx, int *optind_out, struct err *e);
/* cli_parse repeated after each operand, so that options may come before,
 * between or after the operands even where getopt stops at the first one
 * (POSIXLY_CORRECT); "--" ends the options. Returns a fresh NULL-terminated
 * array (caller frees) of the operands in order, *n_out their count. An error
 * from fn exits 2 with its message (cli_usage_error). */
char **cli_parse_operands(int argc, char **argv, const struct cli_opt *opts, const char *usage,
			  cli_fn fn, void *ctx, int *n_out);
/* Print "usage: ...\n\noptions:\n..." for the table, then -h/--help and
 * --version (every table has them; their keys are reserved). */
void cli_print_help(FILE *f, const char *usage, const struct cli_opt *opts);
#define CLI_KEY_VERSION 0x10000   /* --version's key in cli_parse */
/* Print "supkit-<tool> <version>" on stdout, the tool named by err_prog
 * (without a subcommand). */
void cli_print_version(void);

/* Exit 2 with "'-' (standard input) is not supported for <what>" when arg
 * is "-" (an operand or option that needs a file or folder, lib/stream.h);
 * cli_no_stdout the same for outputs ("(standard output)"). */
void cli_no_stdin(const char *arg, const char *what);
void cli_no_stdout(const char *arg, const char *what);

/* Strict number parsing; on error e names what (e.g. "--steps"). */
int cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out, const char *what, struct err *e);
int cli_parse_double(const char *s, double *out, const char *what, struct err *e);

/* Exit with status 2 and "<prog>: <msg>\n<prog>: try '<prog> --help'" */
void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Git-style dispatch for a tool made of subcommands ("supkit <tool> <sub>").
 * subs ends with an entry whose name is NULL. With no argument: usage on
 * stderr, returns EXIT_USAGE; --help/-h: usage on stdout, EXIT_OK; --version:
 * "supkit-<tool> <version>", EXIT_OK (a subcommand's --version too, through
 * cli_parse). Otherwise sets err_prog to
 * "supkit-<tool> <sub>" and returns the subcommand's fn(argc - 1, argv + 1);
 * an unknown name exits 2 with "'<name>' is not <kind> subcommand" (kind
 * carries its article: "an audit", "a data"). Usage lists the subcommands
 * under "subcommands:", names padded to one more than the longest, then
 * -h/--help and --version under "options:". */
struct cli_sub {
	const char *name;
	int (*fn)(int, char **);
	const char *what;
};
int cli_dispatch(int argc, char **argv, const char *tool, const char *kind,
		 const struct cli_sub *subs);

/* 1 when stderr is a terminal (progress uses one updating line then). */
int cli_stderr_is_tty(void);

#endif
