/* test_derivation.c: lib/derivation.c (the record of how a derived file was
 * made: paths relative to one base folder, the files read hashed, parsing
 * refusals) and lib/claims.c (shape, named derivations). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/claims.h"
#include "lib/derivation.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/sha256.h"
#include "t.h"

static char *root; /* a temporary folder, the current folder during the tests */

static void put(const char *rel, const char *text)
{
	char *p = path_join(root, rel), *d = path_dirname(p);
	struct err e;
	dir_make_all(d, &e);
	FILE *f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
	free(d);
	free(p);
}

/* One record: path args as given, files "read" (logged). */
static cJSON *record(const char *const *paths, int np, const char *const *read, int nr)
{
	struct deriv d;
	struct err e;
	deriv_init(&d, "supkit-audit", "compute");
	deriv_arg(&d, "--json");
	for (int i = 0; i < np; i++)
		deriv_path_arg(&d, paths[i]);
	deriv_log_start();
	deriv_log_reset();
	for (int i = 0; i < nr; i++)
		deriv_log_file(read[i]);
	cJSON *j = deriv_finish(&d, &e) == 0 ? deriv_to_json(&d) : NULL;
	deriv_release(&d);
	return j;
}

static const char *arg(const cJSON *j, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "args"), i)->valuestring;
}

static const char *input(const cJSON *j, int i)
{
	const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "inputs"), i);
	return x ? cJSON_GetObjectItemCaseSensitive(x, "path")->valuestring : "(none)";
}

TEST(relative_paths_kept)
{
	put("sup/configs/a.cfg", "depth = 6\n");
	const char *p[] = {"./sup//configs/a.cfg"}, *r[] = {"sup/configs/a.cfg"};
	cJSON *j = record(p, 1, r, 1);
	CHECK(j != NULL);
	CHECK_STREQ(arg(j, 1), "sup/configs/a.cfg");
	CHECK_STREQ(input(j, 0), "sup/configs/a.cfg");
	char hex[65];
	struct err e;
	sha256_file_hex("sup/configs/a.cfg", hex, NULL, &e);
	const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "inputs"), 0);
	CHECK_STREQ(cJSON_GetObjectItemCaseSensitive(x, "sha256")->valuestring, hex);
	CHECK(cJSON_GetObjectItemCaseSensitive(x, "size")->valuedouble == 10);
	cJSON_Delete(j);
}

TEST(absolute_paths_keep_their_folder)
{
	put("abs/configs/b1.cfg", "x\n");
	put("abs/configs/b2.cfg", "y\n");
	char *a = path_join(root, "abs/configs/b1.cfg"), *b = path_join(root, "abs/configs/b2.cfg");
	const char *p[] = {a, b};
	cJSON *j = record(p, 2, p, 2);
	/* the files lie directly in the common folder: one level up */
	CHECK_STREQ(arg(j, 1), "configs/b1.cfg");
	CHECK_STREQ(arg(j, 2), "configs/b2.cfg");
	CHECK_STREQ(input(j, 0), "configs/b1.cfg");
	char *t = json_print(j, 0);
	CHECKF(!strstr(t, root), "%s", t); /* no folder of this machine */
	free(t);
	cJSON_Delete(j);
	free(a);
	free(b);
}

TEST(folder_argument_keeps_its_name)
{
	put("st/runs/r1/result.json", "{}\n");
	put("st/runs/r2/result.json", "{}\n");
	char *dir = path_join(root, "st/runs"), *f1 = path_join(root, "st/runs/r1/result.json"),
	     *f2 = path_join(root, "st/runs/r2/result.json");
	const char *p[] = {dir}, *r[] = {f1, f2};
	cJSON *j = record(p, 1, r, 2);
	CHECK_STREQ(arg(j, 1), "runs");
	CHECK_STREQ(input(j, 0), "runs/r1/result.json");
	CHECK_STREQ(input(j, 1), "runs/r2/result.json");
	cJSON_Delete(j);
	free(dir);
	free(f1);
	free(f2);
}

TEST(mixed_relative_and_outside)
{
	/* a file above the current folder forces the common-folder rule */
	put("mx/sub/c.cfg", "c\n");
	put("mx/data/s.bin", "s\n");
	CHECK(chdir("mx/sub") == 0);
	const char *p[] = {"c.cfg", "../data"}, *r[] = {"c.cfg", "../data/s.bin"};
	cJSON *j = record(p, 2, r, 2);
	CHECK(chdir(root) == 0);
	CHECK_STREQ(arg(j, 1), "sub/c.cfg");
	CHECK_STREQ(arg(j, 2), "data");
	CHECK_STREQ(input(j, 0), "data/s.bin");
	CHECK_STREQ(input(j, 1), "sub/c.cfg");
	cJSON_Delete(j);
}

TEST(standard_input_recorded_without_digest)
{
	const char *p[] = {"-"}, *r[] = {"-"};
	cJSON *j = record(p, 1, r, 1);
	CHECK_STREQ(arg(j, 1), "-");
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "inputs");
	int found = 0;
	for (const cJSON *x = in->child; x; x = x->next)
		if (!strcmp(cJSON_GetObjectItemCaseSensitive(x, "path")->valuestring, "-"))
			found = !cJSON_GetObjectItemCaseSensitive(x, "sha256");
	CHECK(found);
	cJSON_Delete(j);
}

TEST(parse_round_trip_and_refusals)
{
	const char *good = "{\"tool\":\"supkit-audit\",\"command\":\"stats\",\"version\":\"0.1.0\",\"args\":[\"--json\",\"runs\"],"
			   "\"inputs\":[{\"path\":\"runs/b/result.json\",\"sha256\":\"" "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
			   "\",\"size\":3,\"entry\":\"results/b/result.json\"},"
			   "{\"path\":\"runs/a/result.json\",\"sha256\":\"" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" "\",\"size\":2}]}";
	struct err e;
	cJSON *j = json_parse(good, strlen(good), "t", &e);
	struct deriv d;
	CHECKF(deriv_parse(j, "t", &d, &e) == 0, "%s", e.msg);
	CHECK(d.n_args == 2 && d.n_in == 2);
	CHECK_STREQ(d.in[0].path, "runs/a/result.json"); /* sorted */
	CHECK(d.in[0].entry == NULL);
	CHECK_STREQ(d.in[1].entry, "results/b/result.json");
	char *k1 = deriv_key(&d);
	cJSON *back = deriv_to_json(&d);
	struct deriv d2;
	CHECK(deriv_parse(back, "t", &d2, &e) == 0);
	char *k2 = deriv_key(&d2);
	CHECK_STREQ(k1, k2);
	free(k1);
	free(k2);
	deriv_release(&d2);
	cJSON_Delete(back);
	deriv_release(&d);
	cJSON_Delete(j);
	static const struct {
		const char *json, *frag;
	} bad[] = {
		{"[]", "not an object"},
		{"{\"command\":\"c\",\"version\":\"v\",\"args\":[],\"inputs\":[]}", "'tool' is missing"},
		{"{\"tool\":\"t\",\"command\":\"c\",\"version\":\"v\",\"args\":[1],\"inputs\":[]}", "args[0] is not a string"},
		{"{\"tool\":\"t\",\"command\":\"c\",\"version\":\"v\",\"args\":[],\"inputs\":[{\"path\":\"../x\",\"sha256\":\""
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":1}]}", "not a safe relative path"},
		{"{\"tool\":\"t\",\"command\":\"c\",\"version\":\"v\",\"args\":[],\"inputs\":[{\"path\":\"/etc/x\",\"sha256\":\""
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":1}]}", "not a safe relative path"},
		{"{\"tool\":\"t\",\"command\":\"c\",\"version\":\"v\",\"args\":[],\"inputs\":[{\"path\":\"x\",\"sha256\":\"AB\",\"size\":1}]}",
		 "64 lower-case hex"},
		{"{\"tool\":\"t\",\"command\":\"c\",\"version\":\"v\",\"args\":[],\"inputs\":[{\"path\":\"x\"}]}", "'sha256' is missing"},
		{"{\"tool\":\"t\",\"command\":\"c\",\"version\":\"v\",\"args\":[],\"inputs\":[{\"path\":\"x\",\"sha256\":\""
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":1,\"entry\":\"a/../b\"}]}",
		 "entry 'a/../b' is not a safe"},
		{"{\"tool\":\"t\",\"command\":\"c\",\"version\":\"v\",\"args\":[],\"inputs\":[{\"path\":\"x\",\"sha256\":\""
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":1},{\"path\":\"x\",\"sha256\":\""
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":1}]}", "listed twice"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		j = json_parse(bad[i].json, strlen(bad[i].json), "t", &e);
		int r = deriv_parse(j, "ctx", &d, &e);
		CHECKF(r < 0 && strstr(e.msg, bad[i].frag) && e.code == EXIT_USAGE, "case %zu: '%s'", i, e.msg);
		deriv_release(&d);
		cJSON_Delete(j);
	}
	CHECK(deriv_path_safe("a/b", 0) && deriv_path_safe(".", 1) && !deriv_path_safe(".", 0) &&
	      !deriv_path_safe("a//b", 0) && !deriv_path_safe("a\\b", 0) && !deriv_path_safe("", 1));
}

TEST(claims_named_derivations)
{
	cJSON *f = claims_new();
	const char *blk = "{\"tool\":\"supkit-audit\",\"command\":\"stats\",\"version\":\"0.1.0\",\"args\":[\"--json\",\"r\"],\"inputs\":[]}";
	struct err e;
	cJSON *d = json_parse(blk, strlen(blk), "t", &e);
	claims_add(f, "1.000000", "Table 2: a", d, cJSON_CreateObject());
	claims_add(f, "2.000000", "Table 2: b", d, cJSON_CreateObject());
	CHECKF(claims_validate(f, "c.json", &e) == 0, "%s", e.msg);
	const cJSON *map = cJSON_GetObjectItemCaseSensitive(f, "derivations");
	CHECK(cJSON_GetArraySize(map) == 1); /* stored once */
	const cJSON *c1 = cJSON_GetArrayItem((cJSON *)claims_list(f), 1);
	CHECK(claims_derivation(f, c1) != NULL && claims_of(f, c1, "supkit-audit", "stats"));
	CHECK(!claims_of(f, c1, "supkit-audit", "compute"));
	CHECK(!strncmp(cJSON_GetObjectItemCaseSensitive(c1, "derivation")->valuestring, "stats-", 6));
	/* a name that is not there */
	cJSON_ReplaceItemInObjectCaseSensitive((cJSON *)c1, "derivation", cJSON_CreateString("nope"));
	CHECK(claims_validate(f, "c.json", &e) < 0 && strstr(e.msg, "claims[1]: 'derivation'"));
	cJSON_Delete(d);
	cJSON_Delete(f);
}

int main(void)
{
	char tmpl[] = "/tmp/test_derivation.XXXXXX";
	root = mkdtemp(tmpl);
	char real[4096];
	if (!root || !realpath(root, real) || chdir(real) != 0)
		return 1;
	root = real;
	RUN(relative_paths_kept);
	RUN(absolute_paths_keep_their_folder);
	RUN(folder_argument_keeps_its_name);
	RUN(mixed_relative_and_outside);
	RUN(standard_input_recorded_without_digest);
	RUN(parse_round_trip_and_refusals);
	RUN(claims_named_derivations);
	dir_remove_tree(root);
	return t_done();
}
