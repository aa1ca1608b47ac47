/* cli.c: option tables over getopt_long, strict numbers (see cli.h). */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cli_set_prog(const char *name)
{
	const char *s = strrchr(name, '/');
	err_prog = s ? s + 1 : name;
}

void cli_print_help(FILE *f, const char *usage, const struct cli_opt *opts)
{
	fprintf(f, "%s", usage);
	if (usage[0] && usage[strlen(usage) - 1] != '\n')
		fputc('\n', f);
	fprintf(f, "\noptions:\n");
	for (const struct cli_opt *o = opts; o && o->name; o++) {
		char left[96];
		int n = 0;
		if (o->key > 0 && o->key < 256)
			n = snprintf(left, sizeof left, "  -%c, --%s", o->key, o->name);
		else
			n = snprintf(left, sizeof left, "      --%s", o->name);
		if (o->arg && n > 0 && (size_t)n < sizeof left)
			snprintf(left + n, sizeof left - (size_t)n, " %s", o->arg);
		fprintf(f, "%-30s %s\n", left, o->help);
	}
	fprintf(f, "%-30s %s\n", "  -h, --help", "print this help and exit");
	fprintf(f, "%-30s %s\n", "      --version", "print the version and exit");
}

void cli_print_version(void)
{
	/* the tool's name: err_prog without a subcommand ("supkit-data tokenize") */
	printf("%.*s %s\n", (int)strcspn(err_prog, " "), err_prog, SUPKIT_VERSION);
}

void cli_no_stdin(const char *arg, const char *what)
{
	if (arg && !strcmp(arg, "-"))
		cli_usage_error("'-' (standard input) is not supported for %s", what);
}

void cli_no_stdout(const char *arg, const char *what)
{
	if (arg && !strcmp(arg, "-"))
		cli_usage_error("'-' (standard output) is not supported for %s", what);
}

void cli_usage_error(const char *fmt, ...)
{
	va_list ap;
	struct err e;
	va_start(ap, fmt);
	err_setv(&e, EXIT_USAGE, fmt, ap); /* control bytes escaped: one line */
	va_end(ap);
	fprintf(stderr, "%s: %s (try '%s --help')\n", err_prog, e.msg, err_prog);
	exit(EXIT_USAGE);
}

static void cli_sub_usage(FILE *f, const char *tool, const struct cli_sub *subs)
{
	int w = 0;
	for (int i = 0; subs[i].name; i++)
		if ((int)strlen(subs[i].name) > w)
			w = (int)strlen(subs[i].name);
	fprintf(f, "usage: supkit %s <subcommand> [options] [args]\n\nsubcommands:\n", tool);
	for (int i = 0; subs[i].name; i++)
		fprintf(f, "  %-*s %s\n", w + 1, subs[i].name, subs[i].what);
	fprintf(f, "\noptions:\n");
	fprintf(f, "%-30s %s\n", "  -h, --help", "print this help and exit");
	fprintf(f, "%-30s %s\n", "      --version", "print the version and exit");
	fprintf(f, "\n'supkit %s <subcommand> --help' shows its options; man supkit-%s.\n", tool,
		tool);
}

int cli_dispatch(int argc, char **argv, const char *tool, const char *kind,
		 const struct cli_sub *subs)
{
	static char prog[96];
	snprintf(prog, sizeof prog, "supkit-%s", tool);
	cli_set_prog(prog);
	if (argc < 2) {
		cli_sub_usage(stderr, tool, subs);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cli_sub_usage(stdout, tool, subs);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		cli_print_version();
		return EXIT_OK;
	}
	for (int i = 0; subs[i].name; i++) {
		if (strcmp(subs[i].name, argv[1]) != 0)
			continue;
		snprintf(prog, sizeof prog, "supkit-%s %s", tool, subs[i].name);
		err_prog = prog;
		return subs[i].fn(argc - 1, argv + 1);
	}
	cli_usage_error("'%s' is not %s subcommand", argv[1], kind);
}

int cli_parse(int argc, char **argv, const struct cli_opt *opts, const char *usage,
	      cli_fn fn, void *ctx, int *optind_out, struct err *e)
{
	size_t n = 0;
	while (opts && opts[n].name)
		n++;
	struct option *lo = xcalloc(n + 3, sizeof *lo);
	char *shorts = xcalloc(2 * n + 8, 1);
	size_t sp = 0;
	shorts[sp++] = ':'; /* GNU order: options may follow operands; "--" ends them */
	for (size_t i = 0; i < n; i++) {
		lo[i].name = opts[i].name;
		lo[i].has_arg = opts[i].arg ? required_argument : no_argument;
		lo[i].val = opts[i].key;
		if (opts[i].key > 0 && opts[i].key < 256) {
			shorts[sp++] = (char)opts[i].key;
			if (opts[i].arg)
				shorts[sp++] = ':';
		}
	}
	lo[n].name = "help";
	lo[n].val = 'h';
	lo[n + 1].name = "version";
	lo[n + 1].val = CLI_KEY_VERSION;
	shorts[sp++] = 'h';
	optind = 1;
	opterr = 0;
	int c, rc = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (c == 'h') {
			cli_print_help(stdout, usage, opts);
			exit(EXIT_OK);
		}
		if (c == CLI_KEY_VERSION) {
			cli_print_version();
			exit(EXIT_OK);
		}
		if (c == '?') {
			if (optopt && optopt < 256)
				cli_usage_error("unknown option '-%c'", optopt);
			cli_usage_error("unknown option '%s'", argv[optind - 1]);
		}
		if (c == ':')
			cli_usage_error("option '%s' needs an argument", argv[optind - 1]);
		if (fn(c, optarg, ctx, e) < 0) {
			rc = -1;
			break;
		}
	}
	free(lo);
	free(shorts);
	if (optind_out)
		*optind_out = optind;
	return rc;
}

char **cli_parse_operands(int argc, char **argv, const struct cli_opt *opts, const char *usage,
			  cli_fn fn, void *ctx, int *n_out)
{
	struct err e;
	err_clear(&e);
	char **ops = xcalloc((size_t)argc + 1, sizeof *ops);
	int n = 0, base = 0;
	while (base < argc) {
		int oi;
		if (cli_parse(argc - base, argv + base, opts, usage, fn, ctx, &oi, &e) < 0) {
			free(ops);
			cli_usage_error("%s", e.msg);
		}
		int at = base + oi;
		if (at < argc && !strcmp(argv[at - 1], "--")) {
			while (at < argc)
				ops[n++] = argv[at++];
		}
		if (at >= argc)
			break;
		ops[n++] = argv[at];
		base = at;
	}
	*n_out = n;
	return ops;
}

int cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out, const char *what, struct err *e)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno == ERANGE)
		return err_set(e, EXIT_USAGE, "%s: '%s' is not an integer", what, s);
	if (v < lo || v > hi)
		return err_set(e, EXIT_USAGE, "%s: %lld is out of range [%lld, %lld]", what, v,
			       (long long)lo, (long long)hi);
	*out = v;
	return 0;
}

int cli_parse_double(const char *s, double *out, const char *what, struct err *e)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno == ERANGE || !isfinite(v))
		return err_set(e, EXIT_USAGE, "%s: '%s' is not a finite number", what, s);
	*out = v;
	return 0;
}

int cli_stderr_is_tty(void)
{
	return isatty(STDERR_FILENO);
}
