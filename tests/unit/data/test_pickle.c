/* test_pickle.c: the restricted pickle reader (data/pickle.c), the tiktoken
 * Encoding reader (data/tiktoken_pkl.c) and the torch.save reader
 * (data/torch_pt.c) against files Python's own pickle and torch 1.13 wrote
 * (tests/fixtures/tokenizer_pkl/make.py): plain data of every kind in every
 * protocol read back as Python pickled it; the same Encoding in protocols
 * 0..5 read equal; token_bytes.pt (and its torch 2.x-shaped and
 * big-endian variants) equal to the table make.py computed; every hostile
 * file refused with the text make.py expects (those that need the
 * tokenizer's checks accepted here and left to test_tokenizer_import);
 * exact one-line messages for hand-made opcodes; the limits at their
 * boundary; every cut and many byte flips of a real tokenizer.pkl read
 * safely. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/pickle.h"
#include "data/tiktoken_pkl.h"
#include "data/torch_pt.h"
#include "lib/fileio.h"
#include "t.h"
#include "tfix.h"

#define BENCH_PATTERN                                                            \
	"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,2}| "     \
	"?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"

static char *fix(const char *name, size_t *len)
{
	char path[1024];
	struct err e;
	char *b = t_fix_read(len, &e, path, sizeof path, "tokenizer_pkl/%s", name);
	if (!b)
		printf("  %s\n", e.msg);
	return b;
}

/* parse bytes; returns the error message ("" when accepted) */
static const char *parse_msg(const void *p, size_t n, const struct pk_policy *pol)
{
	static struct err e;
	struct pk_doc *d;
	memset(&e, 0, sizeof e);
	if (pk_parse(p, n, "t", pol, &d, &e) == 0) {
		pk_free(d);
		return "";
	}
	return e.msg;
}

#define CHECK_MSG(bytes, pol, want)                                                  \
	do {                                                                         \
		const char *m_ = parse_msg(bytes, sizeof(bytes) - 1, pol);           \
		CHECKF(!strcmp(m_, want), "got \"%s\", want \"%s\"", m_, want);      \
	} while (0)

/* ---- plain data (make.py PLAIN) ---- */

static int int_list_is(const struct pk_value *l, const int64_t *v, size_t n)
{
	if (!l || l->kind != PK_LIST || l->n != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (l->u.items[i]->kind != PK_INT || l->u.items[i]->u.i != v[i])
			return 0;
	return 1;
}

static int str_is(const struct pk_value *v, int kind, const char *s, size_t n)
{
	return v && v->kind == kind && v->n == n && !memcmp(v->u.s, s, n) && v->u.s[n] == 0;
}

TEST(plain_data_every_protocol)
{
	static const int64_t ints[] = {0, 1, -1, 255, 256, 65535, 65536, -65536, 2147483647,
				       -2147483648LL, 2147483648LL, 1LL << 40, -(1LL << 40),
				       INT64_MAX, INT64_MIN};
	for (int p = 0; p <= 5; p++) {
		char name[32];
		size_t n;
		snprintf(name, sizeof name, "plain_p%d.pkl", p);
		char *b = fix(name, &n);
		CHECK(b);
		if (!b)
			continue;
		struct pk_doc *d;
		struct err e;
		int rc = pk_parse(b, n, name, NULL, &d, &e);
		CHECKF(rc == 0, "%s: %s", name, e.msg);
		free(b);
		if (rc)
			continue;
		const struct pk_value *r = pk_root(d);
		CHECK(pk_protocol(d) == (p >= 2 ? p : 0));
		CHECK(r->kind == PK_DICT && r->n == 7);
		CHECKF(int_list_is(pk_dict_get(r, "ints"), ints, 15), "protocol %d ints", p);
		const struct pk_value *x = pk_dict_get(r, "bools");
		CHECK(x && x->n == 3 && x->u.items[0]->kind == PK_BOOL && x->u.items[0]->u.i == 1 &&
		      x->u.items[1]->kind == PK_BOOL && x->u.items[1]->u.i == 0 &&
		      x->u.items[2]->kind == PK_NONE);
		x = pk_dict_get(r, "floats");
		CHECK(x && x->n == 3 && x->u.items[0]->kind == PK_FLOAT && x->u.items[0]->u.f == 1.5 &&
		      x->u.items[1]->u.f == -0.25 && x->u.items[2]->u.f == 1e300);
		x = pk_dict_get(r, "strs");
		CHECK(x && x->n == 8);
		if (x && x->n == 8) {
			CHECK(str_is(x->u.items[0], PK_STR, "", 0));
			CHECK(str_is(x->u.items[1], PK_STR, "a", 1));
			CHECKF(str_is(x->u.items[2], PK_STR, "back\\slash", 10), "protocol %d: '%s'", p,
			       x->u.items[2]->u.s);
			CHECK(str_is(x->u.items[3], PK_STR, "new\nline", 8));
			CHECK(str_is(x->u.items[4], PK_STR, "caf\xc3\xa9", 5));
			CHECK(str_is(x->u.items[5], PK_STR, "\xe4\xbd\xa0\xe5\xa5\xbd", 6));
			CHECK(str_is(x->u.items[6], PK_STR, "\xf0\x9f\x98\x80", 4));
			CHECK(x->u.items[7]->kind == PK_STR && x->u.items[7]->n == 300);
		}
		x = pk_dict_get(r, "bytes");
		CHECK(x && x->n == 3);
		if (x && x->n == 3) {
			CHECKF(str_is(x->u.items[0], PK_BYTES, "", 0), "protocol %d: empty bytes", p);
			CHECK(str_is(x->u.items[1], PK_BYTES, "\x00\xff", 2));
			int all = x->u.items[2]->kind == PK_BYTES && x->u.items[2]->n == 256;
			for (int i = 0; all && i < 256; i++)
				all = (unsigned char)x->u.items[2]->u.s[i] == i;
			CHECKF(all, "protocol %d: bytes(range(256))", p);
		}
		x = pk_dict_get(r, "tuples");
		CHECK(x && x->n == 5);
		for (uint32_t k = 0; x && k < x->n && k < 5; k++) {
			const struct pk_value *t = x->u.items[k];
			CHECK(t->kind == PK_TUPLE && t->n == k);
			for (uint32_t i = 0; t->kind == PK_TUPLE && i < t->n; i++)
				CHECK(t->u.items[i]->kind == PK_INT && t->u.items[i]->u.i == (int64_t)i + 1);
		}
		x = pk_dict_get(pk_dict_get(pk_dict_get(r, "nested"), "a"), "b");
		CHECK(x && x->kind == PK_LIST && x->n == 2 && x->u.items[0]->kind == PK_LIST &&
		      x->u.items[1]->kind == PK_DICT && x->u.items[1]->n == 0);
		CHECK(r->depth == 4);
		pk_free(d);
	}
}

/* ---- the Encoding ---- */

TEST(encoding_every_protocol)
{
	struct tt_encoding ref;
	struct err e;
	char *p = t_fix_path("tokenizer_pkl", "tokenizer.pkl");
	int rc = tt_read_file(p, &ref, &e);
	free(p);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc)
		return;
	CHECK(!strcmp(ref.name, "rustbpe"));
	CHECK(!strcmp(ref.pat_str, BENCH_PATTERN));
	CHECK(ref.protocol == 4);
	CHECK(ref.n_ranks == 300 && ref.n_mergeable == 300 && ref.explicit_n_vocab == 0);
	for (int i = 0; i < 256; i++)
		CHECK(ref.tok[i] && ref.tok_len[i] == 1 && ref.tok[i][0] == i);
	CHECK(ref.n_special == 4);
	for (uint32_t k = 0; k < ref.n_special && k < 4; k++) {
		char nm[32];
		snprintf(nm, sizeof nm, "<|reserved_%u|>", k);
		CHECK(!strcmp(ref.special[k], nm) && ref.special_id[k] == 300 + k);
	}
	for (int pr = 0; pr <= 5; pr++) {
		char name[32];
		snprintf(name, sizeof name, "tokenizer_p%d.pkl", pr);
		p = t_fix_path("tokenizer_pkl", name);
		struct tt_encoding t;
		rc = tt_read_file(p, &t, &e);
		free(p);
		CHECKF(rc == 0, "%s: %s", name, e.msg);
		if (rc)
			continue;
		CHECK(t.protocol == (pr >= 2 ? pr : 0));
		int same = !strcmp(t.name, ref.name) && !strcmp(t.pat_str, ref.pat_str) &&
			   t.n_ranks == ref.n_ranks && t.n_special == ref.n_special;
		for (uint32_t r = 0; same && r < t.n_ranks; r++)
			same = t.tok_len[r] == ref.tok_len[r] && !memcmp(t.tok[r], ref.tok[r], t.tok_len[r]);
		for (uint32_t k = 0; same && k < t.n_special; k++)
			same = !strcmp(t.special[k], ref.special[k]) && t.special_id[k] == ref.special_id[k];
		CHECKF(same, "protocol %d differs from protocol 4", pr);
		tt_free(&t);
	}
	tt_free(&ref);
}

/* the rows of hostile.tsv: refused here with the text expected, or (those
 * only the tokenizer refuses) read */
TEST(hostile_files)
{
	static const char *const tokenizer_level[] = {"special_endoftext.pkl", "special_id.pkl",
						      "rank_hole.pkl", "token_twice.pkl",
						      "bad_pattern.pkl", "pt_mismatch.pt"};
	size_t n;
	char *tsv = fix("hostile.tsv", &n);
	CHECK(tsv);
	if (!tsv)
		return;
	int rows = 0;
	for (char *line = strtok(tsv, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#')
			continue;
		char *tab = strchr(line, '\t');
		CHECK(tab);
		if (!tab)
			continue;
		*tab = 0;
		const char *want = tab + 1;
		char rel[256];
		snprintf(rel, sizeof rel, "hostile/%s", line);
		char *path = t_fix_path("tokenizer_pkl", rel);
		struct err e = {0};
		int rc, tl = 0;
		for (size_t k = 0; k < sizeof tokenizer_level / sizeof *tokenizer_level; k++)
			tl |= !strcmp(line, tokenizer_level[k]);
		size_t len = strlen(line);
		if (len > 3 && !strcmp(line + len - 3, ".pt")) {
			int32_t *v;
			size_t nv;
			rc = pt_read_int32(path, &v, &nv, &e);
			if (rc == 0)
				free(v);
		} else {
			struct tt_encoding t;
			rc = tt_read_file(path, &t, &e);
			if (rc == 0)
				tt_free(&t);
		}
		if (tl)
			CHECKF(rc == 0, "%s: refused here: %s", line, e.msg);
		else
			CHECKF(rc < 0 && e.code == EXIT_USAGE && strstr(e.msg, want) && !strchr(e.msg, '\n') &&
				       strstr(e.msg, line),
			       "%s: \"%s\", want \"%s\"", line, e.msg, want);
		free(path);
		rows++;
	}
	CHECK(rows >= 60);
	free(tsv);
}

/* exact messages for hand-made opcodes */
TEST(messages)
{
	CHECK_MSG("cos\nsystem\n(Vtouch x\ntR.", &tt_policy,
		  "'t': byte 0: GLOBAL 'os system' is not allowed (only tiktoken.core Encoding)");
	CHECK_MSG("\x80\x04\x8c\x0dtiktoken.core\x8c\x08" "Encoding\x93).", NULL,
		  "'t': byte 27: STACK_GLOBAL 'tiktoken.core Encoding' is not allowed (only plain data)");
	CHECK_MSG("\x80\x02" "ctiktoken.core\nEncoding\n)\x81}b.", &pt_policy,
		  "'t': byte 2: GLOBAL 'tiktoken.core Encoding' is not allowed (only torch._utils "
		  "_rebuild_tensor_v2, collections OrderedDict, torch IntStorage)");
	CHECK_MSG("\x80\x02" "ctorch\nIntStorage\n).", &pt_policy,
		  "'t': byte 21: STOP with 2 values on the stack (1 is needed)");
	CHECK_MSG("\x80\x02" "ctorch\nIntStorage\n)\x81.", &pt_policy,
		  "'t': byte 21: NEWOBJ of 'torch IntStorage' is not allowed (not a class the policy lists)");
	CHECK_MSG("\x80\x02" "ccollections\nOrderedDict\n)\x81.", &pt_policy,
		  "'t': byte 28: NEWOBJ of 'collections OrderedDict' is not allowed (not a class the policy lists)");
	CHECK_MSG("\x80\x02" "ctiktoken.core\nEncoding\n)\x81}b}b.", &tt_policy,
		  "'t': byte 31: BUILD of an object whose state is already set");
	CHECK_MSG("\x80\x02N)R.", &tt_policy, "'t': byte 4: REDUCE of a None is not allowed (only of a listed global)");
	CHECK_MSG("\x80\x02" "c_codecs\nencode\nNR.", &tt_policy,
		  "'t': byte 19: REDUCE with None arguments (a tuple is needed)");
	CHECK_MSG("\x80\x02" "c__builtin__\nobject\n)R.", &tt_policy,
		  "'t': byte 23: REDUCE of __builtin__.object is not allowed");
	CHECK_MSG("\x80\x02" "c_codecs\nencode\nX\x02\x00\x00\x00\xc4\x80X\x06\x00\x00\x00latin1\x86R.",
		  NULL, "'t': byte 37: REDUCE of _codecs.encode: a code point above U+00FF is not latin-1");
	CHECK_MSG("V\\u12\n.", NULL, "'t': byte 0: UNICODE has a truncated \\u escape");
	CHECK_MSG("V\\ud800\n.", NULL, "'t': byte 0: UNICODE escapes U+D800, not a Unicode scalar value");
	CHECK_MSG("V\\U00110000\n.", NULL, "'t': byte 0: UNICODE escapes U+110000, not a Unicode scalar value");
	CHECK_MSG("Vabc", NULL, "'t': byte 0: UNICODE has no end of line before the input ends (truncated)");
	CHECK_MSG("I12x\n.", NULL, "'t': byte 0: INT is not a decimal integer");
	CHECK_MSG("F1.5x\n.", NULL, "'t': byte 0: FLOAT is not a number");
	CHECK_MSG("N\x80\x02.", NULL, "'t': byte 1: PROTO is only allowed as the first opcode");
	CHECK_MSG("\x80\x04\x95\x0b\x00\x00\x00\x00\x00\x00\x00N\x95\x01\x00\x00\x00\x00\x00\x00\x00N.",
		  NULL, "'t': byte 12: FRAME starts before the current frame ends (byte 22)");
	CHECK_MSG("\x80\x02(N\x01.", NULL, "'t': byte 4: opcode 0x01 is not a pickle opcode");
	CHECK_MSG("\x80\x02\x8b\xff\xff\xff\xff.", NULL, "'t': byte 2: LONG4 has a negative length");
	CHECK_MSG("\x80\x02N\x86.", NULL, "'t': byte 3: TUPLE2 needs 2 values on the stack, has 1");
	CHECK_MSG("\x80\x02u.", NULL, "'t': byte 2: SETITEMS has no MARK to close");
	CHECK_MSG("\x80\x02}(N.", NULL, "'t': byte 5: STOP with a MARK still open");
	CHECK_MSG("\x80\x02}(Nu.", NULL, "'t': byte 5: SETITEMS has an odd number of values (1) for key, value pairs");
	CHECK_MSG("\x80\x02(Nu.", NULL, "'t': byte 4: SETITEMS has no dict below its MARK");
	CHECK_MSG("\x80\x02Q.", &pt_policy, "'t': byte 2: BINPERSID needs 1 value on the stack, has 0");
	CHECK_MSG("\x80\x02Np\x31\n.", NULL, "'t': byte 3: PUT index 1 is not the next one (0)");
	CHECK_MSG("\x80\x04N\x94(\x94.", NULL, "'t': byte 5: MEMOIZE needs 1 value on the stack above its MARK, has 0");
}

/* values read that are fine */
TEST(accepted_forms)
{
	/* a None shared through the memo, popped, a mark popped */
	CHECK_MSG("\x80\x02Nq\x00h\x00h\x00\x87(N1.", NULL, "");
	CHECK_MSG("\x80\x02(N00]0N.", NULL, "");   /* POP with nothing above the MARK pops it */
	/* a FRAME that begins where the previous one ends */
	CHECK_MSG("\x80\x04\x95\x0a\x00\x00\x00\x00\x00\x00\x00N\x95\x01\x00\x00\x00\x00\x00\x00\x00.", NULL,
		  "");
	/* memo overwrite of an existing index, protocol 0 PUT/GET */
	CHECK_MSG("I5\np0\n0I6\np0\n0g0\n.", NULL, "");
	/* protocol 0 LONG and INT bools */
	CHECK_MSG("(L-9223372036854775808L\nI01\nI00\nl.", NULL, "");
	/* BYTEARRAY8 and a frame used up exactly */
	CHECK_MSG("\x80\x05\x95\x0c\x00\x00\x00\x00\x00\x00\x00\x96\x02\x00\x00\x00\x00\x00\x00\x00" "ab.",
		  NULL, "");
	/* raw-unicode-escape: an even run of backslashes is no escape */
	struct pk_doc *d;
	struct err e;
	const char *s = "V\\\\u0041\\u0042\n.";
	CHECK(pk_parse(s, strlen(s), "t", NULL, &d, &e) == 0);
	if (d)
		CHECKF(str_is(pk_root(d), PK_STR, "\\\\u0041B", 8), "'%s'", pk_root(d)->u.s);
	pk_free(d);
}

TEST(limits_at_the_boundary)
{
	/* containers nested 64 deep: read; 65: refused */
	for (int k = 64; k <= 65; k++) {
		size_t n = 2 + 2 * (size_t)k + 2;
		char *b = xmalloc(n);
		size_t i = 0;
		b[i++] = (char)0x80;
		b[i++] = 2;
		for (int j = 0; j <= k; j++)
			b[i++] = ']';
		for (int j = 0; j < k; j++)
			b[i++] = 'a';
		b[i++] = '.';
		const char *m = parse_msg(b, i, NULL);
		if (k == 64)
			CHECKF(!*m, "64 deep: %s", m);
		else
			CHECKF(strstr(m, "APPEND nests values more than 64 deep"), "65 deep: %s", m);
		free(b);
	}
	/* 64 open MARKs: read (closed again); 65: refused */
	for (int k = 64; k <= 65; k++) {
		char b[200];
		size_t i = 0;
		for (int j = 0; j < k; j++)
			b[i++] = '(';
		b[i++] = 'N';
		for (int j = 0; j < k; j++)
			b[i++] = 't';
		b[i++] = '.';
		const char *m = parse_msg(b, i, NULL);
		if (k == 64)
			CHECKF(!*m, "64 marks: %s", m);
		else
			CHECKF(!strcmp(m, "'t': byte 64: MARK opens more than 64 MARKs"), "65 marks: %s", m);
	}
	/* PK_MAX_ITEMS values: a None, its memo slot, then memo reads until
	 * the budget is spent (2 + k items after k reads) */
	size_t reads = PK_MAX_ITEMS - 1;
	size_t n = 5 + 2 * reads + 1;
	char *b = xmalloc(n);
	memcpy(b, "\x80\x02Nq\x00", 5);
	for (size_t i = 0; i < reads; i++)
		memcpy(b + 5 + 2 * i, "h\x00", 2);
	b[n - 1] = '.';
	char want[128];
	snprintf(want, sizeof want, "'t': byte %zu: BINGET goes past %u values", 5 + 2 * (reads - 1),
		 PK_MAX_ITEMS);
	const char *m = parse_msg(b, n, NULL);
	CHECKF(!strcmp(m, want), "%s", m);
	free(b);
}

/* every cut of a real tokenizer.pkl (protocols 4 and 0) is refused as
 * truncated, in one line */
TEST(every_cut)
{
	const char *names[] = {"tokenizer.pkl", "tokenizer_p0.pkl"};
	for (int f = 0; f < 2; f++) {
		size_t n;
		char *b = fix(names[f], &n);
		CHECK(b);
		if (!b)
			continue;
		int bad = 0;
		for (size_t k = 0; k < n && bad < 5; k++) {
			struct tt_encoding t;
			struct err e = {0};
			char *c = xmalloc(k ? k : 1);
			memcpy(c, b, k);
			int rc = tt_read_mem(c, k, "cut", &t, &e);
			free(c);
			if (rc == 0) {
				tt_free(&t);
				printf("  %s cut at %zu: read\n", names[f], k);
				bad++;
			} else if (!strstr(e.msg, "(truncated)") || strchr(e.msg, '\n') ||
				   strncmp(e.msg, "'cut': byte ", 12) != 0) {
				printf("  %s cut at %zu: %s\n", names[f], k, e.msg);
				bad++;
			}
		}
		CHECK(bad == 0);
		free(b);
	}
}

/* byte flips of a real tokenizer.pkl (every byte of protocol 4's, every
 * third of protocol 0's): read or refused in one line (the sanitizers
 * watch the rest) */
TEST(byte_flips)
{
	const char *names[] = {"tokenizer.pkl", "tokenizer_p0.pkl"};
	static const int how[] = {0x00, 0xff, 0x80, 0x01};
	for (int f = 0; f < 2; f++) {
		size_t n;
		char *b = fix(names[f], &n);
		CHECK(b);
		if (!b)
			continue;
		int bad = 0, read = 0;
		for (size_t i = 0; i < n; i += f ? 3 : 1)
			for (int h = 0; h < 4; h++) {
				unsigned char old = (unsigned char)b[i];
				b[i] = (char)(h < 2 ? how[h] : h == 2 ? old ^ 0x80 : old + 1);
				struct tt_encoding t;
				struct err e = {0};
				if (tt_read_mem(b, n, "flip", &t, &e) == 0) {
					read++;
					tt_free(&t);
				} else if (!e.msg[0] || strchr(e.msg, '\n') || !strstr(e.msg, "'flip'")) {
					bad++;
				}
				b[i] = (char)old;
			}
		CHECK(bad == 0);
		CHECK(read > 0);   /* flips inside token bytes still read */
		free(b);
	}
}

/* ---- token_bytes.pt ---- */

TEST(torch_token_bytes)
{
	size_t n;
	char *tb = fix("token_bytes.bin", &n);
	CHECK(tb && n == 16 + 4 * 304);
	if (!tb)
		return;
	const char *names[] = {"token_bytes.pt", "token_bytes_v2.pt", "token_bytes_be.pt"};
	for (int f = 0; f < 3; f++) {
		char *p = t_fix_path("tokenizer_pkl", names[f]);
		int32_t *v;
		size_t nv;
		struct err e;
		int rc = pt_read_int32(p, &v, &nv, &e);
		free(p);
		CHECKF(rc == 0, "%s: %s", names[f], e.msg);
		if (rc)
			continue;
		CHECK(nv == 304);
		int same = nv == 304;
		for (size_t i = 0; same && i < nv; i++) {
			const unsigned char *q = (const unsigned char *)tb + 16 + 4 * i;
			same = (uint32_t)v[i] == ((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
						  (uint32_t)q[3] << 24);
		}
		CHECKF(same, "%s differs from token_bytes.bin", names[f]);
		free(v);
	}
	free(tb);
}

int main(void)
{
	RUN(plain_data_every_protocol);
	RUN(encoding_every_protocol);
	RUN(hostile_files);
	RUN(messages);
	RUN(accepted_forms);
	RUN(limits_at_the_boundary);
	RUN(every_cut);
	RUN(byte_flips);
	RUN(torch_token_bytes);
	return t_done();
}
