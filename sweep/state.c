/* state.c: a run's state from its folder and the locks held on it, the
 * locks themselves, and the copy of a finished run into results/
 * (sweep.h). Reference: flock(2), kill(2) (signal 0: is a process alive).
 *
 * Probing a lock: flock(LOCK_SH | LOCK_NB) on an open file of its own, let
 * go at once. The trainer's .lock is probed only when the process id
 * written in it is alive here: the trainer takes its lock without
 * retrying, so a probe must never hold a free lock, even for microseconds.
 * A sweep runner retries its own .sweep.lock for about a second instead.
 */
#define _GNU_SOURCE
#include "sweep/sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/json.h"

const char *run_state_name(enum run_state s)
{
	switch (s) {
	case RUN_PENDING: return "pending";
	case RUN_RUNNING: return "running";
	case RUN_DONE: return "done";
	case RUN_FAILED: return "failed";
	}
	return "?";
}

static int exists(const char *dir, const char *name)
{
	char *p = path_join(dir, name);
	struct stat st;
	int r = lstat(p, &st) == 0;
	free(p);
	return r;
}

/* the process id written in an open lock file, 0 when none */
static long lock_pid(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *end;
	long pid = strtol(buf, &end, 10);
	return end != buf && (*end == 0 || *end == '\n') && pid > 0 ? pid : 0;
}

/* held: 1 and *pid (0 unknown), else 0 */
static int lock_probe(const char *path, int pid_guard, long *pid)
{
	*pid = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	*pid = lock_pid(fd);
	if (pid_guard && (*pid <= 0 || (kill((pid_t)*pid, 0) != 0 && errno == ESRCH))) {
		close(fd);
		return 0;
	}
	int r;
	while ((r = flock(fd, LOCK_SH | LOCK_NB)) != 0 && errno == EINTR)
		;
	int held = r != 0 && errno == EWOULDBLOCK;
	close(fd);   /* releases the shared lock, if taken */
	return held;
}

int sweep_lock_held(const char *path, int pid_guard)
{
	long pid;
	return lock_probe(path, pid_guard, &pid);
}

int sweep_lock(const char *path, const char *what, int *fd_out, struct err *e)
{
	*fd_out = -1;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (fd < 0)
		return err_errno(e, EXIT_SYS, "cannot open the lock file '%s'", path);
	int r = -1;
	for (int tries = 0; tries < 20; tries++) {
		while ((r = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR)
			;
		if (r == 0 || errno != EWOULDBLOCK)
			break;
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (r != 0) {
		if (errno != EWOULDBLOCK) {
			err_errno(e, EXIT_SYS, "cannot lock '%s'", path);
		} else {
			long pid = lock_pid(fd);
			if (pid > 0)
				err_set(e, EXIT_SYS, "'%s' is in use by process %ld", what, pid);
			else
				err_set(e, EXIT_SYS, "'%s' is in use by another process", what);
		}
		close(fd);
		return -1;
	}
	char pid[32];
	int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
		err_errno(e, EXIT_SYS, "cannot write '%s'", path);
		close(fd);
		return -1;
	}
	*fd_out = fd;
	return 0;
}

/* rundir/name's first line into buf (n bytes); 0, or -1 when unreadable */
static int first_line(const char *dir, const char *name, char *buf, size_t n)
{
	char *p = path_join(dir, name);
	FILE *f = fopen(p, "r");
	free(p);
	buf[0] = 0;
	if (!f)
		return -1;
	if (!fgets(buf, (int)n, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\r\n")] = 0;
	for (char *q = buf; *q; q++)
		if ((unsigned char)*q < 0x20)
			*q = '?';
	return 0;
}

static int slurm_queued_pending(const char *state)
{
	return !strcmp(state, "PENDING") || !strcmp(state, "REQUEUED") || !strcmp(state, "REQUEUE_HOLD") ||
	       !strcmp(state, "REQUEUE_FED") || !strcmp(state, "RESV_DEL_HOLD");
}

void sweep_run_state(const char *rundir, const char *sha, const struct slurm_task *slurm, struct run_status *st)
{
	memset(st, 0, sizeof *st);
	st->val_bpb = NAN;
	st->resumable = exists(rundir, "checkpoint") || exists(rundir, "checkpoint.old");
	char *res = path_join(rundir, "result.json");
	struct stat sb;
	int have_result = stat(res, &sb) == 0;
	char other[160] = "";
	if (have_result) {
		struct err e;
		cJSON *j = json_read_file(res, 64u << 20, &e);
		const cJSON *h = j ? cJSON_GetObjectItemCaseSensitive(j, "config_sha256") : NULL;
		if (!j) {
			snprintf(other, sizeof other, "result.json unreadable: %.130s", e.msg);
		} else if (!cJSON_IsString(h) || strcmp(h->valuestring, sha)) {
			snprintf(other, sizeof other, "result.json of another config (config_sha256 %.12s, the sweep's %.12s)",
				 cJSON_IsString(h) ? h->valuestring : "missing", sha);
		} else {
			st->state = RUN_DONE;
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "val_bpb");
			if (cJSON_IsNumber(v)) {
				st->val_bpb = v->valuedouble;
				snprintf(st->detail, sizeof st->detail, "val_bpb %.6f", v->valuedouble);
			}
		}
		cJSON_Delete(j);
	}
	free(res);
	if (st->state == RUN_DONE)
		return;
	char *lk = path_join(rundir, ".sweep.lock");
	char *tl = path_join(rundir, ".lock");
	long pid;
	int run_sweep = lock_probe(lk, 0, &pid);
	if (!run_sweep && lock_probe(tl, 1, &pid))
		snprintf(st->detail, sizeof st->detail, "supkit train, process %ld", pid);
	else if (run_sweep)
		snprintf(st->detail, sizeof st->detail, "process %ld", pid);
	free(lk);
	free(tl);
	if (st->detail[0]) {
		st->state = RUN_RUNNING;
		return;
	}
	if (slurm && slurm->state[0] && slurm->queued) {
		st->state = slurm_queued_pending(slurm->state) ? RUN_PENDING : RUN_RUNNING;
		snprintf(st->detail, sizeof st->detail, "slurm job %s_%d %s", slurm->job, slurm->index, slurm->state);
		return;
	}
	if (other[0]) {
		st->state = RUN_FAILED;
		snprintf(st->detail, sizeof st->detail, "%s", other);
		return;
	}
	char ex[64];
	if (!exists(rundir, "train.log")) {
		st->state = RUN_PENDING;
		if (slurm && slurm->state[0])
			snprintf(st->detail, sizeof st->detail, "not started (slurm job %s_%d %s)", slurm->job,
				 slurm->index, slurm->state);
		else
			snprintf(st->detail, sizeof st->detail, "not started");
		return;
	}
	st->state = RUN_FAILED;
	size_t n = 0;
	if (first_line(rundir, "sweep_exit", ex, sizeof ex) == 0 && ex[0])
		n = (size_t)snprintf(st->detail, sizeof st->detail, "%s", ex);
	else
		n = (size_t)snprintf(st->detail, sizeof st->detail, "no exit status (killed?)");
	if (slurm && slurm->state[0] && n < sizeof st->detail)
		n += (size_t)snprintf(st->detail + n, sizeof st->detail - n, ", slurm %s", slurm->state);
	if (st->resumable && n < sizeof st->detail)
		snprintf(st->detail + n, sizeof st->detail - n, ", checkpoint: resumes");
}

/* ---- results/ ---- */

static const char *const result_files[] = {"result.json", "curve.jsonl", "config.cfg", NULL};

static int same_file(const char *a, const char *b)
{
	char *ta = NULL, *tb = NULL;
	size_t la, lb;
	struct err e;
	int same = file_read_all(a, 0, &ta, &la, &e) == 0 && file_read_all(b, 0, &tb, &lb, &e) == 0 && la == lb &&
		   !memcmp(ta, tb, la);
	free(ta);
	free(tb);
	return same;
}

/* remove results_dir/name.tmp-* (a killed copy's leftovers) */
static void remove_leftovers(const char *results_dir, const char *name)
{
	DIR *d = opendir(results_dir);
	if (!d)
		return;
	size_t n = strlen(name);
	struct dirent *de;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, name, n) && !strncmp(de->d_name + n, ".tmp-", 5)) {
			char *p = path_join(results_dir, de->d_name);
			dir_remove_tree(p);
			free(p);
		}
	closedir(d);
}

int sweep_collect(const char *rundir, const char *results_dir, const char *name, struct err *e)
{
	char *dst = path_join(results_dir, name);
	char *src_res = path_join(rundir, "result.json");
	char *dst_res = path_join(dst, "result.json");
	int same = same_file(src_res, dst_res);
	free(src_res);
	free(dst_res);
	if (same) {
		free(dst);
		return 0;
	}
	int rc = -1;
	char *tmp = NULL, *old = NULL;
	if (dir_make_all(results_dir, e) != 0)
		goto out;
	remove_leftovers(results_dir, name);
	tmp = dir_temp_beside(dst, e);
	if (!tmp)
		goto out;
	for (int i = 0; result_files[i]; i++) {
		char *s = path_join(rundir, result_files[i]), *t = path_join(tmp, result_files[i]);
		char *buf = NULL;
		size_t len;
		int r = file_read_all(s, 0, &buf, &len, e);
		if (r == 0)
			r = file_write_atomic(t, buf, len, e);
		free(buf);
		free(s);
		free(t);
		if (r) {
			e->code = EXIT_SYS;
			goto out;
		}
	}
	/* mkdtemp made it 0700: a folder's usual mode */
	mode_t um = umask(0);
	umask(um);
	chmod(tmp, 0777 & ~um);
	struct stat st;
	if (lstat(dst, &st) == 0) {
		old = dir_temp_beside(dst, e);   /* an empty folder: rename replaces it */
		if (!old)
			goto out;
		if (rename(dst, old) != 0) {
			err_errno(e, EXIT_SYS, "cannot move '%s' aside", dst);
			goto out;
		}
	}
	if (rename(tmp, dst) != 0) {
		err_errno(e, EXIT_SYS, "cannot rename '%s' to '%s'", tmp, dst);
		if (old && rename(old, dst) != 0) {
			free(old);   /* the previous copy stays where it was moved */
			old = NULL;
		}
		goto out;
	}
	free(tmp);
	tmp = NULL;
	dir_sync(results_dir);
	rc = 0;
out:
	if (tmp)
		dir_remove_tree(tmp);
	if (old)
		dir_remove_tree(old);
	free(tmp);
	free(old);
	free(dst);
	return rc;
}
