/* claims.c: the published-claims file (see claims.h).
 * Leaves out: what a figure means (each audit's --check), re-derivation
 * (supplements/rederive.c). Reference: supkit-formats(5), CLAIMS. */
#include "claims.h"

#include <stdlib.h>

#include <stdio.h>
#include <string.h>

#include "json.h"
#include "sha256.h"

cJSON *claims_new(void)
{
	cJSON *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "format", CLAIMS_FORMAT);
	cJSON_AddNumberToObject(f, "format_version", CLAIMS_FORMAT_VERSION);
	cJSON_AddArrayToObject(f, "claims");
	return f;
}

void claims_add(cJSON *file, const char *value, const char *where, const cJSON *derivation, cJSON *figure)
{
	/* the block's name: its command and its text's digest */
	cJSON *d = cJSON_Duplicate(derivation, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(d, "version");
	char *text = json_print(d, 0), hex[65], name[96];
	cJSON_Delete(d);
	sha256_buf_hex(text, strlen(text), hex);
	free(text);
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(derivation, "command");
	snprintf(name, sizeof name, "%.40s-%.12s", cJSON_IsString(cmd) ? cmd->valuestring : "d", hex);
	cJSON *map = cJSON_GetObjectItemCaseSensitive(file, "derivations");
	if (!map)
		map = cJSON_AddObjectToObject(file, "derivations");
	if (!cJSON_GetObjectItemCaseSensitive(map, name))
		cJSON_AddItemToObject(map, name, cJSON_Duplicate(derivation, 1));
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "value", value);
	cJSON_AddStringToObject(c, "where", where);
	cJSON_AddStringToObject(c, "derivation", name);
	cJSON_AddItemToObject(c, "figure", figure);
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(file, "claims"), c);
}

const cJSON *claims_derivation(const cJSON *file, const cJSON *c)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(c, "derivation");
	if (cJSON_IsString(d))
		d = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(file, "derivations"), d->valuestring);
	return cJSON_IsObject(d) ? d : NULL;
}

int claims_is(const cJSON *root)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
	return cJSON_IsObject(root) && cJSON_IsString(f) && !strcmp(f->valuestring, CLAIMS_FORMAT);
}

static int no_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

int claims_validate(const cJSON *root, const char *name, struct err *e)
{
	if (!claims_is(root))
		return err_set(e, EXIT_USAGE, "'%s': not a claims file (\"format\": \"%s\")", name, CLAIMS_FORMAT);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "format_version");
	if (!cJSON_IsNumber(v) || v->valuedouble != CLAIMS_FORMAT_VERSION)
		return err_set(e, EXIT_USAGE, "'%s': format_version is not %d", name, CLAIMS_FORMAT_VERSION);
	const cJSON *dm = cJSON_GetObjectItemCaseSensitive(root, "derivations");
	if (dm && !cJSON_IsObject(dm))
		return err_set(e, EXIT_USAGE, "'%s': 'derivations' is not an object", name);
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "claims");
	if (!cJSON_IsArray(a))
		return err_set(e, EXIT_USAGE, "'%s': 'claims' is missing or not an array", name);
	if (cJSON_GetArraySize(a) > CLAIMS_MAX)
		return err_set(e, EXIT_USAGE, "'%s': more than %d claims", name, CLAIMS_MAX);
	int i = 0;
	for (const cJSON *c = a->child; c; c = c->next, i++) {
		if (!cJSON_IsObject(c))
			return err_set(e, EXIT_USAGE, "'%s': claims[%d] is not an object", name, i);
		static const char *const strs[] = {"value", "where"};
		for (int k = 0; k < 2; k++) {
			const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, strs[k]);
			if (!cJSON_IsString(s) || !no_control(s->valuestring))
				return err_set(e, EXIT_USAGE, "'%s': claims[%d]: '%s' is missing, not a string or "
					       "holds a control character", name, i, strs[k]);
		}
		const cJSON *d = claims_derivation(root, c);
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(d, "tool");
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(d, "command");
		if (!d || !cJSON_IsString(t) || !cJSON_IsString(m))
			return err_set(e, EXIT_USAGE, "'%s': claims[%d]: 'derivation' is not an object with "
				       "a 'tool' and a 'command', nor the name of one in 'derivations'", name, i);
		if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(c, "figure")))
			return err_set(e, EXIT_USAGE, "'%s': claims[%d]: 'figure' is missing or not an object", name, i);
	}
	return 0;
}

const cJSON *claims_list(const cJSON *root)
{
	return cJSON_GetObjectItemCaseSensitive(root, "claims");
}

int claims_of(const cJSON *file, const cJSON *c, const char *tool, const char *command)
{
	const cJSON *d = claims_derivation(file, c);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(d, "tool");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(d, "command");
	return cJSON_IsString(t) && cJSON_IsString(m) && !strcmp(t->valuestring, tool) &&
	       !strcmp(m->valuestring, command);
}
