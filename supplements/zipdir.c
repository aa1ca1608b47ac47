/* zipdir.c: read and check a zip central directory (see zipdir.h).
 * Reference: PKWARE APPNOTE.TXT 6.3.x; every field read is bounds-checked
 * against the file size before use. */
#include "supplements/zipdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOC64 0x07064b50u

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static int read_at(int fd, void *buf, size_t n, uint64_t off, const char *path, struct err *e)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return err_errno(e, EXIT_SYS, "cannot read '%s'", path);
		}
		if (r == 0)
			return err_set(e, EXIT_USAGE, "'%s': truncated at byte %llu", path,
				       (unsigned long long)(off + got));
		got += (size_t)r;
	}
	return 0;
}

const char *zip_kind_name(enum zip_kind k)
{
	switch (k) {
	case ZK_FILE: return "file";
	case ZK_DIR: return "directory";
	case ZK_SYMLINK: return "symlink";
	case ZK_OTHER: return "special file";
	}
	return "?";
}

void zipdir_release(struct zipdir *zd)
{
	for (size_t i = 0; i < zd->n; i++)
		free(zd->e[i].name);
	free(zd->e);
	memset(zd, 0, sizeof *zd);
}

/* Locate the end of central directory record: the last signature whose
 * comment runs exactly to the end of the file. */
static int find_eocd(int fd, uint64_t fsize, uint64_t *pos, unsigned char rec[22], const char *path,
		     struct err *e)
{
	if (fsize < 22)
		return err_set(e, EXIT_USAGE, "'%s': not a zip archive or truncated (no end of central directory record)", path);
	uint64_t span = fsize < 22 + 65535 ? fsize : 22 + 65535;
	unsigned char *buf = xmalloc(span);
	if (read_at(fd, buf, span, fsize - span, path, e) < 0) {
		free(buf);
		return -1;
	}
	for (uint64_t i = span - 22 + 1; i-- > 0;) {
		if (le32(buf + i) != SIG_EOCD)
			continue;
		uint16_t clen = le16(buf + i + 20);
		if (i + 22 + clen != span)
			continue;
		memcpy(rec, buf + i, 22);
		*pos = fsize - span + i;
		free(buf);
		return 0;
	}
	free(buf);
	return err_set(e, EXIT_USAGE, "'%s': not a zip archive or truncated (no end of central directory record)", path);
}

static int cmp_offset(const void *a, const void *b)
{
	const struct zipdir_entry *x = *(const struct zipdir_entry *const *)a;
	const struct zipdir_entry *y = *(const struct zipdir_entry *const *)b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

int zipdir_read(const char *path, size_t max_entries, struct zipdir *zd, struct err *e)
{
	memset(zd, 0, sizeof *zd);
	if (!max_entries)
		max_entries = ZIPDIR_MAX_ENTRIES_DEFAULT;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return err_errno(e, errno == ENOENT ? EXIT_USAGE : EXIT_SYS, "cannot open '%s'", path);
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, EXIT_USAGE, "'%s' is not a regular file", path);
	}
	uint64_t fsize = (uint64_t)st.st_size, eocd_pos = 0;
	zd->file_size = fsize;
	unsigned char r[56], *cd = NULL;
	if (find_eocd(fd, fsize, &eocd_pos, r, path, e) < 0)
		goto fail;
	uint64_t n = le16(r + 10), cd_size = le32(r + 12), cd_off = le32(r + 16);
	uint64_t cd_end = eocd_pos; /* where the central directory must end */
	if (le16(r + 4) != 0 || le16(r + 6) != 0 || le16(r + 8) != le16(r + 10)) {
		err_set(e, EXIT_USAGE, "'%s': multi-disk archives are not supported", path);
		goto fail;
	}
	if (eocd_pos >= 20) {
		unsigned char loc[20];
		if (read_at(fd, loc, 20, eocd_pos - 20, path, e) < 0)
			goto fail;
		if (le32(loc) == SIG_LOC64) {
			uint64_t off64 = le64(loc + 8);
			if (off64 > eocd_pos - 20 || eocd_pos - 20 - off64 < 56) {
				err_set(e, EXIT_USAGE, "'%s': bad zip64 end record locator", path);
				goto fail;
			}
			if (read_at(fd, r, 56, off64, path, e) < 0)
				goto fail;
			if (le32(r) != SIG_EOCD64) {
				err_set(e, EXIT_USAGE, "'%s': bad zip64 end of central directory record", path);
				goto fail;
			}
			n = le64(r + 32);
			cd_size = le64(r + 40);
			cd_off = le64(r + 48);
			cd_end = off64;
		}
	}
	if (n > max_entries) {
		err_set(e, EXIT_USAGE, "'%s': %llu entries, more than the limit of %zu", path, (unsigned long long)n,
			max_entries);
		goto fail;
	}
	if (cd_off > cd_end || cd_end - cd_off != cd_size) {
		err_set(e, EXIT_USAGE, "'%s': central directory is not where the end record says (truncated or has data inserted)", path);
		goto fail;
	}
	if (cd_size > (1u << 30)) {
		err_set(e, EXIT_USAGE, "'%s': central directory larger than 1 GiB", path);
		goto fail;
	}
	cd = xmalloc(cd_size ? cd_size : 1);
	if (read_at(fd, cd, cd_size, cd_off, path, e) < 0)
		goto fail;
	zd->e = xcalloc(n ? n : 1, sizeof *zd->e);
	uint64_t p = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (cd_size - p < 46 || le32(cd + p) != SIG_CENTRAL) {
			err_set(e, EXIT_USAGE, "'%s': central directory entry %llu is damaged", path, (unsigned long long)i);
			goto fail;
		}
		const unsigned char *h = cd + p;
		uint64_t nlen = le16(h + 28), xlen = le16(h + 30), clen = le16(h + 32);
		if (cd_size - p - 46 < nlen + xlen + clen) {
			err_set(e, EXIT_USAGE, "'%s': central directory entry %llu runs past its end", path, (unsigned long long)i);
			goto fail;
		}
		struct zipdir_entry *x = &zd->e[zd->n++];
		x->name = xstrndup((const char *)h + 46, nlen);
		x->name_len = nlen;
		x->flags = le16(h + 8);
		x->method = le16(h + 10);
		x->csize = le32(h + 20);
		x->usize = le32(h + 24);
		x->offset = le32(h + 42);
		uint16_t made_by = le16(h + 4);
		uint32_t eattr = le32(h + 38);
		/* zip64 extended information: the 0xFFFFFFFF fields, in order */
		const unsigned char *xp = h + 46 + nlen, *xe = xp + xlen;
		while (xe - xp >= 4) {
			uint16_t id = le16(xp), sz = le16(xp + 2);
			if (xe - xp - 4 < sz)
				break;
			if (id == 0x0001) {
				const unsigned char *q = xp + 4, *qe = q + sz;
				uint64_t *f[3] = {&x->usize, &x->csize, &x->offset};
				for (int k = 0; k < 3; k++) {
					if (*f[k] != 0xFFFFFFFFu)
						continue;
					if (qe - q < 8) {
						err_set(e, EXIT_USAGE, "'%s': entry '%s': short zip64 extra field", path, x->name);
						goto fail;
					}
					*f[k] = le64(q);
					q += 8;
				}
			}
			xp += 4 + sz;
		}
		x->encrypted = (x->flags & 1) || x->method == 99;
		x->unix_mode = (made_by >> 8) == 3 || (made_by >> 8) == 19 ? eattr >> 16 : 0;
		uint32_t ft = x->unix_mode & 0170000;
		if (ft == 0120000)
			x->kind = ZK_SYMLINK;
		else if (ft == 0040000 || (nlen && x->name[nlen - 1] == '/') || (!ft && (eattr & 0x10)))
			x->kind = ZK_DIR;
		else if (ft == 0 || ft == 0100000)
			x->kind = ZK_FILE;
		else
			x->kind = ZK_OTHER;
		p += 46 + nlen + xlen + clen;
	}
	if (p != cd_size) {
		err_set(e, EXIT_USAGE, "'%s': central directory holds more than the %llu entries its end record counts",
			path, (unsigned long long)n);
		goto fail;
	}
	/* Each local header: present, same name, and no two entries share bytes. */
	struct zipdir_entry **by = xmalloc((zd->n ? zd->n : 1) * sizeof *by);
	for (size_t i = 0; i < zd->n; i++)
		by[i] = &zd->e[i];
	qsort(by, zd->n, sizeof *by, cmp_offset);
	uint64_t prev_end = 0;
	const char *prev = NULL;
	for (size_t i = 0; i < zd->n; i++) {
		struct zipdir_entry *x = by[i];
		unsigned char lh[30];
		if (x->offset < prev_end) {
			err_set(e, EXIT_USAGE, "'%s': entry '%s' overlaps entry '%s'", path, x->name, prev);
			free(by);
			goto fail;
		}
		if (x->offset > cd_off || cd_off - x->offset < 30 || read_at(fd, lh, 30, x->offset, path, e) < 0 ||
		    le32(lh) != SIG_LOCAL) {
			err_set(e, EXIT_USAGE, "'%s': entry '%s': no local header at offset %llu", path, x->name,
				(unsigned long long)x->offset);
			free(by);
			goto fail;
		}
		uint64_t lnlen = le16(lh + 26), lxlen = le16(lh + 28);
		uint64_t data = x->offset + 30 + lnlen + lxlen;
		if (lnlen != x->name_len || data > cd_off || cd_off - data < x->csize) {
			err_set(e, EXIT_USAGE, "'%s': entry '%s': local header or data does not fit before the central directory",
				path, x->name);
			free(by);
			goto fail;
		}
		char *lname = xmalloc(lnlen + 1);
		if (read_at(fd, lname, lnlen, x->offset + 30, path, e) < 0) {
			free(lname);
			free(by);
			goto fail;
		}
		int same = memcmp(lname, x->name, lnlen) == 0;
		free(lname);
		if (!same) {
			err_set(e, EXIT_USAGE, "'%s': entry '%s': local header names a different file", path, x->name);
			free(by);
			goto fail;
		}
		prev_end = data + x->csize;
		prev = x->name;
	}
	free(by);
	free(cd);
	close(fd);
	return 0;
fail:
	free(cd);
	close(fd);
	zipdir_release(zd);
	zd->file_size = fsize;
	return -1;
}
