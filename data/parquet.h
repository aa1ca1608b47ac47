/* parquet.h: a strict, streaming reader of one text column of a parquet file
 * (corpora such as ClimbMix's shards: a `text` column of strings).
 *
 * What is read: the footer (FileMetaData, Thrift compact protocol) and, one
 * row group after another, the requested column's chunk, page by page:
 * dictionary pages, data pages v1 and v2, values PLAIN or dictionary
 * encoded (PLAIN_DICTIONARY, RLE_DICTIONARY), definition levels in the RLE /
 * bit-packed hybrid (nulls are skipped and counted), pages UNCOMPRESSED or
 * compressed with SNAPPY (raw snappy blocks), GZIP (gzip streams) or ZSTD
 * (zstd frames). INDEX_PAGEs are skipped; statistics, page indexes, bloom
 * filters, sorting columns and key/value metadata are passed over (the
 * Thrift reader skips any field it does not need, of any type).
 *
 * The column: a top-level field of the schema, a leaf, not repeated,
 * REQUIRED or OPTIONAL, of physical type BYTE_ARRAY annotated as a string
 * (converted type UTF8 or logical type STRING). Other columns may be of any
 * type or nesting: their chunks are not read.
 *
 * Refused, with a one-line error naming the file and, past the footer, the
 * row group (then the page's byte offset, or the row): anything else. A
 * column of another type, a nested (group) or repeated column, a codec
 * (LZO, BROTLI, LZ4, LZ4_RAW), value encoding (DELTA_*, BYTE_STREAM_SPLIT)
 * or level encoding (BIT_PACKED) outside the list above, encrypted files
 * and columns, column chunks in other files, a value that is not valid
 * UTF-8, and every inconsistency: an offset or length outside the file or
 * its column chunk, a page whose sizes do not match what it decompresses
 * to, counts of values, nulls or rows that disagree between pages, chunk
 * and row group, a dictionary index out of range, levels or values that end
 * early or leave bytes over.
 *
 * Memory: the footer (at most PQ_MAX_FOOTER bytes), one page compressed and
 * decompressed (at most PQ_MAX_PAGE bytes each; a page header is read
 * through a 4 KiB window that grows while the header is cut short, a small
 * page with it) and the current column chunk's dictionary page; whole files
 * are never loaded.
 *
 * Leaves out: nested or repeated columns, other physical and logical types,
 * the codecs and encodings listed as refused, page CRCs (not checked),
 * column indexes and bloom filters (not used), reading several columns at
 * once. Reference: Apache Parquet format, parquet.thrift and
 * Encodings.md (github.com/apache/parquet-format).
 *
 * Ownership: a struct pq_file owns its file descriptor (pq_open) or borrows
 * the caller's bytes (pq_open_mem: they must outlive it), and every buffer;
 * pq_close releases them. A value passed to a callback points into the
 * reader's page buffers and is valid only during the call.
 */
#ifndef SUPKIT_DATA_PARQUET_H
#define SUPKIT_DATA_PARQUET_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"

#define PQ_MAX_FOOTER (64u << 20)  /* bytes of FileMetaData */
#define PQ_MAX_PAGE (256u << 20)   /* a page, compressed or not, or a page header */

struct pq_file;

/* Counts of what a read went through; pq_read* add to them. */
struct pq_counts {
	uint64_t rows;    /* rows read: values + nulls */
	uint64_t values;  /* non-null values passed on (empty strings included) */
	uint64_t nulls;   /* null values, skipped */
	uint64_t bytes;   /* bytes of the values passed on */
};

/* Called once per non-null value, in row order: s[0..len) is valid UTF-8
 * (not NUL-terminated); row is its row's index in the file (from 0).
 * Returns 0, or -1 with e set to stop the read (pq_read* return -1 with it). */
typedef int (*pq_value_fn)(const char *s, size_t len, uint64_t row, void *ctx, struct err *e);

/* Open path and check its footer for the string column `column` (a
 * top-level name): magic, metadata, schema, and every row group's chunk of
 * the column (codec, offsets and lengths inside the file, counts). *out is
 * a fresh reader (pq_close it); NULL on failure. EXIT_USAGE for refused
 * input, EXIT_SYS for I/O errors. */
int pq_open(struct pq_file **out, const char *path, const char *column, struct err *e);
/* The same over data[0..len) (not copied); name is used in messages. */
int pq_open_mem(struct pq_file **out, const void *data, size_t len, const char *name,
		const char *column, struct err *e);
void pq_close(struct pq_file *f);

/* The footer's figures: rows in the file, row groups, the file's size. */
uint64_t pq_rows(const struct pq_file *f);
size_t pq_row_groups(const struct pq_file *f);
uint64_t pq_file_size(const struct pq_file *f);
/* Row group rg's rows and the size of its chunk of the column (compressed
 * bytes, pages and headers: a measure of progress). Here and below,
 * rg < pq_row_groups(f). */
uint64_t pq_row_group_rows(const struct pq_file *f, size_t rg);
uint64_t pq_row_group_bytes(const struct pq_file *f, size_t rg);
/* Name of row group rg's codec ("UNCOMPRESSED", "SNAPPY", "GZIP", "ZSTD"). */
const char *pq_row_group_codec(const struct pq_file *f, size_t rg);

/* Read row group rg's values of the column: fn for each non-null value,
 * counts added to c (may be NULL). Returns 0, or -1 with e set: the error
 * names the file, the row group, and the page's offset or the row. */
int pq_read_row_group(struct pq_file *f, size_t rg, pq_value_fn fn, void *ctx,
		      struct pq_counts *c, struct err *e);
/* Every row group in order (pq_read_row_group for each). */
int pq_read(struct pq_file *f, pq_value_fn fn, void *ctx, struct pq_counts *c, struct err *e);

#endif
