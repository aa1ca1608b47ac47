/* test_tokenizer.c: data/tokenizer.c and data/bpe_train.c against
 * independent implementations: the split equals Python's `regex` module
 * (chunks.json, make_chunks.py), encoding equals OpenAI's tiktoken Rust core
 * on the real cl100k_base ranks (make_tiktoken.sh), training equals a plain
 * Python BPE (bpe_ref.tiktoken, make_bpe_ref.py), UTF-8 validity equals
 * Python's strict decoder (utf8_cases.json, make_utf8.py); plus round trips,
 * invalid UTF-8, the Brown de-tagger, file formats and refused inputs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "data/corpus.h"
#include "data/tokenizer.h"
#include "t.h"

static char *fx(const char *name)
{
	return xasprintf("%s/data/%s", t_fixtures(), name);
}

static cJSON *fx_json(const char *name)
{
	struct err e;
	char *p = fx(name);
	cJSON *j = json_read_file(p, 0, &e);
	if (!j)
		printf("  %s\n", e.msg);
	free(p);
	return j;
}

struct pieces {
	char **v;
	size_t *n;
	size_t k, cap;
};

static int piece_collect(const char *s, size_t n, void *ctx)
{
	struct pieces *p = ctx;
	if (p->k == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->v = xrealloc(p->v, p->cap * sizeof *p->v);
		p->n = xrealloc(p->n, p->cap * sizeof *p->n);
	}
	p->v[p->k] = xstrndup(s, n);
	p->n[p->k++] = n;
	return 0;
}

static void pieces_free(struct pieces *p)
{
	for (size_t i = 0; i < p->k; i++)
		free(p->v[i]);
	free(p->v);
	free(p->n);
	memset(p, 0, sizeof *p);
}

TEST(split_matches_python_regex)
{
	cJSON *j = fx_json("chunks.json");
	CHECK(j != NULL);
	if (!j)
		return;
	const char *pat = cJSON_GetObjectItem(j, "pattern")->valuestring;
	CHECK_STREQ(pat, TOKENIZER_PATTERN_DEFAULT);
	struct err e;
	void *re, *md;
	CHECK(tokenizer_compile(pat, &re, &md, &e) == 0);
	const cJSON *c;
	int n_cases = 0;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases"))
	{
		const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
		const cJSON *want = cJSON_GetObjectItem(c, "pieces");
		struct pieces got = {0};
		CHECK(tokenizer_split(re, md, text, strlen(text), piece_collect, &got, &e) == 0);
		CHECKF((int)got.k == cJSON_GetArraySize(want), "case %d: %zu pieces, want %d", n_cases,
		       got.k, cJSON_GetArraySize(want));
		for (size_t i = 0; i < got.k && (int)i < cJSON_GetArraySize(want); i++) {
			const char *w = cJSON_GetArrayItem(want, (int)i)->valuestring;
			CHECKF(strcmp(got.v[i], w) == 0, "case %d piece %zu: '%s' want '%s'", n_cases, i,
			       got.v[i], w);
		}
		pieces_free(&got);
		n_cases++;
	}
	CHECK(n_cases >= 20);
	tokenizer_compiled_free(re, md);
	cJSON_Delete(j);
}

/* Encode every case with the real cl100k_base ranks and compare with the ids
 * the tiktoken Rust core gave; decode must give the text back. */
static void check_cases(const char *file)
{
	cJSON *j = fx_json(file);
	CHECK(j != NULL);
	if (!j)
		return;
	const char *pat = cJSON_GetObjectItem(j, "pattern")->valuestring;
	char *ranks = fx("cl100k_base.tiktoken.gz");
	struct tokenizer tk;
	struct err e;
	int rc = tokenizer_load(&tk, ranks, pat, &e);
	CHECKF(rc == 0, "%s", e.msg);
	free(ranks);
	if (rc) {
		cJSON_Delete(j);
		return;
	}
	CHECK(tk.n_ranks == 100256);
	const cJSON *c;
	int k = 0;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases"))
	{
		const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
		const cJSON *want = cJSON_GetObjectItem(c, "ids");
		struct ids got = {0};
		CHECK(tokenizer_encode(&tk, text, strlen(text), &got, &e) == 0);
		int same = (int)got.n == cJSON_GetArraySize(want);
		for (size_t i = 0; same && i < got.n; i++)
			same = got.v[i] == (uint32_t)cJSON_GetArrayItem(want, (int)i)->valuedouble;
		CHECKF(same, "%s case %d: ids differ from tiktoken (%zu vs %d ids)", file, k, got.n,
		       cJSON_GetArraySize(want));
		struct bytes back = {0};
		CHECK(tokenizer_decode(&tk, got.v, got.n, &back, &e) == 0);
		CHECKF(back.n == strlen(text) && (back.n == 0 || memcmp(back.v, text, back.n) == 0), "case %d round trip", k);
		bytes_free(&back);
		ids_free(&got);
		k++;
	}
	CHECK(k >= 20);
	tokenizer_free(&tk);
	cJSON_Delete(j);
}

TEST(encode_matches_tiktoken_cl100k)
{
	check_cases("cl100k_base_cases.json");
}

TEST(encode_matches_tiktoken_bench_pattern)
{
	check_cases("bench_pattern_cases.json");
}

TEST(invalid_utf8_round_trip)
{
	char *ranks = fx("cl100k_base.tiktoken.gz");
	struct tokenizer tk;
	struct err e;
	CHECK(tokenizer_load(&tk, ranks, NULL, &e) == 0);
	free(ranks);
	const char *cases[] = {
		"ab\xff" "cd", "\xc3(", "\xe2\x82", "x\xed\xa0\x80y", "\xf4\x90\x80\x80",
		"\xc0\xaf overlong", "tail \xe6\x97", "\x80\x80\x80 hello \xfe\xfe", "ok \xf0\x9f\x98\x80 ok",
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct ids ids = {0};
		CHECK(tokenizer_encode(&tk, cases[i], strlen(cases[i]), &ids, &e) == 0);
		struct bytes back = {0};
		CHECK(tokenizer_decode(&tk, ids.v, ids.n, &back, &e) == 0);
		CHECKF(back.n == strlen(cases[i]) && memcmp(back.v, cases[i], back.n) == 0,
		       "invalid case %zu", i);
		bytes_free(&back);
		ids_free(&ids);
	}
	/* each invalid byte is its own piece: "ab\xff" "cd" -> ab, \xff, cd */
	struct pieces p = {0};
	CHECK(tokenizer_split(tk.re, tk.md, "ab\xff" "cd", 5, piece_collect, &p, &e) == 0);
	CHECK(p.k == 3 && p.n[1] == 1 && (unsigned char)p.v[1][0] == 0xff);
	pieces_free(&p);
	/* specials decode to their text; ids beyond the vocabulary are refused */
	uint32_t sp[2] = {tk.bos_id, tk.bos_id + 3};
	struct bytes b = {0};
	CHECK(tokenizer_decode(&tk, sp, 2, &b, &e) == 0);
	CHECK(b.n && strcmp((char *)b.v, "<|reserved_0|><|reserved_3|>") == 0);
	uint32_t bad = tk.n_vocab;
	CHECK(tokenizer_decode(&tk, &bad, 1, &b, &e) < 0);
	CHECK(strstr(e.msg, "index 0") != NULL);
	bytes_free(&b);
	tokenizer_free(&tk);
}

static char **read_texts(size_t *n, size_t **lens)
{
	cJSON *j = fx_json("texts.json");
	if (!j)
		return NULL;
	*n = (size_t)cJSON_GetArraySize(j);
	char **t = xcalloc(*n, sizeof *t);
	*lens = xcalloc(*n, sizeof **lens);
	for (size_t i = 0; i < *n; i++) {
		t[i] = xstrdup(cJSON_GetArrayItem(j, (int)i)->valuestring);
		(*lens)[i] = strlen(t[i]);
	}
	cJSON_Delete(j);
	return t;
}

TEST(train_matches_python_reference)
{
	size_t n, *lens;
	char **texts = read_texts(&n, &lens);
	CHECK(texts != NULL);
	if (!texts)
		return;
	struct tokenizer tk;
	struct err e;
	CHECK(bpe_train((const char *const *)texts, lens, n, 556, NULL, 1, &tk, &e) == 0);
	CHECK(tk.n_ranks == 556 && tk.n_vocab == 560 && tk.bos_id == 556);
	char dir[] = "/tmp/supkit-tok-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *out = path_join(dir, "ranks.tiktoken");
	CHECK(tokenizer_save_ranks(&tk, out, &e) == 0);
	char *want, *got;
	size_t wl, gl;
	char *ref = fx("bpe_ref.tiktoken");
	CHECK(file_read_all(ref, 0, &want, &wl, &e) == 0);
	CHECK(file_read_all(out, 0, &got, &gl, &e) == 0);
	CHECKF(wl == gl && memcmp(want, got, wl) == 0, "trained ranks differ from bpe_ref.tiktoken");
	/* the saved ranks load back into the same encoder */
	struct tokenizer tk2;
	CHECK(tokenizer_load(&tk2, out, NULL, &e) == 0);
	for (size_t i = 0; i < n; i++) {
		struct ids a = {0}, b = {0};
		tokenizer_encode(&tk, texts[i], lens[i], &a, &e);
		tokenizer_encode(&tk2, texts[i], lens[i], &b, &e);
		CHECK(a.n == b.n && (a.n == 0 || memcmp(a.v, b.v, a.n * 4) == 0));
		struct bytes back = {0};
		CHECK(tokenizer_decode(&tk2, b.v, b.n, &back, &e) == 0);
		CHECK(back.n == lens[i] && (lens[i] == 0 || memcmp(back.v, texts[i], lens[i]) == 0));
		bytes_free(&back);
		ids_free(&a);
		ids_free(&b);
	}
	/* token_bytes: byte length per token, 0 for the 4 specials */
	char *tb = path_join(dir, "token_bytes.bin");
	CHECK(tokenizer_save_token_bytes(&tk, tb, &e) == 0);
	uint32_t *v = NULL, nv = 0;
	CHECK(tokenizer_token_bytes(tb, &v, &nv, &e) == 0);
	CHECK(nv == 560);
	if (v && nv == 560) {
		CHECK(v[0] == 1 && v[255] == 1 && v[555] == tk.tok_len[555]);
		CHECK(v[556] == 0 && v[559] == 0);
	}
	free(v);
	unlink(tb);
	unlink(out);
	rmdir(dir);
	free(tb);
	free(out);
	free(ref);
	free(want);
	free(got);
	tokenizer_free(&tk2);
	tokenizer_free(&tk);
	for (size_t i = 0; i < n; i++)
		free(texts[i]);
	free(texts);
	free(lens);
}

TEST(train_tie_break_by_hand)
{
	/* pieces: "ab", " ab" x2, " cd" -> (a,b)=3 first; then (' ',256)=2;
	 * then (' ',c) and (c,d) tie at 1: smaller ids (32,99) wins; then (258,d). */
	const char *t[] = {"ab ab ab cd"};
	size_t l[] = {11};
	struct tokenizer tk;
	struct err e;
	CHECK(bpe_train(t, l, 1, 300, NULL, 1, &tk, &e) == 0);
	CHECK(tk.n_ranks == 260);  /* stops when no pair is left */
	CHECK(tk.tok_len[256] == 2 && memcmp(tk.tok[256], "ab", 2) == 0);
	CHECK(tk.tok_len[257] == 3 && memcmp(tk.tok[257], " ab", 3) == 0);
	CHECK(tk.tok_len[258] == 2 && memcmp(tk.tok[258], " c", 2) == 0);
	CHECK(tk.tok_len[259] == 3 && memcmp(tk.tok[259], " cd", 3) == 0);
	tokenizer_free(&tk);
	CHECK(bpe_train(t, l, 1, 100, NULL, 1, &tk, &e) < 0);
}

TEST(bad_rank_files_refused)
{
	char dir[] = "/tmp/supkit-tok-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *p = path_join(dir, "r.tiktoken");
	struct tokenizer tk;
	struct err e;
	const char *bad[] = {"YQ== 0\nYg== x\n", "YQ== 0\n!!!! 1\n", "YQ== 0\nYQ== 1\n",
			     "YQ== 0\nYg== 0\n", "", "YQ==\n"};
	const char *want[] = {"line 2", "line 2", "repeats rank 0", "rank 0 given twice", "no ranks",
			      "line 1"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		CHECK(file_write_atomic(p, bad[i], strlen(bad[i]), &e) == 0);
		CHECK(tokenizer_load(&tk, p, NULL, &e) < 0);
		CHECKF(strstr(e.msg, want[i]) != NULL, "case %zu: '%s'", i, e.msg);
	}
	CHECK(tokenizer_load(&tk, p, "(unclosed", &e) < 0 || (tokenizer_free(&tk), 0));
	CHECK(file_write_atomic(p, "NOTTOKBYTES", 11, &e) == 0);
	uint32_t *v, nv;
	CHECK(tokenizer_token_bytes(p, &v, &nv, &e) < 0 && strstr(e.msg, "offset 0"));
	unlink(p);
	rmdir(dir);
	free(p);
}


/* A token_bytes file of V entries len[0..V) (version 1) at path. */
static void write_token_bytes(const char *path, uint32_t V, const uint32_t *len)
{
	size_t n = 16 + 4 * (size_t)V;
	unsigned char *b = calloc(n, 1);
	memcpy(b, "SKTOKBYT", 8);
	b[8] = 1;
	for (int k = 0; k < 4; k++)
		b[12 + k] = (unsigned char)(V >> (8 * k));
	for (uint32_t i = 0; i < V; i++)
		for (int k = 0; k < 4; k++)
			b[16 + 4 * i + k] = (unsigned char)(len[i] >> (8 * k));
	struct err e;
	CHECK(file_write_atomic(path, b, n, &e) == 0);
	free(b);
}

/* token_bytes lengths are checked as read: each refusal names the file,
 * the offset and the token. */
TEST(token_bytes_lengths_checked)
{
	char dir[] = "/tmp/supkit-tb-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *p = path_join(dir, "token_bytes.bin");
	struct err e;
	uint32_t *v = NULL, nv = 0;
	/* the trainer's fixture (supkit data's output) is accepted */
	CHECKF(tokenizer_token_bytes("tests/fixtures/train/data/token_bytes.bin", &v, &nv, &e) == 0, "%s", e.msg);
	CHECK(nv == 512 && v[511] == 0 && v[0] == 1);
	free(v);
	uint32_t ok[10] = {1, 1, 2, 0, 3, 65536, 0, 0, 0, 0};   /* a rank hole (0), a long token */
	write_token_bytes(p, 10, ok);
	CHECKF(tokenizer_token_bytes(p, &v, &nv, &e) == 0, "%s", e.msg);
	CHECK(nv == 10 && v[5] == 65536);
	free(v);
	struct { uint32_t V; uint32_t len[10]; const char *want; } bad[] = {
		{10, {0xffffffffu, 1, 1, 1, 1, 1, 0, 0, 0, 0}, "offset 16: token 0 has length 4294967295"},
		{10, {1, 1, 1, 1, 1, 65537, 0, 0, 0, 0}, "offset 36: token 5 has length 65537"},
		{10, {1, 1, 1, 1, 1, 1, 0, 0, 0, 7}, "offset 52: token 9 is a special token, its length 7 is not 0"},
		{10, {1, 1, 1, 1, 1, 1, 1, 0, 0, 0}, "offset 40: token 6 is a special token"},
		{10, {0}, "every token has length 0"},
		{4, {0}, "offset 12: vocab size 4 leaves no room for 4 special tokens"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		write_token_bytes(p, bad[i].V, bad[i].len);
		CHECKF(tokenizer_token_bytes(p, &v, &nv, &e) < 0 && strstr(e.msg, bad[i].want) && strstr(e.msg, p) &&
		       e.code == EXIT_USAGE, "case %zu: %s", i, e.msg);
	}
	unlink(p);
	rmdir(dir);
	free(p);
}

static int hexval(int c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

/* utf8_valid equals Python's strict decoder; the split of every case covers
 * its bytes exactly (pieces concatenate to the input). */
TEST(utf8_matches_python)
{
	cJSON *j = fx_json("utf8_cases.json");
	CHECK(j != NULL);
	if (!j)
		return;
	struct err e;
	void *re, *md;
	CHECK(tokenizer_compile(TOKENIZER_PATTERN_DEFAULT, &re, &md, &e) == 0);
	const cJSON *c;
	int k = 0, agree = 0, covered = 0;
	cJSON_ArrayForEach(c, j)
	{
		const char *hex = cJSON_GetObjectItem(c, "hex")->valuestring;
		size_t n = strlen(hex) / 2;
		char buf[64];
		for (size_t i = 0; i < n && i < sizeof buf; i++)
			buf[i] = (char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
		agree += utf8_valid(buf, n) == cJSON_IsTrue(cJSON_GetObjectItem(c, "valid"));
		struct pieces p = {0};
		tokenizer_split(re, md, buf, n, piece_collect, &p, &e);
		size_t off = 0;
		int ok = 1;
		for (size_t i = 0; i < p.k; i++) {
			ok &= off + p.n[i] <= n && memcmp(buf + off, p.v[i], p.n[i]) == 0;
			off += p.n[i];
		}
		covered += ok && off == n;
		pieces_free(&p);
		k++;
	}
	CHECK(k > 400);
	CHECKF(agree == k, "%d of %d agree with Python", agree, k);
	CHECKF(covered == k, "%d of %d splits cover their bytes", covered, k);
	tokenizer_compiled_free(re, md);
	cJSON_Delete(j);
}

TEST(brown_detag_rules)
{
	const char *in = "\n\n\tThe/at ``/`` quick/jj ''/'' (/( fox/nn )/) ,/, said/vbd 1/2/cd ./.\n\n\tNo/rb tag\n";
	struct bytes b = {0};
	brown_detag(in, strlen(in), &b);
	CHECK(b.n && strcmp((char *)b.v, "The \"quick\" (fox), said 1/2.\nNo tag\n") == 0);
	bytes_free(&b);
}

/* The heap merge (long pieces) gives the scan's result: the tiktoken cases
 * through the heap path, and long random pieces through both. */
TEST(heap_merge_equals_scan)
{
	size_t keep = tokenizer_heap_threshold;
	tokenizer_heap_threshold = 0;
	check_cases("cl100k_base_cases.json");
	check_cases("bench_pattern_cases.json");
	char *ranks = fx("cl100k_base.tiktoken.gz");
	struct tokenizer tk;
	struct err e;
	CHECK(tokenizer_load(&tk, ranks, NULL, &e) == 0);
	free(ranks);
	static const char al[] = "aabeeinnorsttTh";
	char *buf = xmalloc(6001);
	uint64_t x = 88172645463325252ull;
	int same = 1;
	for (int r = 0; r < 20; r++) {
		size_t n = 50 + (size_t)r * 300;
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[i] = al[x % (sizeof al - 1)];
		}
		struct ids a = {0}, b = {0};
		tokenizer_heap_threshold = 0;
		tokenizer_encode(&tk, buf, n, &a, &e);
		tokenizer_heap_threshold = SIZE_MAX;
		tokenizer_encode(&tk, buf, n, &b, &e);
		same &= a.n == b.n && memcmp(a.v, b.v, a.n * sizeof *a.v) == 0;
		ids_free(&a);
		ids_free(&b);
	}
	CHECK(same);
	free(buf);
	tokenizer_free(&tk);
	tokenizer_heap_threshold = keep;
}

/* A 2 MB piece (one run of letters) encodes quickly and round-trips. */
TEST(long_piece_is_fast)
{
	char *ranks = fx("cl100k_base.tiktoken.gz");
	struct tokenizer tk;
	struct err e;
	CHECK(tokenizer_load(&tk, ranks, NULL, &e) == 0);
	free(ranks);
	size_t n = 2u << 20;
	char *buf = xmalloc(n);
	for (size_t i = 0; i < n; i++)
		buf[i] = "abcdefghij"[(i * 7 + i / 3) % 10];
	struct ids ids = {0};
	CHECK(tokenizer_encode(&tk, buf, n, &ids, &e) == 0);
	struct bytes back = {0};
	CHECK(tokenizer_decode(&tk, ids.v, ids.n, &back, &e) == 0);
	CHECK(back.n == n && memcmp(back.v, buf, n) == 0);
	bytes_free(&back);
	ids_free(&ids);
	free(buf);
	tokenizer_free(&tk);
}

static int count_doc(const char *doc, size_t len, int valid, void *ctx, struct err *e)
{
	(void)doc, (void)len, (void)valid, (void)ctx, (void)e;
	return 0;
}

/* The in-memory readers give what the path readers give: the gzipped
 * cl100k_base ranks, a bad rank file's message, a token_bytes file, a
 * corpus (JSON array). */
TEST(readers_in_memory_match_paths)
{
	struct err e, e2;
	char *ranks = fx("cl100k_base.tiktoken.gz"), *data;
	size_t n;
	CHECK(file_read_all(ranks, 0, &data, &n, &e) == 0);
	struct tokenizer a, b;
	CHECKF(tokenizer_load(&a, ranks, NULL, &e) == 0, "%s", e.msg);
	CHECKF(tokenizer_load_mem(&b, data, n, ranks, NULL, &e) == 0, "%s", e.msg);
	int same = a.n_ranks == b.n_ranks && a.n_ranks == 100256;
	for (uint32_t i = 0; same && i < a.n_ranks; i++)
		same = a.tok_len[i] == b.tok_len[i] && !memcmp(a.tok[i], b.tok[i], a.tok_len[i]);
	CHECK(same);
	tokenizer_free(&a);
	tokenizer_free(&b);
	free(data);
	free(ranks);
	char dir[] = "/tmp/supkit-mem-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *p = path_join(dir, "bad.tiktoken");
	static const char bad[] = "YQ== 0\n\nYg== x\n";
	CHECK(file_write_atomic(p, bad, sizeof bad - 1, &e) == 0);
	CHECK(tokenizer_load(&a, p, NULL, &e) == -1 && tokenizer_load_mem(&b, bad, sizeof bad - 1, p, NULL, &e2) == -1);
	CHECK_STREQ(e.msg, e2.msg);
	CHECK(strstr(e.msg, "line 3") != NULL);
	uint32_t *v = NULL, *w = NULL, nv = 0, nw = 0;
	const char *tb = "tests/fixtures/train/data/token_bytes.bin";
	CHECK(file_read_all(tb, 0, &data, &n, &e) == 0);
	CHECK(tokenizer_token_bytes(tb, &v, &nv, &e) == 0 && tokenizer_token_bytes_mem(data, n, tb, &w, &nw, &e) == 0);
	CHECK(nv == 512 && nw == nv && !memcmp(v, w, 4 * (size_t)nv));
	CHECK(tokenizer_token_bytes_mem(data, n - 1, tb, &w, &nw, &e) == -1 && strstr(e.msg, tb));
	free(v);
	free(w);
	free(data);
	static const char texts[] = "[\"one\", \"\", \"three\"]";
	char *pj = path_join(dir, "t.json");
	CHECK(file_write_atomic(pj, texts, sizeof texts - 1, &e) == 0);
	struct corpus_opts co = {.format = CORPUS_AUTO};
	struct corpus_counts c1 = {0}, c2 = {0};
	CHECK(corpus_read_file(pj, &co, count_doc, NULL, &c1, &e) == 0);
	CHECK(corpus_read_mem(pj, texts, sizeof texts - 1, &co, count_doc, NULL, &c2, &e) == 0);
	CHECK(c1.docs == 2 && c1.empty == 1 && c1.bytes == 8 && !memcmp(&c1, &c2, sizeof c1));
	unlink(pj);
	unlink(p);
	rmdir(dir);
	free(pj);
	free(p);
}

int main(void)
{
	RUN(split_matches_python_regex);
	RUN(encode_matches_tiktoken_cl100k);
	RUN(encode_matches_tiktoken_bench_pattern);
	RUN(invalid_utf8_round_trip);
	RUN(train_matches_python_reference);
	RUN(train_tie_break_by_hand);
	RUN(bad_rank_files_refused);
	RUN(token_bytes_lengths_checked);
	RUN(utf8_matches_python);
	RUN(brown_detag_rules);
	RUN(heap_merge_equals_scan);
	RUN(long_piece_is_fast);
	RUN(readers_in_memory_match_paths);
	return t_done();
}
