/* test_parquet.c: data/parquet.c against files written by an independent
 * writer (tests/fixtures/parquet/make.mjs: parquet-wasm, the Rust arrow-rs
 * writer, every file that should read also read back there with hyparquet):
 * each codec x page version x PLAIN / dictionary, a dictionary falling back
 * to PLAIN, nulls, row groups of only nulls, a required column, nested
 * columns beside the text, unknown Thrift fields of every type, an
 * INDEX_PAGE; the values read equal the writer's input (rows.json, hex
 * bytes). Then every refusal the reader promises, each a one-line message
 * naming the file, the row group and the feature; every cut and every
 * byte flip of a valid file read safely; and the Thrift compact reader's
 * skipping and limits on hand-made bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/parquet.h"
#include "data/thrift.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "t.h"
#include "tfix.h"

/* ---- expected rows ---- */

struct row {
	int null;
	char *s;
	size_t len;
};

static int unhex(const char *h, char **out, size_t *len)
{
	size_t n = strlen(h);
	if (n % 2)
		return -1;
	char *s = xmalloc(n / 2 + 1);
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(h + 2 * i, "%2x", &v) != 1)
			return free(s), -1;
		s[i] = (char)v;
	}
	*out = s;
	*len = n / 2;
	return 0;
}

/* rows of <fixtures>/parquet/<name>: an array of hex strings or nulls */
static struct row *expected(const char *name, size_t *n)
{
	cJSON *j = t_fix_json("parquet", name);
	*n = 0;
	if (!j)
		return NULL;
	size_t k = (size_t)cJSON_GetArraySize(j), i = 0;
	struct row *r = xcalloc(k + 1, sizeof *r);
	for (const cJSON *x = j->child; x; x = x->next, i++) {
		if (cJSON_IsNull(x))
			r[i].null = 1;
		else if (!cJSON_IsString(x) || unhex(x->valuestring, &r[i].s, &r[i].len) < 0)
			printf("  %s: entry %zu not hex\n", name, i);
	}
	cJSON_Delete(j);
	*n = k;
	return r;
}

static void rows_free(struct row *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++)
		free(r[i].s);
	free(r);
}

/* ---- what a read passes on ---- */

struct seen {
	size_t n, cap;
	uint64_t *row;
	char **s;
	size_t *len;
	int stop_at;   /* >= 0: fail at this value */
};

static int collect(const char *s, size_t len, uint64_t row, void *ctx, struct err *e)
{
	struct seen *v = ctx;
	if (v->stop_at >= 0 && v->n == (size_t)v->stop_at)
		return err_set(e, EXIT_CHECK, "stopped at row %llu", (unsigned long long)row);
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 64;
		v->row = xrealloc(v->row, v->cap * sizeof *v->row);
		v->s = xrealloc(v->s, v->cap * sizeof *v->s);
		v->len = xrealloc(v->len, v->cap * sizeof *v->len);
	}
	v->row[v->n] = row;
	v->s[v->n] = xmalloc(len + 1);
	memcpy(v->s[v->n], s, len);
	v->len[v->n] = len;
	v->n++;
	return 0;
}

static void seen_free(struct seen *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->s[i]);
	free(v->row);
	free(v->s);
	free(v->len);
	memset(v, 0, sizeof *v);
}

/* Compare what was passed on with the expected rows. */
static void check_rows(const char *file, const struct seen *v, const struct pq_counts *c,
		       const struct row *want, size_t n)
{
	size_t k = 0, nulls = 0, bytes = 0;
	for (size_t i = 0; i < n; i++) {
		if (want[i].null) {
			nulls++;
			continue;
		}
		bytes += want[i].len;
		CHECKF(k < v->n, "%s: row %zu missing", file, i);
		if (k >= v->n)
			return;
		CHECKF(v->row[k] == i, "%s: value %zu at row %llu, want row %zu", file, k,
		       (unsigned long long)v->row[k], i);
		CHECKF(v->len[k] == want[i].len && memcmp(v->s[k], want[i].s, want[i].len) == 0,
		       "%s: row %zu differs (%zu bytes, want %zu)", file, i, v->len[k], want[i].len);
		k++;
	}
	CHECKF(k == v->n, "%s: %zu values, want %zu", file, v->n, k);
	CHECKF(c->rows == n && c->nulls == nulls && c->values == n - nulls && c->bytes == bytes,
	       "%s: counts rows %llu nulls %llu values %llu bytes %llu, want %zu %zu %zu %zu", file,
	       (unsigned long long)c->rows, (unsigned long long)c->nulls,
	       (unsigned long long)c->values, (unsigned long long)c->bytes, n, nulls, n - nulls, bytes);
}

static char *fix(const char *name)
{
	return t_fix_path("parquet", name);
}

static const char *const standard[] = {
	"none-v1-plain", "none-v1-dict", "none-v2-plain", "none-v2-dict",
	"snappy-v1-plain", "snappy-v1-dict", "snappy-v2-plain", "snappy-v2-dict",
	"gzip-v1-plain", "gzip-v1-dict", "gzip-v2-plain", "gzip-v2-dict",
	"zstd-v1-plain", "zstd-v1-dict", "zstd-v2-plain", "zstd-v2-dict",
	"fallback", "unknown", "index_page",
};

/* Read the whole of path's column "text" and compare with rows.json. */
static void check_standard(const char *name, int by_group)
{
	size_t n;
	struct row *want = expected("rows.json", &n);
	char file[256];
	snprintf(file, sizeof file, "%s.parquet", name);
	char *path = fix(file);
	struct pq_file *f;
	struct err e;
	struct seen v = {.stop_at = -1};
	struct pq_counts c = {0};
	int rc = pq_open(&f, path, "text", &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		CHECK(pq_rows(f) == n);
		CHECK(pq_row_groups(f) == 3);
		CHECK(pq_row_group_rows(f, 0) == 16 && pq_row_group_rows(f, 1) == 16 &&
		      pq_row_group_rows(f, 2) == 8);
		for (size_t g = 0; g < pq_row_groups(f); g++)
			CHECK(pq_row_group_bytes(f, g) > 0);
		const char *codec = strncmp(name, "none", 4) == 0 ? "UNCOMPRESSED" :
				    strncmp(name, "snappy", 6) == 0 || !strcmp(name, "fallback") ? "SNAPPY" :
				    strncmp(name, "gzip", 4) == 0 || !strcmp(name, "unknown") ? "GZIP" :
				    strncmp(name, "zstd", 4) == 0 ? "ZSTD" : "UNCOMPRESSED";
		CHECK_STREQ(pq_row_group_codec(f, 1), codec);
		if (by_group) {
			for (size_t g = 0; g < pq_row_groups(f) && rc == 0; g++)
				rc = pq_read_row_group(f, g, collect, &v, &c, &e);
		} else {
			rc = pq_read(f, collect, &v, &c, &e);
		}
		CHECKF(rc == 0, "%s", e.msg);
		check_rows(file, &v, &c, want, n);
		/* a second read of the same reader gives the same */
		seen_free(&v);
		v.stop_at = -1;
		memset(&c, 0, sizeof c);
		CHECK(pq_read(f, collect, &v, &c, &e) == 0);
		check_rows(file, &v, &c, want, n);
		pq_close(f);
	}
	seen_free(&v);
	free(path);
	rows_free(want, n);
}

TEST(parquet_codecs_pages_encodings)
{
	for (size_t i = 0; i < sizeof standard / sizeof *standard; i++)
		check_standard(standard[i], 0);
}

TEST(parquet_row_group_by_row_group)
{
	check_standard("zstd-v2-dict", 1);
	check_standard("gzip-v1-plain", 1);
}

TEST(parquet_memory_equals_file)
{
	size_t n;
	struct row *want = expected("rows.json", &n);
	for (size_t i = 0; i < sizeof standard / sizeof *standard; i++) {
		char file[256], *buf;
		size_t len;
		struct err e;
		snprintf(file, sizeof file, "%s.parquet", standard[i]);
		char *path = fix(file);
		CHECK(file_read_all(path, 0, &buf, &len, &e) == 0);
		struct pq_file *f;
		struct seen v = {.stop_at = -1};
		struct pq_counts c = {0};
		int rc = pq_open_mem(&f, buf, len, file, "text", &e);
		CHECKF(rc == 0, "%s", e.msg);
		if (rc == 0) {
			CHECKF(pq_read(f, collect, &v, &c, &e) == 0, "%s", e.msg);
			check_rows(file, &v, &c, want, n);
			pq_close(f);
		}
		seen_free(&v);
		free(buf);
		free(path);
	}
	rows_free(want, n);
}

TEST(parquet_required_column)
{
	size_t n;
	struct row *want = expected("required.json", &n);
	char *path = fix("required.parquet");
	struct pq_file *f;
	struct err e;
	struct seen v = {.stop_at = -1};
	struct pq_counts c = {0};
	int rc = pq_open(&f, path, "text", &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		CHECKF(pq_read(f, collect, &v, &c, &e) == 0, "%s", e.msg);
		check_rows("required.parquet", &v, &c, want, n);
		/* the NUL inside a value and the empty value come through */
		CHECK(v.n == 6 && v.len[1] == 3 && memcmp(v.s[1], "a\0b", 3) == 0 && v.len[2] == 0);
		pq_close(f);
	}
	seen_free(&v);
	free(path);
	rows_free(want, n);
}

/* A page header larger than the first read of one (an unknown 6000-byte
 * field) before a page larger than it: the header is read again through a
 * larger window, the page on its own. */
TEST(parquet_large_page_and_header)
{
	size_t n;
	struct row *want = expected("bigpage.json", &n);
	char *path = fix("bigpage.parquet"), *buf;
	struct pq_file *f;
	struct err e;
	for (int mem = 0; mem <= 1; mem++) {
		struct seen v = {.stop_at = -1};
		struct pq_counts c = {0};
		size_t len;
		int rc;
		if (mem) {
			CHECK(file_read_all(path, 0, &buf, &len, &e) == 0);
			rc = pq_open_mem(&f, buf, len, "bigpage.parquet", "text", &e);
		} else {
			rc = pq_open(&f, path, "text", &e);
		}
		CHECKF(rc == 0, "%s", e.msg);
		if (rc == 0) {
			CHECKF(pq_read(f, collect, &v, &c, &e) == 0, "%s", e.msg);
			check_rows("bigpage.parquet", &v, &c, want, n);
			CHECK(v.n == 2 && v.len[1] == 4500);
			pq_close(f);
		}
		seen_free(&v);
		if (mem)
			free(buf);
	}
	free(path);
	rows_free(want, n);
}

TEST(parquet_nested_columns_beside)
{
	size_t n;
	struct row *want = expected("rows.json", &n);
	char *path = fix("nested.parquet");
	struct pq_file *f;
	struct err e;
	struct seen v = {.stop_at = -1};
	struct pq_counts c = {0};
	int rc = pq_open(&f, path, "text", &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		CHECKF(pq_read(f, collect, &v, &c, &e) == 0, "%s", e.msg);
		check_rows("nested.parquet", &v, &c, want, 6);
		pq_close(f);
	}
	seen_free(&v);
	const struct { const char *col, *msg; } bad[] = {
		{"meta", "column 'meta' is a nested group, not supported"},
		{"tags", "column 'tags' is a nested group, not supported"},
		{"id", "column 'id' is INT64, not a string"},
		{"lang", "no column 'lang' (columns: id, meta, text, tags)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		CHECK(pq_open(&f, path, bad[i].col, &e) == -1 && f == NULL);
		CHECKF(strstr(e.msg, bad[i].msg) && strstr(e.msg, "nested.parquet") &&
		       e.code == EXIT_USAGE, "%s", e.msg);
	}
	free(path);
	rows_free(want, n);
}

/* Every refusal: at open or at read, code, the file, the place and the
 * feature in a one-line message. */
TEST(parquet_refusals)
{
	const struct {
		const char *file, *col;
		int at_read;
		const char *where, *what;
	} cases[] = {
		{"truncated.parquet", "text", 0, "", "not a parquet file (no PAR1 at its start and end)"},
		{"badmagic.parquet", "text", 0, "", "not a parquet file"},
		{"footer_len.parquet", "text", 0, "", "footer length 3425 past the file's 3425 bytes"},
		{"offset_past.parquet", "text", 0, "row group 1, column 'text'", "outside the file's data"},
		{"lzo.parquet", "text", 0, "row group 2, column 'text'", "codec LZO not supported"},
		{"brotli.parquet", "text", 0, "row group 0, column 'text'", "codec BROTLI not supported"},
		{"lz4raw.parquet", "text", 0, "row group 0, column 'text'", "codec LZ4_RAW not supported"},
		{"repeated.parquet", "text", 0, "column 'text'", "is repeated (a list), not supported"},
		{"binary.parquet", "blob", 0, "column 'blob'", "BYTE_ARRAY without a string annotation"},
		{"snappy-v1-dict.parquet", "id", 0, "column 'id'", "is INT64, not a string"},
		{"deep.parquet", "text", 0, "footer", "metadata nested too deep"},
		{"csize_long.parquet", "text", 1, "row group 1, column 'text', page at byte",
		 "past the column chunk's end"},
		{"csize_short.parquet", "text", 1, "row group 0, column 'text', page at byte",
		 "snappy data corrupt"},
		{"usize_lie.parquet", "text", 1, "row group 0, column 'text', page at byte",
		 "zstd data of 127 bytes, the page says 128"},
		{"bitpacked.parquet", "text", 1, "row group 0, column 'text', page at byte",
		 "definition level encoding BIT_PACKED not supported"},
		{"delta.parquet", "text", 1, "row group 0, column 'text', page at byte",
		 "value encoding DELTA_BYTE_ARRAY not supported"},
		{"badutf8.parquet", "text", 1, "row group 0, row 4 (row 4 of the file)",
		 "value not valid UTF-8"},
		{"pare.parquet", "text", 0, "", "encrypted parquet file (PARE), not supported"},
		{"dict_twice.parquet", "text", 1, "row group 0, column 'text', page at byte",
		 "a second dictionary page"},
		{"rows_lie.parquet", "text", 0, "footer", "41 rows in the file, 40 in its row groups"},
		{"values_lie.parquet", "text", 1, "row group 1, column 'text'",
		 "pages hold 16 values, the chunk says 17"},
		{"nulls_lie.parquet", "text", 1, "row group 0, column 'text', page at byte",
		 "1 nulls, the header says 2"},
		{"leftover.parquet", "text", 1, "row group 0, column 'text', page at byte",
		 "3 bytes left over after the page's values"},
		{"gzip_corrupt.parquet", "text", 1, "row group 0, column 'text', page at byte",
		 "gzip data corrupt"},
		{"dict_index.parquet", "text", 1, "row group 0, column 'text', page at byte",
		 "dictionary index 10 out of range (10 values, row 15 of the row group)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *path = fix(cases[i].file);
		struct pq_file *f;
		struct err e = {0};
		struct seen v = {.stop_at = -1};
		int rc = pq_open(&f, path, cases[i].col, &e);
		if (cases[i].at_read) {
			CHECKF(rc == 0, "%s: %s", cases[i].file, e.msg);
			if (rc == 0) {
				rc = pq_read(f, collect, &v, NULL, &e);
				pq_close(f);
			}
		}
		CHECKF(rc == -1, "%s accepted", cases[i].file);
		CHECKF(e.code == EXIT_USAGE && strstr(e.msg, cases[i].file) &&
		       strstr(e.msg, cases[i].where) && strstr(e.msg, cases[i].what) &&
		       !strchr(e.msg, '\n'),
		       "%s: '%s'", cases[i].file, e.msg);
		seen_free(&v);
		free(path);
	}
	/* the values before the bad one were passed on, in order */
	char *path = fix("badutf8.parquet");
	struct pq_file *f;
	struct err e;
	struct seen v = {.stop_at = -1};
	if (pq_open(&f, path, "text", &e) == 0) {
		CHECK(pq_read(f, collect, &v, NULL, &e) == -1);
		CHECK(v.n == 3 && v.row[2] == 3);
		pq_close(f);
	}
	seen_free(&v);
	free(path);
	/* a file that is not there, a folder */
	CHECK(pq_open(&f, "/nonexistent/x.parquet", "text", &e) == -1 && e.code == EXIT_SYS &&
	      strstr(e.msg, "cannot open '/nonexistent/x.parquet'"));
	CHECK(pq_open(&f, t_fixtures(), "text", &e) == -1 && strstr(e.msg, "not a regular file"));
}

TEST(parquet_callback_stops_the_read)
{
	char *path = fix("gzip-v2-dict.parquet");
	struct pq_file *f;
	struct err e;
	struct seen v = {.stop_at = 5};
	struct pq_counts c = {0};
	CHECK(pq_open(&f, path, "text", &e) == 0);
	CHECK(pq_read(f, collect, &v, &c, &e) == -1);
	CHECK(e.code == EXIT_CHECK && strstr(e.msg, "stopped at row"));
	CHECK(v.n == 5);
	pq_close(f);
	seen_free(&v);
	free(path);
}

/* Every prefix and every byte flip of valid files: refused with a one-line
 * message, or read with every value valid UTF-8 and counts that add up. */
static int count_only(const char *s, size_t len, uint64_t row, void *ctx, struct err *e)
{
	(void)s, (void)row, (void)e;
	*(size_t *)ctx += len;
	return 0;
}

static void mangle(const char *file)
{
	char *path = fix(file), *buf;
	size_t len;
	struct err e;
	CHECK(file_read_all(path, 0, &buf, &len, &e) == 0);
	size_t refused = 0, read = 0;
	for (size_t k = 0; k < 2 * len + 1; k++) {
		size_t n = len;
		unsigned char *b = xmalloc(len + 1);
		memcpy(b, buf, len);
		if (k <= len)
			n = k;                    /* a prefix */
		else
			b[k - len - 1] ^= 0x5a;   /* a flipped byte */
		struct pq_file *f;
		int rc = pq_open_mem(&f, b, n, "m.parquet", "text", &e);
		if (rc == 0) {
			size_t bytes = 0;
			struct pq_counts c = {0};
			rc = pq_read(f, count_only, &bytes, &c, &e);
			if (rc == 0)
				CHECK(c.rows == pq_rows(f) && c.values + c.nulls == c.rows && c.bytes == bytes);
			pq_close(f);
		}
		if (rc == 0) {
			read++;
		} else {
			refused++;
			CHECKF(e.msg[0] && !strchr(e.msg, '\n') && strstr(e.msg, "'m.parquet'") &&
			       (e.code == EXIT_USAGE), "%s", e.msg);
		}
		free(b);
	}
	/* every prefix is refused; flips in values or unread fields may read */
	CHECK(refused >= len);
	(void)read;
	free(buf);
	free(path);
}

TEST(parquet_every_cut_and_flip)
{
	mangle("snappy-v2-dict.parquet");
	mangle("none-v1-plain.parquet");
	mangle("gzip-v1-dict.parquet");
	mangle("zstd-v2-plain.parquet");
}

/* ---- the Thrift compact reader ---- */

static int skip_all(const uint8_t *b, size_t n, const char **why)
{
	struct th_reader r;
	th_init(&r, b, n);
	int rc = th_skip(&r, TH_STRUCT);
	*why = r.bad;
	return rc < 0 ? -1 : (int)th_pos(&r);
}

TEST(thrift_skips_every_type)
{
	/* struct { 1: true, 2: i8 -1, 3: i16 -2 (zigzag 3), 4: i32 150
	 * (zigzag 300 = ac 02), 5: i64, 6: double, 7: binary "ab", 8: list
	 * of 2 bools, 9: set<i32> {1}, 10: map<binary, struct> {"k": {}},
	 * 11: empty map, field id 300 in the long form: i32 0, stop } */
	const uint8_t b[] = {
		0x11, 0x13, 0xff, 0x14, 0x03, 0x15, 0xac, 0x02, 0x16, 0x01,
		0x17, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x18, 0x02, 'a', 'b',
		0x19, 0x21, 0x01, 0x02, 0x1a, 0x15, 0x02, 0x1b, 0x01, 0x8c, 0x01, 'k', 0x00,
		0x1b, 0x00, 0x05, 0xd8, 0x04, 0x00, 0x00, 0xee};
	const char *why;
	CHECK(skip_all(b, sizeof b, &why) == (int)sizeof b - 1);
	/* any cut is refused as cut */
	for (size_t n = 0; n + 1 < sizeof b; n++) {
		struct th_reader r;
		th_init(&r, b, n);
		CHECK(th_skip(&r, TH_STRUCT) == -1 && r.cut);
	}
}

TEST(thrift_reads_fields)
{
	/* struct { 1: i32 -3, 2: i64 2^40, 4: binary "xyz", 5: list<i32>
	 * [1, 2] in the long size form (15 + varint 2 is refused: below 15) } */
	const uint8_t b[] = {0x15, 0x05, 0x16, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x28, 0x03,
			     'x', 'y', 'z', 0x19, 0x25, 0x02, 0x04, 0x00};
	struct th_reader r;
	th_init(&r, b, sizeof b);
	int16_t last = 0, id;
	int t, k;
	int32_t a = 0;
	int64_t c = 0;
	const uint8_t *p = NULL;
	size_t n = 0;
	CHECK(th_struct_begin(&r) == 0);
	CHECK(th_field(&r, &last, &id, &t) == 1 && id == 1 && th_i32(&r, t, &a) == 0 && a == -3);
	CHECK(th_field(&r, &last, &id, &t) == 1 && id == 2 && th_i64(&r, t, &c) == 0 &&
	      c == (int64_t)1 << 40);
	CHECK(th_field(&r, &last, &id, &t) == 1 && id == 4 && th_binary(&r, t, &p, &n) == 0 &&
	      n == 3 && memcmp(p, "xyz", 3) == 0);
	int elem;
	uint32_t m;
	CHECK(th_field(&r, &last, &id, &t) == 1 && id == 5 && th_list(&r, t, &elem, &m) == 0 &&
	      elem == TH_I32 && m == 2);
	CHECK(th_i32(&r, elem, &a) == 0 && a == 1 && th_i32(&r, elem, &a) == 0 && a == 2);
	th_list_end(&r);
	k = th_field(&r, &last, &id, &t);
	CHECK(k == 0 && r.depth == 0 && !r.bad);
	/* a type mismatch is refused: field 1 read as binary */
	th_init(&r, b, sizeof b);
	last = 0;
	th_struct_begin(&r);
	th_field(&r, &last, &id, &t);
	CHECK(th_binary(&r, t, &p, &n) == -1 && r.bad && !r.cut);
}

TEST(thrift_limits)
{
	const char *why;
	/* structs nested TH_MAX_DEPTH deep are read, one more is refused */
	uint8_t b[2 * TH_MAX_DEPTH + 4];
	for (int depth = TH_MAX_DEPTH; depth <= TH_MAX_DEPTH + 1; depth++) {
		size_t n = 0;
		for (int i = 1; i < depth; i++)
			b[n++] = 0x1c;  /* field 1, struct */
		for (int i = 0; i < depth; i++)
			b[n++] = 0;
		int rc = skip_all(b, n, &why);
		if (depth == TH_MAX_DEPTH)
			CHECKF(rc == (int)n, "%d: %s", rc, why ? why : "");
		else
			CHECK(rc == -1 && strstr(why, "nested too deep"));
	}
	/* a list that says more elements than bytes left */
	const uint8_t big[] = {0x19, 0xf5, 0xff, 0xff, 0x03, 0x00};
	CHECK(skip_all(big, sizeof big, &why) == -1 && strstr(why, "ends early"));
	/* a map likewise */
	const uint8_t map[] = {0x1b, 0xff, 0xff, 0x03, 0x55, 0x00};
	CHECK(skip_all(map, sizeof map, &why) == -1);
	/* a varint of 11 bytes; one of 10 above 64 bits */
	const uint8_t v11[] = {0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0};
	CHECK(skip_all(v11, sizeof v11, &why) == -1 && strstr(why, "varint"));
	const uint8_t v10[] = {0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0};
	CHECK(skip_all(v10, sizeof v10, &why) == -1 && strstr(why, "varint too large"));
	/* an i32 field out of range, a type nibble 13 */
	const uint8_t i32[] = {0x15, 0x80, 0x80, 0x80, 0x80, 0x10, 0};
	CHECK(skip_all(i32, sizeof i32, &why) == -1 && strstr(why, "range"));
	const uint8_t t13[] = {0x1d, 0};
	CHECK(skip_all(t13, sizeof t13, &why) == -1 && strstr(why, "unknown field type"));
	/* a bool element other than 0, 1, 2 */
	const uint8_t bl[] = {0x19, 0x11, 0x07, 0};
	CHECK(skip_all(bl, sizeof bl, &why) == -1 && strstr(why, "bool"));
}

int main(void)
{
	RUN(parquet_codecs_pages_encodings);
	RUN(parquet_row_group_by_row_group);
	RUN(parquet_memory_equals_file);
	RUN(parquet_required_column);
	RUN(parquet_large_page_and_header);
	RUN(parquet_nested_columns_beside);
	RUN(parquet_refusals);
	RUN(parquet_callback_stops_the_read);
	RUN(parquet_every_cut_and_flip);
	RUN(thrift_skips_every_type);
	RUN(thrift_reads_fields);
	RUN(thrift_limits);
	return t_done();
}
