/* rundir.h: the trainer's run folder as a resource shared between
 * processes, and the memory a run may take.
 *
 * Lock: one trainer at a time works in a run folder. rundir_lock takes an
 * exclusive flock(2) on RUNDIR/.lock (created when missing, never removed:
 * removing a lock file lets two processes lock two different files) and
 * writes the holder's process id into it; the kernel releases the lock when
 * the process exits or is killed, so a lock is never stale. A second trainer
 * is refused, naming the holder.
 *
 * Stale temporaries: every file of a run folder is written to
 * NAME.tmp-XXXXXX beside it and renamed (lib/fileio.h), the checkpoint
 * folder likewise; a killed trainer leaves them. The lock's holder owns
 * whatever the folder holds, so rundir_remove_stale removes them.
 *
 * Memory: rundir_memory_check refuses a run whose memory floor
 * (trainer/accounting.h memory_floor_of, or the model's own figure) exceeds
 * what the machine has available: SUPKIT_MEMORY_MIB when set, else
 * MemAvailable of /proc/meminfo (sysconf's available pages where that
 * cannot be read).
 *
 * Left out: locks across machines on file systems without flock (NFS
 * emulates it with fcntl locks on Linux; some others do not lock at all).
 */
#ifndef SUPKIT_RUNDIR_H
#define SUPKIT_RUNDIR_H

#include <stdint.h>
#include "lib/err.h"

#define RUNDIR_LOCK_NAME ".lock"

/* Take the exclusive lock of run folder dir (which must exist): 0 with *fd
 * the lock's descriptor (close-on-exec; rundir_unlock or exit releases it),
 * or -1 with e set: EXIT_SYS "'dir' is in use by process N" when another
 * process holds it (N read from the lock file; "another process" when
 * unreadable), EXIT_SYS when the lock file cannot be made. */
int rundir_lock(const char *dir, int *fd, struct err *e);
/* Release a lock taken by rundir_lock (fd < 0: nothing). */
void rundir_unlock(int fd);

/* 1 when name is a temporary that the trainer's writes leave in a run
 * folder: NAME.tmp-XXXXXX (six characters of mkstemp's alphabet) for NAME
 * one of config.cfg, result.json, curve.jsonl, model.safetensors,
 * optim.bin, checkpoint. */
int rundir_is_stale_name(const char *name);
/* Remove every such temporary (file or folder tree) directly in dir; the
 * caller holds dir's lock. Returns how many were removed, or -1 with e set
 * (EXIT_SYS) when one cannot be removed or dir cannot be read. */
int rundir_remove_stale(const char *dir, struct err *e);

/* The bytes a run may take: SUPKIT_MEMORY_MIB (a positive number of MiB)
 * when set, else the machine's available memory. src (n bytes) receives
 * where the figure came from, for messages. -1 with e set (EXIT_USAGE)
 * when SUPKIT_MEMORY_MIB is not a positive number; EXIT_SYS when nothing
 * can be read. */
int rundir_memory_limit(double *bytes, char *src, size_t n, struct err *e);
/* 0 when need bytes fit the limit, else -1 with e set (EXIT_SYS): the
 * figure, detail (a short breakdown, may be NULL), the limit and its
 * source, in one line. */
int rundir_memory_check(double need, const char *detail, struct err *e);
/* "12.3 GiB", "512.0 MiB" or "4.0 KiB" of b bytes into buf (n bytes). */
void rundir_format_bytes(double b, char *buf, size_t n);

#endif
