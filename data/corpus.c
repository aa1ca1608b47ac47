/* corpus.c: corpus readers (text, JSON Lines, JSON array) and the Brown
 * corpus de-tagger; see corpus.h for the contract (issue 6, SPEC section 4).
 *
 * Leaves out: streaming (each file is read whole, up to CORPUS_MAX_FILE);
 * NUL bytes inside JSON strings (cJSON strings end at the first NUL).
 */
#include "data/corpus.h"

#include <stdlib.h>
#include <string.h>
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/stream.h"

int corpus_format_parse(const char *s, enum corpus_format *out, struct err *e)
{
	static const char *names[] = {"auto", "text", "jsonl", "json"};
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum corpus_format)i;
			return 0;
		}
	return err_set(e, EXIT_USAGE, "unknown corpus format '%s' (auto, text, jsonl, json)", s);
}

static int ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

static int emit(const char *doc, size_t len, corpus_fn fn, void *ctx, struct corpus_counts *c,
		struct err *e)
{
	if (len == 0) {
		c->empty++;
		return 0;
	}
	int ok = utf8_valid(doc, len);
	if (!ok)
		c->invalid_utf8++;
	c->docs++;
	c->bytes += len;
	return fn(doc, len, ok, ctx, e);
}

static int read_text(const char *path, const char *buf, size_t n, const char *delim, corpus_fn fn,
		     void *ctx, struct corpus_counts *c, struct err *e)
{
	if (!delim || !*delim)
		return emit(buf, n, fn, ctx, c, e);
	size_t dl = strlen(delim), start = 0;
	(void)path;
	for (size_t i = 0; i + dl <= n;) {
		if (memcmp(buf + i, delim, dl) == 0) {
			if (emit(buf + start, i - start, fn, ctx, c, e) < 0)
				return -1;
			i += dl;
			start = i;
		} else
			i++;
	}
	return emit(buf + start, n - start, fn, ctx, c, e);
}

static int read_jsonl(const char *path, const char *buf, size_t n, corpus_fn fn, void *ctx,
		      struct corpus_counts *c, struct err *e)
{
	size_t line = 0, i = 0;
	while (i < n) {
		const char *nl = memchr(buf + i, '\n', n - i);
		size_t end = nl ? (size_t)(nl - buf) : n;
		line++;
		size_t s = i, t = end;
		while (s < t && (buf[s] == ' ' || buf[s] == '\t' || buf[s] == '\r'))
			s++;
		if (s < t) {
			struct err je;
			cJSON *j = json_parse(buf + s, t - s, path, &je);
			if (!j)
				return err_set(e, EXIT_USAGE, "'%s': line %zu: not JSON", path, line);
			const cJSON *tx = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "text") : NULL;
			if (!cJSON_IsString(tx)) {
				cJSON_Delete(j);
				return err_set(e, EXIT_USAGE, "'%s': line %zu: expected an object with a string \"text\"",
					       path, line);
			}
			int rc = emit(tx->valuestring, strlen(tx->valuestring), fn, ctx, c, e);
			cJSON_Delete(j);
			if (rc < 0)
				return -1;
		}
		i = end + 1;
	}
	return 0;
}

static int read_json(const char *path, const char *buf, size_t n, corpus_fn fn, void *ctx,
		     struct corpus_counts *c, struct err *e)
{
	cJSON *j = json_parse(buf, n, path, e);
	if (!j)
		return -1;
	if (!cJSON_IsArray(j)) {
		cJSON_Delete(j);
		return err_set(e, EXIT_USAGE, "'%s': expected a JSON array of strings", path);
	}
	int k = 0, rc = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, j)
	{
		if (!cJSON_IsString(it)) {
			rc = err_set(e, EXIT_USAGE, "'%s': entry %d: not a string", path, k);
			break;
		}
		if ((rc = emit(it->valuestring, strlen(it->valuestring), fn, ctx, c, e)) < 0)
			break;
		k++;
	}
	cJSON_Delete(j);
	return rc;
}

int corpus_read_file(const char *path, const struct corpus_opts *o, corpus_fn fn, void *ctx,
		     struct corpus_counts *c, struct err *e)
{
	char *buf;
	size_t n;
	if (stream_read_all(path, CORPUS_MAX_FILE, &buf, &n, e) < 0)
		return -1;
	enum corpus_format f = o->format;
	if (f == CORPUS_AUTO)
		f = ends_with(path, ".jsonl") ? CORPUS_JSONL : ends_with(path, ".json") ? CORPUS_JSON : CORPUS_TEXT;
	int rc;
	if (f == CORPUS_JSONL)
		rc = read_jsonl(path, buf, n, fn, ctx, c, e);
	else if (f == CORPUS_JSON)
		rc = read_json(path, buf, n, fn, ctx, c, e);
	else
		rc = read_text(path, buf, n, o->delim, fn, ctx, c, e);
	free(buf);
	return rc;
}

/* ---- Brown corpus ---- */

static int is_closing(const char *w, size_t n)
{
	if (n == 1 && strchr(".,;:?!)]'", w[0]))
		return 1;
	return n == 2 && w[0] == '\'' && w[1] == '\'';
}

static int is_opening(const char *w, size_t n)
{
	return (n == 1 && (w[0] == '(' || w[0] == '[')) || (n == 2 && w[0] == '`' && w[1] == '`');
}

void brown_detag(const char *in, size_t n, struct bytes *out)
{
	size_t i = 0;
	while (i < n) {
		const char *nl = memchr(in + i, '\n', n - i);
		size_t end = nl ? (size_t)(nl - in) : n;
		int words = 0, glue = 0;
		size_t j = i;
		while (j < end) {
			while (j < end && (in[j] == ' ' || in[j] == '\t' || in[j] == '\r'))
				j++;
			size_t s = j;
			while (j < end && in[j] != ' ' && in[j] != '\t' && in[j] != '\r')
				j++;
			if (j == s)
				break;
			size_t wl = j - s;
			for (size_t k = j; k > s; k--)
				if (in[k - 1] == '/') {
					wl = k - 1 - s;
					break;
				}
			if (wl == 0)
				continue;
			const char *w = in + s;
			if (words && !glue && !is_closing(w, wl))
				bytes_append(out, " ", 1);
			if ((wl == 2 && w[0] == '`' && w[1] == '`') || (wl == 2 && w[0] == '\'' && w[1] == '\''))
				bytes_append(out, "\"", 1);
			else
				bytes_append(out, w, wl);
			glue = is_opening(w, wl);
			words++;
		}
		if (words)
			bytes_append(out, "\n", 1);
		i = end + 1;
	}
}
