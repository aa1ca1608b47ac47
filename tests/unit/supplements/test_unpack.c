/* test_unpack.c: supplements/zipdir.c, scan.c, verify.c and unpack.c on the
 * committed fixtures: archives made by Info-ZIP zip and Python zipfile
 * (tests/fixtures/supplements/make_fixtures.sh, make_hostile.py). */
#include <dirent.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/utf8.h"
#include "supplements/scan.h"
#include "supplements/unpack.h"
#include "supplements/verify.h"
#include "supplements/zipdir.h"
#include "t.h"

static char *fix(const char *name)
{
	return xasprintf("%s/supplements/%s", t_fixtures(), name);
}

static char *slurp(const char *path, size_t *len)
{
	char *b = NULL;
	struct err e;
	if (file_read_all(path, 0, &b, len, &e) < 0)
		return NULL;
	return b;
}

/* Entries of a folder other than "." and "..". */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

TEST(zipdir_reads_infozip_archive)
{
	char *p = fix("infozip.zip");
	struct zipdir zd;
	struct err e;
	CHECKF(zipdir_read(p, 0, &zd, &e) == 0, "%s", e.msg);
	CHECK(zd.n == 9);
	size_t dirs = 0, files = 0;
	for (size_t i = 0; i < zd.n; i++) {
		dirs += zd.e[i].kind == ZK_DIR;
		files += zd.e[i].kind == ZK_FILE;
		CHECK(!zd.e[i].encrypted);
	}
	CHECK(dirs == 2 && files == 7);
	CHECK_STREQ(zd.e[0].name, "manifest.json");
	zipdir_release(&zd);
	free(p);
}

TEST(scan_matches_python_manifest)
{
	/* tree.manifest.json was computed by Python (hashlib, struct for the
	 * safetensors digest); our manifest of the same files must be the same bytes */
	char *want_p = fix("tree.manifest.json"), *tree = fix("tree"), *zip = fix("infozip.zip");
	size_t wl;
	char *want = slurp(want_p, &wl);
	CHECK(want != NULL);
	const char *srcs[] = {tree, zip};
	for (int k = 0; k < 2 && want; k++) {
		struct scan s;
		struct scan_opts o = {.safetensors_digest = 1, .quiet = 1};
		struct err e;
		CHECKF(scan_path(srcs[k], &o, &s, &e) == 0, "%s", e.msg);
		CHECK(s.n_issues == 0);
		size_t len;
		char *got = manifest_print(&s.actual, &len);
		CHECKF(len == wl && !memcmp(got, want, wl), "%s: manifest differs from Python's:\n%s", srcs[k], got);
		if (k == 1) {
			CHECK(s.is_zip && s.has_manifest);
			CHECK(s.manifest_len == wl && !memcmp(s.manifest_data, want, wl));
		}
		free(got);
		scan_release(&s);
	}
	free(want);
	free(want_p);
	free(tree);
	free(zip);
}

TEST(verify_infozip_with_replay)
{
	char *zip = fix("infozip.zip");
	struct verify_opts o = {.quiet = 1};
	struct verify_report r;
	struct err e;
	CHECKF(verify_path(zip, &o, &r, &e) == 0, "%s", e.msg);
	CHECK(r.verified);
	CHECK(r.cmp.n_ok == 6 && r.cmp.n == 6);
	CHECK(r.replay == VR_DONE);
	CHECK(r.rep.n_runs == 3 && r.rep.n_ok == 3);
	CHECK_STREQ(r.baseline_path, "baseline.cfg");
	verify_report_release(&r);
	/* a baseline named explicitly that is not there is a failed check */
	o.baseline = "nope.cfg";
	CHECK(verify_path(zip, &o, &r, &e) == 0);
	CHECK(!r.verified && r.replay == VR_MISSING);
	verify_report_release(&r);
	/* the wrong baseline: every run with a diff fails or mismatches */
	o.baseline = "results/r1.json";
	CHECK(verify_path(zip, &o, &r, &e) == 0);
	CHECK(!r.verified && r.replay == VR_DONE && r.rep.n_ok < r.rep.n_runs);
	verify_report_release(&r);
	free(zip);
}

TEST(verify_without_manifest_is_a_failed_check)
{
	char *zip = fix("infozip-nomanifest.zip");
	struct verify_opts o = {.quiet = 1};
	struct verify_report r;
	struct err e;
	CHECK(verify_path(zip, &o, &r, &e) < 0);
	CHECK(e.code == EXIT_CHECK);
	CHECK(strstr(e.msg, "no manifest.json") != NULL);
	verify_report_release(&r);
	free(zip);
}

TEST(verify_flipped_byte)
{
	char *zip = fix("hostile/flipped.zip");
	struct verify_opts o = {.quiet = 1};
	struct verify_report r;
	struct err e;
	CHECKF(verify_path(zip, &o, &r, &e) == 0, "%s", e.msg);
	CHECK(!r.verified);
	CHECK(r.scan.n_issues == 1);
	if (r.scan.n_issues)
		CHECK_STREQ(r.scan.issues[0].path, "sub/b.txt");
	verify_report_release(&r);
	free(zip);
}

struct hostile {
	const char *file, *entry, *why;
};
static const struct hostile hostile[] = {
	{"zipslip.zip", "../evil.txt", "'..'"},
	{"zipslip-deep.zip", "sub/../../evil.txt", "'..'"},
	{"absolute.zip", "/tmp/supkit-evil.txt", "absolute"},
	{"backslash.zip", "evil.txt", "backslash"},
	{"symlink.zip", "link", "symlink"},
	{"symlink-write.zip", "'d'", "symlink"},
	{"device.zip", "dev", "special file"},
	{"duplicate.zip", "a.txt", "duplicate"},
	{"file-and-folder.zip", "a/b.txt", "not a folder"},
	{"bomb.zip", "zeros.bin", "ratio"},
	{"bomb-lying.zip", "zeros.bin", "declares"},
	{"encrypted.zip", "secret.txt", "encrypted"},
	{"flipped.zip", "sub/b.txt", "CRC"},
	{"truncated.zip", "truncated.zip", "truncated"},
	{"name-mismatch.zip", "safe.txt", "local header"},
	{"unicode-path.zip", "entry 'a.txt'", "Unicode Path extra field of its local header names 'b.txt'"},
	{"unicode-path-central.zip", "entry 'a.txt'", "Unicode Path extra field of its central header names 'b.txt'"},
	{"gap.zip", "'manifest.json' and 'a.txt'", "belong to no entry"},
	{"gap-end.zip", "'sub/b.txt' and the central directory", "belong to no entry"},
	{"prefix.zip", "38 bytes before the first entry", "prefix"},
	{"folder-twice.zip", "entry 'd/'", "duplicate name"},
	{"nfc-nfd-twice.zip", ".txt'", "the same name in Unicode NFC"},
	{"latin1-name.zip", "entry 'caf\\xe9.txt'", "not valid UTF-8"},
	{"latin1-name-noflag.zip", "entry 'caf\\xe9.txt'", "not valid UTF-8"},
	{"long-name.zip", "nnnnnnnn'", "a name component of 256 bytes"},
	{"bomb-many.zip", "933 times the archive's 17990 bytes", "--max-ratio"},
	{"descriptor-mismatch.zip", "entry 'a.txt'", "no data descriptor matching the central directory"},
	{NULL, NULL, NULL},
};

TEST(unpack_refuses_hostile_archives)
{
	char base[] = "/tmp/supkit-unpack-XXXXXX";
	CHECK(mkdtemp(base) != NULL);
	char *out = path_join(base, "out");
	struct unpack_limits l;
	unpack_limits_default(&l);
	l.quiet = 1;
	for (int i = 0; hostile[i].file; i++) {
		char *name = xasprintf("hostile/%s", hostile[i].file), *p = fix(name);
		struct unpack_result r;
		struct err e;
		err_clear(&e);
		int rc = unpack_zip(p, out, &l, &r, &e);
		CHECKF(rc < 0, "%s accepted", hostile[i].file);
		CHECKF(e.code == EXIT_USAGE, "%s: code %d", hostile[i].file, e.code);
		CHECKF(strstr(e.msg, hostile[i].entry) && strstr(e.msg, hostile[i].why),
		       "%s: message '%s' lacks '%s' or '%s'", hostile[i].file, e.msg, hostile[i].entry, hostile[i].why);
		CHECKF(!strchr(e.msg, '\n'), "%s: message has a newline", hostile[i].file);
		/* nothing written: no target, no temporary folder beside it */
		CHECKF(count_entries(base) == 0, "%s left something in %s", hostile[i].file, base);
		free(name);
		free(p);
	}
	/* nothing escaped either */
	struct stat st;
	CHECK(lstat("/tmp/supkit-evil.txt", &st) != 0);
	dir_remove_tree(base);
	free(out);
}

TEST(unpack_good_archives_and_limits)
{
	char base[] = "/tmp/supkit-unpack-XXXXXX";
	CHECK(mkdtemp(base) != NULL);
	char *out = path_join(base, "out"), *zip = fix("hostile/python-ok.zip"), *info = fix("infozip.zip");
	struct unpack_limits l;
	unpack_limits_default(&l);
	l.quiet = 1;
	struct unpack_result r;
	struct err e;
	CHECKF(unpack_zip(zip, out, &l, &r, &e) == 0, "%s", e.msg);
	CHECK(r.files == 3 && r.bytes > 6 + 48); /* + manifest.json */
	char *b = path_join(out, "sub/b.txt");
	size_t len;
	char *data = slurp(b, &len);
	CHECK(data && len == 48 && !memcmp(data, "second file\n", 12));
	free(data);
	free(b);
	/* the target exists and is not empty: refused */
	CHECK(unpack_zip(zip, out, &l, &r, &e) < 0 && e.code == EXIT_USAGE);
	dir_remove_tree(out);
	/* an existing empty folder is fine; Info-ZIP's folder entries become folders */
	CHECK(mkdir(out, 0777) == 0);
	CHECKF(unpack_zip(info, out, &l, &r, &e) == 0, "%s", e.msg);
	CHECK(r.files == 7 && r.dirs == 2);
	struct verify_opts vo = {.quiet = 1};
	struct verify_report vr;
	CHECKF(verify_path(out, &vo, &vr, &e) == 0, "%s", e.msg);
	CHECK(vr.verified && vr.rep.n_ok == 3);
	verify_report_release(&vr);
	dir_remove_tree(out);
	/* limits */
	struct unpack_limits t = l;
	t.max_entry = 10;
	CHECK(unpack_zip(zip, out, &t, &r, &e) < 0 && strstr(e.msg, "--max-size"));
	t = l;
	t.max_total = 100;
	CHECK(unpack_zip(zip, out, &t, &r, &e) < 0 && strstr(e.msg, "--max-total"));
	t = l;
	t.max_entries = 2;
	CHECK(unpack_zip(zip, out, &t, &r, &e) < 0 && strstr(e.msg, "limit"));
	CHECK(count_entries(base) == 0);
	/* the bomb is only a ratio: lifting the limit lets it through */
	char *bomb = fix("hostile/bomb.zip");
	t = l;
	t.max_ratio = 2000;
	CHECKF(unpack_zip(bomb, out, &t, &r, &e) == 0, "%s", e.msg);
	CHECK(r.bytes == 16u << 20);
	free(bomb);
	dir_remove_tree(base);
	free(out);
	free(zip);
	free(info);
}

/* Every reader of the same archive: zipdir, the scan (verify) and unpack
 * refuse the archives that readers would read differently, with the same
 * reason. */
TEST(scan_and_unpack_refuse_alike)
{
	static const char *same[][2] = {
		{"unicode-path.zip", "Unicode Path"},
		{"unicode-path-central.zip", "Unicode Path"},
		{"gap.zip", "belong to no entry"},
		{"gap-end.zip", "belong to no entry"},
		{"prefix.zip", "belong to no entry"},
	};
	for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
		char *name = xasprintf("hostile/%s", same[i][0]), *p = fix(name);
		struct zipdir zd;
		struct err e;
		CHECKF(zipdir_read(p, 0, &zd, &e) < 0 && e.code == EXIT_USAGE && strstr(e.msg, same[i][1]), "%s: %s",
		       same[i][0], e.msg);
		struct verify_opts vo = {.quiet = 1};
		struct verify_report vr;
		CHECKF(verify_path(p, &vo, &vr, &e) < 0 && e.code == EXIT_USAGE && strstr(e.msg, same[i][1]), "%s: %s",
		       same[i][0], e.msg);
		verify_report_release(&vr);
		free(name);
		free(p);
	}
	/* one rule for duplicates: verify lists the folder twice as refused */
	char *p = fix("hostile/folder-twice.zip");
	struct scan s;
	struct scan_opts so = {.quiet = 1};
	struct err e;
	CHECKF(scan_path(p, &so, &s, &e) == 0, "%s", e.msg);
	CHECK(s.n_issues == 2 && s.n_issues && strstr(s.issues[0].reason, "duplicate name"));
	CHECK(s.actual.n == 1 && s.actual.n && !strcmp(s.actual.e[0].path, "d/a.txt"));
	scan_release(&s);
	free(p);
	/* a name that is not UTF-8 is listed as its escaped bytes */
	p = fix("hostile/latin1-name.zip");
	CHECKF(scan_path(p, &so, &s, &e) == 0, "%s", e.msg);
	CHECK(s.n_issues == 1 && s.n_issues && !strcmp(s.issues[0].path, "caf\\xe9.txt"));
	scan_release(&s);
	free(p);
}

/* Names in NFD (macOS) are read, compared and written in NFC. */
TEST(nfd_names_become_nfc)
{
	char base[] = "/tmp/supkit-unpack-XXXXXX";
	CHECK(mkdtemp(base) != NULL);
	char *out = path_join(base, "out");
	struct unpack_limits l;
	unpack_limits_default(&l);
	l.quiet = 1;
	const char *zips[] = {"hostile/ok-nfd.zip", "hostile/ok-nfd-manifest-nfc.zip"};
	for (int k = 0; k < 2; k++) {
		char *p = fix(zips[k]);
		struct verify_opts vo = {.quiet = 1};
		struct verify_report vr;
		struct err e;
		CHECKF(verify_path(p, &vo, &vr, &e) == 0, "%s", e.msg);
		CHECKF(vr.verified && vr.cmp.n_ok == 3, "%s not verified", zips[k]);
		for (size_t i = 0; i < vr.cmp.n; i++)
			CHECK(utf8_is_nfc(vr.cmp.items[i].got->path, strlen(vr.cmp.items[i].got->path)));
		verify_report_release(&vr);
		struct unpack_result r;
		CHECKF(unpack_zip(p, out, &l, &r, &e) == 0, "%s", e.msg);
		struct stat st;
		char *nfc = path_join(out, "r\xc3\xa9sultats/\xc3\xa9t\xc3\xa9.json");
		CHECKF(stat(nfc, &st) == 0, "%s: no NFC name after unpack", zips[k]);
		free(nfc);
		dir_remove_tree(out);
		free(p);
	}
	dir_remove_tree(base);
	free(out);
}

/* Deterministic mutation of real archives: every byte flipped in turn and
 * many truncations. Whatever the damage, the readers must not crash (the
 * sanitizer build checks memory), must fail cleanly or succeed, and an
 * unpack that succeeds must write only inside its target. */
static void mutate_one(const char *src, size_t step, const char *base)
{
	char *p = fix(src);
	size_t len;
	char *orig = slurp(p, &len);
	CHECK(orig != NULL);
	char *zp = path_join(base, "m.zip"), *out = path_join(base, "out");
	struct unpack_limits l;
	unpack_limits_default(&l);
	l.quiet = 1;
	size_t n_ok = 0, n_refused = 0;
	for (size_t i = 0; orig && i < 2 * len; i += step) {
		size_t cut = len;
		char *m = xmalloc(len + 1);
		memcpy(m, orig, len);
		if (i < len)
			m[i] ^= (char)(0x5a + i);
		else
			cut = i - len; /* truncations */
		struct err e;
		if (file_write_atomic(zp, m, cut, &e) < 0) {
			free(m);
			break;
		}
		free(m);
		struct zipdir zd;
		if (zipdir_read(zp, 0, &zd, &e) == 0)
			zipdir_release(&zd);
		struct scan s;
		struct scan_opts so = {.safetensors_digest = 1, .quiet = 1};
		scan_path(zp, &so, &s, &e);
		scan_release(&s);
		struct unpack_result r;
		if (unpack_zip(zp, out, &l, &r, &e) == 0) {
			n_ok++;
			dir_remove_tree(out);
		} else {
			n_refused++;
			CHECKF(e.code == EXIT_USAGE || e.code == EXIT_SYS, "code %d: %s", e.code, e.msg);
		}
		CHECKF(count_entries(base) == 1, "mutation %zu of %s left files behind", i, src);
	}
	CHECK(n_refused > 0);
	free(orig);
	free(p);
	free(zp);
	free(out);
}

TEST(mutated_archives_never_crash)
{
	char base[] = "/tmp/supkit-mut-XXXXXX";
	CHECK(mkdtemp(base) != NULL);
	mutate_one("hostile/python-ok.zip", 2, base);
	mutate_one("infozip.zip", 7, base);
	dir_remove_tree(base);
}

TEST(mutated_manifests_never_crash)
{
	char *p = fix("tree.manifest.json");
	size_t len;
	char *orig = slurp(p, &len);
	CHECK(orig != NULL);
	size_t accepted = 0;
	for (size_t i = 0; orig && i < len; i++) {
		char *m = xmalloc(len);
		memcpy(m, orig, len);
		m[i] ^= 0x21;
		struct manifest man;
		struct err e;
		if (manifest_parse(m, len, "m", &man, &e) == 0)
			accepted++;
		manifest_release(&man);
		/* truncated */
		if (manifest_parse(m, i, "m", &man, &e) == 0)
			accepted++;
		manifest_release(&man);
		free(m);
	}
	CHECK(accepted < len); /* most damage is caught */
	free(orig);
	free(p);
}

int main(void)
{
	setlocale(LC_CTYPE, "C.UTF-8");
	RUN(zipdir_reads_infozip_archive);
	RUN(scan_matches_python_manifest);
	RUN(verify_infozip_with_replay);
	RUN(verify_without_manifest_is_a_failed_check);
	RUN(verify_flipped_byte);
	RUN(unpack_refuses_hostile_archives);
	RUN(unpack_good_archives_and_limits);
	RUN(scan_and_unpack_refuse_alike);
	RUN(nfd_names_become_nfc);
	RUN(mutated_archives_never_crash);
	RUN(mutated_manifests_never_crash);
	return t_done();
}
