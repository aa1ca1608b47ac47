/* pack.c: reproducible supplement zips (see pack.h).
 *
 * Two passes: scan.c hashes every file and builds the manifest (which must be
 * written first), then each file is streamed into libarchive's zip writer and
 * hashed again, so a file that changes between the passes is an error rather
 * than a manifest that lies. Leaves out: reading archives (scan.c).
 * Reference: supkit-pack(1); libarchive archive_write(3), archive_write_set_format_zip(3).
 */
#include "supplements/pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/cli.h"
#include "lib/fileio.h"
#include "lib/progress.h"
#include "lib/sha256.h"
#include "supplements/derive.h"
#include "supplements/manifest.h"
#include "supplements/scan.h"
#include "supplements/zipdir.h"

#define CHUNK (1u << 20)


void pack_result_release(struct pack_result *r)
{
	for (size_t i = 0; i < r->n_notes; i++)
		free(r->notes[i]);
	free(r->notes);
	r->notes = NULL;
	r->n_notes = 0;
}

int pack_source_date(int64_t *t, struct err *e)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	*t = PACK_DEFAULT_TIME;
	if (!s)
		return 0;
	/* Up to year 2107, the last a zip's DOS date field can hold. */
	if (cli_parse_i64(s, 0, 4354819199LL, t, "SOURCE_DATE_EPOCH", e) < 0)
		return -1;
	return 0;
}

int pack_path_inside(const char *dir, const char *out, struct err *e)
{
	char rd[PATH_MAX], od[PATH_MAX];
	if (!realpath(dir, rd))
		return err_errno(e, EXIT_USAGE, "cannot resolve '%s'", dir);
	char *odir = path_dirname(out);
	if (!realpath(odir, od)) {
		err_errno(e, EXIT_USAGE, "cannot resolve the folder of '%s'", out);
		free(odir);
		return -1;
	}
	free(odir);
	char *full = path_join(od, path_basename(out));
	size_t n = strlen(rd);
	int inside = !strcmp(rd, "/") || (!strncmp(full, rd, n) && (full[n] == '/' || full[n] == '\0'));
	free(full);
	return inside;
}

static struct archive_entry *entry_new(const char *path, uint64_t size, int64_t mtime)
{
	struct archive_entry *ent = archive_entry_new();
	archive_entry_set_pathname_utf8(ent, path);
	archive_entry_set_size(ent, (la_int64_t)size);
	archive_entry_set_filetype(ent, AE_IFREG);
	archive_entry_set_perm(ent, 0644);
	archive_entry_set_mtime(ent, (time_t)mtime, 0);
	archive_entry_set_uid(ent, 0);
	archive_entry_set_gid(ent, 0);
	return ent;
}

static int write_data(struct archive *a, const void *buf, size_t len, const char *out, struct err *e)
{
	const char *p = buf;
	while (len) {
		la_ssize_t w = archive_write_data(a, p, len);
		if (w <= 0)
			return err_set(e, EXIT_SYS, "cannot write '%s': %s", out, archive_error_string(a));
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Stream one file into the archive, checking it still has the manifest's bytes. */
static int write_file(struct archive *a, const struct scan *s, const char *dir, const struct manifest_entry *m,
		      int64_t mtime, const char *out, char *buf, struct progress *pg, uint64_t *done, struct err *e)
{
	int fd;
	if (scan_open(s, dir, m->path, &fd, e) < 0)
		return -1;
	char *p = path_join(dir, m->path);
	struct archive_entry *ent = entry_new(m->path, m->size, mtime);
	int rc = 0;
	if (archive_write_header(a, ent) != ARCHIVE_OK)
		rc = err_set(e, EXIT_SYS, "cannot write '%s': entry '%s': %s", out, m->path, archive_error_string(a));
	archive_entry_free(ent);
	struct sha256 h;
	sha256_init(&h);
	uint64_t n = 0;
	while (rc == 0) {
		ssize_t r = read(fd, buf, CHUNK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = err_errno(e, EXIT_SYS, "cannot read '%s'", p);
			break;
		}
		if (r == 0)
			break;
		if (n + (uint64_t)r > m->size) {
			rc = err_set(e, EXIT_SYS, "'%s' changed while it was being packed", p);
			break;
		}
		sha256_update(&h, buf, (size_t)r);
		rc = write_data(a, buf, (size_t)r, out, e);
		n += (uint64_t)r;
		*done += (uint64_t)r;
		progress_at(pg, 0, (double)*done, "packing:");
	}
	uint8_t d[SHA256_LEN];
	char hex[65];
	sha256_final(&h, d);
	sha256_to_hex(d, hex);
	if (rc == 0 && (n != m->size || strcmp(hex, m->sha256) != 0))
		rc = err_set(e, EXIT_SYS, "'%s' changed while it was being packed", p);
	close(fd);
	free(p);
	return rc;
}

/* The archive just written (tmp) holds manifest.json, then m's paths, in
 * order and byte for byte: libarchive's writer converts names (to its own
 * near-NFC form), so this is checked rather than assumed. */
static int check_names(const char *tmp, const char *out, const struct manifest *m, struct err *e)
{
	struct zipdir zd;
	if (zipdir_read(tmp, m->n + 1, &zd, e) < 0) {
		err_prefix(e, "the archive written for '%s' does not read back", out);
		e->code = EXIT_SYS;
		return -1;
	}
	int rc = 0;
	if (zd.n != m->n + 1)
		rc = err_set(e, EXIT_SYS, "'%s': %zu entries written, %zu expected", out, zd.n, m->n + 1);
	for (size_t i = 0; rc == 0 && i < zd.n; i++) {
		const char *want = i ? m->e[i - 1].path : MANIFEST_NAME;
		if (zd.e[i].name_len != strlen(want) || memcmp(zd.e[i].name, want, zd.e[i].name_len) != 0) {
			char *q = scan_quote(zd.e[i].name, zd.e[i].name_len);
			rc = err_set(e, EXIT_SYS, "'%s': entry '%s' was written as '%s'", out, want, q);
			free(q);
		}
	}
	zipdir_release(&zd);
	return rc;
}

int pack_dir(const char *dir, const char *out, const struct pack_opts *o, struct pack_result *r,
	     struct err *e)
{
	memset(r, 0, sizeof *r);
	if (!out[0])
		return err_set(e, EXIT_USAGE, "the zip to write is named by an empty string");
	struct stat st;
	if (stat(dir, &st) != 0)
		return err_errno(e, EXIT_USAGE, "cannot open '%s'", dir);
	if (!S_ISDIR(st.st_mode))
		return err_set(e, EXIT_USAGE, "'%s' is not a folder", dir);
	int in = pack_path_inside(dir, out, e);
	if (in < 0)
		return -1;
	if (in)
		return err_set(e, EXIT_USAGE, "output '%s' lies inside the folder being packed '%s'", out, dir);

	struct scan s;
	struct scan_opts so = {.strict = 1, .safetensors_digest = 1, .quiet = o->quiet,
			       .capture_if = derive_capture, .capture_if_max = DERIVE_CAPTURE_MAX};
	if (scan_path(dir, &so, &s, e) < 0) {
		scan_release(&s);
		return -1;
	}
	/* a folder named manifest.json would clash with the manifest entry */
	const struct manifest_entry *clash = NULL;
	for (size_t i = 0; !clash && i < s.actual.n; i++)
		if (!strncmp(s.actual.e[i].path, MANIFEST_NAME "/", strlen(MANIFEST_NAME) + 1))
			clash = &s.actual.e[i];
	if (clash) {
		err_set(e, EXIT_USAGE, "'%s': entry '%s': the top-level name '%s' is reserved for the manifest", dir,
			clash->path, MANIFEST_NAME);
		scan_release(&s);
		return -1;
	}
	r->replaced_manifest = s.has_manifest;
	derive_lift(&s, &s.actual, &r->notes, &r->n_notes);
	r->derived = manifest_n_derived(&s.actual);
	size_t mlen;
	char *mtext = manifest_print(&s.actual, &mlen);

	/* DOS times in zip headers are local time: pin the zone while writing. */
	char *old_tz = getenv("TZ") ? xstrdup(getenv("TZ")) : NULL;
	setenv("TZ", "UTC0", 1);
	tzset();

	struct atomic_file af;
	struct archive *a = NULL;
	char *buf = NULL;
	int rc = atomic_open(&af, out, e);
	struct progress pg;
	progress_init(&pg, o->quiet);
	progress_start(&pg, (double)manifest_total_size(&s.actual), 0, NULL);  /* the walk's bytes */
	pg.delay = 1.0; /* first line after a second */
	uint64_t done = 0;
	if (rc < 0)
		goto out;
	a = archive_write_new();
	if (archive_write_set_format_zip(a) != ARCHIVE_OK ||
	    archive_write_set_options(a, "zip:compression=deflate,zip:compression-level=6") != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(a, 0) != ARCHIVE_OK ||
	    archive_write_open_FILE(a, af.fp) != ARCHIVE_OK) {
		rc = err_set(e, EXIT_SYS, "cannot write '%s': %s", out, archive_error_string(a));
		goto fail;
	}
	struct archive_entry *ent = entry_new(MANIFEST_NAME, mlen, o->mtime);
	if (archive_write_header(a, ent) != ARCHIVE_OK) {
		rc = err_set(e, EXIT_SYS, "cannot write '%s': %s", out, archive_error_string(a));
		archive_entry_free(ent);
		goto fail;
	}
	archive_entry_free(ent);
	if ((rc = write_data(a, mtext, mlen, out, e)) < 0)
		goto fail;
	buf = xmalloc(CHUNK);
	for (size_t i = 0; i < s.actual.n; i++)
		if ((rc = write_file(a, &s, dir, &s.actual.e[i], o->mtime, out, buf, &pg, &done, e)) < 0)
			goto fail;
	if (archive_write_close(a) != ARCHIVE_OK) {
		rc = err_set(e, EXIT_SYS, "cannot write '%s': %s", out, archive_error_string(a));
		goto fail;
	}
	archive_write_free(a);
	a = NULL;
	if (fflush(af.fp) != 0) {
		rc = err_errno(e, EXIT_SYS, "cannot write '%s'", out);
		goto fail;
	}
	if ((rc = check_names(af.tmp_path, out, &s.actual, e)) < 0)
		goto fail;
	if ((rc = atomic_commit(&af, e)) < 0)
		goto out;
	r->entries = s.actual.n + 1;
	r->uncompressed = manifest_total_size(&s.actual) + mlen;
	if ((rc = sha256_file_hex(out, r->sha256, &r->compressed, e)) < 0)
		goto out;
	goto out;
fail:
	if (a) {
		/* closed, not archive_write_fail()ed: a failed writer never
		 * releases an entry's deflate stream or its output filter; what
		 * close writes goes to the temporary file, removed below */
		archive_write_close(a);
		archive_write_free(a);
		a = NULL;
	}
	atomic_abort(&af);
out:
	progress_done(&pg);
	if (old_tz) {
		setenv("TZ", old_tz, 1);
		free(old_tz);
	} else {
		unsetenv("TZ");
	}
	tzset();
	free(buf);
	free(mtext);
	scan_release(&s);
	return rc;
}
