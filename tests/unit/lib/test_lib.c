/* test_lib.c: lib/ plumbing: sha256, json printer, atomic writes, bf16, rng, cli numbers. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/bf16.h"
#include "lib/cli.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/rng.h"
#include "lib/sha256.h"
#include "t.h"

TEST(sha256_known_vectors)
{
	char hex[65];
	sha256_buf_hex("", 0, hex);
	CHECK_STREQ(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256_buf_hex("abc", 3, hex);
	CHECK_STREQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK(sha256_hex_valid(hex));
	CHECK(!sha256_hex_valid("abc"));
}

TEST(json_sorted_roundtrip)
{
	struct err e;
	const char *src = "{\"b\": 0.1, \"a\": [1, 2.5, 1e300], \"c\": {\"z\": true, \"y\": null}}";
	cJSON *j = json_parse(src, strlen(src), "t", &e);
	CHECK(j != NULL);
	char *s = json_print(j, 0);
	CHECK_STREQ(s, "{\"a\":[1,2.5,1e+300],\"b\":0.1,\"c\":{\"y\":null,\"z\":true}}");
	free(s);
	cJSON_Delete(j);
	char buf[64];
	json_format_number(0.1 + 0.2, buf, sizeof buf);
	CHECK(strtod(buf, NULL) == 0.1 + 0.2);
	json_format_number(26345772, buf, sizeof buf);
	CHECK_STREQ(buf, "26345772");
}

TEST(json_errors_name_place)
{
	struct err e;
	err_clear(&e);
	cJSON *j = json_parse("{\n  \"a\": ,\n}", 12, "x.json", &e);
	CHECK(j == NULL);
	CHECK(strstr(e.msg, "'x.json'") != NULL);
	CHECK(strstr(e.msg, "line 2") != NULL);
	j = json_parse("{} x", 4, "y.json", &e);
	CHECK(j == NULL);
}

TEST(atomic_write_and_read)
{
	struct err e;
	char dir[] = "/tmp/supkit-t-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *p = path_join(dir, "out.txt");
	CHECK(file_write_atomic(p, "hello", 5, &e) == 0);
	char *buf;
	size_t n;
	CHECK(file_read_all(p, 0, &buf, &n, &e) == 0);
	CHECK(n == 5 && memcmp(buf, "hello", 5) == 0);
	free(buf);
	CHECK(file_read_all(p, 3, &buf, &n, &e) == -1); /* over the limit */
	struct atomic_file af;
	CHECK(atomic_open(&af, p, &e) == 0);
	fputs("partial", af.fp);
	atomic_abort(&af);
	CHECK(file_read_all(p, 0, &buf, &n, &e) == 0);
	CHECK(n == 5); /* the old file is untouched */
	free(buf);
	free(p);
	CHECK(dir_remove_tree(dir) == 0);
}

TEST(path_relative_to_a_folder)
{
	struct err e;
	char dir[] = "/tmp/supkit-t-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *sub = path_join(dir, "s/r"), *link = path_join(dir, "l"), *s = path_join(dir, "s");
	CHECK(dir_make_all(sub, &e) == 0);
	CHECK(symlink(s, link) == 0);
	char *out = NULL;
	/* absolute, through a link, with dot segments: the same relative name */
	char *p1 = xasprintf("%s/s/r/x.cfg", dir), *p2 = xasprintf("%s/l/./r/../r/x.cfg", dir);
	CHECK(path_relative_to(s, p1, &out, &e) == 0);
	CHECK_STREQ(out, "r/x.cfg");
	free(out);
	CHECK(path_relative_to(link, p2, &out, &e) == 0);
	CHECK_STREQ(out, "r/x.cfg");
	free(out);
	/* relative paths from the current folder; the file need not exist */
	char cwd[4096];
	CHECK(getcwd(cwd, sizeof cwd) != NULL && chdir(dir) == 0);
	CHECK(path_relative_to("s", "l/r/x.cfg", &out, &e) == 0);
	CHECK_STREQ(out, "r/x.cfg");
	free(out);
	CHECK(chdir(cwd) == 0);
	char *p3 = xasprintf("%s/s/new.cfg", dir);
	CHECK(path_relative_to(dir, p3, &out, &e) == 0);
	CHECK_STREQ(out, "s/new.cfg");
	free(out);
	CHECK(path_relative_to("/", p3, &out, &e) == 0);
	CHECK_STREQ(out, p3 + 1);
	free(out);
	/* outside the folder, a name that is no file, an unresolvable folder */
	CHECK(path_relative_to(sub, p3, &out, &e) == -1);
	CHECKF(e.code == EXIT_USAGE && strstr(e.msg, "is not inside"), "%s", e.msg);
	char *sib = xasprintf("%s/s2/x.cfg", dir), *sdir = path_join(dir, "s2");
	CHECK(dir_make_all(sdir, &e) == 0);
	CHECK(path_relative_to(s, sib, &out, &e) == -1); /* "s2" starts with "s" */
	CHECK(path_relative_to(s, s, &out, &e) == -1);    /* the folder itself */
	CHECK(path_relative_to(dir, s, &out, &e) == 0);
	CHECK_STREQ(out, "s");
	free(out);
	CHECK(path_relative_to(dir, sub, &out, &e) == 0);
	CHECK_STREQ(out, "s/r");
	free(out);
	char *dots = xasprintf("%s/s/..", dir);
	CHECK(path_relative_to(dir, dots, &out, &e) == -1);
	char *gone = xasprintf("%s/nowhere/x.cfg", dir);
	CHECK(path_relative_to(dir, gone, &out, &e) == -1);
	CHECKF(strstr(e.msg, "nowhere"), "%s", e.msg);
	free(gone);
	free(dots);
	free(sdir);
	free(sib);
	free(p3);
	free(p2);
	free(p1);
	free(s);
	free(link);
	free(sub);
	CHECK(dir_remove_tree(dir) == 0);
}

TEST(bf16_round_to_nearest_even)
{
	CHECK(bf16_from_f32(1.0f) == 0x3f80);
	/* 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to even (1). */
	CHECK(bf16_round(1.0f + 0x1p-8f) == 1.0f);
	CHECK(bf16_round(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);
	CHECK(bf16_round(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f); /* tie, odd -> up */
	CHECK(bf16_to_f32(bf16_from_f32(-2.5f)) == -2.5f);
}

TEST(rng_deterministic_and_normal)
{
	struct rng a, b;
	rng_seed(&a, 42);
	rng_seed(&b, 42);
	for (int i = 0; i < 100; i++)
		CHECK(rng_u64(&a) == rng_u64(&b));
	double s = 0, s2 = 0;
	int n = 200000;
	for (int i = 0; i < n; i++) {
		double x = rng_normal(&a);
		s += x;
		s2 += x * x;
	}
	CHECK(fabs(s / n) < 0.01);
	CHECK(fabs(s2 / n - 1) < 0.02);
}

TEST(cli_strict_numbers)
{
	struct err e;
	int64_t v;
	double d;
	CHECK(cli_parse_i64("12", 0, 100, &v, "--n", &e) == 0 && v == 12);
	CHECK(cli_parse_i64("12x", 0, 100, &v, "--n", &e) == -1);
	CHECK(cli_parse_i64("101", 0, 100, &v, "--n", &e) == -1);
	CHECK(strstr(e.msg, "--n") != NULL);
	CHECK(cli_parse_double("1e-3", &d, "--lr", &e) == 0 && d == 1e-3);
	CHECK(cli_parse_double("nan", &d, "--lr", &e) == -1);
}

TEST(err_messages_stay_one_line)
{
	struct err e;
	err_set(&e, EXIT_USAGE, "run '%s' is bad", "a\nb\033[31m");
	CHECK_STREQ(e.msg, "run 'a\\x0ab\\x1b[31m' is bad");
	CHECK(e.code == EXIT_USAGE);
	err_prefix(&e, "'%s'", "f\r");
	CHECK(strchr(e.msg, '\r') == NULL && strchr(e.msg, '\n') == NULL);
}

/* err_report: the error's own status, EXIT_SYS when it has none; the line
 * goes to stderr (left to the shell tests). */
TEST(err_report_status)
{
	struct err e;
	err_set(&e, EXIT_CHECK, "x");
	CHECK(err_report(&e) == EXIT_CHECK);
	err_clear(&e);
	CHECK(err_report(&e) == EXIT_SYS);
}

int main(void)
{
	RUN(sha256_known_vectors);
	RUN(json_sorted_roundtrip);
	RUN(json_errors_name_place);
	RUN(atomic_write_and_read);
	RUN(path_relative_to_a_folder);
	RUN(bf16_round_to_nearest_even);
	RUN(rng_deterministic_and_normal);
	RUN(cli_strict_numbers);
	RUN(err_messages_stay_one_line);
	RUN(err_report_status);
	return t_done();
}
