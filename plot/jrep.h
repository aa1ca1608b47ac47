/* jrep.h: field checks for the audit reports the figures read (report.c).
 * Each returns 0, or -1 with e (EXIT_USAGE) naming the file, the place
 * (where: "contrasts[3]") and the key. JSON null reads as NaN. */
#ifndef SUPKIT_PLOT_JREP_H
#define SUPKIT_PLOT_JREP_H

#include <cjson/cJSON.h>
#include "lib/err.h"
#include "plot/plots.h"

const cJSON *jrep_get(const cJSON *o, const char *key);
int jrep_string(const cJSON *o, const char *key, const char **out, const char *path, const char *where,
		struct err *e);
/* A number or null (NaN); missing or another type is an error. */
int jrep_number(const cJSON *o, const char *key, double *out, const char *path, const char *where,
		struct err *e);
/* An array of numbers or nulls (NaN) into a fresh *out (caller frees). */
int jrep_numbers(const cJSON *a, double **out, int *n, const char *path, const char *where, struct err *e);

#endif
