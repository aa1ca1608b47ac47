/* pickle.h: a restricted reader of Python pickles (protocols 0 to 5) that
 * builds a tree of plain values and never calls, imports or executes
 * anything.
 *
 * Accepted: the opcodes of plain data: PROTO (first, at most 5), FRAME,
 * STOP, MARK, POP, POP_MARK; NONE, NEWTRUE, NEWFALSE; INT, BININT,
 * BININT1, BININT2, LONG, LONG1, LONG4 (values that fit 64 bits), FLOAT,
 * BINFLOAT; UNICODE, BINUNICODE, SHORT_BINUNICODE, BINUNICODE8 (valid
 * UTF-8: lone surrogates refused); BINBYTES, SHORT_BINBYTES, BINBYTES8,
 * BYTEARRAY8; EMPTY_TUPLE, TUPLE, TUPLE1..3, EMPTY_LIST, LIST, APPEND, APPENDS,
 * EMPTY_DICT, DICT, SETITEM, SETITEMS; PUT, BINPUT, LONG_BINPUT, MEMOIZE,
 * GET, BINGET, LONG_BINGET.
 *
 * Objects, only as the caller's policy allows (struct pk_policy): GLOBAL
 * and STACK_GLOBAL of a listed module and name; NEWOBJ of a listed class
 * with empty arguments, then at most one BUILD of its state (the default
 * object pickling of protocol 2 and later); REDUCE of a listed callable,
 * recorded as a PK_CALL value and never called; BINPERSID when the policy
 * says so (a PK_PERSID value). Three REDUCEs that are how protocols 0 to
 * 2 spell plain things are understood without a policy entry:
 * copyreg._reconstructor(cls, object, None) (protocols 0 and 1's object
 * creation, the same as NEWOBJ of cls), _codecs.encode(str, 'latin1') and
 * bytes() (protocols 0 to 2's bytes: a str of code points below 256
 * becomes those bytes; bytes() the empty bytes); their Python 2 spellings
 * copy_reg and __builtin__ too.
 *
 * Refused, with one line naming the input, the byte offset of the opcode
 * and the opcode: every other GLOBAL, REDUCE, BUILD and NEWOBJ, and INST,
 * OBJ, NEWOBJ_EX, PERSID, BINPERSID (unless allowed), EXT1/2/4,
 * NEXT_BUFFER, READONLY_BUFFER, DUP, the Python 2 strings STRING,
 * BINSTRING, SHORT_BINSTRING, sets (EMPTY_SET, ADDITEMS, FROZENSET),
 * unknown opcodes; and every inconsistency: a length beyond the input or
 * the current frame (an opcode may not run past its FRAME's end, as in
 * Python's pure-Python unpickler; a FRAME may begin only where the last
 * one ends), a stack or mark underflow, a container of the wrong
 * kind under APPEND(S) or SETITEM(S), a dict key Python could not hash
 * (a list, dict or object), a memo index that is not the next
 * one or an existing one, a memo read of a container (values are not
 * shared: the result is a tree), STOP with other than exactly one value
 * and no open MARK, bytes after STOP, a missing STOP.
 *
 * Limits: PK_MAX_ITEMS values (made or read from the memo), containers
 * nested at most PK_MAX_DEPTH deep, at most PK_MAX_DEPTH open MARKs; a
 * file is read whole up to PK_MAX_FILE bytes (pk_read_file).
 *
 * Dictionaries keep their pairs in input order, repeated keys included
 * (the consumer decides; Python would keep the last value). Leaves out:
 * Python 2 strings, sets, out-of-band buffers, extension registries, any
 * evaluation. Reference: CPython Lib/pickle.py and Lib/pickletools.py
 * (the opcode table), PEP 307 (protocol 2), PEP 3154 (protocol 4), PEP 574
 * (protocol 5).
 *
 * Ownership: a struct pk_doc owns every value of its tree (strings and
 * byte strings copied); pk_free releases them. Values stay valid until
 * then.
 */
#ifndef SUPKIT_DATA_PICKLE_H
#define SUPKIT_DATA_PICKLE_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"

#define PK_MAX_FILE (64u << 20)    /* bytes read by pk_read_file */
#define PK_MAX_ITEMS (1u << 24)    /* values made or read from the memo */
#define PK_MAX_DEPTH 64            /* container nesting; open MARKs */

enum pk_kind {
	PK_NONE,
	PK_BOOL,    /* i: 0 or 1 */
	PK_INT,     /* i */
	PK_FLOAT,   /* f */
	PK_STR,     /* s[0..n): valid UTF-8 (may hold U+0000), NUL-terminated */
	PK_BYTES,   /* s[0..n) (NUL-terminated for convenience) */
	PK_TUPLE,   /* items[0..n) */
	PK_LIST,    /* items[0..n) */
	PK_DICT,    /* n pairs: items[2k] key, items[2k+1] value */
	PK_GLOBAL,  /* allow: the policy entry (module, name) */
	PK_OBJECT,  /* an allowed class made empty: items[0] the PK_GLOBAL, items[1] its state or NULL (n = 2) */
	PK_CALL,    /* REDUCE of an allowed callable: items[0] the PK_GLOBAL, items[1] the args tuple (n = 2) */
	PK_PERSID,  /* BINPERSID: items[0] the persistent id (n = 1) */
};

/* How a listed global may be used (bits). */
enum {
	PK_USE_REF = 1,   /* as a value only */
	PK_USE_NEW = 2,   /* a class: NEWOBJ (cls, ()) or copyreg._reconstructor, then one BUILD */
	PK_USE_CALL = 4,  /* REDUCE (fn, args): a PK_CALL value, never called */
};

struct pk_allow {
	const char *module, *name;
	unsigned use;
};

struct pk_policy {
	const struct pk_allow *allow;  /* n_allow entries */
	size_t n_allow;
	int persid;                    /* accept BINPERSID */
};

struct pk_value {
	uint8_t kind;          /* enum pk_kind */
	uint8_t depth;         /* 0 for a leaf; else 1 + its deepest item's depth */
	uint32_t n;            /* length of s, or number of items (pairs for PK_DICT) */
	uint64_t offset;       /* byte offset of the opcode that made it */
	union {
		int64_t i;
		double f;
		char *s;
		struct pk_value **items;
		const struct pk_allow *allow;
	} u;
};

struct pk_doc;

/* Parse data[0..len) (not kept) under policy pol (NULL: plain data only).
 * name is used in messages: "'name': byte N: OPCODE ...". *out is a fresh
 * document (pk_free it), NULL on failure; EXIT_USAGE for refused input. */
int pk_parse(const void *data, size_t len, const char *name, const struct pk_policy *pol,
	     struct pk_doc **out, struct err *e);
/* pk_parse of the file path (at most PK_MAX_FILE bytes); EXIT_SYS when it
 * cannot be read. */
int pk_read_file(const char *path, const struct pk_policy *pol, struct pk_doc **out,
		 struct err *e);
void pk_free(struct pk_doc *d);

/* The value STOP returned. */
const struct pk_value *pk_root(const struct pk_doc *d);
/* The protocol of the PROTO opcode; 0 without one (protocols 0 and 1). */
int pk_protocol(const struct pk_doc *d);
/* Values made or read from the memo (at most PK_MAX_ITEMS). */
size_t pk_count(const struct pk_doc *d);

/* "None", "bool", "int", "float", "str", "bytes", "tuple", "list", "dict",
 * "global", "object", "call", "persistent id". */
const char *pk_kind_name(int kind);
/* The value of the pair whose key is the str key; NULL when none (or d is
 * not a PK_DICT). The first such pair when repeated. */
const struct pk_value *pk_dict_get(const struct pk_value *d, const char *key);
/* 1 when v is a PK_GLOBAL of module and name. */
int pk_is_global(const struct pk_value *v, const char *module, const char *name);

#endif
