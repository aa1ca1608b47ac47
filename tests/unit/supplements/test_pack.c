/* test_pack.c: supplements/pack.c: byte-identical archives whatever the
 * files' times, modes, the umask, the time zone and the creation order;
 * manifest first; refusals that write nothing; pack -> verify -> unpack ->
 * pack round trip. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "supplements/pack.h"
#include "supplements/scan.h"
#include "supplements/unpack.h"
#include "supplements/verify.h"
#include "supplements/zipdir.h"
#include "t.h"

static char base[64];

static void put(const char *dir, const char *rel, const char *text)
{
	char *p = path_join(dir, rel), *d = path_dirname(p);
	struct err e;
	dir_make_all(d, &e);
	FILE *f = fopen(p, "wb");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	free(d);
	free(p);
}

static const char *files[][2] = {
	{"README.txt", "a supplement\n"},
	{"results/r1.json", "{\"bpb\": 0.9}\n"},
	{"results/r2.json", "{\"bpb\": 0.8}\n"},
	{"a.txt", "sorted before a/ (0x2e < 0x2f)\n"},
	{"a/b.txt", "inside a\n"},
	{"\xc3\xa9t\xc3\xa9.txt", "UTF-8 name\n"},
	{"empty", ""},
};
#define NFILES (sizeof files / sizeof *files)

/* The same content written in the given order. */
static char *make_tree(const char *name, int reverse)
{
	char *d = path_join(base, name);
	struct err e;
	dir_make_all(d, &e);
	for (size_t k = 0; k < NFILES; k++) {
		size_t i = reverse ? NFILES - 1 - k : k;
		put(d, files[i][0], files[i][1]);
	}
	return d;
}

static int same_file(const char *a, const char *b)
{
	char *x, *y;
	size_t lx, ly;
	struct err e;
	if (file_read_all(a, 0, &x, &lx, &e) < 0)
		return 0;
	if (file_read_all(b, 0, &y, &ly, &e) < 0) {
		free(x);
		return 0;
	}
	int same = lx == ly && !memcmp(x, y, lx);
	free(x);
	free(y);
	return same;
}

static void set_times(const char *dir, time_t t)
{
	for (size_t i = 0; i < NFILES; i++) {
		char *p = path_join(dir, files[i][0]);
		struct timespec ts[2] = {{t, 0}, {t, 0}};
		utimensat(AT_FDCWD, p, ts, 0);
		free(p);
	}
}

TEST(pack_is_reproducible)
{
	struct pack_opts o = {.mtime = PACK_DEFAULT_TIME, .quiet = 1};
	struct pack_result r1, r2, r3;
	struct err e;
	char *t1 = make_tree("t1", 0), *z1 = path_join(base, "1.zip"), *z2 = path_join(base, "2.zip"),
	     *z3 = path_join(base, "3.zip");
	set_times(t1, 1000000000);
	CHECKF(pack_dir(t1, z1, &o, &r1, &e) == 0, "%s", e.msg);
	/* other times, modes, umask, zone, creation order */
	mode_t old = umask(077);
	char *t2 = make_tree("t2", 1);
	umask(old);
	set_times(t2, 1700000000);
	char *p = path_join(t2, "README.txt");
	chmod(p, 0600);
	free(p);
	setenv("TZ", "XST-5:30", 1);
	CHECKF(pack_dir(t2, z2, &o, &r2, &e) == 0, "%s", e.msg);
	CHECK_STREQ(getenv("TZ"), "XST-5:30"); /* restored */
	unsetenv("TZ");
	CHECK(same_file(z1, z2));
	CHECK_STREQ(r1.sha256, r2.sha256);
	CHECK(r1.entries == NFILES + 1 && r1.compressed > 0 && r1.uncompressed > 0);
	/* another timestamp gives other bytes */
	o.mtime = 1700000000;
	CHECK(pack_dir(t1, z3, &o, &r3, &e) == 0);
	CHECK(!same_file(z1, z3));
	/* manifest.json comes first, then the sorted paths */
	struct zipdir zd;
	CHECKF(zipdir_read(z1, 0, &zd, &e) == 0, "%s", e.msg);
	CHECK(zd.n == NFILES + 1);
	if (zd.n == NFILES + 1) {
		CHECK_STREQ(zd.e[0].name, "manifest.json");
		CHECK_STREQ(zd.e[1].name, "README.txt");
		CHECK_STREQ(zd.e[2].name, "a.txt");
		CHECK_STREQ(zd.e[3].name, "a/b.txt");
		for (size_t i = 2; i < zd.n; i++)
			CHECK(strcmp(zd.e[i - 1].name, zd.e[i].name) < 0 || i == 1);
		for (size_t i = 0; i < zd.n; i++)
			CHECK(zd.e[i].method == 8 && (zd.e[i].unix_mode & 0777) == 0644);
	}
	zipdir_release(&zd);
	free(t1);
	free(t2);
	free(z1);
	free(z2);
	free(z3);
}

TEST(source_date_epoch)
{
	int64_t t;
	struct err e;
	unsetenv("SOURCE_DATE_EPOCH");
	CHECK(pack_source_date(&t, &e) == 0 && t == PACK_DEFAULT_TIME);
	setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
	CHECK(pack_source_date(&t, &e) == 0 && t == 1700000000);
	setenv("SOURCE_DATE_EPOCH", "17e8", 1);
	CHECK(pack_source_date(&t, &e) < 0 && e.code == EXIT_USAGE);
	setenv("SOURCE_DATE_EPOCH", "-5", 1);
	CHECK(pack_source_date(&t, &e) < 0);
	unsetenv("SOURCE_DATE_EPOCH");
}

static void refused(const char *dir, const char *out, const char *why)
{
	struct pack_opts o = {.mtime = PACK_DEFAULT_TIME, .quiet = 1};
	struct pack_result r;
	struct err e;
	err_clear(&e);
	CHECKF(pack_dir(dir, out, &o, &r, &e) < 0, "'%s' packed", dir);
	CHECKF(e.code == EXIT_USAGE, "code %d: %s", e.code, e.msg);
	CHECKF(strstr(e.msg, why) != NULL, "message '%s' lacks '%s'", e.msg, why);
	struct stat st;
	CHECKF(lstat(out, &st) != 0, "'%s' was written", out);
}

TEST(pack_refuses_and_writes_nothing)
{
	char *t = make_tree("bad", 0), *out = path_join(base, "bad.zip");
	char *l = path_join(t, "results/link");
	CHECK(symlink("r1.json", l) == 0);
	refused(t, out, "results/link");
	unlink(l);
	char *f = path_join(t, "fifo");
	CHECK(mkfifo(f, 0644) == 0);
	refused(t, out, "special file");
	unlink(f);
	char *n = path_join(t, "bad\xff.txt");
	put(t, "bad\xff.txt", "x");
	refused(t, out, "UTF-8");
	unlink(n);
	char *mdir = path_join(t, "manifest.json/x");
	put(t, "manifest.json/x", "x");
	refused(t, out, "reserved");
	unlink(mdir);
	free(mdir);
	mdir = path_join(t, "manifest.json");
	rmdir(mdir);
	free(mdir);
	char *inside = path_join(t, "out.zip");
	refused(t, inside, "inside");
	char *inside2 = path_join(t, "a/../a/x.zip");
	refused(t, inside2, "inside");
	/* clean again: it packs */
	struct pack_opts o = {.mtime = PACK_DEFAULT_TIME, .quiet = 1};
	struct pack_result r;
	struct err e;
	CHECKF(pack_dir(t, out, &o, &r, &e) == 0, "%s", e.msg);
	free(t);
	free(out);
	free(l);
	free(f);
	free(n);
	free(inside);
	free(inside2);
}

TEST(pack_verify_unpack_pack_round_trip)
{
	struct pack_opts o = {.mtime = PACK_DEFAULT_TIME, .quiet = 1};
	struct pack_result r, r2;
	struct err e;
	char *fx = xasprintf("%s/supplements/tree", t_fixtures());
	char *z = path_join(base, "rt.zip"), *u = path_join(base, "rt"), *z2 = path_join(base, "rt2.zip");
	CHECKF(pack_dir(fx, z, &o, &r, &e) == 0, "%s", e.msg);
	struct verify_opts vo = {.quiet = 1};
	struct verify_report vr;
	CHECKF(verify_path(z, &vo, &vr, &e) == 0, "%s", e.msg);
	CHECK(vr.verified && vr.replay == VR_DONE && vr.rep.n_ok == 3);
	verify_report_release(&vr);
	struct unpack_limits l;
	unpack_limits_default(&l);
	l.quiet = 1;
	struct unpack_result ur;
	CHECKF(unpack_zip(z, u, &l, &ur, &e) == 0, "%s", e.msg);
	/* the unpacked folder holds manifest.json: pack replaces it, same bytes */
	CHECKF(pack_dir(u, z2, &o, &r2, &e) == 0, "%s", e.msg);
	CHECK(r2.replaced_manifest);
	CHECK(same_file(z, z2));
	free(fx);
	free(z);
	free(u);
	free(z2);
}

/* The swap a racing process could make: src/sub replaced by a link to a
 * folder outside src holding the same x.txt (and a secret), when the scan
 * reaches swap_at for the swap_nth time (1: while walking, 2: when pack
 * opens the file again to write it). */
static const char *swap_at;
static int swap_nth, swap_seen;
static char *swap_src, *swap_out;
static void swap_hook(const char *rel)
{
	if (strcmp(rel, swap_at) != 0 || ++swap_seen != swap_nth)
		return;
	char *sub = path_join(swap_src, "sub"), *moved = xasprintf("%s.moved", swap_src);
	if (rename(sub, moved) != 0 || symlink(swap_out, sub) != 0)
		abort();
	free(sub);
	free(moved);
}

static void swap_case(const char *at, int nth)
{
	char *name = xasprintf("race-%s-%d", at, nth);
	for (char *c = name; *c; c++)
		if (*c == '/')
			*c = '_';
	char *d = path_join(base, name), *z = xasprintf("%s.zip", d);
	swap_src = path_join(d, "src");
	swap_out = path_join(d, "outside");
	put(swap_src, "top.txt", "top\n");
	put(swap_src, "sub/x.txt", "same bytes\n");
	put(swap_out, "x.txt", "same bytes\n");
	put(swap_out, "secret.txt", "from outside the folder\n");
	swap_at = at;
	swap_nth = nth;
	swap_seen = 0;
	scan_test_hook = swap_hook;
	struct pack_opts o = {.mtime = PACK_DEFAULT_TIME, .quiet = 1};
	struct pack_result r;
	struct err e;
	err_clear(&e);
	int rc = pack_dir(swap_src, z, &o, &r, &e);
	scan_test_hook = NULL;
	CHECKF(swap_seen >= nth, "%s: the hook never swapped (%d calls)", name, swap_seen);
	CHECKF(rc < 0, "%s: packed a folder swapped for a link", name);
	CHECKF(e.code == EXIT_SYS && strstr(e.msg, "changed while it was being read"), "%s: code %d: %s", name,
	       e.code, e.msg);
	struct stat st;
	CHECKF(lstat(z, &st) != 0, "%s: '%s' was written", name, z);
	if (rc == 0) { /* what the bug looked like: files from outside, verified */
		struct verify_opts vo = {.quiet = 1};
		struct verify_report vr;
		if (verify_path(z, &vo, &vr, &e) == 0)
			CHECKF(0, "%s: verify says %s, %zu entries ok", name, vr.verified ? "verified" : "failed",
			       vr.cmp.n_ok);
		verify_report_release(&vr);
	}
	free(swap_src);
	free(swap_out);
	free(name);
	free(d);
	free(z);
}

TEST(pack_never_follows_a_folder_swapped_for_a_link)
{
	swap_case("sub", 1);       /* listed as a folder, a link when walked into */
	swap_case("sub/x.txt", 1); /* while hashing */
	swap_case("sub/x.txt", 2); /* between hashing and writing */
}

int main(void)
{
	setlocale(LC_CTYPE, "C.UTF-8");
	snprintf(base, sizeof base, "/tmp/supkit-pack-XXXXXX");
	if (!mkdtemp(base))
		return 1;
	RUN(pack_is_reproducible);
	RUN(source_date_epoch);
	RUN(pack_refuses_and_writes_nothing);
	RUN(pack_verify_unpack_pack_round_trip);
	RUN(pack_never_follows_a_folder_swapped_for_a_link);
	dir_remove_tree(base);
	return t_done();
}
