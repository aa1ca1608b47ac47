/* zipdir.h: the central directory of a zip file, read and checked before any
 * entry's data is touched.
 *
 * libarchive streams the data (scan.c, unpack.c); this reader gives what its
 * entry API does not: every entry's compressed size (for the compression-ratio
 * limit), the raw name bytes, encryption flags, Unix file types from the
 * external attributes, and a structural check of the whole file:
 *  - the end record must end the file (after its comment; a truncated archive
 *    has none), and the central directory must lie where it says;
 *  - every byte before the end record belongs to exactly one thing: an
 *    entry's local header, name, extra field, data and data descriptor, the
 *    central directory, or the zip64 end record and locator. So no two
 *    entries share bytes (overlapping-entry bombs), and there are no bytes
 *    that only a streaming reader would see (local headers in gaps between
 *    entries, a prefix such as a self-extracting stub: refused);
 *  - each local header carries the same name as its central entry;
 *  - a Unicode Path extra field (0x7075, central or local) must name the
 *    entry exactly as its header does: Info-ZIP unzip and libarchive take
 *    the name from that field, Python's zipfile from the header, so an
 *    archive where they differ would mean different files to different
 *    readers.
 * Zip64 end records and extra fields are read.
 *
 * Leaves out: multi-disk archives (refused), the archive comment (ignored).
 * Reference: PKWARE APPNOTE.TXT 6.3.x, sections 4.3.6-4.3.16, 4.5.3,
 * 4.6.9 (Info-ZIP Unicode Path Extra Field).
 */
#ifndef SUPKIT_SUPPLEMENTS_ZIPDIR_H
#define SUPKIT_SUPPLEMENTS_ZIPDIR_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"

#define ZIPDIR_MAX_ENTRIES_DEFAULT 100000

enum zip_kind { ZK_FILE, ZK_DIR, ZK_SYMLINK, ZK_OTHER };

struct zipdir_entry {
	char *name;          /* raw name bytes, NUL-terminated (owned); may hold a NUL: see name_len */
	size_t name_len;
	uint64_t csize;      /* compressed bytes */
	uint64_t usize;      /* uncompressed bytes, as declared */
	uint64_t offset;     /* local header offset */
	uint64_t end;        /* one past its data (and data descriptor) */
	uint32_t crc32;      /* as the central directory declares */
	uint16_t method;     /* 0 stored, 8 deflate, ... */
	uint16_t flags;      /* general purpose bits */
	int encrypted;       /* flag bit 0, or method 99 (AES) */
	enum zip_kind kind;
	uint32_t unix_mode;  /* from the external attributes when made on Unix, else 0 */
};

struct zipdir {
	struct zipdir_entry *e;  /* in central-directory order */
	size_t n;
	size_t *by_offset;       /* indices into e in local-header order: the
				  * order libarchive's seekable reader returns
				  * the entries in */
	uint64_t file_size;
};

/* Read and check path's central directory (at most max_entries entries,
 * 0 = ZIPDIR_MAX_ENTRIES_DEFAULT). Errors are bad input (EXIT_USAGE) naming
 * the file and, where there is one, the entry; EXIT_SYS for I/O. */
int zipdir_read(const char *path, size_t max_entries, struct zipdir *zd, struct err *e);
void zipdir_release(struct zipdir *zd);

/* The names of zd's entries as supkit uses them, checked. For each entry i,
 * n[i].name is its path in Unicode NFC (utf8_nfc), without the trailing '/'
 * of a folder, and n[i].why NULL; or, when the entry is refused, name NULL
 * and why one line saying why: a NUL byte, a name ending in '/' that is not
 * a folder, a path manifest_path_check refuses (before or after
 * normalization), a symbolic link or special file, an encrypted entry, or a
 * name that another entry has too after normalization (a file and a folder,
 * or the same folder twice, included; both are refused). Returns the number
 * refused. Free with zipdir_names_free(n, zd->n). */
struct zipdir_name {
	char *name;
	char *why;
};
size_t zipdir_names(const struct zipdir *zd, struct zipdir_name **n);
void zipdir_names_free(struct zipdir_name *n, size_t count);

/* Whether libarchive's name for an entry (lib, NULL when it could not
 * convert it) is the name zipdir_names gave it (want): equal after
 * normalization, '\\' read as '/' and a trailing '/' dropped. libarchive
 * returns names flagged UTF-8 in a form of its own close to NFC. */
int zipdir_same_name(const char *lib, const char *want);
const char *zip_kind_name(enum zip_kind k);

#endif
