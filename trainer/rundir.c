/* rundir.c: the run folder's lock, its stale temporaries, and the memory
 * check (contract in rundir.h).
 *
 * Reference: flock(2), proc(5) /proc/meminfo, lib/fileio.h (the names of
 * temporaries).
 */
#define _GNU_SOURCE
#include "trainer/rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileio.h"

/* ---- the lock ---- */

int rundir_lock(const char *dir, int *fd_out, struct err *e)
{
	*fd_out = -1;
	char *path = path_join(dir, RUNDIR_LOCK_NAME);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (fd < 0) {
		err_errno(e, EXIT_SYS, "cannot open the lock file '%s'", path);
		free(path);
		return -1;
	}
	int r;
	while ((r = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR)
		;
	if (r != 0) {
		int busy = errno == EWOULDBLOCK;
		if (!busy) {
			err_errno(e, EXIT_SYS, "cannot lock '%s'", path);
		} else {
			char buf[32];
			ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
			long pid = 0;
			if (n > 0) {
				buf[n] = 0;
				char *end;
				pid = strtol(buf, &end, 10);
				if (end == buf || (*end && *end != '\n') || pid <= 0)
					pid = 0;
			}
			if (pid > 0)
				err_set(e, EXIT_SYS, "'%s' is in use by process %ld", dir, pid);
			else
				err_set(e, EXIT_SYS, "'%s' is in use by another process", dir);
		}
		close(fd);
		free(path);
		return -1;
	}
	/* the holder's pid, for the refusal of the next one */
	char pid[32];
	int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
		err_errno(e, EXIT_SYS, "cannot write '%s'", path);
		close(fd);
		free(path);
		return -1;
	}
	free(path);
	*fd_out = fd;
	return 0;
}

void rundir_unlock(int fd)
{
	if (fd >= 0)
		close(fd);   /* the only descriptor of the open file: releases the flock */
}

/* ---- stale temporaries ---- */

static const char *const run_files[] = {
	"config.cfg", "result.json", "curve.jsonl", "model.safetensors", "optim.bin", "checkpoint", NULL,
};

int rundir_is_stale_name(const char *name)
{
	for (int i = 0; run_files[i]; i++) {
		size_t n = strlen(run_files[i]);
		if (strncmp(name, run_files[i], n) != 0 || strncmp(name + n, ".tmp-", 5) != 0)
			continue;
		const char *x = name + n + 5;
		if (strlen(x) != 6)
			continue;
		int ok = 1;
		for (int k = 0; k < 6; k++)
			ok &= (x[k] >= 'a' && x[k] <= 'z') || (x[k] >= 'A' && x[k] <= 'Z') ||
			      (x[k] >= '0' && x[k] <= '9');
		if (ok)
			return 1;
	}
	return 0;
}

int rundir_remove_stale(const char *dir, struct err *e)
{
	DIR *d = opendir(dir);
	if (!d)
		return err_errno(e, EXIT_SYS, "cannot read the folder '%s'", dir);
	/* names first, removal after: no readdir over a changing folder */
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (rundir_is_stale_name(de->d_name)) {
			names = xrealloc(names, (n + 1) * sizeof *names);
			names[n++] = xstrdup(de->d_name);
		}
	closedir(d);
	int removed = 0, r = 0;
	for (size_t i = 0; i < n; i++) {
		char *p = path_join(dir, names[i]);
		if (r == 0 && dir_remove_tree(p) != 0)
			r = err_errno(e, EXIT_SYS, "cannot remove the stale temporary '%s'", p);
		else if (r == 0)
			removed++;
		free(p);
		free(names[i]);
	}
	free(names);
	if (removed)
		dir_sync(dir);
	return r < 0 ? -1 : removed;
}

/* ---- memory ---- */

void rundir_format_bytes(double b, char *buf, size_t n)
{
	static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = b / 1024.0;
	int u = 0;
	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, n, "%.1f %s", v, unit[u]);
}

/* MemAvailable of /proc/meminfo in bytes; -1 when absent. */
static double meminfo_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return -1;
	char line[256];
	double v = -1;
	while (fgets(line, sizeof line, f)) {
		unsigned long long kb;
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
			v = (double)kb * 1024.0;
			break;
		}
	}
	fclose(f);
	return v;
}

int rundir_memory_limit(double *bytes, char *src, size_t n, struct err *e)
{
	const char *env = getenv("SUPKIT_MEMORY_MIB");
	if (env && *env) {
		char *end;
		errno = 0;
		double v = strtod(env, &end);
		if (end == env || *end || errno || !isfinite(v) || v <= 0)
			return err_set(e, EXIT_USAGE, "SUPKIT_MEMORY_MIB '%s' is not a positive number of MiB", env);
		*bytes = v * 1048576.0;
		snprintf(src, n, "SUPKIT_MEMORY_MIB");
		return 0;
	}
	double v = meminfo_available();
	if (v >= 0) {
		*bytes = v;
		snprintf(src, n, "MemAvailable in /proc/meminfo");
		return 0;
	}
	long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	if (pages > 0 && size > 0) {
		*bytes = (double)pages * (double)size;
		snprintf(src, n, "available physical pages");
		return 0;
	}
	return err_set(e, EXIT_SYS, "cannot tell the available memory (no /proc/meminfo; set SUPKIT_MEMORY_MIB)");
}

int rundir_memory_check(double need, const char *detail, struct err *e)
{
	double limit;
	char src[64];
	if (rundir_memory_limit(&limit, src, sizeof src, e) < 0)
		return -1;
	if (need <= limit)
		return 0;
	char a[32], b[32];
	rundir_format_bytes(need, a, sizeof a);
	rundir_format_bytes(limit, b, sizeof b);
	return err_set(e, EXIT_SYS, "the run needs at least %s of memory%s%s%s, more than the %s available (%s)", a,
		       detail ? " (" : "", detail ? detail : "", detail ? ")" : "", b, src);
}
