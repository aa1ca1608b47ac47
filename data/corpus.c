/* corpus.c: corpus readers (text, JSON Lines, JSON array, parquet) and the
 * Brown corpus de-tagger; see corpus.h for the contract.
 *
 * Leaves out: streaming text (each text file is read whole, up to
 * CORPUS_MAX_FILE); NUL bytes inside JSON strings (cJSON strings end at the
 * first NUL; a raw NUL refuses the file). Reference: for the magic bytes,
 * RFC 1952 (gzip), APPNOTE.TXT 4.3.7 (zip), RFC 8878 (zstd), the xz file
 * format 2.1.1.1, bzip2's stream header; the parquet format (data/parquet.h).
 */
#include "data/corpus.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/stream.h"
#include "data/parquet.h"

int corpus_format_parse(const char *s, enum corpus_format *out, struct err *e)
{
	static const char *names[] = {"auto", "text", "jsonl", "json", "parquet"};
	for (int i = 0; i < 5; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum corpus_format)i;
			return 0;
		}
	return err_set(e, EXIT_USAGE, "unknown corpus format '%s' (auto, text, jsonl, json, parquet)", s);
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

/* o->at, when set, with pos of n */
static void at(const struct corpus_opts *o, uint64_t pos, uint64_t n, void *ctx)
{
	if (o->at)
		o->at(pos < n ? pos : n, n, ctx);
}

static int read_text(const char *buf, size_t n, const struct corpus_opts *o, corpus_fn fn, void *ctx,
		     struct corpus_counts *c, struct err *e)
{
	const char *delim = o->delim;
	if (!delim || !*delim) {
		int rc = emit(buf, n, fn, ctx, c, e);
		at(o, n, n, ctx);
		return rc;
	}
	size_t dl = strlen(delim), start = 0;
	for (size_t i = 0; i + dl <= n;) {
		if (memcmp(buf + i, delim, dl) == 0) {
			if (emit(buf + start, i - start, fn, ctx, c, e) < 0)
				return -1;
			i += dl;
			start = i;
			at(o, i, n, ctx);
		} else
			i++;
	}
	int rc = emit(buf + start, n - start, fn, ctx, c, e);
	at(o, n, n, ctx);
	return rc;
}

static int read_jsonl(const char *path, const char *buf, size_t n, const struct corpus_opts *o, corpus_fn fn,
		      void *ctx, struct corpus_counts *c, struct err *e)
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
		at(o, i, n, ctx);
	}
	return 0;
}

static int read_json(const char *path, const char *buf, size_t n, const struct corpus_opts *o, corpus_fn fn,
		     void *ctx, struct corpus_counts *c, struct err *e)
{
	cJSON *j = json_parse(buf, n, path, e);
	if (!j)
		return -1;
	if (!cJSON_IsArray(j)) {
		cJSON_Delete(j);
		return err_set(e, EXIT_USAGE, "'%s': expected a JSON array of strings", path);
	}
	int k = 0, rc = 0;
	uint64_t pos = 0;   /* the documents' bytes so far (no offsets from cJSON) */
	const cJSON *it;
	cJSON_ArrayForEach(it, j)
	{
		if (!cJSON_IsString(it)) {
			rc = err_set(e, EXIT_USAGE, "'%s': entry %d: not a string", path, k);
			break;
		}
		size_t len = strlen(it->valuestring);
		if ((rc = emit(it->valuestring, len, fn, ctx, c, e)) < 0)
			break;
		pos += len;
		at(o, pos, n, ctx);
		k++;
	}
	if (rc == 0)
		at(o, n, n, ctx);
	cJSON_Delete(j);
	return rc;
}

/* ---- parquet ---- */

static int has_parquet_magic(const unsigned char *head, const unsigned char *tail, uint64_t size)
{
	return size >= 12 && !memcmp(head, "PAR1", 4) && !memcmp(tail, "PAR1", 4);
}

int corpus_is_parquet(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	unsigned char h[4], t[4];
	int r = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 12 && pread(fd, h, 4, 0) == 4 &&
		pread(fd, t, 4, st.st_size - 4) == 4 && has_parquet_magic(h, t, (uint64_t)st.st_size);
	close(fd);
	return r;
}

struct pq_walk {
	corpus_fn fn;
	void *ctx;
	struct corpus_counts *c;
};

static int pq_value(const char *s, size_t len, uint64_t row, void *vw, struct err *e)
{
	(void)row;
	struct pq_walk *w = vw;
	return emit(s, len, w->fn, w->ctx, w->c, e);
}

/* Every row group of f in turn; the at() position by the chunks read. */
static int read_parquet(struct pq_file *f, const struct corpus_opts *o, corpus_fn fn, void *ctx,
			struct corpus_counts *c, struct err *e)
{
	size_t n = pq_row_groups(f);
	uint64_t size = pq_file_size(f), total = 0, done = 0;
	for (size_t rg = 0; rg < n; rg++)
		total += pq_row_group_bytes(f, rg);
	struct pq_walk w = {fn, ctx, c};
	struct pq_counts pc = {0};
	at(o, 0, size, ctx);
	for (size_t rg = 0; rg < n; rg++) {
		if (pq_read_row_group(f, rg, pq_value, &w, &pc, e) < 0)
			return -1;
		done += pq_row_group_bytes(f, rg);
		at(o, total ? (uint64_t)((double)size * (double)done / (double)total) : size, size, ctx);
	}
	c->nulls += pc.nulls;
	return 0;
}

/* ---- binary input ---- */

/* -1 with e when buf[0..n) is not text by its first bytes (a compressed
 * or parquet file, UTF-16) or a NUL byte; 0 when it may be text. */
static int refuse_binary(const char *path, const char *buf, size_t n, struct err *e)
{
	static const struct {
		const char *magic;
		size_t len;
		const char *what, *hint;
	} kinds[] = {
		{"\x1f\x8b", 2, "a gzip file", "corpora are read uncompressed: gunzip it first"},
		{"PK\x03\x04", 4, "a zip archive", "extract its texts first"},
		{"PK\x05\x06", 4, "a zip archive", "extract its texts first"},
		{"\x28\xb5\x2f\xfd", 4, "a zstd file", "corpora are read uncompressed: unzstd it first"},
		{"\xfd" "7zXZ\x00", 6, "an xz file", "corpora are read uncompressed: unxz it first"},
		{"\xff\xfe", 2, "UTF-16 text (a byte order mark FF FE)", "convert it to UTF-8 first"},
		{"\xfe\xff", 2, "UTF-16 text (a byte order mark FE FF)", "convert it to UTF-8 first"},
	};
	const unsigned char *p = (const unsigned char *)buf;
	if (n >= 12 && has_parquet_magic(p, p + n - 4, n))
		return err_set(e, EXIT_USAGE, "'%s': a parquet file (PAR1 at both ends), not text: read it with "
			       "--format parquet (or auto)", path);
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
		if (n >= kinds[k].len && !memcmp(buf, kinds[k].magic, kinds[k].len))
			return err_set(e, EXIT_USAGE, "'%s': %s, not text: %s", path, kinds[k].what, kinds[k].hint);
	/* bzip2: "BZh", the block size 1-9, then a block's or the end's magic */
	if (n >= 10 && !memcmp(buf, "BZh", 3) && p[3] >= '1' && p[3] <= '9' &&
	    (!memcmp(buf + 4, "\x31\x41\x59\x26\x53\x59", 6) || !memcmp(buf + 4, "\x17\x72\x45\x38\x50\x90", 6)))
		return err_set(e, EXIT_USAGE, "'%s': a bzip2 file, not text: corpora are read uncompressed: bunzip2 it "
			       "first", path);
	const char *nul = memchr(buf, 0, n);
	if (nul)
		return err_set(e, EXIT_USAGE, "'%s': offset %zu: a NUL byte: binary data, not UTF-8 text", path,
			       (size_t)(nul - buf));
	return 0;
}

/* ---- one file ---- */

int corpus_read_file(const char *path, const struct corpus_opts *o, corpus_fn fn, void *ctx,
		     struct corpus_counts *c, struct err *e)
{
	const char *column = o->column ? o->column : "text";
	enum corpus_format f = o->format;
	int piped = stream_is_std(path);
	/* a named parquet file is streamed, never read whole */
	if (!piped && (f == CORPUS_PARQUET || (f == CORPUS_AUTO && (corpus_is_parquet(path) ||
								  ends_with(path, ".parquet"))))) {
		struct pq_file *pf;
		if (pq_open(&pf, path, column, e) < 0)
			return -1;
		int rc = read_parquet(pf, o, fn, ctx, c, e);
		pq_close(pf);
		return rc;
	}
	char *buf;
	size_t n;
	if (stream_read_all(path, CORPUS_MAX_FILE, &buf, &n, e) < 0)
		return -1;
	int rc = corpus_read_mem(path, buf, n, o, fn, ctx, c, e);
	free(buf);
	return rc;
}

int corpus_read_mem(const char *path, const char *buf, size_t n, const struct corpus_opts *o, corpus_fn fn,
		    void *ctx, struct corpus_counts *c, struct err *e)
{
	const char *column = o->column ? o->column : "text";
	enum corpus_format f = o->format;
	const unsigned char *p = (const unsigned char *)buf;
	if (f == CORPUS_PARQUET || (f == CORPUS_AUTO && n >= 12 && has_parquet_magic(p, p + n - 4, n))) {
		struct pq_file *pf;
		int rc = pq_open_mem(&pf, buf, n, path, column, e);
		if (rc == 0) {
			rc = read_parquet(pf, o, fn, ctx, c, e);
			pq_close(pf);
		}
		return rc;
	}
	if (f == CORPUS_AUTO)
		f = ends_with(path, ".jsonl") ? CORPUS_JSONL : ends_with(path, ".json") ? CORPUS_JSON : CORPUS_TEXT;
	int rc = refuse_binary(path, buf, n, e);
	if (rc == 0 && f == CORPUS_JSONL)
		rc = read_jsonl(path, buf, n, o, fn, ctx, c, e);
	else if (rc == 0 && f == CORPUS_JSON)
		rc = read_json(path, buf, n, o, fn, ctx, c, e);
	else if (rc == 0)
		rc = read_text(buf, n, o, fn, ctx, c, e);
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
