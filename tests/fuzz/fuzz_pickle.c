/* fuzz_pickle.c: libFuzzer harness for the restricted pickle reader
 * (data/pickle.c pk_parse) under the three policies the project uses
 * (plain data, tiktoken_pkl.c's tt_policy, torch_pt.c's pt_policy), the
 * tiktoken Encoding reader (tt_from_doc) and, for an input that starts like
 * a zip, the torch.save reader (pt_read_int32_mem).
 *
 * A refusal must be one line naming the input, with EXIT_USAGE. An accepted
 * pickle must be a tree that keeps the reader's promises: at most
 * PK_MAX_ITEMS values, every container's depth 1 + its deepest item's and
 * at most PK_MAX_DEPTH, str values valid UTF-8 and NUL-terminated, objects,
 * calls and persistent ids only of what the policy allows (objects of a
 * PK_USE_NEW class, calls of a PK_USE_CALL callable, persistent ids only
 * under pt_policy), values shared only when they are leaves or globals (so
 * the walk below stays within the item count). An Encoding read must have
 * its tokens where its counts say.
 *
 * Build (clang): make fuzz (tests/fuzz/fuzz.mk), or by hand
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *   tests/fuzz/fuzz_pickle.c build/libdata.a build/liblib.a -larchive
 * Seeds: tests/fixtures/tokenizer_pkl (every protocol, the .pt files, the
 * hostile files). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/pickle.h"
#include "data/tiktoken_pkl.h"
#include "data/torch_pt.h"
#include "lib/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_msg(const struct err *e)
{
	if (!e->msg[0] || strchr(e->msg, '\n') || !strstr(e->msg, "'fuzz") || e->code != EXIT_USAGE)
		abort();
}

static int allowed(const struct pk_policy *pol, const struct pk_allow *a, unsigned use)
{
	for (size_t i = 0; pol && i < pol->n_allow; i++)
		if (&pol->allow[i] == a)
			return (a->use & use) != 0;
	return 0;
}

/* Walk v; returns the number of references visited (aborts on a broken promise). */
static size_t walk(const struct pk_value *v, const struct pk_policy *pol, size_t budget)
{
	if (!v || budget == 0)
		abort();
	size_t seen = 1;
	unsigned deepest = 0;
	int container = 1;
	switch (v->kind) {
	case PK_NONE:
	case PK_BOOL:
	case PK_INT:
	case PK_FLOAT:
		container = 0;
		if (v->kind == PK_BOOL && v->u.i != 0 && v->u.i != 1)
			abort();
		break;
	case PK_STR:
		if (!utf8_valid(v->u.s, v->n) || v->u.s[v->n] != 0)
			abort();
		container = 0;
		break;
	case PK_BYTES:
		if (v->u.s[v->n] != 0)
			abort();
		container = 0;
		break;
	case PK_GLOBAL:
		if (!v->u.allow || !v->u.allow->module || !v->u.allow->name)
			abort();
		container = 0;
		break;
	case PK_OBJECT:
		if (v->n != 2 || v->u.items[0]->kind != PK_GLOBAL ||
		    !allowed(pol, v->u.items[0]->u.allow, PK_USE_NEW))
			abort();
		break;
	case PK_CALL:
		if (v->n != 2 || v->u.items[0]->kind != PK_GLOBAL || v->u.items[1]->kind != PK_TUPLE ||
		    !allowed(pol, v->u.items[0]->u.allow, PK_USE_CALL))
			abort();
		break;
	case PK_PERSID:
		if (v->n != 1 || !pol || !pol->persid)
			abort();
		break;
	case PK_TUPLE:
	case PK_LIST:
	case PK_DICT:
		break;
	default:
		abort();
	}
	if (!container) {
		if (v->depth != 0)
			abort();
		return seen;
	}
	size_t n = v->kind == PK_DICT ? 2 * (size_t)v->n : v->n;
	int any = 0;
	for (size_t i = 0; i < n; i++) {
		const struct pk_value *c = v->u.items[i];
		if (!c) {
			if (v->kind == PK_OBJECT && i == 1)
				continue;   /* no BUILD */
			abort();
		}
		any = 1;
		if (c->depth > deepest)
			deepest = c->depth;
		seen += walk(c, pol, budget - seen);
		if (seen > budget)
			abort();
	}
	/* a container is 1 + its deepest item deep; an empty one 0 */
	if (v->depth != (any ? deepest + 1 : 0) || v->depth > PK_MAX_DEPTH)
		abort();
	return seen;
}

static void check_encoding(const struct tt_encoding *t)
{
	uint32_t have = 0;
	if (t->n_ranks > TT_MAX_ID || t->n_mergeable > t->n_ranks || !t->name || !t->pat_str ||
	    strlen(t->name) > PK_MAX_FILE)
		abort();
	for (uint32_t r = 0; r < t->n_ranks; r++)
		if (t->tok[r]) {
			if (t->tok_len[r] == 0)
				abort();
			have++;
		}
	if (have != t->n_mergeable)
		abort();
	for (uint32_t k = 0; k < t->n_special; k++)
		if (!t->special[k] || t->special_id[k] >= TT_MAX_ID)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pk_policy *pols[3] = {NULL, &tt_policy, &pt_policy};
	for (int p = 0; p < 3; p++) {
		struct pk_doc *d;
		struct err e;
		if (pk_parse(data, size, "fuzz", pols[p], &d, &e) != 0) {
			if (d)
				abort();
			check_msg(&e);
			continue;
		}
		size_t count = pk_count(d);
		if (count == 0 || count > PK_MAX_ITEMS || pk_protocol(d) < 0 || pk_protocol(d) > 5)
			abort();
		walk(pk_root(d), pols[p], count);
		if (pols[p] == &tt_policy) {
			struct tt_encoding t;
			if (tt_from_doc(d, "fuzz", &t, &e) == 0) {
				check_encoding(&t);
				tt_free(&t);
			} else {
				check_msg(&e);
			}
		}
		pk_free(d);
	}
	if (size >= 4 && !memcmp(data, "PK\x03\x04", 4)) {
		int32_t *v;
		size_t n;
		struct err e;
		if (pt_read_int32_mem(data, size, "fuzz", &v, &n, &e) == 0) {
			if (n > PT_MAX_BYTES / 4)
				abort();
			free(v);
		} else {
			if (v || n)
				abort();
			check_msg(&e);
		}
	}
	return 0;
}
