/* gnu_cases.h: the cases under tests/fixtures/replay/cases/ (old, new, and
 * GNU diff's U0.diff and U3.diff of them, made by
 * tests/fixtures/replay/make.sh), shared by test_udiff.c and test_mkdiff.c.
 * Leaves out the diffs themselves (each test reads the ones it needs).
 * Reference: GNU diffutils manual, "Unified Format". */
#ifndef SUPKIT_TEST_GNU_CASES_H
#define SUPKIT_TEST_GNU_CASES_H

#include <stddef.h>

#include "t.h"
#include "tfix.h"

static const char *const gnu_cases[] = {"change", "multi", "crlf", "nonl_old", "nonl_new", "nonl_both",
					"append_nonl", "add_newline", "empty_old", "empty_new", "repeats",
					"identical"};
#define N_GNU_CASES (sizeof gnu_cases / sizeof *gnu_cases)

/* Case c's old and new files (caller frees both); 0, or -1 with a failed
 * check and nothing to free. */
static inline int gnu_case_read(size_t c, char **old, size_t *ol, char **new, size_t *nl)
{
	char path[512];
	struct err e = {0};
	*old = t_fix_read(ol, &e, path, sizeof path, "replay/cases/%s/old", gnu_cases[c]);
	if (*old)
		*new = t_fix_read(nl, &e, path, sizeof path, "replay/cases/%s/new", gnu_cases[c]);
	if (!*old || !*new) {
		CHECKF(0, "%s", e.msg);
		free(*old);
		return -1;
	}
	return 0;
}

#endif
