/* pack.h: write a folder as a reproducible supplement zip.
 *
 * The archive holds manifest.json first, then every regular file of the
 * folder in byte-wise sorted path order, each deflated (zlib level 6) with a
 * fixed timestamp (SOURCE_DATE_EPOCH when set, else 1980-01-01T00:00:00Z),
 * mode 0644, owner and group 0, and no per-run fields, so identical input
 * bytes give a byte-identical zip whatever the files' times, owners, the
 * umask, the time zone or the order the folder lists its files in.
 * Every path, in the manifest and in the zip, is in Unicode NFC (scan.h),
 * read back from the written zip and checked before it is committed.
 * Refused (EXIT_USAGE, nothing written): symbolic links or special files in
 * the folder, paths that are not valid UTF-8 or not safe relative paths
 * (manifest.h), two paths the same in NFC, an empty output name, an output
 * path inside the folder, a folder named manifest.json at the top, invalid
 * safetensors files. The folder is walked and its files opened again by file
 * descriptors (scan_open): a file or folder swapped for another or for a link
 * during the pack is EXIT_SYS, never followed.
 * A manifest.json at the top of the folder is replaced by the fresh one.
 * The manifest records how each derived entry was derived (derive.h: the
 * derivation block every audit's --json carries, claims files, run records
 * beside their config.cfg), each input named by the entry that holds its
 * bytes; an input the folder does not hold is a note.
 *
 * Leaves out: empty folders (a zip of files only), file modes and times.
 * Reference: supkit-pack(1); reproducible-builds.org SOURCE_DATE_EPOCH
 * specification; libarchive archive_write_set_format_zip(3).
 */
#ifndef SUPKIT_SUPPLEMENTS_PACK_H
#define SUPKIT_SUPPLEMENTS_PACK_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"

#define PACK_DEFAULT_TIME 315532800  /* 1980-01-01T00:00:00Z, the zip epoch */

struct pack_opts {
	int64_t mtime;   /* timestamp of every entry (pack_source_date) */
	int quiet;       /* no progress on stderr */
};

struct pack_result {
	size_t entries;             /* archive entries, manifest.json included */
	uint64_t uncompressed;      /* bytes of all entries, manifest.json included */
	uint64_t compressed;        /* bytes of the zip file */
	char sha256[65];            /* of the zip file */
	int replaced_manifest;      /* the folder held a manifest.json, replaced */
	size_t derived;             /* entries whose derivation the manifest records */
	char **notes;               /* one line each (owned): inputs not in the folder, unread records */
	size_t n_notes;
};

/* Free r's notes. */
void pack_result_release(struct pack_result *r);

/* The entry timestamp: SOURCE_DATE_EPOCH (a non-negative integer of seconds)
 * when set, else PACK_DEFAULT_TIME. An invalid value is EXIT_USAGE. */
int pack_source_date(int64_t *t, struct err *e);

/* 1 when out (which need not exist) lies inside dir or is dir, 0 when not,
 * -1 with e set when out's folder or dir cannot be resolved. */
int pack_path_inside(const char *dir, const char *out, struct err *e);

/* Pack dir into the zip out (atomically: out appears whole or not at all). */
int pack_dir(const char *dir, const char *out, const struct pack_opts *o, struct pack_result *r,
	     struct err *e);

#endif
