/* unpack.h: extract a supplement zip without ever writing outside the target.
 *
 * Every central-directory entry is checked before anything is written:
 * refused (EXIT_USAGE, one line naming the entry) are absolute paths, ".."
 * or "." components, empty components, backslashes, control characters,
 * names that are not valid UTF-8, symbolic links, hard links, devices and
 * other special files, duplicate names (a file and a folder of the same name
 * included), a name that is both a file and a folder above another entry,
 * encrypted entries, entries over the size limit, a total over the total
 * limit, more entries than the entry limit, and entries over the ratio floor
 * whose declared size over compressed size passes the ratio limit. While
 * extracting, an entry that inflates past its declared size, fails its CRC or
 * cannot be read is refused too. Extraction goes into a fresh temporary folder
 * beside the target which is renamed onto it at the end, so a refused archive
 * leaves nothing behind. Files are created 0666 & ~umask, folders 0777 &
 * ~umask; the archive's modes, owners and times are not applied.
 *
 * Leaves out: archive formats other than zip; restoring metadata.
 * Reference: issue 3; PKWARE APPNOTE.TXT; the "zip slip" advisory (Snyk, 2018).
 */
#ifndef SUPKIT_SUPPLEMENTS_UNPACK_H
#define SUPKIT_SUPPLEMENTS_UNPACK_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"

#define UNPACK_MAX_ENTRY_DEFAULT ((uint64_t)4 << 30)    /* 4 GiB per entry */
#define UNPACK_MAX_TOTAL_DEFAULT ((uint64_t)16 << 30)   /* 16 GiB in all */
#define UNPACK_MAX_RATIO_DEFAULT 200.0                  /* declared size / compressed size */
#define UNPACK_RATIO_FLOOR ((uint64_t)1 << 20)          /* the ratio limit applies above 1 MiB */
#define UNPACK_MAX_ENTRIES_DEFAULT 100000

struct unpack_limits {
	uint64_t max_entry;   /* bytes in one entry */
	uint64_t max_total;   /* bytes in all entries */
	double max_ratio;     /* uncompressed / compressed, for entries over UNPACK_RATIO_FLOOR */
	size_t max_entries;
	int quiet;            /* no progress on stderr */
};

struct unpack_result {
	size_t files, dirs;
	uint64_t bytes;
};

/* Defaults above. */
void unpack_limits_default(struct unpack_limits *l);
/* Extract archive into dir (which must not exist, or be an empty folder; its
 * parent must exist). */
int unpack_zip(const char *archive, const char *dir, const struct unpack_limits *l, struct unpack_result *r,
	       struct err *e);

#endif
