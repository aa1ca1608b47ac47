/* test_manifest.c: supplements/manifest.c (UTF-8 and path rules, JSON form,
 * parsing of hostile manifests, comparison), human.c and args.c. */
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "supplements/args.h"
#include "supplements/human.h"
#include "supplements/manifest.h"
#include "t.h"

#define HEX_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

TEST(utf8_rules)
{
	CHECK(utf8_valid("plain/ascii.txt", 15));
	CHECK(utf8_valid("\xc3\xa9t\xc3\xa9", 5));                 /* été */
	CHECK(utf8_valid("\xf0\x9f\x98\x80", 4));                  /* U+1F600 */
	CHECK(!utf8_valid("\xc0\x80", 2));                          /* overlong NUL */
	CHECK(!utf8_valid("\xe0\x80\xaf", 3));                      /* overlong '/' */
	CHECK(!utf8_valid("\xed\xa0\x80", 3));                      /* surrogate */
	CHECK(!utf8_valid("\xf4\x90\x80\x80", 4));                  /* > U+10FFFF */
	CHECK(!utf8_valid("\xe2\x82", 2));                          /* truncated */
	CHECK(!utf8_valid("\xff", 1));
	CHECK(!utf8_valid("a\x80", 2));                             /* lone continuation */
}

TEST(path_rules)
{
	struct err e;
	const char *good[] = {"a", "a/b.txt", "results/r1.json", "\xc3\xa9t\xc3\xa9/x", ".hidden", "a..b", "...", NULL};
	for (int i = 0; good[i]; i++)
		CHECKF(manifest_path_check(good[i], &e) == 0, "'%s' refused: %s", good[i], e.msg);
	const char *badp[] = {"", "/abs", "../x", "a/../b", "a/..", "./a", "a/./b", "a//b", "a/", "a\\b",
			      "a\nb", "tab\there", "\xff.txt", "\xc0\xae\xc0\xae/x", NULL};
	for (int i = 0; badp[i]; i++)
		CHECKF(manifest_path_check(badp[i], &e) < 0, "'%s' accepted", badp[i]);
	char *longp = xmalloc(MANIFEST_PATH_MAX + 2);
	memset(longp, 'x', MANIFEST_PATH_MAX + 1);
	longp[MANIFEST_PATH_MAX + 1] = '\0';
	CHECK(manifest_path_check(longp, &e) < 0);
	free(longp);
}

TEST(print_parse_roundtrip)
{
	struct manifest m, p;
	struct err e;
	manifest_init(&m);
	manifest_add(&m, "z.txt", 3, HEX_A, NULL);
	manifest_add(&m, "a/b.safetensors", 1ull << 40, HEX_B, HEX_A);
	manifest_add(&m, "a.txt", 0, HEX_B, NULL);
	manifest_sort(&m);
	CHECK_STREQ(m.e[0].path, "a.txt");   /* '.' (0x2e) sorts before '/' (0x2f) */
	CHECK_STREQ(m.e[1].path, "a/b.safetensors");
	size_t len;
	char *s = manifest_print(&m, &len);
	CHECK(len == strlen(s) && s[len - 1] == '\n');
	CHECK(strstr(s, "\"format\": \"supkit-manifest\"") != NULL);
	CHECK(strstr(s, "\"size\": 1099511627776") != NULL);
	CHECK(strstr(s, "\"safetensors_digest\": \"" HEX_A "\"") != NULL);
	CHECK(manifest_parse(s, len, "m.json", &p, &e) == 0);
	CHECK(p.n == 3);
	for (size_t i = 0; i < p.n && i < m.n; i++) {
		CHECK_STREQ(p.e[i].path, m.e[i].path);
		CHECK(p.e[i].size == m.e[i].size);
		CHECK_STREQ(p.e[i].sha256, m.e[i].sha256);
		CHECK_STREQ(p.e[i].st_digest, m.e[i].st_digest);
	}
	char *s2 = manifest_print(&p, NULL);
	CHECK_STREQ(s2, s);
	CHECK(manifest_find(&p, "z.txt") == &p.e[2]);
	CHECK(manifest_find(&p, "nope") == NULL);
	free(s);
	free(s2);
	manifest_release(&m);
	manifest_release(&p);
}

static void parse_bad(const char *text, const char *want)
{
	struct manifest m;
	struct err e;
	err_clear(&e);
	int r = manifest_parse(text, strlen(text), "x.json", &m, &e);
	CHECKF(r < 0, "accepted: %s", text);
	CHECKF(e.code == EXIT_USAGE, "code %d", e.code);
	CHECKF(strstr(e.msg, want) != NULL, "message '%s' lacks '%s'", e.msg, want);
	CHECKF(strchr(e.msg, '\n') == NULL, "message has a newline");
	manifest_release(&m);
}

#define HEAD "{\"format\":\"supkit-manifest\",\"format_version\":1,\"tool_version\":\"0.1.0\",\"entries\":["
TEST(parse_refuses_bad_manifests)
{
	parse_bad("{\n  \"format\": ,\n}", "line 2");
	parse_bad("[]", "not a JSON object");
	parse_bad("{\"format\":\"zip\",\"format_version\":1,\"tool_version\":\"x\",\"entries\":[]}", "format is 'zip'");
	parse_bad("{\"format\":\"supkit-manifest\",\"format_version\":3,\"tool_version\":\"x\",\"entries\":[]}",
		  "format_version 3");
	parse_bad("{\"format\":\"supkit-manifest\",\"format_version\":1,\"tool_version\":\"x\"}", "'entries'");
	parse_bad(HEAD "{\"path\":\"../x\",\"size\":1,\"sha256\":\"" HEX_A "\"}]}", "entry 0 '../x'");
	parse_bad(HEAD "{\"path\":\"/etc/passwd\",\"size\":1,\"sha256\":\"" HEX_A "\"}]}", "absolute path");
	parse_bad(HEAD "{\"path\":\"a\",\"size\":-1,\"sha256\":\"" HEX_A "\"}]}", "size");
	parse_bad(HEAD "{\"path\":\"a\",\"size\":1.5,\"sha256\":\"" HEX_A "\"}]}", "size");
	parse_bad(HEAD "{\"path\":\"a\",\"size\":1,\"sha256\":\"abc\"}]}", "sha256");
	parse_bad(HEAD "{\"path\":\"a\",\"size\":1,\"sha256\":\"" HEX_A "\"},"
		       "{\"path\":\"a\",\"size\":2,\"sha256\":\"" HEX_B "\"}]}", "listed twice");
	parse_bad(HEAD "{\"path\":\"manifest.json\",\"size\":1,\"sha256\":\"" HEX_A "\"}]}", "itself");
	parse_bad(HEAD "{\"path\":\"a\",\"size\":1}]}", "entry 0");
	parse_bad(HEAD "1]}", "entry 0 is not an object");
	parse_bad(HEAD "{\"path\":\"a\",\"size\":1,\"sha256\":\"" HEX_A "\",\"safetensors_digest\":7}]}",
		  "safetensors_digest");
}

TEST(compare_lists_every_difference)
{
	struct manifest want, got;
	manifest_init(&want);
	manifest_init(&got);
	manifest_add(&want, "same", 1, HEX_A, NULL);
	manifest_add(&want, "size", 1, HEX_A, NULL);
	manifest_add(&want, "content", 1, HEX_A, NULL);
	manifest_add(&want, "gone", 1, HEX_A, NULL);
	manifest_add(&got, "same", 1, HEX_A, NULL);
	manifest_add(&got, "size", 2, HEX_A, NULL);
	manifest_add(&got, "content", 1, HEX_B, NULL);
	manifest_add(&got, "new", 1, HEX_A, NULL);
	manifest_sort(&want);
	manifest_sort(&got);
	struct manifest_cmp c;
	manifest_compare(&want, &got, &c);
	CHECK(c.n == 5);
	CHECK(c.n_ok == 1 && c.n_changed == 2 && c.n_missing == 1 && c.n_extra == 1);
	const char *order[] = {"content", "gone", "new", "same", "size"};
	enum manifest_status st[] = {MS_CHANGED, MS_MISSING, MS_EXTRA, MS_OK, MS_CHANGED};
	for (size_t i = 0; i < c.n && i < 5; i++) {
		const struct manifest_entry *x = c.items[i].got ? c.items[i].got : c.items[i].want;
		CHECK_STREQ(x->path, order[i]);
		CHECKF(c.items[i].status == st[i], "%s: %s", order[i], manifest_status_name(c.items[i].status));
	}
	manifest_cmp_release(&c);
	manifest_release(&want);
	manifest_release(&got);
}

TEST(human_sizes)
{
	char b[32];
	CHECK_STREQ(human_bytes(0, b, sizeof b), "0 B");
	CHECK_STREQ(human_bytes(999, b, sizeof b), "999 B");
	CHECK_STREQ(human_bytes(1000, b, sizeof b), "1.000 KB");
	CHECK_STREQ(human_bytes(422600, b, sizeof b), "422.6 KB");
	CHECK_STREQ(human_bytes(1056000, b, sizeof b), "1.056 MB");
	CHECK_STREQ(human_bytes(999960, b, sizeof b), "1.000 MB");
	CHECK_STREQ(human_bytes(1073741824, b, sizeof b), "1.074 GB");
}

struct octx {
	const char *o;
	int j;
};
static int on_opt(int key, const char *arg, void *p, struct err *e)
{
	struct octx *c = p;
	(void)e;
	if (key == 'o')
		c->o = arg;
	else
		c->j++;
	return 0;
}

TEST(args_before_and_after_operands)
{
	static const struct cli_opt opts[] = {{"output", 'o', "F", "out"}, {"json", 256, NULL, "json"}, {NULL, 0, NULL, NULL}};
	char *argv1[] = {"prog", "DIR", "-o", "out.zip", "--json", NULL};
	struct octx c = {0};
	int n;
	char **ops = cli_parse_operands(5, argv1, opts, "u", on_opt, &c, &n);
	CHECK(n == 1 && !strcmp(ops[0], "DIR"));
	CHECK(c.o && !strcmp(c.o, "out.zip") && c.j == 1);
	free(ops);
	char *argv2[] = {"prog", "--json", "A", "--", "-o", NULL};
	struct octx d = {0};
	ops = cli_parse_operands(5, argv2, opts, "u", on_opt, &d, &n);
	CHECK(n == 2 && !strcmp(ops[0], "A") && !strcmp(ops[1], "-o"));
	CHECK(d.o == NULL && d.j == 1);
	free(ops);
}

int main(void)
{
	RUN(utf8_rules);
	RUN(path_rules);
	RUN(print_parse_roundtrip);
	RUN(parse_refuses_bad_manifests);
	RUN(compare_lists_every_difference);
	RUN(human_sizes);
	RUN(args_before_and_after_operands);
	return t_done();
}
