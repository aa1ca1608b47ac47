/* thrift.c: the compact protocol reader of thrift.h. Leaves out what
 * thrift.h leaves out. Reference: Apache Thrift,
 * doc/specs/thrift-compact-protocol.md (varints, zigzag, field and container
 * headers; booleans inside containers are one byte each). */
#include "data/thrift.h"

#include <string.h>

static int bad(struct th_reader *r, const char *why)
{
	if (!r->bad)
		r->bad = why;
	return -1;
}

static int cut(struct th_reader *r)
{
	r->cut = 1;
	return bad(r, "metadata ends early");
}

void th_init(struct th_reader *r, const void *data, size_t n)
{
	r->base = data;
	r->p = data;
	r->end = r->p + n;
	r->depth = 0;
	r->cut = 0;
	r->bad = NULL;
}

size_t th_pos(const struct th_reader *r)
{
	return (size_t)(r->p - r->base);
}

static int byte(struct th_reader *r, uint8_t *b)
{
	if (r->bad)
		return -1;
	if (r->p >= r->end)
		return cut(r);
	*b = *r->p++;
	return 0;
}

/* An unsigned LEB128 varint of at most 10 bytes that fits 64 bits. */
static int varint(struct th_reader *r, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 70; shift += 7) {
		uint8_t b;
		if (byte(r, &b) < 0)
			return -1;
		if (shift == 63 && (b & 0x7e))
			return bad(r, "varint too large");
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return bad(r, "varint too long");
}

static int zigzag(struct th_reader *r, int64_t *v)
{
	uint64_t u;
	if (varint(r, &u) < 0)
		return -1;
	*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return 0;
}

static int enter(struct th_reader *r)
{
	if (r->depth >= TH_MAX_DEPTH)
		return bad(r, "metadata nested too deep");
	r->depth++;
	return 0;
}

int th_struct_begin(struct th_reader *r)
{
	if (r->bad)
		return -1;
	return enter(r);
}

int th_field(struct th_reader *r, int16_t *last, int16_t *id, int *type)
{
	uint8_t b;
	if (byte(r, &b) < 0)
		return -1;
	if (b == 0) {
		r->depth--;
		return 0;
	}
	int t = b & 0x0f, delta = b >> 4;
	if (t > TH_STRUCT)
		return bad(r, "unknown field type");
	if (delta) {
		int next = *last + delta;
		if (next > INT16_MAX)
			return bad(r, "field id out of range");
		*id = (int16_t)next;
	} else {
		int64_t v;
		if (zigzag(r, &v) < 0)
			return -1;
		if (v < INT16_MIN || v > INT16_MAX)
			return bad(r, "field id out of range");
		*id = (int16_t)v;
	}
	*last = *id;
	*type = t;
	return 1;
}

int th_i64(struct th_reader *r, int type, int64_t *v)
{
	if (r->bad)
		return -1;
	if (type == TH_I8) {
		uint8_t b;
		if (byte(r, &b) < 0)
			return -1;
		*v = (int8_t)b;
		return 0;
	}
	if (type != TH_I16 && type != TH_I32 && type != TH_I64)
		return bad(r, "integer field of another type");
	if (zigzag(r, v) < 0)
		return -1;
	if ((type == TH_I16 && (*v < INT16_MIN || *v > INT16_MAX)) ||
	    (type == TH_I32 && (*v < INT32_MIN || *v > INT32_MAX)))
		return bad(r, "integer out of its type's range");
	return 0;
}

int th_i32(struct th_reader *r, int type, int32_t *v)
{
	int64_t x;
	if (type == TH_I64)
		return bad(r, "i32 field of type i64");
	if (th_i64(r, type, &x) < 0)
		return -1;
	*v = (int32_t)x;
	return 0;
}

int th_bool(struct th_reader *r, int type, int *v)
{
	if (r->bad)
		return -1;
	if (type != TH_TRUE && type != TH_FALSE)
		return bad(r, "bool field of another type");
	*v = type == TH_TRUE;
	return 0;
}

int th_binary(struct th_reader *r, int type, const uint8_t **p, size_t *n)
{
	if (r->bad)
		return -1;
	if (type != TH_BINARY)
		return bad(r, "binary field of another type");
	uint64_t len;
	if (varint(r, &len) < 0)
		return -1;
	if (len > (uint64_t)(r->end - r->p))
		return cut(r);
	*p = r->p;
	*n = (size_t)len;
	r->p += len;
	return 0;
}

int th_list(struct th_reader *r, int type, int *elem, uint32_t *n)
{
	if (r->bad)
		return -1;
	if (type != TH_LIST && type != TH_SET)
		return bad(r, "list field of another type");
	uint8_t b;
	if (byte(r, &b) < 0)
		return -1;
	uint64_t size = b >> 4;
	if (size == 15) {
		if (varint(r, &size) < 0)
			return -1;
		if (size < 15)
			return bad(r, "list size in the long form below 15");
	}
	int t = b & 0x0f;
	if (t == TH_FALSE)
		t = TH_TRUE;  /* either nibble means bool in a container */
	if (t > TH_STRUCT || (t == TH_STOP && size))
		return bad(r, "unknown list element type");
	if (size > (uint64_t)(r->end - r->p))
		return cut(r);  /* every element takes at least one byte */
	if (enter(r) < 0)
		return -1;
	*elem = t;
	*n = (uint32_t)size;
	return 0;
}

void th_list_end(struct th_reader *r)
{
	r->depth--;
}

/* Skip one value; in_container: booleans are a byte there, not the type. */
static int skip(struct th_reader *r, int type, int in_container)
{
	uint8_t b;
	uint64_t u;
	const uint8_t *p;
	size_t n;
	if (r->bad)
		return -1;
	switch (type) {
	case TH_TRUE:
	case TH_FALSE:
		if (!in_container)
			return 0;
		if (byte(r, &b) < 0)
			return -1;
		return b <= 2 ? 0 : bad(r, "bool element not 0, 1 or 2");
	case TH_I8:
		return byte(r, &b);
	case TH_I16:
	case TH_I32:
	case TH_I64: {
		int64_t v;
		return th_i64(r, type, &v);
	}
	case TH_DOUBLE:
		if (r->end - r->p < 8)
			return cut(r);
		r->p += 8;
		return 0;
	case TH_BINARY:
		return th_binary(r, type, &p, &n);
	case TH_LIST:
	case TH_SET: {
		int elem;
		uint32_t count;
		if (th_list(r, type, &elem, &count) < 0)
			return -1;
		for (uint32_t i = 0; i < count; i++)
			if (skip(r, elem, 1) < 0)
				return -1;
		th_list_end(r);
		return 0;
	}
	case TH_MAP: {
		if (varint(r, &u) < 0)
			return -1;
		if (u == 0)
			return 0;
		if (byte(r, &b) < 0)
			return -1;
		int kt = b >> 4, vt = b & 0x0f;
		if (kt == TH_STOP || kt > TH_STRUCT || vt == TH_STOP || vt > TH_STRUCT)
			return bad(r, "unknown map key or value type");
		if (u > (uint64_t)(r->end - r->p))
			return cut(r);  /* every pair takes at least one byte */
		if (enter(r) < 0)
			return -1;
		for (uint64_t i = 0; i < u; i++)
			if (skip(r, kt, 1) < 0 || skip(r, vt, 1) < 0)
				return -1;
		r->depth--;
		return 0;
	}
	case TH_STRUCT: {
		if (th_struct_begin(r) < 0)
			return -1;
		int16_t last = 0, id;
		int t, k;
		while ((k = th_field(r, &last, &id, &t)) == 1)
			if (skip(r, t, 0) < 0)
				return -1;
		return k;
	}
	default:
		return bad(r, "unknown type");
	}
}

int th_skip(struct th_reader *r, int type)
{
	return skip(r, type, 0);
}
