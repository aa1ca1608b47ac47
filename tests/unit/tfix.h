/* tfix.h: fixture paths, JSON and whole files for the unit tests
 * (tests/fixtures/<area>/), shared by test files that read them the same way.
 * Leaves out making fixtures (each area's committed script does). Reference:
 * tests/unit/t.h (t_fixtures, $SUPKIT_FIXTURES). */
#ifndef SUPKIT_TFIX_H
#define SUPKIT_TFIX_H

#include <stdarg.h>
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

/* The fixture at "<fixtures>/" + the formatted path, read whole into a fresh
 * NUL-terminated buffer (*len its length); NULL with the error in e. The path
 * read is left in path (room for n bytes) for messages. */
static inline __attribute__((format(printf, 5, 6))) char *
t_fix_read(size_t *len, struct err *e, char *path, size_t n, const char *fmt, ...)
{
	int k = snprintf(path, n, "%s/", t_fixtures());
	va_list ap;
	va_start(ap, fmt);
	if (k > 0 && (size_t)k < n)
		vsnprintf(path + k, n - (size_t)k, fmt, ap);
	va_end(ap);
	char *buf = NULL;
	if (file_read_all(path, 0, &buf, len, e) < 0)
		return NULL;
	return buf;
}

#endif
