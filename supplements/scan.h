/* scan.h: read a supplement (a zip archive or a folder) into the manifest it
 * actually has: every regular entry's path, size and SHA-256 (and the
 * safetensors content digest when asked), the bytes of manifest.json, and the
 * bytes of a few named entries (diffs file, baseline) for the replay check.
 *
 * A zip is streamed through libarchive, never extracted; its central
 * directory is checked first (zipdir.h). A folder is walked by file
 * descriptors without following symbolic links (scan_open), in byte-wise
 * sorted path order. Every name is taken in Unicode NFC (lib/utf8.h
 * utf8_nfc), the one form of names in a supplement: two names the same in
 * NFC are a duplicate.
 *
 * What a scan finds wrong with single entries (a symlink, a special file, a
 * name that is not valid UTF-8 or not a safe relative path, a duplicate name,
 * an encrypted entry, a CRC or size mismatch) is listed as an issue naming
 * the entry; with strict set the first such issue is an error instead (pack
 * refuses, exit 2). Problems with the whole input (unreadable, truncated or
 * structurally broken zip) are errors.
 *
 * Leaves out: extraction (unpack.h), comparison (manifest.h), replay (verify.h).
 * Reference: supkit-pack(1), supkit-verify(1); PKWARE APPNOTE.TXT; libarchive archive_read(3).
 */
#ifndef SUPKIT_SUPPLEMENTS_SCAN_H
#define SUPKIT_SUPPLEMENTS_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"
#include "supplements/manifest.h"

#define SCAN_CAPTURE_MAX_BYTES ((size_t)256 << 20)   /* a captured entry larger than this is an issue */
#define SCAN_SAFETENSORS_MAX_BYTES ((uint64_t)8 << 30) /* zip entries buffered for st_digest */

struct scan_issue {
	char *path;    /* entry (owned), printable */
	char *reason;  /* one line (owned) */
};

struct scan_capture {
	const char *path;   /* borrowed from the caller's list (owned for scan.extra) */
	char *data;         /* owned; NULL when the entry is absent or was refused */
	size_t len;
};

struct scan_opts {
	int strict;              /* first entry issue is an error (EXIT_USAGE) */
	int safetensors_digest;  /* record st_digest for entries ending in ".safetensors" */
	const char **capture;    /* entry paths whose bytes to keep */
	size_t n_capture;
	/* also keep the bytes of every entry for which capture_if returns 1 and
	 * that holds at most capture_if_max bytes (into scan.extra; a larger
	 * one is hashed, not kept, and is no issue) */
	int (*capture_if)(const char *path);
	size_t capture_if_max;
	int quiet;               /* no progress lines on stderr */
};

struct scan {
	int is_zip;
	struct manifest actual;      /* every regular entry except the top manifest.json; sorted */
	int has_manifest;            /* a top-level manifest.json was found */
	char *manifest_data;         /* its bytes (owned) */
	size_t manifest_len;
	struct scan_capture *cap;    /* n_capture, in the caller's order */
	size_t n_cap;
	struct scan_capture *extra;  /* capture_if's entries, in the order found (paths owned) */
	size_t n_extra;
	struct scan_issue *issues;   /* in the order found */
	size_t n_issues;
	uint64_t archive_bytes;      /* zip file size (0 for a folder) */
	struct scan_tree *tree;      /* a folder's files and folders as walked (scan_open) */
};

/* Scan path (a zip file or a folder) into s (initialised here; release with
 * scan_release in every case). */
int scan_path(const char *path, const struct scan_opts *o, struct scan *s, struct err *e);
void scan_release(struct scan *s);

/* Open the file listed in a folder scan's manifest as path (its NFC name),
 * under root, the folder s scanned, the way the scan did: each folder on
 * the way opened relative to its parent with O_NOFOLLOW | O_DIRECTORY, the
 * file with O_NOFOLLOW, and each the same device and inode the scan saw, so
 * a folder or file swapped for a link or another file since is an error
 * (EXIT_SYS, "changed while it was being read"), never followed. *fd is
 * the caller's to close. */
int scan_open(const struct scan *s, const char *root, const char *path, int *fd, struct err *e);

/* For tests only: when set, called with a folder entry's relative path on
 * disk after the scan listed it and before it opens it (a folder to walk
 * into, a file to hash, and a file pack opens again to write), so a test
 * can swap it for a link there. NULL in every program. */
extern void (*scan_test_hook)(const char *rel);

/* A relative path's bytes as a printable, one-line string (control bytes,
 * backslashes and invalid UTF-8 escaped as \xNN); caller frees. */
char *scan_quote(const char *s, size_t len);

/* 1 when path ends in ".safetensors". */
int scan_is_safetensors(const char *path);

#endif
