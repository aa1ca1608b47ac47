/* gnu_cases.h: the cases under tests/fixtures/replay/cases/ (old, new, and
 * GNU diff's U0.diff and U3.diff of them, made by
 * tests/fixtures/replay/make.sh), shared by test_udiff.c and test_mkdiff.c. */
#ifndef SUPKIT_TEST_GNU_CASES_H
#define SUPKIT_TEST_GNU_CASES_H

#include <stddef.h>

static const char *const gnu_cases[] = {"change", "multi", "crlf", "nonl_old", "nonl_new", "nonl_both",
					"append_nonl", "add_newline", "empty_old", "empty_new", "repeats",
					"identical"};
#define N_GNU_CASES (sizeof gnu_cases / sizeof *gnu_cases)

#endif
