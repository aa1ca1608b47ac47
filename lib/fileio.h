/* fileio.h: whole-file reads with a size limit, and atomic writes.
 *
 * Atomic writes follow one rule everywhere in supkit: write to a temporary
 * file in the destination's folder, fsync it, rename it over the target, fsync
 * the folder. A failure at any point removes the temporary file, so readers
 * see the old file or the new one, never a half-written one.
 */
#ifndef SUPKIT_FILEIO_H
#define SUPKIT_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "err.h"

/* Read a whole file into a fresh NUL-terminated buffer (*len excludes the NUL).
 * Refuses files larger than max_bytes (0 = no limit). Caller frees *out. */
int file_read_all(const char *path, size_t max_bytes, char **out, size_t *len, struct err *e);
/* The same from an open stream (read to its end; not closed); name is used
 * in messages. */
int file_read_fp(FILE *f, const char *name, size_t max_bytes, char **out, size_t *len, struct err *e);

/* Write len bytes to path atomically (temp + fsync + rename). */
int file_write_atomic(const char *path, const void *data, size_t len, struct err *e);

/* Streaming atomic write: open a temp file beside path, write through ->fp,
 * then commit (fsync + rename) or abort (unlink). Owned by the caller. */
struct atomic_file {
	FILE *fp;
	char *path;      /* final path */
	char *tmp_path;  /* temporary path in the same folder */
};
int atomic_open(struct atomic_file *af, const char *path, struct err *e);
int atomic_commit(struct atomic_file *af, struct err *e);
void atomic_abort(struct atomic_file *af);

/* Make a fresh temporary directory beside path ("<path>.tmp-XXXXXX"); caller
 * frees the returned name. Used to build an output folder then rename it. */
char *dir_temp_beside(const char *path, struct err *e);
/* Remove a folder tree (no symlinks followed). Returns 0 or -1. */
int dir_remove_tree(const char *path);
/* mkdir -p. */
int dir_make_all(const char *path, struct err *e);
/* fsync a directory (after a rename into it). */
int dir_sync(const char *path);
/* The folder part of path ("." when none); caller frees. */
char *path_dirname(const char *path);
/* The last component of path (a pointer into path). */
const char *path_basename(const char *path);
/* Join a and b with one '/', caller frees. */
char *path_join(const char *a, const char *b);
/* path as a relative path from the folder dir: both resolved (symlinks
 * followed, path's last component kept as given), then dir's part taken
 * off, e.g. ("/s", "/s/r/x.cfg") -> "r/x.cfg" whatever the current folder.
 * *out is fresh (caller frees). -1 with e (EXIT_USAGE) when dir or path's
 * folder cannot be resolved or path is not inside dir. */
int path_relative_to(const char *dir, const char *path, char **out, struct err *e);

#endif
