/* unpack.h: extract a supplement zip without ever writing outside the target.
 *
 * Every central-directory entry is checked before anything is written:
 * refused (EXIT_USAGE, one line naming the entry) are absolute paths, ".."
 * or "." components, empty components, backslashes, control characters,
 * names that are not valid UTF-8, symbolic links, hard links, devices and
 * other special files, duplicate names in Unicode NFC (a file and a folder
 * of the same name, and the same folder twice, included), a name that is
 * both a file and a folder above another entry, a name component longer
 * than the file system's NAME_MAX or a path longer than PATH_MAX under the
 * target, encrypted entries, entries over the size limit, a total over the
 * total limit, more entries than the entry limit, entries over the ratio
 * floor whose declared size over compressed size passes the ratio limit,
 * and entries whose total (over the floor) over the archive's size passes
 * it; and archives zipdir.h refuses (bytes outside every entry, Unicode Path
 * fields naming an entry otherwise). libarchive's entries are matched to the
 * central directory by place, and must carry the same name. While
 * extracting, an entry that inflates past its declared size, fails its CRC
 * or cannot be read is refused, and so are bytes written past the total or
 * the archive's ratio. Names are written in NFC (zipdir_names).
 * Extraction goes into a fresh temporary folder, so a refused archive leaves
 * nothing behind: beside a new target and renamed onto it at the end; inside
 * an existing (empty) target, which is kept as it is (owner, mode, extended
 * attributes), its entries moved into it at the end. Files are created 0666
 * & ~umask, folders (a new target included) 0777 & ~umask; the archive's
 * modes, owners and times are not applied.
 *
 * Leaves out: archive formats other than zip; restoring metadata.
 * Reference: supkit-unpack(1); PKWARE APPNOTE.TXT; the "zip slip" advisory (Snyk, 2018).
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
	double max_ratio;     /* uncompressed / compressed, for entries over UNPACK_RATIO_FLOOR,
			       * and all entries' total / the archive's size, for totals over it */
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
 * parent must exist; "" is refused). */
int unpack_zip(const char *archive, const char *dir, const struct unpack_limits *l, struct unpack_result *r,
	       struct err *e);

#endif
