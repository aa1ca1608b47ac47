/* thrift.h: a bounds-checked reader of Thrift's compact protocol, the
 * encoding of parquet's footer (FileMetaData) and page headers.
 *
 * A struct th_reader walks a byte range. Every read checks the range first
 * and, on a malformed or cut-short input, returns -1 and leaves a fixed
 * reason in r->bad (and r->cut = 1 when the bytes ran out, so that a caller
 * reading a header from a window can fetch a larger one and try again).
 * Containers are checked against the bytes left (every element takes at
 * least one byte), so no count can ask for more work or memory than the
 * input holds; structs and containers nest at most TH_MAX_DEPTH deep.
 * th_skip passes over a value of any type (unknown fields: statistics,
 * page indexes, a newer format's additions).
 *
 * Leaves out: writing, the binary protocol, UUID-typed fields (type 13, not
 * in parquet's metadata), messages (RPC). Reference: Apache Thrift,
 * doc/specs/thrift-compact-protocol.md.
 */
#ifndef SUPKIT_DATA_THRIFT_H
#define SUPKIT_DATA_THRIFT_H

#include <stddef.h>
#include <stdint.h>

#define TH_MAX_DEPTH 32

enum th_type {
	TH_STOP = 0,
	TH_TRUE = 1,    /* a bool field's value lives in its type: true */
	TH_FALSE = 2,   /* false */
	TH_I8 = 3,
	TH_I16 = 4,
	TH_I32 = 5,
	TH_I64 = 6,
	TH_DOUBLE = 7,
	TH_BINARY = 8,  /* strings too */
	TH_LIST = 9,
	TH_SET = 10,
	TH_MAP = 11,
	TH_STRUCT = 12
};

struct th_reader {
	const uint8_t *base;  /* start of the input (offsets in messages) */
	const uint8_t *p;     /* next byte */
	const uint8_t *end;
	int depth;            /* structs and containers entered */
	int cut;              /* 1 when a read ran past the end */
	const char *bad;      /* why the input was refused; NULL while fine */
};

void th_init(struct th_reader *r, const void *data, size_t n);
/* Offset of the next byte from base. */
size_t th_pos(const struct th_reader *r);

/* Enter a struct (depth + 1); th_field then reads its fields. */
int th_struct_begin(struct th_reader *r);
/* Next field header of the current struct: 1 with *id and *type (*last is the
 * previous id, 0 at a struct's start, updated), 0 at the struct's STOP (the
 * struct is left: depth - 1), -1 malformed. */
int th_field(struct th_reader *r, int16_t *last, int16_t *id, int *type);

/* Values; each checks the field's type is the one expected (type is the
 * field header's). */
int th_i32(struct th_reader *r, int type, int32_t *v);
int th_i64(struct th_reader *r, int type, int64_t *v);  /* i8, i16, i32 or i64 field */
int th_bool(struct th_reader *r, int type, int *v);
/* A binary or string: *p points into the input, valid while it is. */
int th_binary(struct th_reader *r, int type, const uint8_t **p, size_t *n);
/* A list (or set) header: element type and count (<= the bytes left); enters
 * it (depth + 1): read n elements, then th_list_end. */
int th_list(struct th_reader *r, int type, int *elem, uint32_t *n);
void th_list_end(struct th_reader *r);

/* Skip one value of the given type (structs, containers: nested ones too). */
int th_skip(struct th_reader *r, int type);

/* A list or set element that is a struct: th_struct_begin then th_field. An
 * element of another type: th_i32 / th_i64 / th_binary with type = elem. */

#endif
