/* test_cli.c: lib/cli.c cli_dispatch, the subcommand dispatcher that
 * supkit-audit, supkit-data and supkit-replay share: argv handed on shifted,
 * err_prog naming the subcommand, return codes, and the --help listing
 * (names padded to one more than the longest); cli_parse_operands: options
 * anywhere among the operands, "--". The paths that exit are covered by
 * tests/cli/ (audit*.sh, data.sh, replay.sh). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/cli.h"
#include "lib/fileio.h"
#include "t.h"

static int seen_argc;
static char seen_arg1[32];

static int sub_one(int argc, char **argv)
{
	seen_argc = argc;
	snprintf(seen_arg1, sizeof seen_arg1, "%s", argc > 1 ? argv[1] : "");
	return 7;
}

static int sub_two(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 3;
}

static const struct cli_sub subs[] = {
	{"one", sub_one, "first"},
	{"longer", sub_two, "second"},
	{NULL, NULL, NULL},
};

TEST(dispatch_calls_the_named_subcommand)
{
	char *argv[] = {"supkit-x", "one", "--flag", NULL};
	CHECK(cli_dispatch(3, argv, "x", "an x", subs) == 7);
	CHECK(seen_argc == 2);
	CHECK_STREQ(seen_arg1, "--flag");
	CHECK_STREQ(err_prog, "supkit-x one");
	char *argv2[] = {"supkit-x", "longer", NULL};
	CHECK(cli_dispatch(2, argv2, "x", "an x", subs) == 3);
	CHECK_STREQ(err_prog, "supkit-x longer");
}

/* Run cli_dispatch with stdout (fd 1) going to a file; return what it wrote. */
static char *dispatch_stdout(char *arg, int *rc)
{
	char path[] = "/tmp/supkit_test_cli_XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	fflush(stdout);
	int saved = dup(1);
	dup2(fd, 1);
	char *argv[] = {"supkit-x", arg, NULL};
	*rc = cli_dispatch(2, argv, "x", "an x", subs);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(fd);
	struct err e;
	char *buf = NULL;
	size_t n = 0;
	if (file_read_all(path, 1 << 20, &buf, &n, &e) < 0)
		buf = NULL;
	unlink(path);
	return buf;
}

TEST(dispatch_help_and_version)
{
	int rc = -1;
	char *out = dispatch_stdout("--help", &rc);
	CHECK(rc == EXIT_OK);
	CHECK(out != NULL);
	if (out)
		CHECK_STREQ(out, "usage: supkit x <subcommand> [options] [args]\n\nsubcommands:\n"
				 "  one     first\n  longer  second\n\n"
				 "options:\n"
				 "  -h, --help                   print this help and exit\n"
				 "      --version                print the version and exit\n\n"
				 "'supkit x <subcommand> --help' shows its options; man supkit-x.\n");
	free(out);
	out = dispatch_stdout("--version", &rc);
	CHECK(rc == EXIT_OK);
	CHECK(out && !strcmp(out, "supkit-x " SUPKIT_VERSION "\n"));
	free(out);
}

static int on_q(int key, const char *arg, void *ctx, struct err *e)
{
	(void)arg;
	(void)e;
	if (key == 'q')
		(*(int *)ctx)++;
	return 0;
}

static const struct cli_opt q_opts[] = {
	{"quiet", 'q', NULL, "quiet"},
	{NULL, 0, NULL, NULL},
};

TEST(operands_among_options)
{
	char *argv[] = {"sub", "a", "-q", "b", "--quiet", "c", "--", "-q", "d", NULL};
	int q = 0, n = -1;
	char **ops = cli_parse_operands(9, argv, q_opts, "usage", on_q, &q, &n);
	CHECK(q == 2);
	CHECK(n == 5);
	if (n == 5) {
		CHECK_STREQ(ops[0], "a");
		CHECK_STREQ(ops[1], "b");
		CHECK_STREQ(ops[2], "c");
		CHECK_STREQ(ops[3], "-q");
		CHECK_STREQ(ops[4], "d");
	}
	free(ops);
	char *argv2[] = {"sub", "-q", NULL};
	q = 0;
	ops = cli_parse_operands(2, argv2, q_opts, "usage", on_q, &q, &n);
	CHECK(q == 1 && n == 0);
	free(ops);
}

int main(void)
{
	RUN(dispatch_calls_the_named_subcommand);
	RUN(dispatch_help_and_version);
	RUN(operands_among_options);
	return t_done();
}
