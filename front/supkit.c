/* supkit.c: the front command. `supkit <tool> args` runs `supkit-<tool>` from
 * the folder this program lives in (then from PATH), git-style. `supkit --help`
 * (or `supkit help`) lists the tools; `supkit help <tool> [<subcommand>]` runs
 * `supkit-<tool> [<subcommand>] --help`; `supkit --version` prints the version. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/cli.h"
#include "lib/err.h"

static const struct {
	const char *name, *what;
} tools[] = {
	{"train", "train the benchmark GPT (CPU reference or CUDA backend)"},
	{"eval", "validation and held-out BPB of a checkpoint (ours or a PyTorch state_dict)"},
	{"sweep", "run a grid of training runs here or as a Slurm job array"},
	{"audit", "compute, stats, geometry, digest, step0 and trajectory audits"},
	{"plot", "figures (PNG, SVG, PDF) of run curves and audit reports"},
	{"replay", "rebuild trainer files from a baseline plus diffs, SHA-256 checked"},
	{"pack", "pack a folder into a reproducible supplement zip with a manifest"},
	{"verify", "verify a supplement: its manifest, its diffs, every derived number re-derived"},
	{"unpack", "safely extract a supplement zip"},
	{"data", "train a BPE tokenizer, tokenize a corpus into shards"},
	{NULL, NULL},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: supkit <tool> [args...]\n       supkit help [<tool> [<subcommand>]]\n"
		   "       supkit --help | --version\n\ntools:\n");
	for (int i = 0; tools[i].name; i++)
		fprintf(f, "  %-8s %s\n", tools[i].name, tools[i].what);
	fprintf(f, "\n'supkit <tool> --help' shows a tool's options; man supkit-<tool> its manual.\n");
}

int main(int argc, char **argv)
{
	cli_set_prog("supkit");
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    (!strcmp(argv[1], "help") && argc == 2)) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("supkit %s\n", SUPKIT_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		/* supkit help TOOL [SUB] = supkit TOOL [SUB] --help */
		if (argc > 4)
			cli_usage_error("help takes a tool and at most one subcommand");
		char **av = xcalloc(5, sizeof *av);
		av[0] = argv[0];
		int k = 1;
		for (int i = 2; i < argc; i++)
			av[k++] = argv[i];
		av[k++] = "--help";
		argv = av;
		argc = k;
	}
	const char *tool = argv[1];
	int known = 0;
	for (int i = 0; tools[i].name; i++)
		known |= !strcmp(tools[i].name, tool);
	if (!known || strchr(tool, '/'))
		cli_usage_error("'%s' is not a supkit tool", tool);

	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *name = xasprintf("supkit-%s", tool);
	argv[1] = name;
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			char *path = xasprintf("%s/%s", self, name);
			if (access(path, X_OK) == 0)
				execv(path, argv + 1);
			free(path);
		}
	}
	execvp(name, argv + 1);
	die(EXIT_SYS, "cannot run '%s': %s", name, strerror(errno));
}
