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

#include "lib/utf8.h"
#include "supplements/manifest.h"
#include "supplements/scan.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOC64 0x07064b50u
#define SIG_DESCRIPTOR 0x08074b50u
#define EXTRA_UNICODE_PATH 0x7075

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
	free(zd->by_offset);
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

/* The extra fields xp[0..xlen) of the entry named x->name: each Unicode Path
 * field (0x7075: version 1, CRC-32 of the header name, the name) must name
 * the entry exactly as the header does. where: "central" or "local". */
static int check_unicode_path(const unsigned char *xp, size_t xlen, const struct zipdir_entry *x,
			      const char *where, const char *path, struct err *e)
{
	const unsigned char *xe = xp + xlen;
	while (xe - xp >= 4) {
		uint16_t id = le16(xp), sz = le16(xp + 2);
		if (xe - xp - 4 < sz)
			break;
		if (id == EXTRA_UNICODE_PATH) {
			char *q = scan_quote(x->name, x->name_len);
			if (sz < 5 || xp[4] != 1) {
				err_set(e, EXIT_USAGE, "'%s': entry '%s': malformed Unicode Path extra field in its %s header",
					path, q, where);
				free(q);
				return -1;
			}
			size_t ulen = (size_t)sz - 5;
			const char *u = (const char *)xp + 9;
			if (ulen != x->name_len || memcmp(u, x->name, ulen) != 0) {
				char *uq = scan_quote(u, ulen);
				err_set(e, EXIT_USAGE,
					"'%s': entry '%s': the Unicode Path extra field of its %s header names '%s' "
					"(readers would disagree on its name)", path, q, where, uq);
				free(uq);
				free(q);
				return -1;
			}
			free(q);
		}
		xp += 4 + sz;
	}
	return 0;
}

/* Length of entry x's data descriptor at x->end, which must be followed by
 * next (the next local header or the central directory): 12 or 20 bytes
 * (4- or 8-byte sizes), 4 more with the optional signature, its CRC-32 and
 * sizes those of the central directory. -1 when none fits. */
static long descriptor_len(int fd, const struct zipdir_entry *x, uint64_t next, const char *path, struct err *e)
{
	if (next < x->end)
		return -1;
	unsigned char d[24];
	uint64_t room = next - x->end, have = room < 24 ? room : 24;
	if (read_at(fd, d, (size_t)have, x->end, path, e) < 0)
		return -2;
	for (int sig = 1; sig >= 0; sig--) {
		for (int wide = 0; wide <= 1; wide++) {
			uint64_t len = (uint64_t)(sig ? 4 : 0) + 4 + (wide ? 16 : 8);
			if (len != room)
				continue;
			const unsigned char *q = d;
			if (sig && le32(q) != SIG_DESCRIPTOR)
				continue;
			q += sig ? 4 : 0;
			uint64_t cs = wide ? le64(q + 4) : le32(q + 4), us = wide ? le64(q + 12) : le32(q + 8);
			if (le32(q) == x->crc32 && cs == x->csize && us == x->usize)
				return (long)len;
		}
	}
	return -1;
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
			if (le64(r + 4) != eocd_pos - 20 - off64 - 12) {
				err_set(e, EXIT_USAGE, "'%s': bytes between the zip64 end record and its locator", path);
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
		x->crc32 = le32(h + 16);
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
						char *q = scan_quote(x->name, x->name_len);
						err_set(e, EXIT_USAGE, "'%s': entry '%s': short zip64 extra field", path, q);
						free(q);
						goto fail;
					}
					*f[k] = le64(q);
					q += 8;
				}
			}
			xp += 4 + sz;
		}
		if (check_unicode_path(h + 46 + nlen, xlen, x, "central", path, e) < 0)
			goto fail;
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
	/* Each local header: present, same name, same Unicode Path; every byte
	 * up to the central directory belongs to exactly one entry. */
	zd->by_offset = xmalloc((zd->n ? zd->n : 1) * sizeof *zd->by_offset);
	struct zipdir_entry **by = xmalloc((zd->n ? zd->n : 1) * sizeof *by);
	for (size_t i = 0; i < zd->n; i++)
		by[i] = &zd->e[i];
	qsort(by, zd->n, sizeof *by, cmp_offset);
	uint64_t pos = 0;
	const struct zipdir_entry *prev = NULL;
	unsigned char *lx = xmalloc(2 * 65535 + 1);
	for (size_t i = 0; i < zd->n; i++) {
		struct zipdir_entry *x = by[i];
		zd->by_offset[i] = (size_t)(x - zd->e);
		unsigned char lh[30];
		char *q = scan_quote(x->name, x->name_len);
		if (x->offset < pos) {
			char *pq = scan_quote(prev->name, prev->name_len);
			err_set(e, EXIT_USAGE, "'%s': entry '%s' overlaps entry '%s'", path, q, pq);
			free(pq);
			goto fail_local;
		}
		if (x->offset > pos) {
			if (prev) {
				char *pq = scan_quote(prev->name, prev->name_len);
				err_set(e, EXIT_USAGE, "'%s': %llu bytes at offset %llu, between entries '%s' and '%s', belong to no entry",
					path, (unsigned long long)(x->offset - pos), (unsigned long long)pos, pq, q);
				free(pq);
			} else
				err_set(e, EXIT_USAGE, "'%s': %llu bytes before the first entry '%s' belong to no entry "
					"(a self-extracting stub or other prefix)", path, (unsigned long long)x->offset, q);
			goto fail_local;
		}
		if (x->offset > cd_off || cd_off - x->offset < 30 || read_at(fd, lh, 30, x->offset, path, e) < 0 ||
		    le32(lh) != SIG_LOCAL) {
			err_set(e, EXIT_USAGE, "'%s': entry '%s': no local header at offset %llu", path, q,
				(unsigned long long)x->offset);
			goto fail_local;
		}
		uint64_t lnlen = le16(lh + 26), lxlen = le16(lh + 28);
		uint64_t data = x->offset + 30 + lnlen + lxlen;
		if (lnlen != x->name_len || data > cd_off || cd_off - data < x->csize) {
			err_set(e, EXIT_USAGE, "'%s': entry '%s': local header or data does not fit before the central directory",
				path, q);
			goto fail_local;
		}
		if (read_at(fd, lx, lnlen + lxlen, x->offset + 30, path, e) < 0)
			goto fail_local;
		if (memcmp(lx, x->name, lnlen) != 0) {
			err_set(e, EXIT_USAGE, "'%s': entry '%s': local header names a different file", path, q);
			goto fail_local;
		}
		if (check_unicode_path(lx + lnlen, lxlen, x, "local", path, e) < 0)
			goto fail_local;
		x->end = data + x->csize;
		if (x->flags & 8) { /* a data descriptor follows the data */
			uint64_t next = i + 1 < zd->n ? by[i + 1]->offset : cd_off;
			long d = descriptor_len(fd, x, next, path, e);
			if (d == -2)
				goto fail_local;
			if (d < 0) {
				err_set(e, EXIT_USAGE, "'%s': entry '%s': no data descriptor matching the central directory "
					"right after its data", path, q);
				goto fail_local;
			}
			x->end += (uint64_t)d;
		}
		free(q);
		pos = x->end;
		prev = x;
		continue;
fail_local:
		free(q);
		free(lx);
		free(by);
		goto fail;
	}
	free(lx);
	if (pos != cd_off) {
		if (prev) {
			char *pq = scan_quote(prev->name, prev->name_len);
			err_set(e, EXIT_USAGE, "'%s': %llu bytes at offset %llu, between entry '%s' and the central directory, "
				"belong to no entry", path, (unsigned long long)(cd_off - pos), (unsigned long long)pos, pq);
			free(pq);
		} else
			err_set(e, EXIT_USAGE, "'%s': %llu bytes before the central directory belong to no entry", path,
				(unsigned long long)cd_off);
		free(by);
		goto fail;
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

void zipdir_names_free(struct zipdir_name *n, size_t count)
{
	for (size_t i = 0; n && i < count; i++) {
		free(n[i].name);
		free(n[i].why);
	}
	free(n);
}

struct zname {
	const char *name;
	size_t idx;
};
static int cmp_zname(const void *a, const void *b)
{
	const struct zname *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : x->idx < y->idx ? -1 : x->idx > y->idx;
}

static char *entry_name(const struct zipdir_entry *x, char **why)
{
	size_t len = x->name_len;
	struct err pe;
	if (strlen(x->name) != len) {
		*why = xstrdup("name holds a NUL byte");
		return NULL;
	}
	if (len > 1 && x->name[len - 1] == '/' && x->kind != ZK_DIR) {
		*why = xstrdup("a name ending in '/' that is not a folder");
		return NULL;
	}
	while (len > 1 && x->name[len - 1] == '/')
		len--;
	char *raw = xstrndup(x->name, len);
	if (manifest_path_check(raw, &pe) < 0) {
		free(raw);
		*why = xstrdup(pe.msg);
		return NULL;
	}
	char *nfc = utf8_nfc(raw, len, NULL);
	free(raw);
	if (manifest_path_check(nfc, &pe) < 0) {
		free(nfc);
		*why = xasprintf("after Unicode normalization: %s", pe.msg);
		return NULL;
	}
	if (x->kind == ZK_SYMLINK || x->kind == ZK_OTHER) {
		free(nfc);
		*why = xasprintf("is a %s", zip_kind_name(x->kind));
		return NULL;
	}
	if (x->encrypted) {
		free(nfc);
		*why = xstrdup("is encrypted");
		return NULL;
	}
	return nfc;
}

size_t zipdir_names(const struct zipdir *zd, struct zipdir_name **out)
{
	size_t n = zd->n, bad = 0;
	struct zipdir_name *v = xcalloc(n ? n : 1, sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i].name = entry_name(&zd->e[i], &v[i].why);
	/* duplicates after normalization: sorted by name, then index */
	struct zname *s = xmalloc((n ? n : 1) * sizeof *s);
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].name)
			s[m++] = (struct zname){v[i].name, i};
	qsort(s, m, sizeof *s, cmp_zname);
	unsigned char *dup = xcalloc(n ? n : 1, 1);
	for (size_t i = 1; i < m; i++) {
		if (strcmp(s[i - 1].name, s[i].name) != 0)
			continue;
		size_t a = s[i - 1].idx, b = s[i].idx;
		for (size_t k = 0; k < 2; k++) {
			size_t me = k ? b : a, other = k ? a : b;
			if (dup[me])
				continue;
			dup[me] = 1;
			const struct zipdir_entry *o = &zd->e[other];
			char *q = scan_quote(o->name, o->name_len);
			size_t la = zd->e[me].name_len, lb = o->name_len;
			while (la > 1 && zd->e[me].name[la - 1] == '/')
				la--;
			while (lb > 1 && o->name[lb - 1] == '/')
				lb--;
			v[me].why = xasprintf("duplicate name: entry '%s' has the same name%s", q,
					      la == lb && !memcmp(zd->e[me].name, o->name, la) ? ""
											: " in Unicode NFC");
			free(q);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (dup[i]) {
			free(v[i].name);
			v[i].name = NULL;
		}
		bad += v[i].name == NULL;
	}
	free(dup);
	free(s);
	*out = v;
	return bad;
}

int zipdir_same_name(const char *lib, const char *want)
{
	if (!lib)
		return 0;
	size_t len = strlen(lib);
	char *c = xstrndup(lib, len);
	for (char *p = c; *p; p++)
		if (*p == '\\')
			*p = '/';
	while (len > 1 && c[len - 1] == '/')
		c[--len] = '\0';
	char *nfc = utf8_nfc(c, len, NULL);
	int same = nfc && !strcmp(nfc, want);
	free(nfc);
	free(c);
	return same;
}
