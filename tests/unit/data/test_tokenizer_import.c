/* test_tokenizer_import.c: data/tokenizer_import.c against
 * tests/fixtures/tokenizer_pkl (make.py: Python's own pickle of a
 * tiktoken-shaped Encoding, torch 1.13's torch.save): the imported folder's
 * ranks.tiktoken and token_bytes.bin equal the ones Python wrote; the
 * imported tokenizer encodes a text to the ids the same ranks give through
 * tokenizer_load (what --ranks reads); utf8_replaced_len equals Python's
 * bytes.decode("utf-8", "replace") on 420 byte strings; every hostile file
 * is refused with the text make.py expects and leaves no folder; an
 * existing folder is kept without force and replaced with it. */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/utf8.h"
#include "t.h"
#include "tfix.h"
#include "data/tokenizer.h"
#include "data/tokenizer_import.h"

static char *fixp(const char *name)
{
	return t_fix_path("tokenizer_pkl", name);
}

static int same_file(const char *a, const char *b)
{
	char *x, *y;
	size_t nx, ny;
	struct err e;
	if (file_read_all(a, 0, &x, &nx, &e) < 0)
		return printf("  %s\n", e.msg), 0;
	if (file_read_all(b, 0, &y, &ny, &e) < 0)
		return free(x), printf("  %s\n", e.msg), 0;
	int same = nx == ny && !memcmp(x, y, nx);
	free(x);
	free(y);
	return same;
}

/* entries of dir (for "nothing left behind") */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

TEST(replaced_len_matches_python)
{
	size_t n;
	char path[1024];
	struct err e;
	char *t = t_fix_read(&n, &e, path, sizeof path, "tokenizer_pkl/utf8_replace.txt");
	CHECK(t);
	if (!t)
		return;
	int cases = 0, bad = 0;
	for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
		char hex[64];
		size_t want;
		if (sscanf(line, "%63s %zu", hex, &want) != 2) {
			bad++;
			continue;
		}
		unsigned char b[32];
		size_t k = 0;
		for (size_t i = 0; hex[0] != '-' && hex[i] && hex[i + 1] && k < sizeof b; i += 2) {
			unsigned v;
			sscanf(hex + i, "%2x", &v);
			b[k++] = (unsigned char)v;
		}
		size_t got = utf8_replaced_len((const char *)b, k);
		if (got != want) {
			printf("  %s: %zu, Python %zu\n", hex, got, want);
			bad++;
		}
		cases++;
	}
	CHECK(cases >= 400 && bad == 0);
	free(t);
}

TEST(special_name_counts_zero)
{
	/* prepare.py: a token whose decoded text is a special's name counts 0 */
	unsigned char *tok[258];
	uint32_t len[258];
	unsigned char bytes[256];
	for (int i = 0; i < 256; i++) {
		bytes[i] = (unsigned char)i;
		tok[i] = &bytes[i];
		len[i] = 1;
	}
	tok[256] = (unsigned char *)"<|reserved_2|>";
	len[256] = 14;
	tok[257] = (unsigned char *)"\xe4\xbd";
	len[257] = 2;
	struct tokenizer tk;
	struct err e;
	CHECK(tokenizer_init(&tk, tok, len, 258, NULL, &e) == 0);
	uint32_t tb[262];
	tokenizer_benchmark_token_bytes(&tk, tb);
	CHECK(tb['a'] == 1 && tb[0x7f] == 1 && tb[0x80] == 3 && tb[0xff] == 3);
	CHECK(tb[256] == 0 && tb[257] == 3);
	CHECK(tb[258] == 0 && tb[259] == 0 && tb[260] == 0 && tb[261] == 0);
	tokenizer_free(&tk);
}

TEST(import_equals_python)
{
	char dir[] = "/tmp/supkit-import-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *out = path_join(dir, "tok");
	char *pkl = fixp("tokenizer.pkl"), *pt = fixp("token_bytes.pt");
	struct tokenizer_import_opts o = {pkl, pt, out, 0};
	struct tokenizer_import_report r;
	struct err e;
	int rc = tokenizer_import(&o, &r, &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		CHECK(!strcmp(r.name, "rustbpe") && r.protocol == 4 && r.pattern_default);
		CHECK(r.n_ranks == 300 && r.n_vocab == 304 && r.bos_id == 300 && r.token_bytes_checked);
		CHECK(r.non_utf8_tokens >= 130);
		CHECK(strlen(r.pkl_sha256) == 64 && strlen(r.token_bytes_sha256) == 64);
		tokenizer_import_report_free(&r);
	}
	char *a = path_join(out, "ranks.tiktoken"), *b = fixp("ranks.tiktoken");
	CHECK(same_file(a, b));
	char *c = path_join(out, "token_bytes.bin"), *d = fixp("token_bytes.bin");
	CHECK(same_file(c, d));
	char *jp = path_join(out, "tokenizer.json");
	cJSON *j = json_read_file(jp, 0, &e);
	CHECK(j);
	if (j) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, "vocab_size");
		CHECK(cJSON_IsNumber(x) && x->valuedouble == 304);
		x = cJSON_GetObjectItemCaseSensitive(j, "pattern");
		CHECK(cJSON_IsString(x) && !strcmp(x->valuestring, TOKENIZER_PATTERN_DEFAULT));
		x = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "imported_from"),
						     "pickle_protocol");
		CHECK(cJSON_IsNumber(x) && x->valuedouble == 4);
		cJSON_Delete(j);
	}

	/* encoding: the imported tokenizer, the Encoding built directly, and
	 * the same ranks through tokenizer_load (--ranks) give the same ids,
	 * which decode back to the text */
	size_t n;
	char path[1024];
	char *text = t_fix_read(&n, &e, path, sizeof path, "tokenizer_pkl/sample.txt");
	CHECK(text);
	struct tokenizer t1, t2, t3;
	CHECK(tokenizer_load(&t1, a, NULL, &e) == 0);
	CHECK(tokenizer_load(&t2, b, NULL, &e) == 0);
	struct tt_encoding tt;
	CHECK(tt_read_file(pkl, &tt, &e) == 0);
	CHECK(tokenizer_from_tiktoken(&tt, pkl, &t3, &e) == 0);
	tt_free(&tt);
	struct ids i1 = {0}, i2 = {0}, i3 = {0};
	CHECK(text && tokenizer_encode(&t1, text, n, &i1, &e) == 0);
	CHECK(text && tokenizer_encode(&t2, text, n, &i2, &e) == 0);
	CHECK(text && tokenizer_encode(&t3, text, n, &i3, &e) == 0);
	CHECK(i1.n > 100 && i1.n < n);   /* merges were used */
	CHECK(i1.n == i2.n && i1.n == i3.n && !memcmp(i1.v, i2.v, 4 * i1.n) && !memcmp(i1.v, i3.v, 4 * i1.n));
	struct bytes back = {0};
	CHECK(tokenizer_decode(&t1, i1.v, i1.n, &back, &e) == 0);
	CHECK(text && back.n == n && !memcmp(back.v, text, n));
	bytes_free(&back);
	ids_free(&i1);
	ids_free(&i2);
	ids_free(&i3);
	tokenizer_free(&t1);
	tokenizer_free(&t2);
	tokenizer_free(&t3);
	free(text);

	/* an existing folder: refused without force (untouched), replaced with it */
	o.token_bytes = NULL;
	rc = tokenizer_import(&o, &r, &e);
	CHECK(rc < 0 && strstr(e.msg, "already exists (use --force to replace it)"));
	CHECK(same_file(c, d));
	o.force = 1;
	rc = tokenizer_import(&o, &r, &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		CHECK(!r.token_bytes_checked && !r.token_bytes_sha256[0]);
		tokenizer_import_report_free(&r);
	}
	CHECK(same_file(c, d));   /* computed from the ranks: the same table */
	CHECK(entries(dir) == 1);
	free(a);
	free(b);
	free(c);
	free(d);
	free(jp);
	dir_remove_tree(dir);
	free(out);
	free(pkl);
	free(pt);
}

TEST(other_pattern_carried)
{
	char dir[] = "/tmp/supkit-import-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *out = path_join(dir, "tok");
	char *pkl = fixp("other_pattern.pkl");
	struct tokenizer_import_opts o = {pkl, NULL, out, 0};
	struct tokenizer_import_report r;
	struct err e;
	int rc = tokenizer_import(&o, &r, &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		CHECK(!r.pattern_default && strstr(r.pattern, "\\p{N}{1,3}"));
		tokenizer_import_report_free(&r);
	}
	dir_remove_tree(dir);
	free(out);
	free(pkl);
}

/* every row of hostile.tsv (a .pt with the good tokenizer.pkl) */
TEST(hostile_refused_nothing_left)
{
	char dir[] = "/tmp/supkit-import-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *out = path_join(dir, "tok");
	char *good = fixp("tokenizer.pkl");
	size_t n;
	char path[1024];
	struct err e;
	char *tsv = t_fix_read(&n, &e, path, sizeof path, "tokenizer_pkl/hostile.tsv");
	CHECK(tsv);
	int rows = 0;
	for (char *line = tsv ? strtok(tsv, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		if (line[0] == '#')
			continue;
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = 0;
		char rel[256];
		snprintf(rel, sizeof rel, "hostile/%s", line);
		char *f = fixp(rel);
		size_t l = strlen(line);
		int is_pt = l > 3 && !strcmp(line + l - 3, ".pt");
		struct tokenizer_import_opts o = {is_pt ? good : f, is_pt ? f : NULL, out, 0};
		struct tokenizer_import_report r;
		memset(&e, 0, sizeof e);
		int rc = tokenizer_import(&o, &r, &e);
		CHECKF(rc < 0 && e.code == EXIT_USAGE && strstr(e.msg, tab + 1) && !strchr(e.msg, '\n'),
		       "%s: \"%s\"", line, e.msg);
		if (rc == 0)
			tokenizer_import_report_free(&r);
		CHECKF(entries(dir) == 0, "%s left something in the folder", line);
		free(f);
		rows++;
	}
	CHECK(rows >= 60);
	free(tsv);
	dir_remove_tree(dir);
	free(out);
	free(good);
}

int main(void)
{
	RUN(replaced_len_matches_python);
	RUN(special_name_counts_zero);
	RUN(import_equals_python);
	RUN(other_pattern_carried);
	RUN(hostile_refused_nothing_left);
	return t_done();
}
