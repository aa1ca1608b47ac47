/* pickle.c: the restricted pickle reader of pickle.h.
 *
 * A stack machine like CPython's Unpickler (Lib/pickle.py), over plain
 * values only: every opcode's arguments are bounds-checked against the
 * input (and the current FRAME) before they are read, every value counts
 * against PK_MAX_ITEMS, and class references resolve to entries of the
 * caller's list, never to code. MARKs are positions in the one value
 * stack; an opcode sees only the values above the innermost MARK, as
 * Python's separate stacks per MARK do.
 *
 * The result is a tree: containers are never read back from the memo
 * (only leaves and globals are), and DUP is refused, so a container has at
 * most one parent and is complete once it has one; a depth computed when
 * a child is attached is final.
 *
 * Leaves out what pickle.h lists as refused. Reference: CPython
 * Lib/pickle.py (_Unframer, load_* methods), Lib/pickletools.py.
 */
#include "data/pickle.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileio.h"
#include "lib/utf8.h"

/* ---- opcodes ---- */

enum {
	OP_MARK = '(', OP_STOP = '.', OP_POP = '0', OP_POP_MARK = '1', OP_DUP = '2',
	OP_FLOAT = 'F', OP_INT = 'I', OP_BININT = 'J', OP_BININT1 = 'K', OP_LONG = 'L',
	OP_BININT2 = 'M', OP_NONE = 'N', OP_PERSID = 'P', OP_BINPERSID = 'Q', OP_REDUCE = 'R',
	OP_STRING = 'S', OP_BINSTRING = 'T', OP_SHORT_BINSTRING = 'U', OP_UNICODE = 'V',
	OP_BINUNICODE = 'X', OP_APPEND = 'a', OP_BUILD = 'b', OP_GLOBAL = 'c', OP_DICT = 'd',
	OP_EMPTY_DICT = '}', OP_APPENDS = 'e', OP_GET = 'g', OP_BINGET = 'h', OP_INST = 'i',
	OP_LONG_BINGET = 'j', OP_LIST = 'l', OP_EMPTY_LIST = ']', OP_OBJ = 'o', OP_PUT = 'p',
	OP_BINPUT = 'q', OP_LONG_BINPUT = 'r', OP_SETITEM = 's', OP_TUPLE = 't',
	OP_EMPTY_TUPLE = ')', OP_SETITEMS = 'u', OP_BINFLOAT = 'G',
	OP_PROTO = 0x80, OP_NEWOBJ = 0x81, OP_EXT1 = 0x82, OP_EXT2 = 0x83, OP_EXT4 = 0x84,
	OP_TUPLE1 = 0x85, OP_TUPLE2 = 0x86, OP_TUPLE3 = 0x87, OP_NEWTRUE = 0x88,
	OP_NEWFALSE = 0x89, OP_LONG1 = 0x8a, OP_LONG4 = 0x8b,
	OP_BINBYTES = 'B', OP_SHORT_BINBYTES = 'C',
	OP_SHORT_BINUNICODE = 0x8c, OP_BINUNICODE8 = 0x8d, OP_BINBYTES8 = 0x8e,
	OP_EMPTY_SET = 0x8f, OP_ADDITEMS = 0x90, OP_FROZENSET = 0x91, OP_NEWOBJ_EX = 0x92,
	OP_STACK_GLOBAL = 0x93, OP_MEMOIZE = 0x94, OP_FRAME = 0x95,
	OP_BYTEARRAY8 = 0x96, OP_NEXT_BUFFER = 0x97, OP_READONLY_BUFFER = 0x98,
};

static const char *op_name(int op)
{
	switch (op) {
	case OP_MARK: return "MARK";
	case OP_STOP: return "STOP";
	case OP_POP: return "POP";
	case OP_POP_MARK: return "POP_MARK";
	case OP_DUP: return "DUP";
	case OP_FLOAT: return "FLOAT";
	case OP_INT: return "INT";
	case OP_BININT: return "BININT";
	case OP_BININT1: return "BININT1";
	case OP_LONG: return "LONG";
	case OP_BININT2: return "BININT2";
	case OP_NONE: return "NONE";
	case OP_PERSID: return "PERSID";
	case OP_BINPERSID: return "BINPERSID";
	case OP_REDUCE: return "REDUCE";
	case OP_STRING: return "STRING";
	case OP_BINSTRING: return "BINSTRING";
	case OP_SHORT_BINSTRING: return "SHORT_BINSTRING";
	case OP_UNICODE: return "UNICODE";
	case OP_BINUNICODE: return "BINUNICODE";
	case OP_APPEND: return "APPEND";
	case OP_BUILD: return "BUILD";
	case OP_GLOBAL: return "GLOBAL";
	case OP_DICT: return "DICT";
	case OP_EMPTY_DICT: return "EMPTY_DICT";
	case OP_APPENDS: return "APPENDS";
	case OP_GET: return "GET";
	case OP_BINGET: return "BINGET";
	case OP_INST: return "INST";
	case OP_LONG_BINGET: return "LONG_BINGET";
	case OP_LIST: return "LIST";
	case OP_EMPTY_LIST: return "EMPTY_LIST";
	case OP_OBJ: return "OBJ";
	case OP_PUT: return "PUT";
	case OP_BINPUT: return "BINPUT";
	case OP_LONG_BINPUT: return "LONG_BINPUT";
	case OP_SETITEM: return "SETITEM";
	case OP_TUPLE: return "TUPLE";
	case OP_EMPTY_TUPLE: return "EMPTY_TUPLE";
	case OP_SETITEMS: return "SETITEMS";
	case OP_BINFLOAT: return "BINFLOAT";
	case OP_PROTO: return "PROTO";
	case OP_NEWOBJ: return "NEWOBJ";
	case OP_EXT1: return "EXT1";
	case OP_EXT2: return "EXT2";
	case OP_EXT4: return "EXT4";
	case OP_TUPLE1: return "TUPLE1";
	case OP_TUPLE2: return "TUPLE2";
	case OP_TUPLE3: return "TUPLE3";
	case OP_NEWTRUE: return "NEWTRUE";
	case OP_NEWFALSE: return "NEWFALSE";
	case OP_LONG1: return "LONG1";
	case OP_LONG4: return "LONG4";
	case OP_BINBYTES: return "BINBYTES";
	case OP_SHORT_BINBYTES: return "SHORT_BINBYTES";
	case OP_SHORT_BINUNICODE: return "SHORT_BINUNICODE";
	case OP_BINUNICODE8: return "BINUNICODE8";
	case OP_BINBYTES8: return "BINBYTES8";
	case OP_EMPTY_SET: return "EMPTY_SET";
	case OP_ADDITEMS: return "ADDITEMS";
	case OP_FROZENSET: return "FROZENSET";
	case OP_NEWOBJ_EX: return "NEWOBJ_EX";
	case OP_STACK_GLOBAL: return "STACK_GLOBAL";
	case OP_MEMOIZE: return "MEMOIZE";
	case OP_FRAME: return "FRAME";
	case OP_BYTEARRAY8: return "BYTEARRAY8";
	case OP_NEXT_BUFFER: return "NEXT_BUFFER";
	case OP_READONLY_BUFFER: return "READONLY_BUFFER";
	}
	return NULL;
}

/* ---- the globals every pickle may name (pickle.h) ---- */

enum { B_RECON, B_OBJECT, B_ENCODE, B_BYTES, B_N };
static const struct pk_allow builtin[] = {
	{"copyreg", "_reconstructor", 0}, {"copy_reg", "_reconstructor", 0},
	{"builtins", "object", 0},        {"__builtin__", "object", 0},
	{"_codecs", "encode", 0},
	{"builtins", "bytes", 0},         {"__builtin__", "bytes", 0},
};
static const int builtin_role[] = {B_RECON, B_RECON, B_OBJECT, B_OBJECT, B_ENCODE, B_BYTES, B_BYTES};
#define N_BUILTIN (sizeof builtin / sizeof builtin[0])

static int role_of(const struct pk_allow *a)
{
	if (a >= builtin && a < builtin + N_BUILTIN)
		return builtin_role[a - builtin];
	return -1;
}

/* ---- the document ---- */

#define BLOCK 4096

struct pk_doc {
	struct pk_value **blocks;
	size_t nblocks, last;   /* values used in the last block */
	struct pk_value *root;
	int proto;
	size_t count;
};

static void doc_free_value(struct pk_value *v)
{
	switch (v->kind) {
	case PK_STR:
	case PK_BYTES:
		free(v->u.s);
		break;
	case PK_TUPLE:
	case PK_LIST:
	case PK_DICT:
	case PK_OBJECT:
	case PK_CALL:
	case PK_PERSID:
		free(v->u.items);
		break;
	}
}

void pk_free(struct pk_doc *d)
{
	if (!d)
		return;
	for (size_t b = 0; b < d->nblocks; b++) {
		size_t n = b + 1 == d->nblocks ? d->last : BLOCK;
		for (size_t i = 0; i < n; i++)
			doc_free_value(&d->blocks[b][i]);
		free(d->blocks[b]);
	}
	free(d->blocks);
	free(d);
}

const struct pk_value *pk_root(const struct pk_doc *d) { return d->root; }
int pk_protocol(const struct pk_doc *d) { return d->proto; }
size_t pk_count(const struct pk_doc *d) { return d->count; }

const char *pk_kind_name(int kind)
{
	static const char *const names[] = {"None", "bool", "int", "float", "str", "bytes",
					    "tuple", "list", "dict", "global", "object", "call",
					    "persistent id"};
	return kind >= 0 && kind <= PK_PERSID ? names[kind] : "?";
}

const struct pk_value *pk_dict_get(const struct pk_value *d, const char *key)
{
	if (!d || d->kind != PK_DICT)
		return NULL;
	size_t kl = strlen(key);
	for (uint32_t k = 0; k < d->n; k++) {
		const struct pk_value *x = d->u.items[2 * k];
		if (x->kind == PK_STR && x->n == kl && memcmp(x->u.s, key, kl) == 0)
			return d->u.items[2 * k + 1];
	}
	return NULL;
}

int pk_is_global(const struct pk_value *v, const char *module, const char *name)
{
	return v && v->kind == PK_GLOBAL && !strcmp(v->u.allow->module, module) &&
	       !strcmp(v->u.allow->name, name);
}

/* ---- the reader ---- */

struct rd {
	const unsigned char *p;
	size_t len, pos;
	size_t limit;             /* end of the current frame, or len */
	size_t op_at;             /* offset of the current opcode */
	int op;
	const char *name;
	const struct pk_policy *pol;
	struct pk_doc *d;
	struct pk_value **stack;
	size_t sn, scap;
	size_t marks[PK_MAX_DEPTH];
	int nmarks;
	struct pk_value **memo;
	size_t mn, mcap;
	size_t items;
	struct err *e;
};

/* "'name': byte N: OPCODE <message>" */
static int fail(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct rd *r, const char *fmt, ...)
{
	char msg[ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const char *on = op_name(r->op);
	if (on)
		return err_set(r->e, EXIT_USAGE, "'%s': byte %zu: %s %s", r->name, r->op_at, on, msg);
	return err_set(r->e, EXIT_USAGE, "'%s': byte %zu: opcode 0x%02x %s", r->name, r->op_at,
		       (unsigned)r->op, msg);
}

static int count_item(struct rd *r)
{
	if (r->items >= PK_MAX_ITEMS)
		return fail(r, "goes past %u values", PK_MAX_ITEMS);
	r->items++;
	return 0;
}

static struct pk_value *newv(struct rd *r, int kind)
{
	if (count_item(r) < 0)
		return NULL;
	struct pk_doc *d = r->d;
	if (d->nblocks == 0 || d->last == BLOCK) {
		d->blocks = xrealloc(d->blocks, (d->nblocks + 1) * sizeof *d->blocks);
		d->blocks[d->nblocks++] = xmalloc(BLOCK * sizeof(struct pk_value));
		d->last = 0;
	}
	struct pk_value *v = &d->blocks[d->nblocks - 1][d->last++];
	memset(v, 0, sizeof *v);
	v->kind = (uint8_t)kind;
	v->offset = r->op_at;
	return v;
}

/* Bytes: the next n of the input, within the current frame. */
static const unsigned char *take(struct rd *r, uint64_t n)
{
	if (n > r->limit - r->pos) {
		if (r->limit < r->len)
			fail(r, "needs %llu bytes but its frame ends %zu bytes on", (unsigned long long)n,
			     r->limit - r->pos);
		else
			fail(r, "needs %llu bytes but the input ends %zu bytes on (truncated)",
			     (unsigned long long)n, r->limit - r->pos);
		return NULL;
	}
	const unsigned char *q = r->p + r->pos;
	r->pos += (size_t)n;
	return q;
}

/* A text argument: the bytes up to the next '\n' (not included). */
static const unsigned char *line(struct rd *r, size_t *n)
{
	const unsigned char *q = r->p + r->pos;
	const unsigned char *nl = memchr(q, '\n', r->limit - r->pos);
	if (!nl) {
		fail(r, "has no end of line before the %s", r->limit < r->len ? "frame ends" : "input ends (truncated)");
		return NULL;
	}
	*n = (size_t)(nl - q);
	r->pos += *n + 1;
	return q;
}

static uint64_t le(const unsigned char *q, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | q[i];
	return v;
}

/* the values above the innermost MARK */
static size_t avail(const struct rd *r)
{
	return r->sn - (r->nmarks ? r->marks[r->nmarks - 1] : 0);
}

static void push(struct rd *r, struct pk_value *v)
{
	if (r->sn == r->scap) {
		r->scap = r->scap ? 2 * r->scap : 256;
		r->stack = xrealloc(r->stack, r->scap * sizeof *r->stack);
	}
	r->stack[r->sn++] = v;
}

static int need(struct rd *r, size_t k)
{
	if (avail(r) < k)
		return fail(r, "needs %zu value%s on the stack%s, has %zu", k, k == 1 ? "" : "s",
			    r->nmarks ? " above its MARK" : "", avail(r));
	return 0;
}

/* Pop the innermost MARK; *first is the stack index of the first value above it. */
static int pop_mark(struct rd *r, size_t *first)
{
	if (r->nmarks == 0)
		return fail(r, "has no MARK to close");
	*first = r->marks[--r->nmarks];
	return 0;
}

static const char *what(const struct pk_value *v)
{
	return pk_kind_name(v->kind);
}

/* Append child to the items of container c (a list, dict or new tuple). */
static int attach_depth(struct rd *r, struct pk_value *c, const struct pk_value *child)
{
	if (child->depth + 1 > c->depth) {
		if (child->depth + 1 > PK_MAX_DEPTH)
			return fail(r, "nests values more than %d deep", PK_MAX_DEPTH);
		c->depth = (uint8_t)(child->depth + 1);
	}
	return 0;
}

/* Item arrays that grow hold cap_for(count) slots. */
static size_t cap_for(size_t n)
{
	size_t c = 4;
	if (n == 0)
		return 0;
	while (c < n)
		c *= 2;
	return c;
}

static void grow_items(struct pk_value *c, size_t count, size_t add)
{
	if (count + add > cap_for(count))
		c->u.items = xrealloc(c->u.items, cap_for(count + add) * sizeof *c->u.items);
}

/* Values stack[first..sn) appended to list or dict c (dict: pairs). */
static int extend(struct rd *r, struct pk_value *c, size_t first)
{
	size_t k = r->sn - first;
	size_t count = c->kind == PK_DICT ? 2 * (size_t)c->n : c->n;
	if (c->kind == PK_DICT && k % 2)
		return fail(r, "has an odd number of values (%zu) for key, value pairs", k);
	if (count + k > UINT32_MAX)
		return fail(r, "makes a container of more than 2^32 values");
	for (size_t i = first; i < r->sn; i++) {
		if (attach_depth(r, c, r->stack[i]) < 0)
			return -1;
		if (c->kind == PK_DICT && (i - first) % 2 == 0) {
			int kk = r->stack[i]->kind;
			if (kk == PK_LIST || kk == PK_DICT || kk == PK_OBJECT || kk == PK_CALL ||
			    kk == PK_PERSID)
				return fail(r, "uses a %s as a dict key (not hashable)", what(r->stack[i]));
		}
	}
	if (k == 0)
		return 0;
	grow_items(c, count, k);
	memcpy(c->u.items + count, r->stack + first, k * sizeof *r->stack);
	c->n = (uint32_t)(c->kind == PK_DICT ? (count + k) / 2 : count + k);
	r->sn = first;
	return 0;
}

/* A tuple of stack[first..sn), popped. */
static int make_tuple(struct rd *r, size_t first)
{
	struct pk_value *t = newv(r, PK_TUPLE);
	if (!t)
		return -1;
	size_t k = r->sn - first;
	t->n = (uint32_t)k;
	t->u.items = xmalloc((k ? k : 1) * sizeof *t->u.items);
	for (size_t i = 0; i < k; i++) {
		if (attach_depth(r, t, r->stack[first + i]) < 0)
			return -1;
		t->u.items[i] = r->stack[first + i];
	}
	r->sn = first;
	push(r, t);
	return 0;
}

/* A node whose items are the n given values (object, call, persistent id). */
static struct pk_value *make_node(struct rd *r, int kind, struct pk_value *a, struct pk_value *b,
				  uint32_t n)
{
	struct pk_value *v = newv(r, kind);
	if (!v)
		return NULL;
	v->n = n;
	v->u.items = xcalloc(2, sizeof *v->u.items);
	v->u.items[0] = a;
	v->u.items[1] = b;
	if (attach_depth(r, v, a) < 0 || (b && attach_depth(r, v, b) < 0))
		return NULL;
	return v;
}

static int push_str(struct rd *r, int kind, const unsigned char *q, size_t n)
{
	if (n > UINT32_MAX)
		return fail(r, "holds more than 2^32 bytes");
	if (kind == PK_STR) {
		if (!utf8_valid((const char *)q, n))
			return fail(r, "is not valid UTF-8");
	}
	struct pk_value *v = newv(r, kind);
	if (!v)
		return -1;
	v->n = (uint32_t)n;
	v->u.s = xmalloc(n + 1);
	memcpy(v->u.s, q, n);
	v->u.s[n] = 0;
	push(r, v);
	return 0;
}

static int push_int(struct rd *r, int kind, int64_t i)
{
	struct pk_value *v = newv(r, kind);
	if (!v)
		return -1;
	v->u.i = i;
	push(r, v);
	return 0;
}

/* Decimal text: optional '-', digits; fits int64. */
static int parse_dec(const unsigned char *q, size_t n, int64_t *out)
{
	size_t i = 0;
	int neg = 0;
	if (i < n && q[i] == '-') {
		neg = 1;
		i++;
	}
	if (i == n)
		return -1;
	uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		if (q[i] < '0' || q[i] > '9')
			return -1;
		unsigned dg = (unsigned)(q[i] - '0');
		if (v > (lim - dg) / 10)
			return -2;
		v = v * 10 + dg;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* protocol 0's UNICODE: raw-unicode-escape (bytes are code points 0..255,
 * \uXXXX and \UXXXXXXXX escapes after an odd run of backslashes, as
 * CPython's decoder) to UTF-8 in out. */
static int raw_unicode_escape(struct rd *r, const unsigned char *q, size_t n, char **out, size_t *on)
{
	char *s = xmalloc(4 * n + 1);
	size_t k = 0, i = 0;
	while (i < n) {
		uint32_t c = q[i];
		if (c == '\\') {
			size_t bs = i;
			while (i < n && q[i] == '\\')
				s[k++] = q[i++];
			if ((i - bs) % 2 == 0 || i >= n || (q[i] != 'u' && q[i] != 'U'))
				continue;
			k--;   /* the last backslash starts an escape */
			int digits = q[i] == 'u' ? 4 : 8;
			i++;
			if (n - i < (size_t)digits) {
				free(s);
				return fail(r, "has a truncated \\%c escape", digits == 4 ? 'u' : 'U');
			}
			c = 0;
			for (int j = 0; j < digits; j++, i++) {
				int h = q[i];
				int hv = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 :
					 h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
				if (hv < 0) {
					free(s);
					return fail(r, "has a bad \\%c escape", digits == 4 ? 'u' : 'U');
				}
				c = c << 4 | (uint32_t)hv;
			}
			if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
				free(s);
				return fail(r, "escapes U+%X, not a Unicode scalar value", (unsigned)c);
			}
		} else {
			i++;
		}
		if (c < 0x80) {
			s[k++] = (char)c;
		} else if (c < 0x800) {
			s[k++] = (char)(0xC0 | c >> 6);
			s[k++] = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			s[k++] = (char)(0xE0 | c >> 12);
			s[k++] = (char)(0x80 | (c >> 6 & 0x3F));
			s[k++] = (char)(0x80 | (c & 0x3F));
		} else {
			s[k++] = (char)(0xF0 | c >> 18);
			s[k++] = (char)(0x80 | (c >> 12 & 0x3F));
			s[k++] = (char)(0x80 | (c >> 6 & 0x3F));
			s[k++] = (char)(0x80 | (c & 0x3F));
		}
	}
	*out = s;
	*on = k;
	return 0;
}

/* "module name" of an allow list, for messages */
static void allowed_list(const struct pk_policy *pol, char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = 0;
	for (size_t i = 0; pol && i < pol->n_allow && k + 1 < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%s %s", i ? ", " : "", pol->allow[i].module,
				      pol->allow[i].name);
	if (!buf[0])
		snprintf(buf, n, "plain data");
}

static int find_global(struct rd *r, const char *mod, size_t ml, const char *nm, size_t nl)
{
	const struct pk_allow *hit = NULL;
	for (size_t i = 0; i < N_BUILTIN && !hit; i++)
		if (strlen(builtin[i].module) == ml && !memcmp(builtin[i].module, mod, ml) &&
		    strlen(builtin[i].name) == nl && !memcmp(builtin[i].name, nm, nl))
			hit = &builtin[i];
	for (size_t i = 0; r->pol && i < r->pol->n_allow && !hit; i++) {
		const struct pk_allow *a = &r->pol->allow[i];
		if (strlen(a->module) == ml && !memcmp(a->module, mod, ml) && strlen(a->name) == nl &&
		    !memcmp(a->name, nm, nl))
			hit = a;
	}
	if (!hit) {
		char only[512];
		allowed_list(r->pol, only, sizeof only);
		return fail(r, "'%.*s %.*s' is not allowed (only %s)", (int)(ml > 200 ? 200 : ml), mod,
			    (int)(nl > 200 ? 200 : nl), nm, only);
	}
	struct pk_value *v = newv(r, PK_GLOBAL);
	if (!v)
		return -1;
	v->u.allow = hit;
	push(r, v);
	return 0;
}

static int newobj(struct rd *r, struct pk_value *cls)
{
	if (cls->kind != PK_GLOBAL)
		return fail(r, "of a %s is not allowed (only of a listed class)", what(cls));
	if (!(cls->u.allow->use & PK_USE_NEW))
		return fail(r, "of '%s %s' is not allowed (not a class the policy lists)",
			    cls->u.allow->module, cls->u.allow->name);
	struct pk_value *o = make_node(r, PK_OBJECT, cls, NULL, 2);
	if (!o)
		return -1;
	push(r, o);
	return 0;
}

static int reduce(struct rd *r)
{
	if (need(r, 2) < 0)
		return -1;
	struct pk_value *args = r->stack[--r->sn], *fn = r->stack[--r->sn];
	if (fn->kind != PK_GLOBAL)
		return fail(r, "of a %s is not allowed (only of a listed global)", what(fn));
	if (args->kind != PK_TUPLE)
		return fail(r, "with %s arguments (a tuple is needed)", what(args));
	const struct pk_allow *a = fn->u.allow;
	struct pk_value **x = args->u.items;
	switch (role_of(a)) {
	case B_RECON:
		if (args->n != 3 || x[0]->kind != PK_GLOBAL || x[1]->kind != PK_GLOBAL ||
		    role_of(x[1]->u.allow) != B_OBJECT || x[2]->kind != PK_NONE)
			return fail(r, "of %s.%s accepts only (class, object, None)", a->module, a->name);
		return newobj(r, x[0]);
	case B_ENCODE: {
		if (args->n != 2 || x[0]->kind != PK_STR || x[1]->kind != PK_STR ||
		    strcmp(x[1]->u.s, "latin1") != 0)
			return fail(r, "of _codecs.encode accepts only (str, 'latin1')");
		/* code points below 256 become one byte each */
		const unsigned char *s = (const unsigned char *)x[0]->u.s;
		size_t n = x[0]->n, k = 0;
		unsigned char *b = xmalloc(n + 1);
		for (size_t i = 0; i < n;) {
			if (s[i] < 0x80) {
				b[k++] = s[i++];
			} else if ((s[i] == 0xC2 || s[i] == 0xC3) && i + 1 < n) {
				b[k++] = (unsigned char)((s[i] & 0x03) << 6 | (s[i + 1] & 0x3F));
				i += 2;
			} else {
				free(b);
				return fail(r, "of _codecs.encode: a code point above U+00FF is not latin-1");
			}
		}
		int rc = push_str(r, PK_BYTES, b, k);
		free(b);
		return rc;
	}
	case B_BYTES:
		if (args->n != 0)
			return fail(r, "of %s.bytes accepts only ()", a->module);
		return push_str(r, PK_BYTES, (const unsigned char *)"", 0);
	case B_OBJECT:
		return fail(r, "of %s.object is not allowed", a->module);
	}
	if (!(a->use & PK_USE_CALL))
		return fail(r, "of '%s %s' is not allowed (not a callable the policy lists)", a->module,
			    a->name);
	struct pk_value *c = make_node(r, PK_CALL, fn, args, 2);
	if (!c)
		return -1;
	push(r, c);
	return 0;
}

static int memo_put(struct rd *r, uint64_t idx)
{
	if (need(r, 1) < 0)
		return -1;
	if (idx > r->mn)
		return fail(r, "index %llu is not the next one (%zu)", (unsigned long long)idx, r->mn);
	if (idx == r->mn) {
		if (count_item(r) < 0)
			return -1;
		if (r->mn == r->mcap) {
			r->mcap = r->mcap ? 2 * r->mcap : 256;
			r->memo = xrealloc(r->memo, r->mcap * sizeof *r->memo);
		}
		r->mn++;
	}
	r->memo[idx] = r->stack[r->sn - 1];
	return 0;
}

static int memo_get(struct rd *r, uint64_t idx)
{
	if (idx >= r->mn)
		return fail(r, "index %llu is not in the memo (%zu entries)", (unsigned long long)idx, r->mn);
	struct pk_value *v = r->memo[idx];
	if (v->kind >= PK_TUPLE && v->kind != PK_GLOBAL)
		return fail(r, "of a %s (index %llu) is not allowed: values are not shared", what(v),
			    (unsigned long long)idx);
	if (count_item(r) < 0)
		return -1;
	push(r, v);
	return 0;
}

/* One opcode at r->pos. Returns 1 at STOP, 0 to go on, -1 on error. */
static int step(struct rd *r)
{
	if (r->limit < r->len && r->pos == r->limit)
		r->limit = r->len;   /* the frame is used up */
	if (r->pos >= r->len)
		return err_set(r->e, EXIT_USAGE, "'%s': byte %zu: ends without STOP (truncated)", r->name,
			       r->pos);
	r->op_at = r->pos;
	r->op = r->p[r->pos++];
	const unsigned char *q;
	size_t n = 0, first = 0;
	int64_t iv;
	struct pk_value *v, *w;
	switch (r->op) {
	case OP_PROTO:
		if (!(q = take(r, 1)))
			return -1;
		if (r->op_at != 0)
			return fail(r, "is only allowed as the first opcode");
		if (q[0] > 5)
			return fail(r, "%u is not supported (0 to 5)", q[0]);
		r->d->proto = q[0];
		return 0;
	case OP_FRAME: {
		if (!(q = take(r, 8)))
			return -1;
		if (r->limit < r->len && r->pos < r->limit)
			return fail(r, "starts before the current frame ends (byte %zu)", r->limit);
		uint64_t fl = le(q, 8);
		if (fl > r->len - r->pos)
			return fail(r, "of %llu bytes but the input ends %zu bytes on (truncated)",
				    (unsigned long long)fl, r->len - r->pos);
		r->limit = r->pos + (size_t)fl;
		return 0;
	}
	case OP_STOP:
		if (r->nmarks)
			return fail(r, "with a MARK still open");
		if (r->sn != 1)
			return fail(r, "with %zu values on the stack (1 is needed)", r->sn);
		if (r->pos != r->len)
			return fail(r, "is followed by %zu more bytes", r->len - r->pos);
		r->d->root = r->stack[0];
		return 1;
	case OP_MARK:
		if (r->nmarks == PK_MAX_DEPTH)
			return fail(r, "opens more than %d MARKs", PK_MAX_DEPTH);
		r->marks[r->nmarks++] = r->sn;
		return 0;
	case OP_POP:
		if (avail(r) > 0)
			r->sn--;
		else if (pop_mark(r, &first) < 0)
			return -1;
		return 0;
	case OP_POP_MARK:
		if (pop_mark(r, &first) < 0)
			return -1;
		r->sn = first;
		return 0;
	case OP_NONE:
		return push_int(r, PK_NONE, 0);
	case OP_NEWTRUE:
	case OP_NEWFALSE:
		return push_int(r, PK_BOOL, r->op == OP_NEWTRUE);
	case OP_BININT:
		if (!(q = take(r, 4)))
			return -1;
		return push_int(r, PK_INT, (int32_t)(uint32_t)le(q, 4));
	case OP_BININT1:
		if (!(q = take(r, 1)))
			return -1;
		return push_int(r, PK_INT, q[0]);
	case OP_BININT2:
		if (!(q = take(r, 2)))
			return -1;
		return push_int(r, PK_INT, (int64_t)le(q, 2));
	case OP_INT:
	case OP_LONG: {
		if (!(q = line(r, &n)))
			return -1;
		if (r->op == OP_INT && n == 2 && q[0] == '0' && (q[1] == '0' || q[1] == '1'))
			return push_int(r, PK_BOOL, q[1] == '1');
		if (r->op == OP_LONG && n && q[n - 1] == 'L')
			n--;
		int rc = parse_dec(q, n, &iv);
		if (rc == -2)
			return fail(r, "value does not fit 64 bits");
		if (rc < 0)
			return fail(r, "is not a decimal integer");
		return push_int(r, PK_INT, iv);
	}
	case OP_LONG1:
	case OP_LONG4: {
		if (!(q = take(r, r->op == OP_LONG1 ? 1 : 4)))
			return -1;
		uint64_t k = le(q, r->op == OP_LONG1 ? 1 : 4);
		if (r->op == OP_LONG4 && k > 0x7fffffffu)
			return fail(r, "has a negative length");
		if (k > 8) {
			if (!take(r, k))
				return -1;
			return fail(r, "value of %llu bytes does not fit 64 bits", (unsigned long long)k);
		}
		if (!(q = take(r, k)))
			return -1;
		uint64_t u = le(q, (int)k);
		if (k && k < 8 && (q[k - 1] & 0x80))
			u |= ~(uint64_t)0 << (8 * k);   /* sign-extend */
		return push_int(r, PK_INT, (int64_t)u);
	}
	case OP_BINFLOAT: {
		if (!(q = take(r, 8)))
			return -1;
		uint64_t u = 0;
		for (int i = 0; i < 8; i++)
			u = u << 8 | q[i];
		double f;
		memcpy(&f, &u, 8);
		if (!(v = newv(r, PK_FLOAT)))
			return -1;
		v->u.f = f;
		push(r, v);
		return 0;
	}
	case OP_FLOAT: {
		if (!(q = line(r, &n)))
			return -1;
		char buf[64];
		if (n == 0 || n >= sizeof buf || memchr(q, 0, n))
			return fail(r, "is not a number");
		memcpy(buf, q, n);
		buf[n] = 0;
		char *end;
		errno = 0;
		double f = strtod(buf, &end);
		if (*end || end == buf || buf[0] == ' ' || buf[0] == '\t')
			return fail(r, "is not a number");
		if (!(v = newv(r, PK_FLOAT)))
			return -1;
		v->u.f = f;
		push(r, v);
		return 0;
	}
	case OP_SHORT_BINUNICODE:
	case OP_BINUNICODE:
	case OP_BINUNICODE8:
	case OP_SHORT_BINBYTES:
	case OP_BINBYTES:
	case OP_BINBYTES8:
	case OP_BYTEARRAY8: {
		int w8 = r->op == OP_SHORT_BINUNICODE || r->op == OP_SHORT_BINBYTES ? 1 :
			 r->op == OP_BINUNICODE || r->op == OP_BINBYTES ? 4 : 8;
		if (!(q = take(r, (uint64_t)w8)))
			return -1;
		uint64_t k = le(q, w8);
		if (!(q = take(r, k)))
			return -1;
		int str = r->op == OP_SHORT_BINUNICODE || r->op == OP_BINUNICODE || r->op == OP_BINUNICODE8;
		return push_str(r, str ? PK_STR : PK_BYTES, q, (size_t)k);
	}
	case OP_UNICODE: {
		if (!(q = line(r, &n)))
			return -1;
		char *s = NULL;
		size_t sl = 0;
		if (raw_unicode_escape(r, q, n, &s, &sl) < 0)
			return -1;
		int rc = push_str(r, PK_STR, (const unsigned char *)s, sl);
		free(s);
		return rc;
	}
	case OP_EMPTY_TUPLE:
		return make_tuple(r, r->sn);
	case OP_TUPLE1:
	case OP_TUPLE2:
	case OP_TUPLE3: {
		size_t k = (size_t)(r->op - OP_TUPLE1 + 1);
		if (need(r, k) < 0)
			return -1;
		return make_tuple(r, r->sn - k);
	}
	case OP_TUPLE:
		if (pop_mark(r, &first) < 0)
			return -1;
		return make_tuple(r, first);
	case OP_EMPTY_LIST:
	case OP_EMPTY_DICT:
		if (!(v = newv(r, r->op == OP_EMPTY_LIST ? PK_LIST : PK_DICT)))
			return -1;
		push(r, v);
		return 0;
	case OP_LIST:
	case OP_DICT:
		if (pop_mark(r, &first) < 0)
			return -1;
		if (!(v = newv(r, r->op == OP_LIST ? PK_LIST : PK_DICT)))
			return -1;
		if (extend(r, v, first) < 0)
			return -1;
		push(r, v);
		return 0;
	case OP_APPEND:
	case OP_SETITEM:
		if (need(r, r->op == OP_APPEND ? 2 : 3) < 0)
			return -1;
		first = r->sn - (r->op == OP_APPEND ? 1 : 2);
		v = r->stack[first - 1];
		if (v->kind != (r->op == OP_APPEND ? PK_LIST : PK_DICT))
			return fail(r, "on a %s (a %s is needed)", what(v), r->op == OP_APPEND ? "list" : "dict");
		return extend(r, v, first);
	case OP_APPENDS:
	case OP_SETITEMS:
		if (pop_mark(r, &first) < 0)
			return -1;
		if (avail(r) < r->sn - first + 1)
			return fail(r, "has no %s below its MARK", r->op == OP_APPENDS ? "list" : "dict");
		v = r->stack[first - 1];
		if (v->kind != (r->op == OP_APPENDS ? PK_LIST : PK_DICT))
			return fail(r, "on a %s (a %s is needed)", what(v), r->op == OP_APPENDS ? "list" : "dict");
		return extend(r, v, first);
	case OP_PUT:
	case OP_GET: {
		if (!(q = line(r, &n)))
			return -1;
		if (parse_dec(q, n, &iv) < 0 || iv < 0)
			return fail(r, "index is not a decimal number");
		return r->op == OP_PUT ? memo_put(r, (uint64_t)iv) : memo_get(r, (uint64_t)iv);
	}
	case OP_BINPUT:
	case OP_BINGET:
		if (!(q = take(r, 1)))
			return -1;
		return r->op == OP_BINPUT ? memo_put(r, q[0]) : memo_get(r, q[0]);
	case OP_LONG_BINPUT:
	case OP_LONG_BINGET:
		if (!(q = take(r, 4)))
			return -1;
		return r->op == OP_LONG_BINPUT ? memo_put(r, le(q, 4)) : memo_get(r, le(q, 4));
	case OP_MEMOIZE:
		return memo_put(r, r->mn);
	case OP_GLOBAL: {
		const unsigned char *m, *nm;
		size_t ml, nl;
		if (!(m = line(r, &ml)) || !(nm = line(r, &nl)))
			return -1;
		return find_global(r, (const char *)m, ml, (const char *)nm, nl);
	}
	case OP_STACK_GLOBAL:
		if (need(r, 2) < 0)
			return -1;
		w = r->stack[r->sn - 1];
		v = r->stack[r->sn - 2];
		if (v->kind != PK_STR || w->kind != PK_STR)
			return fail(r, "needs two str values, has a %s and a %s", what(v), what(w));
		r->sn -= 2;
		return find_global(r, v->u.s, v->n, w->u.s, w->n);
	case OP_NEWOBJ:
		if (need(r, 2) < 0)
			return -1;
		w = r->stack[--r->sn];
		v = r->stack[--r->sn];
		if (w->kind != PK_TUPLE || w->n != 0)
			return fail(r, "with arguments is not allowed (only an empty tuple)");
		return newobj(r, v);
	case OP_REDUCE:
		return reduce(r);
	case OP_BUILD:
		if (need(r, 2) < 0)
			return -1;
		w = r->stack[r->sn - 1];
		v = r->stack[r->sn - 2];
		if (v->kind != PK_OBJECT)
			return fail(r, "on a %s is not allowed (only on an object of a listed class)", what(v));
		if (v->u.items[1])
			return fail(r, "of an object whose state is already set");
		if (attach_depth(r, v, w) < 0)
			return -1;
		v->u.items[1] = w;
		r->sn--;
		return 0;
	case OP_BINPERSID:
		if (!r->pol || !r->pol->persid)
			return fail(r, "is not allowed (no persistent ids)");
		if (need(r, 1) < 0)
			return -1;
		w = r->stack[--r->sn];
		if (!(v = make_node(r, PK_PERSID, w, NULL, 1)))
			return -1;
		push(r, v);
		return 0;
	case OP_STRING:
	case OP_BINSTRING:
	case OP_SHORT_BINSTRING:
		return fail(r, "is not supported (a Python 2 str)");
	case OP_EMPTY_SET:
	case OP_ADDITEMS:
	case OP_FROZENSET:
		return fail(r, "is not supported (sets)");
	case OP_DUP:
		return fail(r, "is not allowed (values are not shared)");
	case OP_INST:
	case OP_OBJ:
	case OP_NEWOBJ_EX:
	case OP_PERSID:
	case OP_EXT1:
	case OP_EXT2:
	case OP_EXT4:
	case OP_NEXT_BUFFER:
	case OP_READONLY_BUFFER:
		return fail(r, "is not allowed");
	}
	return fail(r, "is not a pickle opcode");
}

int pk_parse(const void *data, size_t len, const char *name, const struct pk_policy *pol,
	     struct pk_doc **out, struct err *e)
{
	*out = NULL;
	struct rd r = {0};
	r.p = data;
	r.len = r.limit = len;
	r.name = name;
	r.pol = pol;
	r.e = e;
	r.d = xcalloc(1, sizeof *r.d);
	int rc;
	while ((rc = step(&r)) == 0)
		;
	free(r.stack);
	free(r.memo);
	r.d->count = r.items;
	if (rc < 0) {
		pk_free(r.d);
		return -1;
	}
	*out = r.d;
	return 0;
}

int pk_read_file(const char *path, const struct pk_policy *pol, struct pk_doc **out, struct err *e)
{
	char *buf;
	size_t n;
	*out = NULL;
	if (file_read_all(path, PK_MAX_FILE, &buf, &n, e) < 0)
		return -1;
	int rc = pk_parse(buf, n, path, pol, out, e);
	free(buf);
	return rc;
}
