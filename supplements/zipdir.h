/* zipdir.h: the central directory of a zip file, read and checked before any
 * entry's data is touched.
 *
 * libarchive streams the data (scan.c, unpack.c); this reader gives what its
 * entry API does not: every entry's compressed size (for the compression-ratio
 * limit), the raw name bytes, encryption flags, Unix file types from the
 * external attributes, and a structural check of the whole file: the end
 * record must end the file (a truncated archive has none), the central
 * directory must lie where the end record says, each local header must exist,
 * carry the same name as its central entry, and no two entries may share
 * bytes (overlapping-entry bombs). Zip64 end records and extra fields are read.
 *
 * Leaves out: multi-disk archives (refused), data descriptors (not needed:
 * the central directory holds the sizes), archive comments (ignored).
 * Reference: PKWARE APPNOTE.TXT 6.3.x, sections 4.3.6-4.3.16, 4.5.3.
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
	uint16_t method;     /* 0 stored, 8 deflate, ... */
	uint16_t flags;      /* general purpose bits */
	int encrypted;       /* flag bit 0, or method 99 (AES) */
	enum zip_kind kind;
	uint32_t unix_mode;  /* from the external attributes when made on Unix, else 0 */
};

struct zipdir {
	struct zipdir_entry *e;  /* in central-directory order */
	size_t n;
	uint64_t file_size;
};

/* Read and check path's central directory (at most max_entries entries,
 * 0 = ZIPDIR_MAX_ENTRIES_DEFAULT). Errors are bad input (EXIT_USAGE) naming
 * the file and, where there is one, the entry; EXIT_SYS for I/O. */
int zipdir_read(const char *path, size_t max_entries, struct zipdir *zd, struct err *e);
void zipdir_release(struct zipdir *zd);
const char *zip_kind_name(enum zip_kind k);

#endif
