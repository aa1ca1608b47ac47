/* tfix.h: fixture paths and JSON for the unit tests (tests/fixtures/<area>/),
 * shared by test files that read the same way. Leaves out reading raw bytes
 * (each test's own needs). Reference: tests/unit/t.h (t_fixtures). */
#ifndef SUPKIT_TFIX_H
#define SUPKIT_TFIX_H

#include <stdio.h>
#include <stdlib.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "t.h"

/* A fresh "<fixtures>/<area>/<name>" (caller frees). */
static inline char *t_fix_path(const char *area, const char *name)
{
	char *d = path_join(t_fixtures(), area);
	char *p = path_join(d, name);
	free(d);
	return p;
}

/* <fixtures>/<area>/<name> parsed; NULL with the error printed. */
static inline cJSON *t_fix_json(const char *area, const char *name)
{
	struct err e;
	char *p = t_fix_path(area, name);
	cJSON *j = json_read_file(p, 0, &e);
	if (!j)
		printf("  %s\n", e.msg);
	free(p);
	return j;
}

#endif
