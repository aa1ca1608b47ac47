/* test_corpus.c: data/corpus.c's parquet input and its refusal of binary
 * input. Every standard parquet fixture (each codec x page version x PLAIN
 * or dictionary, tests/fixtures/parquet/make.mjs) read as a corpus gives
 * the documents of texts.jsonl (the same texts as JSON Lines, written by the
 * same script) in order, byte for byte, with the empty strings skipped and
 * counted as the JSON Lines reader skips them, and its nulls counted; a
 * parquet file is one by its magic bytes whatever its name; the at() hook
 * walks to the end of the file. Binary files given as text (parquet, gzip,
 * zip, zstd, xz, bzip2 by their magic bytes, UTF-16 by its byte order
 * mark, a NUL byte anywhere) are refused in one line naming the file before
 * any document is passed on, while text with invalid UTF-8 (no NUL) is
 * still read, its documents counted. Files go to a fresh temporary folder.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/corpus.h"
#include "lib/fileio.h"
#include "t.h"
#include "tfix.h"

static char dir[] = "/tmp/supkit-corpus-XXXXXX";

struct docs {
	char **v;
	size_t *n;
	size_t k;
	uint64_t last_pos, last_size, calls;
	int backwards;
};

static int keep(const char *doc, size_t len, int valid, void *ctx, struct err *e)
{
	(void)valid;
	(void)e;
	struct docs *d = ctx;
	d->v = xrealloc(d->v, (d->k + 1) * sizeof *d->v);
	d->n = xrealloc(d->n, (d->k + 1) * sizeof *d->n);
	d->v[d->k] = xmalloc(len + 1);
	memcpy(d->v[d->k], doc, len);
	d->n[d->k++] = len;
	return 0;
}

static void where(uint64_t pos, uint64_t size, void *ctx)
{
	struct docs *d = ctx;
	if (pos < d->last_pos || pos > size)
		d->backwards = 1;
	d->last_pos = pos;
	d->last_size = size;
	d->calls++;
}

static void docs_free(struct docs *d)
{
	for (size_t i = 0; i < d->k; i++)
		free(d->v[i]);
	free(d->v);
	free(d->n);
	memset(d, 0, sizeof *d);
}

static int read_as(const char *path, enum corpus_format f, struct docs *d, struct corpus_counts *c, struct err *e)
{
	struct corpus_opts o = {.format = f, .at = where};
	memset(c, 0, sizeof *c);
	return corpus_read_file(path, &o, keep, d, c, e);
}

static int same_docs(const struct docs *a, const struct docs *b)
{
	if (a->k != b->k)
		return 0;
	for (size_t i = 0; i < a->k; i++)
		if (a->n[i] != b->n[i] || memcmp(a->v[i], b->v[i], a->n[i]))
			return 0;
	return 1;
}

TEST(parquet_equals_jsonl)
{
	static const char *const codec[] = {"none", "snappy", "gzip", "zstd"};
	static const char *const kind[] = {"v1-plain", "v1-dict", "v2-plain", "v2-dict"};
	struct docs want = {0};
	struct corpus_counts wc, c;
	struct err e = {0};
	char *jp = t_fix_path("parquet", "texts.jsonl");
	CHECKF(read_as(jp, CORPUS_AUTO, &want, &wc, &e) == 0, "%s", e.msg);
	CHECK(want.k == 26 && wc.empty == 2 && wc.nulls == 0);
	free(jp);
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 4; k++) {
			char name[64];
			snprintf(name, sizeof name, "%s-%s.parquet", codec[i], kind[k]);
			char *p = t_fix_path("parquet", name);
			struct docs got = {0};
			int rc = read_as(p, CORPUS_AUTO, &got, &c, &e);
			CHECKF(rc == 0, "%s: %s", name, e.msg);
			CHECKF(same_docs(&got, &want), "%s: %zu documents, not texts.jsonl's %zu", name, got.k, want.k);
			/* 40 rows: 12 null, 2 empty strings */
			CHECKF(c.docs == wc.docs && c.empty == wc.empty && c.bytes == wc.bytes && c.nulls == 12,
			       "%s: docs %llu empty %llu nulls %llu", name, (unsigned long long)c.docs,
			       (unsigned long long)c.empty, (unsigned long long)c.nulls);
			CHECKF(!got.backwards && got.calls >= 2 && got.last_pos == got.last_size && got.last_size > 0,
			       "%s: at() calls %llu, last %llu of %llu", name, (unsigned long long)got.calls,
			       (unsigned long long)got.last_pos, (unsigned long long)got.last_size);
			/* the same with the format given */
			struct docs again = {0};
			CHECK(read_as(p, CORPUS_PARQUET, &again, &c, &e) == 0 && same_docs(&again, &want));
			docs_free(&again);
			docs_free(&got);
			free(p);
		}
	docs_free(&want);
}

/* A parquet file named as text is parquet by its magic; with another
 * column than "text"; --format parquet on a file without the magic is the
 * reader's refusal. */
TEST(parquet_by_magic_and_column)
{
	struct err e = {0};
	char *src = t_fix_path("parquet", "zstd-v1-dict.parquet");
	char *buf;
	size_t n;
	CHECK(file_read_all(src, 0, &buf, &n, &e) == 0);
	char *p = xasprintf("%s/corpus.txt", dir);
	CHECK(file_write_atomic(p, buf, n, &e) == 0);
	struct docs d = {0};
	struct corpus_counts c;
	CHECKF(read_as(p, CORPUS_AUTO, &d, &c, &e) == 0, "%s", e.msg);
	CHECK(d.k == 26 && c.nulls == 12);
	docs_free(&d);
	struct corpus_opts o = {.format = CORPUS_AUTO, .column = "nosuch"};
	CHECK(corpus_read_file(p, &o, keep, &d, &c, &e) == -1 && e.code == EXIT_USAGE);
	CHECKF(strstr(e.msg, "corpus.txt") && strstr(e.msg, "nosuch"), "%s", e.msg);
	CHECK(d.k == 0);
	char *q = xasprintf("%s/plain.parquet", dir);
	CHECK(file_write_atomic(q, "just text\n", 10, &e) == 0);
	CHECK(read_as(q, CORPUS_AUTO, &d, &c, &e) == -1 && strstr(e.msg, "plain.parquet"));
	free(buf), free(src), free(p), free(q);
}

/* Binary given as text: refused in one line naming the file, nothing
 * passed on; text with invalid UTF-8 and no NUL is read. */
TEST(binary_refused)
{
	static const struct {
		const char *name, *bytes;
		size_t len;
		const char *want;
	} cases[] = {
		{"a.txt.gz", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10, "a gzip file, not text"},
		{"a.zip", "PK\x03\x04\x14\x00\x00\x00", 8, "a zip archive, not text"},
		{"a.zst", "\x28\xb5\x2f\xfd\x20\x00", 6, "a zstd file, not text"},
		{"a.xz", "\xfd" "7zXZ\x00\x00\x04", 8, "an xz file, not text"},
		{"a.bz2", "BZh91AY&SYxyz", 13, "a bzip2 file, not text"},
		{"a16.txt", "\xff\xfeh\x00i\x00", 6, "UTF-16 text"},
		{"nul.jsonl", "{\"text\": \"a\"}\n\x00\n", 16, "offset 14: a NUL byte: binary data, not UTF-8 text"},
		{"shard.json", "SKTOKENS\x01\x00\x00\x00", 12, "offset 9: a NUL byte"},
	};
	struct err e = {0};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char *p = xasprintf("%s/%s", dir, cases[k].name);
		CHECK(file_write_atomic(p, cases[k].bytes, cases[k].len, &e) == 0);
		for (enum corpus_format f = CORPUS_AUTO; f <= CORPUS_JSON; f++) {
			struct docs d = {0};
			struct corpus_counts c;
			err_clear(&e);
			int rc = read_as(p, f, &d, &c, &e);
			CHECKF(rc == -1 && e.code == EXIT_USAGE && d.k == 0, "%s as format %d: rc %d, %zu documents",
			       cases[k].name, (int)f, rc, d.k);
			CHECKF(strstr(e.msg, p) && strstr(e.msg, cases[k].want) && !strchr(e.msg, '\n'), "%s: %s",
			       cases[k].name, e.msg);
			docs_free(&d);
		}
		free(p);
	}
	/* parquet given as text, JSON Lines or JSON */
	char *src = t_fix_path("parquet", "none-v2-plain.parquet");
	for (enum corpus_format f = CORPUS_TEXT; f <= CORPUS_JSON; f++) {
		struct docs d = {0};
		struct corpus_counts c;
		CHECK(read_as(src, f, &d, &c, &e) == -1 && d.k == 0);
		CHECKF(strstr(e.msg, "a parquet file (PAR1 at both ends), not text"), "%s", e.msg);
	}
	free(src);
	/* invalid UTF-8 without a NUL: text, counted */
	char *p = xasprintf("%s/latin1.txt", dir);
	CHECK(file_write_atomic(p, "caf\xe9\n", 5, &e) == 0);
	struct docs d = {0};
	struct corpus_counts c;
	CHECKF(read_as(p, CORPUS_AUTO, &d, &c, &e) == 0, "%s", e.msg);
	CHECK(d.k == 1 && c.invalid_utf8 == 1 && d.last_pos == 5 && d.last_size == 5);
	docs_free(&d);
	free(p);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(parquet_equals_jsonl);
	RUN(parquet_by_magic_and_column);
	RUN(binary_refused);
	dir_remove_tree(dir);
	return t_done();
}
