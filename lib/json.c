/* json.c: cJSON parsing with limits and a deterministic printer (see json.h). */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fileio.h"
#include "stream.h"

cJSON *json_parse(const char *text, size_t len, const char *name, struct err *e)
{
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!j) {
		size_t off = end && end >= text ? (size_t)(end - text) : 0;
		if (off > len)
			off = len;
		size_t line = 1, col = 1;
		for (size_t i = 0; i < off; i++) {
			if (text[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		err_set(e, EXIT_USAGE, "'%s': invalid JSON at line %zu, column %zu", name, line, col);
		return NULL;
	}
	/* Trailing garbage after the value is an error too. */
	if (end) {
		size_t off = (size_t)(end - text);
		while (off < len && (text[off] == ' ' || text[off] == '\n' || text[off] == '\r' || text[off] == '\t'))
			off++;
		if (off < len && text[off] != '\0') {
			cJSON_Delete(j);
			err_set(e, EXIT_USAGE, "'%s': unexpected data after the JSON value at byte %zu", name, off);
			return NULL;
		}
	}
	return j;
}

cJSON *json_read_file(const char *path, size_t max_bytes, struct err *e)
{
	char *buf;
	size_t len;
	if (file_read_all(path, max_bytes ? max_bytes : JSON_MAX_BYTES_DEFAULT, &buf, &len, e) < 0)
		return NULL;
	cJSON *j = json_parse(buf, len, path, e);
	free(buf);
	return j;
}

cJSON *json_read_input(const char *path, size_t max_bytes, struct err *e)
{
	if (!stream_is_std(path))
		return json_read_file(path, max_bytes, e);
	char *buf;
	size_t len;
	if (stream_read_all(path, max_bytes ? max_bytes : JSON_MAX_BYTES_DEFAULT, &buf, &len, e) < 0)
		return NULL;
	cJSON *j = json_parse(buf, len, path, e);
	free(buf);
	return j;
}

static int cmp_key(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
	return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

void json_sort(cJSON *item)
{
	if (!item)
		return;
	for (cJSON *c = item->child; c; c = c->next)
		json_sort(c);
	if (!cJSON_IsObject(item) || !item->child)
		return;
	size_t n = 0;
	for (cJSON *c = item->child; c; c = c->next)
		n++;
	cJSON **v = xmalloc(n * sizeof *v);
	n = 0;
	for (cJSON *c = item->child; c; c = c->next)
		v[n++] = c;
	qsort(v, n, sizeof *v, cmp_key);
	for (size_t i = 0; i < n; i++) {
		v[i]->prev = i ? v[i - 1] : v[n - 1]; /* cJSON: child->prev is the tail */
		v[i]->next = i + 1 < n ? v[i + 1] : NULL;
	}
	item->child = v[0];
	free(v);
}

void json_format_number(double v, char *buf, size_t n)
{
	if (!isfinite(v)) {
		snprintf(buf, n, "null");
		return;
	}
	if (v == 0) {
		snprintf(buf, n, signbit(v) ? "-0.0" : "0");
		return;
	}
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		snprintf(buf, n, "%.0f", v);
		return;
	}
	for (int p = 15; p <= 17; p++) {
		snprintf(buf, n, "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

struct sbuf {
	char *p;
	size_t n, cap;
};

static void sb_put(struct sbuf *b, const char *s, size_t len)
{
	if (b->n + len + 1 > b->cap) {
		while (b->n + len + 1 > b->cap)
			b->cap = b->cap ? 2 * b->cap : 256;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

static void put_string(struct sbuf *b, const char *s)
{
	sb_put(b, "\"", 1);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		char tmp[8];
		switch (*c) {
		case '"': sb_puts(b, "\\\""); break;
		case '\\': sb_puts(b, "\\\\"); break;
		case '\n': sb_puts(b, "\\n"); break;
		case '\r': sb_puts(b, "\\r"); break;
		case '\t': sb_puts(b, "\\t"); break;
		case '\b': sb_puts(b, "\\b"); break;
		case '\f': sb_puts(b, "\\f"); break;
		default:
			if (*c < 0x20) {
				snprintf(tmp, sizeof tmp, "\\u%04x", *c);
				sb_puts(b, tmp);
			} else {
				sb_put(b, (const char *)c, 1);
			}
		}
	}
	sb_put(b, "\"", 1);
}

static void indent(struct sbuf *b, int pretty, int depth)
{
	if (!pretty)
		return;
	sb_put(b, "\n", 1);
	for (int i = 0; i < depth; i++)
		sb_put(b, "  ", 2);
}

static void put_item(struct sbuf *b, const cJSON *it, int pretty, int depth)
{
	char num[64];
	if (cJSON_IsNull(it) || cJSON_IsInvalid(it)) {
		sb_puts(b, "null");
	} else if (cJSON_IsFalse(it)) {
		sb_puts(b, "false");
	} else if (cJSON_IsTrue(it)) {
		sb_puts(b, "true");
	} else if (cJSON_IsNumber(it)) {
		json_format_number(it->valuedouble, num, sizeof num);
		sb_puts(b, num);
	} else if (cJSON_IsString(it)) {
		put_string(b, it->valuestring ? it->valuestring : "");
	} else if (cJSON_IsRaw(it)) {
		sb_puts(b, it->valuestring ? it->valuestring : "null");
	} else if (cJSON_IsArray(it) || cJSON_IsObject(it)) {
		int obj = cJSON_IsObject(it);
		sb_puts(b, obj ? "{" : "[");
		if (!it->child) {
			sb_puts(b, obj ? "}" : "]");
			return;
		}
		for (const cJSON *c = it->child; c; c = c->next) {
			indent(b, pretty, depth + 1);
			if (obj) {
				put_string(b, c->string ? c->string : "");
				sb_puts(b, pretty ? ": " : ":");
			}
			put_item(b, c, pretty, depth + 1);
			if (c->next)
				sb_puts(b, pretty ? "," : ",");
		}
		indent(b, pretty, depth);
		sb_puts(b, obj ? "}" : "]");
	}
}

char *json_print(cJSON *item, int pretty)
{
	struct sbuf b = {0};
	json_sort(item);
	put_item(&b, item, pretty, 0);
	if (pretty)
		sb_put(&b, "\n", 1);
	return b.p;
}

int json_write_file(const char *path, cJSON *item, struct err *e)
{
	char *s = json_print(item, 1);
	int r = file_write_atomic(path, s, strlen(s), e);
	free(s);
	return r;
}

void json_print_stdout(cJSON *item)
{
	char *s = json_print(item, 1);
	fputs(s, stdout);
	free(s);
}

int json_get_number(const cJSON *obj, const char *key, double *out, const char *ctx, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!v)
		return err_set(e, EXIT_USAGE, "%s: missing key '%s'", ctx, key);
	if (!cJSON_IsNumber(v))
		return err_set(e, EXIT_USAGE, "%s: '%s' is not a number", ctx, key);
	*out = v->valuedouble;
	return 0;
}

int json_get_string(const cJSON *obj, const char *key, const char **out, const char *ctx, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!v)
		return err_set(e, EXIT_USAGE, "%s: missing key '%s'", ctx, key);
	if (!cJSON_IsString(v))
		return err_set(e, EXIT_USAGE, "%s: '%s' is not a string", ctx, key);
	*out = v->valuestring;
	return 0;
}
