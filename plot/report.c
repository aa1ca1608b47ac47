/* report.c: reading the JSON reports of supkit audit and telling their
 * kinds apart (contract in plots.h), and the field checks the figures
 * share (jrep.h).
 */
#include "plot/jrep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"

static const char *const kind_name[3] = {"an audit stats report", "an audit geometry report",
					 "an audit trajectory report"};
static const char *const kind_cmd[3] = {"supkit audit stats --json", "supkit audit geometry --json",
					"supkit audit trajectory --json"};

int plot_report_kind(const cJSON *j)
{
	if (!cJSON_IsObject(j))
		return -1;
	if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "contrasts")) &&
	    cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "cells")))
		return PLOT_REPORT_STATS;
	if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "checkpoints")) &&
	    cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "arms")))
		return PLOT_REPORT_GEOMETRY;
	if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "modes")))
		return PLOT_REPORT_TRAJECTORY;
	return -1;
}

cJSON *plot_report_read(const char *path, enum plot_report want, struct err *e)
{
	cJSON *j = json_read_file(path, 0, e);
	if (!j)
		return NULL;
	int k = plot_report_kind(j);
	if (k == (int)want)
		return j;
	cJSON_Delete(j);
	if (k >= 0)
		err_set(e, EXIT_USAGE, "'%s': %s (%s), not %s (%s)", path, kind_name[k], kind_cmd[k],
			kind_name[want], kind_cmd[want]);
	else
		err_set(e, EXIT_USAGE, "'%s': not %s (%s writes one)", path, kind_name[want], kind_cmd[want]);
	return NULL;
}

const cJSON *jrep_get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

int jrep_string(const cJSON *o, const char *key, const char **out, const char *path, const char *where,
		struct err *e)
{
	const cJSON *x = jrep_get(o, key);
	if (!cJSON_IsString(x))
		return err_set(e, EXIT_USAGE, "'%s': %s: '%s' is %s, not a string", path, where, key,
			       x ? "of another type" : "missing");
	*out = x->valuestring;
	return 0;
}

int jrep_number(const cJSON *o, const char *key, double *out, const char *path, const char *where,
		struct err *e)
{
	const cJSON *x = jrep_get(o, key);
	if (cJSON_IsNull(x)) {
		*out = NAN;
		return 0;
	}
	if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
		return err_set(e, EXIT_USAGE, "'%s': %s: '%s' is %s, not a number", path, where, key,
			       x ? "of another type" : "missing");
	*out = x->valuedouble;
	return 0;
}

int jrep_numbers(const cJSON *a, double **out, int *n, const char *path, const char *where, struct err *e)
{
	*out = NULL;
	*n = 0;
	if (!cJSON_IsArray(a))
		return err_set(e, EXIT_USAGE, "'%s': %s is %s, not an array of numbers", path, where,
			       a ? "of another type" : "missing");
	int m = cJSON_GetArraySize(a), i = 0;
	double *v = xmalloc((size_t)(m ? m : 1) * sizeof *v);
	for (const cJSON *x = a->child; x; x = x->next, i++) {
		if (cJSON_IsNull(x)) {
			v[i] = NAN;
		} else if (cJSON_IsNumber(x) && isfinite(x->valuedouble)) {
			v[i] = x->valuedouble;
		} else {
			free(v);
			return err_set(e, EXIT_USAGE, "'%s': %s[%d] is not a number", path, where, i);
		}
	}
	*out = v;
	*n = m;
	return 0;
}
