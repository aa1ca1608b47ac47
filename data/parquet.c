/* parquet.c: the streaming reader of one string column (parquet.h).
 *
 * pq_open reads the last 8 bytes (footer length, magic), then the footer,
 * and keeps per row group only the column's chunk: byte range, codec,
 * counts. pq_read_row_group walks that chunk page by page: the header
 * (Thrift compact, fetched through a growing window), the page body,
 * decompressed into a buffer reused from page to page; definition levels and
 * dictionary indices are decoded as runs, so a run of nulls costs one step.
 *
 * Leaves out what parquet.h leaves out. Reference: Apache Parquet format,
 * src/main/thrift/parquet.thrift (field ids below), Encodings.md (PLAIN,
 * RLE / bit-packed hybrid, dictionary), README.md (file layout, data page
 * v1 and v2 layout).
 */
#include "data/parquet.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "data/thrift.h"
#include "lib/utf8.h"

/* parquet.thrift's enums (the values read) */
enum { T_BYTE_ARRAY = 6 };
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1, REP_REPEATED = 2 };
enum { CODEC_UNCOMPRESSED = 0, CODEC_SNAPPY = 1, CODEC_GZIP = 2, CODEC_ZSTD = 6 };
enum { ENC_PLAIN = 0, ENC_PLAIN_DICTIONARY = 2, ENC_RLE = 3, ENC_RLE_DICTIONARY = 8 };
enum { PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3 };
enum { CONV_UTF8 = 0, LOGICAL_STRING = 1 };

#define SCHEMA_MAX_DEPTH 64
#define HEADER_WINDOW (4u << 10)   /* first read of a page header (and small pages) */

static const char *const type_names[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE",
					  "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
static const char *const codec_names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4",
					   "ZSTD", "LZ4_RAW"};
static const char *const enc_names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE",
					 "BIT_PACKED", "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY",
					 "DELTA_BYTE_ARRAY", "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
static const char *const conv_names[] = {
	"UTF8", "MAP", "MAP_KEY_VALUE", "LIST", "ENUM", "DECIMAL", "DATE", "TIME_MILLIS",
	"TIME_MICROS", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS", "UINT_8", "UINT_16", "UINT_32",
	"UINT_64", "INT_8", "INT_16", "INT_32", "INT_64", "JSON", "BSON", "INTERVAL"};
static const char *const logical_names[] = {
	"?", "STRING", "MAP", "LIST", "ENUM", "DECIMAL", "DATE", "TIME", "TIMESTAMP", "?",
	"INTEGER", "UNKNOWN", "JSON", "BSON", "UUID", "FLOAT16", "VARIANT", "GEOMETRY", "GEOGRAPHY"};

#define NAME_OF(table, v, buf) \
	((v) >= 0 && (size_t)(v) < sizeof table / sizeof *table ? table[v] : \
	 (snprintf(buf, sizeof buf, "%d", (int)(v)), buf))

struct buf {
	uint8_t *p;
	size_t cap;
};

static uint8_t *buf_need(struct buf *b, size_t n)
{
	if (n == 0)
		n = 1;
	if (b->cap < n) {
		free(b->p);
		b->p = xmalloc(n);
		b->cap = n;
	}
	return b->p;
}

/* The column's chunk in one row group. */
struct pq_chunk {
	uint64_t start, end;  /* its pages: bytes [start, end) of the file */
	int64_t values;       /* ColumnMetaData.num_values: levels, nulls included */
	int64_t rows;         /* RowGroup.num_rows */
	uint64_t first_row;   /* its first row's index in the file */
	int codec;
};

struct span {
	uint32_t off, len;
};

struct pq_file {
	char *name;
	char *column;
	int fd;               /* -1 over memory */
	const uint8_t *mem;
	uint64_t size;
	uint64_t data_end;    /* the footer's start: pages lie in [4, data_end) */
	int optional;         /* max definition level: 1 OPTIONAL, 0 REQUIRED */
	uint64_t rows;
	size_t n_rg;
	struct pq_chunk *rg;
	struct buf hdr, comp, page, dict;
	struct span *ent;     /* the dictionary's values in dict */
	size_t n_ent, cap_ent;
	z_stream z;
	int z_ready;
	ZSTD_DCtx *zd;
};

/* ---- reading the file ---- */

/* Bytes [off, off + n) of the file: a pointer into memory, or read into b.
 * The range was checked against the file by the caller. */
static int fetch(struct pq_file *f, uint64_t off, size_t n, struct buf *b, const uint8_t **out,
		 struct err *e)
{
	if (off > f->size || n > f->size - off)
		return err_set(e, EXIT_USAGE, "'%s': read of %zu bytes at byte %llu past the file's end",
			       f->name, n, (unsigned long long)off);
	if (f->mem) {
		*out = f->mem + off;
		return 0;
	}
	uint8_t *p = buf_need(b, n);
	size_t got = 0;
	while (got < n) {
		ssize_t k = pread(f->fd, p + got, n - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return err_errno(e, EXIT_SYS, "cannot read '%s'", f->name);
		if (k == 0)
			return err_set(e, EXIT_SYS, "cannot read '%s': the file shrank while read", f->name);
		got += (size_t)k;
	}
	*out = p;
	return 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- the footer ---- */

struct schema_el {
	const uint8_t *name;
	size_t name_len;
	int32_t type;          /* -1 when absent (groups) */
	int32_t rep;           /* -1 when absent (the root) */
	int32_t n_children;    /* -1 when absent (leaves) */
	int32_t converted;     /* -1 when absent */
	int logical;           /* LogicalType's member id; 0 when absent */
};

struct footer {
	struct pq_file *f;
	struct err *e;
	struct th_reader *r;
	struct schema_el *el;
	size_t n_el;
	size_t leaf;          /* the column's index among the leaves */
	size_t n_leaves;
	int64_t num_rows;
	size_t len;           /* the footer's bytes */
};

/* A malformed footer: the Thrift reader's reason and where. */
static int meta_bad(struct footer *ft, const char *what)
{
	struct th_reader *r = ft->r;
	return err_set(ft->e, EXIT_USAGE, "'%s': footer: %s at byte %zu of %zu", ft->f->name,
		       r->bad ? r->bad : what, th_pos(r), ft->len);
}

static int name_is(const uint8_t *p, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(p, s, n) == 0;
}

/* LogicalType (a union of empty or small structs): the member's id. */
static int read_logical(struct footer *ft, int *out)
{
	struct th_reader *r = ft->r;
	int16_t last = 0, id;
	int t, k, members = 0;
	if (th_struct_begin(r) < 0)
		return -1;
	while ((k = th_field(r, &last, &id, &t)) == 1) {
		if (++members > 1) {
			r->bad = "logical type with two members";
			return -1;
		}
		*out = id;
		if (th_skip(r, t) < 0)
			return -1;
	}
	return k;
}

static int read_schema_el(struct footer *ft, struct schema_el *s)
{
	struct th_reader *r = ft->r;
	int16_t last = 0, id;
	int t, k, named = 0;
	*s = (struct schema_el){NULL, 0, -1, -1, -1, -1, 0};
	if (th_struct_begin(r) < 0)
		return -1;
	while ((k = th_field(r, &last, &id, &t)) == 1) {
		int rc;
		switch (id) {
		case 1: rc = th_i32(r, t, &s->type); break;
		case 3: rc = th_i32(r, t, &s->rep); break;
		case 4: rc = th_binary(r, t, &s->name, &s->name_len); named = 1; break;
		case 5:
			rc = th_i32(r, t, &s->n_children);
			if (rc == 0 && s->n_children < 0) {
				r->bad = "schema element with a negative number of children";
				rc = -1;
			}
			break;
		case 6: rc = th_i32(r, t, &s->converted); break;
		case 10: rc = t == TH_STRUCT ? read_logical(ft, &s->logical) : (r->bad = "logical type not a struct", -1); break;
		default: rc = th_skip(r, t); break;
		}
		if (rc < 0)
			return -1;
	}
	if (k < 0)
		return -1;
	if (!named) {
		r->bad = "schema element without a name";
		return -1;
	}
	return 0;
}

static int read_schema(struct footer *ft, int type)
{
	struct th_reader *r = ft->r;
	int elem;
	uint32_t n;
	size_t cap = 0;
	if (th_list(r, type, &elem, &n) < 0)
		return -1;
	if (elem != TH_STRUCT && n) {
		r->bad = "schema not a list of structs";
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (ft->n_el == cap) {
			cap = cap ? 2 * cap : 16;
			ft->el = xrealloc(ft->el, cap * sizeof *ft->el);
		}
		if (read_schema_el(ft, &ft->el[ft->n_el]) < 0)
			return -1;
		ft->n_el++;
	}
	th_list_end(r);
	return 0;
}

/* Count the leaves under el[*i] (advancing *i past its subtree). */
static int count_leaves(struct footer *ft, size_t *i, int depth, size_t *leaves)
{
	const struct schema_el *s = &ft->el[(*i)++];
	if (s->n_children < 0) {
		if (s->type < 0)
			return err_set(ft->e, EXIT_USAGE, "'%s': schema: leaf '%.*s' without a type",
				       ft->f->name, (int)s->name_len, (const char *)s->name);
		(*leaves)++;
		return 0;
	}
	if (depth >= SCHEMA_MAX_DEPTH)
		return err_set(ft->e, EXIT_USAGE, "'%s': schema nested deeper than %d levels",
			       ft->f->name, SCHEMA_MAX_DEPTH);
	for (int32_t k = 0; k < s->n_children; k++) {
		if (*i >= ft->n_el)
			return err_set(ft->e, EXIT_USAGE,
				       "'%s': schema: children counts exceed its %zu elements",
				       ft->f->name, ft->n_el);
		if (count_leaves(ft, i, depth + 1, leaves) < 0)
			return -1;
	}
	return 0;
}

/* Find the column among the root's children and check it is a flat string. */
static int find_column(struct footer *ft)
{
	struct pq_file *f = ft->f;
	struct err *e = ft->e;
	char names[256] = "", nb[16];
	size_t used = 0, i = 1, leaves = 0;
	const struct schema_el *col = NULL;
	if (ft->n_el == 0 || ft->el[0].n_children < 0)
		return err_set(e, EXIT_USAGE, "'%s': schema: no root group", f->name);
	for (int32_t k = 0; k < ft->el[0].n_children; k++) {
		if (i >= ft->n_el)
			return err_set(e, EXIT_USAGE,
				       "'%s': schema: children counts exceed its %zu elements", f->name,
				       ft->n_el);
		const struct schema_el *s = &ft->el[i];
		if (name_is(s->name, s->name_len, f->column)) {
			if (col)
				return err_set(e, EXIT_USAGE, "'%s': schema: two columns named '%s'",
					       f->name, f->column);
			col = s;
			ft->leaf = leaves;
		}
		if (used + s->name_len + 8 < sizeof names)
			used += (size_t)snprintf(names + used, sizeof names - used, "%s%.*s",
						 k ? ", " : "", (int)s->name_len, (const char *)s->name);
		else if (used + 6 < sizeof names && !strstr(names, "..."))
			used += (size_t)snprintf(names + used, sizeof names - used, ", ...");
		if (count_leaves(ft, &i, 1, &leaves) < 0)
			return -1;
	}
	if (i != ft->n_el)
		return err_set(e, EXIT_USAGE, "'%s': schema: %zu elements outside the root's children",
			       f->name, ft->n_el - i);
	ft->n_leaves = leaves;
	if (!col)
		return err_set(e, EXIT_USAGE, "'%s': no column '%s' (columns: %s)", f->name, f->column,
			       names);
	if (col->n_children >= 0)
		return err_set(e, EXIT_USAGE,
			       "'%s': column '%s' is a nested group, not supported (a flat string column is)",
			       f->name, f->column);
	if (col->rep == REP_REPEATED)
		return err_set(e, EXIT_USAGE,
			       "'%s': column '%s' is repeated (a list), not supported (a flat string column is)",
			       f->name, f->column);
	if (col->rep != REP_REQUIRED && col->rep != REP_OPTIONAL)
		return err_set(e, EXIT_USAGE, "'%s': schema: column '%s' has no valid repetition type",
			       f->name, f->column);
	if (col->type != T_BYTE_ARRAY)
		return err_set(e, EXIT_USAGE,
			       "'%s': column '%s' is %s, not a string (BYTE_ARRAY annotated UTF8 or STRING)",
			       f->name, f->column, NAME_OF(type_names, col->type, nb));
	if (col->logical && col->logical != LOGICAL_STRING)
		return err_set(e, EXIT_USAGE,
			       "'%s': column '%s' is BYTE_ARRAY of logical type %s, not a string",
			       f->name, f->column, NAME_OF(logical_names, col->logical, nb));
	if (col->converted >= 0 && col->converted != CONV_UTF8)
		return err_set(e, EXIT_USAGE,
			       "'%s': column '%s' is BYTE_ARRAY of converted type %s, not a string",
			       f->name, f->column, NAME_OF(conv_names, col->converted, nb));
	if (col->logical != LOGICAL_STRING && col->converted != CONV_UTF8)
		return err_set(e, EXIT_USAGE,
			       "'%s': column '%s' is BYTE_ARRAY without a string annotation (binary), not text",
			       f->name, f->column);
	f->optional = col->rep == REP_OPTIONAL;
	return 0;
}

/* ColumnMetaData of the column in row group rg. */
static int read_column_meta(struct footer *ft, size_t rg, struct pq_chunk *c)
{
	struct th_reader *r = ft->r;
	struct pq_file *f = ft->f;
	int16_t last = 0, id;
	int t, k;
	int32_t type = -1, codec = -1;
	int64_t data_off = -1, dict_off = -1, total = -1, n = -1;
	int path_ok = -1;
	char nb[16];
	if (th_struct_begin(r) < 0)
		return meta_bad(ft, "");
	while ((k = th_field(r, &last, &id, &t)) == 1) {
		int rc = 0;
		switch (id) {
		case 1: rc = th_i32(r, t, &type); break;
		case 3: {
			int elem;
			uint32_t m;
			if ((rc = th_list(r, t, &elem, &m)) < 0)
				break;
			path_ok = m == 1 && elem == TH_BINARY;
			for (uint32_t j = 0; j < m && rc == 0; j++) {
				const uint8_t *p;
				size_t len;
				if (elem != TH_BINARY)
					rc = th_skip(r, elem);
				else if ((rc = th_binary(r, elem, &p, &len)) == 0 && !name_is(p, len, f->column))
					path_ok = 0;
			}
			th_list_end(r);
			break;
		}
		case 4: rc = th_i32(r, t, &codec); break;
		case 5: rc = th_i64(r, t, &n); break;
		case 7: rc = th_i64(r, t, &total); break;
		case 9: rc = th_i64(r, t, &data_off); break;
		case 11: rc = th_i64(r, t, &dict_off); break;
		default: rc = th_skip(r, t); break;
		}
		if (rc < 0)
			return meta_bad(ft, "");
	}
	if (k < 0)
		return meta_bad(ft, "");
	const char *fn = f->name, *cn = f->column;
	if (type < 0 || codec < 0 || n < 0 || total < 0 || data_off < 0 || path_ok < 0)
		return err_set(ft->e, EXIT_USAGE,
			       "'%s': row group %zu, column '%s': metadata lacks a required field or has a negative one",
			       fn, rg, cn);
	if (!path_ok)
		return err_set(ft->e, EXIT_USAGE,
			       "'%s': row group %zu: the chunk of column '%s' has another path in the schema",
			       fn, rg, cn);
	if (type != T_BYTE_ARRAY)
		return err_set(ft->e, EXIT_USAGE,
			       "'%s': row group %zu, column '%s': chunk of type %s, the schema says BYTE_ARRAY",
			       fn, rg, cn, NAME_OF(type_names, type, nb));
	if (codec != CODEC_UNCOMPRESSED && codec != CODEC_SNAPPY && codec != CODEC_GZIP &&
	    codec != CODEC_ZSTD)
		return err_set(ft->e, EXIT_USAGE,
			       "'%s': row group %zu, column '%s': codec %s not supported (UNCOMPRESSED, SNAPPY, GZIP, ZSTD)",
			       fn, rg, cn, NAME_OF(codec_names, codec, nb));
	/* the pages start at the dictionary page when there is one (an offset
	 * of 0 is some writers' way of saying none) */
	uint64_t start = (uint64_t)data_off;
	if (dict_off > 0 && dict_off < data_off)
		start = (uint64_t)dict_off;
	if (start < 4 || start > f->data_end || (uint64_t)total > f->data_end - start)
		return err_set(ft->e, EXIT_USAGE,
			       "'%s': row group %zu, column '%s': pages at bytes %llu..%llu outside the file's data (4..%llu)",
			       fn, rg, cn, (unsigned long long)start,
			       (unsigned long long)start + (uint64_t)total,
			       (unsigned long long)f->data_end);
	c->start = start;
	c->end = start + (uint64_t)total;
	c->values = n;
	c->codec = codec;
	return 0;
}

static int read_column_chunk(struct footer *ft, size_t rg, struct pq_chunk *c)
{
	struct th_reader *r = ft->r;
	int16_t last = 0, id;
	int t, k, meta = 0;
	if (th_struct_begin(r) < 0)
		return meta_bad(ft, "");
	while ((k = th_field(r, &last, &id, &t)) == 1) {
		if (id == 1) {
			const uint8_t *p;
			size_t n;
			if (th_binary(r, t, &p, &n) < 0)
				return meta_bad(ft, "");
			if (n)
				return err_set(ft->e, EXIT_USAGE,
					       "'%s': row group %zu, column '%s': chunk in another file ('%.*s'), not supported",
					       ft->f->name, rg, ft->f->column, (int)(n > 200 ? 200 : n),
					       (const char *)p);
		} else if (id == 3 && !meta) {
			if (t != TH_STRUCT)
				return meta_bad(ft, "column metadata not a struct");
			if (read_column_meta(ft, rg, c) < 0)
				return -1;
			meta = 1;
		} else if (id == 8 || id == 9) {
			return err_set(ft->e, EXIT_USAGE,
				       "'%s': row group %zu, column '%s': encrypted column, not supported",
				       ft->f->name, rg, ft->f->column);
		} else if (th_skip(r, t) < 0) {
			return meta_bad(ft, "");
		}
	}
	if (k < 0)
		return meta_bad(ft, "");
	if (!meta)
		return err_set(ft->e, EXIT_USAGE, "'%s': row group %zu, column '%s': no column metadata",
			       ft->f->name, rg, ft->f->column);
	return 0;
}

static int read_row_group(struct footer *ft, size_t rg, struct pq_chunk *c)
{
	struct th_reader *r = ft->r;
	struct pq_file *f = ft->f;
	int16_t last = 0, id;
	int t, k, have_cols = 0;
	int64_t rows = -1;
	if (th_struct_begin(r) < 0)
		return meta_bad(ft, "");
	while ((k = th_field(r, &last, &id, &t)) == 1) {
		if (id == 1 && !have_cols) {
			int elem;
			uint32_t n;
			if (th_list(r, t, &elem, &n) < 0)
				return meta_bad(ft, "");
			if (n != ft->n_leaves || (n && elem != TH_STRUCT))
				return err_set(ft->e, EXIT_USAGE,
					       "'%s': row group %zu: %u column chunks, the schema has %zu columns",
					       f->name, rg, n, ft->n_leaves);
			for (uint32_t j = 0; j < n; j++) {
				if (j == ft->leaf) {
					if (read_column_chunk(ft, rg, c) < 0)
						return -1;
				} else if (th_skip(r, elem) < 0) {
					return meta_bad(ft, "");
				}
			}
			th_list_end(r);
			have_cols = 1;
		} else if (id == 3) {
			if (th_i64(r, t, &rows) < 0)
				return meta_bad(ft, "");
		} else if (th_skip(r, t) < 0) {
			return meta_bad(ft, "");
		}
	}
	if (k < 0)
		return meta_bad(ft, "");
	if (!have_cols || rows < 0)
		return err_set(ft->e, EXIT_USAGE, "'%s': row group %zu: no columns or no row count",
			       f->name, rg);
	if (c->values != rows)
		return err_set(ft->e, EXIT_USAGE,
			       "'%s': row group %zu, column '%s': %lld values in a row group of %lld rows",
			       f->name, rg, f->column, (long long)c->values, (long long)rows);
	c->rows = rows;
	c->first_row = f->rows;
	if ((uint64_t)rows > UINT64_MAX / 2 - f->rows)
		return err_set(ft->e, EXIT_USAGE, "'%s': row group %zu: row counts overflow", f->name, rg);
	f->rows += (uint64_t)rows;
	return 0;
}

static int read_footer(struct pq_file *f, const uint8_t *p, size_t n, struct err *e)
{
	struct th_reader r;
	struct footer ft = {.f = f, .e = e, .r = &r, .num_rows = -1, .len = n};
	const uint8_t *rg_start = NULL, *rg_end = NULL;
	int have_schema = 0, rc = -1;
	int16_t last = 0, id;
	int t, k, rg_type = 0;
	th_init(&r, p, n);
	if (th_struct_begin(&r) < 0)
		return meta_bad(&ft, "");
	while ((k = th_field(&r, &last, &id, &t)) == 1) {
		if (id == 2 && !have_schema) {
			if (read_schema(&ft, t) < 0) {
				meta_bad(&ft, "");
				goto out;
			}
			have_schema = 1;
		} else if (id == 3) {
			if (th_i64(&r, t, &ft.num_rows) < 0) {
				meta_bad(&ft, "");
				goto out;
			}
		} else if (id == 4 && !rg_start) {
			/* the row groups come back once the schema names the column */
			rg_start = r.p;
			rg_type = t;
			if (th_skip(&r, t) < 0) {
				meta_bad(&ft, "");
				goto out;
			}
			rg_end = r.p;
		} else if (id == 8) {
			err_set(e, EXIT_USAGE, "'%s': footer: encrypted file, not supported", f->name);
			goto out;
		} else if (th_skip(&r, t) < 0) {
			meta_bad(&ft, "");
			goto out;
		}
	}
	if (k < 0) {
		meta_bad(&ft, "");
		goto out;
	}
	if (!have_schema || !rg_start || ft.num_rows < 0) {
		err_set(e, EXIT_USAGE, "'%s': footer: no schema, row groups or row count", f->name);
		goto out;
	}
	if (find_column(&ft) < 0)
		goto out;
	/* the row groups, read again within their own bytes */
	th_init(&r, rg_start, (size_t)(rg_end - rg_start));
	r.base = p;
	int elem;
	uint32_t m;
	if (th_list(&r, rg_type, &elem, &m) < 0 || (m && elem != TH_STRUCT)) {
		meta_bad(&ft, "row groups not a list of structs");
		goto out;
	}
	size_t cap = 0;
	for (uint32_t i = 0; i < m; i++) {
		if (f->n_rg == cap) {
			cap = cap ? 2 * cap : 8;
			f->rg = xrealloc(f->rg, cap * sizeof *f->rg);
		}
		f->rg[f->n_rg] = (struct pq_chunk){0};
		if (read_row_group(&ft, i, &f->rg[f->n_rg]) < 0)
			goto out;
		f->n_rg++;
	}
	if ((uint64_t)ft.num_rows != f->rows) {
		err_set(e, EXIT_USAGE, "'%s': footer: %lld rows in the file, %llu in its row groups",
			f->name, (long long)ft.num_rows, (unsigned long long)f->rows);
		goto out;
	}
	rc = 0;
out:
	free(ft.el);
	return rc;
}

/* ---- opening ---- */

static int open_common(struct pq_file *f, struct err *e)
{
	const uint8_t *p;
	if (f->size < 12)
		return err_set(e, EXIT_USAGE, "'%s': not a parquet file (%llu bytes, too short)", f->name,
			       (unsigned long long)f->size);
	if (fetch(f, 0, 4, &f->hdr, &p, e) < 0)
		return -1;
	int head = memcmp(p, "PAR1", 4) == 0;
	if (fetch(f, f->size - 8, 8, &f->hdr, &p, e) < 0)
		return -1;
	if (memcmp(p + 4, "PARE", 4) == 0)
		return err_set(e, EXIT_USAGE, "'%s': encrypted parquet file (PARE), not supported", f->name);
	if (!head || memcmp(p + 4, "PAR1", 4) != 0)
		return err_set(e, EXIT_USAGE, "'%s': not a parquet file (no PAR1 at its start and end)",
			       f->name);
	uint32_t n = le32(p);
	if (n > f->size - 12)
		return err_set(e, EXIT_USAGE, "'%s': footer length %u past the file's %llu bytes", f->name,
			       n, (unsigned long long)f->size);
	if (n > PQ_MAX_FOOTER)
		return err_set(e, EXIT_USAGE, "'%s': footer of %u bytes, above the limit (%u)", f->name, n,
			       PQ_MAX_FOOTER);
	f->data_end = f->size - 8 - n;
	struct buf meta = {0};
	int rc = fetch(f, f->data_end, n, &meta, &p, e);
	if (rc == 0)
		rc = read_footer(f, p, n, e);
	free(meta.p);
	return rc;
}

static struct pq_file *pq_new(const char *name, const char *column)
{
	struct pq_file *f = xcalloc(1, sizeof *f);
	f->name = xstrdup(name);
	f->column = xstrdup(column);
	f->fd = -1;
	return f;
}

int pq_open(struct pq_file **out, const char *path, const char *column, struct err *e)
{
	*out = NULL;
	struct pq_file *f = pq_new(path, column);
	struct stat st;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		err_errno(e, EXIT_SYS, "cannot open '%s'", path);
		pq_close(f);
		return -1;
	}
	if (fstat(f->fd, &st) != 0) {
		err_errno(e, EXIT_SYS, "cannot stat '%s'", path);
		pq_close(f);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		err_set(e, EXIT_USAGE, "'%s': not a regular file", path);
		pq_close(f);
		return -1;
	}
	f->size = (uint64_t)st.st_size;
	if (open_common(f, e) < 0) {
		pq_close(f);
		return -1;
	}
	*out = f;
	return 0;
}

int pq_open_mem(struct pq_file **out, const void *data, size_t len, const char *name,
		const char *column, struct err *e)
{
	*out = NULL;
	struct pq_file *f = pq_new(name, column);
	static const uint8_t none[1];
	f->mem = data ? data : none;
	f->size = len;
	if (open_common(f, e) < 0) {
		pq_close(f);
		return -1;
	}
	*out = f;
	return 0;
}

void pq_close(struct pq_file *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	if (f->z_ready)
		inflateEnd(&f->z);
	ZSTD_freeDCtx(f->zd);
	free(f->hdr.p);
	free(f->comp.p);
	free(f->page.p);
	free(f->dict.p);
	free(f->ent);
	free(f->rg);
	free(f->name);
	free(f->column);
	free(f);
}

uint64_t pq_rows(const struct pq_file *f) { return f->rows; }
size_t pq_row_groups(const struct pq_file *f) { return f->n_rg; }
uint64_t pq_file_size(const struct pq_file *f) { return f->size; }
uint64_t pq_row_group_rows(const struct pq_file *f, size_t rg) { return (uint64_t)f->rg[rg].rows; }
uint64_t pq_row_group_bytes(const struct pq_file *f, size_t rg)
{
	return f->rg[rg].end - f->rg[rg].start;
}
const char *pq_row_group_codec(const struct pq_file *f, size_t rg)
{
	return codec_names[f->rg[rg].codec];
}

/* ---- pages ---- */

struct page_hdr {
	int32_t type, usize, csize;
	int have;                 /* the header of its type was present */
	int32_t n, enc, def_enc;  /* v1, dictionary (n, enc) */
	int32_t nulls, rows, def_len, rep_len;  /* v2 */
	int compressed;           /* v2: values compressed (default 1) */
};

/* One row group's read. */
struct rgread {
	struct pq_file *f;
	size_t rg;
	const struct pq_chunk *ch;
	uint64_t at;          /* the current page's offset */
	int64_t seen;         /* levels read so far in the chunk */
	int dict;             /* a dictionary page was read */
	pq_value_fn fn;
	void *ctx;
	struct pq_counts n;
};

static int page_err(struct rgread *g, struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int page_err(struct rgread *g, struct err *e, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set(e, EXIT_USAGE, "'%s': row group %zu, column '%s', page at byte %llu: %s",
		       g->f->name, g->rg, g->f->column, (unsigned long long)g->at, msg);
}

static int read_sub(struct th_reader *r, int type, struct page_hdr *h, int kind)
{
	int16_t last = 0, id;
	int t, k;
	int32_t *slot;
	if (type != TH_STRUCT) {
		r->bad = "page header member not a struct";
		return -1;
	}
	if (th_struct_begin(r) < 0)
		return -1;
	h->have = 1;
	h->n = h->enc = h->def_enc = h->nulls = h->rows = h->def_len = h->rep_len = -1;
	h->compressed = 1;
	while ((k = th_field(r, &last, &id, &t)) == 1) {
		slot = NULL;
		if (kind == PAGE_DATA)
			slot = id == 1 ? &h->n : id == 2 ? &h->enc : id == 3 ? &h->def_enc : NULL;
		else if (kind == PAGE_DICTIONARY)
			slot = id == 1 ? &h->n : id == 2 ? &h->enc : NULL;
		else if (kind == PAGE_DATA_V2) {
			slot = id == 1 ? &h->n : id == 2 ? &h->nulls : id == 3 ? &h->rows :
			       id == 4 ? &h->enc : id == 5 ? &h->def_len : id == 6 ? &h->rep_len : NULL;
			if (id == 7) {
				if (th_bool(r, t, &h->compressed) < 0)
					return -1;
				continue;
			}
		}
		int rc = slot ? th_i32(r, t, slot) : th_skip(r, t);
		if (rc < 0)
			return -1;
	}
	return k;
}

/* Parse a page header from p[0..n): 0 with *len its size, -1 (r->bad). */
static int parse_page_header(struct th_reader *r, struct page_hdr *h, size_t *len)
{
	int16_t last = 0, id;
	int t, k;
	*h = (struct page_hdr){.type = -1, .usize = -1, .csize = -1};
	if (th_struct_begin(r) < 0)
		return -1;
	while ((k = th_field(r, &last, &id, &t)) == 1) {
		int rc;
		switch (id) {
		case 1: rc = th_i32(r, t, &h->type); break;
		case 2: rc = th_i32(r, t, &h->usize); break;
		case 3: rc = th_i32(r, t, &h->csize); break;
		case 5: case 7: case 8: {
			int kind = id == 5 ? PAGE_DATA : id == 7 ? PAGE_DICTIONARY : PAGE_DATA_V2;
			if (h->type != kind || h->have) {
				rc = th_skip(r, t);  /* another type's header (or a second) */
				break;
			}
			rc = read_sub(r, t, h, kind);
			break;
		}
		default: rc = th_skip(r, t); break;
		}
		if (rc < 0)
			return -1;
	}
	if (k < 0)
		return -1;
	*len = th_pos(r);
	return 0;
}

/* The page header at g->at, through a window that grows while it is cut
 * short; *len its size, *win the window's bytes (*wlen of them: the page's
 * body too when it fits). */
static int read_page_header(struct rgread *g, struct page_hdr *h, size_t *len,
			    const uint8_t **win_p, size_t *wlen, struct err *e)
{
	struct pq_file *f = g->f;
	uint64_t left = g->ch->end - g->at;
	size_t max = left < PQ_MAX_PAGE ? (size_t)left : PQ_MAX_PAGE;
	size_t win = max < HEADER_WINDOW ? max : HEADER_WINDOW;
	for (;;) {
		const uint8_t *p;
		struct th_reader r;
		if (fetch(f, g->at, win, &f->hdr, &p, e) < 0)
			return -1;
		th_init(&r, p, win);
		if (parse_page_header(&r, h, len) == 0) {
			*win_p = p;
			*wlen = win;
			break;
		}
		if (r.cut && win < max) {
			win = win > max / 4 ? max : win * 4;
			continue;
		}
		if (r.cut)
			return page_err(g, e, "page header runs past the column chunk's end (byte %llu)",
					(unsigned long long)g->ch->end);
		return page_err(g, e, "bad page header: %s at byte %zu", r.bad, th_pos(&r));
	}
	if (h->type < 0 || h->usize < 0 || h->csize < 0)
		return page_err(g, e, "page header lacks its type or sizes, or has a negative one");
	if (h->type == PAGE_INDEX)
		return 0;
	if (h->type != PAGE_DATA && h->type != PAGE_DATA_V2 && h->type != PAGE_DICTIONARY)
		return page_err(g, e, "page type %d not supported", h->type);
	if (!h->have)
		return page_err(g, e, "%s page without its header",
				h->type == PAGE_DICTIONARY ? "dictionary" : h->type == PAGE_DATA ? "data" : "data v2");
	if (h->n < 0 || h->enc < 0 || (h->type == PAGE_DATA && h->def_enc < 0) ||
	    (h->type == PAGE_DATA_V2 && (h->nulls < 0 || h->rows < 0 || h->def_len < 0 || h->rep_len < 0)))
		return page_err(g, e, "%s page header lacks a required field or has a negative one",
				h->type == PAGE_DICTIONARY ? "dictionary" : "data");
	return 0;
}

/* Decompress in[0..n) into dst as want bytes; *out the bytes (in itself when
 * uncompressed and keep is 0). */
static int decompress(struct rgread *g, const uint8_t *in, size_t n, size_t want, struct buf *dst,
		      int keep, const uint8_t **out, struct err *e)
{
	struct pq_file *f = g->f;
	int codec = g->ch->codec;
	if (codec == CODEC_UNCOMPRESSED) {
		if (n != want)
			return page_err(g, e, "uncompressed page of %zu bytes says %zu", n, want);
		if (!keep) {
			*out = in;
			return 0;
		}
		uint8_t *d = buf_need(dst, want);
		if (want)
			memcpy(d, in, want);
		*out = d;
		return 0;
	}
	uint8_t *d = buf_need(dst, want);
	if (codec == CODEC_SNAPPY) {
		size_t len;
		if (snappy_uncompressed_length((const char *)in, n, &len) != SNAPPY_OK)
			return page_err(g, e, "snappy data corrupt (no length)");
		if (len != want)
			return page_err(g, e, "snappy data of %zu bytes, the page says %zu", len, want);
		if (snappy_uncompress((const char *)in, n, (char *)d, &len) != SNAPPY_OK || len != want)
			return page_err(g, e, "snappy data corrupt");
	} else if (codec == CODEC_GZIP) {
		z_stream *z = &f->z;
		if (!f->z_ready) {
			memset(z, 0, sizeof *z);
			if (inflateInit2(z, 16 + MAX_WBITS) != Z_OK)
				return err_set(e, EXIT_SYS, "'%s': cannot start zlib", f->name);
			f->z_ready = 1;
		} else if (inflateReset(z) != Z_OK) {
			return err_set(e, EXIT_SYS, "'%s': cannot reset zlib", f->name);
		}
		z->next_in = (Bytef *)in;
		z->avail_in = (uInt)n;
		z->next_out = d;
		z->avail_out = (uInt)want;
		int rc = inflate(z, Z_FINISH);
		if (rc == Z_STREAM_END) {
			if (z->avail_out)
				return page_err(g, e, "gzip data of %zu bytes, the page says %zu",
						want - z->avail_out, want);
			if (z->avail_in)
				return page_err(g, e, "%u bytes after the gzip stream", z->avail_in);
		} else if (rc == Z_BUF_ERROR && z->avail_out == 0 && z->avail_in) {
			return page_err(g, e, "gzip data of more than the page's %zu bytes", want);
		} else {
			return page_err(g, e, "gzip data corrupt (%s)",
					z->msg ? z->msg : rc == Z_BUF_ERROR ? "ends early" : "inflate failed");
		}
	} else {
		if (!f->zd && !(f->zd = ZSTD_createDCtx()))
			return err_set(e, EXIT_SYS, "'%s': cannot start zstd", f->name);
		size_t len = ZSTD_decompressDCtx(f->zd, d, want, in, n);
		if (ZSTD_isError(len))
			return page_err(g, e, "zstd data corrupt or larger than the page's %zu bytes (%s)",
					want, ZSTD_getErrorName(len));
		if (len != want)
			return page_err(g, e, "zstd data of %zu bytes, the page says %zu", len, want);
	}
	*out = d;
	return 0;
}

static int load_dictionary(struct rgread *g, const struct page_hdr *h, const uint8_t *body,
			   struct err *e)
{
	struct pq_file *f = g->f;
	char nb[16];
	if (h->enc != ENC_PLAIN && h->enc != ENC_PLAIN_DICTIONARY)
		return page_err(g, e, "dictionary encoding %s not supported (PLAIN, PLAIN_DICTIONARY)",
				NAME_OF(enc_names, h->enc, nb));
	if (g->dict)
		return page_err(g, e, "a second dictionary page");
	if (g->seen)
		return page_err(g, e, "dictionary page after data pages");
	const uint8_t *d;
	if (decompress(g, body, (size_t)h->csize, (size_t)h->usize, &f->dict, 1, &d, e) < 0)
		return -1;
	size_t len = (size_t)h->usize, pos = 0;
	if ((size_t)h->n > len / 4)
		return page_err(g, e, "dictionary of %d values in %zu bytes", h->n, len);
	if (f->cap_ent < (size_t)h->n) {
		free(f->ent);
		f->cap_ent = (size_t)h->n;
		f->ent = xmalloc(f->cap_ent * sizeof *f->ent);
	}
	for (int32_t i = 0; i < h->n; i++) {
		if (len - pos < 4)
			return page_err(g, e, "dictionary ends at value %d of %d", i, h->n);
		uint32_t k = le32(d + pos);
		pos += 4;
		if (k > len - pos)
			return page_err(g, e, "dictionary value %d of %u bytes past the page's end", i, k);
		f->ent[i] = (struct span){(uint32_t)pos, k};
		pos += k;
	}
	if (pos != len)
		return page_err(g, e, "%zu bytes left over after the dictionary's %d values", len - pos,
				h->n);
	f->n_ent = (size_t)h->n;
	g->dict = 1;
	return 0;
}

/* The RLE / bit-packed hybrid (Encodings.md), read as runs. */
struct hybrid {
	const uint8_t *p, *end;
	int bw;
	uint32_t mask;
	uint64_t rle_left;
	uint32_t rle_val;
	uint64_t bp_left;     /* values left in the bit-packed run */
	const uint8_t *bp;    /* its bytes: [bp, bp_end) */
	const uint8_t *bp_end;
	uint64_t bit;         /* next value's bit offset from bp */
	const char *why;
};

static void hy_init(struct hybrid *h, const uint8_t *p, size_t n, int bw)
{
	memset(h, 0, sizeof *h);
	h->p = p;
	h->end = p + n;
	h->bw = bw;
	h->mask = bw == 32 ? 0xffffffffu : (1u << bw) - 1;
}

static int hy_header(struct hybrid *h)
{
	uint64_t hdr = 0;
	for (int shift = 0;; shift += 7) {
		if (h->p >= h->end) {
			h->why = "end early";
			return -1;
		}
		uint8_t b = *h->p++;
		if (shift == 28 && (b & 0xf0)) {
			h->why = "have a run header above 32 bits";
			return -1;
		}
		hdr |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	if (hdr & 1) {
		uint64_t groups = hdr >> 1, bytes = groups * (uint64_t)h->bw;
		size_t left = (size_t)(h->end - h->p);
		h->bp_left = groups * 8;
		h->bp = h->p;
		h->bp_end = h->p + (bytes < left ? bytes : left);
		h->bit = 0;
		h->p = h->bp_end;
	} else {
		size_t nb = ((size_t)h->bw + 7) / 8;
		if ((size_t)(h->end - h->p) < nb) {
			h->why = "end early";
			return -1;
		}
		uint32_t v = 0;
		for (size_t i = 0; i < nb; i++)
			v |= (uint32_t)h->p[i] << (8 * i);
		h->p += nb;
		if (v & ~h->mask) {
			h->why = "have a run value wider than their bit width";
			return -1;
		}
		h->rle_left = hdr >> 1;
		h->rle_val = v;
	}
	return 0;
}

/* The next run of equal values: *v, *count (1..max). -1 at the end or on
 * malformed bytes (h->why). */
static int hy_run(struct hybrid *h, uint64_t max, uint32_t *v, uint64_t *count)
{
	while (!h->rle_left && !h->bp_left)
		if (hy_header(h) < 0)
			return -1;
	if (h->rle_left) {
		uint64_t c = h->rle_left < max ? h->rle_left : max;
		h->rle_left -= c;
		*v = h->rle_val;
		*count = c;
		return 0;
	}
	if (h->bw == 0) {
		uint64_t c = h->bp_left < max ? h->bp_left : max;
		h->bp_left -= c;
		*v = 0;
		*count = c;
		return 0;
	}
	uint64_t need = (h->bit + (uint64_t)h->bw + 7) / 8;
	if (need > (uint64_t)(h->bp_end - h->bp)) {
		h->why = "end early";
		return -1;
	}
	const uint8_t *q = h->bp + h->bit / 8;
	size_t avail = (size_t)(h->bp_end - q);
	uint64_t x = 0;
	for (size_t i = 0; i < 5 && i < avail; i++)
		x |= (uint64_t)q[i] << (8 * i);
	*v = (uint32_t)(x >> (h->bit % 8)) & h->mask;
	h->bit += (uint64_t)h->bw;
	h->bp_left--;
	*count = 1;
	return 0;
}

/* Pass one value to the callback. */
static int emit(struct rgread *g, const uint8_t *s, size_t len, uint64_t row, struct err *e)
{
	if (!utf8_valid((const char *)s, len))
		return err_set(e, EXIT_USAGE,
			       "'%s': row group %zu, row %llu (row %llu of the file): column '%s': value not valid UTF-8",
			       g->f->name, g->rg, (unsigned long long)row,
			       (unsigned long long)(g->ch->first_row + row), g->f->column);
	g->n.values++;
	g->n.bytes += len;
	if (g->fn && g->fn((const char *)s, len, g->ch->first_row + row, g->ctx, e) < 0)
		return -1;
	return 0;
}

/* The values of one data page: n levels from lv[0..lv_len) (none when the
 * column is required), values vals[0..v_len) in encoding enc. */
static int page_values(struct rgread *g, int32_t n, const uint8_t *lv, size_t lv_len, int enc,
		       const uint8_t *vals, size_t v_len, int64_t *nulls, struct err *e)
{
	struct pq_file *f = g->f;
	struct hybrid lev, idx;
	size_t vp = 0;
	int dict = enc != ENC_PLAIN, have_bw = 0;
	uint64_t row = (uint64_t)g->seen, left = (uint64_t)n;
	*nulls = 0;
	if (f->optional)
		hy_init(&lev, lv, lv_len, 1);
	while (left) {
		uint32_t level = 1;
		uint64_t cnt = left;
		if (f->optional && hy_run(&lev, left, &level, &cnt) < 0)
			return page_err(g, e, "definition levels %s after %llu of %d values", lev.why,
					(unsigned long long)(n - left), n);
		if (level > 1)
			return page_err(g, e, "definition level %u above the column's maximum 1", level);
		left -= cnt;
		if (level == 0) {
			*nulls += (int64_t)cnt;
			g->n.nulls += cnt;
			row += cnt;
			continue;
		}
		if (!dict) {
			for (uint64_t i = 0; i < cnt; i++, row++) {
				if (v_len - vp < 4)
					return page_err(g, e, "values end early (row %llu of the row group)",
							(unsigned long long)row);
				uint32_t k = le32(vals + vp);
				vp += 4;
				if (k > v_len - vp)
					return page_err(g, e, "value of %u bytes past the page's end (row %llu of the row group)",
							k, (unsigned long long)row);
				if (emit(g, vals + vp, k, row, e) < 0)
					return -1;
				vp += k;
			}
			continue;
		}
		if (!have_bw) {
			if (v_len < 1)
				return page_err(g, e, "dictionary indices missing");
			if (vals[0] > 32)
				return page_err(g, e, "dictionary index bit width %u above 32", vals[0]);
			hy_init(&idx, vals + 1, v_len - 1, vals[0]);
			have_bw = 1;
		}
		while (cnt) {
			uint32_t ix;
			uint64_t run;
			if (hy_run(&idx, cnt, &ix, &run) < 0)
				return page_err(g, e, "dictionary indices %s (row %llu of the row group)",
						idx.why, (unsigned long long)row);
			if (ix >= f->n_ent)
				return page_err(g, e, "dictionary index %u out of range (%zu values, row %llu of the row group)",
						ix, f->n_ent, (unsigned long long)row);
			cnt -= run;
			for (; run; run--, row++)
				if (emit(g, f->dict.p + f->ent[ix].off, f->ent[ix].len, row, e) < 0)
					return -1;
		}
	}
	if (!dict && vp != v_len)
		return page_err(g, e, "%zu bytes left over after the page's values", v_len - vp);
	return 0;
}

static int data_page(struct rgread *g, const struct page_hdr *h, const uint8_t *body,
		     struct err *e)
{
	struct pq_file *f = g->f;
	char nb[16];
	if (h->enc != ENC_PLAIN && h->enc != ENC_PLAIN_DICTIONARY && h->enc != ENC_RLE_DICTIONARY)
		return page_err(g, e, "value encoding %s not supported (PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY)",
				NAME_OF(enc_names, h->enc, nb));
	if (h->enc != ENC_PLAIN && !g->dict)
		return page_err(g, e, "dictionary-encoded page without a dictionary page");
	if (h->n > g->ch->values - g->seen)
		return page_err(g, e, "%d values past the column chunk's %lld", h->n,
				(long long)g->ch->values);
	const uint8_t *lv = NULL, *vals;
	size_t lv_len = 0, v_len;
	if (h->type == PAGE_DATA) {
		if (f->optional && h->def_enc != ENC_RLE)
			return page_err(g, e, "definition level encoding %s not supported (RLE)",
					NAME_OF(enc_names, h->def_enc, nb));
		const uint8_t *d;
		if (decompress(g, body, (size_t)h->csize, (size_t)h->usize, &f->page, 0, &d, e) < 0)
			return -1;
		size_t len = (size_t)h->usize, pos = 0;
		if (f->optional) {
			if (len < 4)
				return page_err(g, e, "definition levels missing");
			uint32_t k = le32(d);
			if (k > len - 4)
				return page_err(g, e, "definition levels of %u bytes past the page's end", k);
			lv = d + 4;
			lv_len = k;
			pos = 4 + (size_t)k;
		}
		vals = d + pos;
		v_len = len - pos;
	} else {
		if (h->rep_len)
			return page_err(g, e, "repetition levels in a column that is not repeated");
		if (!f->optional && h->def_len)
			return page_err(g, e, "definition levels in a required column");
		if (h->rows != h->n)
			return page_err(g, e, "%d rows for %d values in a column that is not repeated",
					h->rows, h->n);
		if (h->def_len > h->csize || h->def_len > h->usize)
			return page_err(g, e, "definition levels of %d bytes in a page of %d (%d compressed)",
					h->def_len, h->usize, h->csize);
		lv = body;
		lv_len = (size_t)h->def_len;
		size_t cn = (size_t)(h->csize - h->def_len), un = (size_t)(h->usize - h->def_len);
		if (h->compressed) {
			if (decompress(g, body + lv_len, cn, un, &f->page, 0, &vals, e) < 0)
				return -1;
		} else {
			if (cn != un)
				return page_err(g, e, "uncompressed values of %zu bytes say %zu", cn, un);
			vals = body + lv_len;
		}
		v_len = un;
	}
	int64_t nulls;
	if (page_values(g, h->n, lv, lv_len, h->enc, vals, v_len, &nulls, e) < 0)
		return -1;
	if (h->type == PAGE_DATA_V2 && nulls != h->nulls)
		return page_err(g, e, "%lld nulls, the header says %d", (long long)nulls, h->nulls);
	g->seen += h->n;
	return 0;
}

int pq_read_row_group(struct pq_file *f, size_t rg, pq_value_fn fn, void *ctx,
		      struct pq_counts *c, struct err *e)
{
	struct rgread g = {.f = f, .rg = rg, .ch = &f->rg[rg], .fn = fn, .ctx = ctx};
	uint64_t pos = g.ch->start;
	f->n_ent = 0;
	while (pos < g.ch->end) {
		struct page_hdr h;
		size_t hlen = 0, wlen = 0;
		const uint8_t *body, *win = NULL;
		g.at = pos;
		if (read_page_header(&g, &h, &hlen, &win, &wlen, e) < 0)
			return -1;
		uint64_t start = pos + hlen;
		if ((uint64_t)h.csize > g.ch->end - start)
			return page_err(&g, e, "page of %d bytes past the column chunk's end (byte %llu)",
					h.csize, (unsigned long long)g.ch->end);
		if ((uint32_t)h.usize > PQ_MAX_PAGE || (uint32_t)h.csize > PQ_MAX_PAGE)
			return page_err(&g, e, "page of %d bytes (%d compressed), above the limit (%u)",
					h.usize, h.csize, PQ_MAX_PAGE);
		pos = start + (uint64_t)h.csize;
		if (h.type == PAGE_INDEX)
			continue;
		if ((size_t)h.csize <= wlen - hlen)
			body = win + hlen;  /* read with its header */
		else if (fetch(f, start, (size_t)h.csize, &f->comp, &body, e) < 0)
			return -1;
		if (h.type == PAGE_DICTIONARY) {
			if (load_dictionary(&g, &h, body, e) < 0)
				return -1;
		} else if (data_page(&g, &h, body, e) < 0) {
			return -1;
		}
	}
	if (g.seen != g.ch->values)
		return err_set(e, EXIT_USAGE,
			       "'%s': row group %zu, column '%s': pages hold %lld values, the chunk says %lld",
			       f->name, rg, f->column, (long long)g.seen, (long long)g.ch->values);
	if (c) {
		c->rows += (uint64_t)g.seen;
		c->values += g.n.values;
		c->nulls += g.n.nulls;
		c->bytes += g.n.bytes;
	}
	return 0;
}

int pq_read(struct pq_file *f, pq_value_fn fn, void *ctx, struct pq_counts *c, struct err *e)
{
	for (size_t i = 0; i < f->n_rg; i++)
		if (pq_read_row_group(f, i, fn, ctx, c, e) < 0)
			return -1;
	return 0;
}
